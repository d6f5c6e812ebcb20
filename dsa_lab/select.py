"""Top-k selection per row with per-row live extents (``docs/design.md``), and the candidate-block pipeline.

Arms of :func:`topk_select`:

* ``"reference"`` — the contract itself: pack every live column into an int64
  key (:mod:`dsa_lab.keys`), sort the keys, take the first ``min(k, #candidates)``.
  Keys of distinct columns are distinct, so the sort has no ties to break and
  its result is exact on any device.
* ``"torch"`` — the upstream "before" path: ``torch.topk`` over the full width
  (columns at or past a row's length overwritten with ``-inf`` first, when
  ``lengths`` is given), then ``-inf`` → ``-1``.  On CUDA this was measured to
  meet the contract; on the CPU ``torch.topk``'s tie order is not the
  contract's (``tests/test_select_reference.py`` shows where).
* ``"triton"`` — the packed-key kernels (:mod:`dsa_lab.kernels`, planned by :mod:`dsa_lab.plans`).
"""
from __future__ import annotations

import torch

from . import _checks, _impl, keys, plans
from .scores import _check_scores_args, block_scores

__all__ = ["topk_select", "select_candidate_blocks", "topk_select_reference", "topk_select_torch"]

SELECT_IMPLS = ("reference", "torch", "triton")


def _row_lengths(lengths, rows, row_repeat, width, device):
    if lengths is None:
        return torch.full((rows,), width, dtype=torch.int64, device=device)
    g = torch.arange(rows, device=device) // row_repeat
    return lengths.to(torch.int64)[g].clamp(0, width)


def topk_select_reference(scores, k, lengths=None, row_repeat=1):
    """Exact contract: sort of packed keys.  Returns int32 ``[rows, k]`` (sorted by rank, ``-1`` tail)."""
    rows, n = scores.shape
    L = _row_lengths(lengths, rows, row_repeat, n, scores.device)
    col = torch.arange(n, device=scores.device)
    kk = (keys.ordered_hi(scores) << 32) | (keys.MAX_INDEX - col)
    kk = torch.where(col[None, :] < L[:, None], kk, torch.full_like(kk, keys.PAD_KEY))
    top = torch.sort(kk, dim=1, descending=True).values[:, : min(k, n)]
    ids = torch.where(keys.is_candidate(top), keys.key_index(top), torch.full_like(top, -1))
    out = torch.full((rows, k), -1, dtype=torch.int32, device=scores.device)
    out[:, : ids.shape[1]] = ids.to(torch.int32)
    return out


def topk_select_torch(scores, k, lengths=None, row_repeat=1):
    """Upstream before-arm: ``torch.topk`` over the full width, ``-inf`` → ``-1``."""
    rows, n = scores.shape
    if lengths is not None:
        L = _row_lengths(lengths, rows, row_repeat, n, scores.device)
        col = torch.arange(n, device=scores.device)
        scores = scores.masked_fill(col[None, :] >= L[:, None], float("-inf"))
    kk = min(k, n)
    vals, idx = torch.topk(scores, kk, dim=1)
    ids = torch.where(vals == float("-inf"), torch.full_like(idx, -1), idx)
    if kk == k:
        return ids.to(torch.int32)
    out = torch.full((rows, k), -1, dtype=torch.int32, device=scores.device)
    out[:, :kk] = ids.to(torch.int32)
    return out


def _check_select_args(scores, k, lengths, row_repeat, out):
    _checks.tensor(scores, "scores", dtypes=(torch.float32,))
    _checks.row_strided(scores, "scores")
    rows, n = scores.shape
    if n > _checks.MAX_WIDTH:
        raise ValueError(f"scores width {n} exceeds {_checks.MAX_WIDTH} (int32 output ids)")
    k = _checks.positive_int(k, "k")
    rr = _checks.row_repeat(row_repeat, rows)
    _checks.bounds(lengths, "lengths", rows // rr, scores.device, optional=True)
    _checks.out_tensor(out, (rows, k), torch.int32, scores.device)
    return k, rr


def topk_select(scores, k, *, lengths=None, row_repeat=1, impl="auto", out=None):
    """Indices of the top-``k`` live columns of each row, by the selection contract (``docs/design.md``).

    Args:
        scores: float32 ``[rows, n]`` (unit stride along ``n``; row-strided views accepted).
            Any value is allowed, NaN included; columns at or past a row's length are never
            candidates whatever they hold.
        k: int ``>= 1``; may exceed ``n`` or the number of candidates (the tail is ``-1``).
        lengths: int32/int64 ``[rows // row_repeat]`` live lengths (clamped to ``n``), or None (= n).
            Row ``r`` uses ``lengths[r // row_repeat]``.  The Triton arm reads it on the device.
        row_repeat: rows sharing one length; must divide ``rows``.
        impl: ``"reference"``, ``"torch"``, ``"triton"`` or ``"auto"`` (``DSA_LAB_IMPL`` overrides).
        out: optional int32 ``[rows, k]`` contiguous tensor to write into.

    Returns:
        int32 ``[rows, k]``: the selected column ids in any order, then ``-1`` in every
        remaining slot.  All ``k`` slots of every row are written.
    """
    k, rr = _check_select_args(scores, k, lengths, row_repeat, out)
    arm = _impl.resolve(impl, scores.device, SELECT_IMPLS)
    if arm == "triton":
        from .launch.select import topk_select as topk_select_triton

        return topk_select_triton(scores, k, lengths, rr, out)
    res = (topk_select_reference if arm == "reference" else topk_select_torch)(scores, k, lengths, rr)
    if out is not None:
        out.copy_(res)
        return out
    return res


def _check_fused(topk_blocks: int, block_size: int, width: int, facts: dict) -> None:
    if not plans.fusable(topk_blocks, block_size):
        raise ValueError(f"impl='triton_fused' serves max(64, next_pow2(topk_blocks)) * group * block_size <= "
                         f"4096 (k <= 256 at block_size 8); got topk_blocks={topk_blocks}, block_size={block_size}: "
                         "use impl='triton'")
    most, nblocks = plans.fused_blocks(topk_blocks, block_size, facts), -(-width // block_size)
    if nblocks > most:
        raise ValueError(f"impl='triton_fused' serves at most {most} blocks per row at topk_blocks={topk_blocks}; "
                         f"got {nblocks}: use impl='triton'")


def select_candidate_blocks(
    logits, row_ends, topk_blocks, *, row_starts=None, block_size=8, row_repeat=1, impl="auto", out=None,
    with_flags=False,
):
    """Top-``topk_blocks`` candidate blocks per row: :func:`block_scores` then :func:`topk_select`.

    Args: as :func:`dsa_lab.block_scores`, plus ``topk_blocks`` (int ``>= 1``) and ``out``
    (optional int32 ``[rows, topk_blocks]``).  ``impl`` also accepts ``"triton_unfused"`` (the same as
    ``"triton"``: bounded Triton block scores written to memory, then the select kernel) and ``"triton_fused"`` (one
    kernel: logits read once, block maxima formed on the fly, no scores tensor; only where
    :func:`dsa_lab.plans.fusable`, e.g. k <= 256 at block_size 8, else ``ValueError``).  The live block extent of
    row ``r`` is ``cdiv(min(end, width) - start, block_size)`` blocks, widened to include the pinned newest block;
    blocks past it are ``-inf`` and never selected.

    ``with_flags=True`` returns ``(ids, flags)``, flags as :func:`dsa_lab.candidate_flags` of the ids (same
    contract, sentinel slot included); on the Triton arms the select writes them in its own launch where it can
    (no memset, no flags kernel), the other arms compose :func:`dsa_lab.candidate_flags`.

    Returns:
        int32 ``[rows, topk_blocks]`` block ids in any order, ``-1`` tail (with ``with_flags``: and the flags).
    """
    if not isinstance(with_flags, bool):
        raise TypeError(f"with_flags must be a bool, got {type(with_flags).__name__}")
    rows, width, bs, rr = _check_scores_args(logits, row_ends, row_starts, block_size, row_repeat)
    topk_blocks = _checks.positive_int(topk_blocks, "topk_blocks")
    _checks.out_tensor(out, (rows, topk_blocks), torch.int32, logits.device)
    arm = _impl.resolve(impl, logits.device, SELECT_IMPLS + ("triton_unfused", "triton_fused"))
    if arm in ("triton", "triton_unfused", "triton_fused"):
        from .launch.select import candidate_blocks

        fused = arm == "triton_fused"
        if fused:
            _check_fused(topk_blocks, bs, width, _impl.facts_for(logits))
        return candidate_blocks(logits, row_ends, topk_blocks, row_starts, bs, rr, out, fused=fused,
                                with_flags=with_flags)
    sc = block_scores(logits, row_ends, row_starts=row_starts, block_size=bs, row_repeat=rr, impl="torch")
    ids = topk_select(sc, topk_blocks, impl=arm, out=out)
    if with_flags:
        from .flags import candidate_flags_torch

        return ids, candidate_flags_torch(ids, width, row_starts, bs, rr)
    return ids

