"""Diagnostic (H200): where the CUDA probe's one-CTA select spends its time, step by step.

    DSA_LAB_COMMIT=... python3 scripts/gpu_cuda_probe_steps.py [--out DIR]

``scripts/gpu_cuda_select_probe.py`` found the CUDA kernel slower than the Triton default at every point.  This
script builds ``scripts/cuda/topk_row_cta.cu`` with ``-DSTAMPS`` (thread 0 of row 0 reads ``clock64`` and
``%globaltimer`` at each step boundary and writes the deltas instead of ids) at several CTA widths, runs one row,
and prints cycles and ns per step; beside it, the graph-timed plain build at the same width.  Then the floor of a
multi-CTA design: ``scripts/cuda/cluster_floor.cu`` (one row per cluster of G CTAs, two cluster-wide exchanges
through distributed shared memory, a final ranking in one CTA; the common case only, its header says which), at
several shapes, checked once against the reference and graph-timed whole and stopped after each step, beside the
Triton default on the same rows.  Output: ``steps.csv``, ``cluster_floor.csv`` + meta JSON.
"""
import argparse
import csv
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import torch  # noqa: E402

from gpu_cuda_select_probe import CudaSelect, _Driver, check_status  # noqa: E402

STEPS = ["load+convert", "block_sum", "warp q-th", "threshold", "compact", "sort", "write"]
CLUSTER_ARMS = {"launch": 1, "load+reduce": 2, "+exchange 1": 3, "whole": 0}
CLUSTER_STEPS = ["load+convert", "warp reduce", "start barrier", "exchange 1", "threshold", "compact + DSMEM keys",
                 "counts out", "exchange 2", "gather", "rank"]


def read_stamps(stamped, sc, k, L, ml, steps):
    """A ``-DSTAMPS`` build's per-step (cycles, ns) lists: 20 launches (clocks, caches warm), the last one's stamps."""
    so = torch.zeros((1, k), dtype=torch.int32, device="cuda")
    for _ in range(20):
        stamped(sc, k, L, so, 0, ml)
    torch.cuda.synchronize()
    v = so[0, :2 * len(steps)].tolist()
    return v[0::2], v[1::2]


def cluster_section(drv, log, out_dir, bench, topk_select, MML, Point, select_stage_inputs, compare, cta_q=False):
    """``cta_q``: the ``-DCTA_Q=1`` builds (the tighter per-CTA threshold; its step sits inside "warp reduce"),
    the 8-CTA variants only, written to ``cluster_floor_q.csv``."""
    k = 64
    q = ("CTA_Q=1",) if cta_q else ()
    f = open(os.path.join(out_dir, "cluster_floor_q.csv" if cta_q else "cluster_floor.csv"), "w", newline="")
    w = csv.DictWriter(f, fieldnames=["context", "rows", "threads", "per_thread", "cluster", "arm", "median_us",
                                      "p10_us", "p90_us", "check", "m_max", "cycles", "ns"])
    w.writeheader()
    # (threads, columns per thread, CTAs per row): every one has >= 64 warps per row (its common case, k = 64)
    variants = {65536: [(256, 4, 8), (512, 4, 4)], 262144: [(256, 16, 8), (512, 8, 8), (512, 16, 4)]}
    if cta_q:
        variants = {65536: [(256, 4, 8)], 262144: [(256, 16, 8)]}
    for ctx, conc in ((65536, 1), (262144, 1), (262144, 32)):
        p = Point("select", "select", ctx, conc, 1 if conc < 128 else 5, k, "normal")
        inp = select_stage_inputs(p, MML, 313, "cuda")
        sc, L, ml = inp["scores"], inp["lengths"], max(inp["live"])
        ref = topk_select(sc, k, lengths=L, impl="reference")
        out = torch.full((p.rows, k), -7, dtype=torch.int32, device="cuda")
        tm = bench.time_cuda_graph(lambda: topk_select(sc, k, lengths=L, impl="triton", out=out), rep_ms=10.0,
                                   max_replays=60)
        w.writerow({"context": ctx, "rows": p.rows, "arm": "triton", "median_us": round(tm.median_us, 3),
                    "p10_us": round(tm.p10_us, 3), "p90_us": round(tm.p90_us, 3)})
        line = [f"{ctx:>6} r{p.rows:<4} triton={tm.median_us:.2f}"]
        for nt, e, g in variants[ctx]:
            kern = CudaSelect(drv, nt, e, out_dir, log, defines=q, cluster=g)
            out.fill_(-7)
            kern(sc, k, L, out, 0, ml)
            torch.cuda.synchronize()
            nbad, msg = compare(out, ref)
            chk = check_status(nbad, int((out == -2).all(dim=1).sum()), p.rows, msg)
            mo = torch.zeros((p.rows, k), dtype=torch.int32, device="cuda")
            kern(sc, k, L, mo, 4, ml)  # the candidate count M of each accepted row
            m_max = int(mo[:, 0].max())
            res = []
            for arm, stop in CLUSTER_ARMS.items():
                tm = bench.time_cuda_graph(lambda stop=stop: kern(sc, k, L, out, stop, ml), rep_ms=10.0,
                                           max_replays=60)
                res.append(tm.median_us)
                w.writerow({"context": ctx, "rows": p.rows, "threads": nt, "per_thread": e, "cluster": g, "arm": arm,
                            "median_us": round(tm.median_us, 3), "p10_us": round(tm.p10_us, 3),
                            "p90_us": round(tm.p90_us, 3), "check": chk if arm == "whole" else "timing only",
                            "m_max": m_max})
            if p.rows == 1:  # thread 0 of rank 0: clock64 / globaltimer per step (a -DSTAMPS build)
                stamped = CudaSelect(drv, nt, e, out_dir, log, defines=("STAMPS",) + q, cluster=g)
                cyc, nss = read_stamps(stamped, sc, k, L, ml, CLUSTER_STEPS)
                for st, cy, ns in zip(CLUSTER_STEPS, cyc, nss):
                    w.writerow({"context": ctx, "rows": 1, "threads": nt, "per_thread": e, "cluster": g,
                                "arm": f"step: {st}", "median_us": "", "cycles": cy, "ns": ns, "m_max": m_max})
                print(f"   {nt}x{e}xG{g} steps: " + "  ".join(f"{st}={cy}c" for st, cy in zip(CLUSTER_STEPS, cyc)),
                      flush=True)
            line.append(f"{nt}x{e}xG{g}[{chk[:12]} M{m_max}]: " + "/".join(f"{v:.2f}" for v in res))
        f.flush()
        print("  ".join(line) + "   (launch/load+reduce/+exchange 1/whole)", flush=True)
    f.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="build/cuda_probe_steps")
    ap.add_argument("--sections", default="cta,cluster", help="which to run: cta (one-CTA steps), cluster")
    ap.add_argument("--cta-q", action="store_true", help="cluster section: the -DCTA_Q=1 builds (cluster_floor_q.csv)")
    a = ap.parse_args()
    from dsa_lab.bench import timing as bench, data
    from dsa_lab.select import topk_select
    from dsa_lab.bench.sweep import MML, Point, select_stage_inputs
    from dsa_lab.bench.verify import compare

    os.makedirs(a.out, exist_ok=True)
    drv, log = _Driver(), []
    k = 64
    t0 = time.time()
    f = open(os.path.join(a.out, "steps.csv"), "w", newline="")
    w = csv.DictWriter(f, fieldnames=["context", "threads", "per_thread", "step", "cycles", "ns", "graph_us", "check"])
    w.writeheader()
    cases = [(4096, nt, e) for nt, e in ((1024, 1), (512, 1), (256, 2), (128, 4), (1024, 32))]
    cases += [(65536, nt, e) for nt, e in ((1024, 8), (512, 16), (256, 32))]
    cases += [(262144, nt, e) for nt, e in ((1024, 32), (512, 64))]
    if "cta" not in a.sections.split(","):
        cases = []
    for ctx, nt, e in cases:
        p = Point("select", "select", ctx, 1, 1, k, "normal")
        inp = select_stage_inputs(p, MML, 77, "cuda")
        sc, L, ml = inp["scores"], inp["lengths"], max(inp["live"])
        ref = topk_select(sc, k, lengths=L, impl="reference")
        plain = CudaSelect(drv, nt, e, a.out, log)
        stamped = CudaSelect(drv, nt, e, a.out, log, defines=("STAMPS",))
        out = torch.full((1, k), -7, dtype=torch.int32, device="cuda")
        plain(sc, k, L, out, 0, ml)
        torch.cuda.synchronize()
        nbad, msg = compare(out, ref)
        chk = check_status(nbad, 0, 1, msg)
        tm = bench.time_cuda_graph(lambda: plain(sc, k, L, out, 0, ml), rep_ms=10.0, max_replays=60)
        cyc, ns = read_stamps(stamped, sc, k, L, ml, STEPS)
        print(f"{ctx:>6} nt{nt:<4} e{e:<2} graph={tm.median_us:6.2f} us  check={chk}  " +
              "  ".join(f"{s}={c}c/{n}ns" for s, c, n in zip(STEPS, cyc, ns)), flush=True)
        for s, c, n in zip(STEPS, cyc, ns):
            w.writerow({"context": ctx, "threads": nt, "per_thread": e, "step": s, "cycles": c, "ns": n,
                        "graph_us": round(tm.median_us, 3), "check": chk})
        f.flush()
    f.close()
    if "cluster" in a.sections.split(","):
        cluster_section(drv, log, a.out, bench, topk_select, MML, Point, select_stage_inputs, compare, cta_q=a.cta_q)
    meta = data.collect_metadata(" ".join(["python3"] + sys.argv), {"builds": log, "seconds": round(time.time() - t0)})
    with open(os.path.join(a.out, "steps.meta.json"), "w") as fm:
        json.dump(meta, fm, indent=1)


if __name__ == "__main__":
    main()
