"""Top-k over long rows in one read: the select for ``k`` up to 2048 on rows wider than a register tile.

Three launches, each a programmatic dependent of the one before (sm_90+):

1. :func:`_longrow_sample_kernel`, one program per row: a sample of the row (``NCH`` short runs of ``CH`` columns
   spread over its live extent, or the whole row when it has at most ``NCH * CH`` columns) gives a threshold word
   ``T``: the sample's word of the rank where the row's k-th word is expected, plus a margin of ``RZ`` standard
   deviations of that rank and ``RB`` words (so that fewer than ``k`` lie above ``T`` about once in millions of
   rows), at most the rank that aims at half the buffer (the whole row: exactly the k-th word), found by counting
   steps over the sample in registers (:func:`dsa_lab.kernels.bisect._kth`); one sampled word lower where that
   word's tie would overflow the buffer of equal columns and its needed columns lie far into the row (the finish
   would scan for them), so that the tie comes with the candidates.
2. :func:`_longrow_stream_kernel`, grid ``(rows, P)``: each program streams its share of the row once, a tile ahead
   of the one it compares, and compacts the words above ``T`` with their columns into the row's candidate buffer
   (a slot range per tile from an atomic counter; each thread's first two such words, unless a thread of the tile
   holds more), counting them in a histogram of ``NB`` buckets of the word's
   distance above ``T`` (the sample sets the bucket width), and apart the columns of the words equal to ``T``
   (once a program has seen that buffer full, it only counts them: the finish then scans the row for them).
   No program waits on another.
3. :func:`_longrow_finish_kernel`, one program per row: the exact top ``k`` from those few, with counts, not
   guesses:

   * at least ``k`` above ``T`` and at most ``CAP`` of them: the histogram names the bucket of the k-th word and
     how many of its words are needed; where the bucket holds at most ``FB`` words, each is ranked against the
     others in pairs (word, then column: ties at the k-th to the smaller columns), else they are found by counting
     steps over the bucket's words in registers (ties: a second search, over the tied columns);
   * fewer than ``k`` above: all of them, then the smallest columns equal to ``T`` -- from the buffer when they fit,
     else from a scan of the row in column order that stops once it has them (a first step of ``STILE`` columns,
     then steps of ``4 * STILE`` where the tie is spread thin, else of ``STILE``);
   * more than ``CAP`` above, or too few at or above ``T`` (a sample far from its row): the whole row selected
     exactly by one program (:func:`_exact_row`, 8-bit digit passes): a second read, never a wrong answer.

The sample launch zeroes the row's counters and buckets before the stream adds into them, so every buffer is the
call's own (nothing kept between calls, nothing shared across streams).  ``BLOCK_SCORES`` with ``BS = 1``: the
source is logits bounded by row ends and starts, and each row's newest column counts as ``+inf`` (the
candidate-block contract at block size 1).
"""
from __future__ import annotations

import triton
import triton.language as tl

from .bisect import _kth
from .common import NEG_HI, fill_tail, pick_digit, row_extent, tl_ordered_hi
from .common import tl_cuda as _tl_cuda

INF_WORD = tl.constexpr(0x7F800000)  # the ordered word of +inf
INT_MAX = tl.constexpr(0x7FFFFFFF)


@triton.jit
def _words(src_ptr, row_off, cols, L, start, nlive, newest, BLOCK_SCORES: tl.constexpr):
    """Ordered words of columns ``cols`` of a row (``NEG_HI`` at or past ``L``; block scores at block size 1: read
    from ``start``, the newest column ``+inf``)."""
    if BLOCK_SCORES:
        x = tl.load(src_ptr + row_off + start + cols, mask=cols < nlive, other=float("-inf"))
        h = tl.where(cols == newest, INF_WORD, tl_ordered_hi(x))
    else:
        h = tl_ordered_hi(tl.load(src_ptr + row_off + cols, mask=cols < L, other=float("-inf")))
    return tl.where(cols < L, h, NEG_HI)


@triton.jit
def _tile_words(src_ptr, row_off, t0, lane, L, start, nlive, newest, BLOCK_SCORES: tl.constexpr):
    """:func:`_words` of columns ``t0 + lane``, addressed from the tile's first column (a scalar), so that a thread's
    words lie at fixed offsets from one address, and bounded by ``lane`` against the bounds less ``t0``."""
    if BLOCK_SCORES:
        x = tl.load(src_ptr + (row_off + start + t0) + lane, mask=lane < nlive - t0, other=float("-inf"))
        h = tl.where(lane == newest - t0, INF_WORD, tl_ordered_hi(x))
        return tl.where(lane < L - t0, h, NEG_HI)
    else:  # past L the load's -inf: its word is NEG_HI
        return tl_ordered_hi(tl.load(src_ptr + (row_off + t0) + lane, mask=lane < L - t0, other=float("-inf")))


@triton.jit
def _claim(ptr, n, lane0):
    """The old value of ``atomic_add(ptr, n)`` in every lane of ``lane0``: added by the first lane and handed on by a
    reduction over the lanes (a scalar atomic hands its result on through shared memory and a barrier)."""
    one = lane0 == 0
    old = tl.atomic_add(ptr + lane0 * 0, tl.where(one, n, 0), mask=one, sem="relaxed")
    return tl.sum(tl.where(one, old, 0), axis=0)


@triton.jit
def _extent(row, len_ptr, start_ptr, n, width, rr, has_len, has_start, BLOCK_SCORES: tl.constexpr):
    """``(L, start, nlive, newest)``: the row's live length, its first logit, its readable columns and its pinned
    newest column (-1: none)."""
    L, start, end = row_extent(row, len_ptr, start_ptr, n, width, rr, has_len, has_start, BLOCK_SCORES, 1)
    L = L.to(tl.int32)
    nlive = L
    newest = tl.zeros([], tl.int32) - 1
    if BLOCK_SCORES:
        nlive = tl.maximum(tl.minimum(end, width) - start, 0).to(tl.int32)
        newest = tl.where(end > start, end - start - 1, -1).to(tl.int32)
    return L, start, nlive, newest


@triton.jit
def _min_max(a0, b0, a1, b1):
    """Combine of a reduction of (minimum, maximum) pairs: both in one pass over the threads."""
    return tl.minimum(a0, a1), tl.maximum(b0, b1)


# the interpreter's reduction over all axes flattens only the first of several inputs
_INTERPRETED = tl.constexpr(bool(triton.knobs.runtime.interpret))


@triton.jit
def _rank_word(h, n, r):
    """The ``r``-th largest of the ``n`` words ``h`` above ``NEG_HI`` (the others ``NEG_HI``), or ``NEG_HI`` when
    ``n < r``; ``r >= 1``."""
    if _INTERPRETED:  # (h a 2-D tile)
        lo, hi = tl.reduce((tl.where(h > NEG_HI, h, INT_MAX), h), 0, _min_max)
        lo, hi = tl.reduce((lo, hi), 0, _min_max)
    else:  # (minimum, maximum) in one reduction
        lo, hi = tl.reduce((tl.where(h > NEG_HI, h, INT_MAX), h), None, _min_max)
    T = tl.where(n == r, lo, NEG_HI)
    if n > r:
        T, base, f = _kth(h, n, r, lo.to(tl.int64), hi.to(tl.int64) + 1, SNAP=12)
        if f != 0:  # `base` words at or above T, T's ties the last: the r-th is T unless all of them are dropped
            if base - r >= tl.sum((h == T).to(tl.int32)):
                T = tl.min(tl.where(h > T, h, INT_MAX))
    return T


@triton.jit
def _tile(N: tl.constexpr, FL: tl.constexpr):
    """Indices ``0 .. N - 1`` as an ``[N // FL, FL]`` tile: in the layout Triton gives its loads, a column of it per
    thread (``FL`` the program's threads)."""
    return tl.arange(0, N // FL)[:, None] * FL + tl.arange(0, FL)[None, :]


@triton.jit
def _slots(x):
    """Inclusive prefix sums of an :func:`_tile` tile in thread order (a thread's column, then the next thread's):
    one scan over the threads' totals, the rest in registers.  A compaction's slots in any order will do, and a
    scan over the tile in index order takes a scan across the threads for each of its rows."""
    per = tl.sum(x, axis=0)
    return (tl.cumsum(per, 0) - per)[None, :] + tl.cumsum(x, 0)


@triton.jit
def _scatter(ptr, slot, x, m, N: tl.constexpr):
    """``ptr[slot] = x`` where ``m``, for :func:`_tile` tiles of ``N`` words: stored flat, so that each thread
    stores its own words (a 2-D scatter may be given another layout, through shared memory)."""
    tl.store(ptr + tl.reshape(slot, [N]), tl.reshape(x, [N]), mask=tl.reshape(m, [N]))


@triton.jit
def _smallest(cols, on, n, r):
    """Mask of the ``r`` smallest of the ``n`` distinct columns ``cols`` where ``on`` (``0 < r < n``)."""
    ck = tl.where(on, INT_MAX - cols, NEG_HI)  # larger for smaller columns; NEG_HI below every one of them
    return on & (ck >= _rank_word(ck, n, r))


@triton.jit(do_not_specialize=["src_stride", "n", "width", "k", "rr", "CAP", "CAP_EQ", "RZ", "RB", "has_len",
                               "has_start"])
def _longrow_sample_kernel(src_ptr, src_stride, len_ptr, start_ptr, thr_ptr, sync_ptr, hist_ptr, n, width, k, rr,
                           CAP, CAP_EQ, RZ, RB, has_len, has_start, BLOCK_SCORES: tl.constexpr, NCH: tl.constexpr,
                           CH: tl.constexpr, NB: tl.constexpr, STILE: tl.constexpr, PDL: tl.constexpr):
    """Grid ``(rows,)``: row ``r``'s threshold word to ``thr[r, 0]`` (the sample of ``NCH`` runs of ``CH`` columns)
    and to ``thr[r, 1]`` the shift that puts the sample's words above it in buckets ``(word - T) >> shift`` below
    ``NB / 2``; the row's counters ``sync[r, :4]`` and buckets ``hist[r, :NB]`` to zero, for the stream.  A sampled
    row's threshold is the sample's word of rank ``m + RZ * sqrt(m) + RB`` (rounded up), ``m = k * NCH * CH / L`` the
    rank of the row's k-th word scaled to the sample (the rank's spread is about
    ``sqrt(m)`` words on rows of independent values), at most the rank that aims at half the buffer of ``CAP``
    words (or at ``2k``, where that is more).  A threshold whose tie, scaled to the row, would fill more than
    half the buffer of ``CAP_EQ`` equal columns, and whose needed ties the finish would find only by a scan of more
    than four of its wide steps (``4 * STILE`` columns each), moves down to the sample's next word where the words
    at or above it fit in three quarters of ``CAP``: the tie is then held with the candidates."""
    if PDL:
        _tl_cuda.gdc_launch_dependents()
    row = tl.program_id(0)
    tl.store(sync_ptr + row.to(tl.int64) * 4 + tl.arange(0, 4), tl.zeros([4], tl.int32))
    tl.store(hist_ptr + row.to(tl.int64) * NB + tl.arange(0, NB), tl.zeros([NB], tl.int32))
    L, start, nlive, newest = _extent(row, len_ptr, start_ptr, n, width, rr, has_len, has_start, BLOCK_SCORES)
    row_off = row.to(tl.int64) * src_stride
    SAMPLE: tl.constexpr = NCH * CH
    i = tl.arange(0, NCH)[:, None]
    j = tl.arange(0, CH)[None, :]
    if L <= SAMPLE:  # the whole row: the k-th word itself
        cols = i * CH + j
        r = k
    else:  # runs spread over the row; the k-th word's rank in the sample, and a margin above it
        cols = ((i.to(tl.int64) * (L - CH)) // (NCH - 1) + j).to(tl.int32)
        m = (k * SAMPLE).to(tl.float32) / L.to(tl.float32)
        rf = m + RZ * tl.sqrt(m) + RB
        r = rf.to(tl.int32)
        r += (r.to(tl.float32) < rf).to(tl.int32)
        top = tl.maximum((CAP // 2).to(tl.int64) * SAMPLE // L, ((2 * k * SAMPLE).to(tl.int64) + L - 1) // L)
        r = tl.minimum(tl.maximum(tl.minimum(r.to(tl.int64), top), 1), SAMPLE).to(tl.int32)
    h = _words(src_ptr, row_off, cols, L, start, nlive, newest, BLOCK_SCORES)
    T = _rank_word(h, tl.sum((h > NEG_HI).to(tl.int32)), r)
    # the sample's counts scaled to the row (x nw / SAMPLE; a row sampled whole: its counts); a tie the sample sees
    # at least twice, the columns a scan would read for the ties needed past the words above it: need x L / ties
    nw = tl.maximum(L, SAMPLE).to(tl.int64)
    ties = tl.sum((h == T).to(tl.int32)).to(tl.int64)
    gt = tl.sum((h > T).to(tl.int32)).to(tl.int64)
    below = tl.max(tl.where(h < T, h, NEG_HI))
    wide = (ties > 1) & (2 * ties * nw > CAP_EQ * SAMPLE)
    far = (k * SAMPLE - gt * nw) * L > 16 * STILE * ties * nw
    if (T > NEG_HI) & (below > NEG_HI) & wide & far & (4 * (gt + ties) * nw <= 3 * CAP * SAMPLE):
        T = below
    # the bucket shift: the sample's words above T over the lower half of NB buckets (room above for the row's)
    d = tl.max(h).to(tl.int64) - T
    sh = tl.zeros([], tl.int32)
    while (d >> sh) >= NB // 2:
        sh += 1
    tl.store(thr_ptr + 2 * row, T)
    tl.store(thr_ptr + 2 * row + 1, sh)


@triton.jit
def _exact_row(src_ptr, row_off, out_ptr, obase, L, start, nlive, newest, k, STILE: tl.constexpr, KT: tl.constexpr,
               BLOCK_SCORES: tl.constexpr):
    """The row's top ``k`` by one program, exactly: the candidates counted, then 8-bit digits of the word from the
    top (a pass over the row each, stopping once the threshold digit's whole bin is needed), then one pass writing
    every word above the threshold and the first ``need`` equal to it in column order."""
    lane = tl.arange(0, STILE)
    bins = tl.arange(0, 256)
    ncand = tl.zeros([], tl.int32)
    for t0 in range(0, L, STILE):
        h = _words(src_ptr, row_off, t0 + lane, L, start, nlive, newest, BLOCK_SCORES)
        ncand += tl.sum((h > NEG_HI).to(tl.int32))
    allc = ncand <= k
    done = allc
    pre = tl.zeros([], tl.int32)
    prefix = tl.zeros([], tl.int32)
    shift = tl.zeros([], tl.int32)
    need = tl.zeros([], tl.int32)
    rem = tl.zeros([], tl.int32) + k
    for d in tl.static_range(4):
        if not done:
            sh: tl.constexpr = 24 - 8 * d
            hist = tl.zeros([256], tl.int32)
            for t0 in range(0, L, STILE):
                h = _words(src_ptr, row_off, t0 + lane, L, start, nlive, newest, BLOCK_SCORES)
                c = h > NEG_HI
                if d == 0:
                    dig = (h >> 24) + 128
                else:
                    c = c & ((h >> (sh + 8)) == pre)
                    dig = (h >> sh) & 255
                hist += tl.histogram(dig, 256, mask=c)
            b, hb, rem = pick_digit(hist, rem, bins)
            if d == 0:
                pre = b - 128
            else:
                pre = pre * 256 + b
            fin = rem == hb
            if d == 3:
                fin = fin | True  # all 32 bits fixed: ties break by column order
            if fin:
                prefix = pre
                shift = shift * 0 + sh
                need = rem
                done = done | fin
    cnt = tl.zeros([], tl.int32)
    eq_seen = tl.zeros([], tl.int32)
    for t0 in range(0, L, STILE):
        cols = t0 + lane
        h = _words(src_ptr, row_off, cols, L, start, nlive, newest, BLOCK_SCORES)
        c = h > NEG_HI
        v = h >> shift
        eq = c & (v == prefix)
        allv = (cols * 0 + allc.to(tl.int32)) != 0  # tile-shaped (the interpreter rejects a 0-d bool operand)
        take = c & ((allv | (v > prefix)) | (eq & (eq_seen + tl.cumsum(eq.to(tl.int32), 0) <= need)))
        pos = cnt + tl.cumsum(take.to(tl.int32), 0) - 1
        tl.store(out_ptr + obase + pos, cols, mask=take & (pos < k))
        cnt += tl.sum(take.to(tl.int32))
        eq_seen += tl.sum(eq.to(tl.int32))
    fill_tail(out_ptr, obase, tl.minimum(cnt, k), k, KT)


@triton.jit
def _bucket(h, T, sh, NB: tl.constexpr):
    """Bucket ``(h - T) >> sh`` of words ``h > T`` (the difference taken as uint32: exact), the top one ``NB - 1``
    holding every word from there up."""
    return tl.minimum((h - T).to(tl.uint32, bitcast=True) >> sh.to(tl.uint32), NB - 1).to(tl.int32)


@triton.jit(do_not_specialize=["src_stride", "n", "width", "k", "rr", "P", "CAP", "CAP_EQ", "has_len", "has_start"])
def _longrow_stream_kernel(src_ptr, src_stride, len_ptr, start_ptr, thr_ptr, gtw_ptr, gtc_ptr, eqc_ptr, sync_ptr,
                           hist_ptr, n, width, k, rr, P, CAP, CAP_EQ, has_len, has_start, BLOCK_SCORES: tl.constexpr,
                           TILE: tl.constexpr, LANES: tl.constexpr, NB: tl.constexpr, PDL: tl.constexpr):
    """Grid ``(rows, P)``: program ``p`` streams its share of row ``r`` once.  Words above ``T = thr[r, 0]`` go to
    ``gtw[r, slot]`` with their columns to ``gtc[r, slot]`` (int32 ``[rows, CAP]``) and are counted in
    ``hist[r, bucket]`` (:func:`_bucket`, int32 ``[rows, NB]``), the columns of words equal to it go to
    ``eqc[r, slot]`` (int32 ``[rows, CAP_EQ]``); ``sync[r, 1]`` / ``sync[r, 2]`` count them all, also past the
    buffers.  ``PDL``: a programmatic dependent of the sample launch (its threshold is read after the wait)."""
    if PDL:  # the finish's programs may take their places as the last of these run (they wait on all of them)
        _tl_cuda.gdc_launch_dependents()
    row = tl.program_id(0)
    p = tl.program_id(1)
    L, start, nlive, newest = _extent(row, len_ptr, start_ptr, n, width, rr, has_len, has_start, BLOCK_SCORES)
    chunk = tl.maximum((tl.cdiv(L, P) + TILE - 1) // TILE * TILE, TILE)
    lo = p * chunk
    hi = tl.minimum(lo + chunk, L)
    # a tile as [TILE // LANES, LANES], a column of it per thread: a thread counts its own words, and it keeps its
    # first two words above T in registers, so only those go through the slot scan, the stores and the histogram
    # (a tile where a thread has three or more takes all its words through them)
    R: tl.constexpr = TILE // LANES
    rix = tl.arange(0, R)[:, None]
    lane0 = tl.arange(0, LANES)
    lane = rix * LANES + lane0[None, :]
    row_off = row.to(tl.int64) * src_stride
    nl = tl.minimum(nlive, hi)  # (block scores: no read past the program's share)
    # the first tile goes out before the wait: the row was complete before the sample launch began (a full
    # dependent of the work before it), so only the threshold and the counters wait for it
    nxt = _tile_words(src_ptr, row_off, lo, lane, hi, start, nl, newest, BLOCK_SCORES)
    if PDL:
        _tl_cuda.gdc_wait()
    if lo < hi:
        T = tl.load(thr_ptr + 2 * row)
        sh = tl.load(thr_ptr + 2 * row + 1)
        srow = sync_ptr + row.to(tl.int64) * 4
        hrow = hist_ptr + row.to(tl.int64) * NB
        gbase = row.to(tl.int64) * CAP
        ebase = row.to(tl.int64) * CAP_EQ
        # once the program has seen the buffer of equal columns full, the finish scans the row for them instead: the
        # program only counts its equal words from then on, and adds them to the row's count once, at its end
        eq_full = tl.zeros([], tl.int32)
        eq_left = tl.zeros([], tl.int32)
        for t0 in range(lo, hi, TILE):
            h = nxt
            # the next tile's loads go out before this tile's atomics wait on their replies
            nxt = _tile_words(src_ptr, row_off, t0 + TILE, lane, hi, start, nl, newest, BLOCK_SCORES)
            cols = t0 + lane
            g = h > T
            e = (h == T) & (h > NEG_HI)  # (equal to T, and T above -inf)
            cnt = tl.sum(g.to(tl.int32) + (e.to(tl.int32) << 16), axis=0)  # per thread
            both = tl.sum(cnt, axis=0)
            ng = both & 0xFFFF
            ne = both >> 16
            if ng > 0:
                per = cnt & 0xFFFF
                first = _claim(srow + 1, ng, lane0) + tl.cumsum(per, 0) - per  # a thread's first slot
                if tl.max(per, axis=0) <= 2:
                    # a thread's first two words above T and their rows, from its last row up (a row of the tile is
                    # picked by a sum over the thread's own words, all but one zero: no instructions)
                    w1 = tl.zeros([LANES], tl.int32)
                    w2 = w1
                    i1 = w1
                    i2 = w1
                    for r in tl.static_range(R - 1, -1, -1):
                        hr = tl.sum(tl.where(rix == r, h, 0), axis=0)
                        gr = hr > T
                        w2 = tl.where(gr, w1, w2)
                        i2 = tl.where(gr, i1, i2)
                        w1 = tl.where(gr, hr, w1)
                        i1 = tl.where(gr, r, i1)
                    for j in tl.static_range(2):
                        ij = i1 if j == 0 else i2
                        w = w1 if j == 0 else w2
                        on = per > j
                        ok = on & (first + j < CAP)
                        tl.store(gtw_ptr + gbase + first + j, w, mask=ok)
                        tl.store(gtc_ptr + gbase + first + j, t0 + ij * LANES + lane0, mask=ok)
                        tl.atomic_add(hrow + _bucket(w, T, sh, NB), 1, mask=on, sem="relaxed")
                else:
                    pos = first[None, :] + tl.cumsum(g.to(tl.int32), 0) - 1
                    fits = g & (pos < CAP)
                    _scatter(gtw_ptr + gbase, pos, h, fits, TILE)
                    _scatter(gtc_ptr + gbase, pos, cols, fits, TILE)
                    tl.atomic_add(tl.reshape(hrow + _bucket(h, T, sh, NB), [TILE]), 1, mask=tl.reshape(g, [TILE]),
                                  sem="relaxed")
            if ne > 0:
                if eq_full == 0:
                    per = cnt >> 16
                    old = _claim(srow + 2, ne, lane0)
                    pos = old + (tl.cumsum(per, 0) - per)[None, :] + tl.cumsum(e.to(tl.int32), 0) - 1
                    _scatter(eqc_ptr + ebase, pos, cols, e & (pos < CAP_EQ), TILE)
                    eq_full = (old + ne >= CAP_EQ).to(tl.int32)
                else:
                    eq_left += ne
        if eq_left > 0:
            tl.atomic_add(srow + 2, eq_left, sem="relaxed")


@triton.jit
def _tie_scan(src_ptr, row_off, out_ptr, obase, T, need, seen, t0, end, L, start, nlive, newest, W: tl.constexpr,
              BLOCK_SCORES: tl.constexpr):
    """``(seen, t0)`` after writing the columns equal to ``T`` from ``t0`` on, in column order and ``W`` a step, to
    ``out[obase + seen:]``, until ``need`` are written or ``end``; ``seen`` of them written before."""
    lane = tl.arange(0, W)
    while (seen < need) & (t0 < end):
        cols = t0 + lane
        e = _words(src_ptr, row_off, cols, L, start, nlive, newest, BLOCK_SCORES) == T
        cs = seen + tl.cumsum(e.to(tl.int32), 0)
        tl.store(out_ptr + obase + cs - 1, cols, mask=e & (cs <= need))
        seen += tl.sum(e.to(tl.int32))
        t0 += W
    return seen, t0


@triton.jit(do_not_specialize=["src_stride", "n", "width", "k", "rr", "CAP", "CAP_EQ", "has_len", "has_start"])
def _longrow_finish_kernel(src_ptr, src_stride, len_ptr, start_ptr, thr_ptr, out_ptr, gtw_ptr, gtc_ptr, eqc_ptr,
                           sync_ptr, hist_ptr, n, width, k, rr, CAP, CAP_EQ, has_len, has_start,
                           BLOCK_SCORES: tl.constexpr, FT: tl.constexpr, FT_EQ: tl.constexpr, FL: tl.constexpr,
                           FB: tl.constexpr, NB: tl.constexpr, STILE: tl.constexpr, KT: tl.constexpr,
                           PDL: tl.constexpr, HIP: tl.constexpr):
    """Grid ``(rows,)``: row ``r``'s ids to ``out[r, :k]`` (every slot) from the stream launch's candidates
    (``CAP <= FT`` and ``CAP_EQ <= FT_EQ``: a register tile holds either buffer, as :func:`_tile` of ``FL``
    columns, ``FL`` dividing both).  Where the top ``k`` lie above ``T``, the row's buffer of equal columns (then not
    needed) holds the k-th word's bucket, ``FB`` words and their columns (``2 * FB <= CAP_EQ``).  ``PDL``: a
    programmatic dependent of the stream launch.  ``HIP``: an AMD target."""
    row = tl.program_id(0)
    L, start, nlive, newest = _extent(row, len_ptr, start_ptr, n, width, rr, has_len, has_start, BLOCK_SCORES)
    if PDL:
        _tl_cuda.gdc_wait()
    srow = sync_ptr + row.to(tl.int64) * 4
    gt = tl.load(srow + 1)
    eq = tl.load(srow + 2)
    bins = tl.arange(0, NB)
    hrow = hist_ptr + row.to(tl.int64) * NB
    hist = tl.load(hrow + bins)
    T = tl.load(thr_ptr + 2 * row)  # (with the counts: one round trip)
    sh = tl.load(thr_ptr + 2 * row + 1)
    row_off = row.to(tl.int64) * src_stride
    obase = row.to(tl.int64) * k
    gbase = row.to(tl.int64) * CAP
    ebase = row.to(tl.int64) * CAP_EQ
    if (gt > CAP) | ((T > NEG_HI) & (gt + eq < k)):  # the sample missed: the row exactly, read again
        _exact_row(src_ptr, row_off, out_ptr, obase, L, start, nlive, newest, k, STILE, KT, BLOCK_SCORES)
    else:
        i = _tile(FT, FL)
        on = i < gt
        c = tl.load(gtc_ptr + gbase + i, mask=on, other=0)
        if gt > k:  # the top k of the words above T: the bucket of the k-th, then the k-th among its words
            h = tl.load(gtw_ptr + gbase + i, mask=on, other=NEG_HI)  # (in flight while the bucket is found)
            b, hb, rem = pick_digit(hist, k, bins)
            bk = tl.where(on, _bucket(h, T, sh, NB), -1)
            above = bk > b
            inb = bk == b
            take = above | inb
            if (rem < hb) & (hb <= FB):  # a few words in the bucket: ranked in pairs, through the free tie buffer
                # (every word above the bucket is taken: k - rem of them, at their positions among them)
                pk = _slots(above.to(tl.int32) + (inb.to(tl.int32) << 16))
                _scatter(out_ptr + obase - 1, pk & 0xFFFF, c, above, FT)
                _scatter(eqc_ptr + ebase - 1, pk >> 16, h, inb, FT)
                _scatter(eqc_ptr + ebase + FB - 1, pk >> 16, c, inb, FT)
                if HIP:  # Triton's AMD barrier is a bare s_barrier: the wave's stores waited for first
                    tl.inline_asm_elementwise("s_waitcnt vmcnt(0)", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
                tl.debug_barrier()  # the bucket's words stored before any thread loads them
                j = tl.arange(0, FB)
                on_b = j < hb
                w = tl.load(eqc_ptr + ebase + j, mask=on_b, other=NEG_HI)
                cb = tl.load(eqc_ptr + ebase + FB + j, mask=on_b, other=INT_MAX)
                # a word's rank in the bucket: the words before it, larger or equal at a smaller column (the
                # padding, NEG_HI, below every word)
                first = (w[None, :] > w[:, None]) | ((w[None, :] == w[:, None]) & (cb[None, :] < cb[:, None]))
                rk = tl.sum(first.to(tl.int32), axis=1)
                tl.store(out_ptr + obase + (k - rem) + rk, cb, mask=on_b & (rk < rem))
            elif rem < hb:
                hb_w = tl.where(inb, h, NEG_HI)
                Tk = _rank_word(hb_w, hb, rem)
                above = above | (hb_w > Tk)
                tie = hb_w == Tk
                both = tl.sum(tie.to(tl.int32) + (above.to(tl.int32) << 16))  # (at most FT of each: one sum)
                nt = both & 0xFFFF
                need = k - (both >> 16)
                take = above | tie
                if need < nt:  # ties at the k-th word: the smaller columns
                    take = above | _smallest(c, tie, nt, need)
            if (rem == hb) | (hb > FB):
                _scatter(out_ptr + obase - 1, _slots(take.to(tl.int32)), c, take, FT)
        else:  # all of them, then the first columns equal to T
            tl.store(out_ptr + obase + i, c, mask=on)
            written = gt
            need = k - gt
            if (need > 0) & (T > NEG_HI):
                if eq <= CAP_EQ:
                    j = _tile(FT_EQ, FL)
                    on_e = j < eq
                    ce = tl.load(eqc_ptr + ebase + j, mask=on_e, other=0)
                    take = on_e
                    if need < eq:
                        take = _smallest(ce, on_e, eq, need)
                    _scatter(out_ptr + obase + written - 1, _slots(take.to(tl.int32)), ce, take, FT_EQ)
                    written += tl.minimum(eq, need)
                else:  # a wide tie: its first `need` columns, scanning the row until they are found -- a
                    # first step of STILE columns (a tie met early), then steps four times as wide where the rest
                    # lies more than four steps off at the tie's mean density (a tie spread thin over the row)
                    seen = tl.zeros([], tl.int32)
                    t0 = tl.zeros([], tl.int32)
                    seen, t0 = _tie_scan(src_ptr, row_off, out_ptr, obase + written, T, need, seen, t0,
                                         tl.minimum(L, STILE), L, start, nlive, newest, STILE, BLOCK_SCORES)
                    if (need - seen).to(tl.int64) * L > 4 * STILE * eq.to(tl.int64):
                        seen, t0 = _tie_scan(src_ptr, row_off, out_ptr, obase + written, T, need, seen, t0, L, L,
                                             start, nlive, newest, 4 * STILE, BLOCK_SCORES)
                    else:
                        seen, t0 = _tie_scan(src_ptr, row_off, out_ptr, obase + written, T, need, seen, t0, L, L,
                                             start, nlive, newest, STILE, BLOCK_SCORES)
                    written += tl.minimum(seen, need)
            fill_tail(out_ptr, obase, written, k, KT)
