"""Token-level top-k on long rows (DeepSeek V3.2's top-2048 over 64K-256K-token logits): ``topk_select`` against
``torch.topk`` in one process, the ids checked against the exact reference first.

    python -m dsa_lab.bench.tokens OUT.csv [--grid] [--prefill] [--laws] [--rows 1,2,...] [--widths ...] [--k ...]

Points: ``--grid`` rows x widths x k x lengths (``full``: every row live; ``ragged``: uniform in [width/2, width]);
``--prefill``: 4096 rows with causal lengths (row i live up to (i + 1) x width / 4096); ``--laws``: the value laws
at 64 x 262144 and 640 x 65536, k = 2048; ``--probe``: the long-row select at other tiles and warps too;
``--crossover``: the long-row and radix selects forced, at 1-64 rows of each width. Columns
past a row's length hold ``-inf`` (as the producer leaves them), so both arms see the same rows. Arms: ``torch``
(``torch.topk`` over the row, then the store of int32 ids with ``-1`` for ``-inf``: the upstream path) and
``triton`` (``dsa_lab.topk_select``). Each point: fresh inputs, the triton arm's ids compared with the exact
reference (sets, every slot; a sort of packed keys on the device), then both arms timed (``dsa_lab.bench.time_fn``:
CUDA-graph medians), alternating which goes first; the floor is the point's bytes (every live score read once, the
ids written) at the measured streaming bandwidth. One CSV row per (point, arm), written as it goes; the metadata
beside it.
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time

import torch

from . import data, timing
from .shapes import fill
from .verify import compare

COLUMNS = ["shape", "rows", "width", "k", "lengths", "dist", "arm", "median_us", "p10_us", "p90_us", "bad",
           "speedup_vs_torch", "floor_us", "x_floor"]
GRID_ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 640)
GRID_WIDTHS = (65536, 131072, 262144)
LAWS = ("normal", "shifted_narrow", "equal", "three", "ramp", "nan1pct", "band")
PROBE = ((8192, 8), (2048, 4), (4096, 4))  # long-row (TILE, num_warps) beside the plan's own, at k = 2048


def points(args) -> list[tuple]:
    """(shape, rows, width, k, lengths, dist) of every point asked for."""
    out = []
    if args.grid:
        out += [("grid", r, w, k, lm, "normal") for k in sorted(args.k, reverse=True) for w in args.widths
                for r in args.rows for lm in ("full", "ragged")]
    if args.laws:
        out += [("laws", r, w, 2048, "full", d) for r, w in ((64, 262144), (640, 65536)) for d in LAWS]
    if args.prefill:
        out += [("prefill", 4096, w, k, "causal", "normal") for k in args.k for w in (65536, 131072)]
    if args.probe:
        out += [("probe", r, w, 2048, "full", "normal") for r, w in ((1, 131072), (64, 262144), (640, 262144))]
    if args.crossover:
        out += [("crossover", r, w, k, "full", "normal") for k in (2048, 512) for w in args.widths
                for r in (1, 2, 4, 8, 16, 32, 64)]
    return out


def inputs(rows, width, lengths, dist, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    x = fill(dist, rows, width, gen=g)
    if lengths == "full":
        L = torch.full((rows,), width, dtype=torch.int32, device=device)
    elif lengths == "ragged":
        L = torch.randint(width // 2, width + 1, (rows,), generator=g, device=device, dtype=torch.int32)
    else:  # causal: the prefill's row i sees (i + 1) * width / rows tokens
        L = ((torch.arange(rows, device=device) + 1) * width // rows).to(torch.int32)
    x.masked_fill_(torch.arange(width, device=device)[None, :] >= L[:, None].long(), float("-inf"))
    return x, L


def arms(x, L, k, probe=False, crossover=False):
    """``fn()`` per arm; ``probe``: also the long-row select at the :data:`PROBE` tiles and warps; ``crossover``:
    also the long-row and the radix selects, each forced (where the rules put the line between them)."""
    import dataclasses

    from .. import _impl, plans
    from ..launch import select as launch
    from ..select import topk_select
    from .sweep.arms import torch_topk_store

    out = torch.empty((x.shape[0], k), dtype=torch.int32, device=x.device)
    fns = {"torch": lambda: torch_topk_store(x, k),
           "triton": lambda: topk_select(x, k, lengths=L, impl="triton", out=out)}
    rows, n = x.shape
    facts = _impl.facts_for(x)
    if crossover:
        for algo in ("longrow", "radix"):
            pl = plans.select(rows, n, k, facts, algo=algo)
            o = torch.empty_like(out)
            fns[algo] = lambda pl=pl, o=o: launch.topk_select(x, k, L, 1, o, plan=pl, facts=facts)
    if probe:
        base = plans.longrow(rows, n, k, facts)
        for tile, nw in PROBE:
            P = max(1, min(-(-n // tile), -(-plans.LONGROW_PROGRAMS * int(facts["sm_count"]) // rows)))
            pl = dataclasses.replace(base, TILE=tile, num_warps=nw, P=P)
            o = torch.empty_like(out)
            fns[f"triton_t{tile}_w{nw}"] = lambda pl=pl, o=o: launch.topk_select(x, k, L, 1, o, plan=pl, facts=facts)
    return fns


def run(args) -> int:
    dev = torch.device("cuda")
    t0 = time.time()
    ceil = timing.measure_ceilings(device=dev)
    bw = float(ceil["stream_gbps"])
    data.save_meta(data.meta_path(args.out), data.collect_metadata(
        "python -m dsa_lab.bench.tokens " + " ".join(sys.argv[1:]), {"ceilings": ceil}))
    pts = points(args)
    print(f"{len(pts)} points; streaming {bw:.0f} GB/s", flush=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for i, (shape, rows, width, k, lengths, dist) in enumerate(pts):
            if time.time() - t0 > args.max_seconds:
                print("time box reached", flush=True)
                break
            from ..select import topk_select

            x, L = inputs(rows, width, lengths, dist, 1000 + i + 7919 * args.seed, dev)
            fns = arms(x, L, k, probe=shape == "probe", crossover=shape == "crossover")
            ref = topk_select(x, k, lengths=L, impl="reference")
            bads = {a: compare(fn(), ref)[0] for a, fn in fns.items() if a != "torch"}
            bad = bads["triton"]
            meds: dict = {a: [] for a in fns}
            last = {}
            for rep in range(args.reps):
                for a in (list(fns) if rep % 2 == 0 else list(fns)[::-1]):
                    last[a] = timing.time_fn(fns[a])
                    meds[a].append(last[a].median_us)
            floor = (int(L.sum()) * 4 + rows * k * 4) / (bw * 1e3)
            m = {a: statistics.median(v) for a, v in meds.items()}
            for a in fns:
                w.writerow({"shape": shape, "rows": rows, "width": width, "k": k, "lengths": lengths, "dist": dist,
                            "arm": a, "median_us": round(m[a], 3), "p10_us": round(last[a].p10_us, 3),
                            "p90_us": round(last[a].p90_us, 3), "bad": bads.get(a, ""),
                            "speedup_vs_torch": round(m["torch"] / m[a], 3), "floor_us": round(floor, 3),
                            "x_floor": round(m[a] / floor, 3)})
            f.flush()
            print(f"{shape} {dist:14s} k{k} {rows:4d} x {width:6d} {lengths:6s}: torch {m['torch']:8.1f} "
                  f"triton {m['triton']:8.1f} ({m['torch'] / m['triton']:.2f}x, {m['triton'] / floor:.2f}x floor)"
                  + (f" BAD {bad}" if bad else "") + "".join(f" | {a} {m[a]:.1f}" + (" BAD" if bads[a] else "")
                                                           for a in fns if a not in ("torch", "triton")), flush=True)
            del x, L, fns
    print(f"done in {time.time() - t0:.0f} s", flush=True)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--grid", action="store_true")
    p.add_argument("--prefill", action="store_true")
    p.add_argument("--laws", action="store_true")
    p.add_argument("--probe", action="store_true", help="also the long-row select at other tiles and warps")
    p.add_argument("--crossover", action="store_true", help="the long-row and radix selects forced, 1-64 rows")
    p.add_argument("--rows", default=",".join(map(str, GRID_ROWS)), type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--widths", default=",".join(map(str, GRID_WIDTHS)),
                   type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--k", default="512,2048", type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-seconds", type=float, default=400)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
