"""Block scores: the NaN-propagating max of each ``block_size`` run of a row's live logits (contract:
:mod:`dsa_lab.scores`), bounded by each row's extent.

Grid ``(rows, Q)``: the row's ``Q`` programs stride over its tiles of ``BJ`` blocks (``BJ * BS`` logits).  A tile
past the row's extent loads nothing; with ``FILL_DEAD`` it writes ``-inf``, else nothing (the unfused select never
reads past the extent).  ``PADDED``: the upstream "before" kernel, which loads every column up to the padded width
and masks after the load (its cost follows the width, not the extent).  Bounds are read on the device.

The unfused candidate-block path also lets this launch zero the flags (``ZERO_FLAGS``) and, at few rows, store the hier
select's stage-A keys (``SG``: the super-group size; see :func:`_stage_a_keys`), and signals
``griddepcontrol.launch_dependents`` as each program starts (``PDL``) so the select launch, a programmatic dependent,
may start early; it waits for this launch's writes itself.
"""
from __future__ import annotations

import triton
import triton.language as tl

from .common import tl_block_score, tl_ordered_hi, zero_flags
from .common import tl_cuda as _tl_cuda


@triton.jit
def _stage_a_keys(s, j, n_ext, nblocks, sgrow, sg_min, jb, BJ: tl.constexpr, SG: tl.constexpr):
    """The hier select's stage-A keys of the ``BJ // SG`` super groups (``SG`` blocks each) of one tile of block
    scores ``s`` (blocks ``j``), stored at ``sgrow + super group`` for the groups holding a block below the row's
    extent ``L = min(n_ext, nblocks)``: the largest ordered high word of their live blocks and the group's first
    block in the low word (the keys the select's own stage A writes with ``afirst``; a stored score's ordered word,
    NaN included, round-trips exactly).  Rows with ``L <= sg_min`` take a path without stage A: nothing."""
    lim = tl.minimum(n_ext, nblocks)
    if lim > sg_min:
        h = tl.where(j.to(tl.int64) < lim, tl_ordered_hi(s), -2147483648)
        hm = tl.max(tl.reshape(h, [BJ // SG, SG]), axis=1)
        sg = jb * (BJ // SG) + tl.arange(0, BJ // SG)
        key = (hm.to(tl.int64) << 32) | (0xFFFFFFFF - sg.to(tl.int64) * SG)
        tl.store(sgrow + sg, key, mask=sg.to(tl.int64) * SG < lim)


@triton.jit
def _score_tile(x_ptr, row_off, orow, sgrow, sg_min, jb, start, end, lend, n_ext, width, nblocks,
                BS: tl.constexpr, BSP: tl.constexpr, BJ: tl.constexpr, PADDED: tl.constexpr, FILL_DEAD: tl.constexpr,
                SG: tl.constexpr):
    """Tile ``jb`` of a row: its ``BJ`` blocks' scores (and stage-A keys)."""
    j = jb * BJ + tl.arange(0, BJ)
    t = tl.arange(0, BSP)
    if PADDED:  # upstream: read the whole padded width, mask after the load
        c = start + j[:, None].to(tl.int64) * BS + t[None, :]
        lane = (t[None, :] < BS) & (j[:, None] < nblocks)
        x = tl.load(x_ptr + row_off + c, mask=lane & (c < width), other=float("-inf"))
        x = tl.where(lane & (c < lend), x, float("-inf"))
        tl.store(orow + j, tl_block_score(x, j, start, end, 1, BS), mask=j < nblocks)
    elif jb * BJ >= n_ext:  # a tile past the row's extent: no column read
        if FILL_DEAD:
            tl.store(orow + j, tl.full([BJ], float("-inf"), tl.float32), mask=j < nblocks)
    else:
        rel = j[:, None] * BS + t[None, :]  # 32-bit offsets from the row's start (columns < 2**31)
        live = rel < (lend - start).to(tl.int32)
        if BSP != BS:  # padded lanes belong to the next block
            live = live & (t[None, :] < BS)
        x = tl.load(x_ptr + (row_off + start) + rel, mask=live, other=float("-inf"))
        s = tl_block_score(x, j, start, end, 1, BS)
        tl.store(orow + j, s, mask=j < nblocks)
        if SG > 0:
            _stage_a_keys(s, j, n_ext, nblocks, sgrow, sg_min, jb, BJ, SG)


@triton.jit(do_not_specialize=["x_stride", "o_stride", "sg_stride", "sg_min", "width", "nblocks", "Q", "rr"])
def _block_scores_kernel(
    x_ptr, x_stride, out_ptr, o_stride, end_ptr, start_ptr, flags_ptr, sg_ptr, sg_stride, sg_min,
    width, nblocks, Q, rr,
    BS: tl.constexpr, BSP: tl.constexpr, BJ: tl.constexpr, PADDED: tl.constexpr, FILL_DEAD: tl.constexpr,
    SG: tl.constexpr, PDL: tl.constexpr, ZERO_FLAGS: tl.constexpr, HAS_START: tl.constexpr, ALIGNED: tl.constexpr,
):
    """``ZERO_FLAGS``: zero the flags (0 no, 1 bytes, 2 8-byte words).  ``ALIGNED`` (the logits' row stride is a
    multiple of 16, and the row offset is computed so that the compiler can prove it) and ``HAS_START`` are
    constexprs: what the compiler knows of the loads' alignment shapes their layout and width."""
    if PDL:
        _tl_cuda.gdc_launch_dependents()
    row = tl.program_id(0)
    jb0 = tl.program_id(1)
    if ZERO_FLAGS > 0:  # flags [rows, nblocks + 1]: the row's Q programs zero one slice each
        fper = (nblocks + 1 + Q - 1) // Q
        zero_flags(flags_ptr, row, jb0 * fper, tl.minimum(jb0 * fper + fper, nblocks + 1), nblocks, ZERO_FLAGS)
    g = row
    if rr > 1:
        g = row // rr
    end = tl.maximum(tl.load(end_ptr + g).to(tl.int64), 0)
    start = tl.zeros([], tl.int64)
    if HAS_START:
        start = tl.minimum(tl.maximum(tl.load(start_ptr + g).to(tl.int64), 0), end)
    lend = tl.minimum(end, width)
    orow = out_ptr + row.to(tl.int64) * o_stride
    sgrow = sg_ptr + row.to(tl.int64) * sg_stride
    n_ext = tl.maximum((tl.maximum(lend - start, 0) + BS - 1) // BS,
                       tl.where(end > start, (end - start - 1) // BS + 1, 0))
    if FILL_DEAD:
        ntiles = (nblocks + BJ - 1) // BJ
    else:
        ntiles = (n_ext + BJ - 1) // BJ  # a short row in a wide tensor costs its live tiles only
    if ALIGNED:
        row_off = row.to(tl.int64) * (x_stride // 16) * 16
    else:
        row_off = row.to(tl.int64) * x_stride
    # The row's Q programs stride over its tiles.  The first tile is peeled out of the loop: with one tile per
    # program (most launches) no loop is entered, and the loop form of that tile measured slower.  The stage-A
    # launch has a program per tile and no loop at all: the loop's live values cost it registers, hence resident
    # programs, hence load bandwidth (the count is in the notes).
    if jb0 < ntiles:
        _score_tile(x_ptr, row_off, orow, sgrow, sg_min, jb0, start, end, lend, n_ext, width, nblocks,
                    BS, BSP, BJ, PADDED, FILL_DEAD, SG)
    if SG == 0:
        for jb in range(jb0 + Q, ntiles, Q):
            _score_tile(x_ptr, row_off, orow, sgrow, sg_min, jb, start, end, lend, n_ext, width, nblocks,
                        BS, BSP, BJ, PADDED, FILL_DEAD, SG)
