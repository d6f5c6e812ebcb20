"""Large-k select A/B in one process: the decode grid's select stage, arms interleaved per point.

    python3 scripts/gpu_select_ab.py OUT.csv [--k 512,2048] [--contexts 65536,262144] [--rows 1,5,32,160,128,640]
        [--dists normal] [--arms torch,torch_live,triton,bisect16,bisect8,bisect32] [--reps 2] [--seed 0]

Arms: ``torch`` / ``torch_live`` / ``triton`` as in ``dsa-lab sweep`` (``select_arm_fn``); ``radix`` the radix
select (the dispatch's large-k kernel before the bisect select); ``bisectW`` the bisect select at W warps.  Every
arm's ids are checked against the torch arm (sets, all slots) before timing (``check``: ``ok`` /
``mismatch:BAD/ROWS``; the torch arm is the ``baseline``).  Each point's inputs come from a seed of the point plus
``--seed`` (another ``--seed``: other scores of the same law, e.g. to see how much the slowest row of a wave moves).
Writes one CSV row per (point, arm) as it goes.  Needs a CUDA GPU.
"""
import argparse
import csv
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402

from dsa_lab import dispatch  # noqa: E402
from dsa_lab.bench import data, timing  # noqa: E402
from dsa_lab.bench.sweep import Point, select_arm_fn, select_stage_inputs  # noqa: E402
from dsa_lab.bench.verify import compare  # noqa: E402
from dsa_lab.kernels import bisect  # noqa: E402


def arm(name, inp, k):
    sc, lens = inp["scores"], inp["lengths"]
    out = torch.empty((sc.shape[0], k), dtype=torch.int32, device=sc.device)
    n = sc.shape[1]
    if name.startswith("bisect"):
        nw = int(name[6:] or 16)
        return lambda: bisect.launch(sc, lens, None, out, None, n, n, k, 1, blocks=False, bs=1, num_warps=nw)
    if name == "radix":  # the dispatch's radix path, whatever the row count (its split and short-row rules)
        return lambda: dispatch.topk_select_triton(sc, k, lens, 1, out, over={"algo": "radix"})
    return select_arm_fn(name, inp, k)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--k", default="512,2048")
    ap.add_argument("--contexts", default="65536,262144")
    ap.add_argument("--rows", default="1x1,1x5,32x1,32x5,128x1,128x5")
    ap.add_argument("--dists", default="normal")
    ap.add_argument("--arms", default="torch,torch_live,triton,bisect16")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--max-seconds", type=float, default=500)
    ap.add_argument("--seed", type=int, default=0, help="added to every point's input seed")
    a = ap.parse_args()
    t0 = time.time()
    dev = torch.device("cuda")
    arms = a.arms.split(",")
    data.save_meta(data.meta_path(a.out), data.collect_metadata("python3 scripts/gpu_select_ab.py " + " ".join(sys.argv[1:])))
    cols = ["k", "context", "concurrency", "next_n", "rows", "dist", "arm", "median_us", "p10_us", "p90_us", "bad",
            "check", "vs_torch"]
    f = open(a.out, "w", newline="")
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    for k in [int(x) for x in a.k.split(",")]:
        for ctx in [int(x) for x in a.contexts.split(",")]:
            for rc in a.rows.split(","):
                conc, nn = (int(x) for x in rc.split("x"))
                for dist in a.dists.split(","):
                    if time.time() - t0 > a.max_seconds:
                        print("time box", flush=True)
                        return
                    p = Point(suite="select", stage="select", context=ctx, concurrency=conc, next_n=nn, k=k, dist=dist)
                    inp = select_stage_inputs(p, 262144, 7 + conc * 13 + nn + ctx % 991 + k + 100003 * a.seed, dev)
                    fns = {n: arm(n, inp, k) for n in arms}
                    ref = fns["torch"]().clone() if "torch" in fns else None
                    bad = {}
                    for n, fn in fns.items():
                        got = fn()
                        torch.cuda.synchronize()
                        bad[n] = compare(got, ref)[0] if ref is not None else -1
                    meds = {n: [] for n in arms}
                    last = {}
                    for _ in range(a.reps):
                        for n, fn in fns.items():
                            t = timing.time_fn(fn)
                            meds[n].append(t.median_us)
                            last[n] = t
                    base = statistics.median(meds["torch"]) if "torch" in meds else float("nan")
                    line = []
                    for n in arms:
                        m = statistics.median(meds[n])
                        w.writerow(dict(k=k, context=ctx, concurrency=conc, next_n=nn, rows=conc * nn, dist=dist, arm=n,
                                        median_us=round(m, 3), p10_us=round(last[n].p10_us, 3),
                                        p90_us=round(last[n].p90_us, 3), bad=bad[n],
                                        check="baseline" if n == "torch" else ("ok" if bad[n] == 0 else
                                                                               f"mismatch:{bad[n]}/{conc * nn}"),
                                        vs_torch=round(base / m, 3)))
                        line.append(f"{n} {m:7.2f}{'' if not bad[n] else ' BAD' + str(bad[n])}")
                    f.flush()
                    print(f"k{k} {ctx:6d} {conc:3d}x{nn} {dist:8s}: " + " | ".join(line), flush=True)
                    del fns, inp
    print(f"done in {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
