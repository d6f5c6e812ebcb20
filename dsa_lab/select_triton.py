"""Triton arm of top-k selection and of the candidate-block pipeline (DESIGN §2).

One launch per call.  Grid ``(rows, P)``: ``P`` programs share one row, ``P`` chosen on the host from
shapes (rows, width, k) and the device's SM count only (:func:`dsa_lab._impl.facts_for`), never from
values.  Every value-dependent quantity — each row's live extent, the split of the row among the P
programs, which programs are active — is read or derived on the device, so a call captures in a CUDA
graph and a replay with other lengths is exact.  Columns at or past a row's live extent are never
loaded.  Each column is packed with its score into one int64 key (:mod:`dsa_lab.keys_triton`; masked
lanes get ``PAD_KEY``), so one top-k yields scores and ids together and ties need no special case.

Algorithms (``config={"algo": ...}``; :func:`default_algo` picks from shapes only: k > 512 → radix; k = 257-512 →
radix when the call has fewer rows than SMs (several radix programs per row, :func:`split_programs`), else hier;
smaller k → hier):

* ``"hier"`` (v2, default for k <= 256, and for k <= 512 at as many rows as SMs) — exact top-k by nested group
  maxima, :func:`_hier_kernel`.  Columns form aligned level-1 groups of ``G1`` and super groups of
  ``S = G1*G2``.  The top-KP keys lie in the top-KP level-1 groups ranked by their best key (a group holding one of them has a best key at or
  above the KP-th key, and at most KP groups do), and those lie in the top-KP super groups.  So:
  (A) the row is streamed once, by up to ``P`` programs, each writing one best key per super group to
  a workspace; (B) top-KP super groups; (C) their level-1 maxima, top-KP of those; (D) top-KP of
  those groups' columns.  B-D are three bitonic ``tl.topk`` over ``KP * 8`` keys for k <= 64, whatever
  the live extent is, and re-read at most ``KP * S`` columns; the work does not depend on the values.
  Rows with a live extent of at most ``DT`` columns take one direct ``tl.topk`` instead; rows of at most KP super
  groups skip stage A (every super group is chosen: program 0 runs C-D alone, the "short chain"), and unfused
  rows of at most KP super groups twice as wide (k <= 64: 8192 columns) take a second short chain with those wider
  groups — both decided on the device from the row's extent (:data:`HIER_SHORT_CHAIN`, :data:`HIER_SHORT_CHAIN2`).  With several
  programs per row, the last to arrive (acq_rel counter per row, reset by it) runs B-D.  ``RSEL`` (v2.2, default
  from KP = 512: :data:`HIER_RSEL_MIN_KP`): every top-k is a register radix select (:func:`_reg_select`) instead.
  ``FLAGS``: the kernel also zeroes and writes the row's candidate flags (``with_flags=True``).  A threshold filter
  (``filter_cap`` / ``filter_cap_main``, dev, off: :data:`HIER_FILTER_CAP`) can stand in for the chains' last
  stages: the keys at or above a lower bound of the KP-th key, ranked by one ``tl.topk`` when few enough reach it
  (measured slower on the H200: its two passes cost more than the stages they replace).
* ``"fold"`` (v1) — every program keeps a sorted running top-KP over its tiles (``tl.topk`` of a
  tile, then ``sort(max(top, flip(tile_top)))``), and the last program merges the per-program lists:
  a lower bound of the k-th key filters them, a prefix sum compacts the survivors into a CAP-slot
  scratch, one ``tl.topk`` finishes (or, past CAP survivors, every list is folded in turn).  Its
  bitonic work grows with the live extent; kept for A/B timing (``notes/select_kernel.md``).
* ``"radix"`` (v3, :mod:`dsa_lab.select_radix_triton`) — histogram select, no sort: the default for
  ``next_pow2(k) >= RADIX_MIN_KP`` (1024: k > 512), where the hier kernel's bitonic stages grow with KP, and from
  :data:`RADIX_PAR_MIN_KP` (512) when the call has fewer rows than SMs.  With several programs per row it is the
  parallel form (v3.4: every digit pass split over the row's programs, five launches; rows of at most
  :data:`RADIX_SHORT` live columns selected whole by one program, decided on the device), else the full-pass form
  (v3.0, :data:`RADIX_DEFAULT`).  Measured, ``notes/select_kernel.md``.

``tl.topk`` is always given at least ``KP = next_pow2(k)`` (>= 2) keys: with fewer it returned wrong
results on the GPU (DESIGN §6).

Fused mode (``FUSED``): the "score" of block ``j`` is formed on the fly from the logits
(NaN-propagating max over the block's live columns ``[start, min(end, width))``, newest block pinned
to ``+inf``), so logits are read once and no scores tensor exists: stage A also keeps every level-1
group's best key (8 bytes per ``G1`` blocks, ~3% of the logits read at block_size 8), so stage C reads
those instead of logits, and only stage D re-reads ``KP * G1`` blocks (4096 logits at k = 64).

Arch notes: warp size and SM count come from the device; the kernels use no warp-size-specific code.
NVIDIA (H200, triton 3.6) is the measured target; ROCm/MI355X is **unverified** (in particular the
last-arriver pattern: acq_rel atomics, ``.cg`` loads, ``tl.debug_barrier``).

Concurrency note: the per-row arrival counters are one buffer per device; two calls running
*concurrently on different streams* would share them.  Calls in one stream (or one graph) are safe.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra import cuda as _tl_cuda  # gdc_wait: programmatic dependent launch (sm_90+)

from . import _checks, _impl
from .keys import PAD_KEY
from .keys_triton import tl_is_candidate, tl_key_index, tl_ordered_hi, tl_pack_key
from .flags_triton import tl_zero_flags as _flags_zero
from .scores_triton import tl_block_score

__all__ = ["topk_select_triton", "select_candidate_blocks_triton", "plan"]

_PAD = tl.constexpr(PAD_KEY)
_FZT = tl.constexpr(4096)  # bytes of flags zeroed per store loop iteration
_I64_MAX = tl.constexpr(2**63 - 1)


# ---------------------------------------------------------------------------
# device helpers
# ---------------------------------------------------------------------------


@triton.jit
def _row_extent(row, len_ptr, start_ptr, n, width, LEN_MODE: tl.constexpr, HAS_START: tl.constexpr,
                RR: tl.constexpr, BS: tl.constexpr):
    """(L, start, end) of a row, read on the device.

    LEN_MODE 0: L = n.  1: L = clamp(lengths[g], 0, n).  2: block extent from
    ends (len_ptr) and starts: max(cdiv(min(end, width) - start, BS), newest + 1),
    clamped to n (= nblocks).
    """
    g = row // RR
    start = tl.zeros([], tl.int64)
    end = tl.zeros([], tl.int64)
    if LEN_MODE == 0:
        L = tl.zeros([], tl.int64) + n
    elif LEN_MODE == 1:
        L = tl.load(len_ptr + g).to(tl.int64)
        L = tl.minimum(tl.maximum(L, 0), n)
    else:
        end = tl.maximum(tl.load(len_ptr + g).to(tl.int64), 0)
        if HAS_START:
            start = tl.load(start_ptr + g).to(tl.int64)
            start = tl.minimum(tl.maximum(start, 0), end)  # clamp invalid bounds (no host check in a capture)
        lend = tl.minimum(end, width)
        nb_live = (tl.maximum(lend - start, 0) + BS - 1) // BS
        newest1 = tl.where(end > start, (end - start - 1) // BS + 1, 0)
        L = tl.minimum(tl.maximum(nb_live, newest1), n)
    return L, start, end


@triton.jit
def _tile_keys(src_ptr, row_off, cols, lim, start, end, width,
               FUSED: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr):
    """Packed keys of columns ``cols`` (PAD_KEY where ``cols >= lim``).

    Not fused: scores at ``cols``.  Fused: ``cols`` are block ids; each block's
    score is formed from its live logits (never loading columns outside
    ``[start, min(end, width))``), NaN-propagating, newest block pinned to +inf.
    """
    m = cols < lim
    if FUSED:
        t = tl.arange(0, BSP)
        c = start + cols[:, None].to(tl.int64) * BS + t[None, :]
        live = m[:, None] & (t[None, :] < BS) & (c < tl.minimum(end, width))
        x = tl.load(src_ptr + row_off + c, mask=live, other=float("-inf"))
        s = tl_block_score(x, cols, start, end, 1, BS)
    else:
        s = tl.load(src_ptr + row_off + cols, mask=m, other=0.0)
    return tl.where(m, tl_pack_key(s, cols), _PAD)


@triton.jit
def _sorted_top(keys, KP: tl.constexpr, TILE: tl.constexpr):
    """Top-KP of a TILE-wide key tile, sorted descending (TILE >= KP >= 2)."""
    if TILE > KP:
        return tl.topk(keys, KP)
    else:
        return tl.sort(keys, descending=True)


@triton.jit
def _fold(top, new):
    """Top-KP of the union of two sorted-descending KP lists, sorted descending."""
    return tl.sort(tl.maximum(top, tl.flip(new, 0)), descending=True)


@triton.jit
def _write_out(out_ptr, row, top, k, KP: tl.constexpr):
    """Slots j < k: the j-th ranked key's column if it is a candidate, else -1."""
    j = tl.arange(0, KP)
    ids = tl.where(tl_is_candidate(top), tl_key_index(top), -1).to(tl.int32)
    tl.store(out_ptr + row.to(tl.int64) * k + j, ids, mask=j < k)


@triton.jit
def _pick32(hist, rem, bins):
    """(digit b, its count, candidates still needed inside b's bin) of a 256-bin digit histogram (int32):
    b is the bin where the count from the top bin down reaches ``rem``."""
    above = tl.sum(hist) - tl.cumsum(hist, 0)  # candidates in the bins above each bin
    hit = (above < rem) & (above + hist >= rem)
    b = tl.max(tl.where(hit, bins, -1))
    hb = tl.sum(tl.where(bins == b, hist, 0))
    return b, hb, rem - tl.sum(tl.where(bins == b, above, 0))


@triton.jit
def _reg_select(h, cand, k):
    """The top-``k`` candidates of a 1-D register tile, by radix select (no sort): returns (mask, count).

    ``h`` is the signed ordered high word (int32, :func:`tl_ordered_hi`); ties go to the earlier position, so
    callers keep tiles in column order and this is exactly the contract's ranking.  Digits of 8 bits from the
    top; the first digit of the signed word is ``(h >> 24) + 128``, later digits ``(h >> s) & 255``, and a
    prefix is the arithmetic ``h >> s``, so every comparison stays in int32.  Stops as soon as the threshold
    digit's whole bin is needed (typically after 2 of the 4 digits on continuous values); a prefix sum
    over the tile breaks ties only when the last bin is split.  Cost: one 256-bin ``tl.histogram`` of the
    tile per digit, no data movement."""
    bins = tl.arange(0, 256)
    ncand = tl.sum(cand.to(tl.int32))
    done = ncand <= k
    pre = tl.zeros([], tl.int32)
    rem = tl.zeros([], tl.int32) + k
    prefix = tl.zeros([], tl.int32)
    shift = tl.zeros([], tl.int32)
    need = tl.zeros([], tl.int32)
    for d in tl.static_range(4):
        if not done:
            sh: tl.constexpr = 24 - 8 * d
            if d == 0:
                m = cand
                dig = (h >> 24) + 128
            else:
                m = cand & ((h >> (sh + 8)) == pre)
                dig = (h >> sh) & 255
            hist = tl.histogram(dig, 256, mask=m)
            b, hb, rem = _pick32(hist, rem, bins)
            if d == 0:
                pre = b - 128
            else:
                pre = pre * 256 + b
            fin = rem == hb  # the whole bin is needed: everything at or above the prefix
            if d == 3:
                fin = fin | True  # all 32 bits fixed: the ties break by position
            if fin:
                prefix = pre
                shift = shift * 0 + sh
                need = rem
                done = done | fin
    v = h >> shift
    above = cand & (v > prefix)
    eq = cand & (v == prefix)
    sel = above | eq
    if need < tl.sum(eq.to(tl.int32)):  # the threshold bin is split: the first `need` of it by position
        sel = above | (eq & (tl.cumsum(eq.to(tl.int32), 0) <= need))
    sel = tl.where(ncand <= k, cand, sel)
    return sel, tl.minimum(ncand, k)


@triton.jit
def _flags_set(flags_ptr, row, ids, sel, start, width, n, BS: tl.constexpr):
    """``flags[row, b] = 1`` for each selected block id ``b`` (``sel``); the sentinel slot ``n`` when the
    block's first column ``start + b * BS`` is at or past the width (the flags contract, :mod:`dsa_lab.flags`)."""
    b = ids.to(tl.int64)
    slot = tl.where(start + b * BS >= width, n, b)
    tl.store(flags_ptr + row.to(tl.int64) * (n + 1) + slot, tl.full(b.shape, 1, tl.uint8), mask=sel)


@triton.jit
def _reg_write_out(out_ptr, row, cols, sel, cnt, k, KP: tl.constexpr):
    """Compact the selected ``cols`` (a 1-D tile, mask ``sel``, ``cnt`` of them) into slots ``[0, cnt)`` of
    the row's output (order free, DESIGN §2); slots ``[cnt, k)`` get -1."""
    base = row.to(tl.int64) * k
    pos = tl.cumsum(sel.to(tl.int32), 0) - 1
    tl.store(out_ptr + base + pos, cols.to(tl.int32), mask=sel & (pos < k))
    j = tl.arange(0, KP)
    tl.store(out_ptr + base + j, tl.full([KP], -1, tl.int32), mask=(j >= cnt) & (j < k))


# shape ints are not specialised (divisibility/==1 hints buy nothing here and would compile one
# variant per k, width and split of a sweep or fuzz)
@triton.jit(do_not_specialize=["n", "width", "k"])
def _fold_kernel(
    src_ptr, src_stride, len_ptr, start_ptr, out_ptr,
    ws_ptr, kth_ptr, cnt_ptr, scr_ptr,
    n, width, k,
    P: tl.constexpr, PP: tl.constexpr, RR: tl.constexpr,
    KP: tl.constexpr, TILE: tl.constexpr, M: tl.constexpr, CAP: tl.constexpr, G: tl.constexpr,
    LEN_MODE: tl.constexpr, HAS_START: tl.constexpr, FUSED: tl.constexpr,
    BS: tl.constexpr, BSP: tl.constexpr,
):
    row = tl.program_id(0)
    p = tl.program_id(1)
    L, start, end = _row_extent(row, len_ptr, start_ptr, n, width, LEN_MODE, HAS_START, RR, BS)
    # split derived on the device from this row's live extent
    chunk = ((L + P - 1) // P + TILE - 1) // TILE * TILE
    chunk = tl.maximum(chunk, TILE)
    n_act = tl.maximum((L + chunk - 1) // chunk, 1)
    if p < n_act:
        row_off = row.to(tl.int64) * src_stride
        lo = p * chunk
        hi = tl.minimum(lo + chunk, L)
        lane = tl.arange(0, TILE)
        top = _sorted_top(_tile_keys(src_ptr, row_off, lo + lane, hi, start, end, width, FUSED, BS, BSP),
                          KP, TILE)
        for t0 in range(lo + TILE, hi, TILE):
            keys = _tile_keys(src_ptr, row_off, t0 + lane, hi, start, end, width, FUSED, BS, BSP)
            top = _fold(top, _sorted_top(keys, KP, TILE))
        if P == 1:
            _write_out(out_ptr, row, top, k, KP)
        else:
            if n_act == 1:
                _write_out(out_ptr, row, top, k, KP)
            else:
                jk = tl.arange(0, KP)
                kth = tl.min(tl.where(jk < k, top, _I64_MAX))
                base = (row.to(tl.int64) * P + p) * KP
                tl.store(ws_ptr + base + jk, top)
                tl.store(kth_ptr + row.to(tl.int64) * P + p, kth)
                tl.debug_barrier()  # every lane's stores precede the release below
                old = tl.atomic_add(cnt_ptr + row, 1, sem="acq_rel")
                if old == n_act - 1:
                    _merge(out_ptr, ws_ptr, kth_ptr, cnt_ptr, scr_ptr, row, n_act, k,
                           P, PP, KP, M, CAP, G)


@triton.jit
def _merge(out_ptr, ws_ptr, kth_ptr, cnt_ptr, scr_ptr, row, n_act, k,
           P: tl.constexpr, PP: tl.constexpr, KP: tl.constexpr, M: tl.constexpr,
           CAP: tl.constexpr, G: tl.constexpr):
    """Merge the n_act sorted lists of one row (run by the last program to arrive)."""
    tl.debug_barrier()
    rbase = row.to(tl.int64) * P
    pp = tl.arange(0, PP)
    # T1: max of per-list k-th keys (each list has k keys >= its k-th, so T1 <= G)
    kths = tl.load(kth_ptr + rbase + pp, mask=pp < n_act, other=_PAD, cache_modifier=".cg")
    t1 = tl.max(kths)
    # T2: k-th key of the union of every list's first M keys (a subset of the union, so T2 <= G)
    jm = tl.arange(0, M)
    heads = tl.load(ws_ptr + (rbase + pp[:, None]) * KP + jm[None, :], mask=(pp[:, None] < n_act),
                    other=_PAD, cache_modifier=".cg")
    htop = tl.topk(tl.reshape(heads, [PP * M]), KP)
    jk = tl.arange(0, KP)
    t2 = tl.min(tl.where(jk < k, htop, _I64_MAX))
    thr = tl.maximum(t1, t2)
    # compact the keys >= thr (a superset of the top-k) into the row's scratch
    jg = tl.arange(0, G)
    sbase = row.to(tl.int64) * CAP
    cnt = tl.zeros([], tl.int32)
    for g0 in range(0, n_act, G):
        lst = g0 + jg
        kk = tl.load(ws_ptr + (rbase + lst[:, None]) * KP + jk[None, :], mask=(lst[:, None] < n_act),
                     other=_PAD, cache_modifier=".cg")
        kk = tl.reshape(kk, [G * KP])
        keep = (kk >= thr) & (kk != _PAD)
        pos = cnt + tl.cumsum(keep.to(tl.int32), 0) - 1
        tl.store(scr_ptr + sbase + pos, kk, mask=keep & (pos < CAP))
        cnt += tl.sum(keep.to(tl.int32))
    tl.debug_barrier()
    if cnt <= CAP:
        jc = tl.arange(0, CAP)
        x = tl.load(scr_ptr + sbase + jc, mask=jc < cnt, other=_PAD, cache_modifier=".cg")
        if CAP > KP:
            top = tl.topk(x, KP)
        else:
            top = tl.sort(x, descending=True)
    else:  # adversarial layout: fold every list (exact, slower)
        top = tl.load(ws_ptr + rbase * KP + jk, cache_modifier=".cg")
        for q in range(1, n_act):
            lst = tl.load(ws_ptr + (rbase + q) * KP + jk, cache_modifier=".cg")
            top = _fold(top, lst)
    _write_out(out_ptr, row, top, k, KP)
    tl.store(cnt_ptr + row, 0)  # reset for the next call / graph replay


# ---------------------------------------------------------------------------
# v2: hierarchical group-max selection ("hier", the default)
# ---------------------------------------------------------------------------


@triton.jit
def _scores2d(src_ptr, row_off, cols, valid, start, end, width,
              FUSED: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr):
    """Scores of a 2-D tile of columns (fused: block ids, scores formed from the logits).

    Lanes where ``~valid`` load nothing; their values are meaningless (callers mask them)."""
    if FUSED:
        t = tl.arange(0, BSP)
        c = start + cols[:, :, None].to(tl.int64) * BS + t[None, None, :]
        live = valid[:, :, None] & (t[None, None, :] < BS) & (c < tl.minimum(end, width))
        x = tl.load(src_ptr + row_off + c, mask=live, other=float("-inf"))
        sc = tl_block_score(x, cols, start, end, 2, BS)
    else:
        sc = tl.load(src_ptr + row_off + cols, mask=valid, other=0.0)
    return sc


@triton.jit
def _scores2d_whole(src_ptr, base_off, rel, cols, start, end,
                    FUSED: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr):
    """Scores of a 2-D tile lying wholly inside the row's live extent (every lane live).

    ``rel``: int32 positions of the tile's columns (fused: blocks) from its first one, whose element sits at
    ``src_ptr + base_off``.  No bounds mask and 32-bit offsets, so the compiler may vectorize the loads
    (a per-element ``c < end`` mask has constancy 1 and forces 4-byte loads); same values as :func:`_scores2d`."""
    if FUSED:
        t = tl.arange(0, BSP)
        c = rel[:, :, None] * BS + t[None, None, :]
        if BSP == BS:
            x = tl.load(src_ptr + base_off + c)
        else:  # padded lanes belong to the next block
            x = tl.load(src_ptr + base_off + c, mask=t[None, None, :] < BS, other=float("-inf"))
        sc = tl_block_score(x, cols, start, end, 2, BS)
    else:
        sc = tl.load(src_ptr + base_off + rel)
    return sc


@triton.jit
def _l1_keys_whole(src_ptr, base_off, s0, start, end,
                   NT: tl.constexpr, G1: tl.constexpr, G2: tl.constexpr, BS: tl.constexpr):
    """Fused stage A on NT super groups lying wholly inside the row's live extent (block size ``BS`` a power of
    two): the best key of each of their ``NT * G2`` level-1 groups, same bits as :func:`_scores2d` then
    :func:`_best_per_row`.

    One contiguous 1-D load of ``NT * G1 * G2 * BS`` logits from ``src_ptr + base_off`` (super group ``s0``'s
    first logit), reshaped to [level-1 group, block, logit]: the load's layout then follows memory order (a warp
    reads 512 contiguous bytes).  The 3-D pointer tile of :func:`_scores2d_whole` got a layout whose warps straddle
    eight super groups 2 KB apart, and its keys took a float round trip and two reductions per group.  The block max
    stays in the ordered-integer domain (NaN propagates as ``0x7FFFFFFF``, the newest block pinned to ``+inf``'s
    ``0x7F800000``) and each level-1 key is one int64 max of packed keys.  Measured (H200,
    ``scripts/gpu_stagea_dev.py``, stage A alone, 640 x 256K, best configuration of each): 316 -> 175 µs (2.1 -> 3.8
    TB/s; a bare load + max 155 µs)."""
    S: tl.constexpr = G1 * G2
    x = tl.load(src_ptr + base_off + tl.arange(0, NT * S * BS))
    h = tl.max(tl_ordered_hi(tl.reshape(x, [NT * G2, G1, BS])), axis=2)
    cols = (s0 * S + tl.arange(0, NT * G2)[:, None] * G1 + tl.arange(0, G1)[None, :]).to(tl.int64)
    newest = tl.where(end > start, (end - start - 1) // BS, -1)
    h = tl.where(cols == newest, 0x7F800000, h)
    return tl.max((h.to(tl.int64) << 32) | (0xFFFFFFFF - cols), axis=1)


@triton.jit
def _direct_keys_1d(src_ptr, row_off, L, start, end, width, DT: tl.constexpr, BS: tl.constexpr):
    """Fused direct path (a row of at most DT blocks, block size ``BS`` a power of two): the packed keys of blocks
    ``[0, DT)`` (PAD_KEY from L on), same bits as :func:`_keys2d` over ``[DT, 1]`` columns.  One contiguous 1-D
    load of the row's live logits ``[start, min(end, width))`` reshaped to [block, logit], the block max in the
    ordered-integer domain (NaN as ``0x7FFFFFFF``), the newest block pinned to ``+inf``'s ``0x7F800000``."""
    i = tl.arange(0, DT * BS)
    lim = (tl.minimum(end, width) - start).to(tl.int32)
    x = tl.load(src_ptr + row_off + start + i, mask=i < lim, other=float("-inf"))
    h = tl.max(tl.reshape(tl_ordered_hi(x), [DT, BS]), axis=1)
    cols = tl.arange(0, DT)
    newest = tl.where(end > start, (end - start - 1) // BS, -1)
    h = tl.where(cols.to(tl.int64) == newest, 0x7F800000, h)
    key = (h.to(tl.int64) << 32) | (0xFFFFFFFF - cols.to(tl.int64))
    return tl.where(cols < L, key, _PAD)


@triton.jit
def _keys2d(src_ptr, row_off, cols, valid, start, end, width,
            FUSED: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr):
    """Packed keys of a 2-D tile of columns (fused: block ids); PAD_KEY where ``~valid``."""
    sc = _scores2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
    return tl.where(valid, tl_pack_key(sc, cols), _PAD)


@triton.jit
def _group_keys(src_ptr, row_off, gid, valid, L, start, end, width, G: tl.constexpr,
                FUSED: tl.constexpr, BS: tl.constexpr):
    """Best packed key of each group ``gid`` of ``G`` columns (fused: blocks) -- ``[gid * G, gid * G + G)`` cut at
    ``L`` -- in ``gid``'s own shape and layout; PAD_KEY where ``~valid`` or the group holds no column below ``L``.
    Same bits as :func:`_keys2d` over the group's columns then a max (fused: the block scores of
    :func:`dsa_lab.scores_triton.tl_block_score`, NaN-propagating, the newest block pinned to ``+inf``; never
    loading a logit outside ``[start, min(end, width))``).

    Why not that tile and a ``tl.max`` over its group axis: a reduction over an axis spread across lanes leaves its
    result replicated over those lanes (sm_90 TTGIR, triton 3.6: the stage-C keys 8x, the fused direct path's and
    stage D's 8x), and a ``tl.topk`` over a replicated layout repeats its work that many times (H200,
    ``scripts/gpu_fused_direct_dev.py``: a 512-key direct path from 4096 logits 5.7 µs against 3.0 from 512 scores).
    Here each column (fused: each logit of each block) is one strided load of ``gid``'s shape and the max is
    elementwise, in the ordered-integer domain, the smallest column winning ties (strict ``>`` in column order)."""
    hb = tl.full(gid.shape, -2147483648, tl.int32)  # no float's ordered high word: "no column yet"
    ib = tl.zeros(gid.shape, tl.int32)
    g64 = gid.to(tl.int64)
    if FUSED:
        lend = tl.minimum(end, width)
        newest = tl.where(end > start, (end - start - 1) // BS, -1)
    for t in tl.static_range(G):
        col = g64 * G + t
        ok = valid & (col < L)
        if FUSED:
            c = start + col * BS
            h = tl_ordered_hi(tl.load(src_ptr + row_off + c, mask=ok & (c < lend), other=float("-inf")))
            for u in tl.static_range(1, BS):
                x = tl.load(src_ptr + row_off + c + u, mask=ok & (c + u < lend), other=float("-inf"))
                h = tl.maximum(h, tl_ordered_hi(x))
            h = tl.where(col == newest, 0x7F800000, h)
        else:
            h = tl_ordered_hi(tl.load(src_ptr + row_off + col, mask=ok, other=0.0))
        upd = ok & (h > hb)
        hb = tl.where(upd, h, hb)
        ib = tl.where(upd, t, ib)
    key = (hb.to(tl.int64) << 32) | (0xFFFFFFFF - (g64 * G + ib))
    return tl.where(hb == -2147483648, _PAD, key)


@triton.jit
def _best_per_row(sc, cols, valid):
    """Best key of each row of a 2-D tile = max(tl_pack_key) along axis 1, computed in 32-bit:
    the largest ordered high word, then the smallest column holding it (PAD_KEY for an all-masked
    row; no float has the high word -2**31, so it cannot collide with a real key)."""
    h = tl.where(valid, tl_ordered_hi(sc), -2147483648)
    hm = tl.max(h, axis=1)
    idx = tl.min(tl.where(h == hm[:, None], cols, 2147483647), axis=1)
    key = (hm.to(tl.int64) << 32) | (0xFFFFFFFF - idx.to(tl.int64))
    return tl.where(hm == -2147483648, _PAD, key)


@triton.jit
def _first_col_keys(sc, grp, valid, GS: tl.constexpr):
    """Key of each row of a 2-D score tile (group ``grp``, ``GS`` columns per group) for ranking the groups: the
    largest ordered high word with the group's *first* column in the low word (PAD_KEY for an all-masked row).
    Groups are disjoint, aligned column ranges, so among groups with equal maxima the one with the smaller first
    column also holds the smaller best column: the ranking equals that of :func:`_best_per_row`'s keys (the best
    column's), and stage B takes only the group from it, so one max reduction serves instead of a max and an argmin."""
    h = tl.where(valid, tl_ordered_hi(sc), -2147483648)
    hm = tl.max(h, axis=1)
    key = (hm.to(tl.int64) << 32) | (0xFFFFFFFF - grp.to(tl.int64) * GS)
    return tl.where(hm == -2147483648, _PAD, key)


@triton.jit
def _top2_combine(a1, a2, b1, b2):
    """The two largest of two sorted-descending pairs (keys are distinct)."""
    return tl.maximum(a1, b1), tl.maximum(tl.minimum(a1, b1), tl.maximum(a2, b2))


@triton.jit
def _top4_combine(a1, a2, a3, a4, b1, b2, b3, b4):
    """The four largest of two sorted-descending quadruples: the i-th largest of the union is the max over j of
    min(a_j, b_(i-j)), with a_0 = b_0 above everything."""
    c1 = tl.maximum(a1, b1)
    c2 = tl.maximum(tl.maximum(a2, b2), tl.minimum(a1, b1))
    c3 = tl.maximum(tl.maximum(a3, b3), tl.maximum(tl.minimum(a2, b1), tl.minimum(a1, b2)))
    c4 = tl.maximum(tl.maximum(a4, b4),
                    tl.maximum(tl.maximum(tl.minimum(a3, b1), tl.minimum(a1, b3)), tl.minimum(a2, b2)))
    return c1, c2, c3, c4


@triton.jit
def _filter_finish(kk, valid, T, cnt, cbase, ws_ptr, CAP: tl.constexpr):
    """Compact the keys of the 2-D tile ``kk`` that are ``>= T`` and ``valid`` into the row's candidate slots
    ``ws_ptr + cbase`` from slot ``cnt`` on (slots past ``CAP`` are not written); returns the new count.  Positions
    come from a scan along each tile row and one over the rows' counts (no reshape to 1-D: that would convert the
    tile's layout).  The order of the compacted keys does not matter: one top-k ranks them."""
    keep = (valid & (kk >= T)).to(tl.int32)
    rc = tl.sum(keep, axis=1)
    pos = cnt + (tl.cumsum(rc, 0) - rc)[:, None] + tl.cumsum(keep, axis=1) - 1
    tl.store(ws_ptr + cbase + pos, kk, mask=(keep > 0) & (pos < CAP))
    return cnt + tl.sum(rc)


@triton.jit
def _filter_tile(src_ptr, row_off, ids, L, start, end, width, W: tl.constexpr, FUSED: tl.constexpr,
                 BS: tl.constexpr, BSP: tl.constexpr):
    """``(keys, valid)`` of the ``[len(ids), W]`` tile whose row ``i`` holds columns ``ids[i] * W`` on (``ids < 0``:
    an empty row; columns at or past ``L`` are not read)."""
    cols = ids[:, None] * W + tl.arange(0, W)[None, :]
    valid = (ids[:, None] >= 0) & (cols < L)
    return _keys2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP), valid


@triton.jit
def _filter_top(out_ptr, ws_ptr, flags_ptr, row, cnt, cbase, start, width, n, k,
                KP: tl.constexpr, CAP: tl.constexpr, BS: tl.constexpr, FLAGS: tl.constexpr):
    """When the row's ``cnt`` compacted candidates fit (``cnt <= CAP``), its answer from them: one top-k, ids (and
    flags) written.  Otherwise nothing (the chain runs)."""
    tl.debug_barrier()  # every lane's compacted key is stored before any lane reads the slots
    if cnt <= CAP:
        jx = tl.arange(0, CAP)
        x = tl.load(ws_ptr + cbase + jx, mask=jx < cnt, other=_PAD, cache_modifier=".cg")
        top = _sorted_top(x, KP, CAP)
        _write_out(out_ptr, row, top, k, KP)
        if FLAGS:
            _flags_set(flags_ptr, row, tl_key_index(top), (tl.arange(0, KP) < k) & tl_is_candidate(top),
                       start, width, n, BS)


@triton.jit
def _filter_noa(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, start, end, width, k, cbase,
                KP: tl.constexpr, CAP: tl.constexpr, FQ: tl.constexpr, FUSED: tl.constexpr, BS: tl.constexpr,
                BSP: tl.constexpr, FLAGS: tl.constexpr):
    """Threshold filter of a row without stage A (``FCAP``): returns M, the number of keys at or above the threshold
    T; when ``M <= CAP`` the row's ids (and flags) are written here, else nothing is (the chain runs instead).

    The row is read as a tile of ``[*, KP]`` consecutive columns, twice, in chunks of 2048 keys (fused: 2048
    logits).  Pass 1 takes T as the larger of two lower bounds of the row's KP-th best key: ``T_a``, the smallest
    over ``KP / FQ`` interleaved groups (column ``c`` in group ``c mod (KP / FQ)``, each live once ``L >= KP``) of
    the group's ``FQ``-th best key, since those groups hold KP distinct keys at or above it; ``T_b``, the largest
    minimum of a wholly live tile row (KP keys at or above it), which holds the row's answer to about KP keys when
    values tie (equal values: the first row) or climb (ramps: the last).  Pass 2 compacts the keys ``>= T`` (a
    superset of the top KP) into the candidate slots, and one top-k of CAP ranks them.  Torch reference:
    :func:`filter_threshold_noa`; ``scripts/filter_threshold_model.py`` models M (k = 64: median ~130 at FQ = 4,
    ~280 at FQ = 1; 64 for equal values and ramps)."""
    GQ: tl.constexpr = KP // FQ
    # tile rows per pass chunk: 2048 keys (fused: logits; plan_hier keeps KP * BSP <= 2048 there).  BSP means
    # something only when FUSED, as in every helper here: unfused calls get the block size too (the launchers, and
    # the tail kernel whose scores part needs it).  Taking it unfused made the candidate-block chunks 8x smaller
    # and cost 58.5 µs where 18.5 was due (H200, tune_dev_AO)
    CH: tl.constexpr = 2048 // (KP * BSP) if FUSED else 2048 // KP
    jr = tl.arange(0, CH)
    nr = (L + KP - 1) // KP
    q1 = tl.full([GQ], _PAD, tl.int64)
    q2 = tl.full([GQ], _PAD, tl.int64)
    q3 = tl.full([GQ], _PAD, tl.int64)
    q4 = tl.full([GQ], _PAD, tl.int64)
    tb = tl.full([], _PAD, tl.int64)
    for r0 in range(0, nr, CH):
        r = r0 + jr
        kk, valid = _filter_tile(src_ptr, row_off, r, L, start, end, width, KP, FUSED, BS, BSP)
        tb = tl.maximum(tb, tl.max(tl.where((r + 1) * KP <= L, tl.min(kk, axis=1), _PAD)))
        if FQ == 1:
            q1 = tl.maximum(q1, tl.max(kk, axis=0))
        else:
            # the chunk's FQ best per group by successive maxima (keys are distinct: each mask removes one key per
            # group), merged into the running ones; a tuple reduction instead held FQ padded copies of the tile
            # (164 registers at 32 rows, sm_90)
            kq = tl.reshape(kk, [CH * FQ, GQ])
            c1 = tl.max(kq, axis=0)
            kq = tl.where(kq == c1[None, :], _PAD, kq)
            c2 = tl.max(kq, axis=0)
            if FQ == 2:
                q1, q2 = _top2_combine(q1, q2, c1, c2)
            else:
                kq = tl.where(kq == c2[None, :], _PAD, kq)
                c3 = tl.max(kq, axis=0)
                kq = tl.where(kq == c3[None, :], _PAD, kq)
                c4 = tl.max(kq, axis=0)
                q1, q2, q3, q4 = _top4_combine(q1, q2, q3, q4, c1, c2, c3, c4)
    if FQ == 1:
        T = tl.maximum(tl.min(q1), tb)
    elif FQ == 2:
        T = tl.maximum(tl.min(q2), tb)
    else:
        T = tl.maximum(tl.min(q4), tb)
    cnt = tl.zeros([], tl.int32)
    for r0 in range(0, nr, CH):
        kk, valid = _filter_tile(src_ptr, row_off, r0 + jr, L, start, end, width, KP, FUSED, BS, BSP)
        cnt = _filter_finish(kk, valid, T, cnt, cbase, ws_ptr, CAP)
    _filter_top(out_ptr, ws_ptr, flags_ptr, row, cnt, cbase, start, width, n, k, KP, CAP, BS, FLAGS)
    return cnt


@triton.jit
def _filter_main(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, sg, start, end, width, k, ids_base, cbase,
                 KP: tl.constexpr, S: tl.constexpr, CAP: tl.constexpr, FUSED: tl.constexpr, BS: tl.constexpr,
                 BSP: tl.constexpr, FLAGS: tl.constexpr):
    """Threshold filter of a row after stage B (``FCAPM``), in place of C-D: ``sg`` holds the KP chosen super groups
    (``-1``: none), whose columns hold the row's top KP (B-D's own argument).  Their ``[KP, S]`` tile is read twice,
    ``FKC`` groups at a time (the ids pass through the row's ``ids_base`` slots; the whole tile at once, int64 keys
    in the two layouts of its load and its reductions, took 255 registers on sm_90): pass 1 takes T, the larger of
    the smallest chosen group's best key (KP keys reach it; PAD_KEY when fewer than KP groups are chosen) and the
    largest minimum of a wholly live chosen group (``S >= KP`` keys reach it); pass 2 compacts the keys ``>= T``, and
    one top-k of CAP ranks them.  Returns M; the row's ids (and flags) are written when ``M <= CAP``.  Torch
    reference: :func:`filter_threshold_main`.  Modelled M at k = 64: ~70 (normal), ~85 (1% NaN), 64 (equal values,
    ramps)."""
    FKC: tl.constexpr = 1024 // S  # super groups per chunk (plan_hier: S <= 1024 with this filter)
    tl.store(ws_ptr + ids_base + tl.arange(0, KP), sg)
    tl.debug_barrier()
    jc = tl.arange(0, FKC)
    ta = tl.full([], _I64_MAX, tl.int64)  # the smallest chosen group's best key
    tb = tl.full([], _PAD, tl.int64)  # the largest smallest key of a wholly live chosen group
    for c0 in range(0, KP, FKC):
        g = tl.load(ws_ptr + ids_base + c0 + jc, mask=c0 + jc < KP, other=-1, cache_modifier=".cg")
        kk, _ = _filter_tile(src_ptr, row_off, g, L, start, end, width, S, FUSED, BS, BSP)
        ta = tl.minimum(ta, tl.min(tl.where(c0 + jc < KP, tl.max(kk, axis=1), _I64_MAX)))  # (lanes past KP: none)
        tb = tl.maximum(tb, tl.max(tl.where((g >= 0) & ((g + 1) * S <= L), tl.min(kk, axis=1), _PAD)))
    T = tl.maximum(ta, tb)
    cnt = tl.zeros([], tl.int32)
    for c0 in range(0, KP, FKC):
        g = tl.load(ws_ptr + ids_base + c0 + jc, mask=c0 + jc < KP, other=-1, cache_modifier=".cg")
        kk, valid = _filter_tile(src_ptr, row_off, g, L, start, end, width, S, FUSED, BS, BSP)
        cnt = _filter_finish(kk, valid, T, cnt, cbase, ws_ptr, CAP)
    _filter_top(out_ptr, ws_ptr, flags_ptr, row, cnt, cbase, start, width, n, k, KP, CAP, BS, FLAGS)
    return cnt


@triton.jit
def _hier_finish(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, nsg, start, end, width, k,
                 WROW: tl.constexpr, NSG: tl.constexpr, KP: tl.constexpr, G1: tl.constexpr, G2: tl.constexpr,
                 SB: tl.constexpr, KC: tl.constexpr,
                 FUSED: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr, RSEL: tl.constexpr,
                 FLAGS: tl.constexpr, NOA: tl.constexpr, SKEYS: tl.constexpr, L1P: tl.constexpr,
                 FCAP: tl.constexpr, FCAPM: tl.constexpr, FQ: tl.constexpr):
    """Stages B-D for one row whose super-group maxima are in the workspace (``FLAGS``: and the row's flags,
    already zeroed by the row's programs).

    ``NOA`` (no stage A): the row has at most KP super groups (``nsg <= KP``), so every one of them is chosen and
    B needs no maxima; C forms the level-1 maxima from the columns themselves (fused: from the logits).

    ``L1P`` (0 = off): rows without stage A whose C ranks at least ``L1P`` level-1 keys (k = 64: the
    second short chain's 1024) rank them in adjacent pairs first -- the pairs' maxima, then the two level-1 keys of
    each chosen pair -- so C's one top-k over ``KP * G2`` keys becomes one over ``KP * G2 / 2`` and one over
    ``2 * KP`` (a level-1 group among the top KP lies in a pair among the top KP, as at every level).

    ``RSEL``: every top-k is the register radix select (:func:`_reg_select`) instead of ``tl.topk``; the
    chosen groups are compacted in column order through the row's workspace (B: super group ids at
    ``ids``, C: level-1 group ids at ``l1``), so every tile stays in column order and ties break by
    position exactly as the contract's ranking does."""
    S: tl.constexpr = G1 * G2
    wbase = row.to(tl.int64) * WROW
    ids_base = wbase + NSG
    l1_base = ids_base + KP
    l1all_base = l1_base + KP * G2  # fused: every level-1 group's best key, written by stage A
    # B: top-KP super groups by their best key
    jk = tl.arange(0, KP)
    if NOA:
        sg = tl.where(jk < nsg, jk, -1).to(tl.int64)  # every super group, in column order
    elif RSEL:
        sg = tl.where(jk < nsg, jk, -1).to(tl.int64)  # short rows: every super group, in column order
        if nsg > KP:
            if NSG <= SB:  # one register tile: radix select, compacted in column order
                jb = tl.arange(0, SB)
                x = tl.load(ws_ptr + wbase + jb, mask=jb < nsg, other=_PAD, cache_modifier=".cg")
                selb, cntb = _reg_select((x >> 32).to(tl.int32), tl_is_candidate(x), k)
                tl.store(ws_ptr + ids_base + tl.cumsum(selb.to(tl.int32), 0) - 1, jb, mask=selb)
                tl.debug_barrier()
                sg = tl.load(ws_ptr + ids_base + jk, mask=jk < cntb, other=-1, cache_modifier=".cg")
            else:  # wide rows: the bitonic fold, then back to column order
                jb = tl.arange(0, SB)
                x = tl.load(ws_ptr + wbase + jb, mask=jb < nsg, other=_PAD, cache_modifier=".cg")
                top = _sorted_top(x, KP, SB)
                for s0 in range(SB, nsg, SB):
                    x = tl.load(ws_ptr + wbase + s0 + jb, mask=s0 + jb < nsg, other=_PAD, cache_modifier=".cg")
                    top = _fold(top, _sorted_top(x, KP, SB))
                sg = tl.sort(tl.where(top != _PAD, tl_key_index(top) // S, -1))
    elif nsg <= KP:  # short rows: every super group is chosen, no top-k needed (C ignores order)
        top = tl.load(ws_ptr + wbase + jk, mask=jk < nsg, other=_PAD, cache_modifier=".cg")
    else:
        jb = tl.arange(0, SB)
        x = tl.load(ws_ptr + wbase + jb, mask=jb < nsg, other=_PAD, cache_modifier=".cg")
        top = _sorted_top(x, KP, SB)
        if NSG > SB:  # wide rows only (compiled out when one tile holds every super group)
            for s0 in range(SB, nsg, SB):
                x = tl.load(ws_ptr + wbase + s0 + jb, mask=s0 + jb < nsg, other=_PAD, cache_modifier=".cg")
                top = _fold(top, _sorted_top(x, KP, SB))
    if not RSEL and not NOA:
        sg = tl.where(top != _PAD, tl_key_index(top) // S, -1)
    # threshold filter (FCAP: rows without stage A; FCAPM: after B): when at most CAP keys reach the threshold, the
    # row is answered by one top-k of CAP and C-D do not run; otherwise (ties, adversarial rows) C-D as before
    go = True
    if FCAP > 0:
        if NOA:
            go = _filter_noa(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, start, end, width, k,
                             wbase + (WROW - FCAP - FCAPM), KP, FCAP, FQ, FUSED, BS, BSP, FLAGS) > FCAP
    if FCAPM > 0:
        if not NOA:
            go = _filter_main(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, sg, start, end, width, k,
                              ids_base, wbase + (WROW - FCAP - FCAPM), KP, S, FCAPM, FUSED, BS, BSP, FLAGS) > FCAPM
    if go:
        js = tl.arange(0, S)
        # C: level-1 maxima (G1 columns each) inside the chosen super groups
        if FUSED and not NOA:  # stage A stored every level-1 best key: gather KP*G2 of them, no logits re-read
            j2 = tl.arange(0, G2)
            l1 = tl.load(ws_ptr + l1all_base + sg[:, None] * G2 + j2[None, :], mask=sg[:, None] >= 0,
                         other=_PAD, cache_modifier=".cg")
            l1 = tl.reshape(l1, [KP * G2])
        elif SKEYS == 1:  # each level-1 group's best key from strided loads: no reduction, so no replicated layout
            gid = sg[:, None] * G2 + tl.arange(0, G2)[None, :]
            l1 = tl.reshape(_group_keys(src_ptr, row_off, gid, sg[:, None] >= 0, L, start, end, width, G1, FUSED, BS),
                            [KP * G2])
        elif KC == KP:  # the whole [KP, S] tile fits: stay in registers
            cols = sg[:, None] * S + js[None, :]
            valid = (sg[:, None] >= 0) & (cols < L)
            kk = _keys2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
            l1 = tl.max(tl.reshape(kk, [KP * G2, G1]), axis=1)
            if SKEYS == 2:  # through the row's workspace: the top-k gets a plain 1-D layout, not the reduction's
                jl = tl.arange(0, KP * G2)  # (replicated over the G1 axis's lanes)
                tl.store(ws_ptr + l1_base + jl, l1)
                tl.debug_barrier()
                l1 = tl.load(ws_ptr + l1_base + jl, cache_modifier=".cg")
        else:  # wide tiles (large KP): KC super groups at a time, through the row's scratch
            tl.store(ws_ptr + ids_base + jk, sg)
            tl.debug_barrier()
            jc = tl.arange(0, KC)
            jl = tl.arange(0, KC * G2)
            for c0 in range(0, tl.minimum(nsg, KP), KC):  # chunks past the row's super groups hold no column
                g = tl.load(ws_ptr + ids_base + c0 + jc, cache_modifier=".cg")
                cols = g[:, None] * S + js[None, :]
                valid = (g[:, None] >= 0) & (cols < L)
                kk = _keys2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
                m1 = tl.max(tl.reshape(kk, [KC * G2, G1]), axis=1)
                tl.store(ws_ptr + l1_base + c0 * G2 + jl, m1)
            tl.debug_barrier()
            jall = tl.arange(0, KP * G2)
            l1 = tl.load(ws_ptr + l1_base + jall, mask=jall < nsg * G2, other=_PAD, cache_modifier=".cg")
        jg = tl.arange(0, G1)
        if RSEL:
            gid = tl.reshape(sg[:, None] * G2 + tl.arange(0, G2)[None, :], [KP * G2])  # level-1 ids, column order
            sel1, cnt1 = _reg_select((l1 >> 32).to(tl.int32), tl_is_candidate(l1), k)
            tl.debug_barrier()  # every read of the workspace's l1 slots is done before they are reused
            tl.store(ws_ptr + l1_base + tl.cumsum(sel1.to(tl.int32), 0) - 1, gid, mask=sel1)
            tl.debug_barrier()
            g1 = tl.load(ws_ptr + l1_base + jk, mask=jk < cnt1, other=-1, cache_modifier=".cg")
            # D: the chosen level-1 groups' columns, in column order
            cols = g1[:, None] * G1 + jg[None, :]
            valid = (g1[:, None] >= 0) & (cols < L)
            sc = _scores2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
            h = tl.reshape(tl_ordered_hi(sc), [KP * G1])
            cand = tl.reshape(valid, [KP * G1]) & (h > -0x7F800001)
            sel, cnt = _reg_select(h, cand, k)
            _reg_write_out(out_ptr, row, tl.reshape(cols, [KP * G1]), sel, cnt, k, KP)
            if FLAGS:
                _flags_set(flags_ptr, row, tl.reshape(cols, [KP * G1]), sel, start, width, n, BS)
        else:
            if L1P > 0 and NOA and G2 >= 2 and KP * G2 >= L1P:  # (G2 >= 2: the pairs' top-k sees at least KP keys)
                # no stage A: super group i is the row's i-th, so level-1 slot j holds group j (columns j * G1 on)
                if SKEYS == 1 or (SKEYS == 0 and KC == KP):  # l1 only in registers: through the workspace
                    jl1 = tl.arange(0, KP * G2)
                    tl.store(ws_ptr + l1_base + jl1, l1)
                    tl.debug_barrier()
                # (otherwise the l1 slots already hold the keys: SKEYS == 2 stored them, the wide path its chunks, the
                # slots from nsg * G2 on possibly stale -- masked; a pair never straddles a super group, G2 being even)
                jp = tl.arange(0, KP * G2 // 2)  # strided loads: an unreplicated layout for the top-k
                pv = 2 * jp < nsg * G2
                pm = tl.maximum(tl.load(ws_ptr + l1_base + 2 * jp, mask=pv, other=_PAD, cache_modifier=".cg"),
                                tl.load(ws_ptr + l1_base + 2 * jp + 1, mask=pv, other=_PAD, cache_modifier=".cg"))
                tp = tl.topk(pm, KP)
                pid = tl.where(tp != _PAD, tl_key_index(tp) // (2 * G1), -1)
                lid = pid[:, None] * 2 + tl.arange(0, 2)[None, :]
                l1 = tl.reshape(tl.load(ws_ptr + l1_base + lid, mask=pid[:, None] >= 0, other=_PAD,
                                        cache_modifier=".cg"),
                                [2 * KP])
            t1 = tl.topk(l1, KP)
            g1 = tl.where(t1 != _PAD, tl_key_index(t1) // G1, -1)
            # D: the chosen level-1 groups' columns
            cols = g1[:, None] * G1 + jg[None, :]
            valid = (g1[:, None] >= 0) & (cols < L)
            if FUSED and SKEYS == 1:  # a block's logits as BS strided loads (a reduction over them replicates
                # the layout)
                kk = _group_keys(src_ptr, row_off, cols, valid, L, start, end, width, 1, FUSED, BS)
            else:
                kk = _keys2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
            if G1 > 1:
                top = tl.topk(tl.reshape(kk, [KP * G1]), KP)
            else:
                top = tl.sort(tl.reshape(kk, [KP]), descending=True)
            _write_out(out_ptr, row, top, k, KP)
            if FLAGS:
                _flags_set(flags_ptr, row, tl_key_index(top), (tl.arange(0, KP) < k) & tl_is_candidate(top),
                           start, width, n, BS)


@triton.jit
def _stage_a_whole(src_ptr, row_off, rel, zero, s0, wend, NT: tl.constexpr, S: tl.constexpr):
    """Scores of stage-A tile ``s0`` (``NT`` super groups of ``S``) if it ends at or before super group ``wend``
    (wholly live), else nothing loaded: a mask uniform over the tile (``zero``, a splat, compared with a splat), so
    the load stays unmasked per lane and vectorizes (16-byte loads)."""
    return tl.load(src_ptr + (row_off + s0 * S) + rel, mask=zero == tl.where(s0 + NT <= wend, 0, 1))


@triton.jit
def _stage_a_keys_of(src_ptr, row_off, ws_ptr, wbase, x, s0, hi, wend, L, NT: tl.constexpr, S: tl.constexpr,
                     AFIRST: tl.constexpr):
    """Stage-A keys of tile ``s0`` from its scores ``x`` (as loaded by :func:`_stage_a_whole`), stored at
    ``ws_ptr + wbase + sg`` for its super groups below ``hi``; a tile that is not whole is loaded here again with
    the exact bounds mask (nothing at all past ``hi``)."""
    sg = s0 + tl.arange(0, NT)
    cols = sg[:, None] * S + tl.arange(0, S)[None, :]
    valid = (sg[:, None] < hi) & (cols < L)
    if s0 + NT > wend:
        x = tl.load(src_ptr + row_off + cols, mask=valid, other=0.0)
    if AFIRST:
        best = _first_col_keys(x, sg, valid, S)
    else:
        best = _best_per_row(x, cols, valid)
    tl.store(ws_ptr + wbase + sg, best, mask=sg < hi)


@triton.jit
def _stage_a_prefetch(src_ptr, row_off, ws_ptr, wbase, lo, hi, L, NT: tl.constexpr, S: tl.constexpr,
                      AFIRST: tl.constexpr):
    """Unfused stage A over super groups ``[lo, hi)`` of one row (``S`` scores each, ``NT`` per tile) with two tiles'
    loads in flight: the same keys at ``ws_ptr + wbase + sg`` as the kernel's own stage-A loop (``AFIRST``:
    :func:`_first_col_keys`, else :func:`_best_per_row`).

    Why: one program per row at 640 rows keeps ~3 programs resident per SM (80 registers at 8 warps, sm_90), each
    with one 8 KB tile in flight, and stage A alone streamed the scores at ~2.5 TB/s (tenth session).  The loop is
    unrolled by two (tiles ``a``, ``b``): each is reloaded right after its keys are formed, so it is in flight while
    the other's keys are formed.  A one-tile-ahead loop compiled (triton 3.6, sm_90) to a copy of the new tile's
    registers at the loop's end, which waits for the load.  An odd tile count forms one empty tile (all masked)."""
    rel = tl.arange(0, NT)[:, None] * S + tl.arange(0, S)[None, :]
    zero = tl.zeros([NT, S], tl.int32)
    wend = tl.minimum(hi, L // S)  # tiles ending at or before this super group are whole
    a = _stage_a_whole(src_ptr, row_off, rel, zero, lo, wend, NT, S)
    b = _stage_a_whole(src_ptr, row_off, rel, zero, lo + NT, wend, NT, S)
    for s0 in range(lo, hi, 2 * NT):
        _stage_a_keys_of(src_ptr, row_off, ws_ptr, wbase, a, s0, hi, wend, L, NT, S, AFIRST)
        a = _stage_a_whole(src_ptr, row_off, rel, zero, s0 + 2 * NT, wend, NT, S)
        _stage_a_keys_of(src_ptr, row_off, ws_ptr, wbase, b, s0 + NT, hi, wend, L, NT, S, AFIRST)
        b = _stage_a_whole(src_ptr, row_off, rel, zero, s0 + 3 * NT, wend, NT, S)


@triton.jit
def _row_wait(done_ptr):
    """Wait for a row's done flag (set with release by the scores launch's :func:`dsa_lab.scores_triton._row_done`),
    then lower it for the next call / graph replay.  One lane spins with acquire loads (an atomic add of 0); the
    barrier after it carries the acquire to every lane (the pattern of CUTLASS's ``Semaphore::wait``).  Only safe
    when every program of the scores launch has started (the early-signal dependent launch) or finished (a plain
    launch after it): a spinning program must never hold the slot a scores program of its row needs."""
    d = tl.atomic_add(done_ptr, 0, sem="acquire")
    while d == 0:
        d = tl.atomic_add(done_ptr, 0, sem="acquire")
    tl.store(done_ptr, 0)
    tl.debug_barrier()


# shape ints are not specialised (divisibility/==1 hints buy nothing here and would compile one
# variant per k, width and split of a sweep or fuzz)
@triton.jit(do_not_specialize=["n", "width", "k", "P"])
def _hier_kernel(
    src_ptr, src_stride, len_ptr, start_ptr, out_ptr, ws_ptr, cnt_ptr, flags_ptr,
    n, width, k, P,
    MULTI: tl.constexpr, RR: tl.constexpr, KP: tl.constexpr, G1: tl.constexpr, G2: tl.constexpr,
    NSG: tl.constexpr, NT: tl.constexpr, SB: tl.constexpr, KC: tl.constexpr, DT: tl.constexpr,
    MIN_SG: tl.constexpr, WROW: tl.constexpr,
    LEN_MODE: tl.constexpr, HAS_START: tl.constexpr, FUSED: tl.constexpr,
    BS: tl.constexpr, BSP: tl.constexpr, RSEL: tl.constexpr, FLAGS: tl.constexpr, SHORTC: tl.constexpr,
    SC2: tl.constexpr, KC2: tl.constexpr, FASTA: tl.constexpr, PHASE: tl.constexpr, FZW: tl.constexpr,
    DIRECT1D: tl.constexpr, SC3: tl.constexpr, G1S: tl.constexpr, G2S: tl.constexpr, KC3: tl.constexpr,
    SKEYS: tl.constexpr, SDIR: tl.constexpr, AFIRST: tl.constexpr, L1P: tl.constexpr, GDC: tl.constexpr = False,
    FCAP: tl.constexpr = 0, FCAPM: tl.constexpr = 0, FQ: tl.constexpr = 1, RWAIT: tl.constexpr = False,
    APF: tl.constexpr = False,
):
    """Exact top-k by nested group maxima.

    Columns form level-1 groups of G1 and super groups of S = G1*G2 (aligned).  The top-KP
    keys lie in the top-KP level-1 groups ranked by their best key (a group holding one of
    them has a best key at least the KP-th key, and at most KP groups do), which lie in the
    top-KP super groups.  So: A) stream the row once, storing each super group's best key
    (fused: and each level-1 group's); B) top-KP super groups (skipped when there are at most KP);
    C) their level-1 maxima, top-KP of those; D) top-KP of those groups' columns.  B-D are three
    bitonic top-k of a few hundred keys whatever L is; they re-read at most KP*S columns (fused:
    KP*G1 blocks).  Rows with L <= DT take one direct top-k instead.
    ``P`` (programs per row) is a runtime argument so the many row counts of a sweep share one
    compiled kernel; ``MULTI = P > 1`` compiles the counter/merge code in or out.

    ``PHASE`` 0: one launch does it all.  Two launches (``two_phase``): ``PHASE = 1`` (grid rows x P) only streams
    stage A of the rows that need it; ``PHASE = 2`` (grid rows x 1) does everything else per row (direct and
    short-chain rows whole, B-D of the others from the workspace; flags).  Stage A then runs with the registers of
    stage A alone, not of the B-D chain compiled into the same kernel, so more programs stay resident.

    ``GDC``: launched as a programmatic dependent of the scores launch (``launch_pdl``): the row's bounds (inputs,
    never written by that launch) are read before ``griddepcontrol.wait``, everything the scores launch writes (the
    scores, stage A's keys, the zeroed flags) only after it.  ``RWAIT`` (``rowsync``, dev; one program per row, one
    launch): instead of that wait, the program waits for its own row's done flag from the scores launch
    (``cnt_ptr[rows + row]``, :func:`_row_wait`), so rows whose scores are stored need not wait for the rest.

    ``APF`` (``a_prefetch``, dev; unfused plans): stage A keeps two tiles' loads in flight instead of one
    (:func:`_stage_a_prefetch`).
    """
    S: tl.constexpr = G1 * G2
    row = tl.program_id(0)
    p = tl.program_id(1)
    L, start, end = _row_extent(row, len_ptr, start_ptr, n, width, LEN_MODE, HAS_START, RR, BS)
    if RWAIT:
        _row_wait(cnt_ptr + tl.num_programs(0) + row)
    elif GDC:
        _tl_cuda.gdc_wait()
    row_off = row.to(tl.int64) * src_stride
    if PHASE == 1:
        own = p < 0  # the first of two launches only streams stage A: the second writes these rows
    else:
        own = p == 0
    if L <= DT:
        if own:
            if FLAGS:  # this program alone writes the row: zero its flags first
                _flags_zero(flags_ptr, row, 0, n + 1, n, _FZT, FZW)
                tl.debug_barrier()
            jd = tl.arange(0, DT)
            cols = jd[:, None]
            if RSEL:  # register radix select over the row, ids compacted into the output
                sc = _scores2d(src_ptr, row_off, cols, cols < L, start, end, width, FUSED, BS, BSP)
                h = tl.reshape(tl_ordered_hi(sc), [DT])
                sel, cnt = _reg_select(h, (jd < L) & (h > -0x7F800001), k)
                _reg_write_out(out_ptr, row, jd, sel, cnt, k, KP)
                if FLAGS:
                    _flags_set(flags_ptr, row, jd, sel, start, width, n, BS)
            else:
                if FUSED and SDIR:  # the block scores from BS strided loads each: the top-k's layout unreplicated
                    kk = _group_keys(src_ptr, row_off, jd, jd < L, L, start, end, width, 1, FUSED, BS)
                elif FUSED and DIRECT1D and BSP == BS:
                    kk = _direct_keys_1d(src_ptr, row_off, L, start, end, width, DT, BS)
                else:
                    kk = tl.reshape(_keys2d(src_ptr, row_off, cols, cols < L, start, end, width, FUSED, BS, BSP),
                                    [DT])
                top = _sorted_top(kk, KP, DT)
                _write_out(out_ptr, row, top, k, KP)
                if FLAGS:
                    _flags_set(flags_ptr, row, tl_key_index(top), (tl.arange(0, KP) < k) & tl_is_candidate(top),
                               start, width, n, BS)
    elif SC3 and (L + G1S * G2S - 1) // (G1S * G2S) <= KP:
        # narrow chain: rows of at most KP super groups of G1S * G2S columns (k = 64: 2048 columns, 16K context)
        # take level-1 groups of G1S (< G1): C sees KP * G2S level-1 maxima, D only KP * G1S columns
        if own:
            if FLAGS:
                _flags_zero(flags_ptr, row, 0, n + 1, n, _FZT, FZW)
                tl.debug_barrier()
            _hier_finish(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, (L + G1S * G2S - 1) // (G1S * G2S),
                         start, end, width, k, WROW, NSG, KP, G1S, G2S, SB, KC3, FUSED, BS, BSP, RSEL, FLAGS, True,
                         SKEYS, L1P, FCAP, FCAPM, FQ)
    elif SHORTC and (L + S - 1) // S <= KP:
        # short chain: at most KP super groups, all chosen, so stage A (its stream, the arrival) buys nothing;
        # program 0 runs C-D over the row alone
        if own:
            if FLAGS:
                _flags_zero(flags_ptr, row, 0, n + 1, n, _FZT, FZW)
                tl.debug_barrier()
            _hier_finish(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, (L + S - 1) // S, start, end,
                         width, k, WROW, NSG, KP, G1, G2, SB, KC, FUSED, BS, BSP, RSEL, FLAGS, True, SKEYS,
                         L1P, FCAP, FCAPM, FQ)
    else:
        sc2 = False
        if SC2 > 1:  # constexpr: kernels without the second short chain compile no code for it
            sc2 = (L + S * SC2 - 1) // (S * SC2) <= KP
        if sc2:
            # second short chain: super groups SC2 times wider (level-1 groups unchanged), still at most KP of them
            if own:
                if FLAGS:
                    _flags_zero(flags_ptr, row, 0, n + 1, n, _FZT, FZW)
                    tl.debug_barrier()
                _hier_finish(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, (L + S * SC2 - 1) // (S * SC2),
                             start, end, width, k, WROW, NSG, KP, G1, G2 * SC2, SB, KC2, FUSED, BS, BSP, RSEL, FLAGS,
                             True, SKEYS, L1P, FCAP, FCAPM, FQ)
        elif PHASE == 2:  # stage A ran in the first launch: B-D from the workspace, one program per row
            if FLAGS:
                _flags_zero(flags_ptr, row, 0, n + 1, n, _FZT, FZW)
                tl.debug_barrier()
            _hier_finish(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, (L + S - 1) // S, start, end,
                         width, k, WROW, NSG, KP, G1, G2, SB, KC, FUSED, BS, BSP, RSEL, FLAGS, False, SKEYS,
                         L1P, FCAP, FCAPM, FQ)
        else:
            nsg = (L + S - 1) // S
            chunk = tl.maximum((nsg + P - 1) // P, MIN_SG)  # split derived on the device from L
            n_act = (nsg + chunk - 1) // chunk
            if p < n_act:
                if FLAGS:  # the row's active programs zero one slice of its flags each, before they arrive
                    fper = (n + 1 + n_act - 1) // n_act
                    _flags_zero(flags_ptr, row, p * fper, tl.minimum(p * fper + fper, n + 1), n, _FZT, FZW)
                wbase = row.to(tl.int64) * WROW
                lo = p * chunk
                hi = tl.minimum(lo + chunk, nsg)
                jt = tl.arange(0, NT)
                js = tl.arange(0, S)
                # A: stream the chunk once; one best key per super group
                if APF:  # (unfused plans only)
                    _stage_a_prefetch(src_ptr, row_off, ws_ptr, wbase, lo, hi, L, NT, S, AFIRST)
                else:
                    for s0 in range(lo, hi, NT):
                        sg = s0 + jt
                        cols = sg[:, None] * S + js[None, :]
                        valid = (sg[:, None] < hi) & (cols < L)
                        if FUSED and FASTA and BSP == BS:
                            # whole tiles: one contiguous load, level-1 keys in the ordered-integer domain
                            # (_l1_keys_whole); the row's last, partial tile keeps the exact bounds mask
                            whole = (s0 + NT <= hi) & ((s0 + NT) * (S * BS) <= tl.minimum(end, width) - start)
                            if whole:
                                l1k = _l1_keys_whole(src_ptr, row_off + start + s0 * (S * BS), s0, start, end,
                                                     NT, G1, G2, BS)
                            else:
                                sc = _scores2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
                                l1k = _best_per_row(tl.reshape(sc, [NT * G2, G1]), tl.reshape(cols, [NT * G2, G1]),
                                                    tl.reshape(valid, [NT * G2, G1]))
                        else:
                            if FASTA:  # tiles wholly inside the live extent load without a bounds mask
                                if FUSED:
                                    whole = (s0 + NT <= hi) & ((s0 + NT) * (S * BS) <= tl.minimum(end, width) - start)
                                    boff = row_off + start + s0 * (S * BS)
                                else:
                                    whole = (s0 + NT <= hi) & ((s0 + NT) * S <= L)
                                    boff = row_off + s0 * S
                                if whole:
                                    sc = _scores2d_whole(src_ptr, boff, jt[:, None] * S + js[None, :], cols, start, end,
                                                         FUSED, BS, BSP)
                                else:
                                    sc = _scores2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
                            else:
                                sc = _scores2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
                            if FUSED:
                                # keep every level-1 group's best key too (8 bytes per G1 blocks, ~3% of the
                                # logits read at bs 8), so stage C need not re-read logits
                                l1k = _best_per_row(tl.reshape(sc, [NT * G2, G1]), tl.reshape(cols, [NT * G2, G1]),
                                                    tl.reshape(valid, [NT * G2, G1]))
                        if FUSED:
                            jl = s0 * G2 + tl.arange(0, NT * G2)
                            tl.store(ws_ptr + wbase + NSG + KP + KP * G2 + jl, l1k, mask=jl < hi * G2)
                            best = tl.max(tl.reshape(l1k, [NT, G2]), axis=1)
                        elif AFIRST:  # the super group's key carries its first column: one max, no argmin
                            best = _first_col_keys(sc, sg, valid, S)
                        else:
                            best = _best_per_row(sc, cols, valid)
                        tl.store(ws_ptr + wbase + sg, best, mask=sg < hi)
                tl.debug_barrier()
                if PHASE != 1:  # (PHASE 1: the second launch finishes the row)
                    if not MULTI:  # one program per row: no counter, no merge (compiled away)
                        _hier_finish(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, nsg, start, end, width, k,
                                     WROW, NSG, KP, G1, G2, SB, KC, FUSED, BS, BSP, RSEL, FLAGS, False, SKEYS,
                                     L1P, FCAP, FCAPM, FQ)
                    else:
                        if n_act == 1:
                            _hier_finish(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, nsg, start, end,
                                         width, k, WROW, NSG, KP, G1, G2, SB, KC, FUSED, BS, BSP, RSEL, FLAGS, False,
                                         SKEYS, L1P, FCAP, FCAPM, FQ)
                        else:
                            old = tl.atomic_add(cnt_ptr + row, 1, sem="acq_rel")
                            if old == n_act - 1:
                                tl.debug_barrier()
                                _hier_finish(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, nsg, start,
                                             end, width, k, WROW, NSG, KP, G1, G2, SB, KC, FUSED, BS, BSP, RSEL,
                                             FLAGS, False, SKEYS, L1P, FCAP, FCAPM, FQ)
                                tl.store(cnt_ptr + row, 0)  # reset for the next call / graph replay


# ---------------------------------------------------------------------------
# host side
# ---------------------------------------------------------------------------


def _np2(x: int) -> int:
    return 1 if x <= 1 else 1 << (int(x) - 1).bit_length()


_COUNTERS: dict = {}
_KEEP_ALIVE: list = []  # old counter buffers stay alive: a captured graph may still point at them


def _counters(device: torch.device, rows: int) -> torch.Tensor:
    """Per-row arrival counters (int32 zeros; the merging program resets its row to 0)."""
    key = (device.type, device.index)
    buf = _COUNTERS.get(key)
    if buf is None or buf.numel() < rows:
        if _checks.capturing():
            # allocating inside a capture: a graph-private buffer, its memset captured with it
            return torch.zeros(rows, dtype=torch.int32, device=device)
        if buf is not None:
            _KEEP_ALIVE.append(buf)
        buf = torch.zeros(max(rows, 1024), dtype=torch.int32, device=device)
        _COUNTERS[key] = buf
    return buf


def plan_fold(rows: int, n: int, k: int, facts: dict, *, fused: bool = False, block_size: int = 1,
              tile: int | None = None, programs: int | None = None, cap: int | None = None) -> dict:
    """v1 ("fold") launch configuration, from shapes and device facts only (never from values).

    ``n``: columns (scores) or blocks (fused).  ``tile``/``programs``/``cap`` override the
    choice (tests use them to force the split/merge and fallback paths at small sizes).
    """
    KP = max(2, _np2(k))
    sm = int(facts["sm_count"])
    if programs is None:
        # enough programs to fill the device about twice, never more than the tiles of a row
        P = max(1, (2 * sm) // max(rows, 1))
    else:
        P = max(1, int(programs))
    if tile is None:
        base = 256 if P > 1 else 512
        if fused:
            base = min(base, max(8, 4096 // _np2(block_size)))
        tile = max(KP, min(base, _np2(n)))
    TILE = max(KP, _np2(tile))
    P = max(1, min(P, -(-n // TILE)))
    P = max(1, min(P, max(1, 16384 // KP)))  # bound the merge input: P lists of KP keys
    PP = _np2(P)
    M = min(KP, max(2, _np2(-(-2 * KP // PP))))
    while PP * M < KP:
        M *= 2
    CAP = min(PP * KP, max(2 * KP, 256))
    if cap is not None:
        CAP = max(KP, _np2(cap))
    G = max(1, min(PP, 4096 // KP))
    nw = 4 if TILE * (block_size if fused else 1) <= 2048 and KP <= 256 else 8
    return dict(algo="fold", P=P, PP=PP, KP=KP, TILE=TILE, M=M, CAP=CAP, G=G, num_warps=nw)


def _group(KP: int) -> int:
    """Default level-1 (and super) group size of the hier kernel for ``KP = next_pow2(k)``: 8 for k <= 64
    (the three bitonic stages then see 512 keys each), 4 for k <= 128, else 2."""
    return 8 if KP <= 64 else (4 if KP <= 128 else 2)


# The hier kernel's top-k stages take the register radix select (v2.2, :func:`_reg_select`) instead of the
# bitonic ``tl.topk`` from this KP = next_pow2(k) on.  Measured on the H200 (data/h200/tune_dev/tune_dev_F/G.csv):
# at k = 64 (512-key stages) the radix select was slower everywhere (4K 1 row 3.1 -> 4.4 µs, 640 x 256K 84.5 ->
# 121 µs: a 256-bin tl.histogram costs about a bitonic top-k of the same tile); at k = 512 (1024-2048-key
# stages) it was faster at 160-640 rows (640 x 16K 68.5 -> 47.4 µs) and equal elsewhere.
HIER_RSEL_MIN_KP: int | None = 512


# Rows with at most KP super groups (k = 64: 512 < L <= 4096 columns, 16K-32K context at block size 8) skip stage A:
# every super group is chosen anyway, so one program runs C-D (no stream of super maxima, no arrival).  Predicted
# (fifth session): 16K 1 row 10.0 -> ~5.5 µs; measured below (scripts/gpu_tune_dev.py --section K).
HIER_SHORT_CHAIN: bool = True
# Measured (tune_dev_K.csv, k = 64, 16K): 1 row 10.0 -> 7.7 µs, 640 rows 30.3 -> 26.6; full stage 1 row 13.9 -> 11.7
# (unfused), 640 rows fused 84.8 -> 61.7.
# A second short chain, super groups twice as wide (8 x 16 at k = 64: rows of at most 8192 columns, 64K context),
# for unfused calls with KP up to this.  Measured as a whole-kernel choice (tune_dev_L.csv, group2 = 16): 64K 1 row
# 12.4 -> 9.9 µs, 640 rows 44.4 -> 32.3, but 256K (the chain with wider super groups) 12.7 -> 15.2 and 85.6 -> 90.7,
# and the fused kernel at 64K 1 row 25.4 -> 42.7 (one program then reads 256 KB of logits); so the wider groups are
# taken only by rows the second short chain covers, decided on the device, and never fused.
HIER_SHORT_CHAIN2: int | None = 64


# Stage-A tiles wholly inside a row's live extent load without a bounds mask (32-bit offsets), so the loads
# vectorize (sm_90 PTX: 16-byte loads instead of 4-byte ones); the row's last tile keeps the exact mask.  Predicted
# (sixth session): the fused stream (1.2-1.5 TB/s) gains most.  Measured (tune_dev_M.csv, check_N.log, k = 64, same
# process): 640 x 256K select 85.7 -> 79.1 µs, fused full 459 -> 411, unfused full 278 -> 270, k = 512 598 -> 587; but
# 160 rows fused 161 -> 207 and 32 x 256K full 28.3 -> 31.2 (unfused); 1-8 rows within noise.  So: on beyond twice as
# many rows as SMs (None), or forced by True / False.  The fused stream stayed at ~1.6 TB/s: not the load width.
# Seventh session: the fused whole tiles became one contiguous 1-D load (``_l1_keys_whole``, block size a power of
# two); measured (tune_dev_O.csv, full stage with flags, same process) fused 640 x 256K 411 -> 283.5 µs, 160 x 256K
# 161.8 -> 99.2, 32 x 256K 45.1 -> 34.6, 160 x 64K 75.7 -> 54.3, 1-row and 4K-16K within noise or better: so fused
# calls with such a block size take them at every row count (None).
HIER_FAST_A: bool | None = None


# Eighth session (predicted: each a small part of the 1-row full stage): the kernel's flags zeroing as 8-byte words
# where the tensor is 16-byte aligned (``flags_wide``), and the fused direct path (rows of at most DT blocks) as one
# contiguous 1-D load (``direct1d``, power-of-two block size).  Measured (data/h200/tune_dev/check_Q.log, full stage
# with flags, same process): words: fused 1 x 4K 6.9 -> 6.4 µs, 128 x 4K 12.0 -> 10.6, 1 x 256K 17.0 -> 16.7, 640
# rows unchanged (the flags kernel writes them there); the 1-D direct load: no change (6.9 / 7.3 / 28.9 µs).
HIER_FLAGS_WIDE: bool = True
HIER_DIRECT1D: bool = False
# Tenth session: the keys a top-k ranks, where they are group maxima, from strided loads with an elementwise max
# (:func:`_group_keys`) instead of a tile reduced along a lane-spread axis, whose result Triton leaves replicated
# over those lanes (sm_90 TTGIR, triton 3.6: 8x for stage C of the main chain and for the fused direct path and stage
# D, 4x for the third short chain), so that the top-k does not repeat its work.  Predicted from a minimal fused
# direct kernel (fused_direct_dev.csv: 1 x 4K 5.7 µs against 3.0 for the select kernel over scores): faster chains
# everywhere.  Measured (tune_dev_V.csv, same process): the fused direct path gains (full stage with flags, 4K: 1
# row 6.4 -> 5.0 µs, 32 rows 7.0 -> 5.5, 128 rows 10.7 -> 6.7, 640 rows 29.5 -> 23.5), but the chains lose badly
# (select 16K 1 row 5.0 -> 9.7, 64K 9.7 -> 25.5, 640 x 256K 79.7 -> 104.5; fused 16K 16.6 -> 25.8): the strided
# gathers of stage C cost far more than the replicated top-k did.  Both off by default (the recorded kernels);
# ``strided_direct`` is the piece that wins, on the fused arm only, which the default dispatch does not take.
HIER_STRIDED_DIRECT: bool = False  # the fused direct path's block scores (SDIR)
HIER_STRIDED_KEYS: bool = False  # stage C's level-1 keys and the fused stage D's block scores (SKEYS = 1)
# After V: stage C's level-1 keys kept as the reduced tile, then stored to the row's workspace and reloaded as a 1-D
# tile (``c_workspace``, SKEYS = 2): the top-k gets an unreplicated layout for one store, a barrier and a load, where
# the strided gathers cost far more.  Measured (tune_dev_Y / Z.csv, same process): the main chain (256K, 8x
# replicated) gains everywhere -- select 1 row 12.8 -> 10.5 µs, 32 rows 14.3 -> 12.2, 64 rows 16.7 -> 14.4, 160
# rows 34.2 -> 31.0, 640 rows 79.8 -> 72.4 (63.0 with a_first_col); full 640 x 256K 288.8 -> 265.0 (256.3 with
# a_first_col), 1 row 16.5 -> 14.8; the third short chain (16K, 4x) within noise (640 rows 14.7 -> 14.2), 64K (its
# chain already passes through the workspace) unchanged.  Adopted in the eleventh session with the whole re-record.
HIER_C_WORKSPACE: bool = True
# Tenth session, dev: the unfused stage A's super-group keys carry the group's first column (one max reduction per
# super group instead of a max and an argmin; same ranking, :func:`_first_col_keys`).  Measured (tune_dev_W / X.csv,
# 256K select): stage A alone 44.3 -> 33.1 µs at 640 rows, the select 79.6 -> 70.2, 128-320 rows 12-17% faster, but
# 32 / 64 rows (P = 8 / 4 programs per row) 14.4 -> 18.7 / 16.7 -> 18.3.  ``None`` takes it where those gains were
# measured, one or two programs per row (:func:`_a_first_col_rule`); ``False`` (the ee0a345 kernels) never;
# ``True`` always.  ``None`` adopted in the eleventh session with the whole re-record (notes/select_kernel.md).
HIER_A_FIRST_COL: bool | None = None
# Eleventh session, dev: rows without stage A whose stage C ranks at least HIER_L1_PAIRS_MIN level-1 keys (k = 64:
# the second short chain, 64K context, 1024 keys in one tl.topk, ~2.4x the cost of a 512-key one on the ladder) rank
# adjacent pairs of them first (``l1_pairs``; :func:`_hier_finish`'s ``L1P``).  Measured (tune_dev_AA.csv, same
# process, 64K, k = 64): select 1 row 9.8 -> 9.3 µs, 32 rows 10.1 -> 9.9, 640 rows 32.1 -> 28.4 (equal values 28.1);
# full stage 1 row 13.5 -> 12.4, 32 rows 16.2 -> 15.3, 640 rows 92.3 -> 87.5.  Adopted in the twelfth session (after
# dropping the pairs' redundant re-store of keys already in the workspace), with the whole re-record.
# At the default plans only the second short chain at k = 33-64 ranks >= 1024 level-1 keys (k = 128 / 256 take
# groups of 4 / 2: 512 keys; k <= 32: 512), so that is all it changes.
HIER_L1_PAIRS: bool = True
HIER_L1_PAIRS_MIN: int = 1024  # from 512 keys (the 16K third short chain) it lost everywhere (tune_dev_AB.csv)
# A third short chain, decided on the device like the others: rows of at most KP super groups of (G1 / 2) * G2
# columns (k = 64: 2048 columns, 16K context) take level-1 groups of G1 / 2, so stage C's top-k sees KP * G2
# level-1 maxima and stage D's only KP * G1 / 2 columns (256 instead of 512 at k = 64).  Measured first as the whole
# kernel's group 4 (check_Q.log): 16K select 1 row 7.7 -> 4.9 µs, 32 rows 7.9 -> 5.1, 640 rows 26.8 -> 14.5; then as
# this chain with the new scores grid and flags below (tune_dev_R.csv, unfused full stage): 16K 1 row 11.7 -> 7.9, 32
# rows 12.4 -> 8.8, 640 rows 71.6 -> 36.2.  In the fused kernel it lost at 640 rows (16K 55.5 -> 66.4, 64K 112 ->
# 138: the extra chain's code costs stage A), so unfused calls only.
HIER_SHORT_CHAIN3: bool = True
# Eighteenth session, dev, off: a threshold filter in place of the chain's last top-k stages.  A lower bound T of the
# row's KP-th best key, from one tile of keys (the smallest of KP groups' maxima, or FQ-th best keys of KP / FQ
# groups, and the largest minimum of KP consecutive columns); the keys >= T (M of them, the top KP among them) are
# compacted and ranked by one top-k of CAP slots; rows with M > CAP run the chain as before.
# ``HIER_FILTER_CAP``: rows without stage A (the narrow / short / second short chains: 16K-64K at k = 64), in place
# of C-D (three tl.topk at 64K, two at 16K); ``HIER_FILTER_CAP_MAIN``: rows with stage A, after B, in place of C-D.
# 0 = off.  Modelled M (scripts/filter_threshold_model.py, k = 64): without stage A ~130 median / ~225 p99 at FQ = 4,
# ~280 / ~500 at FQ = 1; after B ~70 / ~75 (1% NaN ~85 / ~96); 64 for equal values and ramps.  Predicted 1 x 64K
# select 9.0 -> ~5-6 µs.  Measured (nineteenth session, H200, tune_dev_AN.csv): slower wherever it runs -- 1 x 64K
# 9.0 -> 19.5 µs (FQ 4 / 256) / 15.7 (FQ 1 / 512), 1 x 16K 5.0 -> 6.6 / 6.2, the main filter 1 x 256K 10.5 -> 13.3
# -- and its code alone costs 640-row plans it never serves (256K 62.6 -> 75.3).  Each 2048-key pass chunk costs
# ~1.6-2.2 µs in one program (a chain of block-wide reductions and a scan, not bytes), about one 512-key top-k
# stage, and the filter reads every chunk twice.  Kept off, for A/B (notes/select_kernel.md, "Nineteenth session").
HIER_FILTER_CAP: int = 0
HIER_FILTER_CAP_MAIN: int = 0
HIER_FILTER_Q: int = 4
# Twentieth session, dev, off: the unfused stage A keeps two tiles' loads in flight (``a_prefetch``,
# :func:`_stage_a_prefetch`: the loop unrolled by two, each tile reloaded as soon as its keys are formed).  Why: at
# 640 rows one program per row at 8 warps (80 registers, sm_90, triton 3.6) stays 3 programs resident per SM, each
# with one 8 KB tile in flight while it waits; Little's law with ~1 µs of loaded-memory latency then caps the stream
# near what stage A alone measured (33 µs for 84 MB, ~2.5 TB/s; tenth session).  Larger tiles lost (tune_dev_T)
# because they cost registers in every stage; this costs none (80 either way).  Predicted: stage A toward its 18 µs
# floor, the 640 x 256K select 63 -> ~50-55 µs, 160-320 rows x 256K a few µs; rows without stage A (4K-64K) and rows
# whose chunk is one tile (1-8 rows) unchanged.  Measured (H200, data/h200/tune_dev/tune_dev_AQ.csv, same process):
# stage A alone 640 x 256K 33.1 -> 30.6 µs (it is bound by its per-tile reduction and the layout conversion before
# the store, not by bytes in flight), the select 62.7 -> 59.1, 160 rows 25.5 -> 23.1, 1 row 10.6 -> 11.3; the full
# stage lost at 320-640 rows (640 x 256K 256.8 -> 264.8, 640 x 64K 86.2 -> 92.4): its kernel took 96 registers
# instead of 80.  With that kernel held to 80 (plan key ``maxnreg``, tune_dev_AR.csv) it is neutral or better at
# every point measured (640 x 256K 253.4, 160 x 256K 78.5).  Small, no target flips: off, a candidate for the next
# whole record (one program per row only).
HIER_A_PREFETCH: bool = False
# The unfused composition with flags: the scores launch (many programs per row) zeroes them, so the select kernel's
# one program per row only sets its bytes instead of zeroing n + 1 bytes before its chain.  Measured with the scores
# grid above (tune_dev_R.csv): 1 x 4K 6.8 -> 5.9 µs, 32 x 4K 7.2 -> 6.4, 640 x 4K 44.7 -> 19.2.
UNFUSED_FLAGS_IN_SCORES: bool = True
# Fourteenth session: the unfused composition's scores launch also stores each row's stage-A keys (its super groups'
# maxima, keyed by their first block, as ``a_first_col``) into the select's workspace while it streams the logits
# (:func:`dsa_lab.scores_triton._stage_a_keys`; only for rows longer than :func:`main_chain_min`, the rows whose
# select streams stage A), so the select kernel runs B-D alone, one program per row (``PHASE = 2``), and never reads
# the scores a second time.  Predicted: 640 x 256K full 258 -> ~230 µs (stage A inside the select ~33 µs there),
# 1 x 256K 14.5 -> ~11, 4K-64K rows unchanged.  Measured (full stage with flags, k = 64, same process;
# data/h200/tune_dev/tune_dev_AE.log, tune_dev_AF/AG/AG_rest.csv): 1 x 256K 14.5 -> 11.6, 1 x 64K 12.4 -> 11.8, 32 x
# 256K 23.3 -> 21.9, 32 x 64K 15.0 -> 14.6, 1 x 16K / 4K 7.8 / 5.8 -> 7.4 / 5.5 (no branch), 160 x 256K 83.8 -> 75.8;
# but 640 x 256K 257.8 -> 267.5 and every 160-640-row point at 4K-64K slower (640 x 64K 86.7 -> 96.2, 640 x 16K
# 34.5 -> 39.0): with the keys the scores kernel takes 95 registers instead of 72 (sm_90, triton 3.6) and five
# block barriers more per tile.  Variants (tile 256, 8 warps) move the balance (640 x 256K 244-251, 160 x 256K ~70)
# but none wins at 640 x 64K.  The width is the same at every context, so the measured rule is by rows alone:
# ``None`` takes it at ``rows * 4 <= SMs`` (:func:`_scores_a_rule`), where it won or tied at every context.
# Fifteenth session: on by that rule (``None``), the whole record re-taken at 3e42133 (v2.9 in notes/select_kernel.md):
# full stage 1 row 5.9 / 7.8 / 12.5 / 14.5 -> 5.3 / 7.2 / 11.8 / 11.7 µs at 4K-256K, every 1-32-row point 0-19% faster.
UNFUSED_STAGE_A_IN_SCORES: bool | None = None


# Unfused composition: the select launch as a programmatic dependent of the scores launch (``launch_pdl``; the hier
# kernel's ``GDC``: bounds read before ``griddepcontrol.wait``, scores / keys / flags after it), on devices whose
# facts say ``pdl`` (CUDA sm_90+; never on ROCm or the interpreter).  ``UNFUSED_PDL_EARLY``: the scores programs also
# signal ``griddepcontrol.launch_dependents`` as they start, so the select's programs can be resident before the
# scores launch ends.  Predicted (sixteenth session): the two launches' gap (1.38 - 0.72 µs measured) and the select's
# bound reads (~0.6 µs) overlap the scores launch: ~1 µs off every unfused full-stage point.  Measured (H200, full
# stage with flags, k = 64, same process; data/h200/tune_dev/tune_dev_AI/AJ/AK.csv): the dependent launch alone gains
# nothing (4K 1 row 5.3 -> 5.5 µs; the scores programs only let it launch as they exit); with the early signal, 1-24
# rows gain 0.4-0.8 µs at every context (1 row 5.3 / 7.2 / 11.9 / 11.6 -> 4.6 / 6.5 / 11.2 / 11.0 µs at 4K-256K),
# 640 rows 1-2%, but 32-320 rows of 4K-16K lose up to 17% (4K 64 rows 8.0 -> 9.4) while the scores grid has ~32 x SM
# programs; with ~8-16 x SM programs (``scores_mult``) those points gain instead (4K 64 rows 5.2, 16K 40 rows 7.8).
# ``None`` takes :func:`_pdl_rule`: on by that rule since the seventeenth session (tune_dev_AL measured 256-640 rows
# first), the whole record re-taken at 790c635 (v2.10 in notes/select_kernel.md): full stage 1 row 5.3 / 7.2 / 11.8 /
# 11.7 -> 4.6 / 6.5 / 11.3 / 11.1 µs at 4K-256K, the 256 k = 64 full points' geometric mean 0.94 (0.83-1.07).
UNFUSED_PDL: bool | None = None
UNFUSED_PDL_EARLY: bool = False


# Unfused composition in one launch (:mod:`dsa_lab.tail_triton`): the scores launch's programs, then each row's last
# program to arrive selects the row, so there is no second launch and a row's select does not wait for the other
# rows' scores.  Predicted (seventeenth session): the full stage at 1-40 rows close to the select stage alone plus one
# tile's stream (~0.5-1 µs), e.g. 32 x 16K 8.4 -> ~6 µs against a select stage of 5.2.  Measured (H200, full stage with
# flags, k = 64, same process; data/h200/tune_dev/tune_dev_AM.csv): wrong, slower at all 32 points, 1.13-1.99x
# (1 row 4.7 / 6.5 / 11.0 / 11.0 -> 5.3 / 7.6 / 15.6 / 14.3 µs at 4K-256K; 32 x 16K 8.5 -> 14.0 at best).  Compiled for
# sm_90 (triton 3.6) the one kernel takes 100-113 registers at 8 warps (the select launch 80, the scores launch 72 at
# 4 warps), so 2 programs per SM where the scores launch keeps 7 resident; and in the grid's row-fastest order a row's
# last program is among the last dispatched (not measured apart).  Off; kept as a tested option.
UNFUSED_TAIL: bool = False
# Nineteenth session, dev, off: a per-row handoff from the scores launch to the select launch (config ``rowsync``).
# The select launch waits for the whole scores launch (``griddepcontrol.wait``, or stream order), so at 640 x 256K
# its ~63 µs follow the scores' ~190 (full stage 257 µs, 1.70x its bytes floor; tune_dev_AN).  With ``rowsync`` the
# scores grid turns to ``(programs per row, rows)``, so that rows finish roughly in order, and each row's last scores
# program raises a done flag (release); the select program of the row waits for that flag alone (acquire), so early
# rows' chains can run beside later rows' streams.  Applies where the select is a hier plan of one program per row in
# one launch without ``scores_a`` (elsewhere the call runs as without it).  Safe against deadlock only because the
# select launch starts once every scores program has started (the early-signal dependent launch) or finished.
UNFUSED_ROWSYNC: bool = False


def _pdl_rule(rows: int, sm: int) -> tuple[bool, int | None]:
    """The measured rule for :data:`UNFUSED_PDL` ``= None``: ``(dependent launch with the early signal, the scores
    grid's multiple of the SM count or None for its default)``.  tune_dev_AJ / AK (132 SMs), geometric mean over
    4K-256K against the plain launches: at most a fifth as many rows as SMs (1-26 rows) 0.91-0.95, never worse; a
    fifth to a third (27-43 rows) no form wins everywhere (32 rows 0.99-1.01, one context up to 8-14% worse): plain;
    a third to 3x (44-396 rows) with ~16 x SM programs 0.91-0.99 (tune_dev_AL: 256 rows 0.96, 384 rows 0.97, where the
    default grid read 1.01), at most 2% worse anywhere; beyond, the default grid 0.99 / 0.98 (512 / 640 rows), at
    most 1% worse."""
    if rows * 5 <= sm:
        return True, None
    if rows * 3 < sm:
        return False, None
    if rows <= sm * 3:
        return True, 16
    return True, None


def _scores_a_rule(rows: int, sm: int) -> bool:
    """The measured rule for ``scores_a`` (:data:`UNFUSED_STAGE_A_IN_SCORES` ``= None``): at most a quarter as many
    rows as SMs, where tune_dev_AE / AG measured it winning or tying at 4K-256K (1-32 rows on 132 SMs)."""
    return rows * 4 <= sm


def _a_first_col_rule(P: int, fused: bool) -> bool:
    """The measured rule for ``a_first_col`` (:data:`HIER_A_FIRST_COL` ``= None``): unfused stage A with at most
    two programs per row, where tune_dev_W / X measured the gain (128-640 rows x 256K)."""
    return not fused and P <= 2


def _two_phase_default(rows: int, sm: int, fused: bool) -> bool:
    """Stage A in a launch of its own (:func:`_hier_kernel`'s ``PHASE``)?  Never by default.  Predicted (sixth
    session): the fused stage A, compiled with the B-D chain (96 registers at 4 warps, 29K PTX lines; alone: 80 and
    2.2K), streams logits at ~1.6 TB/s where the scores kernel streams ~4 TB/s; alone it should approach that.
    Measured (check_N.log, same process): it did not (fused 640 x 256K 411 -> 477 µs); the unfused select gained
    at 160-640 x 256K with P = 4 (34.1 -> 28.1, 85.7 -> 77.6) but every 64K row count lost ~2 µs (its rows take the
    second short chain, so the first launch is empty), and a width-only rule cannot tell the two apart; the fused
    kernel with 8-warp B-D gained at 1-160 rows (1 x 256K 25.9 -> 20.6) but stayed slower than the unfused
    composition.  Kept as an option (``two_phase=True``, ``num_warps2``) for the record and for tests."""
    return False


def plan_hier(rows: int, n: int, k: int, facts: dict, *, fused: bool = False, block_size: int = 1,
              programs: int | None = None, direct: int | None = None, group: int | None = None,
              num_warps: int | None = None, rsel: bool | None = None, short_chain: bool | None = None,
              group2: int | None = None, short_chain2: bool | None = None,
              kernel_flags: bool | None = None, fast_a: bool | None = None, nt: int | None = None,
              two_phase: bool | None = None, num_warps2: int | None = None, flags_wide: bool | None = None,
              direct1d: bool | None = None, short_chain3: bool | None = None,
              strided_keys: bool | None = None, strided_direct: bool | None = None,
              a_first_col: bool | None = None, phase_only: int | None = None, c_workspace: bool | None = None,
              l1_pairs: bool | None = None, l1_pairs_min: int | None = None,
              filter_cap: int | None = None, filter_cap_main: int | None = None, filter_q: int | None = None,
              a_prefetch: bool | None = None, maxnreg: int | None = None, flags_zeroed: bool = False) -> dict:
    """v2 ("hier") launch configuration, from shapes and device facts only.

    G1 = G2 = group size (8 for k <= 64: the three bitonic stages then see 512 keys each);
    P programs per row stream stage A, at least MIN_SG super groups (>= 1024 columns) each;
    rows whose live extent is at most DT use one direct top-k.  ``programs``/``direct``/``group``
    override (tests use them to reach every path at interpreter sizes).  ``short_chain`` (default
    :data:`HIER_SHORT_CHAIN`): rows with at most KP super groups skip stage A (one program runs C-D);
    ``short_chain2`` (default: unfused and KP <= :data:`HIER_SHORT_CHAIN2`): so do rows with at most KP super
    groups twice as wide (``SC2 = 2``; ``KC2`` their C-stage chunk).  ``kernel_flags`` (default: all but fused
    calls with more than twice as many rows as SMs): a ``with_flags`` call has the kernel write the flags, else
    the flags kernel runs after it.  ``fast_a`` (default :data:`HIER_FAST_A`): stage-A tiles wholly inside the
    live extent load without a bounds mask; ``nt``: super groups per stage-A tile (dev).  ``two_phase`` (default
    :func:`_two_phase_default`): stage A in its own launch, B-D (and the direct / short-chain rows) in a second
    with ``num_warps2`` warps (default: ``num_warps``).  ``flags_wide`` (default :data:`HIER_FLAGS_WIDE`): the
    kernel zeroes flags as 8-byte words; ``direct1d`` (default :data:`HIER_DIRECT1D`): the fused direct path loads
    the row as one contiguous 1-D tile.  ``short_chain3`` (default :data:`HIER_SHORT_CHAIN3`, unfused, k <= 64,
    level-1 groups of at least 4): rows of at most KP super groups of ``(G1 / 2) * G2`` columns run C-D with
    level-1 groups of ``G1 / 2`` (``G1S``, ``G2S``, ``KC3``).  ``strided_keys`` (default
    :data:`HIER_STRIDED_KEYS`): stage C's level-1 keys and the fused stage D's block scores come from
    :func:`_group_keys` (``SKEYS``); ``strided_direct`` (default :data:`HIER_STRIDED_DIRECT`): so do the fused direct
    path's block scores (``SDIR``).  ``c_workspace`` (default :data:`HIER_C_WORKSPACE`; not with
    ``strided_keys``): stage C's in-register level-1 keys pass through the row's workspace (``SKEYS = 2``).
    ``a_first_col`` (default :data:`HIER_A_FIRST_COL`; ``None`` there: the measured rule,
    :func:`_a_first_col_rule`): the unfused stage A keys super groups by their first column (``AFIRST``).
    ``l1_pairs`` (default :data:`HIER_L1_PAIRS`): rows without stage A whose stage C ranks at least
    ``l1_pairs_min`` (default :data:`HIER_L1_PAIRS_MIN`) level-1 keys rank them in pairs first (``L1P``; not with
    ``rsel``, whose stages are not top-k).  ``phase_only`` (dev timing, with ``two_phase``): ``1``, the only
    value, launches stage A alone and writes no output (a second phase alone would read a workspace nobody
    wrote).  ``filter_cap`` / ``filter_cap_main`` / ``filter_q`` (defaults :data:`HIER_FILTER_CAP`,
    :data:`HIER_FILTER_CAP_MAIN`, :data:`HIER_FILTER_Q`): the threshold filter of rows without / with stage A
    (``FCAP``, ``FCAPM``: a power of two, raised to KP if below, or 0 = off; ``FQ`` in 1, 2, 4, lowered to KP).
    Where a plan cannot take them they are off (0 in the plan): both with ``rsel`` or ``KP`` x the padded block size
    above 2048, the main chain's unless stage C's whole tile fits (``KC == KP``) and super groups hold KP to 1024
    columns.  ``a_prefetch`` (default :data:`HIER_A_PREFETCH`; unfused plans only, else off): stage A keeps two
    tiles' loads in flight (``APF``).  ``maxnreg`` (dev, None = the compiler's choice): an upper bound on the
    kernel's registers per thread (Triton's ``maxnreg`` launch option, CUDA).
    ``flags_zeroed``: an earlier launch zeroed the flags; the kernel only sets them.
    """
    KP = max(2, _np2(k))
    bsp = _np2(block_size) if fused else 1
    if group is None:
        group = _group(KP)
    G1 = G2 = max(1, _np2(group))
    if group2 is not None:  # super groups of G1 * group2 columns (dev: fewer super groups per row)
        G2 = max(1, _np2(group2))
    if G1 * G2 < 2:
        G2 = 2
    S = G1 * G2
    NSG = -(-n // S)
    sm = int(facts["sm_count"])
    MIN_SG = max(1, 1024 // S)
    if programs is None:
        P = max(1, (2 * sm) // max(rows, 1))
        if fused:
            # measured (tune_dev_K.csv, 160-640 rows x 64K-256K): the fused stage A at one program per row left the
            # device under-filled (160 x 256K: 236 µs at P = 1, 162 at P = 4, 149 at P = 8; 640 x 256K 587 -> 475)
            P = max(P, 4)
        P = max(1, min(P, -(-NSG // MIN_SG)))
    else:
        P = max(1, int(programs))
        MIN_SG = 1
    NT = max(1, _np2(max(1, (4096 if fused else 2048) // (S * bsp))))  # stage-A tile: 8-16 KB of loads
    if nt is not None:
        NT = max(1, _np2(nt))
    if fast_a is None:
        fast_a = HIER_FAST_A if HIER_FAST_A is not None else ((fused and bsp == block_size) or rows > 2 * sm)
    SB = max(KP, min(_np2(NSG), max(1024, 4 * KP)))  # stage B in one tile where it fits
    KC = max(1, min(KP, _np2(max(1, 4096 // (S * bsp)))))
    if direct is None:
        # measured on the H200 (640 rows, k=64): a direct tl.topk over 1024 keys cost 2.4x one over
        # 512 (17.7 vs 8.0 µs), about what the three 512-key B-D stages cost; so rows longer than
        # 512 go through the hierarchy.  The fused tile holds DT * bs logits in registers.
        direct = 512 if not fused else min(512, 4096 // bsp)
        direct = max(KP, direct)
        if facts.get("name") == "triton-interpreter":
            # CPU sizes are small: keep the direct path for tiny rows only, so the interpreter
            # lane exercises the hierarchical stages and the multi-program merge too
            direct = max(KP, 128)
    DT = max(KP, _np2(direct))
    # num_warps: measured on the H200 at k = 64 (tune_dev_B/C/D.csv): 8 warps beat 4 on the select kernel
    # (1 row 18.3 -> 12.2 µs at 256K, 640 x 256K 111 -> 85 µs) but lost in fused mode (640 x 256K 454 -> 564).
    # With the fused whole tiles (tune_dev_O.csv) 8 warps win the fused kernel up to one row per SM (1 x 256K 24.2
    # -> 17.3 µs, 32 x 256K 34.6 -> 28.5, 32 x 64K 25.8 -> 18.2, 32 x 4K 8.9 -> 7.4) and lose beyond (160 x 256K 99.2
    # -> 117.3, 640 x 256K 283.6 -> 430.0)
    fused_nw = 8 if rows <= sm else 4
    nw = num_warps or (fused_nw if (KP <= 128 and fused) else (8 if KP <= 512 else 16))
    if rsel is None:
        rsel = HIER_RSEL_MIN_KP is not None and KP >= HIER_RSEL_MIN_KP
    if short_chain is None:
        short_chain = HIER_SHORT_CHAIN
    if short_chain2 is None:
        short_chain2 = HIER_SHORT_CHAIN2 is not None and not fused and KP <= HIER_SHORT_CHAIN2
    SC2 = 2 if (short_chain and short_chain2) else 1
    if kernel_flags is None:
        # measured with the fused kernel (tune_dev_I/K/L.csv): flags in the kernel 0.5 µs faster at 1-160 rows
        # (4K), slower than the flags kernel after it at 320-640 rows (640 x 256K: 587 vs 466 µs; 640 x 16K: 67.8
        # vs 56.0); the unfused select kernel writes them (tune_dev_I)
        kernel_flags = not (fused and rows > 2 * sm)
    KC2 = max(1, min(KP, _np2(max(1, 4096 // (S * SC2 * bsp)))))
    if short_chain3 is None:
        short_chain3 = HIER_SHORT_CHAIN3 and KP <= 64 and not fused
    SC3 = bool(short_chain3) and G1 >= 4
    G1S, G2S = (G1 // 2, G2) if SC3 else (G1, G2)
    KC3 = max(1, min(KP, _np2(max(1, 4096 // (G1S * G2S * bsp)))))
    if two_phase is None:
        two_phase = _two_phase_default(rows, sm, fused)
    strided = bool(HIER_STRIDED_KEYS if strided_keys is None else strided_keys)
    # the default yields to an explicit strided_keys (the two are forms of the same keys); both explicit: an error
    cws = bool((HIER_C_WORKSPACE and not strided) if c_workspace is None else c_workspace)
    if strided and cws:
        raise ValueError("strided_keys and c_workspace are two forms of stage C's keys: take one")
    skeys = 1 if strided else (2 if cws else 0)  # the kernel's SKEYS
    pairs_min = HIER_L1_PAIRS_MIN if l1_pairs_min is None else int(l1_pairs_min)
    if pairs_min < 2:
        raise ValueError(f"l1_pairs_min must be at least 2, got {l1_pairs_min!r}")
    l1p = pairs_min if (HIER_L1_PAIRS if l1_pairs is None else l1_pairs) and not rsel else 0
    fcap = int(HIER_FILTER_CAP if filter_cap is None else filter_cap)
    fcapm = int(HIER_FILTER_CAP_MAIN if filter_cap_main is None else filter_cap_main)
    fq = int(HIER_FILTER_Q if filter_q is None else filter_q)
    for name, cap in (("filter_cap", fcap), ("filter_cap_main", fcapm)):
        if cap < 0 or cap & (cap - 1) or cap > 8192:
            raise ValueError(f"{name} must be 0 (off) or a power of two up to 8192, got {cap}")
    # a cap below KP is raised to KP (the top-k needs KP slots; one config then serves every k of a test or sweep)
    fcap, fcapm = (max(c, KP) if c else 0 for c in (fcap, fcapm))
    if fq not in (1, 2, 4):
        raise ValueError(f"filter_q must be 1, 2 or 4, got {filter_q!r}")
    fq = min(fq, KP)
    if rsel or KP * bsp > 2048:  # the filter ranks with tl.topk (the register radix select's stages are not top-k);
        fcap = fcapm = 0  # its pass chunks hold 2048 keys (fused: logits), at least one KP-wide tile row
    if KC != KP or not KP <= S <= 1024:  # the main chain's filter: stage C's whole [KP, S] tile fits, a group of
        fcapm = 0  # S >= KP keys, chunks of whole super groups
    if phase_only is not None and (phase_only != 1 or not two_phase):
        raise ValueError(f"phase_only must be None or 1 with two_phase=True, got {phase_only!r}")
    return dict(algo="hier", P=P, KP=KP, G1=G1, G2=G2, NSG=NSG, NT=NT, SB=SB, KC=KC, DT=DT,
                MIN_SG=MIN_SG, num_warps=nw, rsel=rsel, short_chain=bool(short_chain), SC2=SC2, KC2=KC2,
                kernel_flags=bool(kernel_flags), fast_a=bool(fast_a), two_phase=bool(two_phase),
                num_warps2=int(num_warps2 or nw),
                flags_wide=bool(HIER_FLAGS_WIDE if flags_wide is None else flags_wide),
                direct1d=bool(HIER_DIRECT1D if direct1d is None else direct1d), SC3=SC3, G1S=G1S, G2S=G2S,
                KC3=KC3, skeys=skeys,
                sdir=bool(HIER_STRIDED_DIRECT if strided_direct is None else strided_direct),
                afirst=bool(a_first_col if a_first_col is not None else (
                    _a_first_col_rule(P, fused) if HIER_A_FIRST_COL is None else HIER_A_FIRST_COL)),
                phase_only=None if phase_only is None else int(phase_only), l1p=l1p,
                fcap=fcap, fcapm=fcapm, fq=fq,
                apf=bool(HIER_A_PREFETCH if a_prefetch is None else a_prefetch) and not fused,
                maxnreg=_checks.maxnreg(maxnreg), flags_zeroed=bool(flags_zeroed))


# Rows whose KP = next_pow2(k) is at least this take the radix select (dsa_lab.select_radix_triton) instead of
# "hier"; None = never.  Measured on the H200 (data/h200/tune_dev_A.csv, notes/select_kernel.md): at k = 2048
# the full-pass radix (v3.0) beat hier at every point (1.7-5x, 4K-256K, 1-640 rows, normal/equal/shifted).
RADIX_MIN_KP: int | None = 1024
# From this KP on, calls with several radix programs per row (split_programs(...) > 1: fewer rows than SMs) take
# the parallel radix (v3.4: every digit pass split over the row's programs, rows of at most RADIX_SHORT live
# columns selected whole by one program, decided on the device).  Measured (tune_dev_F.csv): 1 x 256K, k = 2048:
# 23.6 µs (v3.0 170, torch 62); k = 512: 19.5 µs (hier 123); 32 x 256K k = 2048: 62 (v3.0 202); at 160+ rows
# (one program per row) it lost to v3.0 / hier, and on short rows (16K: 15.3 vs 6.0 µs) to v3.0 — hence SHORT.
RADIX_PAR_MIN_KP: int | None = 512
RADIX_SHORT: int = 4096
# The radix variant the default dispatch takes with one program per row: every digit over the row (v3.0).  The
# compacting (v3.1) and split (v3.2) variants were faster on continuous values at 256K but 1.7-11x slower when
# values tie or share their top digit (equal / shifted), which a shape-only rule cannot see (tune_dev_A/B.csv).
RADIX_DEFAULT = {"tile": None, "compact": False, "split": False, "num_warps": None, "parallel": False, "short": 0}


def filter_threshold_noa(keys: torch.Tensor, L: int, KP: int, FQ: int) -> int:
    """Torch reference of :func:`_filter_noa`'s threshold T for one row: ``keys`` the row's packed keys (int64, at
    least ``L`` of them), ``L`` its live extent (``>= KP``), ``FQ`` in 1 / 2 / 4 (at most KP).  T is a lower bound of
    the row's KP-th best key: the larger of ``T_a`` (the smallest, over the ``KP / FQ`` groups of columns ``c`` with
    equal ``c mod (KP / FQ)``, of the group's FQ-th best key) and ``T_b`` (the largest minimum of KP consecutive
    columns ``[i * KP, i * KP + KP)`` wholly below L)."""
    if not KP <= L <= keys.numel() or FQ not in (1, 2, 4) or FQ > KP:
        raise ValueError(f"filter_threshold_noa: need KP <= L <= len(keys) and FQ in 1, 2, 4 (<= KP); got L={L}, "
                         f"KP={KP}, FQ={FQ}")
    R = -(-L // KP)
    t = torch.full((R * KP,), PAD_KEY, dtype=torch.int64)
    t[:L] = keys[:L].cpu()
    ta = int(torch.topk(t.view(-1, KP // FQ), FQ, dim=0).values[-1].min())
    full = (torch.arange(R) + 1) * KP <= L
    tb = int(t.view(R, KP)[full].min(dim=1).values.max()) if bool(full.any()) else PAD_KEY
    return max(ta, tb)


def filter_threshold_main(keys: torch.Tensor, L: int, KP: int, S: int) -> tuple[int, torch.Tensor]:
    """Torch reference of :func:`_filter_main` for one row with stage A: ``(T, the chosen super groups' columns)``.
    Stage B's KP super groups of ``S >= KP`` columns are the ones with the KP best maxima (all of them when there are
    at most KP); T is the larger of their smallest maximum (PAD_KEY when fewer than KP are chosen) and the largest
    minimum of a chosen group wholly below L."""
    nsg = -(-L // S)
    if S < KP or not 0 < L <= keys.numel():
        raise ValueError(f"filter_threshold_main: need S >= KP and 0 < L <= len(keys); got L={L}, KP={KP}, S={S}")
    t = torch.full((nsg * S,), PAD_KEY, dtype=torch.int64)
    t[:L] = keys[:L].cpu()
    t = t.view(nsg, S)
    chosen = torch.topk(t.max(dim=1).values, min(KP, nsg)).indices
    tile = t[chosen]
    ta = int(tile.max(dim=1).values.min()) if nsg >= KP else PAD_KEY
    full = (chosen + 1) * S <= L
    tb = int(tile[full].min(dim=1).values.max()) if bool(full.any()) else PAD_KEY
    cols = (chosen[:, None] * S + torch.arange(S)[None, :]).reshape(-1)
    return max(ta, tb), cols[cols < L]


def split_programs(rows: int, n: int, sm_count: int, tile: int = 1024) -> int:
    """Programs per row of the split / parallel radix: fill the device about twice, and at least 4 while the call
    has at most twice as many rows as SMs (measured, tune_dev_K.csv: 128 x 256K, k = 2048: 200 µs at P = 2, 157 at
    P = 4; 160 x 256K: 315 at P = 1 (v3.0), 200 at P = 4); at least one tile each, at most 32 (every program sums
    the P x 256 histograms of its row)."""
    P = (2 * sm_count) // max(rows, 1)
    if rows <= 2 * sm_count:
        P = max(P, 4)
    return max(1, min(P, -(-n // tile), 32))


def default_algo(k: int, *, fused: bool = False, rows: int | None = None, n: int | None = None,
                 sm_count: int | None = None) -> str:
    """The algorithm ``impl="triton"`` uses (shapes only): "radix" from :data:`RADIX_MIN_KP`, and from
    :data:`RADIX_PAR_MIN_KP` when the shape gives several radix programs per row (``rows``, ``n``, ``sm_count``
    known); never fused (the radix path runs on block scores); else "hier"."""
    if fused:
        return "hier"
    KP = max(2, _np2(k))
    if RADIX_MIN_KP is not None and KP >= RADIX_MIN_KP:
        return "radix"
    if (RADIX_PAR_MIN_KP is not None and KP >= RADIX_PAR_MIN_KP and rows is not None and n is not None
            and sm_count is not None and split_programs(rows, n, sm_count) > 1):
        return "radix"
    return "hier"


def plan(rows: int, n: int, k: int, facts: dict, *, fused: bool = False, block_size: int = 1,
         algo: str | None = None, **over) -> dict:
    """Launch configuration: ``algo`` "hier" (v2), "fold" (v1) or "radix" (v3, :mod:`dsa_lab.select_radix_triton`;
    ``over`` may set its ``tile``, ``compact``, ``split``, ``num_warps``, ``parallel``, ``short``); None =
    :func:`default_algo`, whose radix choice is the parallel form (v3.4) when the shape gives several programs
    per row and the full-pass form (v3.0) otherwise."""
    auto = algo is None
    sm = int(facts["sm_count"])
    algo = algo or default_algo(k, fused=fused, rows=rows, n=n, sm_count=sm)
    if algo == "hier":
        return plan_hier(rows, n, k, facts, fused=fused, block_size=block_size, **over)
    if algo == "fold":
        return plan_fold(rows, n, k, facts, fused=fused, block_size=block_size, **over)
    if algo == "radix":
        if fused:
            raise ValueError("algo 'radix' has no fused path: select candidate blocks with fused=False")
        bad = set(over) - set(RADIX_DEFAULT)
        if bad:
            raise ValueError(f"radix config takes tile, compact, split, num_warps, parallel, short; got {sorted(bad)}")
        cfg = {"algo": "radix", **RADIX_DEFAULT}
        if auto and split_programs(rows, n, sm) > 1:
            cfg.update(parallel=True, split=None, short=RADIX_SHORT)
        return {**cfg, **over}
    raise ValueError(f"algo must be 'hier', 'fold' or 'radix', got {algo!r}")


def _hier_wrow(cfg: dict, fused: bool) -> int:
    """int64 workspace slots per row of a hier plan: super-group keys (``NSG``), chosen ids (``KP``), level-1 keys
    (``KP * G2 * SC2``), fused, every level-1 group's key (``NSG * G2``), and the threshold filter's candidate slots
    (``fcap + fcapm``, the row's last)."""
    return (cfg["NSG"] + cfg["KP"] + cfg["KP"] * cfg["G2"] * cfg["SC2"] + (cfg["NSG"] * cfg["G2"] if fused else 0)
            + cfg.get("fcap", 0) + cfg.get("fcapm", 0))


def _workspace(slots: int, device) -> torch.Tensor:
    """The hier kernel's int64 row workspace (every slot it reads it writes first; tests poison it here)."""
    return torch.empty((slots,), dtype=torch.int64, device=device)


def main_chain_min(cfg: dict) -> int:
    """The longest row extent ``L`` for which :func:`_hier_kernel` (a ``plan_hier`` plan) takes a path without
    stage A: the direct top-k (``L <= DT``), the narrow, short and second short chains (at most KP super groups of
    their width).  Rows with ``L`` above it stream stage A (the main chain)."""
    KP, S = cfg["KP"], cfg["G1"] * cfg["G2"]
    m = cfg["DT"]
    if cfg["SC3"]:
        m = max(m, KP * cfg["G1S"] * cfg["G2S"])
    if cfg["short_chain"]:
        m = max(m, KP * S * cfg["SC2"])
    return m


def _launch(src, len_t, start_t, out, rows, n, width, k, rr, len_mode, fused, bs, config, flags=None, planned=None,
            ws=None, pdl=False, row_sync=None):
    """``flags``: a ``uint8 [rows, n + 1]`` tensor the hier kernel zeroes and fills (the flags contract) where its
    plan says ``kernel_flags``; otherwise, and for the other algorithms, the flags kernel fills it after.
    ``planned``: a plan already made from ``config`` (``config`` is then not read again).  ``ws`` (unfused hier
    plans only): the row workspace, its stage-A keys already stored by the scores launch
    (:func:`dsa_lab.scores_triton.block_scores_triton`'s ``stage_a``), so one launch of one program per row runs the
    rest (``PHASE = 2``).  ``pdl`` (hier plans in one launch after the scores launch, on a device whose facts say
    ``pdl``): that launch is a programmatic dependent of the scores launch (``GDC``, ``launch_pdl``), so its launch and
    its reads of the row bounds overlap the end of the scores launch.  ``row_sync`` (``rowsync``: hier, one program
    per row, one launch): the counters the scores launch was given as ``row_counters``; the kernel waits for its row's
    done flag instead of the whole scores launch (``RWAIT``; one program per row, so no merge counter shares them)."""
    facts = _impl.facts_for(src)
    cfg = planned
    if cfg is None:
        cfg = plan(rows, n, k, facts, fused=fused, block_size=bs, **(config or {}))
    dev = src.device
    if out is None:
        out = torch.empty((rows, k), dtype=torch.int32, device=dev)
    if rows == 0:
        return out
    if flags is not None and (len_mode != 2 or flags.shape != (rows, n + 1) or flags.dtype != torch.uint8
                              or not flags.is_contiguous()):
        raise ValueError(f"flags must be a contiguous uint8 [{rows}, {n + 1}] tensor of a candidate-block call")
    if cfg["algo"] == "radix":
        from . import select_radix_triton as radix

        radix._launch(src, len_t, start_t, out, rows, n, width, k, rr, len_mode, bs, cfg["tile"],
                      cfg["num_warps"], cfg["compact"], cfg["split"], cfg["parallel"], cfg["short"])
        return _separate_flags(out, flags, width, start_t, bs, rr)
    dummy = out
    lens = len_t if len_t is not None else dummy
    starts = start_t if start_t is not None else dummy
    stride = src.stride(0)
    P, KP = cfg["P"], cfg["KP"]
    if cfg["algo"] == "hier":
        wrow = _hier_wrow(cfg, fused)
        stage_a_done = ws is not None
        if not stage_a_done:
            ws = _workspace(rows * wrow, dev)
        kflags = flags is not None and cfg["kernel_flags"]
        two = cfg["two_phase"] or stage_a_done
        cnt = _counters(dev, rows) if (P > 1 and not two) else dummy
        rw = {}
        if row_sync is not None:
            if P != 1 or two:
                raise ValueError("row_sync needs a hier plan of one program per row in one launch")
            cnt, rw = row_sync, {"RWAIT": True}
        common = dict(RR=rr, KP=KP, G1=cfg["G1"], G2=cfg["G2"], NSG=cfg["NSG"], NT=cfg["NT"], SB=cfg["SB"],
                      KC=cfg["KC"], DT=cfg["DT"], MIN_SG=cfg["MIN_SG"], WROW=wrow,
                      LEN_MODE=len_mode, HAS_START=start_t is not None, FUSED=fused, BS=bs, BSP=_np2(bs),
                      RSEL=cfg["rsel"], SHORTC=cfg["short_chain"], SC2=cfg["SC2"], KC2=cfg["KC2"],
                      FASTA=cfg["fast_a"], DIRECT1D=cfg["direct1d"], SC3=cfg["SC3"], G1S=cfg["G1S"],
                      G2S=cfg["G2S"], KC3=cfg["KC3"], SKEYS=cfg["skeys"], SDIR=cfg["sdir"],
                      AFIRST=cfg["afirst"], L1P=cfg["l1p"], FCAP=cfg["fcap"], FCAPM=cfg["fcapm"], FQ=cfg["fq"],
                      # flags zeroing (tl_zero_flags MODE): 2 none (an earlier launch zeroed them), 1 8-byte words
                      # (16-byte aligned tensor), 0 bytes
                      FZW=2 if cfg["flags_zeroed"] else int(cfg["flags_wide"] and kflags and flags.data_ptr() % 16 == 0))
        if cfg.get("apf"):  # absent when off: the kernels as compiled before the option existed
            common["APF"] = True
        if cfg.get("maxnreg") is not None:  # a launch option (the interpreter ignores it)
            common["maxnreg"] = cfg["maxnreg"]
        if two:  # stage A alone (no counter, no flags), then one program per row for everything else
            if not stage_a_done:
                _hier_kernel[(rows, P)](src, stride, lens, starts, out, ws, dummy, dummy, n, width, k, P,
                                        MULTI=False, FLAGS=False, PHASE=1, num_warps=cfg["num_warps"], **common)
                if cfg["phase_only"] == 1:  # dev timing of stage A alone: nothing else is written
                    return out
            gdc = dict(GDC=True, launch_pdl=True) if pdl and stage_a_done else {}
            _hier_kernel[(rows, 1)](src, stride, lens, starts, out, ws, dummy, flags if kflags else dummy,
                                    n, width, k, 1, MULTI=False, FLAGS=kflags, PHASE=2, num_warps=cfg["num_warps2"],
                                    **common, **gdc)
        else:
            gdc = dict(GDC=True, launch_pdl=True) if pdl else {}
            _hier_kernel[(rows, P)](src, stride, lens, starts, out, ws, cnt, flags if kflags else dummy, n, width,
                                    k, P, MULTI=P > 1, FLAGS=kflags, PHASE=0, num_warps=cfg["num_warps"], **common,
                                    **gdc, **rw)
        return out if kflags else _separate_flags(out, flags, width, start_t, bs, rr)
    CAP = cfg["CAP"]
    if P > 1:
        ws = torch.empty((rows * P * KP,), dtype=torch.int64, device=dev)
        kth = torch.empty((rows * P,), dtype=torch.int64, device=dev)
        scr = torch.empty((rows * CAP,), dtype=torch.int64, device=dev)
        cnt = _counters(dev, rows)
    else:
        ws = kth = scr = cnt = out  # never touched: P == 1 compiles the merge away
    _fold_kernel[(rows, P)](
        src, stride, lens, starts, out, ws, kth, cnt, scr, n, width, k,
        P=P, PP=cfg["PP"], RR=rr, KP=KP, TILE=cfg["TILE"], M=cfg["M"], CAP=CAP, G=cfg["G"],
        LEN_MODE=len_mode, HAS_START=start_t is not None, FUSED=fused, BS=bs, BSP=_np2(bs),
        num_warps=cfg["num_warps"],
    )
    return _separate_flags(out, flags, width, start_t, bs, rr)


def _separate_flags(ids, flags, width, start_t, bs, rr):
    """Flags by their own kernel, for the algorithms that do not write them (radix, fold)."""
    if flags is not None:
        from .flags_triton import fill_flags_triton

        fill_flags_triton(ids, flags, width, start_t, bs, rr)
    return ids


def topk_select_triton(scores, k, lengths=None, row_repeat=1, out=None, *, config=None):
    """Triton arm of :func:`dsa_lab.topk_select` (arguments already validated there).

    Args:
        scores: float32 ``[rows, n]``, unit stride along ``n``.
        k: int ``>= 1`` (any value: not a power of two, above ``n`` or above the live length).
        lengths: int32/int64 ``[rows // row_repeat]`` on the device, or None (= n); read on the
            device only (no host sync); values are clamped to ``[0, n]``.
        row_repeat: rows per length.
        out: optional contiguous int32 ``[rows, k]``.
        config: optional ``plan()`` overrides (``algo``: ``"hier"`` (default), ``"fold"`` or ``"radix"``; sizes), for
            tests and A/B timing.

    Returns:
        int32 ``[rows, k]``: every slot written; selected column ids (in rank order), ``-1`` tail.
        Columns at or past a row's length are never loaded.
    """
    rows, n = scores.shape
    if n == 0:
        res = out if out is not None else torch.empty((rows, k), dtype=torch.int32, device=scores.device)
        res.fill_(-1)
        return res
    return _launch(scores, lengths, None, out, rows, n, n, k, row_repeat,
                   0 if lengths is None else 1, False, 1, config)


def fusable(topk_blocks: int, block_size: int) -> bool:
    """Can the fused kernel serve this shape?  Its last stage holds ``KP * G1 * next_pow2(block_size)``
    logits in registers (``KP = next_pow2(k)``, ``G1`` the level-1 group of :func:`plan_hier`): at most
    4096 (k <= 256 at block_size 8).  Larger (k = 2048, or block_size 64) compiled and ran far too slowly
    on the H200 (``notes/select_kernel.md``, v1)."""
    KP = max(2, _np2(topk_blocks))
    return KP * _group(KP) * _np2(block_size) <= 4096


def select_candidate_blocks_triton(logits, row_ends, topk_blocks, row_starts=None, block_size=8,
                                   row_repeat=1, out=None, *, fused=None, config=None, with_flags=False,
                                   flags_out=None):
    """Triton arm of :func:`dsa_lab.select_candidate_blocks` (arguments validated there).

    ``fused=True``: one kernel reads each row's live logits once, forms block maxima on the fly
    and selects (no scores tensor; the hier kernel only).  ``fused=False``: the unfused composition,
    the bounded :func:`dsa_lab.scores_triton.block_scores_triton` (slots past each row's extent left
    unwritten: the select kernel never reads them) then the select kernel over the live block extent.
    ``fused=None`` (default): unfused.  Measured on the H200 at k = 64 (``data/h200/tune_dev_E.csv``,
    ``notes/select_kernel.md``): the unfused composition was faster at 1-32 rows at every context and at
    every row count from 64K context on (640 x 256K: 261 vs 454 µs; the fused stage A streams logits at
    ~1.2-1.5 TB/s, the scores kernel at ~3 TB/s); the fused kernel won only at 4K-16K with 160-640 rows,
    which a rule from shapes (the width, not the live extent) cannot tell apart.  Both read the bounds on
    the device only.

    ``with_flags=True``: also the candidate flags (``uint8 [rows, nblocks + 1]``, the contract of
    :func:`dsa_lab.candidate_flags`), returned as ``(ids, flags)``, with no memset and no flags launch: unfused, the
    scores launch zeroes them (:data:`UNFUSED_FLAGS_IN_SCORES`) and the hier kernel sets the selected bytes; fused,
    the hier kernel zeroes and sets them in its own launch (each row's programs zero a slice before they arrive; the
    program that finishes the row sets the bytes).  The radix path, and the fused kernel at more than twice as many
    rows as SMs (measured slower with the flags inside), run the flags kernel after the selection.

    Returns int32 ``[rows, topk_blocks]`` block ids (any order), ``-1`` tail; every slot written.
    """
    rows, width = logits.shape
    bs = int(block_size)
    nblocks = -(-width // bs)
    flags = None
    if with_flags:  # flags_out: a given tensor to write (tests poison it); every byte is written
        flags = flags_out if flags_out is not None else torch.empty((rows, nblocks + 1), dtype=torch.uint8,
                                                                    device=logits.device)
    if nblocks == 0:
        res = out if out is not None else torch.empty((rows, topk_blocks), dtype=torch.int32, device=logits.device)
        res.fill_(-1)
        return (res, flags.zero_()) if with_flags else res
    if fused is None:
        fused = False  # measured: see the docstring; fused=True + algo radix raises in plan()
    cfg = dict(config or {})
    whole = cfg.pop("scores_whole", None)  # unfused: the scores kernel's whole_tiles (dev A/B)
    fz = cfg.pop("flags_in_scores", None)  # unfused: the scores launch zeroes the flags (dev A/B)
    sprog = cfg.pop("scores_programs", None)  # unfused: the scores kernel's programs per row (dev A/B)
    smult = cfg.pop("scores_mult", None)  # unfused: ... or its rule's multiple of the SM count (dev A/B)
    stile = cfg.pop("scores_tile", None)  # unfused: the scores kernel's blocks per tile (dev A/B)
    swarps = cfg.pop("scores_warps", None)  # unfused: ... and its warps per program (dev A/B)
    sa = cfg.pop("scores_a", None)  # unfused: the scores launch also stores stage A's keys (dev A/B)
    ssched = cfg.pop("scores_sched", None)  # unfused: the scores launch's schedule, "rows" / "live" (dev A/B)
    pdl = cfg.pop("pdl", None)  # unfused: the select launch a programmatic dependent of the scores launch (dev A/B)
    pdl_early = cfg.pop("pdl_early", None)  # ... and the scores programs let it launch as they start (dev A/B)
    tail = cfg.pop("tail", None)  # unfused: one launch, each row's last scores program selects it (dev A/B)
    rsync = cfg.pop("rowsync", None)  # unfused: the select waits per row for the scores launch (dev A/B)
    sregs = cfg.pop("scores_maxnreg", None)  # unfused: the scores kernel's register bound (dev A/B)
    if fused:
        ids = _launch(logits, row_ends, row_starts, out, rows, nblocks, width, topk_blocks, row_repeat,
                      2, True, bs, cfg, flags)
        return (ids, flags) if with_flags else ids
    from .scores_triton import SCORES_SCHEDULE, block_scores_triton, tile_blocks

    fz = UNFUSED_FLAGS_IN_SCORES if fz is None else bool(fz)
    facts = _impl.facts_for(logits)
    p = plan(rows, nblocks, topk_blocks, facts, fused=False, block_size=bs, **cfg)
    hier = p["algo"] == "hier"
    if UNFUSED_TAIL if tail is None else bool(tail):
        from .tail_triton import tail_select_launch

        if sregs is not None or p.get("maxnreg") is not None:
            raise ValueError("scores_maxnreg / maxnreg bound the two launches; tail is one launch of its own kernel")
        ids = tail_select_launch(logits, row_ends, row_starts, out, flags, p, topk_blocks, bs, row_repeat,
                                 programs=sprog, mult=smult, tile=stile, num_warps=swarps, whole_tiles=whole)
        return (ids, flags) if with_flags else ids
    fz = fz and flags is not None and hier and p["kernel_flags"]  # else the flags kernel zeroes and sets them after
    # stage A's keys by the scores launch: hier plans whose super groups tile the scores launch's tiles
    if sa and (not hier or p["two_phase"]):
        raise ValueError("scores_a needs the hier select in one launch (algo 'hier', two_phase off)")
    bj = tile_blocks(nblocks, bs) if stile is None else int(stile)
    S = p["G1"] * p["G2"] if hier else 0
    if sa is None:
        on = UNFUSED_STAGE_A_IN_SCORES
        if on is None:
            on = _scores_a_rule(rows, int(facts["sm_count"]))
        sa = on and hier and not p["two_phase"] and bj % S == 0
    ws = stage_a = None
    if sa:
        if bj % S:
            raise ValueError(f"scores_a: the super group ({S} blocks) must divide the scores tile ({bj} blocks)")
        wrow = _hier_wrow(p, False)
        ws = _workspace(rows * wrow, logits.device)
        stage_a = (ws, wrow, S, main_chain_min(p))
    rule_mult = None
    if pdl is None and UNFUSED_PDL is None:  # the measured rule: the early signal with it, maybe a smaller grid
        pdl, rule_mult = _pdl_rule(rows, int(facts["sm_count"]))
        pdl_early = pdl if pdl_early is None else pdl_early
    pdl = UNFUSED_PDL if pdl is None else bool(pdl)
    pdl = pdl and hier and bool(facts.get("pdl")) and (sa or not p["two_phase"])
    early = pdl and (UNFUSED_PDL_EARLY if pdl_early is None else bool(pdl_early))
    if early and smult is None and sprog is None:  # the rule's grid was measured with the early signal only
        smult = rule_mult
    rsync = (UNFUSED_ROWSYNC if rsync is None else bool(rsync)) and hier and p["P"] == 1 and not p["two_phase"] \
        and not sa and (ssched or SCORES_SCHEDULE) == "rows"
    rc = None
    if rsync:  # [0, rows) the rows' arrivals, [rows, 2 rows) their done flags; all back at 0 after the call
        rc = _counters(logits.device, 2 * rows)
    sc = block_scores_triton(logits, row_ends, row_starts, bs, row_repeat, fill_dead=False,
                             whole_tiles=whole, programs=sprog, tile=stile, num_warps=swarps, mult=smult,
                             zero_flags=flags if fz else None, stage_a=stage_a, schedule=ssched,
                             launch_dependents=early, row_counters=rc, maxnreg=sregs)  # read < extent only
    if fz:
        p["flags_zeroed"] = True
    ids = _launch(sc, row_ends, row_starts, out, rows, nblocks, width, topk_blocks, row_repeat,
                  2, False, bs, cfg, flags, planned=p, ws=ws, pdl=pdl, row_sync=rc)
    return (ids, flags) if with_flags else ids
