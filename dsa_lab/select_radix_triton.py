"""Radix (histogram) top-k selection for large k — the default of ``impl="triton"`` for k > 512 (v3.0).

Why: the default "hier" kernel (:mod:`dsa_lab.select_triton`) ranks groups with bitonic ``tl.topk``
whose input grows with ``KP = next_pow2(k)``; at k = 2048 over 8K-32K live blocks its last stage is
one program sorting 8192 keys, and the H200 sweep at d86ffd8 measured 168-343 µs for one row (torch:
62 µs).  A radix select does no sorting: it finds the k-th key digit by digit from histograms, then
writes every column above it, so its work is a few streaming passes over the row whatever k is.

Algorithm, one program per row (live extent ``L`` read on the device, as in the default kernel):

* Each live column is a candidate when its score is above ``-inf`` (DESIGN §2); its rank is its
  ordered high word ``u`` (:func:`dsa_lab.keys_triton.tl_ordered_hi`, unsigned: NaN on top), ties
  to the smaller column.
* Pass ``d = 0..3`` histograms the ``d``-th 8-bit digit of ``u`` over the candidates whose higher
  digits equal the prefix found so far, and picks the digit where the count from the top reaches
  ``need`` (k minus the candidates already known to be above).  It stops early when that digit's
  whole bin is needed (then every candidate at or above the prefix is taken) or, before pass 0,
  when a row has at most k candidates (then all of them are).
* A last pass streams the row in column order and writes every candidate strictly above the
  threshold prefix, plus the first ``need`` candidates equal to it (a running count in column
  order: the contract's tie break), compacting positions with a prefix sum; slots past the
  selected count get ``-1``.

Work: at most six reads of the live row (a count, four histogram passes and the output pass), no
sort, independent of k; typically 2-3 histogram passes on continuous values, all four when many
values tie.  The ids come out in column order (the contract leaves the order free).

:func:`_radix_compact_kernel` (``compact=True``, the default here) reads the row twice: the first
digit's histogram, then one pass that writes every column above the threshold bin to the output and
the bin's columns (in column order) to a per-row scratch list; the later digits work on that list,
which is short for continuous values (all of the row when every value ties, as in the other kernel).

:func:`_radix_par_kernel` (``parallel=True``, v3.3) splits every digit pass over the row's programs: five launches,
per-program histograms summed by every program of the next launch, no atomics; with ``short`` (v3.4) rows of at
most that many live columns are selected whole by one program in the first launch (:func:`_radix_row`, the v3.0
algorithm) and skipped by the others.

Status (2026-11-29): the default of ``impl="triton"`` (``select_triton.default_algo`` / ``plan``) for k > 512, and
for k = 257-512 at fewer rows than SMs: v3.4 (parallel, ``short = RADIX_SHORT``) when the call gives several programs
per row, v3.0 otherwise.  Measured on the H200 (``data/h200/tune_dev/tune_dev_F.csv`` / ``_H.csv``, the sweep at
d515559): 1 x 256K, k = 2048: 25 µs (v3.0 170, torch 62); short rows pay ~8 µs of skipped launches (4K / 16K, k = 2048:
13.8 vs v3.0's 5.9 µs).  Recorded fuzz and matrix 0 mismatches at eee489c.  The compacting (v3.1) and split (v3.2)
forms were faster on continuous values at 256K but 1.7-11x slower on tied / shifted values; they stay for A/B.  All
are correct under the interpreter (tests/test_select_radix.py, the same reference and poisoning as every arm).
ROCm: unverified.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from .keys_triton import tl_ordered_hi
from . import _impl
from .select_triton import _counters, _row_extent, split_programs

__all__ = ["topk_select_radix", "select_candidate_blocks_radix"]

_NEG_INF_U = tl.constexpr(-0x7F800001 + 2**31)  # unsigned ordered word of -inf: candidates are above it


@triton.jit
def _u_of(src_ptr, row_off, cols, L):
    """(unsigned ordered word as int64, candidate mask) of the columns ``cols`` (``cols >= L`` masked)."""
    live = cols < L
    s = tl.load(src_ptr + row_off + cols, mask=live, other=float("-inf"))
    u = tl_ordered_hi(s).to(tl.int64) + 2147483648
    return u, live & (u > _NEG_INF_U)


@triton.jit
def _pick(hist, rem, bins):
    """(digit b, its count, candidates still needed below b's prefix) for a digit histogram: b is the
    bin where the count from the top bin down reaches ``rem``."""
    hist = hist.to(tl.int64)
    above = tl.sum(hist) - tl.cumsum(hist, 0)  # candidates in the bins above each bin
    hit = (above < rem) & (above + hist >= rem)
    b = tl.max(tl.where(hit, bins, -1)).to(tl.int64)
    hb = tl.sum(tl.where(bins == b, hist, 0))
    return b, hb, rem - tl.sum(tl.where(bins == b, above, 0))


# shape ints are not specialised (one compiled kernel per k bucket and tile, not per value)
@triton.jit(do_not_specialize=["n", "width", "k"])
def _radix_kernel(
    src_ptr, src_stride, len_ptr, start_ptr, out_ptr, n, width, k,
    RR: tl.constexpr, LEN_MODE: tl.constexpr, HAS_START: tl.constexpr, BS: tl.constexpr,
    TILE: tl.constexpr, KT: tl.constexpr,
):
    row = tl.program_id(0)
    L, start, end = _row_extent(row, len_ptr, start_ptr, n, width, LEN_MODE, HAS_START, RR, BS)
    _radix_row(src_ptr, row.to(tl.int64) * src_stride, out_ptr, row, L, k, TILE, KT)


@triton.jit
def _radix_row(src_ptr, row_off, out_ptr, row, L, k, TILE: tl.constexpr, KT: tl.constexpr):
    """v3.0 for one row of live length ``L`` in one program: every digit pass over the row, then the output pass."""
    lane = tl.arange(0, TILE)
    bins = tl.arange(0, 256)
    # number of candidates; a row with at most k of them takes them all (threshold = -inf's word)
    ncand = tl.zeros([], tl.int64)
    for t0 in range(0, L, TILE):
        _, c = _u_of(src_ptr, row_off, t0 + lane, L)
        ncand += tl.sum(c.to(tl.int64))
    prefix = tl.zeros([], tl.int64) + _NEG_INF_U  # threshold at depth `shift`: take (u >> shift) > prefix ...
    shift = tl.zeros([], tl.int64)
    need = tl.zeros([], tl.int64)  # ... and the first `need` (column order) with (u >> shift) == prefix
    done = ncand <= k
    pre = tl.zeros([], tl.int64)  # digits found so far (value of u >> (32 - 8d))
    rem = tl.zeros([], tl.int64) + k  # candidates still to take below the digits found so far
    for d in tl.static_range(4):
        if not done:
            sh: tl.constexpr = 24 - 8 * d
            hist = tl.zeros([256], tl.int32)
            for t0 in range(0, L, TILE):
                u, c = _u_of(src_ptr, row_off, t0 + lane, L)
                m = c & ((u >> (sh + 8)) == pre)
                dig = ((u >> sh) & 255).to(tl.int32)
                hist += tl.histogram(dig, 256, mask=m)
            b, hb, rem = _pick(hist, rem, bins)  # the digit where the count from the top reaches `rem`
            pre = pre * 256 + b
            fin = rem == hb  # the whole bin is needed: take everything at or above the prefix
            if d == 3:
                fin = fin | True  # all 32 bits fixed: the ties break by column order
            if fin:
                prefix = pre
                shift = shift * 0 + sh
                need = rem
                done = done | fin
    # output pass, column order: above the threshold, then the first `need` equal to it
    base = row.to(tl.int64) * k
    cnt = tl.zeros([], tl.int64)
    eq_seen = tl.zeros([], tl.int64)
    for t0 in range(0, L, TILE):
        cols = t0 + lane
        u, c = _u_of(src_ptr, row_off, cols, L)
        v = u >> shift
        eq = c & (v == prefix)
        eq_rank = eq_seen + tl.cumsum(eq.to(tl.int64), 0)
        take = c & ((v > prefix) | (eq & (eq_rank <= need)))
        pos = cnt + tl.cumsum(take.to(tl.int64), 0) - 1
        tl.store(out_ptr + base + pos, cols.to(tl.int32), mask=take & (pos < k))
        cnt += tl.sum(take.to(tl.int64))
        eq_seen += tl.sum(eq.to(tl.int64))
    _fill_tail(out_ptr, base, tl.minimum(cnt, k), k, KT)


@triton.jit
def _refine_list(src_ptr, row_off, scr_ptr, sbase, out_ptr, base, m, rem, cnt, k, TILE: tl.constexpr):
    """Digits 1-3 over the row's scratch list (``m`` columns, column order, every one in the threshold
    bin of the digits before; ``rem`` of them still to take; ``cnt`` ids already written).  Per digit: a
    histogram, then (when the digit splits the list, or it is the last) one pass that writes the columns
    above the new threshold and compacts the bin's columns in place.  Returns the ids written.
    Scratch loads are ``.cg`` (it may have been written by other programs of the launch)."""
    lane = tl.arange(0, TILE)
    bins = tl.arange(0, 256)
    for d in tl.static_range(1, 4):
        if m > 0:
            sh: tl.constexpr = 24 - 8 * d
            tl.debug_barrier()  # the scratch writes of the last pass precede these reads
            hist = tl.zeros([256], tl.int32)
            for t0 in range(0, m, TILE):
                idx = t0 + lane
                v = idx < m
                col = tl.load(scr_ptr + sbase + idx, mask=v, other=0, cache_modifier=".cg")
                s = tl.load(src_ptr + row_off + col, mask=v, other=0.0)
                u = tl_ordered_hi(s).to(tl.int64) + 2147483648
                hist += tl.histogram(((u >> sh) & 255).to(tl.int32), 256, mask=v)
            b, hb, rem2 = _pick(hist, rem, bins)
            last = (rem2 == hb).to(tl.int32)
            if d == 3:
                last = last * 0 + 1  # all 32 bits fixed: the ties break by column order
            if (hb < m) | (last != 0):  # the digit splits the list (or ends it): one compaction pass
                seen = tl.zeros([], tl.int64)
                m2 = tl.zeros([], tl.int64)
                for t0 in range(0, m, TILE):
                    idx = t0 + lane
                    v = idx < m
                    col = tl.load(scr_ptr + sbase + idx, mask=v, other=0, cache_modifier=".cg")
                    s = tl.load(src_ptr + row_off + col, mask=v, other=0.0)
                    dg = ((tl_ordered_hi(s).to(tl.int64) + 2147483648) >> sh) & 255
                    eq = v & (dg == b)
                    rank = seen + tl.cumsum(eq.to(tl.int64), 0)  # ties in column order (the list is)
                    lastv = (dg * 0 + last) != 0  # tile-shaped (the interpreter rejects a 0-d bool operand)
                    tk = v & ((dg > b) | (eq & lastv & (rank <= rem2)))
                    kp = eq & (~lastv)
                    pos = cnt + tl.cumsum(tk.to(tl.int64), 0) - 1
                    tl.store(out_ptr + base + pos, col, mask=tk & (pos < k))
                    # in place: a kept entry moves to a slot at or before the one it was read from,
                    # and the cumsums above order every read of this tile before any write
                    spos = m2 + tl.cumsum(kp.to(tl.int64), 0) - 1
                    tl.store(scr_ptr + sbase + spos, col, mask=kp)
                    cnt += tl.sum(tk.to(tl.int64))
                    m2 += tl.sum(kp.to(tl.int64))
                    seen += tl.sum(eq.to(tl.int64))
                m = m2
            rem = rem2
    return cnt


@triton.jit
def _fill_tail(out_ptr, base, cnt, k, KT: tl.constexpr):
    """Slots ``cnt .. k-1`` of the row get -1."""
    jk = tl.arange(0, KT)
    for j0 in range(0, k, KT):
        j = j0 + jk
        tl.store(out_ptr + base + j, tl.full([KT], -1, tl.int32), mask=(j >= cnt) & (j < k))


@triton.jit
def _top_hist(src_ptr, row_off, lo, hi, TILE: tl.constexpr):
    """Histogram of the top 8-bit digit of the ordered word over the candidates in columns [lo, hi)."""
    lane = tl.arange(0, TILE)
    hist = tl.zeros([256], tl.int32)
    for t0 in range(lo, hi, TILE):
        u, c = _u_of(src_ptr, row_off, t0 + lane, hi)
        hist += tl.histogram(((u >> 24) & 255).to(tl.int32), 256, mask=c)
    return hist


@triton.jit
def _top_threshold(hist, k, bins):
    """From the top digit's histogram of a row's candidates: (threshold digit b, rem = candidates of bin b
    still needed, ``last`` = 1 when nothing is left to refine).  A row with at most k candidates takes all
    of them: b = -1 (every digit is above it), last = 1."""
    ncand = tl.sum(hist.to(tl.int64))
    b, hb, rem = _pick(hist, tl.minimum(ncand, k), bins)
    b = tl.where(ncand <= k, -1, b)
    return b, hb, rem, ((rem == hb) | (ncand <= k)).to(tl.int32)


@triton.jit
def _emit_pass(src_ptr, row_off, lo, hi, b, last, out_ptr, base, cnt, scr_ptr, sbase, m, k, TILE: tl.constexpr):
    """Stream columns [lo, hi) in column order: top digit > b → output slots from ``cnt``; digit == b →
    output too when ``last``, else the scratch list from ``m``.  Returns the new (cnt, m)."""
    lane = tl.arange(0, TILE)
    for t0 in range(lo, hi, TILE):
        cols = t0 + lane
        u, c = _u_of(src_ptr, row_off, cols, hi)
        dg = (u >> 24) & 255
        lastv = (dg * 0 + last) != 0  # tile-shaped (the interpreter rejects a 0-d bool operand here)
        tk = c & ((dg > b) | ((dg == b) & lastv))
        kp = c & (dg == b) & (~lastv)
        pos = cnt + tl.cumsum(tk.to(tl.int64), 0) - 1
        tl.store(out_ptr + base + pos, cols.to(tl.int32), mask=tk & (pos < k))
        spos = m + tl.cumsum(kp.to(tl.int64), 0) - 1
        tl.store(scr_ptr + sbase + spos, cols.to(tl.int32), mask=kp)
        cnt += tl.sum(tk.to(tl.int64))
        m += tl.sum(kp.to(tl.int64))
    return cnt, m


@triton.jit(do_not_specialize=["n", "width", "k"])
def _radix_compact_kernel(
    src_ptr, src_stride, len_ptr, start_ptr, out_ptr, scr_ptr, n, width, k,
    RR: tl.constexpr, LEN_MODE: tl.constexpr, HAS_START: tl.constexpr, BS: tl.constexpr,
    TILE: tl.constexpr, KT: tl.constexpr,
):
    """Radix select with compaction: two passes over the row (the first digit's histogram; then every
    key above its threshold bin to the output and the bin's columns, in column order, to the row's
    scratch), then the later digits over the scratch list only (each digit: a histogram, and a
    compaction pass unless the digit does not split the list)."""
    row = tl.program_id(0)
    L, start, end = _row_extent(row, len_ptr, start_ptr, n, width, LEN_MODE, HAS_START, RR, BS)
    row_off = row.to(tl.int64) * src_stride
    sbase = row.to(tl.int64) * n
    base = row.to(tl.int64) * k
    # pass 0: histogram of the top digit over the candidates (its sum = the candidate count)
    b, hb, rem, last = _top_threshold(_top_hist(src_ptr, row_off, 0, L, TILE), k, tl.arange(0, 256))
    # pass 1: digit > b → output; digit == b → output too when `last`, else to the scratch list
    cnt, m = _emit_pass(src_ptr, row_off, 0, L, b, last, out_ptr, base, tl.zeros([], tl.int64), scr_ptr, sbase,
                        tl.zeros([], tl.int64), k, TILE)
    cnt = _refine_list(src_ptr, row_off, scr_ptr, sbase, out_ptr, base, m, rem, cnt, k, TILE)
    _fill_tail(out_ptr, base, tl.minimum(cnt, k), k, KT)


@triton.jit
def _chunk(L, p, P, TILE: tl.constexpr):
    """[lo, hi) of program p's share of a row of L columns split over P programs (whole tiles)."""
    chunk = tl.maximum((tl.cdiv(L, P) + TILE - 1) // TILE * TILE, TILE)
    lo = p * chunk
    return lo, tl.minimum(lo + chunk, L)


@triton.jit(do_not_specialize=["n", "width", "P"])
def _radix_hist_kernel(
    src_ptr, src_stride, len_ptr, start_ptr, ws_ptr, n, width, P,
    RR: tl.constexpr, LEN_MODE: tl.constexpr, HAS_START: tl.constexpr, BS: tl.constexpr, TILE: tl.constexpr,
):
    """Split radix, launch 1 of 2 (grid rows x P): each program's histogram of the top digit over its share
    of the row's candidates, to ``ws[row, p, :]`` (zeros for a program past the live extent)."""
    row = tl.program_id(0)
    p = tl.program_id(1)
    L, start, end = _row_extent(row, len_ptr, start_ptr, n, width, LEN_MODE, HAS_START, RR, BS)
    row_off = row.to(tl.int64) * src_stride
    lo, hi = _chunk(L, p, P, TILE)
    tl.store(ws_ptr + (row.to(tl.int64) * P + p) * 256 + tl.arange(0, 256), _top_hist(src_ptr, row_off, lo, hi, TILE))


@triton.jit(do_not_specialize=["n", "width", "k", "P"])
def _radix_split_kernel(
    src_ptr, src_stride, len_ptr, start_ptr, out_ptr, ws_ptr, scr_ptr, cnt_ptr, n, width, k, P,
    PP: tl.constexpr, RR: tl.constexpr, LEN_MODE: tl.constexpr, HAS_START: tl.constexpr, BS: tl.constexpr,
    TILE: tl.constexpr, KT: tl.constexpr,
):
    """Split radix, launch 2 of 2 (grid rows x P).  Every program sums the P top-digit histograms of its
    row (so all agree on the threshold bin), derives from them where its own columns go — the output
    slots and scratch slots of the programs before it — and streams its share once: columns above the
    bin to the output, the bin's columns to the scratch list (both in column order across programs).
    When the bin needs refining, the last program to arrive (acq_rel counter per row, reset by it)
    runs digits 1-3 over the list (:func:`_refine_list`)."""
    row = tl.program_id(0)
    p = tl.program_id(1)
    L, start, end = _row_extent(row, len_ptr, start_ptr, n, width, LEN_MODE, HAS_START, RR, BS)
    row_off = row.to(tl.int64) * src_stride
    base = row.to(tl.int64) * k
    sbase = row.to(tl.int64) * n
    bins = tl.arange(0, 256)
    pp = tl.arange(0, PP)
    h = tl.load(ws_ptr + (row.to(tl.int64) * P + pp[:, None]) * 256 + bins[None, :], mask=pp[:, None] < P, other=0)
    b, hb, rem, last = _top_threshold(tl.sum(h, axis=0), k, bins)
    gt_p = tl.sum(tl.where(bins[None, :] > b, h, 0), axis=1).to(tl.int64)
    eq_p = tl.sum(tl.where(bins[None, :] == b, h, 0), axis=1).to(tl.int64)
    tk_p = gt_p + eq_p * last
    cnt = tl.sum(tl.where(pp < p, tk_p, 0))  # output slots of the programs before this one
    m = tl.sum(tl.where(pp < p, eq_p, 0)) * (1 - last)  # scratch slots of the programs before this one
    lo, hi = _chunk(L, p, P, TILE)
    _emit_pass(src_ptr, row_off, lo, hi, b, last, out_ptr, base, cnt, scr_ptr, sbase, m, k, TILE)
    total = tl.sum(tk_p)
    if last != 0:
        if p == 0:  # at most k candidates (or the whole bin taken): the rest of the k slots are -1
            _fill_tail(out_ptr, base, tl.minimum(total, k), k, KT)
    else:
        tl.debug_barrier()  # every lane's scratch/output stores precede the release below
        old = tl.atomic_add(cnt_ptr + row, 1, sem="acq_rel")
        if old == P - 1:
            tl.debug_barrier()
            _refine_list(src_ptr, row_off, scr_ptr, sbase, out_ptr, base, hb, rem, total, k, TILE)
            tl.store(cnt_ptr + row, 0)  # reset for the next call / graph replay


# ---------------------------------------------------------------------------------------------------------------
# v3.3 "parallel": every digit pass split over the row's P programs, one launch per pass, no atomics
# ---------------------------------------------------------------------------------------------------------------


@triton.jit
def _u32_of(src_ptr, row_off, cols, L):
    """(ordered word as uint32 — unsigned order = the contract's, NaN on top — , candidate mask) of ``cols``
    (``cols >= L`` masked).  32-bit digit arithmetic (the other kernels widen to int64)."""
    live = cols < L
    s = tl.load(src_ptr + row_off + cols, mask=live, other=float("-inf"))
    u = tl_ordered_hi(s).to(tl.uint32, bitcast=True) ^ 0x80000000
    return u, live & (s != float("-inf"))  # NaN != -inf: NaN is a candidate


@triton.jit
def _par_hist(src_ptr, row_off, lo, hi, prefix, D: tl.constexpr, TILE: tl.constexpr):
    """Histogram of digit D (8 bits, D = 0 the top) over the candidates of columns [lo, hi) whose higher
    digits equal ``prefix`` (uint32, D * 8 bits)."""
    lane = tl.arange(0, TILE)
    hist = tl.zeros([256], tl.int32)
    for t0 in range(lo, hi, TILE):
        u, c = _u32_of(src_ptr, row_off, t0 + lane, hi)
        if D > 0:
            c = c & ((u >> (32 - 8 * D)) == prefix)
        hist += tl.histogram(((u >> (24 - 8 * D)) & 255).to(tl.int32), 256, mask=c)
    return hist


@triton.jit(do_not_specialize=["n", "width", "k", "P"])
def _radix_par_kernel(
    src_ptr, src_stride, len_ptr, start_ptr, out_ptr, hist_ptr, st_ptr, acc_ptr, n, width, k, P,
    STEP: tl.constexpr, PP: tl.constexpr, RR: tl.constexpr, LEN_MODE: tl.constexpr, HAS_START: tl.constexpr,
    BS: tl.constexpr, TILE: tl.constexpr, KT: tl.constexpr, SHORT: tl.constexpr, STILE: tl.constexpr,
):
    """Parallel radix, launch ``STEP`` of 5 (grid rows x P; program p owns whole tiles [lo, hi) of its row).

    v3.4: a row whose live extent is at most ``SHORT`` (read on the device) is selected whole by program 0 of
    STEP 0 with the one-program v3.0 (:func:`_radix_row`, tiles of ``STILE``); the other launches skip it.

    STEP 0: every program's histogram of the top digit over its share → ``hist[0, row, p]``.
    STEP 1-3: every program sums the P histograms of the previous launch and decides that digit (all agree:
    same input); program 0 records the decision (``st[STEP % 2, row]`` = prefix, need, done, bits) and adds
    each program's count of candidates above the chosen bin to ``acc[row, 0, p]`` (ties: ``acc[row, 1, p]``
    once the selection is decided); unless decided, every program histograms the next digit among the
    candidates matching the new prefix → ``hist[STEP % 2, row, p]``.  A row is decided when it has at most
    k candidates (all taken), when the chosen bin is needed whole, or after the fourth digit.
    STEP 4: decide the fourth digit where still open; every program derives its output offsets from the
    per-program counts and streams its share once: candidates above the threshold prefix to the output,
    then the first ``need`` candidates equal to it in column order (the contract's tie break); program 0
    writes ``-1`` past the selected count.
    Buffers are double-buffered by launch parity, so no launch reads what the same launch writes; launch
    boundaries order everything (no counters: capture-safe, nothing to reset)."""
    row = tl.program_id(0)
    p = tl.program_id(1)
    L, start, end = _row_extent(row, len_ptr, start_ptr, n, width, LEN_MODE, HAS_START, RR, BS)
    row_off = row.to(tl.int64) * src_stride
    if L <= SHORT:
        if STEP == 0:
            if p == 0:
                _radix_row(src_ptr, row_off, out_ptr, row, L, k, STILE, KT)
    else:
        rows = tl.num_programs(0)
        lo, hi = _chunk(L, p, P, TILE)
        bins = tl.arange(0, 256)
        pp = tl.arange(0, PP)
        if STEP == 0:
            h0 = _par_hist(src_ptr, row_off, lo, hi, 0, 0, TILE)
            tl.store(hist_ptr + (row.to(tl.int64) * P + p) * 256 + bins, h0)
        else:
            # the previous launch's state (STEP 1: the initial one) and histograms
            prev = (STEP - 1) % 2
            sb = (prev * rows + row).to(tl.int64) * 4
            if STEP == 1:
                prefix = tl.zeros([], tl.uint32)
                need = tl.zeros([], tl.int64) + k
                done = tl.zeros([], tl.int32)
                nbits = tl.zeros([], tl.int32)
            else:
                prefix = tl.load(st_ptr + sb).to(tl.uint32, bitcast=True)
                need = tl.load(st_ptr + sb + 1).to(tl.int64)
                done = tl.load(st_ptr + sb + 2)
                nbits = tl.load(st_ptr + sb + 3)
            abase = row.to(tl.int64) * 2 * PP
            if done == 0:
                hb_ptr = hist_ptr + ((prev * rows + row).to(tl.int64) * P) * 256
                h = tl.load(hb_ptr + pp[:, None] * 256 + bins[None, :], mask=pp[:, None] < P, other=0)
                H = tl.sum(h, axis=0)
                D: tl.constexpr = STEP - 1  # the digit decided now
                if D == 0:
                    ncand = tl.sum(H.to(tl.int64))
                    rem = tl.minimum(ncand, k)
                else:
                    rem = need
                b, hb, rem2 = _pick(H, rem, bins)
                if D == 0:
                    b = tl.where(ncand <= k, -1, b)  # at most k candidates: all of them, nothing tied
                gt_p = tl.sum(tl.where(bins[None, :] > b, h, 0), axis=1)
                eq_p = tl.sum(tl.where(bins[None, :] == b, h, 0), axis=1)
                decided = (rem2 == hb) | (b < 0)  # (after the fourth digit STEP 4 emits whatever this says)
                if D == 0:
                    acc_gt = gt_p
                    new_bits = tl.where(b < 0, 0, 8)
                else:
                    acc_gt = tl.load(acc_ptr + abase + pp, mask=pp < P, other=0) + gt_p
                    new_bits = nbits + 8
                new_prefix = (prefix << 8) | tl.maximum(b, 0).to(tl.uint32)
                new_need = tl.where(b < 0, 0, rem2)
                eq_p = tl.where(b < 0, 0, eq_p)
                if STEP < 4:
                    if p == 0:
                        ob = ((STEP % 2) * rows + row).to(tl.int64) * 4
                        tl.store(st_ptr + ob, new_prefix.to(tl.int32, bitcast=True))
                        tl.store(st_ptr + ob + 1, new_need.to(tl.int32))
                        tl.store(st_ptr + ob + 2, decided.to(tl.int32))
                        tl.store(st_ptr + ob + 3, new_bits.to(tl.int32))
                        tl.store(acc_ptr + abase + pp, acc_gt, mask=pp < P)
                        tl.store(acc_ptr + abase + PP + pp, eq_p, mask=pp < P)
                    if decided == 0:
                        hn = _par_hist(src_ptr, row_off, lo, hi, new_prefix, STEP, TILE)
                        tl.store(hist_ptr + (((STEP % 2) * rows + row).to(tl.int64) * P + p) * 256 + bins, hn)
                else:
                    _par_emit(src_ptr, row_off, out_ptr, row, p, lo, hi, acc_gt, eq_p, new_prefix, new_need, new_bits,
                              k, pp, P, TILE, KT)
            else:
                if STEP < 4:
                    if p == 0:  # carry the decided state to this launch's parity
                        ob = ((STEP % 2) * rows + row).to(tl.int64) * 4
                        tl.store(st_ptr + ob, prefix.to(tl.int32, bitcast=True))
                        tl.store(st_ptr + ob + 1, need.to(tl.int32))
                        tl.store(st_ptr + ob + 2, done)
                        tl.store(st_ptr + ob + 3, nbits)
                else:
                    acc_gt = tl.load(acc_ptr + abase + pp, mask=pp < P, other=0)
                    eq_p = tl.load(acc_ptr + abase + PP + pp, mask=pp < P, other=0)
                    _par_emit(src_ptr, row_off, out_ptr, row, p, lo, hi, acc_gt, eq_p, prefix, need, nbits,
                              k, pp, P, TILE, KT)


@triton.jit
def _par_emit(src_ptr, row_off, out_ptr, row, p, lo, hi, gt_p, eq_p, prefix, need, nbits, k, pp, P,
              TILE: tl.constexpr, KT: tl.constexpr):
    """Write program p's share of the selection: its candidates above the ``nbits``-bit threshold ``prefix``
    (every candidate when ``nbits`` = 0) at the slots after the programs before it, and its candidates
    equal to it whose rank among all ties (column order) is at most ``need``, after every row's
    above-threshold candidate.  Program 0 fills the slots past the selected count with -1."""
    base = row.to(tl.int64) * k
    gt = gt_p.to(tl.int64)
    eq = eq_p.to(tl.int64)
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
        pa = a_cnt + tl.cumsum(ab.to(tl.int64), 0) - 1
        tl.store(out_ptr + base + pa, cols.to(tl.int32), mask=ab & (pa < k))
        rt = e_cnt + tl.cumsum(ti.to(tl.int64), 0)
        pt = a_tot + rt - 1
        tl.store(out_ptr + base + pt, cols.to(tl.int32), mask=ti & (rt <= need) & (pt < k))
        a_cnt += tl.sum(ab.to(tl.int64))
        e_cnt += tl.sum(ti.to(tl.int64))
    if p == 0:
        _fill_tail(out_ptr, base, tl.minimum(a_tot + tl.minimum(need, tl.sum(eq)), k), k, KT)


def _np2(x: int) -> int:
    return 1 if x <= 1 else 1 << (int(x) - 1).bit_length()


def _launch(src, len_t, start_t, out, rows, n, width, k, rr, len_mode, bs, tile, num_warps, compact, split,
            parallel=False, short=0):
    if out is None:
        out = torch.empty((rows, k), dtype=torch.int32, device=src.device)
    if rows == 0:
        return out
    dev = src.device
    dummy = out
    lens = len_t if len_t is not None else dummy
    starts = start_t if start_t is not None else dummy
    if parallel:
        # v3.3: every digit pass split over P programs (split=None/True: by the SM count; an int forces P)
        P = (split_programs(rows, n, int(_impl.facts_for(src)["sm_count"]), tile or 1024)
             if split is None or split is True or split is False else max(1, int(split)))
        tile = tile or (1024 if P > 1 else max(256, min(2048, _np2(n))))
        PP = _np2(P)
        meta = dict(RR=rr, LEN_MODE=len_mode, HAS_START=start_t is not None, BS=bs, TILE=tile,
                    num_warps=num_warps or (8 if tile >= 2048 else 4))
        hist = torch.empty((2 * rows * P * 256,), dtype=torch.int32, device=dev)
        st = torch.empty((2 * rows * 4,), dtype=torch.int32, device=dev)
        acc = torch.empty((rows * 2 * PP,), dtype=torch.int32, device=dev)
        stile = max(256, min(2048, _np2(min(n, short or 1))))
        for step in range(5):
            _radix_par_kernel[(rows, P)](src, src.stride(0), lens, starts, out, hist, st, acc, n, width, k, P,
                                         STEP=step, PP=PP, KT=min(1024, _np2(k)), SHORT=short, STILE=stile, **meta)
        return out
    if split is True or split is None:
        P = split_programs(rows, n, int(_impl.facts_for(src)["sm_count"]), tile or 1024)
    else:
        P = max(1, int(split))  # False → 1; an int forces P (tests)
    if P > 1:
        tile = tile or 1024
    tile = tile or max(256, min(2048, _np2(n)))
    meta = dict(RR=rr, LEN_MODE=len_mode, HAS_START=start_t is not None, BS=bs, TILE=tile,
                num_warps=num_warps or (8 if tile >= 2048 else 4))
    kt = min(1024, _np2(k))
    if P > 1:
        ws = torch.empty((rows * P * 256,), dtype=torch.int32, device=dev)
        scr = torch.empty((rows * n,), dtype=torch.int32, device=dev)
        cnt = _counters(dev, rows)
        _radix_hist_kernel[(rows, P)](src, src.stride(0), lens, starts, ws, n, width, P, **meta)
        _radix_split_kernel[(rows, P)](src, src.stride(0), lens, starts, out, ws, scr, cnt, n, width, k, P,
                                       PP=_np2(P), KT=kt, **meta)
    elif compact:
        scr = torch.empty((rows * n,), dtype=torch.int32, device=dev)  # the threshold bin's columns
        _radix_compact_kernel[(rows,)](src, src.stride(0), lens, starts, out, scr, n, width, k, KT=kt, **meta)
    else:
        _radix_kernel[(rows,)](src, src.stride(0), lens, starts, out, n, width, k, KT=kt, **meta)
    return out


def topk_select_radix(scores, k, lengths=None, row_repeat=1, out=None, *, tile=None, num_warps=None, compact=True,
                      split=False, parallel=False, short=0):
    """Radix arm of :func:`dsa_lab.topk_select` (same contract; arguments as
    :func:`dsa_lab.select_triton.topk_select_triton`, validated by the caller).

    ``compact=True`` (default): :func:`_radix_compact_kernel` (two passes over the row, later digits over
    the threshold bin's list; unmeasured on a GPU so far); ``False``: :func:`_radix_kernel`, every digit
    over the whole row (the version timed on the H200 at 11f3e60, ``data/h200/radix_dev.csv``).
    ``split``: ``False`` (default) one program per row; ``None``/``True`` split each row over
    :func:`split_programs` programs (two launches: :func:`_radix_hist_kernel`, :func:`_radix_split_kernel`;
    one program per row where that gives 1); an int forces that many programs (tests).
    ``parallel=True`` (v3.3): every digit pass split over the row's programs (:func:`_radix_par_kernel`, five
    launches, no atomics; ``split`` then picks P as above, ``False`` meaning by the SM count too); ``compact`` is
    ignored.  ``short`` (v3.4, with ``parallel``): rows of at most that many live columns (read on the device)
    are selected whole by one program in the first launch (the v3.0 algorithm).

    Returns int32 ``[rows, k]``: the selected columns in column order, ``-1`` tail; every slot
    written; columns at or past a row's length are never loaded.
    """
    rows, n = scores.shape
    if n == 0:
        res = out if out is not None else torch.empty((rows, k), dtype=torch.int32, device=scores.device)
        return res.fill_(-1)
    return _launch(scores, lengths, None, out, rows, n, n, k, row_repeat, 0 if lengths is None else 1, 1,
                   tile, num_warps, compact, split, parallel, short)


def select_candidate_blocks_radix(logits, row_ends, topk_blocks, row_starts=None, block_size=8, row_repeat=1,
                                  out=None, *, tile=None, num_warps=None, compact=True, split=False, parallel=False,
                                  short=0):
    """Candidate blocks through the radix arm: bounded Triton block scores, then the radix select over
    each row's live block extent (the unfused composition of :mod:`dsa_lab.select_triton`)."""
    from .scores_triton import block_scores_triton

    rows, width = logits.shape
    bs = int(block_size)
    nblocks = -(-width // bs)
    if nblocks == 0:
        res = out if out is not None else torch.empty((rows, topk_blocks), dtype=torch.int32, device=logits.device)
        return res.fill_(-1)
    sc = block_scores_triton(logits, row_ends, row_starts, bs, row_repeat, fill_dead=False)  # read < extent only
    return _launch(sc, row_ends, row_starts, out, rows, nblocks, width, topk_blocks, row_repeat, 2, bs,
                   tile, num_warps, compact, split, parallel, short)
