"""Exact top-k by nested group maxima ("hier"): the select for ``k <= 256``, and for ``k <= 512`` at many rows.

Columns form aligned level-1 groups of ``G1`` and super groups of ``S = G1 * G2``.  The top-KP keys
(``KP = next_pow2(k)``) lie in the top-KP level-1 groups ranked by their best key (a group holding one of them has
a best key at or above the KP-th key, and at most KP groups do), and those lie in the top-KP super groups.  So:

* **A**: the row is streamed once, by up to ``P`` programs, each storing one best key per super group to the row's
  workspace (fused: also every level-1 group's);
* **B**: top-KP super groups; **C**: their level-1 maxima, top-KP of those; **D**: top-KP of those groups' columns.

B-D are a few ``tl.topk`` over ``KP * 8`` keys whatever the live extent is.  Rows whose extent is short take a
shorter path, decided on the device: one direct top-k (``L <= DT``), or C-D over every super group when there are at
most KP of them (the short chain, and for k <= 64 a narrow chain with level-1 groups of ``G1 / 2`` and a wide one
with super groups twice as wide).  With several programs per row the last to arrive (an ``acq_rel`` counter per row,
reset by it) runs B-D.  ``RSEL`` (KP >= 512): every top-k is a register radix select (:func:`_reg_select`) instead.

Fused (``FUSED``): the kernel reads logits, and each block's score is formed on the fly (the block-scores contract),
so no scores tensor exists.  Every value-dependent quantity -- each row's extent, its split among the ``P``
programs, which programs are active -- is read or derived on the device, so a call captures in a CUDA graph.  Shape
integers (rows, width, lengths, strides, ``P``) are run-time arguments: they never select a compiled kernel.

``tl.topk`` is always given at least ``KP`` keys: with fewer it returned wrong results on the GPU.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .common import (
    NEG_HI,
    PAD,
    pick_digit,
    row_extent,
    set_flags,
    tl_block_score,
    tl_is_candidate,
    tl_key_index,
    tl_ordered_hi,
    tl_pack_key,
    write_ranked,
    write_selected,
    zero_flags,
)
from .common import tl_cuda as _tl_cuda


# ------------------------------------------------------------------------------------------------- tile helpers
@triton.jit
def _scores2d(src_ptr, row_off, cols, valid, start, end, width, FUSED: tl.constexpr, BS: tl.constexpr,
              BSP: tl.constexpr):
    """Scores of a 2-D tile of columns (fused: block ids, scores formed from the logits, never loading a logit
    outside ``[start, min(end, width))``).  Lanes where ``~valid`` load nothing (callers mask them)."""
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
def _scores2d_whole(src_ptr, base_off, rel, cols, start, end, FUSED: tl.constexpr, BS: tl.constexpr,
                    BSP: tl.constexpr):
    """:func:`_scores2d` of a tile lying wholly inside the row's extent, its first element at ``src_ptr +
    base_off``: no bounds mask and 32-bit offsets ``rel``, so the loads vectorize (a per-element mask forces 4-byte
    loads)."""
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
def _keys2d(src_ptr, row_off, cols, valid, start, end, width, FUSED: tl.constexpr, BS: tl.constexpr,
            BSP: tl.constexpr):
    """Packed keys of a 2-D tile of columns (fused: block ids); PAD where ``~valid``."""
    sc = _scores2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
    return tl.where(valid, tl_pack_key(sc, cols), PAD)


@triton.jit
def _l1_keys_whole(src_ptr, base_off, s0, start, end, NT: tl.constexpr, G1: tl.constexpr, G2: tl.constexpr,
                   BS: tl.constexpr):
    """Fused stage A on ``NT`` super groups wholly inside the row's extent (``BS`` a power of two): the best key of
    each of their ``NT * G2`` level-1 groups.  One contiguous load of ``NT * S * BS`` logits (so a warp reads
    contiguous bytes), the block max in the ordered-integer domain (NaN as ``0x7FFFFFFF``, the newest block pinned
    to ``+inf``'s word), one int64 max of packed keys per level-1 group: the bits of :func:`_scores2d` then
    :func:`_best_per_row`."""
    S: tl.constexpr = G1 * G2
    x = tl.load(src_ptr + base_off + tl.arange(0, NT * S * BS))
    h = tl.max(tl_ordered_hi(tl.reshape(x, [NT * G2, G1, BS])), axis=2)
    cols = (s0 * S + tl.arange(0, NT * G2)[:, None] * G1 + tl.arange(0, G1)[None, :]).to(tl.int64)
    newest = tl.where(end > start, (end - start - 1) // BS, -1)
    h = tl.where(cols == newest, 0x7F800000, h)
    return tl.max((h.to(tl.int64) << 32) | (0xFFFFFFFF - cols), axis=1)


@triton.jit
def _best_per_row(sc, cols, valid):
    """Best key of each row of a 2-D tile (``max`` of packed keys along axis 1) in 32-bit: the largest ordered
    word, then the smallest column holding it; PAD for an all-masked row."""
    h = tl.where(valid, tl_ordered_hi(sc), -2147483648)
    hm = tl.max(h, axis=1)
    idx = tl.min(tl.where(h == hm[:, None], cols, 2147483647), axis=1)
    key = (hm.to(tl.int64) << 32) | (0xFFFFFFFF - idx.to(tl.int64))
    return tl.where(hm == -2147483648, PAD, key)


@triton.jit
def _first_col_keys(sc, grp, valid, GS: tl.constexpr):
    """Ranking keys of the groups ``grp`` (rows of a 2-D tile, ``GS`` columns each): the largest ordered word with
    the group's *first* column in the low word.  Groups are disjoint aligned ranges, so the ranking equals that of
    :func:`_best_per_row`'s keys, and stage B only takes the group from it: one max reduction, no argmin."""
    h = tl.where(valid, tl_ordered_hi(sc), -2147483648)
    hm = tl.max(h, axis=1)
    key = (hm.to(tl.int64) << 32) | (0xFFFFFFFF - grp.to(tl.int64) * GS)
    return tl.where(hm == -2147483648, PAD, key)


@triton.jit
def _sorted_top(keys, KP: tl.constexpr, TILE: tl.constexpr):
    """Top-KP of a TILE-wide key tile, sorted descending (TILE >= KP)."""
    if TILE > KP:
        return tl.topk(keys, KP)
    else:
        return tl.sort(keys, descending=True)


@triton.jit
def _fold(top, new):
    """Top-KP of the union of two sorted-descending KP lists, sorted descending."""
    return tl.sort(tl.maximum(top, tl.flip(new, 0)), descending=True)


# -------------------------------------------------------------------------------------- register radix select
@triton.jit
def _reg_select(h, cand, k):
    """The top-``k`` candidates of a 1-D register tile by radix select: returns ``(mask, count)``.

    ``h``: the signed ordered words (int32); ties go to the earlier position, so callers keep tiles in column
    order and this is the contract's ranking.  8-bit digits from the top (the first of the signed word is
    ``(h >> 24) + 128``); it stops once the threshold digit's whole bin is needed, and a prefix sum breaks ties
    only when the last bin is split.  Cost: one 256-bin histogram of the tile per digit, no data movement."""
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
            b, hb, rem = pick_digit(hist, rem, bins)
            if d == 0:
                pre = b - 128
            else:
                pre = pre * 256 + b
            fin = rem == hb  # the whole bin is needed: everything at or above the prefix
            if d == 3:
                fin = fin | True  # all 32 bits fixed: ties break by position
            if fin:
                prefix = pre
                shift = shift * 0 + sh
                need = rem
                done = done | fin
    v = h >> shift
    above = cand & (v > prefix)
    eq = cand & (v == prefix)
    sel = above | eq
    if need < tl.sum(eq.to(tl.int32)):  # the threshold bin is split: its first `need` by position
        sel = above | (eq & (tl.cumsum(eq.to(tl.int32), 0) <= need))
    sel = tl.where(ncand <= k, cand, sel)
    return sel, tl.minimum(ncand, k)


# ---------------------------------------------------------------------------------------------------- stages B-D
@triton.jit
def _chain(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, nsg, nsg16, wbase, start, end, width, k,
           FLAGS: tl.constexpr, KP: tl.constexpr, G1: tl.constexpr, G2: tl.constexpr, SB: tl.constexpr,
           KC: tl.constexpr, FUSED: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr, RSEL: tl.constexpr,
           NOA: tl.constexpr, L1P: tl.constexpr, FOLD: tl.constexpr):
    """Stages B-D of one row (and its flags' bytes, already zeroed).  ``NOA`` (no stage A): the row has at most KP
    super groups, all chosen, so B needs no maxima and C forms the level-1 maxima from the columns (fused: logits).

    Workspace of the row from ``wbase``: ``[0, 16 * nsg16)`` super-group keys (stage A), then KP chosen ids, then
    ``KP * G2`` level-1 keys, then (fused) every level-1 group's key.  C's level-1 keys pass through the workspace
    so the top-k gets a plain 1-D layout (a reduction leaves its result replicated over the reduced lanes, and a
    top-k over that layout repeats its work).  ``L1P``: rows without stage A whose C ranks at least ``L1P``
    level-1 keys rank adjacent pairs of them first (a group among the top KP lies in a pair among the top KP)."""
    S: tl.constexpr = G1 * G2
    ids_base = wbase + nsg16 * 16  # every region starts 16-slot aligned, provably: vector loads
    l1_base = ids_base + KP
    jk = tl.arange(0, KP)
    # B: the top-KP super groups by their best key
    if NOA:
        sg = tl.where(jk < nsg, jk, -1).to(tl.int64)  # every super group, in column order
    elif RSEL:
        sg = tl.where(jk < nsg, jk, -1).to(tl.int64)
        if nsg > KP:
            jb = tl.arange(0, SB)
            x = tl.load(ws_ptr + wbase + jb, mask=jb < nsg, other=PAD, cache_modifier=".cg")
            if not FOLD:  # one register tile: radix select, compacted in column order
                selb, cntb = _reg_select((x >> 32).to(tl.int32), tl_is_candidate(x), k)
                tl.store(ws_ptr + ids_base + tl.cumsum(selb.to(tl.int32), 0) - 1, jb, mask=selb)
                tl.debug_barrier()
                sg = tl.load(ws_ptr + ids_base + jk, mask=jk < cntb, other=-1, cache_modifier=".cg")
            else:  # wide rows: the bitonic fold, then back to column order
                top = _sorted_top(x, KP, SB)
                for s0 in range(SB, nsg, SB):
                    x = tl.load(ws_ptr + wbase + s0 + jb, mask=s0 + jb < nsg, other=PAD, cache_modifier=".cg")
                    top = _fold(top, _sorted_top(x, KP, SB))
                sg = tl.sort(tl.where(top != PAD, tl_key_index(top) // S, -1))
    else:
        if nsg <= KP:  # every super group is chosen (C ignores order)
            top = tl.load(ws_ptr + wbase + jk, mask=jk < nsg, other=PAD, cache_modifier=".cg")
        else:
            jb = tl.arange(0, SB)
            top = _sorted_top(tl.load(ws_ptr + wbase + jb, mask=jb < nsg, other=PAD, cache_modifier=".cg"), KP, SB)
            if FOLD:  # rows of more than SB super groups (the plans send none to a kernel without it)
                for s0 in range(SB, nsg, SB):
                    x = tl.load(ws_ptr + wbase + s0 + jb, mask=s0 + jb < nsg, other=PAD, cache_modifier=".cg")
                    top = _fold(top, _sorted_top(x, KP, SB))
        sg = tl.where(top != PAD, tl_key_index(top) // S, -1)
    # C: level-1 maxima (G1 columns each) inside the chosen super groups
    js = tl.arange(0, S)
    if FUSED and not NOA:  # stage A stored every level-1 key: gather KP * G2 of them, no logits re-read
        j2 = tl.arange(0, G2)
        l1 = tl.load(ws_ptr + l1_base + KP * G2 + sg[:, None] * G2 + j2[None, :], mask=sg[:, None] >= 0,
                     other=PAD, cache_modifier=".cg")
        l1 = tl.reshape(l1, [KP * G2])
    elif KC == KP:  # the whole [KP, S] tile at once
        cols = sg[:, None] * S + js[None, :]
        valid = (sg[:, None] >= 0) & (cols < L)
        kk = _keys2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
        jl = tl.arange(0, KP * G2)
        tl.store(ws_ptr + l1_base + jl, tl.max(tl.reshape(kk, [KP * G2, G1]), axis=1))
        tl.debug_barrier()
        l1 = tl.load(ws_ptr + l1_base + jl, cache_modifier=".cg")
    else:  # KC super groups at a time, through the row's workspace
        tl.store(ws_ptr + ids_base + jk, sg)
        tl.debug_barrier()
        jc = tl.arange(0, KC)
        jl = tl.arange(0, KC * G2)
        for c0 in range(0, tl.minimum(nsg, KP), KC):  # chunks past the row's super groups hold no column
            g = tl.load(ws_ptr + ids_base + c0 + jc, cache_modifier=".cg")
            cols = g[:, None] * S + js[None, :]
            valid = (g[:, None] >= 0) & (cols < L)
            kk = _keys2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
            tl.store(ws_ptr + l1_base + c0 * G2 + jl, tl.max(tl.reshape(kk, [KC * G2, G1]), axis=1))
        tl.debug_barrier()
        jall = tl.arange(0, KP * G2)
        l1 = tl.load(ws_ptr + l1_base + jall, mask=jall < nsg * G2, other=PAD, cache_modifier=".cg")
    jg = tl.arange(0, G1)
    if RSEL:  # C-D by radix select; chosen groups compacted in column order through the workspace
        gid = tl.reshape(sg[:, None] * G2 + tl.arange(0, G2)[None, :], [KP * G2])
        sel1, cnt1 = _reg_select((l1 >> 32).to(tl.int32), tl_is_candidate(l1), k)
        tl.debug_barrier()  # every read of the level-1 slots is done before they are reused
        tl.store(ws_ptr + l1_base + tl.cumsum(sel1.to(tl.int32), 0) - 1, gid, mask=sel1)
        tl.debug_barrier()
        g1 = tl.load(ws_ptr + l1_base + jk, mask=jk < cnt1, other=-1, cache_modifier=".cg")
        cols = g1[:, None] * G1 + jg[None, :]
        valid = (g1[:, None] >= 0) & (cols < L)
        sc = _scores2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
        h = tl.reshape(tl_ordered_hi(sc), [KP * G1])
        sel, cnt = _reg_select(h, tl.reshape(valid, [KP * G1]) & (h > NEG_HI), k)
        write_selected(out_ptr, row, tl.reshape(cols, [KP * G1]), sel, cnt, k, KP)
        if FLAGS:
            set_flags(flags_ptr, row, tl.reshape(cols, [KP * G1]), sel, start, width, n, BS)
    else:
        if L1P > 0 and NOA and G2 >= 2 and KP * G2 >= L1P:
            # super group i is the row's i-th, so level-1 slot j holds group j; a pair never straddles a super group
            jp = tl.arange(0, KP * G2 // 2)
            pv = 2 * jp < nsg * G2
            pm = tl.maximum(tl.load(ws_ptr + l1_base + 2 * jp, mask=pv, other=PAD, cache_modifier=".cg"),
                            tl.load(ws_ptr + l1_base + 2 * jp + 1, mask=pv, other=PAD, cache_modifier=".cg"))
            tp = tl.topk(pm, KP)
            pid = tl.where(tp != PAD, tl_key_index(tp) // (2 * G1), -1)
            lid = pid[:, None] * 2 + tl.arange(0, 2)[None, :]
            l1 = tl.reshape(tl.load(ws_ptr + l1_base + lid, mask=pid[:, None] >= 0, other=PAD, cache_modifier=".cg"),
                            [2 * KP])
        t1 = tl.topk(l1, KP)
        g1 = tl.where(t1 != PAD, tl_key_index(t1) // G1, -1)
        # D: the chosen level-1 groups' columns
        cols = g1[:, None] * G1 + jg[None, :]
        valid = (g1[:, None] >= 0) & (cols < L)
        kk = _keys2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
        if G1 > 1:
            top = tl.topk(tl.reshape(kk, [KP * G1]), KP)
        else:
            top = tl.sort(tl.reshape(kk, [KP]), descending=True)
        write_ranked(out_ptr, row, top, k, KP)
        if FLAGS:
            set_flags(flags_ptr, row, tl_key_index(top), (jk < k) & tl_is_candidate(top), start, width, n, BS)


# --------------------------------------------------------------------------------------------------------- kernel
@triton.jit(do_not_specialize=["src_stride", "n", "width", "k", "P", "rr", "nsg16", "wrow16", "min_sg", "has_len",
                               "fast", "a_done"])
def _hier_kernel(
    src_ptr, src_stride, len_ptr, start_ptr, out_ptr, ws_ptr, cnt_ptr, flags_ptr,
    n, width, k, P, rr, nsg16, wrow16, min_sg, has_len, fast, a_done,
    KP: tl.constexpr, G1: tl.constexpr, G2: tl.constexpr, NT: tl.constexpr, SB: tl.constexpr, KC: tl.constexpr,
    DT: tl.constexpr, SC2: tl.constexpr, KC2: tl.constexpr, SC3: tl.constexpr, G1S: tl.constexpr,
    G2S: tl.constexpr, KC3: tl.constexpr, L1P: tl.constexpr, RSEL: tl.constexpr, BLOCK_SCORES: tl.constexpr,
    FUSED: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr, HAS_START: tl.constexpr, FLAGS: tl.constexpr,
    ZERO_FLAGS: tl.constexpr, PDL: tl.constexpr, FOLD: tl.constexpr, ALIGNED: tl.constexpr,
):
    """Grid ``(rows, P)``.  Run-time flags: ``has_len`` (lengths given), ``fast`` (stage-A tiles wholly inside the
    extent load without a mask, as 16-byte vectors: only where the source's row stride is a multiple of 16),
    ``a_done`` (the scores launch stored stage A's keys: one program per row runs B-D).  ``FLAGS``: write the row's
    flags (``ZERO_FLAGS``: how to zero them first, the mode of :func:`dsa_lab.kernels.common.zero_flags`; 2: already
    zeroed).  ``PDL``: launched as a programmatic dependent of the scores launch; the row's bounds are read before
    ``griddepcontrol.wait``, everything that launch writes after it.  ``FOLD``: stage B takes rows of more than SB
    super groups.  ``ALIGNED``: the source's row stride is a multiple of 16, and the row offsets are computed so
    that the compiler can prove it: that knowledge shapes the layouts of the whole kernel (its top-k networks
    included), not only the vector width of the loads, so the launchers keep it true for every unfused call (the
    select copies an unaligned input); the workspace's layout comes in units of 16 slots (``nsg16``, ``wrow16``)
    for the same reason."""
    S: tl.constexpr = G1 * G2
    row = tl.program_id(0)
    p = tl.program_id(1)
    L, start, end = row_extent(row, len_ptr, start_ptr, n, width, rr, has_len, HAS_START, BLOCK_SCORES, BS)
    if PDL:
        _tl_cuda.gdc_wait()
    if ALIGNED:
        row_off = row.to(tl.int64) * (src_stride // 16) * 16
    else:
        row_off = row.to(tl.int64) * src_stride
    wbase = row.to(tl.int64) * wrow16 * 16
    own = p == 0
    if L <= DT:  # direct: one top-k over the row
        if own:
            if FLAGS:
                zero_flags(flags_ptr, row, 0, n + 1, n, ZERO_FLAGS)
                tl.debug_barrier()
            jd = tl.arange(0, DT)
            cols = jd[:, None]
            if RSEL:
                sc = _scores2d(src_ptr, row_off, cols, cols < L, start, end, width, FUSED, BS, BSP)
                h = tl.reshape(tl_ordered_hi(sc), [DT])
                sel, cnt = _reg_select(h, (jd < L) & (h > NEG_HI), k)
                write_selected(out_ptr, row, jd, sel, cnt, k, KP)
                if FLAGS:
                    set_flags(flags_ptr, row, jd, sel, start, width, n, BS)
            else:
                kk = tl.reshape(_keys2d(src_ptr, row_off, cols, cols < L, start, end, width, FUSED, BS, BSP), [DT])
                top = _sorted_top(kk, KP, DT)
                write_ranked(out_ptr, row, top, k, KP)
                if FLAGS:
                    set_flags(flags_ptr, row, tl_key_index(top), (tl.arange(0, KP) < k) & tl_is_candidate(top),
                              start, width, n, BS)
    elif SC3 and (L + G1S * G2S - 1) // (G1S * G2S) <= KP:
        # narrow chain: at most KP super groups of G1S * G2S columns; level-1 groups of G1S (< G1) make D smaller
        if own:
            if FLAGS:
                zero_flags(flags_ptr, row, 0, n + 1, n, ZERO_FLAGS)
                tl.debug_barrier()
            _chain(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, (L + G1S * G2S - 1) // (G1S * G2S),
                   nsg16, wbase, start, end, width, k, FLAGS,
                   KP, G1S, G2S, SB, KC3, FUSED, BS, BSP, RSEL, True, L1P, FOLD)
    elif (L + S - 1) // S <= KP:
        # short chain: every super group is chosen, so stage A buys nothing; program 0 runs C-D alone
        if own:
            if FLAGS:
                zero_flags(flags_ptr, row, 0, n + 1, n, ZERO_FLAGS)
                tl.debug_barrier()
            _chain(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, (L + S - 1) // S, nsg16,
                   wbase, start, end, width, k, FLAGS,
                   KP, G1, G2, SB, KC, FUSED, BS, BSP, RSEL, True, L1P, FOLD)
    elif SC2 > 1 and (L + S * SC2 - 1) // (S * SC2) <= KP:
        # wide chain: super groups SC2 times wider (level-1 groups unchanged), still at most KP of them
        if own:
            if FLAGS:
                zero_flags(flags_ptr, row, 0, n + 1, n, ZERO_FLAGS)
                tl.debug_barrier()
            _chain(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, (L + S * SC2 - 1) // (S * SC2),
                   nsg16, wbase, start, end, width, k, FLAGS,
                   KP, G1, G2 * SC2, SB, KC2, FUSED, BS, BSP, RSEL, True, L1P, FOLD)
    else:  # main chain: stage A, then B-D by the row's last program
        nsg = (L + S - 1) // S
        chunk = tl.maximum((nsg + P - 1) // P, min_sg)  # the split, derived on the device from L
        n_act = (nsg + chunk - 1) // chunk
        if p < n_act:
            if FLAGS:  # each active program zeroes one slice of the row's flags before it arrives
                fper = (n + 1 + n_act - 1) // n_act
                zero_flags(flags_ptr, row, p * fper, tl.minimum(p * fper + fper, n + 1), n, ZERO_FLAGS)
            if a_done == 0:
                lo = p * chunk
                hi = tl.minimum(lo + chunk, nsg)
                jt = tl.arange(0, NT)
                js = tl.arange(0, S)
                for s0 in range(lo, hi, NT):  # A: stream the chunk once; one best key per super group
                    sg = s0 + jt
                    cols = sg[:, None] * S + js[None, :]
                    valid = (sg[:, None] < hi) & (cols < L)
                    if FUSED:
                        fend = tl.minimum(end, width) - start
                        if BSP == BS:  # whole tiles: one contiguous load, level-1 keys in the integer domain
                            if (fast != 0) & (s0 + NT <= hi) & ((s0 + NT) * (S * BS) <= fend):
                                l1k = _l1_keys_whole(src_ptr, row_off + start + s0 * (S * BS), s0, start, end,
                                                     NT, G1, G2, BS)
                            else:
                                sc = _scores2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
                                l1k = _best_per_row(tl.reshape(sc, [NT * G2, G1]), tl.reshape(cols, [NT * G2, G1]),
                                                    tl.reshape(valid, [NT * G2, G1]))
                        else:
                            if (fast != 0) & (s0 + NT <= hi) & ((s0 + NT) * (S * BS) <= fend):
                                sc = _scores2d_whole(src_ptr, row_off + start + s0 * (S * BS),
                                                     jt[:, None] * S + js[None, :], cols, start, end, FUSED, BS, BSP)
                            else:
                                sc = _scores2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
                            l1k = _best_per_row(tl.reshape(sc, [NT * G2, G1]), tl.reshape(cols, [NT * G2, G1]),
                                                tl.reshape(valid, [NT * G2, G1]))
                        # every level-1 key (8 bytes per G1 blocks), so stage C need not re-read logits
                        jl = s0 * G2 + tl.arange(0, NT * G2)
                        tl.store(ws_ptr + wbase + nsg16 * 16 + KP + KP * G2 + jl, l1k, mask=jl < hi * G2)
                        best = tl.max(tl.reshape(l1k, [NT, G2]), axis=1)
                    else:
                        if (fast != 0) & (s0 + NT <= hi) & ((s0 + NT) * S <= L):
                            sc = _scores2d_whole(src_ptr, row_off + s0 * S, jt[:, None] * S + js[None, :], cols,
                                                 start, end, FUSED, BS, BSP)
                        else:
                            sc = _scores2d(src_ptr, row_off, cols, valid, start, end, width, FUSED, BS, BSP)
                        best = _first_col_keys(sc, sg, valid, S)
                    tl.store(ws_ptr + wbase + sg, best, mask=sg < hi)
                tl.debug_barrier()
            last = n_act == 1
            if n_act > 1:  # several programs: the last to arrive runs B-D
                last = tl.atomic_add(cnt_ptr + row, 1, sem="acq_rel") == n_act - 1
            if last:
                tl.debug_barrier()
                _chain(src_ptr, row_off, out_ptr, ws_ptr, flags_ptr, n, row, L, nsg, nsg16, wbase, start, end,
                       width, k, FLAGS, KP, G1, G2, SB, KC, FUSED, BS, BSP, RSEL, False, L1P, FOLD)
                if n_act > 1:
                    tl.store(cnt_ptr + row, 0)  # reset for the next call / graph replay
