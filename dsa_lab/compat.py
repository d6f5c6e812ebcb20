"""Drop-ins for a serving engine's DeepSeek sparse-attention candidate blocks (``docs/serving.md``).

* :func:`vllm_select_candidate_blocks` and :func:`vllm_apply_candidate_mask`: vLLM's ``select_candidate_blocks`` /
  ``apply_candidate_mask``, same signatures, same in-place semantics, served by this package's kernels.
* :func:`reference_candidate_mask`: DeepSeek's reference-model candidate mask, per block.

Each is a ``torch.library`` custom op (namespace ``dsa_lab``) with a fake implementation, so a ``torch.compile``d
caller keeps one graph and never traces into a launcher.  The Python functions check the arguments' types and
shapes (traceable: no host read) and call the ops; the ops read values only outside a CUDA graph capture
(``dsa_lab._checks``).  Bounds are in packed column space: row ``r`` of ``logits [rows, width]`` uses group
``g = r // row_repeat``, ``start = row_ks[g]`` (0 when ``row_ks`` is None) and ``end = row_ke[g]``.
"""
from __future__ import annotations

import numbers
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from . import _checks, _impl
from .flags import candidate_flags_torch
from .keys import from_ordered_hi, ordered_hi
from .select import select_candidate_blocks, topk_select

__all__ = ["vllm_select_candidate_blocks", "vllm_apply_candidate_mask", "reference_candidate_mask",
           "apply_candidate_mask_torch"]

IMPLS = ("reference", "torch", "triton")


# ------------------------------------------------------------------------------------------------------ checks
def _check_logits(logits):
    _checks.tensor(logits, "logits", dtypes=(torch.float32,))
    _checks.row_strided(logits, "logits")
    if logits.shape[1] > _checks.MAX_WIDTH:
        raise ValueError(f"logits width {logits.shape[1]} exceeds {_checks.MAX_WIDTH} (int32 block ids)")
    return logits.shape


def _check_row_bounds(row_ks, row_ke, groups, device):
    """``row_ke`` (and ``row_ks`` unless None): 1-D int32/int64 with at least ``groups`` entries; like upstream,
    only the first ``groups`` are read."""
    for x, name in ((row_ke, "row_ke"), (row_ks, "row_ks")):
        if x is None and name == "row_ks":
            continue
        _checks.tensor(x, name, dtypes=_checks.INT_DTYPES, ndim=1, device=device)
        if x.shape[0] < groups:
            raise ValueError(f"{name} must have at least {groups} entries (rows // row_repeat), got {x.shape[0]}")


_I32_MAX = 2**31 - 1


def _int32(x: Tensor, low: int) -> Tensor:
    """``x`` as int32 (the warmed kernels' argument type: an int64 tensor would compile variants of its own),
    clamped to ``[low, 2**31 - 1]``: every bound and id past that range means the same to the kernels."""
    return x if x.dtype == torch.int32 else x.clamp(low, _I32_MAX).to(torch.int32)


def _first(x: Optional[Tensor], groups: int, name: str) -> Optional[Tensor]:
    """The first ``groups`` bounds, value-checked (``>= 0``), as contiguous int32 (the kernels index them
    densely)."""
    if x is None:
        return None
    return _int32(_checks.bounds(x[:groups].contiguous(), name, groups, x.device), 0)


# ----------------------------------------------------------------------------------------------------- select
@torch.library.custom_op("dsa_lab::vllm_select_candidate_blocks", mutates_args=("out",))
def _select_op(logits: Tensor, row_ks: Optional[Tensor], row_ke: Tensor, topk_blocks: int, block_size: int,
               out: Tensor, row_repeat: int) -> None:
    rows, width = logits.shape
    if rows == 0:
        return
    if width == 0:
        out.fill_(-1)
        return
    g = rows // row_repeat
    ends, starts = _first(row_ke, g, "row_ke"), _first(row_ks, g, "row_ks")
    _checks.starts_le_ends(starts, ends, ("row_ks", "row_ke"))
    dst = out if out.is_contiguous() else torch.empty(out.shape, dtype=out.dtype, device=out.device)
    select_candidate_blocks(logits, ends, topk_blocks, row_starts=starts, block_size=block_size,
                            row_repeat=row_repeat, impl="auto", out=dst)
    if dst is not out:
        out.copy_(dst)


@_select_op.register_fake
def _(logits, row_ks, row_ke, topk_blocks, block_size, out, row_repeat):
    return None


def vllm_select_candidate_blocks(logits: Tensor, row_ks: Optional[Tensor], row_ke: Tensor, topk_blocks: int,
                                 block_size: int, out: Tensor, row_repeat: int = 1) -> None:
    """vLLM's ``select_candidate_blocks``: the top ``topk_blocks`` blocks of each row, written into ``out``.

    Args:
        logits: float32 ``[rows, width]``, unit stride along the width (row-strided views accepted); only the
            columns in ``[start, min(end, width))`` are read.
        row_ks: int32/int64 1-D, at least ``rows // row_repeat`` entries (the first are read), or None (= 0).
        row_ke: same, the row ends (exclusive; may exceed ``width``).  ``0 <= row_ks <= row_ke``.
        topk_blocks: the budget, int ``>= 1``; block_size: columns per block, int ``>= 1``.
        out: int32 ``[rows, topk_blocks]``, overwritten.
        row_repeat: rows sharing one bound (decode: ``next_n``); must divide ``rows``.

    Block ``b`` covers columns ``start + b * block_size ...`` within ``[start, min(end, width))``; its score is
    their max (any NaN wins); a block with no live column is ``-inf`` and never selected; the newest block
    ``(end - start - 1) // block_size`` is ``+inf`` when ``end > start`` and it is below ``cdiv(width,
    block_size)`` (selected unless NaN blocks fill the budget; its first column may lie past the width).
    ``out[r]`` holds the ``min(topk_blocks, #candidates)`` best block ids by the selection contract
    (``docs/design.md`` §2: NaN above ``+inf``, ties to the smaller id) in any order, then
    ``-1`` in every remaining slot.  ``rows == 0``: nothing is written; ``width == 0``: ``out`` is all ``-1``.
    """
    rows, _ = _check_logits(logits)
    topk_blocks = _checks.positive_int(topk_blocks, "topk_blocks")
    block_size = _checks.positive_int(block_size, "block_size")
    row_repeat = _checks.row_repeat(row_repeat, rows)
    _check_row_bounds(row_ks, row_ke, rows // row_repeat, logits.device)
    _checks.tensor(out, "out", dtypes=(torch.int32,), device=logits.device)
    if tuple(out.shape) != (rows, topk_blocks):
        raise ValueError(f"out must have shape {(rows, topk_blocks)}, got {tuple(out.shape)}")
    _select_op(logits, row_ks, row_ke, topk_blocks, block_size, out, row_repeat)


# ------------------------------------------------------------------------------------------------------- mask
def apply_candidate_mask_torch(logits, row_ends, row_starts, candidates, block_size, row_repeat=1):
    """Torch arm of :func:`vllm_apply_candidate_mask`; inputs checked by the caller, bounds of ``rows // row_repeat``
    entries.  No host read, so it also captures in a CUDA graph; it holds ``rows x width`` int64 temporaries."""
    rows, width = logits.shape
    dev = logits.device
    nb = -(-width // block_size)
    g = torch.arange(rows, device=dev) // row_repeat
    end = row_ends.to(torch.int64)[g][:, None]
    start = row_starts.to(torch.int64)[g][:, None] if row_starts is not None else torch.zeros_like(end)
    flags = candidate_flags_torch(candidates, width, row_starts, block_size, row_repeat).bool()
    col = torch.arange(width, device=dev)[None, :]
    live = (col >= start) & (col < end)
    blk = ((col - start).clamp(min=0) // block_size).clamp(max=nb)
    keep = live & (flags.gather(1, blk) | (flags[:, nb:nb + 1] & (col == width - 1)))
    return logits.masked_fill_(~keep, float("-inf"))


@torch.library.custom_op("dsa_lab::vllm_apply_candidate_mask", mutates_args=("logits",))
def _mask_op(logits: Tensor, row_ks: Optional[Tensor], row_ke: Tensor, candidate_blocks: Tensor, block_size: int,
             row_repeat: int) -> None:
    rows, width = logits.shape
    if rows == 0 or width == 0:
        return
    g = rows // row_repeat
    ends, starts = _first(row_ke, g, "row_ke"), _first(row_ks, g, "row_ks")
    _checks.starts_le_ends(starts, ends, ("row_ks", "row_ke"))
    cand = _int32(candidate_blocks, -1)  # a negative id is ignored, one past the width is the sentinel: so clamped
    cand = cand if cand.shape[1] <= 1 or cand.stride(1) == 1 else cand.contiguous()
    arm = _impl.resolve("auto", logits.device, IMPLS)
    if arm != "triton":
        apply_candidate_mask_torch(logits, ends, starts, cand, block_size, row_repeat)
        return
    from .launch.scores import apply_mask

    flags = torch.empty((rows, -(-width // block_size) + 1), dtype=torch.uint8, device=logits.device)
    apply_mask(logits, ends, starts, cand, flags, block_size, row_repeat, _impl.facts_for(logits)["sm_count"])


@_mask_op.register_fake
def _(logits, row_ks, row_ke, candidate_blocks, block_size, row_repeat):
    return None


def vllm_apply_candidate_mask(logits: Tensor, row_ks: Optional[Tensor], row_ke: Tensor, candidate_blocks: Tensor,
                              block_size: int, row_repeat: int = 1) -> None:
    """vLLM's ``apply_candidate_mask``: in place, ``-inf`` at every column of a row but the kept ones.

    Args:
        logits: float32 ``[rows, width]``, unit stride along the width (row-strided views accepted).
        row_ks, row_ke, block_size, row_repeat: as :func:`vllm_select_candidate_blocks`.
        candidate_blocks: int32/int64 ``[rows, k]`` (``k >= 0``) block ids; any id is accepted: a negative one is
            ignored, and one whose first column ``start + b * block_size`` is at or past ``width`` folds into the
            sentinel (the ``nblocks`` slot of :func:`dsa_lab.candidate_flags`).

    Column ``c`` of row ``r`` is kept when ``start <= c < end`` and either its block ``(c - start) // block_size``
    is among the row's ids or ``c == width - 1`` and the sentinel is set.  Kept columns are neither read nor
    written (their values, NaN included, stay bit for bit); every other column of ``[0, width)``, the tail past
    ``end`` included, is set to ``-inf``.  Nothing past ``width`` (a row stride's padding) is touched.
    """
    rows, _ = _check_logits(logits)
    block_size = _checks.positive_int(block_size, "block_size")
    row_repeat = _checks.row_repeat(row_repeat, rows)
    _check_row_bounds(row_ks, row_ke, rows // row_repeat, logits.device)
    _checks.tensor(candidate_blocks, "candidate_blocks", dtypes=_checks.INT_DTYPES, ndim=2, device=logits.device)
    if candidate_blocks.shape[0] != rows:
        raise ValueError(f"candidate_blocks must have {rows} rows (one per logits row), "
                         f"got {candidate_blocks.shape[0]}")
    _mask_op(logits, row_ks, row_ke, candidate_blocks, block_size, row_repeat)


# -------------------------------------------------------------------------------------------------- reference
@torch.library.custom_op("dsa_lab::reference_candidate_mask", mutates_args=())
def _reference_op(logits: Tensor, compress_lens: Tensor, topk_blocks: int, block_size: int) -> Tensor:
    rows, width = logits.shape
    nb = -(-width // block_size)
    if nb == 0:
        return torch.zeros((rows, 0), dtype=torch.bool, device=logits.device)
    x = F.pad(logits, (0, nb * block_size - width), value=float("-inf")).view(rows, nb, block_size)
    scores = from_ordered_hi(ordered_hi(x).amax(dim=2))  # max in the contract's order: NaN wins
    last = (compress_lens.to(torch.int64) - 1).div(block_size, rounding_mode="floor")
    blk = torch.arange(nb, device=logits.device)
    scores = torch.where(blk[None, :] == last[:, None], torch.full_like(scores, float("inf")), scores)
    # the contract's order (ties to the smaller block); CPU torch.topk breaks ties otherwise, so its arm sorts keys
    arm = _impl.resolve("auto", logits.device, IMPLS)
    ids = topk_select(scores, topk_blocks, impl="reference" if arm == "torch" else arm).to(torch.int64)
    # the reference keeps a pick only if its score is above -inf: a NaN block takes its slot and is dropped
    picked = (ids >= 0) & ~torch.isnan(scores.gather(1, ids.clamp(min=0)))
    keep = torch.zeros((rows, nb + 1), dtype=torch.bool, device=logits.device)
    keep.scatter_(1, torch.where(picked, ids, torch.full_like(ids, nb)), True)
    return keep[:, :nb].contiguous()


@_reference_op.register_fake
def _(logits, compress_lens, topk_blocks, block_size):
    return logits.new_empty((logits.shape[0], -(-logits.shape[1] // block_size)), dtype=torch.bool)


def reference_candidate_mask(logits: Tensor, compress_lens, topk_blocks: int, block_size: int) -> Tensor:
    """DeepSeek's reference candidate-block selection, as a block mask: bool ``[rows, cdiv(width, block_size)]``.

    Args:
        logits: float32 ``[rows, width]`` (``width >= 0``), unit stride along the width; positions a query cannot
            reach are expected to hold ``-inf`` already (the reference masks nothing by ``compress_lens``).
        compress_lens: an int (decode: one length for every row) or an int tensor broadcasting over the rows
            (shape ``()``, ``(1,)``, ``(rows,)`` or ``(rows, 1)``): the reachable compressed positions.
        topk_blocks, block_size: ints ``>= 1``.

    The last block is padded with ``-inf`` to ``block_size``; a block's score is the max of its positions (any
    NaN wins); block ``(compress_lens - 1) // block_size`` (floor) is pinned to ``+inf`` when it exists.  The
    ``min(topk_blocks, nblocks)`` best blocks are taken (NaN above ``+inf``, ties to the smaller block), and those
    scoring ``-inf`` or NaN are dropped.  The reference's position mask is
    ``mask.repeat_interleave(block_size, -1)[:, :width]``.
    """
    rows, _ = _check_logits(logits)
    topk_blocks = _checks.positive_int(topk_blocks, "topk_blocks")
    block_size = _checks.positive_int(block_size, "block_size")
    if isinstance(compress_lens, Tensor):
        _checks.tensor(compress_lens, "compress_lens", dtypes=_checks.INT_DTYPES, device=logits.device)
        lens = compress_lens[:, 0] if compress_lens.dim() == 2 and compress_lens.shape[1] == 1 else compress_lens
        if lens.dim() > 1 or lens.numel() not in (1, rows):
            raise ValueError(f"compress_lens must broadcast over {rows} rows: shape (), (1,), ({rows},) or "
                             f"({rows}, 1), got {tuple(compress_lens.shape)}")
        lens = lens.reshape(-1).expand(rows)
    else:
        if isinstance(compress_lens, bool) or not isinstance(compress_lens, numbers.Integral):
            raise TypeError(f"compress_lens must be an int or a torch.Tensor, got {type(compress_lens).__name__}")
        lens = torch.full((rows,), int(compress_lens), dtype=torch.int64, device=logits.device)
    return _reference_op(logits, lens, topk_blocks, block_size)
