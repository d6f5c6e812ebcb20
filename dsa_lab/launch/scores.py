"""Launchers of the block scores, the candidate flags and the candidate mask (inputs checked by the public API)."""
from __future__ import annotations

import torch

from .. import _impl, plans
from ..kernels import flags as _flags
from ..kernels import mask as _mask
from ..kernels import scores as _scores
from ..kernels.common import PDL_OK
from . import run

__all__ = ["block_scores", "block_scores_into", "scores_buffer", "fill_flags", "candidate_flags", "apply_mask"]


def scores_buffer(rows: int, nblocks: int, device) -> torch.Tensor:
    """Block scores for a select: rows padded to a multiple of 16 blocks, so the select's source stride is aligned
    for every width (one compiled select, vector loads)."""
    return torch.empty((rows, -(-nblocks // 16) * 16), dtype=torch.float32, device=device)[:, :nblocks]


def block_scores_into(logits, row_ends, row_starts, out, block_size, row_repeat, programs, *, padded=False,
                      fill_dead=True, zero_flags=None, stage_a=None, pdl=False):
    """The block-scores kernel into ``out`` (float32 ``[rows, cdiv(width, block_size)]``, unit stride along the
    blocks; its row stride may be larger), ``programs`` per row (each strides over the row's tiles).

    ``padded``: the reads follow the padded width (the upstream kernel, a benchmark's baseline).  ``fill_dead``:
    write ``-inf`` past each row's extent (else those blocks are left as they are).  ``zero_flags``: a contiguous
    ``uint8 [rows, nblocks + 1]`` tensor this launch zeroes.  ``stage_a``: ``(ws, wrow, sg, sg_min)``, the hier
    select's workspace, its slots per row, its super-group size in blocks (a power of two dividing the tile) and
    the longest extent that needs no stage A; it takes one program per tile.  ``pdl``: let the select launched
    after it as a programmatic dependent start early (sm_90+)."""
    rows, width = logits.shape
    bs = int(block_size)
    nblocks = out.shape[1]
    if rows == 0 or nblocks == 0:
        return out
    zf, flags = plans.FlagZeroing.NONE, out.view(torch.uint8)  # a dummy of the flags' type: one signature
    if zero_flags is not None:
        flags, zf = zero_flags, plans.flag_zeroing(zero_flags.data_ptr() % 16 == 0)
    sg_ws, sg_stride, sg, sg_min = (out, 0, 0, 0) if stage_a is None else stage_a
    programs = max(1, int(programs))
    run(
        _scores._block_scores_kernel, (rows, programs),
        logits, logits.stride(0), out, out.stride(0), row_ends, row_starts if row_starts is not None else row_ends,
        flags, sg_ws, int(sg_stride), int(sg_min), width, nblocks, programs, int(row_repeat),
        BS=bs, BSP=plans.np2(bs), BJ=plans.scores_tile(bs), PADDED=bool(padded),
        FILL_DEAD=bool(fill_dead) or bool(padded), SG=int(sg), PDL=bool(pdl) and PDL_OK, ZERO_FLAGS=int(zf),
        HAS_START=row_starts is not None, ALIGNED=logits.stride(0) % 16 == 0 or rows == 1, num_warps=4,
    )
    return out


def block_scores(logits, row_ends, row_starts=None, block_size=8, row_repeat=1, *, padded=False, facts=None):
    """Triton arm of :func:`dsa_lab.block_scores` (arguments checked there): a new float32 ``[rows, nblocks]``, every
    slot written (``-inf`` past each row's extent).  ``padded``: the upstream kernel, whose reads follow the padded
    width (the benchmark's torch arm)."""
    rows, width = logits.shape
    bs = int(block_size)
    nblocks = -(-width // bs)
    out = torch.empty((rows, nblocks), dtype=torch.float32, device=logits.device)
    if rows and nblocks:
        sm = int((facts or _impl.facts_for(logits))["sm_count"])
        q = plans.scores_programs(rows, nblocks, bs, sm, None if padded else plans.SCORES_MULT)
        block_scores_into(logits, row_ends, row_starts, out, bs, row_repeat, q, padded=padded, fill_dead=True)
    return out


def fill_flags(candidates, flags, width, row_starts=None, block_size=8, row_repeat=1, *, zeroed=False):
    """Zero ``flags`` (contiguous uint8 ``[rows, cdiv(width, block_size) + 1]``; ``zeroed``: an earlier launch did)
    and set the selected blocks' bytes.  Returns ``flags``."""
    rows, k = candidates.shape
    bs = int(block_size)
    if not zeroed:
        flags.zero_()
    if rows == 0 or k == 0:
        return flags
    run(
        _flags._flags_kernel, (rows,), candidates, candidates.stride(0), flags,
        row_starts if row_starts is not None else candidates, k, int(width), -(-int(width) // bs), int(row_repeat),
        int(row_starts is not None), BS=bs, KT=plans.KT, num_warps=4,
    )
    return flags


def candidate_flags(candidates, width, row_starts=None, block_size=8, row_repeat=1):
    """Triton arm of :func:`dsa_lab.candidate_flags` (arguments checked there): uint8 ``[rows, nblocks + 1]``."""
    rows = candidates.shape[0]
    flags = torch.empty((rows, -(-int(width) // int(block_size)) + 1), dtype=torch.uint8, device=candidates.device)
    return fill_flags(candidates, flags, width, row_starts, block_size, row_repeat)


def apply_mask(logits, row_ends, row_starts, candidates, flags, block_size, row_repeat, sm_count):
    """Mask ``logits`` (float32 ``[rows, width]``, unit column stride) in place: ``-inf`` everywhere but the kept
    columns (:func:`dsa_lab.compat.vllm_apply_candidate_mask`).  ``candidates``: int32/int64 ``[rows, k]``, unit
    column stride; ``row_ends`` / ``row_starts`` (or None): contiguous, ``rows // row_repeat`` entries; ``flags``: a
    contiguous ``uint8 [rows, cdiv(width, block_size) + 1]`` scratch tensor (every byte is written).  Returns
    ``logits``."""
    rows, width = logits.shape
    if rows == 0 or width == 0:
        return logits
    bs = int(block_size)
    fill_flags(candidates, flags, width, row_starts, bs, row_repeat)
    q = plans.mask_programs(rows, width, sm_count)
    run(
        _mask._mask_kernel, (rows, q),
        logits, logits.stride(0), flags, row_ends, row_starts if row_starts is not None else row_ends,
        width, -(-width // bs), int(row_repeat), q, int(row_starts is not None),
        BS=bs, TILE=plans.MASK_TILE, num_warps=4,
    )
    return logits
