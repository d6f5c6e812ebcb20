"""Launchers of the selects (hier, bisect, radix) and of the candidate-block pipeline.

Inputs are checked by the public API (:mod:`dsa_lab.select`); plans come from :mod:`dsa_lab.plans` unless a caller
(a test reaching a path at small sizes, a benchmark) passes one.  Every slot of every output is written.
"""
from __future__ import annotations

import torch

from .. import _checks, _impl, plans
from ..kernels import bisect as _bisect
from ..kernels import hier as _hier
from ..kernels import longrow as _longrow
from ..kernels import radix as _radix
from ..kernels.common import PDL_OK
from . import run, scratch
from .scores import block_scores_into, fill_flags, scores_buffer

__all__ = ["topk_select", "candidate_blocks", "hier", "bisect", "radix", "longrow", "counters", "totals",
           "longrow_sync", "select_sync"]


def _pdl(pdl: bool) -> tuple[bool, dict]:
    pdl = bool(pdl) and PDL_OK
    return pdl, ({"launch_pdl": True} if pdl else {})


# ------------------------------------------------------------------------------------------------- kernels
def hier(src, len_t, start_t, out, ws, cnt, flags, n, width, k, rr, plan: plans.Hier, *, block_scores: bool,
         zero_flags=plans.FlagZeroing.NONE, pdl=False):
    """The hier kernel, grid ``(rows, plan.P)``.  ``ws``: the int64 row workspace (``rows * plan.wrow`` slots, every
    slot read is written first); ``cnt``: the per-row arrival counters (:func:`counters`); ``flags``: uint8
    ``[rows, n + 1]`` or None, zeroed first as ``zero_flags`` says; ``pdl``: a programmatic dependent of the launch
    before it (sm_90+)."""
    rows = out.shape[0]
    pdl, extra = _pdl(pdl)
    bs = plan.block_size
    run(
        _hier._hier_kernel, (rows, plan.P),
        src, src.stride(0), len_t if len_t is not None else out, start_t if start_t is not None else out, out,
        ws, cnt, flags if flags is not None else out.view(torch.uint8), n, width, k, plan.P, rr, plan.nsg_max // 16,
        plan.wrow // 16, plan.min_sg, int(len_t is not None), int(plan.fast), int(plan.a_done),
        **plan.constexprs(), BLOCK_SCORES=bool(block_scores), FUSED=plan.fused, BS=bs, BSP=plans.np2(bs),
        HAS_START=start_t is not None, FLAGS=flags is not None,
        ZERO_FLAGS=int(zero_flags if flags is not None else plans.FlagZeroing.NONE), PDL=pdl,
        ALIGNED=src.stride(0) % 16 == 0 or rows == 1, num_warps=plan.num_warps, **extra,
    )
    return out


def bisect(src, len_t, start_t, out, flags, n, width, k, rr, plan: plans.Bisect, *, block_scores: bool, pdl=False):
    """The bisect kernel, one program per row (``n <= plans.BISECT_MAX_COLS``); ``flags`` (uint8 ``[rows, n + 1]``,
    zeroed) or None; ``pdl``: a programmatic dependent of the launch before it."""
    rows = out.shape[0]
    if rows == 0:
        return out
    mid = torch.empty((rows, plan.mid_cap), dtype=torch.int32, device=out.device)
    pdl, extra = _pdl(pdl)
    run(_bisect._bisect_kernel, (rows,), src, src.stride(0), len_t if len_t is not None else out,
        start_t if start_t is not None else out, out, mid, flags if flags is not None else out.view(torch.uint8),
        n, width, k, rr, int(len_t is not None), int(start_t is not None), BLOCK_SCORES=bool(block_scores),
        BS=plan.block_size, FLAGS=flags is not None, ALIGNED=src.stride(0) % 16 == 0 or rows == 1, PDL=pdl,
        MODEL=plan.model, MC=plan.mid_cap, KT=plans.KT, WS=plan.ws, NW=plan.num_warps, num_warps=plan.num_warps,
        **extra)
    return out


def radix(src, len_t, start_t, out, n, width, k, rr, plan: plans.Radix, *, block_scores: bool, pdl=False, tot=None):
    """The radix select: one program per row when ``plan.P`` is 1, else the parallel kernel's five launches, each
    (``pdl``) a programmatic dependent of the one before.  ``tot``: the row totals kept between calls
    (:func:`totals`, required when ``P > 1``)."""
    rows = out.shape[0]
    if rows == 0:
        return out
    args = (src, src.stride(0), len_t if len_t is not None else out, start_t if start_t is not None else out)
    flags = (rr, int(len_t is not None), int(start_t is not None))
    meta = dict(BLOCK_SCORES=bool(block_scores), BS=plan.block_size, KT=plans.KT)
    P = plan.P
    if P <= 1:
        run(_radix._radix_kernel, (rows,), *args, out, n, width, k, *flags, TILE=plans.RADIX_TILE, num_warps=8,
            **meta)
        return out
    dev = src.device
    hist = torch.empty((2 * rows * P * 256,), dtype=torch.int32, device=dev)
    st = torch.empty((2 * rows * 4,), dtype=torch.int32, device=dev)
    acc = torch.empty((rows * 2 * plans.RADIX_MAXP,), dtype=torch.int32, device=dev)
    pdl, extra = _pdl(pdl)
    for step in range(5):
        run(_radix._radix_par_kernel, (rows, P), *args, out, hist, tot, st, acc, n, width, k, P, *flags, step,
            plan.short, TILE=plans.RADIX_PAR_TILE, STILE=plans.RADIX_TILE, PP=plans.RADIX_MAXP, PDL=pdl, num_warps=4,
            **meta, **extra)
    return out


def longrow(src, len_t, start_t, out, n, width, k, rr, plan: plans.Longrow, *, block_scores: bool, pdl=False,
            sync=None):
    """The long-row select: the sample launch (a threshold per row), the stream launch (``plan.P`` programs per
    row) and the finish (one program per row), each a programmatic dependent of the one before (``pdl``).
    ``sync``: the per-row counters kept between calls (:func:`longrow_sync`).  ``block_scores``: at block size 1
    the source is logits (or the producer's scores) and each row's newest column counts as ``+inf``."""
    rows = out.shape[0]
    if rows == 0:
        return out
    # one int32 allocation: thresholds and shifts, words and columns above them, columns equal to them (64-byte
    # aligned parts, so that no row count changes a pointer's specialization)
    a = -(-2 * rows // 16) * 16
    g, e = rows * plan.CAP, rows * plan.CAP_EQ
    buf = torch.empty((a + 2 * g + e,), dtype=torch.int32, device=src.device)
    thr, gtw, gtc, eqc = buf[:2 * rows], buf[a:a + g], buf[a + g:a + 2 * g], buf[a + 2 * g:]
    cnt, hist = sync[:rows * 4], sync[rows * 4:rows * (4 + plan.HS * plan.NB)]
    bounds = (len_t if len_t is not None else out, start_t if start_t is not None else out)
    shape = (n, width, k, rr)
    has = (int(len_t is not None), int(start_t is not None))
    pdl, extra = _pdl(pdl)
    bs = dict(BLOCK_SCORES=bool(block_scores), NB=plan.NB)
    # the sample launch is a full dependent of the work before it (no ``launch_pdl``): the stream reads its first
    # tile before its wait on the sample
    run(_longrow._longrow_sample_kernel, (rows,), src, src.stride(0), *bounds, thr, *shape, plan.CAP, plan.CAP_EQ,
        float(plan.RZ), float(plan.RB), *has, **bs, NCH=plan.NCH, CH=plan.CH, STILE=plan.STILE, PDL=pdl,
        num_warps=plan.num_warps)
    # the block-score form holds a row's start and newest column as well: 16 more registers, or it spills
    cap = {"maxnreg": plan.stream_regs + 16 * bool(block_scores)} if plan.stream_regs else {}
    run(_longrow._longrow_stream_kernel, (rows, plan.P), src, src.stride(0), *bounds, thr, gtw, gtc, eqc, cnt, hist,
        *shape, plan.P, plan.CAP, plan.CAP_EQ, *has, **bs, HS=plan.HS, TILE=plan.TILE, LANES=plan.lanes, PDL=pdl,
        num_warps=plan.stream_warps,
        **cap, **extra)
    run(_longrow._longrow_finish_kernel, (rows,), src, src.stride(0), *bounds, thr, out, gtw, gtc, eqc, cnt, hist,
        *shape, plan.CAP, plan.CAP_EQ, *has, **bs, HS=plan.HS, FT=plan.FT, FT_EQ=plan.FT_EQ, FL=plan.FL, FB=plan.FB,
        STILE=plan.STILE, KT=plans.KT, PDL=pdl, HIP=plan.hip, num_warps=plan.fin_warps, **extra)
    return out


# ------------------------------------------------------------------------------------------- kept buffers
def counters(device: torch.device, rows: int) -> torch.Tensor:
    """The hier select's per-row arrival counters: int32 zeros, each reset by the program that finishes its row."""
    return scratch.zeroed("hier_counters", device, rows, capturing=_checks.capturing())


def totals(device: torch.device, rows: int) -> torch.Tensor:
    """The parallel radix select's row totals ``int32 [rows, 4, 256]``: zero where a launch adds to them (each
    call's launches zero the slots they used, the last ones at the next call's first launch)."""
    return scratch.zeroed("radix_totals", device, rows * 1024, capturing=_checks.capturing())


def longrow_sync(device: torch.device, rows: int) -> torch.Tensor:
    """The long-row select's per-row counters ``int32 [rows, 4]`` (words above and equal to the threshold in slots
    1 and 2), then its per-row bucket counts ``int32 [rows, plans.LONGROW_HS, plans.LONGROW_NB]`` (copies the finish
    sums): zero, each row's reset by the program that finishes it."""
    numel = rows * (4 + plans.LONGROW_HS * plans.LONGROW_NB)
    return scratch.zeroed("longrow_sync", device, numel, capturing=_checks.capturing())


def _kept(plan, rows: int, device) -> torch.Tensor | None:
    """The buffer kept between calls through which the plan's programs meet (:mod:`.scratch`: private to the
    current stream or capture), or None.  Taken before a call's first launch, so a capture's one zeroing of it
    never sits between two launches that overlap."""
    if plan.algo == "hier":
        return counters(device, rows)
    if plan.algo == "radix" and plan.P > 1:
        return totals(device, rows)
    if plan.algo == "longrow":
        return longrow_sync(device, rows)
    return None


def select_sync(rows: int, n: int, k: int, device, *, block_size: int = 1, facts: dict | None = None):
    """Take ahead the kept buffer that a select of ``k`` of ``n`` columns (block scores when ``block_size > 1``) over
    ``rows`` rows will use: a composition that launches something before the select (the decode step's producer)
    calls this first, so that in a capture the buffer's zeroing precedes both; the select gets the same buffer."""
    facts = facts if facts is not None else _impl.device_facts(device.index if device.type == "cuda" else None)
    return _kept(plans.select(rows, n, k, facts, block_size=block_size), rows, device)


def _workspace(plan: plans.Hier, rows: int, device) -> torch.Tensor:
    """The hier kernel's int64 row workspace (every slot it reads, it writes first)."""
    return torch.empty((rows * plan.wrow,), dtype=torch.int64, device=device)


def _aligned(scores: torch.Tensor) -> torch.Tensor:
    """``scores``, or a copy of it whose rows start 16 elements apart (the hier kernel's layouts assume it)."""
    if scores.shape[0] <= 1 or scores.stride(0) % 16 == 0:
        return scores
    rows, n = scores.shape
    buf = torch.empty((rows, -(-n // 16) * 16), dtype=scores.dtype, device=scores.device)[:, :n]
    return buf.copy_(scores)


# -------------------------------------------------------------------------------------------------- entries
def topk_select(scores, k, lengths=None, row_repeat=1, out=None, *, plan=None, facts=None):
    """Triton arm of :func:`dsa_lab.topk_select` (arguments checked there): int32 ``[rows, k]``, every slot written
    (the selected column ids, ``-1`` tail).  Columns at or past a row's length are never loaded.  ``plan``: a
    :func:`dsa_lab.plans.select` plan (default: the rules' own for this shape)."""
    rows, n = scores.shape
    dev = scores.device
    if out is None:
        out = torch.empty((rows, k), dtype=torch.int32, device=dev)
    if n == 0:
        return out.fill_(-1)
    if rows == 0:
        return out
    facts = facts if facts is not None else _impl.facts_for(scores)
    plan = plan if plan is not None else plans.select(rows, n, k, facts)
    kept = _kept(plan, rows, dev)
    if plan.algo == "bisect":
        bisect(scores, lengths, None, out, None, n, n, k, row_repeat, plan, block_scores=False)
    elif plan.algo == "radix":
        radix(scores, lengths, None, out, n, n, k, row_repeat, plan, block_scores=False, pdl=bool(facts.get("pdl")),
              tot=kept)
    elif plan.algo == "longrow":
        longrow(scores, lengths, None, out, n, n, k, row_repeat, plan, block_scores=False, pdl=bool(facts.get("pdl")),
                sync=kept)
    else:
        hier(_aligned(scores), lengths, None, out, _workspace(plan, rows, dev), kept, None, n, n, k, row_repeat, plan,
             block_scores=False)
    return out


def candidate_blocks(logits, row_ends, topk_blocks, row_starts=None, block_size=8, row_repeat=1, out=None, *,
                     fused=False, with_flags=False, flags_out=None, facts=None, plan=None, scores=None):
    """Triton arm of :func:`dsa_lab.select_candidate_blocks` (arguments checked there).

    Unfused (the default): the bounded block-scores launch (it also zeroes the flags, and at few rows stores the
    hier select's stage-A keys), then the select over each row's live block extent, launched as a programmatic
    dependent of the scores launch on sm_90+.  ``fused``: one hier kernel reads each row's live logits once and
    forms block maxima on the fly.  ``with_flags``: also the candidate flags, ``(ids, flags)``; ``flags_out`` a given
    tensor to write (every byte is written).  ``scores``: the block scores already written over each row's extent
    (by the producer, which also zeroed ``flags_out``): no scores launch.  ``plan``: a
    :func:`dsa_lab.plans.candidate_blocks` plan.

    Returns int32 ``[rows, topk_blocks]`` block ids (any order), ``-1`` tail; every slot written."""
    rows, width = logits.shape
    k, bs = int(topk_blocks), int(block_size)
    nblocks = -(-width // bs)
    dev = logits.device
    if out is None:
        out = torch.empty((rows, k), dtype=torch.int32, device=dev)
    flags = None
    if with_flags:
        flags = flags_out if flags_out is not None else torch.empty((rows, nblocks + 1), dtype=torch.uint8, device=dev)
    if nblocks == 0 or rows == 0:
        out.fill_(-1)
        return (out, flags.zero_()) if with_flags else out
    facts = facts if facts is not None else _impl.facts_for(logits)
    if plan is None:
        plan = plans.candidate_blocks(rows, width, k, facts, block_size=bs, fused=fused, scored=scores is not None)
    sel = plan.select
    kept = _kept(sel, rows, dev)  # before the first launch (see _kept)
    ws = _workspace(sel, rows, dev) if sel.algo == "hier" else None
    if sel.algo == "longrow":  # the logits (or the producer's scores) read by the select itself
        longrow(scores if scores is not None else logits, row_ends, row_starts, out, nblocks, width, k, row_repeat,
                sel, block_scores=True, pdl=bool(facts.get("pdl")), sync=kept)
    elif fused:
        kflags = None if plan.flags_kernel else flags
        hier(logits, row_ends, row_starts, out, ws, kept, kflags, nblocks, width, k, row_repeat, sel,
             block_scores=True, zero_flags=plans.flag_zeroing(flags is not None and flags.data_ptr() % 16 == 0))
    else:
        sc = scores
        if sc is None:
            sc = scores_buffer(rows, nblocks, dev)
            stage_a = (ws, sel.wrow, sel.S, plans.main_chain_min(sel)) if ws is not None and sel.a_done else None
            block_scores_into(logits, row_ends, row_starts, sc, bs, row_repeat, plan.scores_programs, fill_dead=False,
                              zero_flags=flags, stage_a=stage_a, pdl=plan.pdl)
        if sel.algo == "hier":
            hier(sc, row_ends, row_starts, out, ws, kept, flags, nblocks, width, k, row_repeat, sel,
                 block_scores=True, pdl=plan.pdl)
        elif sel.algo == "bisect":
            bisect(sc, row_ends, row_starts, out, flags, nblocks, width, k, row_repeat, sel, block_scores=True,
                   pdl=plan.pdl)
        else:
            radix(sc, row_ends, row_starts, out, nblocks, width, k, row_repeat, sel, block_scores=True,
                  pdl=bool(facts.get("pdl")), tot=kept)
    if flags is not None and plan.flags_kernel:  # (zeroed already by the scores launch or the producer)
        fill_flags(out, flags, width, row_starts, bs, row_repeat, zeroed=plan.scores_programs > 0 or scores is not None)
    return (out, flags) if with_flags else out
