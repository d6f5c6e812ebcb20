"""Top-k by bisecting the k-th word over a register-resident row: the select for ``k > 256`` on rows of at most
``plans.BISECT_MAX_COLS`` columns (``dsa_lab.plans`` decides when).

One program per row holds the row's live extent in registers as signed ordered words (NaN on top), in a tile chosen
on the device by the live length (2048, 8192 or 32768 words; one compiled kernel), then:

1. **Bracket** (:func:`_bracket_and_pass`): steps on the word's value, each a compare and a count, keep exact counts
   ``c_lo = count(>= lo) >= k > c_hi = count(>= hi)`` until the middle ``[lo, hi)`` holds at most ``MC`` words; on
   the wider tiles (32-lane warps) the first step counts two words placed around rank k by a law fitted to a
   quarter of the row.
2. **One pass over the registers**: the ``c_hi`` words above the middle go to the output, the middle's columns to a
   per-row scratch (positions thread by thread: one scan of one count per thread).
3. **The middle** (:func:`_middle`): its ``(k - c_hi)``-th word found among those few; ties straddling it take the
   smaller columns by counting.

Every count is exact: the values change the number of steps, never the result.  With ``FLAGS`` the selected blocks'
flags are set from the written ids.  The design and its measurements: ``docs/design.md`` §7, ``notes/select_kernel.md``.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .common import NEG_HI as NEG
from .common import fill_tail, row_extent, set_flags, tl_ordered_hi
from .common import tl_cuda as _tl_cuda

INF_WORD = tl.constexpr(0x7F800000)  # the ordered word of +inf (NaN's is 0x7FFFFFFF)


@triton.jit
def _probe(lo, hi, c_lo, c_hi, t, interp):
    """The next word to count in the bracket ``[lo, hi)`` (``count(>= lo) = c_lo > c_hi = count(>= hi)``): where
    the counts put rank ``t`` by linear interpolation (``interp``; exact on evenly spread words), else the midpoint.
    Always strictly inside the bracket.  The estimate is a float32 product: an int64 division is a long call that
    every step waits on, and a rounded estimate probes as well."""
    frac = (c_lo - t).to(tl.float32) / tl.maximum(c_lo - c_hi, 1).to(tl.float32)
    est = lo + ((hi - lo).to(tl.float32) * frac).to(tl.int64)
    mid = tl.where(interp, est, (lo + hi) >> 1)
    return tl.minimum(tl.maximum(mid, lo + 1), hi - 1)


@triton.jit
def _kth_step(h, k, lo, hi, c_lo, c_hi, interp, SNAP: tl.constexpr):
    """One step of :func:`_kth`: ``(lo, hi, c_lo, c_hi, interp, T, f, go)`` after it.  ``SNAP``: a probe that finds
    no word between it and the bound it replaces also moves that bound on to the nearest word."""
    top1 = k - c_hi == 1
    if top1 | (c_lo - k == 1):
        # the largest word below hi (f = 0: base = c_hi words above it), or the smallest at or above lo (f = 1:
        # base = c_lo at or above it): one max, over the words or their complements (~h reverses the order)
        inv = top1.to(tl.int32) - 1
        lb = tl.where(top1, -2147483648, lo.to(tl.int32))
        ub = tl.where(top1, (hi - 1).to(tl.int32), 2147483647)
        T = tl.max(tl.where((h >= lb) & (h <= ub), h ^ inv, -2147483648)) ^ inv
        f = (top1 == 0).to(tl.int32)
        go = c_lo < 0  # (false)
    else:
        m = (c_lo - c_hi) // 16
        mid = _probe(lo, hi, c_lo, c_hi, tl.where(c_lo - k > k - c_hi, k + m, k - m), interp != 0)
        c = tl.sum((h >= mid.to(tl.int32)).to(tl.int32))
        big = c >= k
        w0 = c_lo - c_hi
        if SNAP:
            gap = c == tl.where(big, c_lo, c_hi)  # no word between the probe and the bound it replaces
        lo = tl.where(big, mid, lo)
        c_lo = tl.where(big, c, c_lo)
        hi = tl.where(big, hi, mid)
        c_hi = tl.where(big, c_hi, c)
        if SNAP:
            if gap & (hi - lo > 1):  # the count holds up to the nearest word
                m32 = mid.to(tl.int32)
                if big:
                    lo = tl.min(tl.where(h >= m32, h, 2147483647)).to(tl.int64)
                else:
                    hi = tl.max(tl.where(h < m32, h, -2147483648)).to(tl.int64) + 1
        interp = ((interp == 0) | (2 * (c_lo - c_hi) <= w0)).to(tl.int32)
        go = (hi - lo > 1) & (c_lo != k)
        # ended: exact at lo (every word >= lo, f = 1, base = c_lo = k), or one value left (lo: c_hi above it)
        T = lo.to(tl.int32)
        f = (c_lo == k).to(tl.int32)
    return lo, hi, c_lo, c_hi, interp, T, f, go


@triton.jit
def _kth(h, n, k, lo, hi, SNAP: tl.constexpr = 0):
    """``(T, base, f)`` of the words ``h`` (``n`` of them, all in ``[lo, hi)``; the others below ``lo``), ``k < n``:
    the ``k`` largest are every word ``> T`` plus the first ``k - base + f * ties`` equal to ``T`` (``ties`` of
    them; ``base`` counts the words ``> T`` where ``f = 0``, those ``>= T`` where ``f = 1``).  Steps interpolate
    between the counts, aiming a sixteenth of the words between the bounds past rank ``k`` on the wider side (so that
    both bounds close in, not only the nearer; at rank ``k`` once fewer than 16 are left), while each step halves the
    words between them; else they bisect: a few steps on smoothly spread words, at most about twice the bisection's
    32.  Where one word is missing above the lower bound's count or one is left over below the upper bound's, the
    largest word below the upper bound (or the smallest at or above the lower) is the k-th: one reduction ends the
    search where halving a range holding two far-apart words takes up to 32 steps.  ``SNAP > 0``: the first ``SNAP``
    steps as above, in a loop of their own; the steps after them (a few clusters of words far apart) also move a
    bound past an empty range on to the nearest word, one reduction where halving that range takes many.  Searches
    over smoothly spread words end within the first loop, whose code is the search without the snap."""
    c_lo = n
    c_hi = tl.zeros([], tl.int32)
    interp = tl.zeros([], tl.int32) + 1
    T = lo.to(tl.int32)
    f = tl.zeros([], tl.int32)
    go = hi - lo > 1
    if SNAP > 0:
        step = tl.zeros([], tl.int32)
        while go & (step < SNAP):
            lo, hi, c_lo, c_hi, interp, T, f, go = _kth_step(h, k, lo, hi, c_lo, c_hi, interp, False)
            step += 1
    while go:
        lo, hi, c_lo, c_hi, interp, T, f, go = _kth_step(h, k, lo, hi, c_lo, c_hi, interp, SNAP > 0)
    return T, tl.where(f != 0, c_lo, c_hi), f


@triton.jit
def _init_parts(h):
    """Per word: (candidate + (at least +inf) << 16, a uint32 whose minimum is the smallest candidate's, one whose
    maximum is the largest word below +inf's: see :func:`_init_ends`)."""
    return ((h > NEG).to(tl.int32) + ((h >= INF_WORD).to(tl.int32) << 16),
            (h - (NEG + 1)).to(tl.uint32, bitcast=True), (h - INF_WORD).to(tl.uint32, bitcast=True))


@triton.jit
def _init_ends(bmin, fmax):
    """The smallest candidate word (NEG without one) and the largest word below +inf (NEG without one) from the
    minimum and maximum of :func:`_init_parts`'s rotated words: ``NEG`` rotates to the largest, every word below
    +inf above every word at or above it."""
    mn = bmin.to(tl.int32, bitcast=True) + (NEG + 1)
    mf = tl.where(fmax >= 0x800000, fmax.to(tl.int32, bitcast=True) + INF_WORD, NEG)
    return mn, mf


@triton.jit
def _cols(c0, L, CW: tl.constexpr, WS: tl.constexpr, NW: tl.constexpr, PARTS: tl.constexpr = False):
    """Columns ``[c0, c0 + CW)`` as a ``[WS, NW, CW / (WS * NW)]`` tile: ``t[i, w, j] = c0 + i + WS (w + NW j)``,
    lane ``i`` of warp ``w`` holding the third axis (a warp's lanes along consecutive columns: coalesced).  Multiplied
    by a run-time one, so the compiler cannot see them as contiguous: the loads then keep the layout the output stores
    need, and no tile changes layout on the way.  ``PARTS``: as ``(t[:, :, :1], t[:1, :1, :] - c0)``, a thread's
    first column and the constant offsets of its others (for loads from one address a thread; the pass's stores keep
    the whole product, which the AMD targets allocate in fewer registers)."""
    one = (L >= 0).to(tl.int32)
    R: tl.constexpr = CW // (WS * NW)
    if PARTS:
        base = (tl.arange(0, WS)[:, None, None] + tl.arange(0, NW)[None, :, None] * WS) * one + c0
        return base, tl.arange(0, R)[None, None, :] * (WS * NW)
    else:
        t = (tl.arange(0, WS)[:, None, None]
             + (tl.arange(0, NW)[None, :, None] + tl.arange(0, R)[None, None, :] * NW) * WS)
        return c0 + t * one


@triton.jit
def _load(src_ptr, row_off, c0, L, CW: tl.constexpr, WS: tl.constexpr, NW: tl.constexpr):
    """The scores of columns ``[c0, c0 + CW)`` as a tile of :func:`_cols` (past ``L``: ``-inf``), and the offsets
    ``j`` of a thread's words from its first column.  Each thread addresses its words from one base (the tile's last
    axis as constant offsets: no 64-bit address computed per word)."""
    tb, j = _cols(c0, L, CW, WS, NW, True)
    return tl.load((src_ptr + row_off + tb) + j, mask=tb + j < L, other=float("-inf")), j


@triton.jit
def _sums(x, j, s1, s2, WS: tl.constexpr, NW: tl.constexpr, PH: tl.constexpr):
    """Each thread's running sums (``[WS, NW]``, returned updated) of the finite scores of its sampled runs in the
    chunk ``x`` and of their squares: the runs ``[:, :, j]`` with ``j % 4 == PH``, every fourth run of ``WS * NW``
    consecutive columns, a quarter of the chunk spread over it (the caller alternates ``PH`` 1 and 2 over the chunks,
    so the runs' mean and spread are the tile's)."""
    fin = ((j // (WS * NW)) % 4 == PH) & (tl.abs(x) < float("inf"))  # (padding loads -inf)
    s1 += tl.sum(tl.where(fin, x, -0.0), 2)  # (-0.0: an added -0.0 folds away, an added +0.0 does not)
    s2 += tl.sum(tl.where(fin, x * x, -0.0), 2)
    return s1, s2


@triton.jit
def _add2(a1, a2, b1, b2):
    return a1 + b1, a2 + b2


@triton.jit
def _row_words(src_ptr, row_off, L, CW: tl.constexpr, WS: tl.constexpr, NW: tl.constexpr, MOM: tl.constexpr):
    """The row's four ``CW``-column chunks as ordered words (the contract's order, NaN on top; past ``L``: ``NEG``)
    and, with ``MOM``, the sample's sums over the whole tile (:func:`_sums`; scalars: finite scores, their squares; one
    block reduction).  The four chunks' loads come first in the program, before any arithmetic on them: the compiler
    then issues them together, where a chunk's sums and words placed between them let it move some loads later."""
    x0, j = _load(src_ptr, row_off, 0, L, CW, WS, NW)
    x1, _ = _load(src_ptr, row_off, CW, L, CW, WS, NW)
    x2, _ = _load(src_ptr, row_off, 2 * CW, L, CW, WS, NW)
    x3, _ = _load(src_ptr, row_off, 3 * CW, L, CW, WS, NW)
    s1 = tl.zeros([WS, NW], tl.float32)
    s2 = s1
    if MOM:
        s1, s2 = _sums(x0, j, s1, s2, WS, NW, 1)
        s1, s2 = _sums(x1, j, s1, s2, WS, NW, 2)
        s1, s2 = _sums(x2, j, s1, s2, WS, NW, 1)
        s1, s2 = _sums(x3, j, s1, s2, WS, NW, 2)
    s1, s2 = tl.reduce((s1, s2), 0, _add2)
    s1, s2 = tl.reduce((s1, s2), 0, _add2)
    return tl_ordered_hi(x0), tl_ordered_hi(x1), tl_ordered_hi(x2), tl_ordered_hi(x3), s1, s2


@triton.jit
def _upper_z(q):
    """``z`` with ``P(Z > z) = q`` for a standard normal ``Z`` (Abramowitz & Stegun 26.2.23, error below 5e-4),
    ``q`` in ``(0, 1)``."""
    p = tl.maximum(tl.minimum(q, 1.0 - q), 1e-7)
    t = tl.sqrt(-2.0 * tl.log(p))
    z = t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308)))
    return tl.where(q <= 0.5, z, -z)


@triton.jit
def _model_probes(L, k, s1, s2, top, W: tl.constexpr, CAP: tl.constexpr, S: tl.constexpr):
    """Two words ``NEG < t1 < t2`` (int32) around rank ``k`` among ``L``, from the sample :func:`_sums` takes of a
    ``W``-column tile (every fourth run of ``S`` columns, the second of four in even chunks, the third in odd; ``s1``,
    ``s2``: the sum of its finite scores and of their squares) and ``top``, how many scores are taken to be +inf or NaN
    (above every finite word; sampled in that proportion): ``t1`` where a law with the sample's mean and spread puts
    rank ``k + CAP / 4`` counting the ``top``, ``t2`` rank ``k - min(CAP / 4, k / 2)`` but no higher than half way from
    the ``top`` to rank ``k``.  The law is a normal one and a uniform one together (``t1`` the lower of their words,
    ``t2`` the higher): the normal's tail reaches past a flat row's end, the uniform's stops short of a bell's.  Only
    the number of steps depends on how good a guess this is: the counts at the two words are exact."""
    st = tl.arange(0, W // (4 * S)) * (4 * S)
    st += tl.where((st // (W // 4)) % 2 == 0, S, 2 * S)  # the sampled runs' first columns
    nf = tl.maximum(L.to(tl.float32) - top, 1.0)  # the finite scores
    ns = tl.maximum(tl.sum(tl.minimum(tl.maximum(L - st, 0), S)).to(tl.float32) * (nf / tl.maximum(L, 1)), 1.0)
    mean = s1 / ns
    sd = tl.sqrt(tl.maximum(s2 / ns - mean * mean, 0.0))
    q1 = ((k + CAP // 4).to(tl.float32) - top) / nf
    r2 = (k - tl.minimum(k // 2, CAP // 4)).to(tl.float32) - top  # (not above rank k / 2 ...
    q2 = tl.maximum(tl.maximum(r2, 0.5 * (k - top)), 1.0) / nf  # ... nor above half the finite scores' need)
    v1 = mean + tl.minimum(_upper_z(q1), 1.7320508 * (1.0 - 2.0 * q1)) * sd
    v2 = mean + tl.maximum(_upper_z(q2), 1.7320508 * (1.0 - 2.0 * q2)) * sd
    m1 = tl_ordered_hi(v1).to(tl.int64)
    m2 = tl_ordered_hi(v2).to(tl.int64)
    t1 = tl.maximum(tl.minimum(m1, m2), NEG + 1)
    t2 = tl.minimum(tl.maximum(tl.maximum(m1, m2), t1 + 1), 0x7FFFFFFF)  # (equal at the top: no bracket, a miss)
    return t1.to(tl.int32), t2.to(tl.int32)


@triton.jit
def _narrow(lo, hi, c_lo, c_hi, t, c, k):
    """The bracket ``[lo, hi)`` (``count(>= lo) = c_lo >= k > c_hi = count(>= hi)``) with the word ``t``, of exact
    count ``c``, as its new end where ``t`` lies inside it."""
    up = (c >= k) & (t > lo)
    dn = (c < k) & (t < hi)
    return tl.where(up, t, lo), tl.where(dn, t, hi), tl.where(up, c, c_lo), tl.where(dn, c, c_hi)


@triton.jit
def _ge(h0, h1, h2, h3, t):
    """How many words of the four chunks are ``>= t``."""
    c = (h0 >= t).to(tl.int32) + (h1 >= t).to(tl.int32) + (h2 >= t).to(tl.int32) + (h3 >= t).to(tl.int32)
    return tl.sum(c)


@triton.jit
def _ge2(h0, h1, h2, h3, t1, t2):
    """How many words of the four chunks are ``>= t1``, and how many ``>= t2``: one pass, one reduction (the two
    counts packed in the halves of one word; each is at most 32768)."""
    c = ((h0 >= t1).to(tl.int32) + ((h0 >= t2).to(tl.int32) << 16) + (h1 >= t1).to(tl.int32)
         + ((h1 >= t2).to(tl.int32) << 16) + (h2 >= t1).to(tl.int32) + ((h2 >= t2).to(tl.int32) << 16)
         + (h3 >= t1).to(tl.int32) + ((h3 >= t2).to(tl.int32) << 16))
    p = tl.sum(c)
    return p & 0xFFFF, (p >> 16) & 0xFFFF


@triton.jit
def _emit_chunk(h, c0, L, orow, mrow, lo, span, hi1, c_hi, one, a_seen, m_seen, CW: tl.constexpr,
                WS: tl.constexpr, NW: tl.constexpr):
    """Stage 2 over one chunk: its words ``> hi1`` after the ``a_seen`` before it, its middle ``[lo, lo + span)``
    after ``m_seen`` (to ``mrow``, or with ``one`` to ``orow`` after the ``c_hi``).  Positions go thread by thread (a
    thread's words in order after the counts of the threads before it: one scan of one value a thread), not in
    column order.  Returns both counts.  The middle's slots need no bound: the bracket left at most the scratch's
    ``MC`` words in it (or, ``one``, the caller at most the need)."""
    cols = _cols(c0, L, CW, WS, NW)
    up = h > hi1
    md = (h - lo).to(tl.uint32, bitcast=True) < span  # lo <= h < lo + span, one compare; lo > NEG: masked lanes never
    v = up.to(tl.int32) + (md.to(tl.int32) << 16)  # both counts of a chunk fit 16 bits
    tt = tl.sum(v, 2, keep_dims=True)  # a thread's own words (3-d tiles all along: scans without conversions)
    wt = tl.sum(tt, 0, keep_dims=True)
    cs = tl.cumsum(v, 2) - v + (tl.cumsum(tt, 0) - tt) + (tl.cumsum(wt, 1) - wt)
    pm = m_seen + (cs >> 16)
    tl.store(orow + a_seen + (cs & 0xFFFF), cols, mask=up)
    tl.store(tl.where(one, orow + c_hi, mrow) + pm, cols, mask=md)
    ts = tl.sum(wt)
    return a_seen + (ts & 0xFFFF), m_seen + (ts >> 16)


@triton.jit
def _tie_cut(h0, h1, h2, h3, T, need, L, CW: tl.constexpr, WS: tl.constexpr, NW: tl.constexpr):
    """One past the column of the ``need``-th word equal to ``T`` in column order (1 <= ``need`` <= their count).
    A tile's slab ``j`` (its words ``[:, :, j]``) holds consecutive columns, and the chunks and slabs follow column
    order: counts per slab find the slab holding it, one scan inside that slab its column."""
    R: tl.constexpr = CW // (WS * NW)
    b1 = tl.sum((h0 == T).to(tl.int32))
    b2 = b1 + tl.sum((h1 == T).to(tl.int32))
    b3 = b2 + tl.sum((h2 == T).to(tl.int32))
    q = (need > b1).to(tl.int32) + (need > b2).to(tl.int32) + (need > b3).to(tl.int32)  # its chunk
    nq = need - tl.where(q == 0, 0, tl.where(q == 1, b1, tl.where(q == 2, b2, b3)))
    qt = h0 * 0 + q  # (tile-shaped conditions: the interpreter rejects a 0-d one)
    eq = (tl.where(qt == 0, h0, tl.where(qt == 1, h1, tl.where(qt == 2, h2, h3))) == T).to(tl.int32)
    sq = tl.sum(tl.sum(eq, 0), 0)  # [R]: its ties per slab
    jr = tl.arange(0, R)
    js = tl.sum((tl.cumsum(sq, 0) < nq).to(tl.int32))  # its slab
    ns = nq - tl.sum(tl.where(jr < js, sq, 0))
    e = tl.sum(eq * (jr[None, None, :] == js).to(tl.int32), 2, keep_dims=True)  # [WS, NW, 1]: slab js
    wt = tl.sum(e, 0, keep_dims=True)
    rank = tl.cumsum(e, 0) + (tl.cumsum(wt, 1) - wt)  # inclusive, in column order (lanes, then warps)
    col = q * CW + tl.arange(0, WS)[:, None, None] + (tl.arange(0, NW)[None, :, None] + NW * js) * WS
    return tl.max(tl.where((e > 0) & (rank == ns), col, -1)) + 1


@triton.jit
def _start(h0, h1, h2, h3, k):
    """The bracket every row can start from, ``(lo, hi, c_lo, c_hi, candidates)``: the smallest candidate word to
    one past the largest finite one, +inf and NaN counted above it; or, with ``k`` or more of those, ``[+inf, 2**31)``
    (one pass of two packed counts and two extremes)."""
    a0, b0, f0 = _init_parts(h0)
    a1, b1, f1 = _init_parts(h1)
    a2, b2, f2 = _init_parts(h2)
    a3, b3, f3 = _init_parts(h3)
    cc = tl.sum(a0 + a1 + a2 + a3)
    mn, mf = _init_ends(tl.min(tl.minimum(tl.minimum(b0, b1), tl.minimum(b2, b3))),
                        tl.max(tl.maximum(tl.maximum(f0, f1), tl.maximum(f2, f3))))
    ncand = cc & 0xFFFF
    ntop = (cc >> 16) & 0xFFFF  # (a count of 32768 in the high half sets the sign bit: masked)
    lo = mn.to(tl.int64)
    # +inf and NaN (the pinned newest block, NaN scores) are counted, not searched, when fewer than k
    if ntop < k:
        hi = tl.maximum(mf.to(tl.int64) + 1, lo + 1)
        c_lo = ncand
        c_hi = ntop
    else:
        hi = tl.zeros([], tl.int64) + 0x80000000  # above every word (NaN's is the largest)
        lo = tl.maximum(lo, INF_WORD)
        c_lo = ntop
        c_hi = tl.zeros([], tl.int32)
    return lo, hi, c_lo, c_hi, ncand


@triton.jit
def _rows(out_ptr, mid_ptr, k, MC: tl.constexpr):
    """This program's row of the output and of the scratch, computed where they are used (held from the start, their
    64-bit addresses would stay live through the loads)."""
    row = tl.program_id(0).to(tl.int64)
    return out_ptr + row * k, mid_ptr + row * MC


@triton.jit
def _bracket_and_pass(src_ptr, row_off, out_ptr, mid_ptr, L, k, W: tl.constexpr, CAP: tl.constexpr,
                      IP: tl.constexpr, MODEL: tl.constexpr, MC: tl.constexpr, WS: tl.constexpr, NW: tl.constexpr):
    """Stages 1 and 2 over a row of ``L <= W`` live columns, held as four ``W / 4``-column chunks (one pass over a
    single ``W``-word tile would need more registers than a thread has): returns the bracket as ``(lo, hi - 1, c_lo,
    c_hi)`` (int32 words) and ``one``; the ``c_hi`` words ``>= hi`` are written to the program's output row, and the
    middle's columns to its scratch row (or, ``one``, its first ``k - c_hi`` to the output after them).  A row of at
    most ``k`` candidates has every one of them written (``c_hi = c_lo``)."""
    CW: tl.constexpr = W // 4
    h0, h1, h2, h3, s1, s2 = _row_words(src_ptr, row_off, L, CW, WS, NW, MODEL)
    if MODEL:
        # first, two probes where a law fitted to a sample of the row puts ranks just above and below k: on
        # bell-shaped and flat rows they bracket the k-th word with a middle of at most CAP words at once, and the
        # row's candidate count and extremes (a pass of their own) are never needed
        t1, t2 = _model_probes(L, k, s1, s2, 0.0, W, CAP, WS * NW)
        c1, c2 = _ge2(h0, h1, h2, h3, t1, t2)
        if c2 >= k:
            # too many above the upper probe: +inf and NaN (the sample's law is of the finite scores) or a heavy
            # upper tail.  Counted as scores on top, the excess moves both probes up for one more try; the bracket
            # is then the highest of the three words counted at or above k to the lowest counted below it
            r2 = k - tl.minimum(k // 2, CAP // 4)
            u1, u2 = _model_probes(L, k, s1, s2, (c2 - r2).to(tl.float32), W, CAP, WS * NW)
            d1, d2 = _ge2(h0, h1, h2, h3, u1, u2)
            a1 = (d1 >= k) & (u1 > t2)
            t1 = tl.where(a1, u1, t2)
            c1 = tl.where(a1, d1, c2)
            a2 = (d2 >= k) & (u2 > t1)
            t1 = tl.where(a2, u2, t1)
            c1 = tl.where(a2, d2, c1)
            t2 = tl.where(d1 < k, u1, u2)  # (d2 >= k too: no word below k, a miss)
            c2 = tl.where(d1 < k, d1, d2)
        hit = (c1 >= k) & (c2 < k)
        tm = tl.where(c2 >= k, t2, t1)  # (counts fall with the word: a miss has both at or above k, or both below)
        cm = tl.where(c2 >= k, c2, c1)
    else:  # (no probes: the branch below is never taken)
        t1 = tl.zeros([], tl.int32)
        t2 = t1
        c1 = t1
        c2 = t1
        hit = c1 < 0
    if hit:
        lo = t1.to(tl.int64)
        hi = t2.to(tl.int64)
        c_lo = c1
        c_hi = c2
        few = c1 < 0  # (false: c1 >= k)
    else:
        lo, hi, c_lo, c_hi, ncand = _start(h0, h1, h2, h3, k)
        few = ncand <= k  # every candidate is a pick: all of them "above"
        c_lo = tl.where(few, ncand, c_lo)
        if MODEL:  # the probe on the side that missed still narrows it (its count is exact)
            lo, hi, c_lo, c_hi = _narrow(lo, hi, c_lo, c_hi, tm.to(tl.int64), cm, k)
    # steps with exact counts, count(>= lo) = c_lo >= k > c_hi = count(>= hi), until the middle holds at most
    # CAP words or only picks; with IP, steps interpolate (aiming a quarter of CAP past k on the wider side, so two
    # good steps close the middle) while each at least halves the count between the bounds, else bisect: at most
    # about twice the bisection's steps
    go = (c_lo - c_hi > CAP) & (hi - lo > 1) & (c_lo != k) & (few == 0)
    interp = tl.zeros([], tl.int32) + 1
    while go:
        t = tl.where(c_lo - k > k - c_hi, k + CAP // 4, k - CAP // 4)
        mid = _probe(lo, hi, c_lo, c_hi, t, (interp != 0) & IP)
        c = _ge(h0, h1, h2, h3, mid.to(tl.int32))
        big = c >= k
        w0 = c_lo - c_hi
        lo = tl.where(big, mid, lo)
        c_lo = tl.where(big, c, c_lo)
        hi = tl.where(big, hi, mid)
        c_hi = tl.where(big, c_hi, c)
        interp = ((interp == 0) | (2 * (c_lo - c_hi) <= w0)).to(tl.int32)
        go = (c_lo - c_hi > CAP) & (hi - lo > 1) & (c_lo != k)
    lo = tl.where(few, NEG + 1, lo)
    hi = tl.where(few, NEG + 1, hi)
    c_hi = tl.where(few, c_lo, c_hi)
    one = (hi - lo == 1) | (c_lo == k)  # a middle of one value (ties: the smaller columns) or of picks only
    need = k - c_hi
    lo32 = lo.to(tl.int32)
    hi1 = (hi - 1).to(tl.int32)  # "h >= hi" as "h > hi - 1": hi may be 2**31
    orow, mrow = _rows(out_ptr, mid_ptr, k, MC)
    a = tl.zeros([], tl.int32)
    m = tl.zeros([], tl.int32)
    span = (hi - lo).to(tl.uint32)  # (hi - lo < 2**32; 0 with every candidate a pick: no middle)
    # one tied value wider than the need: its first `need` columns (the pass does not write in column order); the
    # ties past them leave the middle as padding words
    if one & (c_lo - c_hi > need):
        cut = _tie_cut(h0, h1, h2, h3, lo32, need, L, CW, WS, NW)
        h0 = tl.where((h0 == lo32) & (_cols(0, L, CW, WS, NW) >= cut), NEG, h0)
        h1 = tl.where((h1 == lo32) & (_cols(CW, L, CW, WS, NW) >= cut), NEG, h1)
        h2 = tl.where((h2 == lo32) & (_cols(2 * CW, L, CW, WS, NW) >= cut), NEG, h2)
        h3 = tl.where((h3 == lo32) & (_cols(3 * CW, L, CW, WS, NW) >= cut), NEG, h3)
    a, m = _emit_chunk(h0, 0, L, orow, mrow, lo32, span, hi1, c_hi, one, a, m, CW, WS, NW)
    a, m = _emit_chunk(h1, CW, L, orow, mrow, lo32, span, hi1, c_hi, one, a, m, CW, WS, NW)
    a, m = _emit_chunk(h2, 2 * CW, L, orow, mrow, lo32, span, hi1, c_hi, one, a, m, CW, WS, NW)
    a, m = _emit_chunk(h3, 3 * CW, L, orow, mrow, lo32, span, hi1, c_hi, one, a, m, CW, WS, NW)
    return lo32, hi1, c_lo, c_hi, one


@triton.jit
def _middle(src_ptr, row_off, orow, mrow, L, k, lo, hi1, c_lo, c_hi, one, MC: tl.constexpr):
    """Stage 3, after :func:`_bracket_and_pass`: the middle's ``c_lo - c_hi`` columns (in ``mrow``, any order; their
    words in ``[lo, hi1]``) searched for its ``(k - c_hi)``-th word; its picks written to ``orow`` after the ``c_hi``
    already there.  Nothing to do when the pass wrote the middle itself (``one``) or no pick is left."""
    need = k - c_hi
    nm = c_lo - c_hi
    if (not one) & (nm > 0) & (need > 0):
        tl.debug_barrier()  # the middle's columns, written by every thread, are read by every thread
        j = tl.arange(0, MC)
        mc = tl.load(mrow + j, mask=j < nm, other=0)
        w = tl_ordered_hi(tl.load(src_ptr + row_off + mc, mask=j < nm, other=float("-inf")))
        T, base, f = _kth(w, nm, need, lo.to(tl.int64), hi1.to(tl.int64) + 1)
        eq = w == T
        ties = tl.sum(eq.to(tl.int32))
        nt = need - base + f * ties
        # ties straddling the k-th: the first `nt` columns (the scratch is not in column order), by bisection
        cut = tl.where(nt > 0, L, 0)  # (none of the ties: the bisection below cannot exclude column 0)
        go = (ties > nt) & (nt > 0)
        c_a = tl.zeros([], tl.int32)
        while go:
            cm = (c_a + cut) >> 1
            c = tl.sum((eq & (mc < cm)).to(tl.int32))
            cut = tl.where(c >= nt, cm, cut)
            c_a = tl.where(c >= nt, c_a, cm)
            go = (cut - c_a > 1) & (c != nt)
        sel = (w > T) | (eq & (mc < cut))
        tl.store(orow + c_hi + tl.cumsum(sel.to(tl.int32), 0) - 1, mc, mask=sel)


@triton.jit(do_not_specialize=["src_stride", "n", "width", "k", "rr", "has_len", "has_start"])
def _bisect_kernel(src_ptr, src_stride, len_ptr, start_ptr, out_ptr, mid_ptr, flags_ptr, n, width, k, rr, has_len,
                   has_start, BLOCK_SCORES: tl.constexpr, BS: tl.constexpr, FLAGS: tl.constexpr, ALIGNED: tl.constexpr,
                   PDL: tl.constexpr, MODEL: tl.constexpr, MC: tl.constexpr, KT: tl.constexpr, WS: tl.constexpr,
                   NW: tl.constexpr):
    """Grid ``(rows,)``: row ``r``'s ids to ``out[r, :k]`` (every slot), ``mid[r, :MC]`` its scratch; with
    ``FLAGS`` its selected blocks' flags set (already zeroed by an earlier launch).  ``ALIGNED``: the source's row
    stride is a multiple of 16.  ``PDL``: launched as a programmatic dependent of the scores launch (the bounds are
    read before the wait).  ``MODEL``: the wider tiles' first step from a fitted normal law (set by the launcher
    where the warp is 32 lanes: on the 64-lane AMD targets its registers spill)."""
    row = tl.program_id(0)
    L, start, end = row_extent(row, len_ptr, start_ptr, n, width, rr, has_len, has_start, BLOCK_SCORES, BS)
    if PDL:
        _tl_cuda.gdc_wait()
    L = L.to(tl.int32)  # a row is below BISECT_MAX_COLS columns (the plan checks the width)
    if ALIGNED:
        row_off = row.to(tl.int64) * (src_stride // 16) * 16
    else:
        row_off = row.to(tl.int64) * src_stride
    if L <= 2048:
        lo, hi1, c_lo, c_hi, one = _bracket_and_pass(src_ptr, row_off, out_ptr, mid_ptr, L, k, 2048, 0, False, False,
                                                     MC, WS, NW)
    elif L <= 8192:
        lo, hi1, c_lo, c_hi, one = _bracket_and_pass(src_ptr, row_off, out_ptr, mid_ptr, L, k, 8192, MC, False, MODEL,
                                                     MC, WS, NW)
    else:
        lo, hi1, c_lo, c_hi, one = _bracket_and_pass(src_ptr, row_off, out_ptr, mid_ptr, L, k, 32768, MC, True, MODEL,
                                                     MC, WS, NW)
    orow, mrow = _rows(out_ptr, mid_ptr, k, MC)
    _middle(src_ptr, row_off, orow, mrow, L, k, lo, hi1, c_lo, c_hi, one, MC)
    fill_tail(out_ptr, row.to(tl.int64) * k, tl.minimum(c_lo, k), k, KT)
    if FLAGS:
        tl.debug_barrier()  # the ids were written by every thread
        jk = tl.arange(0, KT)
        for j0 in range(0, k, KT):
            ids = tl.load(orow + j0 + jk, mask=j0 + jk < k, other=-1)
            set_flags(flags_ptr, row, ids, ids >= 0, start, width, n, BS)
