"""Candidate flags: ``flags[row, block] = 1`` for each selected block, with a sentinel slot.

Contract (upstream ``_candidate_flags_kernel``): a new zeroed ``uint8 [rows,
nblocks + 1]`` with ``nblocks = cdiv(width, block_size)``; for each id ``b >= 0``
in ``candidates[row]``, slot ``b`` is set, except when the block's first column
``start + b * block_size`` is at or past ``width``: then the sentinel slot
``nblocks`` is set instead.  ``-1`` entries are ignored.
"""
from __future__ import annotations

import torch

from . import _checks, _impl

__all__ = ["candidate_flags", "candidate_flags_torch"]


def candidate_flags_torch(candidates, width, row_starts=None, block_size=8, row_repeat=1):
    """Torch arm (inputs checked by :func:`candidate_flags`).  A scatter with no host read, so it also captures in a
    CUDA graph: ignored ids land in a spare slot past the sentinel, dropped at the end."""
    rows, k = candidates.shape
    nblocks = -(-width // block_size)
    dev = candidates.device
    g = torch.arange(rows, device=dev) // row_repeat
    start = (row_starts.to(torch.int64)[g] if row_starts is not None
             else torch.zeros(rows, dtype=torch.int64, device=dev))
    c = candidates.to(torch.int64)
    slot = torch.where(start[:, None] + c * block_size >= width, torch.full_like(c, nblocks), c)
    slot = torch.where(c >= 0, slot, torch.full_like(c, nblocks + 1))
    flags = torch.zeros(rows, nblocks + 2, dtype=torch.uint8, device=dev)
    flags.scatter_(1, slot, 1)
    return flags[:, : nblocks + 1].contiguous()


def candidate_flags(candidates, width, *, row_starts=None, block_size=8, row_repeat=1, impl="auto"):
    """Flags of selected blocks (contract in the module docstring).

    Args:
        candidates: int32/int64 ``[rows, k]``; entries ``-1`` or a block id in ``[0, nblocks)``.
        width: logits width in columns (int ``>= 1``); ``nblocks = cdiv(width, block_size)``.
        row_starts: int ``[rows // row_repeat]`` or None (= 0).
        block_size, row_repeat: as in :func:`dsa_lab.block_scores`.
        impl: ``"reference"``/``"torch"`` (same code), ``"triton"`` or ``"auto"``.

    Returns:
        uint8 ``[rows, nblocks + 1]``, new, every slot written (0 or 1).
    """
    _checks.tensor(candidates, "candidates", dtypes=_checks.INT_DTYPES, ndim=2)
    _checks.row_strided(candidates, "candidates")
    rows, _ = candidates.shape
    width = _checks.positive_int(width, "width")
    bs = _checks.positive_int(block_size, "block_size")
    rr = _checks.row_repeat(row_repeat, rows)
    _checks.bounds(row_starts, "row_starts", rows // rr, candidates.device, optional=True)
    nblocks = -(-width // bs)
    if candidates.numel() and not _checks.capturing():
        lo, hi = int(candidates.min()), int(candidates.max())
        if lo < -1 or hi >= nblocks:
            raise ValueError(f"candidates must hold -1 or block ids in [0, {nblocks}); got range [{lo}, {hi}]")
    arm = _impl.resolve(impl, candidates.device, ("reference", "torch", "triton"))
    if arm == "triton":
        from .launch.scores import candidate_flags

        return candidate_flags(candidates, width, row_starts, bs, rr)
    return candidate_flags_torch(candidates, width, row_starts, bs, rr)
