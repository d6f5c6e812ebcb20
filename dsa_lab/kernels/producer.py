"""Triton kernels of the producer: paged FP8 MQA logits, the bounded sanitize, and the e4m3fn upcast.

Logits (:func:`_paged_mqa_logits_kernel`), grid ``(B, splits)``: program ``(b, s)`` walks tiles ``s, s + splits, ...``
of sequence ``b`` up to its last row's end (a bound read on the device, so a short sequence costs an early exit
whatever the padded width).  A tile is ``BLOCK_T`` tokens gathered row by row through the block table; its fp8 keys
are loaded once and reused for all ``NEXT_N`` rows and ``H`` heads: ``S_n = K_tile @ Q_n^T`` (fp32 accumulate),
``relu``, weighted, summed over heads, scaled.  Tokens past a sequence's end re-read its last token (a clamped
index: every load stays in bounds without a mask).  ``FP8_DOT``: e4m3fn operands straight into ``tl.dot``; otherwise
bytes decoded to fp32 with integer ops (:func:`_e4m3fn_to_f32`, the interpreter's and any non-fp8 device's path).
``HOIST_Q``: q, weights and row ends loaded before the tile loop.  Stores are masked by each row's own end: columns
at or past it are never written.  The epilogue can also hand the consumer what it reads, while the tile is in
registers: the logits sanitized (``SANITIZE``), the row's block scores of ``BS`` columns (0: none) and the flags
zeroed (``ZERO_FLAGS``).  The design and its measurements: ``docs/design.md`` §7, ``notes/producer.md``.
"""
from __future__ import annotations

import triton
import triton.language as tl

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
              BS: tl.constexpr, BLOCK_T: tl.constexpr):
    """One row's logits for one tile: ``sc * sum_h wn[h] * relu(kk @ qn^T)[:, h]``, stored below ``end_n``.  The
    streamed keys are the MMA's A operand (M = ``BLOCK_T``).  ``BS > 0``: also the scores of the tile's blocks
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
    if BS > 0:
        x = tl.reshape(tl.where(live, lg, float("-inf")), [BLOCK_T // BS, BS])
        j = tile * (BLOCK_T // BS) + tl.arange(0, BLOCK_T // BS)
        # stored from the tile's own [BLOCK_T] layout (the block's score on each of its columns, written by the
        # first): the compiler forms it after the logits' one layout conversion, with no second one
        bsc = tl.broadcast_to(tl_block_score(x, j, 0, end_n, 1, BS)[:, None], [BLOCK_T // BS, BS])
        tl.store(s_row + tok // BS, tl.reshape(bsc, [BLOCK_T]), mask=live & (tok % BS == 0))


@triton.jit(do_not_specialize=["stride_s", "nblocks"])
def _paged_mqa_logits_kernel(
    q_ptr,  # [B, NEXT_N, H, D] fp8 (FP8_DOT) or its bytes
    k_ptr,  # the cache as fp8 (FP8_DOT) or bytes, flat
    s_ptr,  # the same cache as float32, flat (scales)
    w_ptr,  # [B*NEXT_N, H] fp32
    ctx_ptr,  # [B] or [B, NEXT_N] int
    bt_ptr,  # [B, max_blocks] int32
    out_ptr,  # [B*NEXT_N, width] fp32
    sco_ptr,  # [B*NEXT_N, nblocks] fp32 block scores (BS > 0)
    flags_ptr,  # [B*NEXT_N, nblocks + 1] uint8 candidate flags, zeroed here (ZERO_FLAGS > 0)
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
    nblocks,  # blocks of BS columns in a row of the width (the flags have nblocks + 1 slots)
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
    BS: tl.constexpr,  # block size of the block scores written (0: none); a power of two dividing BLOCK_T
    ZERO_FLAGS: tl.constexpr,  # zero the flags: 0 no, 1 bytes, 2 8-byte words (the tensor 16-byte aligned)
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
    if ZERO_FLAGS > 0:  # the sequence's splits programs zero one slice of each of its rows' flags
        fper = (nblocks + splits) // splits
        for n in tl.static_range(NEXT_N):
            zero_flags(flags_ptr, row0 + n, sp * fper, tl.minimum(sp * fper + fper, nblocks + 1), nblocks, ZERO_FLAGS)
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
            _emit_row(kk, q0, w0, sc, tile, tok, e0, o0, s0, FP8_DOT, SANITIZE, BS, BLOCK_T)
            if NEXT_N > 1:
                _emit_row(kk, q1, w1, sc, tile, tok, e1, o0 + stride_o, s0 + stride_s, FP8_DOT, SANITIZE, BS, BLOCK_T)
            if NEXT_N > 2:
                _emit_row(kk, q2, w2, sc, tile, tok, e2, o0 + 2 * stride_o, s0 + 2 * stride_s, FP8_DOT,
                          SANITIZE, BS, BLOCK_T)
            if NEXT_N > 3:
                _emit_row(kk, q3, w3, sc, tile, tok, e3, o0 + 3 * stride_o, s0 + 3 * stride_s, FP8_DOT,
                          SANITIZE, BS, BLOCK_T)
            if NEXT_N > 4:
                _emit_row(kk, q4, w4, sc, tile, tok, e4, o0 + 4 * stride_o, s0 + 4 * stride_s, FP8_DOT,
                          SANITIZE, BS, BLOCK_T)
            if NEXT_N > 5:
                _emit_row(kk, q5, w5, sc, tile, tok, e5, o0 + 5 * stride_o, s0 + 5 * stride_s, FP8_DOT,
                          SANITIZE, BS, BLOCK_T)
            if NEXT_N > 6:
                _emit_row(kk, q6, w6, sc, tile, tok, e6, o0 + 6 * stride_o, s0 + 6 * stride_s, FP8_DOT,
                          SANITIZE, BS, BLOCK_T)
            if NEXT_N > 7:
                _emit_row(kk, q7, w7, sc, tile, tok, e7, o0 + 7 * stride_o, s0 + 7 * stride_s, FP8_DOT,
                          SANITIZE, BS, BLOCK_T)
        else:
            for n in tl.static_range(NEXT_N):
                qn = _load_q(q_base, n, stride_qn, stride_qh, h, d, FP8_DOT)
                wn = tl.load(w0p + n * stride_w + h)
                end_n = _row_end(ctx_ptr, b, n, stride_cb, stride_cn, c, seq_end, NEXT_N, CTX_2D)
                _emit_row(kk, qn, wn, sc, tile, tok, end_n, o0 + n * stride_o, s0 + n * stride_s, FP8_DOT, SANITIZE,
                          BS, BLOCK_T)


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
