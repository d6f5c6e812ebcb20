"""The unfused candidate-block composition in one launch: a row's last scores program selects the row ("tail").

The default unfused path (:func:`dsa_lab.select_triton.select_candidate_blocks_triton`) is two launches: the bounded
block-scores launch (``rows x Q`` programs, :func:`dsa_lab.scores_triton._scores_program`) writes every row's scores
(and, at few rows, stage A's keys) to memory; the hier select launch (one program per row) then reads them back.  The
second launch waits for the whole first one, even with the programmatic dependent launch (``pdl``).  Here the same
scores programs run in one launch, and each then arrives on its row's counter (``acq_rel``, after a block barrier:
the pattern of the hier kernel's ``MULTI`` merge).  The program that arrives last for a row runs that row's
selection at once, reading the scores its row's programs wrote: the row's select starts as soon as the row's own
tiles are done, not when every row's are, and there is no second launch.

Contract as :func:`dsa_lab.select_triton.select_candidate_blocks_triton` (``fused=False``): ids ``[rows, k]`` (every
slot written), with ``flags`` zeroed by the scores programs and set by the selecting program.  Only hier plans in
one launch whose super groups tile the scores tiles (``scores_a``'s condition): rows longer than the plan's
``main_chain_min`` take stage A's keys from the scores programs.

Arch: the same primitives as the hier kernel's ``MULTI`` path (``tl.atomic_add`` with ``sem="acq_rel"``,
``tl.debug_barrier``); ROCm is unverified.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import select_triton as st
from .scores_triton import SCORES_PROGRAMS, SCORES_WHOLE_TILES, _scores_program, programs_per_row, tile_blocks
from .select_triton import (_flags_set, _hier_finish, _keys2d, _reg_select, _reg_write_out, _row_extent, _scores2d,
                            _sorted_top, _write_out)
from .keys_triton import tl_is_candidate, tl_key_index, tl_ordered_hi

__all__ = ["tail_select_launch"]


@triton.jit(do_not_specialize=["sg_min", "width", "nblocks", "Q", "k"])
def _tail_kernel(
    x_ptr, x_stride, sc_ptr, end_ptr, start_ptr, flags_ptr, ws_ptr, cnt_ptr, out_ptr, sg_min, width, nblocks, Q, k,
    RR: tl.constexpr, BS: tl.constexpr, BSP: tl.constexpr, BJ: tl.constexpr, HAS_START: tl.constexpr,
    WHOLE: tl.constexpr, LOOP: tl.constexpr, ZF: tl.constexpr, SG: tl.constexpr,
    KP: tl.constexpr, G1: tl.constexpr, G2: tl.constexpr, NSG: tl.constexpr, SB: tl.constexpr, KC: tl.constexpr,
    DT: tl.constexpr, WROW: tl.constexpr, RSEL: tl.constexpr, FLAGS: tl.constexpr, SHORTC: tl.constexpr,
    SC2: tl.constexpr, KC2: tl.constexpr, SC3: tl.constexpr, G1S: tl.constexpr, G2S: tl.constexpr,
    KC3: tl.constexpr, SKEYS: tl.constexpr, L1P: tl.constexpr, FCAP: tl.constexpr, FCAPM: tl.constexpr,
    FQ: tl.constexpr,
):
    """Grid ``(rows, Q)``.  Every program: the scores program of the unfused launch (its tiles' scores into
    ``sc_ptr``, contiguous ``[rows, nblocks]``; ``SG > 0``: stage A's keys into the row's workspace ``ws_ptr + row *
    WROW``; ``ZF > 0``: its slice of the row's flags zeroed), then its arrival on ``cnt_ptr[row]``.  The row's last
    program selects the row as the hier kernel's one-program-per-row launch does (``PHASE = 2``: the direct top-k,
    the narrow / short / second short chains, or B-D from stage A's keys) and resets the counter to 0."""
    S: tl.constexpr = G1 * G2
    _scores_program(x_ptr, x_stride, sc_ptr, end_ptr, start_ptr, flags_ptr, ws_ptr, WROW, sg_min, width, nblocks, Q,
                    RR, BS, BSP, BJ, HAS_START, False, False, WHOLE, LOOP, ZF, SG, False, sc_ptr, False)
    tl.debug_barrier()  # every lane's stores before the arrival (released by the atomic)
    row = tl.program_id(0)
    old = tl.atomic_add(cnt_ptr + row, 1, sem="acq_rel")
    if old == Q - 1:
        tl.debug_barrier()
        L, start, end = _row_extent(row, end_ptr, start_ptr, nblocks, width, 2, HAS_START, RR, BS)
        row_off = row.to(tl.int64) * nblocks
        # the dispatch of select_triton._hier_kernel's one-program-per-row launch, unfused, written out again: moving
        # it into a helper would edit that recorded kernel, and a shared helper once changed a recorded kernel's SASS
        # (scores_triton._block_scores_live_kernel's note); this option is off, so the copy stays
        if L <= DT:
            jd = tl.arange(0, DT)
            cols = jd[:, None]
            if RSEL:
                sc = _scores2d(sc_ptr, row_off, cols, cols < L, start, end, width, False, BS, BSP)
                h = tl.reshape(tl_ordered_hi(sc), [DT])
                sel, cnt = _reg_select(h, (jd < L) & (h > -0x7F800001), k)
                _reg_write_out(out_ptr, row, jd, sel, cnt, k, KP)
                if FLAGS:
                    _flags_set(flags_ptr, row, jd, sel, start, width, nblocks, BS)
            else:
                kk = tl.reshape(_keys2d(sc_ptr, row_off, cols, cols < L, start, end, width, False, BS, BSP), [DT])
                top = _sorted_top(kk, KP, DT)
                _write_out(out_ptr, row, top, k, KP)
                if FLAGS:
                    _flags_set(flags_ptr, row, tl_key_index(top), (tl.arange(0, KP) < k) & tl_is_candidate(top),
                               start, width, nblocks, BS)
        elif SC3 and (L + G1S * G2S - 1) // (G1S * G2S) <= KP:
            _hier_finish(sc_ptr, row_off, out_ptr, ws_ptr, flags_ptr, nblocks, row, L,
                         (L + G1S * G2S - 1) // (G1S * G2S), start, end, width, k, WROW, NSG, KP, G1S, G2S, SB, KC3,
                         False, BS, BSP, RSEL, FLAGS, True, SKEYS, L1P, FCAP, FCAPM, FQ)
        elif SHORTC and (L + S - 1) // S <= KP:
            _hier_finish(sc_ptr, row_off, out_ptr, ws_ptr, flags_ptr, nblocks, row, L, (L + S - 1) // S, start, end,
                         width, k, WROW, NSG, KP, G1, G2, SB, KC, False, BS, BSP, RSEL, FLAGS, True, SKEYS,
                         L1P, FCAP, FCAPM, FQ)
        else:
            sc2 = False
            if SC2 > 1:
                sc2 = (L + S * SC2 - 1) // (S * SC2) <= KP
            if sc2:
                _hier_finish(sc_ptr, row_off, out_ptr, ws_ptr, flags_ptr, nblocks, row, L,
                             (L + S * SC2 - 1) // (S * SC2), start, end, width, k, WROW, NSG, KP, G1, G2 * SC2, SB,
                             KC2, False, BS, BSP, RSEL, FLAGS, True, SKEYS, L1P, FCAP, FCAPM, FQ)
            else:  # stage A's keys came from this row's scores programs
                _hier_finish(sc_ptr, row_off, out_ptr, ws_ptr, flags_ptr, nblocks, row, L, (L + S - 1) // S, start,
                             end, width, k, WROW, NSG, KP, G1, G2, SB, KC, False, BS, BSP, RSEL, FLAGS, False, SKEYS,
                             L1P, FCAP, FCAPM, FQ)
        tl.store(cnt_ptr + row, 0)  # reset for the next call / graph replay


def tail_select_launch(logits, row_ends, row_starts, out, flags, p, k, bs, rr, *, programs=None, mult=None,
                       tile=None, num_warps=None, whole_tiles=None):
    """Launch :func:`_tail_kernel` (arguments validated by the caller, ``select_candidate_blocks_triton``).

    ``p``: an unfused hier plan (``select_triton.plan``) in one launch.  ``flags``: None, or the contiguous ``uint8
    [rows, nblocks + 1]`` flags to write (here when the plan says ``kernel_flags``, else by the flags kernel after).
    ``programs`` / ``mult`` / ``tile`` / ``whole_tiles``: the scores launch's programs per row (or its multiple of
    the SM count), blocks per tile and unmasked whole tiles, as :func:`dsa_lab.scores_triton.block_scores_triton`;
    ``num_warps`` defaults to the select plan's.  Returns ``out``."""
    rows, width = logits.shape
    nblocks = -(-width // bs)
    if out is None:
        out = torch.empty((rows, k), dtype=torch.int32, device=logits.device)
    if p["algo"] != "hier" or p["two_phase"]:
        raise ValueError("tail needs the hier select in one launch (algo 'hier', two_phase off)")
    bj = tile_blocks(nblocks, bs) if tile is None else int(tile)
    S = p["G1"] * p["G2"]
    if bj % S:
        raise ValueError(f"tail: the super group ({S} blocks) must divide the scores tile ({bj} blocks)")
    ntiles = triton.cdiv(nblocks, bj)
    if programs is not None:
        q = max(1, min(int(programs), ntiles))
    else:
        q = programs_per_row(rows, nblocks, bj, int(st._impl.facts_for(logits)["sm_count"]),
                             SCORES_PROGRAMS if mult is None else mult)
    if rows == 0:
        return out
    kflags = flags is not None and p["kernel_flags"]
    zf = (2 if flags.data_ptr() % 16 == 0 else 1) if kflags else 0
    wrow = st._hier_wrow(p, False)
    ws = st._workspace(rows * wrow, logits.device)
    sc = torch.empty((rows, nblocks), dtype=torch.float32, device=logits.device)
    cnt = st._counters(logits.device, rows)
    starts = row_starts if row_starts is not None else row_ends
    whole = bool(SCORES_WHOLE_TILES if whole_tiles is None else whole_tiles)
    _tail_kernel[(rows, q)](
        logits, logits.stride(0), sc, row_ends, starts, flags if kflags else out, ws, cnt, out, st.main_chain_min(p),
        width, nblocks, q, k,
        RR=int(rr), BS=bs, BSP=st._np2(bs), BJ=bj, HAS_START=row_starts is not None, WHOLE=whole, LOOP=q < ntiles,
        ZF=zf, SG=S, KP=p["KP"], G1=p["G1"], G2=p["G2"], NSG=p["NSG"], SB=p["SB"], KC=p["KC"], DT=p["DT"], WROW=wrow,
        RSEL=p["rsel"], FLAGS=kflags, SHORTC=p["short_chain"], SC2=p["SC2"], KC2=p["KC2"], SC3=p["SC3"],
        G1S=p["G1S"], G2S=p["G2S"], KC3=p["KC3"], SKEYS=p["skeys"], L1P=p["l1p"],
        FCAP=p["fcap"], FCAPM=p["fcapm"], FQ=p["fq"],
        num_warps=int(num_warps or p["num_warps"]),
    )
    return out if kflags or flags is None else st._separate_flags(out, flags, width, row_starts, bs, rr)
