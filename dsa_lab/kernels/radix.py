"""Radix (histogram) top-k: the select for ``k > 512``, and for ``k > 256`` at fewer rows than SMs, where
:mod:`.bisect` does not serve the call (fewer than SM/6 rows of more than 8192 columns, or rows wider than 32768).

No sorting: the k-th key is found digit by digit from histograms, then every column above it is written, so the
work is a few streaming passes over the row whatever k is (the hier kernel's bitonic stages grow with k).

* Each live column whose score is above ``-inf`` is a candidate, ranked by its ordered word ``u`` (unsigned, NaN
  on top), ties to the smaller column.
* Digit ``d = 0..3`` (8 bits from the top): a histogram over the candidates whose higher digits equal the prefix
  found so far picks the bin where the count from the top reaches ``need`` (k minus the candidates already known
  to be above).  It stops once that bin is needed whole, or before digit 0 when the row has at most k candidates.
* The output pass streams the row in column order and writes every candidate above the threshold prefix, then
  the first ``need`` candidates equal to it (the contract's tie break); slots past the count get ``-1``.

:func:`_radix_kernel` does a row in one program.  :func:`_radix_par_kernel` splits every pass of a row over ``P``
programs, one launch per pass (``step`` 0-4): each program adds its histogram to the row's totals with integer
atomics (the sum does not depend on their order) and keeps its suffix sums, and the next launch reads the totals.
The totals are a buffer kept between calls (one per stream or capture) that each call returns to zero where the
next adds, so a call captures in a CUDA graph and replays, and calls on several streams never share one.
Rows of at most ``short`` live columns are selected whole by one program in the first launch and skipped by the
others.  The ids come out in column order.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .common import fill_tail, pick_digit, row_extent, tl_ordered_hi
from .common import tl_cuda as _tl_cuda


@triton.jit
def _u32_of(src_ptr, row_off, cols, L):
    """(ordered word as uint32 -- unsigned order is the contract's, NaN on top --, candidate mask) of ``cols``
    (``cols >= L`` masked)."""
    live = cols < L
    s = tl.load(src_ptr + row_off + cols, mask=live, other=float("-inf"))
    u = tl_ordered_hi(s).to(tl.uint32, bitcast=True) ^ 0x80000000
    return u, live & (s != float("-inf"))  # NaN != -inf: NaN is a candidate


@triton.jit
def _radix_row(src_ptr, row_off, out_ptr, row, L, k, TILE: tl.constexpr, KT: tl.constexpr):
    """One row of live length ``L`` in one program: every digit pass over the row, then the output pass (32-bit
    words, counts and positions: a row and k are below 2**31)."""
    L = L.to(tl.int32)
    lane = tl.arange(0, TILE)
    bins = tl.arange(0, 256)
    ncand = tl.zeros([], tl.int32)
    for t0 in range(0, L, TILE):
        _, c = _u32_of(src_ptr, row_off, t0 + lane, L)
        ncand += tl.sum(c.to(tl.int32))
    prefix = tl.zeros([], tl.uint32)  # take (u >> shift) > prefix ...
    shift = tl.zeros([], tl.uint32)
    need = tl.zeros([], tl.int32)  # ... and the first `need` (column order) with (u >> shift) == prefix
    allc = ncand <= k  # at most k candidates: every one of them
    done = allc
    pre = tl.zeros([], tl.uint32)
    rem = tl.zeros([], tl.int32) + k
    for d in tl.static_range(4):
        if not done:
            sh: tl.constexpr = 24 - 8 * d
            hist = tl.zeros([256], tl.int32)
            for t0 in range(0, L, TILE):
                u, c = _u32_of(src_ptr, row_off, t0 + lane, L)
                if d > 0:
                    c = c & ((u >> (sh + 8)) == pre)
                hist += tl.histogram(((u >> sh) & 255).to(tl.int32), 256, mask=c)
            b, hb, rem = pick_digit(hist, rem, bins)
            pre = pre * 256 + b.to(tl.uint32)
            fin = rem == hb
            if d == 3:
                fin = fin | True  # all 32 bits fixed: ties break by column order
            if fin:
                prefix = pre
                shift = shift * 0 + sh
                need = rem
                done = done | fin
    base = row.to(tl.int64) * k
    cnt = tl.zeros([], tl.int32)
    eq_seen = tl.zeros([], tl.int32)
    for t0 in range(0, L, TILE):
        cols = t0 + lane
        u, c = _u32_of(src_ptr, row_off, cols, L)
        v = u >> shift
        eq = c & (v == prefix)
        # (every candidate when the row has at most k of them: its words lie at or above -inf's, never needed)
        allv = (cols * 0 + allc.to(tl.int32)) != 0  # tile-shaped (the interpreter rejects a 0-d bool operand)
        take = c & ((allv | (v > prefix)) | (eq & (eq_seen + tl.cumsum(eq.to(tl.int32), 0) <= need)))
        pos = cnt + tl.cumsum(take.to(tl.int32), 0) - 1
        tl.store(out_ptr + base + pos, cols, mask=take & (pos < k))
        cnt += tl.sum(take.to(tl.int32))
        eq_seen += tl.sum(eq.to(tl.int32))
    fill_tail(out_ptr, base, tl.minimum(cnt, k), k, KT)


@triton.jit(do_not_specialize=["src_stride", "n", "width", "k", "rr", "has_len", "has_start"])
def _radix_kernel(src_ptr, src_stride, len_ptr, start_ptr, out_ptr, n, width, k, rr, has_len, has_start,
                  BLOCK_SCORES: tl.constexpr, BS: tl.constexpr, TILE: tl.constexpr, KT: tl.constexpr):
    row = tl.program_id(0)
    L, start, end = row_extent(row, len_ptr, start_ptr, n, width, rr, has_len, has_start, BLOCK_SCORES, BS)
    _radix_row(src_ptr, row.to(tl.int64) * src_stride, out_ptr, row, L, k, TILE, KT)


@triton.jit
def _chunk(L, p, P, TILE: tl.constexpr):
    """[lo, hi) of program p's share of a row of L columns split over P programs (whole tiles)."""
    chunk = tl.maximum((tl.cdiv(L, P) + TILE - 1) // TILE * TILE, TILE)
    lo = p * chunk
    return lo, tl.minimum(lo + chunk, L)


@triton.jit
def _par_hist(src_ptr, row_off, lo, hi, prefix, D, TILE: tl.constexpr):
    """Histogram of digit ``D`` (0 the top) over the candidates of columns [lo, hi) whose higher digits equal
    ``prefix`` (uint32, ``8 * D`` bits)."""
    lane = tl.arange(0, TILE)
    hist = tl.zeros([256], tl.int32)
    for t0 in range(lo, hi, TILE):
        u, c = _u32_of(src_ptr, row_off, t0 + lane, hi)
        if D > 0:
            c = c & ((u >> (32 - 8 * D)) == prefix)
        hist += tl.histogram(((u >> (24 - 8 * D)) & 255).to(tl.int32), 256, mask=c)
    return hist


@triton.jit
def _par_emit(src_ptr, row_off, out_ptr, row, p, lo, hi, gt_p, eq_p, prefix, need, nbits, k, pp,
              TILE: tl.constexpr, KT: tl.constexpr):
    """Program p's share of the selection: its candidates above the ``nbits``-bit threshold ``prefix`` (every
    candidate when ``nbits`` is 0) after those of the programs before it, then its candidates equal to it whose
    rank among all ties (column order) is at most ``need``, after every above-threshold candidate of the row.
    Program 0 fills the slots past the selected count with -1."""
    base = row.to(tl.int64) * k
    gt = gt_p
    eq = eq_p
    a_cnt = tl.sum(tl.where(pp < p, gt, 0))
    e_cnt = tl.sum(tl.where(pp < p, eq, 0))
    a_tot = tl.sum(gt)
    sh = tl.where(nbits > 0, 32 - nbits, 0).to(tl.uint32)
    lane = tl.arange(0, TILE)
    for t0 in range(lo, hi, TILE):
        cols = t0 + lane
        u, c = _u32_of(src_ptr, row_off, cols, hi)
        top = u >> sh
        allv = (cols * 0 + nbits) == 0  # tile-shaped (the interpreter rejects a 0-d bool operand)
        ab = c & (allv | (top > prefix))
        ti = c & (~allv) & (top == prefix)
        pa = a_cnt + tl.cumsum(ab.to(tl.int32), 0) - 1
        tl.store(out_ptr + base + pa, cols.to(tl.int32), mask=ab & (pa < k))
        rt = e_cnt + tl.cumsum(ti.to(tl.int32), 0)
        pt = a_tot + rt - 1
        tl.store(out_ptr + base + pt, cols.to(tl.int32), mask=ti & (rt <= need) & (pt < k))
        a_cnt += tl.sum(ab.to(tl.int32))
        e_cnt += tl.sum(ti.to(tl.int32))
    if p == 0:
        fill_tail(out_ptr, base, tl.minimum(a_tot + tl.minimum(need, tl.sum(eq)), k), k, KT)


@triton.jit
def _par_count(src_ptr, row_off, lo, hi, prefix, D, hist_ptr, tot_ptr, bins, TILE: tl.constexpr):
    """This program's histogram of digit ``D`` over its columns [lo, hi) (candidates matching ``prefix``): its
    suffix sums (candidates at or above each bin) to ``hist_ptr``, its counts added to the row's totals at
    ``tot_ptr`` (integer atomics: the sum does not depend on their order)."""
    h = _par_hist(src_ptr, row_off, lo, hi, prefix, D, TILE)
    tl.store(hist_ptr + bins, tl.sum(h) - tl.cumsum(h, 0) + h)
    tl.atomic_add(tot_ptr + bins, h, sem="relaxed")


@triton.jit(do_not_specialize=["src_stride", "n", "width", "k", "P", "rr", "has_len", "has_start", "step", "short"])
def _radix_par_kernel(
    src_ptr, src_stride, len_ptr, start_ptr, out_ptr, hist_ptr, tot_ptr, st_ptr, acc_ptr,
    n, width, k, P, rr, has_len, has_start, step, short,
    BLOCK_SCORES: tl.constexpr, BS: tl.constexpr, TILE: tl.constexpr, STILE: tl.constexpr, KT: tl.constexpr,
    PP: tl.constexpr, PDL: tl.constexpr,
):
    """Launch ``step`` of 5 (grid rows x P; program p owns whole tiles [lo, hi) of its row).

    step 0: every program counts the top digit over its share (:func:`_par_count`); a row of at most ``short``
    live columns is selected whole here by program 0 (:func:`_radix_row`) and skipped by every launch.
    step 1-3: every program reads the row's totals of the previous launch and decides digit ``step - 1`` (all
    agree: same input); each program's count above the chosen bin and in it come from the programs' suffix sums
    (two loads per program, not their histograms); program 0 records the decision (``st[step % 2, row]`` =
    prefix, need, done, bits) and the per-program counts (``acc[row]``); unless decided, every program counts the
    next digit.  A row is decided when it has at most k candidates, when the chosen bin is needed whole, or after
    the fourth digit.  step 4: decide the fourth digit where still open; every program writes its share.

    ``hist`` and ``st`` alternate by launch parity, so no launch reads what it writes.  The row totals ``tot[rows,
    4, 256]`` are a persistent buffer kept at zero between calls (a row's slots do not depend on the call's row
    count): launch s adds to ``tot[row, s]``, launch s + 1 reads it, and launches 2-4 zero ``tot[row, s - 2]``,
    launch 0 ``tot[row, 3]``, each after its last reader finished.

    ``PDL``: every launch a programmatic dependent of the one before it (sm_90+): it waits for it after reading the
    row's bounds, and lets the next one start launching at once."""
    row = tl.program_id(0)
    p = tl.program_id(1)
    L, start, end = row_extent(row, len_ptr, start_ptr, n, width, rr, has_len, has_start, BLOCK_SCORES, BS)
    if PDL:
        _tl_cuda.gdc_wait()
        _tl_cuda.gdc_launch_dependents()
    L = L.to(tl.int32)  # 32-bit columns, counts and positions: a row and k are below 2**31
    row_off = row.to(tl.int64) * src_stride
    if L <= short:
        if (step == 0) & (p == 0):
            _radix_row(src_ptr, row_off, out_ptr, row, L, k, STILE, KT)
    else:
        rows = tl.num_programs(0)
        lo, hi = _chunk(L, p, P, TILE)
        bins = tl.arange(0, 256)
        pp = tl.arange(0, PP)
        hrow = hist_ptr + (((step % 2) * rows + row).to(tl.int64) * P + p) * 256  # this launch's suffix sums
        if p == 0:  # zero the totals whose last reader has finished (see the docstring)
            z = tl.where(step == 0, 3, (step + 2) % 4)
            if step != 1:
                tl.store(tot_ptr + (row.to(tl.int64) * 4 + z) * 256 + bins, tl.zeros([256], tl.int32))
        if step == 0:
            _par_count(src_ptr, row_off, lo, hi, tl.zeros([], tl.uint32), 0, hrow, tot_ptr + row.to(tl.int64) * 1024,
                       bins, TILE)
        else:
            prev = (step - 1) % 2
            sb = (prev * rows + row).to(tl.int64) * 4
            if step == 1:
                prefix = tl.zeros([], tl.uint32)
                need = tl.zeros([], tl.int32) + k
                done = tl.zeros([], tl.int32)
                nbits = tl.zeros([], tl.int32)
            else:
                prefix = tl.load(st_ptr + sb).to(tl.uint32, bitcast=True)
                need = tl.load(st_ptr + sb + 1)
                done = tl.load(st_ptr + sb + 2)
                nbits = tl.load(st_ptr + sb + 3)
            abase = row.to(tl.int64) * 2 * PP
            ob = ((step % 2) * rows + row).to(tl.int64) * 4
            if done == 0:
                D = step - 1  # the digit decided now
                H = tl.load(tot_ptr + (row.to(tl.int64) * 4 + step - 1) * 256 + bins)
                ncand = tl.sum(H)
                b, hb, rem2 = pick_digit(H, tl.where(D == 0, tl.minimum(ncand, k), need), bins)
                b = tl.where((D == 0) & (ncand <= k), -1, b)  # at most k candidates: all of them, nothing tied
                # program q's candidates above bin b (its suffix sum at b + 1) and in it
                sq = hist_ptr + ((prev * rows + row).to(tl.int64) * P + pp) * 256
                gt_p = tl.load(sq + b + 1, mask=(pp < P) & (pp * 0 + b < 255), other=0)  # (tile-shaped: interpreter)
                eq_p = tl.where(b < 0, 0, tl.load(sq + tl.maximum(b, 0), mask=pp < P, other=0) - gt_p)
                decided = (rem2 == hb) | (b < 0)  # (after the fourth digit step 4 emits whatever this says)
                if D == 0:
                    acc_gt = gt_p
                    new_bits = tl.where(b < 0, 0, 8)
                else:
                    acc_gt = tl.load(acc_ptr + abase + pp, mask=pp < P, other=0) + gt_p
                    new_bits = nbits + 8
                new_prefix = (prefix << 8) | tl.maximum(b, 0).to(tl.uint32)
                new_need = tl.where(b < 0, 0, rem2)
                if step < 4:
                    if p == 0:  # (program 0 alone reads and writes acc in steps 1-3)
                        tl.store(st_ptr + ob, new_prefix.to(tl.int32, bitcast=True))
                        tl.store(st_ptr + ob + 1, new_need.to(tl.int32))
                        tl.store(st_ptr + ob + 2, decided.to(tl.int32))
                        tl.store(st_ptr + ob + 3, new_bits.to(tl.int32))
                        tl.store(acc_ptr + abase + pp, acc_gt, mask=pp < P)
                        tl.store(acc_ptr + abase + PP + pp, eq_p, mask=pp < P)
                    if decided == 0:
                        _par_count(src_ptr, row_off, lo, hi, new_prefix, step, hrow,
                                   tot_ptr + (row.to(tl.int64) * 4 + step) * 256, bins, TILE)
                else:
                    _par_emit(src_ptr, row_off, out_ptr, row, p, lo, hi, acc_gt, eq_p, new_prefix, new_need,
                              new_bits, k, pp, TILE, KT)
            else:
                if step < 4:
                    if p == 0:  # carry the decided state to this launch's parity
                        tl.store(st_ptr + ob, prefix.to(tl.int32, bitcast=True))
                        tl.store(st_ptr + ob + 1, need.to(tl.int32))
                        tl.store(st_ptr + ob + 2, done)
                        tl.store(st_ptr + ob + 3, nbits)
                else:
                    acc_gt = tl.load(acc_ptr + abase + pp, mask=pp < P, other=0)
                    eq_p = tl.load(acc_ptr + abase + PP + pp, mask=pp < P, other=0)
                    _par_emit(src_ptr, row_off, out_ptr, row, p, lo, hi, acc_gt, eq_p, prefix, need, nbits,
                              k, pp, TILE, KT)
