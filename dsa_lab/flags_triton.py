"""Triton candidate flags (contract: :mod:`dsa_lab.flags`).

A zeroed ``uint8 [rows, nblocks + 1]`` (one memset), then one program per row sets
``flags[r, b] = 1`` for every id ``b >= 0`` of ``candidates[r]``, or the sentinel slot
``nblocks`` when the block's first column ``start + b * block_size`` is at or past the
width.  ``row_starts`` is read on the device.  Duplicate ids write the same byte (benign).
Arch: no warp-size-specific code; ROCm is unverified.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

__all__ = ["candidate_flags_triton", "fill_flags_triton", "tl_zero_flags"]


@triton.jit
def tl_zero_flags(flags_ptr, row, lo, hi, n, FZT: tl.constexpr, MODE: tl.constexpr):
    """Zero bytes ``[lo, hi)`` of the row's flags (``uint8 [rows, n + 1]``).

    ``MODE`` 1 (the tensor's first byte 16-byte aligned, checked by the launcher): the 8-byte words inside the
    range as int64 stores, the at most 7 + 7 bytes around them as bytes.  A row is ``n + 1`` bytes, so its start
    is rarely aligned and the byte-wise loop below (``MODE`` 0, the default) stores one byte per lane.  ``MODE`` 2:
    nothing (an earlier launch zeroed the flags)."""
    base = row.to(tl.int64) * (n + 1)
    if MODE == 2:
        pass
    elif MODE == 1:
        a = base + lo
        b = base + hi
        a8 = (a + 7) // 8 * 8
        b8 = b // 8 * 8
        j8 = tl.arange(0, 8)
        z8 = tl.zeros([8], tl.uint8)
        tl.store(flags_ptr + a + j8, z8, mask=a + j8 < tl.minimum(a8, b))  # head
        tl.store(flags_ptr + tl.maximum(b8, a) + j8, z8, mask=tl.maximum(b8, a) + j8 < b)  # tail
        wp = (flags_ptr + a8).to(tl.pointer_type(tl.int64))
        nw = (b8 - a8) // 8  # <= 0 when no whole word lies inside
        jw = tl.arange(0, FZT // 8)
        zw = tl.zeros([FZT // 8], tl.int64)
        for w0 in range(0, nw, FZT // 8):
            tl.store(wp + w0 + jw, zw, mask=w0 + jw < nw)
    else:
        j = tl.arange(0, FZT)
        z = tl.zeros([FZT], tl.uint8)
        for j0 in range(lo, hi, FZT):
            tl.store(flags_ptr + base + j0 + j, z, mask=j0 + j < hi)



# shape ints are not specialised (divisibility/==1 hints buy nothing here and would compile one
# variant per k, width and split of a sweep or fuzz)
@triton.jit(do_not_specialize=["k", "width", "nblocks"])
def _flags_kernel(c_ptr, c_stride, flags_ptr, start_ptr, k, width, nblocks,
                  RR: tl.constexpr, BS: tl.constexpr, KT: tl.constexpr, HAS_START: tl.constexpr):
    row = tl.program_id(0)
    start = tl.zeros([], tl.int64)
    if HAS_START:
        start = tl.load(start_ptr + row // RR).to(tl.int64)
    fbase = row.to(tl.int64) * (nblocks + 1)
    one = tl.full([KT], 1, tl.uint8)
    for j0 in range(0, k, KT):
        j = j0 + tl.arange(0, KT)
        c = tl.load(c_ptr + row.to(tl.int64) * c_stride + j, mask=j < k, other=-1).to(tl.int64)
        valid = c >= 0
        slot = tl.where(start + c * BS >= width, nblocks, c)
        tl.store(flags_ptr + fbase + slot, one, mask=valid)


def fill_flags_triton(candidates, flags, width, row_starts=None, block_size=8, row_repeat=1):
    """Zero ``flags`` (uint8 ``[rows, cdiv(width, block_size) + 1]``, contiguous) and set the selected blocks'
    bytes (the contract of :func:`candidate_flags_triton`, into a given tensor).  Returns ``flags``."""
    rows, k = candidates.shape
    bs = int(block_size)
    nblocks = -(-int(width) // bs)
    flags.zero_()
    if rows == 0 or k == 0:
        return flags
    kt = max(2, min(1024, 1 << (k - 1).bit_length()))
    _flags_kernel[(rows,)](
        candidates, candidates.stride(0), flags, row_starts if row_starts is not None else candidates,
        k, int(width), nblocks,
        RR=int(row_repeat), BS=bs, KT=kt, HAS_START=row_starts is not None, num_warps=4,
    )
    return flags


def candidate_flags_triton(candidates, width, row_starts=None, block_size=8, row_repeat=1):
    """Flags of selected blocks (arguments validated by :func:`dsa_lab.candidate_flags`).

    Args:
        candidates: int32/int64 ``[rows, k]`` (unit stride along k), ``-1`` or ids in ``[0, nblocks)``.
        width: logits width; ``nblocks = cdiv(width, block_size)``.
        row_starts: int ``[rows // row_repeat]`` device tensor or None (= 0).

    Returns:
        uint8 ``[rows, nblocks + 1]``, new, every slot written.
    """
    rows, _ = candidates.shape
    nblocks = -(-int(width) // int(block_size))
    flags = torch.empty((rows, nblocks + 1), dtype=torch.uint8, device=candidates.device)
    return fill_flags_triton(candidates, flags, width, row_starts, block_size, row_repeat)
