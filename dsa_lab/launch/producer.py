"""Launchers of the producer: paged FP8 MQA logits (with the decode step's epilogue) and the bounded sanitize."""
from __future__ import annotations

import torch

from .. import _impl, plans
from ..kernels import producer as _producer
from . import run
from .scores import block_scores_into

__all__ = ["paged_mqa_logits", "sanitize", "e4m3fn_decode"]


def _facts(t):
    return _impl.device_facts(t.device.index if t.device.type == "cuda" else None)


def paged_mqa_logits(q_fp8, kv_cache, weights, context_lens, block_table, out, *, fp8_dot=None, config=None,
                     facts=None, scores_out=None, block_size=8, sanitize=False, flags_out=None, row_ends=None):
    """The logits kernel into ``out`` (checked inputs; see :func:`dsa_lab.paged_mqa_logits`).

    ``fp8_dot``: None → by the architecture (:func:`dsa_lab._impl.fp8_dot_for_arch`; never under the interpreter,
    whose numpy has no fp8); False forces the upcast path.  ``config``: overrides of
    :func:`dsa_lab.plans.producer_config`.  ``facts``: the device's (another device's to record its launch on
    ``meta`` tensors).

    ``sanitize``: store ``nan_to_num(nan=-inf)`` of the logits.  ``scores_out``: float32 ``[rows, cdiv(width,
    block_size)]`` (unit stride along the blocks): the block scores of the stored logits over each row's window
    (blocks starting at or past the row's end are not written).  ``flags_out``: uint8 ``[rows, nblocks + 1]``,
    contiguous, zeroed whole.  A block size the kernel cannot fuse takes the block-scores launch after the logits,
    bounded by ``row_ends`` (int ``[rows]``, required then)."""
    B, next_n, H, D = q_fp8.shape
    block_kv = kv_cache.shape[1]
    width = out.shape[1]
    if fp8_dot is None:  # by the given facts' architecture, or this device's (never under the interpreter)
        fp8_dot = _impl.fp8_dot_for_arch((facts or _facts(q_fp8)).get("arch")) and (
            facts is not None or not _impl.interpreter_active())
    facts = facts or _facts(q_fp8)
    bs = int(block_size)
    plan = plans.producer(B, width, block_table.shape[1] * block_kv, facts, fp8_dot=fp8_dot, block_size=bs,
                          scores=scores_out is not None, config=config)
    fuse = plan.fuse_scores
    nblocks = -(-width // bs)
    flat = kv_cache.view(-1)
    k_arg = flat.view(torch.float8_e4m3fn) if fp8_dot else flat
    q_arg = q_fp8 if fp8_dot else q_fp8.view(torch.uint8)
    ctx = context_lens
    ctx2d = ctx.dim() == 2
    zf = plans.FlagZeroing.NONE if flags_out is None else plans.flag_zeroing(flags_out.data_ptr() % 16 == 0)
    run(
        _producer._paged_mqa_logits_kernel, (B, plan.splits),
        q_arg, k_arg, flat.view(torch.float32), weights, ctx, block_table, out,
        scores_out if fuse else out, flags_out if flags_out is not None else out.view(torch.uint8),
        q_arg.stride(0), q_arg.stride(1), q_arg.stride(2),
        weights.stride(0), ctx.stride(0), ctx.stride(1) if ctx2d else 0, block_table.stride(0), out.stride(0),
        scores_out.stride(0) if fuse else 0, kv_cache.stride(0), width, block_table.shape[1] * block_kv, nblocks,
        H=H, D=D, NEXT_N=next_n, NEXT_N_PAD=plans.np2(next_n), BLOCK_KV=block_kv,
        BLOCK_T=plan.BLOCK_T, CTX_2D=ctx2d, FP8_DOT=bool(fp8_dot),
        # hoisted q lives in shared memory for the whole loop: bound it (64 KiB = 8 rows of 64 x 128 fp8)
        HOIST_Q=plan.HOIST_Q and next_n <= 8 and next_n * H * D * (1 if fp8_dot else 4) <= 65536,
        NUM_STAGES=plan.NUM_STAGES, SANITIZE=bool(sanitize), BS=bs if fuse else 0, ZERO_FLAGS=int(zf),
        num_warps=plan.num_warps,
    )
    if scores_out is not None and not fuse:  # the scores launch writes whole tiles: keep the blocks past each end
        tmp = torch.empty_like(scores_out)
        block_scores_into(out, row_ends, None, tmp, bs, 1,
                          plans.scores_programs(B * next_n, nblocks, bs, facts["sm_count"]), fill_dead=False)
        blk = torch.arange(nblocks, device=out.device)
        live = blk[None, :] * bs < row_ends.to(torch.int64).clamp(max=width)[:, None]
        scores_out.copy_(torch.where(live, tmp, scores_out))
    return out


def sanitize(logits, row_ends, block: int = 2048):
    """The bounded sanitize (checked inputs; see :func:`dsa_lab.sanitize_decode_logits`)."""
    rows, width = logits.shape
    if rows == 0 or width == 0:
        return
    block = min(block, plans.np2(width))
    grid = (rows, plans.splits(rows, -(-width // block), _facts(logits)["sm_count"]))
    run(_producer._sanitize_kernel, grid, logits, row_ends, logits.stride(0), width, BLOCK=block)


def e4m3fn_decode(bits):
    """Decode a uint8 tensor of e4m3fn codes to float32 with the kernels' integer decode (a check of it)."""
    x = bits.contiguous().view(-1)
    y = torch.empty(x.shape, dtype=torch.float32, device=x.device)
    BLOCK = 256
    run(_producer._e4m3fn_decode_kernel, (-(-max(x.numel(), 1) // BLOCK),), x, y, x.numel(), BLOCK=BLOCK)
    return y.view(bits.shape)
