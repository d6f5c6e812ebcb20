"""Block scores: NaN-propagating max of each ``block_size`` run of a row's live logits.

Contract (``docs/design.md``; upstream ``_block_scores_kernel`` semantics), for row ``r``
with ``g = r // row_repeat``, ``start = row_starts[g]`` (0 when absent),
``end = row_ends[g]``, and ``nblocks = cdiv(width, block_size)``:

* block ``j`` covers columns ``start + j*bs .. start + j*bs + bs - 1``,
  restricted to ``[start, end)`` and to ``[0, width)``;
* its score is the max over those columns *in the contract's order*: any NaN gives
  NaN (``0x7FFFFFFF``), ``+0.0`` beats ``-0.0``, subnormals compare exactly.  Computed as a max
  of :func:`dsa_lab.keys.ordered_hi` integers, so no float max (whose signed-zero choice and
  subnormal flushing differ between CPU, ``torch.amax`` on CUDA and a GPU ``tl.max``) decides it;
* a block with no live column is ``-inf`` (its logits are never read);
* the newest block ``(end - start - 1) // bs`` is ``+inf`` when ``end > start``
  and that block id is below ``nblocks`` (it may lie past the width when
  ``start > 0``; :func:`dsa_lab.candidate_flags` sends such ids to the sentinel).
"""
from __future__ import annotations

import torch

from . import _checks, _impl
from .keys import from_ordered_hi, ordered_hi

__all__ = ["block_scores", "block_scores_torch"]


def _check_scores_args(logits, row_ends, row_starts, block_size, row_repeat):
    _checks.tensor(logits, "logits", dtypes=(torch.float32,))
    _checks.row_strided(logits, "logits")
    rows, width = logits.shape
    if width > _checks.MAX_WIDTH:
        raise ValueError(f"logits width {width} exceeds {_checks.MAX_WIDTH} (int32 block ids)")
    bs = _checks.positive_int(block_size, "block_size")
    rr = _checks.row_repeat(row_repeat, rows)
    groups = rows // rr
    _checks.bounds(row_ends, "row_ends", groups, logits.device)
    _checks.bounds(row_starts, "row_starts", groups, logits.device, optional=True)
    _checks.starts_le_ends(row_starts, row_ends)
    return rows, width, bs, rr


def _row_bounds(row_ends, row_starts, rows, rr, device):
    g = torch.arange(rows, device=device) // rr
    end = row_ends.to(torch.int64)[g]
    start = row_starts.to(torch.int64)[g] if row_starts is not None else torch.zeros_like(end)
    return start, end


def block_scores_torch(logits, row_ends, row_starts=None, block_size=8, row_repeat=1):
    """Torch implementation of the contract (vectorised gather; reads the padded width)."""
    rows, width = logits.shape
    bs = block_size
    nblocks = -(-width // bs)
    start, end = _row_bounds(row_ends, row_starts, rows, row_repeat, logits.device)
    live_end = torch.minimum(end, torch.full_like(end, width))
    j = torch.arange(nblocks, device=logits.device)
    t = torch.arange(bs, device=logits.device)
    cols = start[:, None, None] + j[None, :, None] * bs + t[None, None, :]  # [rows, nblocks, bs]
    live = (cols < live_end[:, None, None]) & (cols >= start[:, None, None])
    vals = torch.gather(logits, 1, cols.clamp(0, max(width - 1, 0)).reshape(rows, -1)).reshape(cols.shape)
    vals = torch.where(live, vals, torch.full_like(vals, float("-inf")))
    if nblocks == 0:
        return vals.new_empty(rows, 0)
    out = from_ordered_hi(ordered_hi(vals).amax(dim=2))
    newest = (end - start - 1).div(bs, rounding_mode="floor")
    pin = (end > start) & (newest < nblocks)
    # pin by scatter, not boolean indexing: no host sync, so the torch arm captures in a CUDA graph
    col = newest.clamp(0, nblocks - 1)[:, None]
    out.scatter_(1, col, torch.where(pin[:, None], torch.full_like(out[:, :1], float("inf")), out.gather(1, col)))
    return out


def block_scores(logits, row_ends, *, row_starts=None, block_size=8, row_repeat=1, impl="auto"):
    """Per-block scores of ``logits`` (contract in the module docstring).

    Args:
        logits: float32 ``[rows, width]``, unit stride along the width (row-strided views accepted).
        row_ends: int32/int64 ``[rows // row_repeat]``, ``>= 0``; may exceed ``width`` (clamped).
        row_starts: same shape as ``row_ends`` or None (= 0); ``row_starts <= row_ends``.
        block_size: columns per block, ``>= 1``.
        row_repeat: rows sharing one bound; must divide ``rows``.
        impl: ``"reference"``/``"torch"`` (the same torch code), ``"triton"`` or ``"auto"``.

    Returns:
        float32 ``[rows, cdiv(width, block_size)]``, a new tensor, every slot written.
        Logits outside ``[start, min(end, width))`` are never read by the Triton kernel.
    """
    rows, width, bs, rr = _check_scores_args(logits, row_ends, row_starts, block_size, row_repeat)
    arm = _impl.resolve(impl, logits.device, ("reference", "torch", "triton"))
    if arm == "triton":
        from .launch.scores import block_scores as block_scores_triton

        return block_scores_triton(logits, row_ends, row_starts, bs, rr)
    return block_scores_torch(logits, row_ends, row_starts, bs, rr)
