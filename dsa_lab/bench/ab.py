"""A/B in one process: this tree against other trees of the package (or torch), same inputs, arms interleaved.

    dsa-lab ab OUT.csv --old DIR [--stage topk|select|full] [--k 64,256] [--rows 1,4,32] [--widths 262144]
        [--arms old,new] [--dist normal] [--reps 3]

Arms: ``new`` (this tree), ``old`` (``DIR/dsa_lab_old``), ``pkg_NAME`` (``DIR/dsa_lab_NAME``: a candidate change),
``torch`` / ``torch_live`` (the sweep's upstream arms).  Another tree is made with
``git archive REV dsa_lab | tar -x -C DIR && mv DIR/dsa_lab DIR/dsa_lab_old``.  Stages:

* ``topk``: ``topk_select`` over ``rows x width`` scores with per-row lengths (``--ragged``: uniform in [width/2,
  width]; else every row full);
* ``select`` / ``full``: the decode grid's stages (``dsa-lab sweep``): block scores of a context ``width``, or its
  logits with ``select_candidate_blocks`` and flags.

Every arm is checked first against the exact reference (outputs compared as sets per row, flags exactly); then each
round times every arm once, in reversed order every other round (``dsa_lab.bench.time_fn``: CUDA-graph medians),
and the median of ``--reps`` rounds is kept.  One CSV row per (point, arm), written as it goes, with ``ratio_vs_first`` against the first arm.
"""
from __future__ import annotations

import argparse
import csv
import importlib
import statistics
import sys
import time

import torch

from . import data, timing
from .trees import package
from .sweep import BLOCK_SIZE, Point, full_stage_inputs, make_values, select_stage_inputs

COLUMNS = ["stage", "k", "rows", "width", "dist", "arm", "median_us", "p10_us", "p90_us", "ratio_vs_first", "bad"]


def inputs(stage: str, rows: int, width: int, k: int, dist: str, seed: int, device, *, ragged: bool) -> dict:
    if stage == "topk":
        g = torch.Generator(device=device).manual_seed(seed)
        x = make_values(dist, rows, width, g, device)
        lo = width // 2 if ragged else width
        lengths = torch.randint(lo, width + 1, (rows,), generator=g, device=device, dtype=torch.int32)
        return {"scores": x, "lengths": lengths, "live": lengths.tolist()}
    p = Point(suite=stage, stage=stage, context=width, concurrency=rows, next_n=1, k=k, dist=dist)
    return (select_stage_inputs if stage == "select" else full_stage_inputs)(p, 262144, seed, device)


def arm_fn(arm: str, stage: str, inp: dict, k: int, folder: str | None):
    """``fn()`` -> ids (or ``(ids, flags)`` in the full stage)."""
    from .sweep import _flags_fn, full_arm_fn, select_arm_fn

    if arm in ("torch", "torch_live"):
        return full_arm_fn(arm, inp, k, _flags_fn()) if stage == "full" else select_arm_fn(arm, inp, k)
    pkg = package(arm, folder)
    importlib.import_module(pkg.__name__ + ".select")
    if stage == "full":
        x, ends = inp["logits"], inp["ends"]
        out = torch.empty((x.shape[0], k), dtype=torch.int32, device=x.device)
        return lambda: pkg.select.select_candidate_blocks(x, ends, k, block_size=BLOCK_SIZE, impl="triton", out=out,
                                                          with_flags=True)
    sc, lengths = inp["scores"], inp["lengths"]
    out = torch.empty((sc.shape[0], k), dtype=torch.int32, device=sc.device)
    return lambda: pkg.select.topk_select(sc, k, lengths=lengths, impl="triton", out=out)


def reference(stage: str, inp: dict, k: int):
    from ..select import select_candidate_blocks, topk_select

    if stage == "full":
        return select_candidate_blocks(inp["logits"], inp["ends"], k, block_size=BLOCK_SIZE, impl="reference",
                                       with_flags=True)
    return topk_select(inp["scores"], k, lengths=inp["lengths"], impl="reference"), None


def check(fn, ref_ids, ref_flags) -> int:
    from .verify import compare

    res = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    ids = res[0] if isinstance(res, tuple) else res
    bad = compare(ids, ref_ids)[0]
    if ref_flags is not None:
        bad += int((res[1] != ref_flags).any(dim=1).sum())
    return bad


def add_arguments(p) -> None:
    p.add_argument("out", help="CSV to write (its metadata beside it)")
    p.add_argument("--old", default=None, help="folder holding dsa_lab_old/ (and dsa_lab_NAME/ for pkg_NAME arms)")
    p.add_argument("--stage", default="topk", choices=("topk", "select", "full"))
    p.add_argument("--arms", default="old,new")
    p.add_argument("--k", default="64")
    p.add_argument("--rows", default="1,4,32")
    p.add_argument("--widths", default="262144", help="columns (topk) or decode contexts (select, full)")
    p.add_argument("--dist", default="normal")
    p.add_argument("--ragged", action="store_true", help="topk: row lengths uniform in [width/2, width]")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-seconds", type=float, default=500)


def run(args) -> int:
    t0 = time.time()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    arms = args.arms.split(",")
    data.save_meta(data.meta_path(args.out), data.collect_metadata("dsa-lab ab " + " ".join(sys.argv[2:]),
                                                                   {"old": args.old}))
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for k in (int(x) for x in args.k.split(",")):
            for width in (int(x) for x in args.widths.split(",")):
                for rows in (int(x) for x in args.rows.split(",")):
                    if time.time() - t0 > args.max_seconds:
                        print("time box reached", flush=True)
                        return 0
                    seed = 1000 + 7 * rows + width % 997 + k + 100003 * args.seed
                    inp = inputs(args.stage, rows, width, k, args.dist, seed, dev, ragged=args.ragged)
                    ref = reference(args.stage, inp, k)
                    fns = {a: arm_fn(a, args.stage, inp, k, args.old) for a in arms}
                    bad = {a: check(fn, *ref) for a, fn in fns.items()}
                    meds: dict = {a: [] for a in arms}
                    last = {}
                    for rep in range(args.reps):  # the order reversed every other round: no arm always runs first
                        for a in (arms if rep % 2 == 0 else arms[::-1]):
                            fn = fns[a]
                            last[a] = timing.time_fn(fn)
                            meds[a].append(last[a].median_us)
                    first = statistics.median(meds[arms[0]])
                    line = []
                    for a in arms:
                        m = statistics.median(meds[a])
                        w.writerow({"stage": args.stage, "k": k, "rows": rows, "width": width, "dist": args.dist,
                                    "arm": a, "median_us": round(m, 3), "p10_us": round(last[a].p10_us, 3),
                                    "p90_us": round(last[a].p90_us, 3), "ratio_vs_first": round(m / first, 4),
                                    "bad": bad[a]})
                        line.append(f"{a} {m:8.2f}" + (f" BAD{bad[a]}" if bad[a] else ""))
                    f.flush()
                    print(f"{args.stage} k{k} {rows:4d} x {width:6d}: " + " | ".join(line), flush=True)
    print(f"done in {time.time() - t0:.0f} s", flush=True)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))
