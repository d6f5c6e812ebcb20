"""Triton block scores (contract: :mod:`dsa_lab.scores`).

:func:`block_scores_triton` writes every slot of a new float32 ``[rows, nblocks]``:
``-inf`` for blocks with no live column, the NaN-propagating max otherwise, ``+inf``
for the row's newest block.  Bounds are read on the device (no host sync; a
capture-safe single launch).

* ``padded=False`` (default, bounded): logits outside ``[start, min(end, width))``
  are never loaded; blocks past a row's extent are written as ``-inf`` without
  reading anything.
* ``padded=True``: the upstream-faithful "before" kernel (vLLM's
  ``_block_scores_kernel`` shape): it loads every block's columns up to the padded
  width and masks dead columns to ``-inf`` after the load, so its cost is set by
  the padded width, not the live extent.  Same output.

Arch: no warp-size-specific code; ROCm is unverified.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.language.extra import cuda as _tl_cuda  # gdc_launch_dependents: programmatic dependent launch (sm_90+)

from . import _checks
from .flags_triton import tl_zero_flags
from .keys_triton import tl_from_ordered_hi, tl_ordered_hi

__all__ = ["block_scores_triton"]


@triton.jit
def tl_block_score(x, block_id, start, end, AXIS: tl.constexpr, BS: tl.constexpr):
    """Score of blocks laid along ``AXIS`` of ``x`` (masked lanes already ``-inf``): the max in the
    contract's order, taken over ordered integers (:func:`tl_ordered_hi`), so any NaN wins (NaN
    propagates, as bits ``0x7FFFFFFF``), ``+0.0`` beats ``-0.0`` and subnormals compare exactly.  A GPU
    float ``max`` does none of these reliably (signed-zero choice, subnormal flushing): the H200 fuzz
    found block sets that differed from ``torch.amax`` that way.  The newest block
    ``(end - start - 1) // BS`` is pinned to ``+inf`` when ``end > start``.  Shared by the block-scores
    kernel and the fused select path, so both compute bit-identical scores."""
    s = tl_from_ordered_hi(tl.max(tl_ordered_hi(x), axis=AXIS))
    newest = tl.where(end > start, (end - start - 1) // BS, -1)
    return tl.where(block_id.to(tl.int64) == newest, float("inf"), s)


@triton.jit
def _stage_a_keys(s, j, n_ext, nblocks, sgrow, sg_min, jb, BJ: tl.constexpr, SG: tl.constexpr):
    """The select's stage-A keys of the ``BJ // SG`` super groups (``SG`` blocks each, aligned) of one tile of block
    scores ``s`` (blocks ``j``), stored at ``sgrow + super group`` for the groups holding a block below the row's
    extent ``L = min(n_ext, nblocks)``: the largest ordered high word of their blocks below ``L`` and the group's
    *first* block in the low word -- the bits of the unfused hier kernel's stage A with ``a_first_col``
    (:func:`dsa_lab.select_triton._first_col_keys` over the scores this tile stores: the ordered word of a stored
    score, NaN included, round-trips exactly).  Rows with ``L <= sg_min`` (the select takes a path without stage
    A for them) get nothing: the reduction is skipped, a branch uniform over the program."""
    lim = tl.minimum(n_ext, nblocks)
    if lim > sg_min:
        h = tl.where(j.to(tl.int64) < lim, tl_ordered_hi(s), -2147483648)
        hm = tl.max(tl.reshape(h, [BJ // SG, SG]), axis=1)
        sg = jb * (BJ // SG) + tl.arange(0, BJ // SG)
        key = (hm.to(tl.int64) << 32) | (0xFFFFFFFF - sg.to(tl.int64) * SG)
        tl.store(sgrow + sg, key, mask=sg.to(tl.int64) * SG < lim)


@triton.jit
def _bounded_tile(x_ptr, row_off, orow, jb, start, end, lend, n_ext, nblocks,
                  BS: tl.constexpr, BSP: tl.constexpr, BJ: tl.constexpr, FILL_DEAD: tl.constexpr,
                  WHOLE: tl.constexpr, sgrow, sg_min, SG: tl.constexpr):
    """Blocks ``[jb * BJ, jb * BJ + BJ)`` of one row (``orow``: the row's first output slot), bounded kernel: a
    tile whose blocks all lie past the row's extent (no live column, not the newest) loads and computes nothing;
    it writes ``-inf`` (``FILL_DEAD``) or nothing at all.  ``SG > 0``: a live tile also stores the select's
    stage-A keys of its super groups at ``sgrow`` (:func:`_stage_a_keys`)."""
    j = jb * BJ + tl.arange(0, BJ)
    t = tl.arange(0, BSP)
    if jb * BJ >= n_ext:
        if FILL_DEAD:
            tl.store(orow + j, tl.full([BJ], float("-inf"), tl.float32), mask=j < nblocks)
    else:
        # 32-bit offsets from the row's start (columns lie below the width, < 2**31)
        rel = j[:, None] * BS + t[None, :]
        if WHOLE and (jb.to(tl.int64) + 1) * (BJ * BS) <= lend - start:
            # every lane live: no bounds mask (a per-element mask forces 4-byte loads), offsets from the tile
            tw = jb.to(tl.int64) * (BJ * BS)
            rw = tl.arange(0, BJ)[:, None] * BS + t[None, :]
            if BSP != BS:
                x = tl.load(x_ptr + (row_off + start + tw) + rw, mask=t[None, :] < BS, other=float("-inf"))
            else:
                x = tl.load(x_ptr + (row_off + start + tw) + rw)
        else:
            live = rel < (lend - start).to(tl.int32)
            if BSP != BS:  # padded lanes belong to the next block
                live = live & (t[None, :] < BS)
            x = tl.load(x_ptr + (row_off + start) + rel, mask=live, other=float("-inf"))
        if SG > 0:
            s = tl_block_score(x, j, start, end, 1, BS)
            tl.store(orow + j, s, mask=j < nblocks)
            _stage_a_keys(s, j, n_ext, nblocks, sgrow, sg_min, jb, BJ, SG)
        else:
            tl.store(orow + j, tl_block_score(x, j, start, end, 1, BS), mask=j < nblocks)


@triton.jit
def _scores_program(
    x_ptr, x_stride, out_ptr, end_ptr, start_ptr, flags_ptr, sg_ptr, sg_stride, sg_min, width, nblocks, Q,
    RR: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr, BJ: tl.constexpr,
    HAS_START: tl.constexpr, PADDED: tl.constexpr, FILL_DEAD: tl.constexpr, WHOLE: tl.constexpr,
    LOOP: tl.constexpr, ZF: tl.constexpr, SG: tl.constexpr, LD: tl.constexpr, rc_ptr, RC: tl.constexpr,
):
    """One program of the block-scores launch (the kernels below); ``SG > 0``: with the select's stage-A keys.
    ``LD``: signal ``griddepcontrol.launch_dependents`` first, so a launch that depends on this one programmatically
    (the unfused select, which waits for this launch's writes before it reads them) may start once every program of
    this launch has started.  ``RC`` (:func:`_block_scores_rc_kernel`): the grid is ``(Q, rows)``, and the row's
    programs announce it finished (:func:`_row_done`)."""
    if LD:
        _tl_cuda.gdc_launch_dependents()
    if RC:
        row = tl.program_id(1)
        jb = tl.program_id(0)
    else:
        row = tl.program_id(0)
        jb = tl.program_id(1)
    if ZF > 0:
        # the unfused composition's flags (uint8 [rows, nblocks + 1]): the row's Q programs zero one slice each,
        # so the select kernel after this launch only sets its bytes (ZF 1: byte stores, 2: 8-byte words)
        fper = (nblocks + 1 + Q - 1) // Q
        tl_zero_flags(flags_ptr, row, jb * fper, tl.minimum(jb * fper + fper, nblocks + 1), nblocks, 4096, ZF - 1)
    g = row // RR
    end = tl.maximum(tl.load(end_ptr + g).to(tl.int64), 0)
    start = tl.zeros([], tl.int64)
    if HAS_START:
        start = tl.minimum(tl.maximum(tl.load(start_ptr + g).to(tl.int64), 0), end)
    lend = tl.minimum(end, width)
    row_off = row.to(tl.int64) * x_stride
    orow = out_ptr + row.to(tl.int64) * nblocks
    sgrow = sg_ptr + row.to(tl.int64) * sg_stride
    if PADDED:
        # upstream: read the whole padded width, mask after the load
        j = jb * BJ + tl.arange(0, BJ)
        t = tl.arange(0, BSP)
        c = start + j[:, None].to(tl.int64) * BS + t[None, :]
        lane = (t[None, :] < BS) & (j[:, None] < nblocks)
        live = lane & (c < lend)
        x = tl.load(x_ptr + row_off + c, mask=lane & (c < width), other=float("-inf"))
        x = tl.where(live, x, float("-inf"))
        tl.store(orow + j, tl_block_score(x, j, start, end, 1, BS), mask=j < nblocks)
    else:
        # bounded: the kernel's time follows the live extent, not the padded width
        n_live = (tl.maximum(lend - start, 0) + BS - 1) // BS
        n_ext = tl.maximum(n_live, tl.where(end > start, (end - start - 1) // BS + 1, 0))
        if LOOP:
            # Q programs per row stride over its tiles: a short row in a wide tensor costs its live tiles, not
            # one (mostly idle) program per padded tile
            if FILL_DEAD:
                ntiles = (nblocks + BJ - 1) // BJ
            else:
                ntiles = (n_ext + BJ - 1) // BJ
            for jt in range(jb, ntiles, Q):
                _bounded_tile(x_ptr, row_off, orow, jt, start, end, lend, n_ext, nblocks, BS, BSP, BJ, FILL_DEAD,
                              WHOLE, sgrow, sg_min, SG)
        else:
            _bounded_tile(x_ptr, row_off, orow, jb, start, end, lend, n_ext, nblocks, BS, BSP, BJ, FILL_DEAD, WHOLE,
                          sgrow, sg_min, SG)
    if RC:
        _row_done(rc_ptr, row, Q, tl.num_programs(1))


@triton.jit
def _row_done(rc_ptr, row, Q, rows):
    """A program of the row is done: its stores are released by an arrival on the row's counter ``rc_ptr[row]``;
    the row's ``Q``-th arrival resets that counter and raises its done flag ``rc_ptr[rows + row]`` (release), which
    the select program of the row waits for (acquire) and lowers again (``select_triton._hier_kernel``'s ``RWAIT``).
    The barrier first: the one lane that makes the arrival then orders every lane's stores before it (the pattern
    of CUTLASS's ``Semaphore::release``)."""
    tl.debug_barrier()
    old = tl.atomic_add(rc_ptr + row, 1, sem="acq_rel")
    if old == Q - 1:
        tl.store(rc_ptr + row, 0)
        tl.atomic_xchg(rc_ptr + rows + row, 1, sem="release")


# shape ints are not specialised (divisibility/==1 hints buy nothing here and would compile one
# variant per k, width and split of a sweep or fuzz)
@triton.jit(do_not_specialize=["width", "nblocks", "Q"])
def _block_scores_kernel(
    x_ptr, x_stride, out_ptr, end_ptr, start_ptr, flags_ptr, width, nblocks, Q,
    RR: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr, BJ: tl.constexpr,
    HAS_START: tl.constexpr, PADDED: tl.constexpr, FILL_DEAD: tl.constexpr, WHOLE: tl.constexpr,
    LOOP: tl.constexpr, ZF: tl.constexpr, LD: tl.constexpr = False,
):
    """Block scores alone: every caller but the unfused select's ``scores_a`` path (its own kernel, so that its
    parameters and code stay as recorded before that path existed: ``scripts/ptx_identity.py``)."""
    _scores_program(x_ptr, x_stride, out_ptr, end_ptr, start_ptr, flags_ptr, out_ptr, 0, 0, width, nblocks, Q,
                    RR, BS, BSP, BJ, HAS_START, PADDED, FILL_DEAD, WHOLE, LOOP, ZF, 0, LD, out_ptr, False)


@triton.jit(do_not_specialize=["width", "nblocks", "Q"])
def _block_scores_rc_kernel(
    x_ptr, x_stride, out_ptr, end_ptr, start_ptr, flags_ptr, rc_ptr, width, nblocks, Q,
    RR: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr, BJ: tl.constexpr, HAS_START: tl.constexpr,
    WHOLE: tl.constexpr, LOOP: tl.constexpr, ZF: tl.constexpr, LD: tl.constexpr,
):
    """Bounded scores (dead slots unwritten) on a ``(Q, rows)`` grid, each row announcing itself finished on the row
    counters (``row_counters``: the unfused select's per-row handoff, ``rowsync``, dev).  Its own kernel, so that the
    recorded kernels' parameters and code stay as they are (``scripts/ptx_identity.py``)."""
    _scores_program(x_ptr, x_stride, out_ptr, end_ptr, start_ptr, flags_ptr, out_ptr, 0, 0, width, nblocks, Q,
                    RR, BS, BSP, BJ, HAS_START, False, False, WHOLE, LOOP, ZF, 0, LD, rc_ptr, True)


@triton.jit(do_not_specialize=["sg_min", "width", "nblocks", "Q"])
def _block_scores_sg_kernel(
    x_ptr, x_stride, out_ptr, end_ptr, start_ptr, flags_ptr, sg_ptr, sg_stride, sg_min, width, nblocks, Q,
    RR: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr, BJ: tl.constexpr,
    HAS_START: tl.constexpr, WHOLE: tl.constexpr, LOOP: tl.constexpr, ZF: tl.constexpr, SG: tl.constexpr,
    LD: tl.constexpr = False,
):
    """Block scores and the select's stage-A keys (``stage_a``; bounded, dead slots unwritten): the unfused full
    stage at up to a quarter as many rows as SMs (``select_triton._scores_a_rule``)."""
    _scores_program(x_ptr, x_stride, out_ptr, end_ptr, start_ptr, flags_ptr, sg_ptr, sg_stride, sg_min, width,
                    nblocks, Q, RR, BS, BSP, BJ, HAS_START, False, False, WHOLE, LOOP, ZF, SG, LD, out_ptr, False)


@triton.jit(do_not_specialize=["sg_min", "rows", "width", "nblocks", "P", "fper"])
def _block_scores_live_kernel(
    x_ptr, x_stride, out_ptr, end_ptr, start_ptr, flags_ptr, sg_ptr, sg_stride, sg_min, rows, width, nblocks, P, fper,
    RR: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr, BJ: tl.constexpr, HAS_START: tl.constexpr,
    WHOLE: tl.constexpr, ZF: tl.constexpr, SG: tl.constexpr, RB: tl.constexpr, LD: tl.constexpr = False,
):
    """Bounded scores on a schedule sized by the live extents (``schedule="live"``; dead slots unwritten).

    ``P`` programs in all.  Each zeroes its ``fper``-byte slice of the flat flags (``ZF``), reads every row's bounds
    (``RB`` at a time) for the longest extent's tile count ``nt``, then takes the items ``w = pid, pid + P, ...`` of
    ``rows * nt``, tile-major (item ``w`` is tile ``w // rows`` of row ``w % rows``), so a launch over short rows in a
    wide tensor costs the rows' live tiles and ``P`` programs, not one program per tile of the padded width.  A
    tile past its row's extent loads and stores nothing (:func:`_bounded_tile`).  ``LD``: as in :func:`_scores_program`."""
    if LD:
        _tl_cuda.gdc_launch_dependents()
    pid = tl.program_id(0)
    if ZF > 0:
        lo = pid.to(tl.int64) * fper
        tl_zero_flags(flags_ptr, pid * 0, lo, tl.minimum(lo + fper, rows.to(tl.int64) * (nblocks + 1)), nblocks,
                      4096, ZF - 1)
    ng = (rows + RR - 1) // RR
    mx = tl.zeros([], tl.int64)
    for g0 in range(0, ng, RB):
        g = g0 + tl.arange(0, RB)
        e = tl.maximum(tl.load(end_ptr + g, mask=g < ng, other=0).to(tl.int64), 0)
        s = tl.zeros([RB], tl.int64)
        if HAS_START:
            s = tl.minimum(tl.maximum(tl.load(start_ptr + g, mask=g < ng, other=0).to(tl.int64), 0), e)
        n_live = (tl.maximum(tl.minimum(e, width) - s, 0) + BS - 1) // BS
        n_ext = tl.maximum(n_live, tl.where(e > s, (e - s - 1) // BS + 1, 0))
        mx = tl.maximum(mx, tl.max(tl.minimum(n_ext, nblocks), axis=0))
    total = rows * ((mx.to(tl.int32) + BJ - 1) // BJ)
    for w in range(pid, total, P):
        jt = w // rows
        row = w - jt * rows
        # the bounds as in _scores_program, written out again: a helper shared with it (tried with and without the
        # extent) changed the SASS of _block_scores_sg_kernel, a recorded kernel (scripts/ptx_identity.py, SG_CASES)
        g = row // RR
        end = tl.maximum(tl.load(end_ptr + g).to(tl.int64), 0)
        start = tl.zeros([], tl.int64)
        if HAS_START:
            start = tl.minimum(tl.maximum(tl.load(start_ptr + g).to(tl.int64), 0), end)
        lend = tl.minimum(end, width)
        n_live = (tl.maximum(lend - start, 0) + BS - 1) // BS
        n_ext = tl.maximum(n_live, tl.where(end > start, (end - start - 1) // BS + 1, 0))
        _bounded_tile(x_ptr, row.to(tl.int64) * x_stride, out_ptr + row.to(tl.int64) * nblocks, jt, start, end, lend,
                      n_ext, nblocks, BS, BSP, BJ, False, WHOLE, sg_ptr + row.to(tl.int64) * sg_stride, sg_min, SG)


def _np2(x: int) -> int:
    return 1 if x <= 1 else 1 << (int(x) - 1).bit_length()


# Bounded kernel: programs whose tile lies wholly inside the row's live extent load without a bounds mask
# (16-byte loads instead of 4-byte ones).  Predicted (sixth session): a faster scores stream.  Measured
# (data/h200/tune_dev/tune_dev_M.csv, full stage, same process): within noise (640 x 256K 278.0 vs 276.9 µs,
# 640 x 4K 44.9 vs 45.9), so off; kept as an option (``whole_tiles``), tested.
SCORES_WHOLE_TILES: bool = False


# Bounded kernel, programs per row: None = one program per BJ-block tile of the padded width (most of them idle
# on a short row); an int m = about m x SM programs in all, each row's programs striding over its tiles
# (``programs_per_row``).  Predicted (eighth session): the idle programs cost the unfused full stage ~25 µs at
# 640 rows of a 262144-wide tensor whatever the context.  Measured (H200, full stage with flags, same process;
# data/h200/tune_dev/check_Q.log, tune_dev_R.csv): 640 x 4K 44.9 -> 23.1 (m 4) / 24.0 (m 16) µs, 640 x 16K 71.8 ->
# 51.5 (m 16), 640 x 64K 112 -> 99.7 (m 16) / 96.8 (m 32, with the flags zeroed here); at 256K, where every tile is
# live, fewer programs lose (640 rows 271 -> 299 at m 4, 282 at m 16; 160 rows 92.7 -> 91.1 at m 32).  So m 32.
SCORES_PROGRAMS: int | None = 32


# Bounded kernel, schedule: "rows" = the grid above ((rows, programs per row), each row's programs striding over its
# tiles); "live" = :func:`_block_scores_live_kernel`, about SCORES_LIVE_MULT x SM programs in all taking the live
# tiles of every row (the longest extent's tile count, read on the device).  Predicted (sixteenth session): the
# "rows" grid launches ~32 x SM programs whatever the extents, mostly idle on 4K-64K rows (the unfused full stage's
# scores launch costs 2.2 µs at 1 x 4K, 4.8 at 64 x 4K, 5.0 at 32 x 64K for 0.1-8 MB), so "live" should cut the
# 16-160-row points at 4K-64K by 1-3 µs and leave 256K as it is.  Measured (H200, full stage with flags, k = 64, same
# process; data/h200/tune_dev/tune_dev_AH.csv): its best form (8 / 16 x SM programs, 8 warps, 256-block tiles) was
# slower at 31 of 36 points (1 x 4K 5.3 -> 5.6 µs at best, 640 x 256K 257 -> 261) and faster at five (64-160 rows of
# 4K-16K, 64 x 4K 8.0 -> 7.1), where the plain grid at 8 x SM programs was faster still (5.9).
# Its programs read the bounds twice in a row (every row's for the tile count, then the item's) where the grid reads
# them once, and take 95 registers (sm_90, triton 3.6) against 72.  The same run's control, the grid at 8 x SM
# programs, was faster at 40-160 rows of 4K-64K (64 x 4K 8.0 -> 5.9 µs) and slower at 256K: see
# select_triton._pdl_rule.  So "rows"; "live" stays a tested option.
SCORES_SCHEDULE: str = "rows"
SCORES_LIVE_MULT: int = 8


def tile_blocks(nblocks: int, block_size: int) -> int:
    """Blocks per tile (``BJ``) of the bounded and padded kernels: 4096 logit lanes, at most the row's blocks."""
    return max(1, min(_np2(nblocks), 4096 // _np2(block_size)))


def programs_per_row(rows: int, nblocks: int, bj: int, sm_count: int, mult: int | None) -> int:
    """Programs per row of the bounded scores kernel: every tile of the padded width (``mult`` None), else
    about ``mult * sm_count`` programs in all, at least one per row, at most one per tile."""
    ntiles = -(-nblocks // bj)
    if mult is None:
        return ntiles
    return max(1, min(ntiles, -(-int(mult) * int(sm_count) // max(rows, 1))))


def block_scores_triton(logits, row_ends, row_starts=None, block_size=8, row_repeat=1, padded=False,
                        fill_dead=True, whole_tiles=None, programs=None, zero_flags=None, tile=None, num_warps=None,
                        mult=None, stage_a=None, schedule=None, launch_dependents=False, row_counters=None,
                        maxnreg=None):
    """Block scores of ``logits`` (arguments validated by :func:`dsa_lab.block_scores`).

    Args:
        logits: float32 ``[rows, width]``, unit stride along the width.
        row_ends, row_starts: int32/int64 ``[rows // row_repeat]`` device tensors (starts may be
            None = 0); read on the device; ends past the width are clamped; a start past its end is
            clamped to the end (only possible inside a capture, where the host check is skipped).
        block_size, row_repeat: ints >= 1.
        padded: False = bounded kernel (default); True = upstream-style full-width scan.
        fill_dead: True (default): every slot written (``-inf`` past each row's extent).  False (bounded
            only; the unfused select composition): the slots of whole programs past a row's extent
            (``BJ`` blocks each) are left unwritten, sparing ``rows * nblocks * 4`` bytes of ``-inf``
            stores; the select kernels never read past the extent.
        whole_tiles: bounded only: programs whose tile lies wholly inside the live extent load without a
            bounds mask (default :data:`SCORES_WHOLE_TILES`); the same values either way.
        programs: bounded only: programs per row (each strides over the row's tiles); None = the rule
            :func:`programs_per_row` with ``mult`` (default :data:`SCORES_PROGRAMS`); the same values either way.
        zero_flags: bounded only: a contiguous ``uint8 [rows, nblocks + 1]`` tensor this launch also zeroes
            (every byte; the unfused select composition's flags, set by the select kernel after it).
        schedule: bounded only, ``fill_dead=False``: ``"rows"`` (``programs`` per row striding over the row's tiles) or
            ``"live"`` (``programs`` in all -- default :data:`SCORES_LIVE_MULT` x SM -- taking the live tiles of every
            row, tile-major; :func:`_block_scores_live_kernel`); default :data:`SCORES_SCHEDULE`; the same values
            either way.
        launch_dependents: bounded only: the programs signal ``griddepcontrol.launch_dependents`` as they start (a
            launch after this one, made a programmatic dependent of it, may then start early; it must wait for this
            launch's writes itself).  CUDA sm_90+ only; the caller decides.
        tile, num_warps: blocks per tile (a power of two; default :func:`tile_blocks`) and warps per program
            (default 4) of the bounded kernel (dev A/B); the same values either way.
        stage_a: bounded only: ``(ws, wrow, sg, sg_min)``, the unfused select's workspace (contiguous int64, at
            least ``rows * wrow`` slots), its slots per row, its super-group size in blocks (a power of two
            dividing the tile) and the longest row extent that needs no stage A (``>= 0``): the launch also stores
            the stage-A keys of each row whose extent ``L`` exceeds ``sg_min`` at ``ws[row * wrow + g]`` for every
            super group ``g`` holding a block below ``L`` (:func:`_stage_a_keys`); no other slot is written.
        row_counters: bounded, ``fill_dead=False``, ``schedule="rows"``, no ``stage_a`` (dev, the unfused select's
            per-row handoff): a contiguous int32 tensor of at least ``2 * rows`` slots, all zero.  The
            grid becomes ``(programs per row, rows)``, so that rows finish roughly in order, and each row's programs,
            once its scores (and its flags' zeros) are stored, count themselves on ``row_counters[row]``.  The last
            one resets that counter and sets ``row_counters[rows + row]`` to 1 (release).  The reader of the row
            must wait for that flag and lower it (:func:`_row_done`).
        maxnreg: bounded only: an upper bound on the registers per thread of the launch's kernel (Triton's
            ``maxnreg``, CUDA; dev A/B: more programs resident per SM, maybe at the cost of spills); None = the
            compiler's choice.  The same values either way.

    Returns:
        float32 ``[rows, cdiv(width, block_size)]``, new; every slot written.
    """
    rows, width = logits.shape
    bs = int(block_size)
    nblocks = -(-width // bs)
    out = torch.empty((rows, nblocks), dtype=torch.float32, device=logits.device)
    if rows == 0 or nblocks == 0:
        return out
    bsp = _np2(bs)
    bj = tile_blocks(nblocks, bs)
    if padded and (tile is not None or programs is not None or mult is not None or zero_flags is not None):
        raise ValueError("tile, programs, mult and zero_flags apply to the bounded kernel only (padded=False)")
    if tile is not None:
        if not isinstance(tile, int) or tile < 1 or tile & (tile - 1):
            raise ValueError(f"tile must be a power of two >= 1, got {tile!r}")
        bj = tile
    nw = 4 if num_warps is None else int(num_warps)
    ntiles = triton.cdiv(nblocks, bj)
    sched = SCORES_SCHEDULE if schedule is None else schedule
    if sched not in ("rows", "live"):
        raise ValueError(f"schedule must be 'rows' or 'live', got {schedule!r}")
    live = sched == "live" and not padded and not fill_dead
    if schedule == "live" and (padded or fill_dead):
        raise ValueError("schedule='live' applies to the bounded kernel with fill_dead=False only")
    if live:
        if programs is not None:
            q = max(1, min(int(programs), rows * ntiles))
        else:
            from ._impl import facts_for

            q = max(1, min(rows * ntiles, (SCORES_LIVE_MULT if mult is None else int(mult))
                           * int(facts_for(logits)["sm_count"])))
    elif padded:
        q = ntiles
    elif programs is not None:
        q = max(1, min(int(programs), ntiles))
    else:
        from ._impl import facts_for

        q = programs_per_row(rows, nblocks, bj, int(facts_for(logits)["sm_count"]),
                             SCORES_PROGRAMS if mult is None else mult)
    zf = 0
    if zero_flags is not None:
        if zero_flags.dtype != torch.uint8 or tuple(zero_flags.shape) != (rows, nblocks + 1) \
                or not zero_flags.is_contiguous():
            raise ValueError(f"zero_flags must be a contiguous uint8 [{rows}, {nblocks + 1}] tensor (bounded kernel)")
        zf = 2 if zero_flags.data_ptr() % 16 == 0 else 1
    sgk = 0
    if stage_a is not None:
        sg_ws, sg_stride, sgk, sg_min = stage_a
        sg_stride, sgk, sg_min = int(sg_stride), int(sgk), int(sg_min)
        if sg_min < 0:
            raise ValueError(f"stage_a's sg_min must be >= 0, got {sg_min}")
        if padded:
            raise ValueError("stage_a applies to the bounded kernel only (padded=False)")
        if sgk < 1 or sgk & (sgk - 1) or bj % sgk:
            raise ValueError(f"stage_a's super group ({sgk} blocks) must be a power of two dividing the tile ({bj})")
        if sg_ws.dtype != torch.int64 or not sg_ws.is_contiguous() or sg_ws.numel() < rows * sg_stride \
                or sg_stride < -(-nblocks // sgk):
            raise ValueError(f"stage_a's workspace must be a contiguous int64 tensor of at least rows * wrow slots, "
                             f"wrow >= {-(-nblocks // sgk)}")
    whole = bool(SCORES_WHOLE_TILES if whole_tiles is None else whole_tiles) and not padded
    if launch_dependents and padded:
        raise ValueError("launch_dependents applies to the bounded kernel only (padded=False)")
    if row_counters is not None:
        if padded or fill_dead or live or stage_a is not None:
            raise ValueError("row_counters applies to the bounded kernel with fill_dead=False, the 'rows' schedule "
                             "and no stage_a")
        if not isinstance(row_counters, torch.Tensor) or row_counters.dtype != torch.int32 \
                or not row_counters.is_contiguous() or row_counters.numel() < 2 * rows \
                or row_counters.device != logits.device:
            raise ValueError(f"row_counters must be a contiguous int32 tensor of at least 2 * rows = {2 * rows} slots "
                             f"on the logits' device")
        if rows > 65535:
            raise ValueError(f"row_counters: the grid's second axis holds the rows, at most 65535, got {rows}")
    ld = {"LD": True} if launch_dependents else {}  # absent: the kernels as compiled before the option existed
    if _checks.maxnreg(maxnreg) is not None and padded:
        raise ValueError("maxnreg applies to the bounded kernel only (padded=False)")
    opt = {} if maxnreg is None else {"maxnreg": maxnreg}  # a launch option of every launch below (interpreter: ignored)
    starts = row_starts if row_starts is not None else row_ends
    flags = zero_flags if zero_flags is not None else out
    if live:
        if not sgk:
            sg_ws, sg_stride, sg_min = out, 0, 0
        fper = triton.cdiv(triton.cdiv(rows * (nblocks + 1), q), 8) * 8 if zf else 0  # whole 8-byte words each
        _block_scores_live_kernel[(q,)](
            logits, logits.stride(0), out, row_ends, starts, flags, sg_ws, sg_stride, sg_min, rows, width, nblocks, q,
            fper, RR=int(row_repeat), BS=bs, BSP=bsp, BJ=bj, HAS_START=row_starts is not None, WHOLE=whole, ZF=zf,
            SG=sgk, RB=1024, num_warps=nw, **ld, **opt,
        )
        return out
    if row_counters is not None:
        _block_scores_rc_kernel[(q, rows)](
            logits, logits.stride(0), out, row_ends, starts, flags, row_counters, width, nblocks, q,
            RR=int(row_repeat), BS=bs, BSP=bsp, BJ=bj, HAS_START=row_starts is not None, WHOLE=whole,
            LOOP=q < ntiles, ZF=zf, LD=bool(launch_dependents), num_warps=nw, **opt,
        )
        return out
    if sgk:
        if fill_dead:
            raise ValueError("stage_a leaves dead score slots unwritten: pass fill_dead=False")
        _block_scores_sg_kernel[(rows, q)](
            logits, logits.stride(0), out, row_ends, starts, flags, sg_ws, sg_stride, sg_min, width, nblocks, q,
            RR=int(row_repeat), BS=bs, BSP=bsp, BJ=bj, HAS_START=row_starts is not None, WHOLE=whole,
            LOOP=q < ntiles, ZF=zf, SG=sgk, num_warps=nw, **ld, **opt,
        )
        return out
    _block_scores_kernel[(rows, q)](
        logits, logits.stride(0), out, row_ends, starts, flags, width, nblocks, q,
        RR=int(row_repeat), BS=bs, BSP=bsp, BJ=bj, HAS_START=row_starts is not None, PADDED=bool(padded),
        FILL_DEAD=bool(fill_dead) or bool(padded), WHOLE=whole, LOOP=q < ntiles and not padded, ZF=zf, num_warps=nw,
        **ld, **opt,
    )
    return out
