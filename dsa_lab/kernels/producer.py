"""Triton kernels of the producer: paged FP8 MQA logits, the bounded sanitize, and the e4m3fn upcast.

Import only when a Triton kernel is about to run (``TRITON_INTERPRET`` is read at decoration time).
Public entry points with the full contract live in :mod:`dsa_lab.producer`; the launchers here assume
checked inputs.

Logits kernel design (memory-bound at small next_n, tensor-core bound at next_n ~5 on H200: one token costs
``D + 4`` bytes and ``2 * next_n * H * D`` flops, i.e. ~620 flop/byte at next_n = 5, H = 64, above the H200's
fp8-flops / bandwidth ratio of ~430):

* grid ``(B, splits)``, ``splits`` from shapes only (batch, table width, SM count, ``WAVES``): graph-capturable;
  every per-row end is read on the device.  Program ``(b, s)`` walks tiles ``s, s + splits, ...`` of
  sequence ``b`` up to ``cdiv(seq_end, BLOCK_T)`` — a dynamic loop bound, so short sequences cost only
  a cheap early exit, whatever the padded width.
* one tile = ``BLOCK_T`` tokens, gathered row by row through the block table (so ``BLOCK_T`` need not
  equal ``block_kv``); its fp8 keys are loaded **once** and reused for all ``next_n`` rows and all ``H``
  heads: ``S_n = K_tile @ Q_n^T`` (fp32 accumulate), ``relu``, weight, sum over heads, times the scale.
  Tokens past the sequence end re-read its last token (clamped index) instead of masked loads: every load
  stays in bounds without a mask (an fp8 ``other=`` does not cast), and the sm_90 TTGIR shows the key,
  scale and block-table loads turned into pipelined ``cp.async`` copies.
* ``HOIST_Q``: q, weights and row ends of all rows (``next_n <= 8``, at most 64 KiB of q) are loaded before the
  tile loop; the streamed keys are the MMA's A operand (M = ``BLOCK_T``).
* ``FP8_DOT``: e4m3fn operands straight into ``tl.dot`` (sm_89+; wgmma on sm_90); otherwise the cache and
  q are loaded as bytes and decoded to fp32 with integer ops (:func:`_e4m3fn_to_f32`), then an IEEE fp32
  dot: the path the interpreter takes (numpy has no fp8), any device without fp8 MMA, and ROCm for now.
* stores are masked by each row's own end: columns at or past it are never written.
* the epilogue can also hand the consumer what it reads (``SANITIZE``, ``SBS``, ``ZF``): the logits written as
  ``nan_to_num(nan=-inf)``, the row's block scores (the contract of :mod:`dsa_lab.scores`, over blocks of ``SBS``
  columns that start inside the row's window), and the candidate flags zeroed, while the tile is still in
  registers: the bounded sanitize and the block-scores pass, which would read every logit back, are not launched.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .. import _impl
from . import run
from .common import tl_block_score, zero_flags


@triton.jit
def _e4m3fn_to_f32(u):
    """e4m3fn bytes (any int tensor holding 0..255) → float32, bit-exact with torch's conversion."""
    u = u.to(tl.int32) & 0xFF
    sign = (u >> 7) << 31
    e = (u >> 3) & 0xF
    m = u & 0x7
    normal = sign | ((e + 120) << 23) | (m << 20)  # rebias 7 → 127, 3-bit mantissa on top
    sub = (m.to(tl.float32) * 0.001953125).to(tl.int32, bitcast=True) | sign  # M * 2^-9, exact
    bits = tl.where(e == 0, sub, normal)
    bits = tl.where((u & 0x7F) == 0x7F, sign | 0x7FC00000, bits)  # S.1111.111 is NaN
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _e4m3fn_decode_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, _e4m3fn_to_f32(tl.load(x_ptr + offs, mask=m, other=0)), mask=m)


def e4m3fn_decode_triton(bits):
    """Decode a uint8 tensor of e4m3fn codes to float32 with :func:`_e4m3fn_to_f32` (for tests)."""
    import torch

    x = bits.contiguous().view(-1)
    y = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    BLOCK = 256
    _e4m3fn_decode_kernel[(triton.cdiv(max(x.numel(), 1), BLOCK),)](x, y, x.numel(), BLOCK=BLOCK)
    return y.view(bits.shape)


@triton.jit
def _load_q(q_base, n, stride_qn, stride_qh, h, d, FP8_DOT: tl.constexpr):
    """q[b, n] as the ``[H, D]`` dot operand (fp8, or decoded to fp32 on the upcast path)."""
    qn = tl.load(q_base + n * stride_qn + h[:, None] * stride_qh + d[None, :])
    if not FP8_DOT:
        qn = _e4m3fn_to_f32(qn)
    return qn


@triton.jit
def _row_end(ctx_ptr, b, n, stride_cb, stride_cn, c, seq_end, NEXT_N: tl.constexpr, CTX_2D: tl.constexpr):
    """End of row ``(b, n)``, clamped to the sequence's (already clamped) end."""
    if CTX_2D:
        e = tl.load(ctx_ptr + b * stride_cb + n * stride_cn).to(tl.int32)
    else:
        e = c - NEXT_N + n + 1
    return tl.minimum(e, seq_end)


@triton.jit
def _nan_to_num(x):
    """``torch.nan_to_num(x, nan=-inf)`` exactly: NaN → -inf, +inf → FLT_MAX, -inf → -FLT_MAX, the rest as is."""
    y = tl.where(x == float("inf"), 3.4028234663852886e38, x)
    y = tl.where(x == float("-inf"), -3.4028234663852886e38, y)
    return tl.where(x != x, float("-inf"), y)


@triton.jit
def _emit_row(kk, qn, wn, sc, tile, tok, end_n, out_row, s_row, FP8_DOT: tl.constexpr, SANITIZE: tl.constexpr,
              SBS: tl.constexpr, BLOCK_T: tl.constexpr):
    """One row's logits for one tile: ``sc * sum_h wn[h] * relu(kk @ qn^T)[:, h]``, stored below ``end_n``.  The
    streamed keys are the MMA's A operand (M = ``BLOCK_T``).  ``SBS > 0``: also the scores of the tile's blocks
    that start below ``end_n`` (the newest one pinned to ``+inf``), stored at ``s_row``."""
    if FP8_DOT:
        s = tl.dot(kk, tl.trans(qn))  # fp8 x fp8 -> fp32 [BLOCK_T, H]
    else:
        s = tl.dot(kk, tl.trans(qn), input_precision="ieee")
    lg = tl.sum(tl.maximum(s, 0.0) * wn[None, :], axis=1) * sc
    if SANITIZE:
        lg = _nan_to_num(lg)
    live = tok < end_n
    tl.store(out_row + tok, lg, mask=live)
    if SBS > 0:
        x = tl.reshape(tl.where(live, lg, float("-inf")), [BLOCK_T // SBS, SBS])
        j = tile * (BLOCK_T // SBS) + tl.arange(0, BLOCK_T // SBS)
        # stored from the tile's own [BLOCK_T] layout (the block's score on each of its columns, written by the
        # first): the compiler forms it after the logits' one layout conversion, with no second one
        bsc = tl.broadcast_to(tl_block_score(x, j, 0, end_n, 1, SBS)[:, None], [BLOCK_T // SBS, SBS])
        tl.store(s_row + tok // SBS, tl.reshape(bsc, [BLOCK_T]), mask=live & (tok % SBS == 0))


@triton.jit(do_not_specialize=["stride_s", "nblocks"])
def _paged_mqa_logits_kernel(
    q_ptr,  # [B, NEXT_N, H, D] fp8 (FP8_DOT) or its bytes
    k_ptr,  # the cache as fp8 (FP8_DOT) or bytes, flat
    s_ptr,  # the same cache as float32, flat (scales)
    w_ptr,  # [B*NEXT_N, H] fp32
    ctx_ptr,  # [B] or [B, NEXT_N] int
    bt_ptr,  # [B, max_blocks] int32
    out_ptr,  # [B*NEXT_N, width] fp32
    sco_ptr,  # [B*NEXT_N, nblocks] fp32 block scores (SBS > 0)
    flags_ptr,  # [B*NEXT_N, nblocks + 1] uint8 candidate flags, zeroed here (ZF > 0)
    stride_qb,
    stride_qn,
    stride_qh,
    stride_w,
    stride_cb,
    stride_cn,
    stride_bt,
    stride_o,
    stride_s,
    stride_cache,  # bytes between cache blocks (a multiple of 4)
    width,
    cap,  # tokens addressable through the block table: max_blocks * BLOCK_KV
    nblocks,  # blocks of SBS columns in a row of the width (the flags have nblocks + 1 slots)
    H: tl.constexpr,
    D: tl.constexpr,
    NEXT_N: tl.constexpr,
    NEXT_N_PAD: tl.constexpr,
    BLOCK_KV: tl.constexpr,
    BLOCK_T: tl.constexpr,
    CTX_2D: tl.constexpr,
    FP8_DOT: tl.constexpr,
    HOIST_Q: tl.constexpr,  # load q / weights / ends of every row once, before the tile loop (NEXT_N <= 8)
    NUM_STAGES: tl.constexpr,
    SANITIZE: tl.constexpr,  # store nan_to_num(nan=-inf) of the logits
    SBS: tl.constexpr,  # block size of the block scores written (0: none); a power of two dividing BLOCK_T
    ZF: tl.constexpr,  # zero the flags: 0 no, 1 bytes, 2 8-byte words (the tensor 16-byte aligned)
):
    b = tl.program_id(0)
    sp = tl.program_id(1)
    splits = tl.num_programs(1)
    lim = tl.minimum(width, cap)
    # The sequence's last needed token: the largest row end (the last row in both layouts, but a max is
    # cheap and does not trust the caller's ordering).
    nn = tl.arange(0, NEXT_N_PAD)
    if CTX_2D:
        c = 0
        ends = tl.load(ctx_ptr + b * stride_cb + nn * stride_cn, mask=nn < NEXT_N, other=0).to(tl.int32)
    else:
        c = tl.load(ctx_ptr + b * stride_cb).to(tl.int32)
        ends = tl.where(nn < NEXT_N, c - NEXT_N + nn + 1, 0)
    seq_end = tl.minimum(tl.maximum(tl.max(ends, axis=0), 0), lim)
    n_tiles = tl.cdiv(seq_end, BLOCK_T)

    t = tl.arange(0, BLOCK_T)
    d = tl.arange(0, D)
    h = tl.arange(0, H)
    scale_off: tl.constexpr = BLOCK_KV * D // 4
    b64 = b.to(tl.int64)
    q_base = q_ptr + b64 * stride_qb
    row0 = b64 * NEXT_N
    o0 = out_ptr + row0 * stride_o
    s0 = sco_ptr + row0 * stride_s
    if ZF > 0:  # the sequence's splits programs zero one slice of each of its rows' flags
        fper = (nblocks + splits) // splits
        for n in tl.static_range(NEXT_N):
            zero_flags(flags_ptr, row0 + n, sp * fper, tl.minimum(sp * fper + fper, nblocks + 1), nblocks, ZF - 1)
    w0p = w_ptr + row0 * stride_w
    if HOIST_Q:
        # loop invariants, one named value per row (Triton has no lists of tensors)
        q0 = _load_q(q_base, 0, stride_qn, stride_qh, h, d, FP8_DOT)
        w0 = tl.load(w0p + h)
        e0 = _row_end(ctx_ptr, b, 0, stride_cb, stride_cn, c, seq_end, NEXT_N, CTX_2D)
        if NEXT_N > 1:
            q1 = _load_q(q_base, 1, stride_qn, stride_qh, h, d, FP8_DOT)
            w1 = tl.load(w0p + stride_w + h)
            e1 = _row_end(ctx_ptr, b, 1, stride_cb, stride_cn, c, seq_end, NEXT_N, CTX_2D)
        if NEXT_N > 2:
            q2 = _load_q(q_base, 2, stride_qn, stride_qh, h, d, FP8_DOT)
            w2 = tl.load(w0p + 2 * stride_w + h)
            e2 = _row_end(ctx_ptr, b, 2, stride_cb, stride_cn, c, seq_end, NEXT_N, CTX_2D)
        if NEXT_N > 3:
            q3 = _load_q(q_base, 3, stride_qn, stride_qh, h, d, FP8_DOT)
            w3 = tl.load(w0p + 3 * stride_w + h)
            e3 = _row_end(ctx_ptr, b, 3, stride_cb, stride_cn, c, seq_end, NEXT_N, CTX_2D)
        if NEXT_N > 4:
            q4 = _load_q(q_base, 4, stride_qn, stride_qh, h, d, FP8_DOT)
            w4 = tl.load(w0p + 4 * stride_w + h)
            e4 = _row_end(ctx_ptr, b, 4, stride_cb, stride_cn, c, seq_end, NEXT_N, CTX_2D)
        if NEXT_N > 5:
            q5 = _load_q(q_base, 5, stride_qn, stride_qh, h, d, FP8_DOT)
            w5 = tl.load(w0p + 5 * stride_w + h)
            e5 = _row_end(ctx_ptr, b, 5, stride_cb, stride_cn, c, seq_end, NEXT_N, CTX_2D)
        if NEXT_N > 6:
            q6 = _load_q(q_base, 6, stride_qn, stride_qh, h, d, FP8_DOT)
            w6 = tl.load(w0p + 6 * stride_w + h)
            e6 = _row_end(ctx_ptr, b, 6, stride_cb, stride_cn, c, seq_end, NEXT_N, CTX_2D)
        if NEXT_N > 7:
            q7 = _load_q(q_base, 7, stride_qn, stride_qh, h, d, FP8_DOT)
            w7 = tl.load(w0p + 7 * stride_w + h)
            e7 = _row_end(ctx_ptr, b, 7, stride_cb, stride_cn, c, seq_end, NEXT_N, CTX_2D)
    for tile in tl.range(sp, n_tiles, splits, num_stages=NUM_STAGES):
        tok = tile * BLOCK_T + t
        # Tokens past the end re-read the last live token instead of being masked: every load stays in
        # bounds with no mask; a column of S depends on its own key row only and is never stored.
        src = tl.minimum(tok, seq_end - 1)
        page = tl.load(bt_ptr + b64 * stride_bt + src // BLOCK_KV).to(tl.int64)
        slot = src % BLOCK_KV
        kk = tl.load(k_ptr + (page * stride_cache + slot * D)[:, None] + d[None, :])
        sc = tl.load(s_ptr + page * (stride_cache // 4) + scale_off + slot)
        if not FP8_DOT:
            kk = _e4m3fn_to_f32(kk)
        if HOIST_Q:
            _emit_row(kk, q0, w0, sc, tile, tok, e0, o0, s0, FP8_DOT, SANITIZE, SBS, BLOCK_T)
            if NEXT_N > 1:
                _emit_row(kk, q1, w1, sc, tile, tok, e1, o0 + stride_o, s0 + stride_s, FP8_DOT, SANITIZE, SBS, BLOCK_T)
            if NEXT_N > 2:
                _emit_row(kk, q2, w2, sc, tile, tok, e2, o0 + 2 * stride_o, s0 + 2 * stride_s, FP8_DOT,
                          SANITIZE, SBS, BLOCK_T)
            if NEXT_N > 3:
                _emit_row(kk, q3, w3, sc, tile, tok, e3, o0 + 3 * stride_o, s0 + 3 * stride_s, FP8_DOT,
                          SANITIZE, SBS, BLOCK_T)
            if NEXT_N > 4:
                _emit_row(kk, q4, w4, sc, tile, tok, e4, o0 + 4 * stride_o, s0 + 4 * stride_s, FP8_DOT,
                          SANITIZE, SBS, BLOCK_T)
            if NEXT_N > 5:
                _emit_row(kk, q5, w5, sc, tile, tok, e5, o0 + 5 * stride_o, s0 + 5 * stride_s, FP8_DOT,
                          SANITIZE, SBS, BLOCK_T)
            if NEXT_N > 6:
                _emit_row(kk, q6, w6, sc, tile, tok, e6, o0 + 6 * stride_o, s0 + 6 * stride_s, FP8_DOT,
                          SANITIZE, SBS, BLOCK_T)
            if NEXT_N > 7:
                _emit_row(kk, q7, w7, sc, tile, tok, e7, o0 + 7 * stride_o, s0 + 7 * stride_s, FP8_DOT,
                          SANITIZE, SBS, BLOCK_T)
        else:
            for n in tl.static_range(NEXT_N):
                qn = _load_q(q_base, n, stride_qn, stride_qh, h, d, FP8_DOT)
                wn = tl.load(w0p + n * stride_w + h)
                end_n = _row_end(ctx_ptr, b, n, stride_cb, stride_cn, c, seq_end, NEXT_N, CTX_2D)
                _emit_row(kk, qn, wn, sc, tile, tok, end_n, o0 + n * stride_o, s0 + n * stride_s, FP8_DOT, SANITIZE,
                          SBS, BLOCK_T)


@triton.jit
def _sanitize_kernel(x_ptr, ends_ptr, stride_x, width, BLOCK: tl.constexpr):
    """``nan_to_num(nan=-inf)`` on columns ``[0, min(end, width))`` of each row, in place."""
    r = tl.program_id(0)
    sp = tl.program_id(1)
    splits = tl.num_programs(1)
    end = tl.minimum(tl.maximum(tl.load(ends_ptr + r).to(tl.int32), 0), width)
    base = x_ptr + r.to(tl.int64) * stride_x
    col = tl.arange(0, BLOCK)
    for c0 in tl.range(sp * BLOCK, end, splits * BLOCK):
        cols = c0 + col
        m = cols < end
        tl.store(base + cols, _nan_to_num(tl.load(base + cols, mask=m)), mask=m)


def _splits(groups: int, max_tiles: int, sm_count: int, waves: int = 4) -> int:
    """Programs per sequence/row: about ``waves`` programs per SM over ``groups``, at most one per tile.

    More programs than one resident wave shrink the tail when every program has the same work;
    fewer keep each program's pipelined loop long.  Depends on shapes only (graph-capturable).
    """
    return max(1, min(max_tiles, triton.cdiv(waves * int(sm_count), max(groups, 1))))


def _facts(t):
    return _impl.device_facts(t.device.index if t.device.type == "cuda" else None)


def default_config(H: int, next_n: int, block_kv: int, fp8_dot: bool, arch=None) -> dict:
    """Launch defaults for an architecture (``sm_90``, ``gfx950``, ...).  fp8 path: keys as the A operand
    (M = BLOCK_T), q, weights and row ends hoisted out of the tile loop.

    CUDA: 128-token tiles triple-buffered by the pipeliner, chosen by the H200 config sweep
    (``notes/producer.md``).  AMD (wave64, VGPRs and AGPRs per lane instead of a shared register file): 64-token
    tiles, one stage, the largest that compile for gfx950 and gfx942 with no spill at next_n <= 5 (the 128-token
    triple-buffered tiles spill hundreds of VGPRs there); compiled and checked, never run.
    """
    if not fp8_dot:
        return {"BLOCK_T": 32, "num_warps": 4, "NUM_STAGES": 1, "HOIST_Q": True, "WAVES": 4}
    if arch and arch.startswith("gfx"):
        return {"BLOCK_T": 64, "num_warps": 4, "NUM_STAGES": 1, "HOIST_Q": True, "WAVES": 8}
    return {"BLOCK_T": 128, "num_warps": 4, "NUM_STAGES": 3, "HOIST_Q": True, "WAVES": 8}


def fuses_scores(block_size: int, config: dict) -> bool:
    """Can the logits kernel write block scores of ``block_size`` columns itself?  A tile must hold whole blocks:
    a power of two that divides ``BLOCK_T``."""
    bs = int(block_size)
    return bs & (bs - 1) == 0 and bs <= config["BLOCK_T"]


def paged_mqa_logits_triton(q_fp8, kv_cache, weights, context_lens, block_table, out, *, fp8_dot=None, config=None,
                            facts=None, scores_out=None, block_size=8, sanitize=False, flags_out=None, row_ends=None):
    """Launch the logits kernel into ``out`` (checked inputs; see :func:`dsa_lab.paged_mqa_logits`).

    ``fp8_dot``: None → :func:`dsa_lab.paged.fp8_dot_supported` (by ``facts["arch"]`` when ``facts`` is given);
    False forces the upcast path (testable on a GPU too).  ``config``: overrides of :func:`default_config`
    (``BLOCK_T``, ``num_warps``, ``NUM_STAGES``, ``HOIST_Q``, ``WAVES``).  ``facts``: the device's
    (:func:`dsa_lab._impl.device_facts`; another device's to record its launch on ``meta`` tensors).

    ``sanitize``: store ``nan_to_num(nan=-inf)`` of the logits.  ``scores_out``: float32 ``[rows, cdiv(width,
    block_size)]`` (unit stride along the blocks): the block scores of the stored logits over each row's window
    (blocks starting at or past the row's end are not written).  ``flags_out``: uint8 ``[rows, nblocks + 1]``,
    contiguous, zeroed whole (for a select that sets flags).  A block size the kernel cannot fuse
    (:func:`fuses_scores`) takes the block-scores launch after the logits instead, bounded by ``row_ends`` (int
    ``[rows]``, required then).
    """
    import torch

    from ..paged import fp8_dot_for_arch, fp8_dot_supported

    B, next_n, H, D = q_fp8.shape
    block_kv = kv_cache.shape[1]
    width = out.shape[1]
    if fp8_dot is None:
        fp8_dot = fp8_dot_supported(q_fp8.device) if facts is None else fp8_dot_for_arch(facts.get("arch"))
    facts = facts or _facts(q_fp8)
    cfg = dict(default_config(H, next_n, block_kv, fp8_dot, facts.get("arch")))
    unknown = set(config or {}) - set(cfg)
    if unknown:
        raise ValueError(f"config keys {sorted(unknown)} are not launch settings of the producer ({sorted(cfg)})")
    cfg.update(config or {})
    bs = int(block_size)
    fuse = scores_out is not None and fuses_scores(bs, cfg)
    nblocks = -(-width // bs)
    flat = kv_cache.view(-1)
    k_arg = flat.view(torch.float8_e4m3fn) if fp8_dot else flat
    q_arg = q_fp8 if fp8_dot else q_fp8.view(torch.uint8)
    s_arg = flat.view(torch.float32)
    ctx = context_lens
    ctx2d = ctx.dim() == 2
    scb = ctx.stride(0)
    scn = ctx.stride(1) if ctx2d else 0
    cap = block_table.shape[1] * block_kv
    max_tiles = triton.cdiv(min(width, cap), cfg["BLOCK_T"])
    grid = (B, _splits(B, max_tiles, facts["sm_count"], cfg["WAVES"]))
    zf = 0 if flags_out is None else (2 if flags_out.data_ptr() % 16 == 0 else 1)
    run(
        _paged_mqa_logits_kernel, grid,
        q_arg, k_arg, s_arg, weights, ctx, block_table, out,
        scores_out if fuse else out, flags_out if flags_out is not None else out.view(torch.uint8),
        q_arg.stride(0), q_arg.stride(1), q_arg.stride(2),
        weights.stride(0), scb, scn, block_table.stride(0), out.stride(0), scores_out.stride(0) if fuse else 0,
        kv_cache.stride(0), width, cap, nblocks,
        H=H, D=D, NEXT_N=next_n, NEXT_N_PAD=triton.next_power_of_2(next_n), BLOCK_KV=block_kv,
        BLOCK_T=cfg["BLOCK_T"], CTX_2D=ctx2d, FP8_DOT=bool(fp8_dot),
        # hoisted q lives in shared memory for the whole loop: bound it (64 KiB = 8 rows of 64 x 128 fp8)
        HOIST_Q=bool(cfg["HOIST_Q"]) and next_n <= 8 and next_n * H * D * (1 if fp8_dot else 4) <= 65536,
        NUM_STAGES=cfg["NUM_STAGES"], SANITIZE=bool(sanitize),
        SBS=bs if fuse else 0, ZF=zf,
        num_warps=cfg["num_warps"],
    )
    if scores_out is not None and not fuse:  # the scores launch writes whole tiles: keep the blocks past each end
        from ..dispatch import SCORES_MULT
        from ..producer import window_blocks
        from . import scores as _scores

        tmp = torch.empty_like(scores_out)
        _scores.launch(out, row_ends, None, tmp, bs, 1,
                       _scores.programs_per_row(B * next_n, nblocks, bs, facts["sm_count"], SCORES_MULT),
                       fill_dead=False)
        scores_out.copy_(torch.where(window_blocks(row_ends, nblocks, bs, width), tmp, scores_out))
    return out


def sanitize_triton(logits, row_ends, block: int = 2048):
    """Launch the bounded sanitize (checked inputs; see :func:`dsa_lab.sanitize_decode_logits`)."""
    rows, width = logits.shape
    if rows == 0 or width == 0:
        return
    block = min(block, triton.next_power_of_2(width))
    grid = (rows, _splits(rows, triton.cdiv(width, block), _facts(logits)["sm_count"]))
    run(_sanitize_kernel, grid, logits, row_ends, logits.stride(0), width, BLOCK=block)
