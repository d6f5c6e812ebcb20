"""A/B in one process: this tree against other trees of the package, torch or a forced kernel, same inputs, arms
interleaved.

    dsa-lab ab OUT.csv [--old DIR] [--stage topk|select|full|producer] [--arms old,new] [--k 64,512]
        [--rows 1,32,128x5] [--widths 262144] [--dist normal,equal] [--seed 0] [--reps 3] [--profile]

Arms: ``new`` (this tree; ``triton``, the sweep's name, is the same call), ``old`` (the package in ``DIR/dsa_lab_old``),
``pkg_NAME`` (``DIR/dsa_lab_NAME``: a candidate change), each called through its public API. Another tree is made with
``git archive REV dsa_lab | tar -x -C DIR && mv DIR/dsa_lab DIR/dsa_lab_old``.  The decode stages also take ``torch`` /
``torch_live`` (the sweep's upstream arms: ``torch.topk`` over the padded / the live width), ``radix``, ``hier``,
``bisect``, ``longrow`` (this tree with that kernel forced: a plan with that algorithm), in topk / select
``bisectW`` (the bisect kernel launched at W warps) and in topk ``TREE:FIELD=V[:FIELD=V]`` (the plan the tree's rules
make for the point, those integer fields replaced: ``new:NCH=1024`` a long-row sample of 1024 runs).  Stages:

* ``topk``: ``topk_select`` over ``rows x width`` scores (``--ragged``: lengths uniform in [width/2, width], else
  full rows);
* ``select`` / ``full``: the decode grid's stages (``dsa-lab sweep``'s inputs): block scores of a context ``width``,
  or its logits through ``select_candidate_blocks`` with flags;
* ``producer``: the paged MQA-logits kernel at B x next_n rows of context ``width`` (arms and checks:
  :mod:`dsa_lab.bench.ab.producer`).

``--rows`` are concurrency x next_n (``128x5``; ``32`` is ``32x1``).  Each point's inputs come from a seed of the
point plus ``--seed`` (other draws of the same law), once per ``--dist`` law.  Every arm is checked first against the
exact reference (ids as sets per row, every slot; flags exactly; the output poisoned); then each of ``--reps`` rounds
times every arm once, in reversed order every other round (``dsa_lab.bench.timing.time_fn``: CUDA-graph medians), and
the median of the rounds is kept (``--reps 0``: check only).  ``--profile``: each arm's kernels from a profiled graph
replay (mean µs per kernel, the span of one call).  One CSV row per (point, arm), written as it goes, with
``ratio_vs_first`` against the first arm and ``check`` (``ok`` / ``mismatch:BAD/ROWS``); the run's metadata beside
it (each tree arm's source hash in ``trees``).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import torch

from .. import data, timing
from .arms import arm_fn, check, inputs, is_tree, kernel_profile, parse_rows, reference, tree_digest

STAGES = ("topk", "select", "full", "producer")
COLUMNS = ["stage", "k", "concurrency", "next_n", "rows", "context", "dist", "seed", "arm", "median_us", "p10_us",
           "p90_us", "ratio_vs_first", "bad", "check", "span_us", "kernels", "timeline"]  # topk: "width" for "context"


def add_arguments(p) -> None:
    p.add_argument("out", help="CSV to write (its metadata beside it)")
    p.add_argument("--old", default=None, help="folder holding dsa_lab_old/ (and dsa_lab_NAME/ for pkg_NAME arms)")
    p.add_argument("--stage", default="topk", choices=STAGES)
    p.add_argument("--arms", default="old,new", help="comma list; the first is every ratio's base")
    p.add_argument("--k", default="64", help="comma list (decode stages)")
    p.add_argument("--rows", default="1,4,32", help="comma list of CONCURRENCY[xNEXT_N]")
    p.add_argument("--widths", default="262144", help="columns (topk) or contexts (select, full, producer)")
    p.add_argument("--dist", "--dists", dest="dist", default="normal",
                   help="value laws, comma list (dsa_lab.bench.shapes.fill: normal, shifted, equal, nan1pct, ramp)")
    p.add_argument("--ragged", action="store_true", help="topk: row lengths uniform in [width/2, width]")
    p.add_argument("--reps", type=int, default=3, help="timed rounds (0: check only)")
    p.add_argument("--seed", type=int, default=0, help="added to every point's input seed")
    p.add_argument("--mml", type=int, default=262144, help="decode workspace width (small: a plumbing run on a CPU)")
    p.add_argument("--profile", action="store_true", help="kernel times per call from a profiled graph replay (GPU)")
    p.add_argument("--note", default=None, help="what the arms are (kept in the metadata as arms_note)")
    p.add_argument("--max-seconds", type=float, default=500)


def _ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",")]


def point_seed(conc: int, next_n: int, width: int, k: int, seed: int) -> int:
    return 1000 + 7 * conc + 13 * (next_n - 1) + width % 997 + k + 100003 * seed


def _decode_point(args, arms, stage, k, conc, nn, width, dist, seed, dev) -> list[dict]:
    inp = inputs(stage, conc, nn, width, k, dist, seed, dev, mml=args.mml, ragged=args.ragged)
    ref_ids, ref_flags = reference(stage, inp, k)
    fns = {a: arm_fn(a, stage, inp, k, args.old) for a in arms}
    bad = {a: check(fn, ref_ids, ref_flags) for a, fn in fns.items()}
    meds: dict = {a: [] for a in arms}
    last = {}
    for rep in range(args.reps):  # the order reversed every other round: no arm always runs first
        for a in (arms if rep % 2 == 0 else arms[::-1]):
            last[a] = timing.time_fn(fns[a])
            meds[a].append(last[a].median_us)
    prof = {a: kernel_profile(fn) if args.profile and timing.has_cuda() else ({}, float("nan"), [])
            for a, fn in fns.items()}
    rows, line = [], []
    first = statistics.median(meds[arms[0]]) if args.reps else float("nan")
    for a in arms:
        m = statistics.median(meds[a]) if args.reps else float("nan")
        kern, span, timeline = prof[a]
        rows.append({"stage": stage, "k": k, "concurrency": conc, "next_n": nn, "rows": conc * nn,
                     "width" if stage == "topk" else "context": width,
                     "dist": dist, "seed": seed, "arm": a, "median_us": round(m, 3) if args.reps else None,
                     "p10_us": round(last[a].p10_us, 3) if a in last else None,
                     "p90_us": round(last[a].p90_us, 3) if a in last else None,
                     "ratio_vs_first": round(m / first, 4) if args.reps else None, "bad": bad[a],
                     "check": f"mismatch:{bad[a]}/{conc * nn}" if bad[a] else "ok",
                     "span_us": round(span, 3) if kern else None,
                     "kernels": ";".join(f"{n}={v:.2f}" for n, v in kern.items()),
                     "timeline": ";".join(f"{n}@{b:.1f}-{e:.1f}" for n, b, e in timeline)})
        line.append(f"{a} {m:8.2f}" + (f" BAD{bad[a]}" if bad[a] else "")
                    + (f" [{' '.join(f'{n[:14]}={v:.1f}' for n, v in kern.items())}]" if kern else ""))
    print(f"{stage} k{k} {conc:4d}x{nn} {width:6d} {dist}: " + " | ".join(line), flush=True)
    return rows


def run(args) -> int:
    t0 = time.time()
    dev = torch.device("cuda" if timing.has_cuda() else "cpu")
    arms = args.arms.split(",")
    bases = {a.split(":")[0].split("+")[0] for a in arms}  # a producer arm's tree: TREE[+PARTS][:KEY=V]
    trees = {b: tree_digest(b, args.old) for b in sorted(bases) if is_tree(b)}
    cmd = "dsa-lab ab " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["ab"] else sys.argv[1:])
    data.save_meta(data.meta_path(args.out), data.collect_metadata(
        cmd, {"old": args.old, "stage": args.stage, "arms": arms, "trees": trees, "arms_note": args.note}))
    with open(args.out, "w"):  # a fresh record: rows of an earlier run are not kept
        pass

    def deadline() -> bool:
        if time.time() - t0 > args.max_seconds:
            print("time box reached", flush=True)
            return True
        return False

    shapes = parse_rows(args.rows)
    cols = [("width" if c == "context" and args.stage == "topk" else c) for c in COLUMNS]
    if args.stage == "producer":
        from .producer import COLUMNS as PCOLS
        from .producer import run_points

        points = [(c, n, w, point_seed(c, n, w, 0, args.seed)) for w in _ints(args.widths) for c, n in shapes]
        run_points(args, arms, points, lambda row: data.append_row(args.out, row, PCOLS), deadline)
    else:
        for k in _ints(args.k):
            for width in _ints(args.widths):
                for conc, nn in shapes:
                    for dist in args.dist.split(","):
                        if deadline():
                            return 0
                        seed = point_seed(conc, nn, width, k, args.seed)
                        for row in _decode_point(args, arms, args.stage, k, conc, nn, width, dist, seed, dev):
                            data.append_row(args.out, row, cols)
    print(f"done in {time.time() - t0:.0f} s", flush=True)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))
