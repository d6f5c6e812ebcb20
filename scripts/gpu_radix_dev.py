"""Dev measurement of the experimental radix select against the default kernel and torch (H200).

    PYTHONUNBUFFERED=1 DSA_LAB_COMMIT=... python3 scripts/gpu_radix_dev.py OUT_DIR [MAX_SECONDS]

Inputs are the sweep's select-stage inputs (:func:`dsa_lab.sweep.select_stage_inputs`: a padded 32768-block
score workspace, live blocks from the seed's decode ends, newest block +inf, tail -inf).  For each point:
the radix ids are checked against the exact reference (poisoned output, every slot), then the arms are
timed in one process with :func:`dsa_lab.bench.time_cuda_graph`: ``torch`` (the upstream before-path),
``triton`` (the default hier kernel), ``radix_t2048`` (every digit over the whole row, the version first timed
at 11f3e60) and ``radix_compact_t2048`` / ``radix_compact_t4096`` (two passes over the row, later digits over
the threshold bin's list), ``radix_split`` (compact, each row split over programs by the SM count: two launches).  Writes ``radix_dev.csv`` and
``radix_dev.meta.json``; prints a short table.  Not the recorded sweep: a dev run for notes/select_kernel.md.
"""
import csv
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from dsa_lab import bench, data  # noqa: E402
from dsa_lab.select import topk_select, topk_select_reference  # noqa: E402
from dsa_lab.select_radix_triton import topk_select_radix  # noqa: E402
from dsa_lab.sweep import MML, Point, select_stage_inputs, torch_topk_store  # noqa: E402

POINTS = []  # (context, concurrency, next_n, k, dist)
for k in (2048, 512, 64):
    for ctx in (4096, 16384, 65536, 262144):
        for conc, nn in ((1, 1), (32, 1), (128, 5)):
            POINTS.append((ctx, conc, nn, k, "normal"))
for k in (2048, 64):
    for ctx in (16384, 262144):
        POINTS.append((ctx, 32, 1, k, "equal"))


def main(out_dir, max_s):
    t_start = time.time()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "radix_dev.csv")
    cols = ["context", "concurrency", "next_n", "rows", "k", "dist", "arm", "median_us", "p10_us", "p90_us", "check"]
    f = open(path, "w", newline="")
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    print(f"{'ctx':>7} {'rows':>4} {'k':>5} {'dist':<7} {'torch':>8} {'triton':>8} {'radix':>8} {'cmp2K':>8} {'cmp4K':>8}"
          f" {'split':>8}  check")
    done = 0
    for i, (ctx, conc, nn, k, dist) in enumerate(POINTS):
        if time.time() - t_start > max_s:
            print(f"stopped at the time limit after {done} points")
            break
        p = Point("select", "select", ctx, conc, nn, k, dist)
        inp = select_stage_inputs(p, MML, 1000 + i, "cuda")
        sc, L = inp["scores"], inp["lengths"]
        ref = topk_select_reference(sc, k, L, 1)
        # (tile, compact, split): split=None sizes programs per row from the SM count (1 at many rows)
        variants = {"radix_t2048": (2048, False, False), "radix_compact_t2048": (2048, True, False),
                    "radix_compact_t4096": (4096, True, False), "radix_split": (None, True, None)}
        outs = {v: torch.empty((p.rows, k), dtype=torch.int32, device="cuda") for v in variants}
        check = "ok"
        for v, (t, cmp, spl) in variants.items():
            outs[v].fill_(0x7EADBEEF)
            topk_select_radix(sc, k, L, 1, outs[v], tile=t, compact=cmp, split=spl)
            bad = int((torch.sort(outs[v], 1).values != torch.sort(ref, 1).values).any(1).sum())
            if bad:
                check = f"mismatch:{bad}/{p.rows} ({v})"
        o_tri = torch.empty((p.rows, k), dtype=torch.int32, device="cuda")
        arms = {
            "torch": lambda: torch_topk_store(sc, k),
            "triton": lambda: topk_select(sc, k, lengths=L, impl="triton", out=o_tri),
        }
        for v, (t, cmp, spl) in variants.items():
            arms[v] = (lambda o=outs[v], t=t, cmp=cmp, spl=spl: topk_select_radix(sc, k, L, 1, o, tile=t, compact=cmp,
                                                                                     split=spl))
        res = {}
        for a, fn in arms.items():
            tm = bench.time_cuda_graph(fn, rep_ms=10.0, max_replays=60)
            res[a] = tm.median_us
            w.writerow({"context": ctx, "concurrency": conc, "next_n": nn, "rows": p.rows, "k": k, "dist": dist, "arm": a,
                        "median_us": round(tm.median_us, 3), "p10_us": round(tm.p10_us, 3), "p90_us": round(tm.p90_us, 3),
                        "check": check if a.startswith("radix") else ""})
        f.flush()
        done += 1
        print(f"{ctx:>7} {p.rows:>4} {k:>5} {dist:<7} {res['torch']:>8.1f} {res['triton']:>8.1f} "
              f"{res['radix_t2048']:>8.1f} {res['radix_compact_t2048']:>8.1f} {res['radix_compact_t4096']:>8.1f}"
              f" {res['radix_split']:>8.1f}  {check}",
              flush=True)
    f.close()
    meta = data.collect_metadata(" ".join(["python3"] + sys.argv), {"points_done": done, "points_planned": len(POINTS),
                                                                     "timing": "cuda graph (dsa_lab.bench.time_cuda_graph)",
                                                                     "note": "dev run, not the recorded sweep"})
    with open(os.path.join(out_dir, "radix_dev.meta.json"), "w") as fm:
        json.dump(meta, fm, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "build/radix_dev", float(sys.argv[2]) if len(sys.argv) > 2 else 200.0)
