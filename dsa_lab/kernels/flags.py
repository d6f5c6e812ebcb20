"""Candidate flags from selected ids (contract: :mod:`dsa_lab.flags`): one memset, then one program per row sets
``flags[r, b] = 1`` for each id ``b >= 0`` of the row, or the sentinel slot ``nblocks`` when the block's first column
``start + b * block_size`` is at or past the width.  Duplicate ids write the same byte.  The hier select writes its
own flags; this kernel serves the radix path and the fused kernel at many rows."""
from __future__ import annotations

import triton
import triton.language as tl

from .common import set_flags


@triton.jit(do_not_specialize=["c_stride", "k", "width", "nblocks", "rr", "has_start"])
def _flags_kernel(c_ptr, c_stride, flags_ptr, start_ptr, k, width, nblocks, rr, has_start,
                  BS: tl.constexpr, KT: tl.constexpr):
    row = tl.program_id(0)
    start = tl.zeros([], tl.int64)
    if has_start:
        start = tl.load(start_ptr + row // rr).to(tl.int64)
    for j0 in range(0, k, KT):
        j = j0 + tl.arange(0, KT)
        c = tl.load(c_ptr + row.to(tl.int64) * c_stride + j, mask=j < k, other=-1)
        set_flags(flags_ptr, row, c, c >= 0, start, width, nblocks, BS)
