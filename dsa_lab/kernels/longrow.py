"""Top-k over long rows in one read: the select for ``k`` up to 2048 on rows wider than a register tile.

Two launches, the second a programmatic dependent of the first (sm_90+):

1. :func:`_longrow_sample_kernel`, one program per row: a sample of the row (``NCH`` short runs of ``CH`` columns
   spread over its live extent, or the whole row when it has at most ``NCH * CH`` columns) gives a threshold word
   ``T``: the sample's word of the rank that puts about ``3k`` of the row above it (the whole row: exactly the k-th
   word).
2. :func:`_longrow_kernel`, grid ``(rows, P)``: each program streams its share of the row once, tile by tile, and
   compacts the keys of the words above ``T`` (and, apart, of those equal to it) into per-row candidate buffers,
   reserving slots with one atomic add per tile.  The row's last program to arrive (an ``acq_rel`` counter per row)
   finishes it exactly from those few keys (:func:`_select_keys`: radix digits of the 64-bit keys, ties to the
   smaller column by construction), with counts, not guesses:

   * at least ``k`` above ``T`` and at most ``CAP`` of them: the top k of them;
   * fewer than ``k`` above: all of them, then the smallest columns equal to ``T`` -- from the buffer when they fit,
     else from a scan of the row in column order that stops once it has them;
   * more than ``CAP`` above, or too few at or above ``T`` (a sample far from its row): the whole row selected
     exactly by one program (:func:`_exact_row`, the radix select's digit passes): a second read, never a wrong
     answer.

The counters return to zero by the end of the call (the finisher resets them), so the buffer they live in is kept
between calls (:mod:`dsa_lab.launch.scratch`).  ``BLOCK_SCORES`` with ``BS = 1``: the source is logits bounded by
row ends and starts, and each row's newest column counts as ``+inf`` (the candidate-block contract at block size 1).
"""
from __future__ import annotations

import triton
import triton.language as tl

from .common import NEG_HI, PAD, fill_tail, pick_digit, row_extent, tl_ordered_hi
from .common import tl_cuda as _tl_cuda

INF_WORD = tl.constexpr(0x7F800000)  # the ordered word of +inf


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
def _kth_word(h, cand, r):
    """The ``r``-th largest of the candidate words ``h`` (a 1-D tile; 4 digit passes), or ``NEG_HI`` when there are
    fewer than ``r``."""
    bins = tl.arange(0, 256)
    nc = tl.sum(cand.to(tl.int32))
    on = cand
    rem = r
    pre = tl.zeros([], tl.int32)
    for d in tl.static_range(4):
        if d == 0:
            dig = (h >> 24) + 128
        else:
            dig = (h >> (24 - 8 * d)) & 255
        hist = tl.histogram(dig, 256, mask=on)
        b, hb, rem = pick_digit(hist, rem, bins)
        on = on & (dig == b)
        if d == 0:
            pre = b - 128
        else:
            pre = pre * 256 + b
    return tl.where(nc >= r, pre, NEG_HI)


@triton.jit(do_not_specialize=["src_stride", "n", "width", "k", "rr", "has_len", "has_start"])
def _longrow_sample_kernel(src_ptr, src_stride, len_ptr, start_ptr, thr_ptr, n, width, k, rr, has_len, has_start,
                           BLOCK_SCORES: tl.constexpr, NCH: tl.constexpr, CH: tl.constexpr, PDL: tl.constexpr):
    """Grid ``(rows,)``: row ``r``'s threshold word to ``thr[r]`` (the sample of ``NCH`` runs of ``CH`` columns)."""
    if PDL:
        _tl_cuda.gdc_launch_dependents()
    row = tl.program_id(0)
    L, start, nlive, newest = _extent(row, len_ptr, start_ptr, n, width, rr, has_len, has_start, BLOCK_SCORES)
    row_off = row.to(tl.int64) * src_stride
    SAMPLE: tl.constexpr = NCH * CH
    i = tl.arange(0, NCH)[:, None]
    j = tl.arange(0, CH)[None, :]
    if L <= SAMPLE:  # the whole row: the k-th word itself
        cols = i * CH + j
        r = k
    else:  # runs spread over the row; the rank that leaves about 3k of the row above the word
        cols = ((i.to(tl.int64) * (L - CH)) // (NCH - 1) + j).to(tl.int32)
        r = tl.minimum(tl.maximum(((3 * k * SAMPLE).to(tl.int64) + L - 1) // L, 1), SAMPLE).to(tl.int32)
    h = _words(src_ptr, row_off, cols, L, start, nlive, newest, BLOCK_SCORES)
    h = tl.reshape(h, [SAMPLE])
    tl.store(thr_ptr + row, _kth_word(h, h > NEG_HI, r))


@triton.jit
def _select_keys(keys_ptr, cnt, kk, out_ptr, obase, SUB: tl.constexpr):
    """Write the columns of the top ``min(kk, cnt)`` of the ``cnt`` int64 keys at ``keys_ptr`` (any order; distinct
    keys) to ``out_ptr + obase ...``: 8-bit digits of the key from the top, each pass a histogram over the keys
    (re-read from L2, ``SUB`` a step), stopping once the threshold digit's whole bin is needed."""
    lane = tl.arange(0, SUB)
    bins = tl.arange(0, 256)
    done = cnt <= kk  # every key
    pre = tl.zeros([], tl.int64)
    prefix = tl.zeros([], tl.int64)
    shift = tl.zeros([], tl.int64)
    rem = tl.zeros([], tl.int32) + kk
    for d in tl.static_range(8):
        if not done:
            sh: tl.constexpr = 56 - 8 * d
            hist = tl.zeros([256], tl.int32)
            for t0 in range(0, cnt, SUB):
                j = t0 + lane
                key = tl.load(keys_ptr + j, mask=j < cnt, other=PAD, cache_modifier=".cg")
                m = j < cnt
                if d == 0:
                    dig = ((key >> 56) + 128).to(tl.int32)
                else:
                    m = m & ((key >> (sh + 8)) == pre)
                    dig = ((key >> sh) & 255).to(tl.int32)
                hist += tl.histogram(dig, 256, mask=m)
            b, hb, rem = pick_digit(hist, rem, bins)
            if d == 0:
                pre = (b - 128).to(tl.int64)
            else:
                pre = pre * 256 + b.to(tl.int64)
            if rem == hb:  # the whole bin is needed (distinct keys: at the last digit it holds one)
                prefix = pre
                shift = shift * 0 + sh
                done = done | True
    written = tl.zeros([], tl.int32)
    for t0 in range(0, cnt, SUB):
        j = t0 + lane
        key = tl.load(keys_ptr + j, mask=j < cnt, other=PAD, cache_modifier=".cg")
        every = (j * 0 + (cnt <= kk).to(tl.int32)) != 0  # tile-shaped (the interpreter rejects a 0-d bool operand)
        take = (j < cnt) & (every | ((key >> shift) >= prefix))
        pos = written + tl.cumsum(take.to(tl.int32), 0) - 1
        tl.store(out_ptr + obase + pos, (0xFFFFFFFF - (key & 0xFFFFFFFF)).to(tl.int32), mask=take)
        written += tl.sum(take.to(tl.int32))
    return written


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


@triton.jit(do_not_specialize=["src_stride", "n", "width", "k", "rr", "P", "has_len", "has_start"])
def _longrow_kernel(src_ptr, src_stride, len_ptr, start_ptr, thr_ptr, out_ptr, gt_ptr, eq_ptr, sync_ptr, n, width,
                    k, rr, P, has_len, has_start, BLOCK_SCORES: tl.constexpr, CAP: tl.constexpr,
                    CAP_EQ: tl.constexpr, TILE: tl.constexpr, SUB: tl.constexpr, STILE: tl.constexpr,
                    KT: tl.constexpr, PDL: tl.constexpr):
    """Grid ``(rows, P)``: row ``r``'s ids to ``out[r, :k]`` (every slot).  ``gt`` / ``eq``: int64 ``[rows, CAP]`` /
    ``[rows, CAP_EQ]`` candidate keys (written before read); ``sync``: int32 ``[rows, 4]`` zeros (arrivals, keys
    above ``T``, keys equal to it), back at zero after the call.  ``PDL``: a programmatic dependent of the sample
    launch (its threshold is read after the wait)."""
    row = tl.program_id(0)
    p = tl.program_id(1)
    L, start, nlive, newest = _extent(row, len_ptr, start_ptr, n, width, rr, has_len, has_start, BLOCK_SCORES)
    if PDL:
        _tl_cuda.gdc_wait()
    row_off = row.to(tl.int64) * src_stride
    obase = row.to(tl.int64) * k
    chunk = tl.maximum((tl.cdiv(L, P) + TILE - 1) // TILE * TILE, TILE)
    n_act = tl.cdiv(L, chunk)
    if (L == 0) & (p == 0):
        fill_tail(out_ptr, obase, 0, k, KT)
    if p < n_act:
        T = tl.load(thr_ptr + row)
        srow = sync_ptr + row.to(tl.int64) * 4
        gbase = row.to(tl.int64) * CAP
        ebase = row.to(tl.int64) * CAP_EQ
        lane = tl.arange(0, TILE)
        lo = p * chunk
        hi = tl.minimum(lo + chunk, L)
        for t0 in range(lo, hi, TILE):
            cols = t0 + lane
            h = _words(src_ptr, row_off, cols, hi, start, nlive, newest, BLOCK_SCORES)
            key = (h.to(tl.int64) << 32) | (0xFFFFFFFF - cols.to(tl.int64))
            g = h > T
            ng = tl.sum(g.to(tl.int32))
            if ng > 0:
                pos = tl.atomic_add(srow + 1, ng, sem="relaxed") + tl.cumsum(g.to(tl.int32), 0) - 1
                tl.store(gt_ptr + gbase + pos, key, mask=g & (pos < CAP))
            e = (h == T) & (h > NEG_HI)  # (equal to T, and T above -inf)
            ne = tl.sum(e.to(tl.int32))
            if ne > 0:
                pos = tl.atomic_add(srow + 2, ne, sem="relaxed") + tl.cumsum(e.to(tl.int32), 0) - 1
                tl.store(eq_ptr + ebase + pos, key, mask=e & (pos < CAP_EQ))
        tl.debug_barrier()
        last = n_act == 1
        if n_act > 1:  # several programs: the last to arrive finishes the row
            last = tl.atomic_add(srow, 1, sem="acq_rel") == n_act - 1
        if last:
            tl.debug_barrier()
            gt = tl.atomic_xchg(srow + 1, 0)
            eq = tl.atomic_xchg(srow + 2, 0)
            tl.store(srow, 0)
            if (gt > CAP) | ((T > NEG_HI) & (gt + eq < k)):  # the sample missed: the row exactly, read again
                _exact_row(src_ptr, row_off, out_ptr, obase, L, start, nlive, newest, k, STILE, KT, BLOCK_SCORES)
            else:
                written = _select_keys(gt_ptr + gbase, gt, k, out_ptr, obase, SUB)
                need = k - written
                if (need > 0) & (T > NEG_HI):
                    if eq <= CAP_EQ:
                        written += _select_keys(eq_ptr + ebase, eq, need, out_ptr, obase + written, SUB)
                    else:  # a wide tie: its first `need` columns, scanning the row until they are found
                        slane = tl.arange(0, STILE)
                        seen = tl.zeros([], tl.int32)
                        t0 = tl.zeros([], tl.int32)
                        while (seen < need) & (t0 < L):
                            cols = t0 + slane
                            e = _words(src_ptr, row_off, cols, L, start, nlive, newest, BLOCK_SCORES) == T
                            c = seen + tl.cumsum(e.to(tl.int32), 0)
                            tl.store(out_ptr + obase + written + c - 1, cols, mask=e & (c <= need))
                            seen += tl.sum(e.to(tl.int32))
                            t0 += STILE
                        written += tl.minimum(seen, need)
                fill_tail(out_ptr, obase, written, k, KT)
