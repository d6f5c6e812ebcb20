"""The arms of ``dsa-lab ab``'s decode stages (topk, select, full): the call each arm times, the inputs of a point,
the exact reference every arm is checked against first, and a profiled graph replay."""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import re
import statistics
from pathlib import Path

import torch

from ..sweep import (
    BLOCK_SIZE,
    Point,
    _flags_fn,
    full_arm_fn,
    full_stage_inputs,
    make_values,
    select_arm_fn,
    select_stage_inputs,
)
from ..trees import package

FORCED = ("radix", "hier", "bisect", "longrow")  # this tree's select with that kernel forced, whatever the rows


def is_tree(arm: str) -> bool:
    return arm in ("new", "triton", "old") or arm.startswith("pkg_")


def tree_digest(arm: str, folder: str | None) -> str:
    """A short hash of the ``.py`` files of the tree an arm calls (which code a record timed)."""
    root = Path(package(arm, folder).__file__).parent
    h = hashlib.sha1()
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


def parse_rows(spec: str) -> list[tuple[int, int]]:
    """``"1,32,128x5"`` -> ``[(1, 1), (32, 1), (128, 5)]``: (concurrency, next_n) per point."""
    out = []
    for s in spec.split(","):
        c, _, n = s.partition("x")
        out.append((int(c), int(n or 1)))
    return out


def inputs(stage: str, conc: int, next_n: int, width: int, k: int, dist: str, seed: int, device, *, mml: int,
           ragged: bool) -> dict:
    """A point's inputs: ``topk``: ``conc * next_n`` rows of ``width`` scores (``ragged``: lengths uniform in
    [width/2, width], else full rows); ``select`` / ``full``: the sweep's decode inputs of context ``width``
    (:func:`dsa_lab.bench.sweep.select_stage_inputs`, ``full_stage_inputs``) over a workspace ``mml`` wide."""
    if stage == "topk":
        rows = conc * next_n
        g = torch.Generator(device=device).manual_seed(seed)
        x = make_values(dist, rows, width, g, device)
        lo = width // 2 if ragged else width
        lengths = torch.randint(lo, width + 1, (rows,), generator=g, device=device, dtype=torch.int32)
        return {"scores": x, "lengths": lengths, "live": lengths.tolist()}
    p = Point(suite=stage, stage=stage, context=width, concurrency=conc, next_n=next_n, k=k, dist=dist)
    return (select_stage_inputs if stage == "select" else full_stage_inputs)(p, mml, seed, device)


def plan_variant(arm: str, rows: int, n: int, k: int, facts: dict, folder: str | None):
    """``(tree's select launcher, plan)`` of a topk-stage arm ``TREE:FIELD=V[:FIELD=V]``: the plan the tree's rules
    make for ``rows x n`` at ``k``, with those integer fields replaced (e.g. ``new:NCH=1024``)."""
    tree, *kv = arm.split(":")
    if not is_tree(tree) or not kv or not all("=" in x for x in kv):
        raise ValueError(f"arm {arm!r}: a plan variant is TREE:FIELD=V[:FIELD=V]")
    pkg = package(tree, folder)
    plans = importlib.import_module(f"{pkg.__name__}.plans")
    plan = plans.select(rows, n, k, facts)
    fields = {f.name for f in dataclasses.fields(plan)}
    new = {f: int(v) for f, v in (x.split("=", 1) for x in kv)}
    if set(new) - fields:
        raise ValueError(f"arm {arm!r}: the {plan.algo} plan for {rows} x {n} has no field "
                         f"{', '.join(sorted(set(new) - fields))}")
    return importlib.import_module(f"{pkg.__name__}.launch.select"), dataclasses.replace(plan, **new)


def arm_fn(arm: str, stage: str, inp: dict, k: int, folder: str | None):
    """``fn()`` -> ids (``(ids, flags)`` in the full stage) of one arm: a tree (``new`` / ``old`` / ``pkg_NAME``,
    through its public API), ``torch`` / ``torch_live`` (the sweep's), a forced kernel of this tree (:data:`FORCED`,
    a plan with that algorithm), ``bisectW`` (the bisect kernel at W warps; topk / select) or, in topk, a tree's
    plan with fields replaced (:func:`plan_variant`)."""
    full = stage == "full"
    if arm in ("torch", "torch_live"):
        return full_arm_fn(arm, inp, k, _flags_fn()[1]) if full else select_arm_fn(arm, inp, k)
    src = inp["logits"] if full else inp["scores"]
    out = torch.empty((src.shape[0], k), dtype=torch.int32, device=src.device)
    if stage == "topk" and ":" in arm:
        from ... import _impl

        facts = _impl.facts_for(src)
        launch, pl = plan_variant(arm, src.shape[0], src.shape[1], k, facts, folder)
        return lambda: launch.topk_select(src, k, inp["lengths"], 1, out, plan=pl, facts=facts)
    if is_tree(arm):
        pkg = package(arm, folder)
        if full:
            return lambda: pkg.select_candidate_blocks(src, inp["ends"], k, block_size=BLOCK_SIZE, impl="triton",
                                                       out=out, with_flags=True)
        return lambda: pkg.topk_select(src, k, lengths=inp["lengths"], impl="triton", out=out)
    from ... import _impl, plans
    from ...launch import select as launch

    facts = _impl.facts_for(src)
    rows, n = src.shape
    if arm in FORCED:
        if full:
            pl = plans.candidate_blocks(rows, n, k, facts, block_size=BLOCK_SIZE, algo=arm)
            return lambda: launch.candidate_blocks(src, inp["ends"], k, None, BLOCK_SIZE, 1, out, with_flags=True,
                                                   plan=pl, facts=facts)
        pl = plans.select(rows, n, k, facts, algo=arm)
        return lambda: launch.topk_select(src, k, inp["lengths"], 1, out, plan=pl, facts=facts)
    m = re.fullmatch(r"bisect(\d+)", arm)
    if m and not full:
        pl = plans.bisect(facts, num_warps=int(m.group(1)))
        return lambda: launch.bisect(src, inp["lengths"], None, out, None, n, n, k, 1, pl, block_scores=False)
    raise ValueError(f"unknown arm {arm!r} for stage {stage}")


def reference(stage: str, inp: dict, k: int):
    """``(ids, flags or None)``: the exact contract (``impl="reference"``)."""
    from ...select import select_candidate_blocks, topk_select

    if stage == "full":
        return select_candidate_blocks(inp["logits"], inp["ends"], k, block_size=BLOCK_SIZE, impl="reference",
                                       with_flags=True)
    return topk_select(inp["scores"], k, lengths=inp["lengths"], impl="reference"), None


def check(fn, ref_ids, ref_flags) -> int:
    """Rows whose ids (compared as sets, every slot) or flags (exactly) differ from the reference's, on a second call
    into the first call's output poisoned: a slot a call leaves unwritten counts."""
    res = fn()
    (res[0] if isinstance(res, tuple) else res).fill_(-7)
    res = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    ids = (res[0] if isinstance(res, tuple) else res).cpu()
    bad = (ids.sort(1).values != ref_ids.cpu().sort(1).values).any(1)
    if ref_flags is not None:
        bad |= (res[1].cpu() != ref_flags.cpu()).any(1)
    return int(bad.sum())


def kernel_profile(fn, reps: int = 20) -> tuple[dict, float, list]:
    """``({kernel name: mean µs}, median span of one call in µs, timeline)`` from a profiled replay of a CUDA graph of
    one call: the span runs from the call's first kernel start to its last kernel end; the timeline lists the call's
    kernels in launch order as ``(name, start, end)``, the medians over the replays of each one's start and end in µs
    from the call's first kernel start (launches that overlap show it: a programmatic dependent starts before the
    launch before it ends)."""
    from torch.profiler import ProfilerActivity, profile

    from ..timing import _capture

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
        s.synchronize()
        g = torch.cuda.CUDAGraph()
        with _capture(g, s):
            fn()
        g.replay()
        s.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(reps):
                g.replay()
            s.synchronize()
    torch.cuda.current_stream().wait_stream(s)
    ev = [e for e in prof.events()
          if e.device_type.name == "CUDA" and "Memset" not in e.name and "Memcpy" not in e.name]
    return profile_summary(ev, reps)


def profile_summary(events, reps: int) -> tuple[dict, float, list]:
    """:func:`kernel_profile`'s numbers from the profiled kernels of ``reps`` replays of one call (objects with
    ``name`` and ``time_range.start`` / ``.end`` in µs): the kernels sorted by start, ``len // reps`` a call."""
    ev = sorted(events, key=lambda e: e.time_range.start)
    names = [e.name.split("(")[0][:40] for e in ev]  # (the name without its signature)
    per = len(ev) // reps
    by: dict = {}
    for name, e in zip(names[:per * reps], ev):
        by.setdefault(name, []).append(e.time_range.end - e.time_range.start)
    firsts = range(0, per * reps, per)  # each replay's first kernel
    spans = [ev[i + per - 1].time_range.end - ev[i].time_range.start for i in firsts] if per else []
    line = [(names[j],
             statistics.median(ev[i + j].time_range.start - ev[i].time_range.start for i in firsts),
             statistics.median(ev[i + j].time_range.end - ev[i].time_range.start for i in firsts)) for j in range(per)]
    return ({n: statistics.mean(v) for n, v in by.items()}, (statistics.median(spans) if spans else float("nan")),
            line)
