"""Candidate mask of packed logits, in place (contract: :func:`dsa_lab.compat.vllm_apply_candidate_mask`).

Two launches: the candidate flags (:mod:`.flags`: a memset, then one program per row sets ``flags[r, b]``, or the
sentinel slot ``nblocks`` for a block whose first column ``start + b * block_size`` is at or past the width), then
this kernel.  Grid ``(rows, Q)``: the row's ``Q`` programs stride over its ``TILE``-column tiles and store ``-inf``
at every column of ``[0, width)`` that is not kept; a kept column is live (``start <= col < end``) and either in a
flagged block or, when the sentinel is set, the last column ``width - 1``.  Kept columns are neither read nor
written.  Bounds are read on the device; ``Q`` follows the shapes only, so the launch captures in a CUDA graph and
replays with new bounds.
"""
from __future__ import annotations

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["x_stride", "width", "nblocks", "rr", "Q", "has_start"])
def _mask_kernel(x_ptr, x_stride, flags_ptr, end_ptr, start_ptr, width, nblocks, rr, Q, has_start,
                 BS: tl.constexpr, TILE: tl.constexpr):
    row = tl.program_id(0)
    g = row // rr
    end = tl.load(end_ptr + g).to(tl.int64)
    start = tl.zeros([], tl.int64)
    if has_start:
        start = tl.load(start_ptr + g).to(tl.int64)
    frow = flags_ptr + row.to(tl.int64) * (nblocks + 1)
    edge = tl.load(frow + nblocks).to(tl.int32)
    xrow = x_ptr + row.to(tl.int64) * x_stride
    lane = tl.arange(0, TILE)
    for t0 in range(tl.program_id(1) * TILE, width, Q * TILE):
        col = t0 + lane.to(tl.int64)
        inside = col < width
        live = inside & (col >= start) & (col < end)
        # only a live column's flag is read: the others are -inf whatever their block holds
        f = tl.load(frow + (col - start) // BS, mask=live, other=0).to(tl.int32)
        keep = live & ((f != 0) | ((col == width - 1) & (edge != 0)))
        tl.store(xrow + col, tl.full([TILE], float("-inf"), tl.float32), mask=inside & (keep == 0))
