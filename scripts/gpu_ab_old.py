"""A/B against an older commit's package, in one process: the full or select stage of both, same inputs.

    git archive OLD dsa_lab | tar -x -C DIR && mv DIR/dsa_lab DIR/dsa_lab_old      # on the CPU machine
    python3 scripts/gpu_ab_old.py --old DIR --out OUT.csv [--stage full] [--k 64] [--rows 1,8,32]
        [--contexts 4096,262144] [--arms old,new,new_nopdl,new_m8] [--dist normal] [--seed 0] [--profile]

Arms: ``old`` (the package in ``DIR/dsa_lab_old``), ``new`` (this tree's default), and this tree with one change
made for the A/B only: ``new_nopdl`` (no programmatic dependent launch), ``new_mN`` (the scores grid at about N x SM
programs where the dispatch would take its default multiple), ``new_noa`` (stage A in the select, not in the scores
launch), ``new_p1`` (select stage: one hier program per row); ``pkg_NAME``: the package in ``DIR/dsa_lab_NAME``
(another tree, a candidate change), called as ``old`` is.  Every arm's ids and flags are checked against the exact
reference first (outputs poisoned).  Timing: ``dsa_lab.bench.time_fn`` (the sweep's CUDA-graph timer); arms
interleaved per point, ``--reps`` rounds, the median of the rounds' medians kept.  ``--profile``: each arm's kernels from a profiled graph replay (mean duration per
kernel, the span of one call).  Needs a CUDA GPU.
"""
import argparse
import contextlib
import csv
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from dsa_lab import dispatch  # noqa: E402
from dsa_lab._impl import device_facts  # noqa: E402
from dsa_lab.bench import data  # noqa: E402
from dsa_lab.bench import timing  # noqa: E402
from dsa_lab.bench.sweep import BLOCK_SIZE, Point, full_stage_inputs, select_stage_inputs  # noqa: E402
from dsa_lab.bench.verify import compare  # noqa: E402
from dsa_lab.select import select_candidate_blocks, topk_select  # noqa: E402


@contextlib.contextmanager
def _patched(obj, name, value):
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


def arm_fn(arm, stage, inp, k, old, facts):
    """(fn, context manager factory): ``fn()`` -> ids or (ids, flags), run inside the context."""
    none = contextlib.nullcontext
    if arm.startswith("pkg_"):  # another tree with this tree's API: DIR/dsa_lab_NAME
        import importlib

        importlib.import_module(f"dsa_lab_{arm[4:]}.select")
        old = sys.modules[f"dsa_lab_{arm[4:]}"]
        arm = "old"
    if stage == "full":
        x, ends = inp["logits"], inp["ends"]
        out = torch.empty((x.shape[0], k), dtype=torch.int32, device=x.device)
        if arm == "old":
            return (lambda: old.select.select_candidate_blocks(x, ends, k, block_size=BLOCK_SIZE, impl="triton",
                                                               out=out, with_flags=True)), none
        f, over = facts, None
        if arm == "new_nopdl":
            f = dict(facts, pdl=False)
        if arm == "new_noa":
            over = {"a_done": False}
        fn = (lambda: dispatch.select_candidate_blocks_triton(x, ends, k, block_size=BLOCK_SIZE, out=out,
                                                              with_flags=True, facts=f, over=over))
        if arm.startswith("new_m"):
            return fn, (lambda: _patched(dispatch, "SCORES_MULT", int(arm[5:])))
        return fn, none
    sc, lengths = inp["scores"], inp["lengths"]
    out = torch.empty((sc.shape[0], k), dtype=torch.int32, device=sc.device)
    if arm == "old":
        return (lambda: old.select.topk_select(sc, k, lengths=lengths, impl="triton", out=out)), none
    if arm == "new_p1":
        return (lambda: dispatch.topk_select_triton(sc, k, lengths, out=out, facts=facts, over={"programs": 1})), none
    return (lambda: topk_select(sc, k, lengths=lengths, impl="triton", out=out)), none


def check(stage, fn, ctx, ref_ids, ref_flags):
    """Mismatching rows of one arm's ids (and flags) against the reference."""
    with ctx():
        res = fn()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    ids = res[0] if isinstance(res, tuple) else res
    bad = compare(ids, ref_ids)[0]
    if stage == "full":
        bad += int((res[1] != ref_flags).any(dim=1).sum())
    return bad


def profile(fn, ctx, reps=20):
    """{kernel name: mean µs}, mean span of one call (first kernel start to last kernel end), µs."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as tprof

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with ctx(), torch.cuda.stream(s):
        fn()
        s.synchronize()
        g = torch.cuda.CUDAGraph()
        with timing._capture(g, s):
            fn()
        g.replay()
        s.synchronize()
        with tprof(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(reps):
                g.replay()
            s.synchronize()
    torch.cuda.current_stream().wait_stream(s)
    ev = sorted((e for e in prof.events()
                 if e.device_type.name == "CUDA" and "Memset" not in e.name and "Memcpy" not in e.name),
                key=lambda e: e.time_range.start)
    per = len(ev) // reps if reps else 0
    by = {}
    for e in ev:
        by.setdefault(e.name.split("(")[0][:40], []).append(e.time_range.elapsed_us())
    spans = [ev[i + per - 1].time_range.end - ev[i].time_range.start for i in range(0, per * reps, per)] if per else []
    return {n: statistics.mean(v) for n, v in by.items()}, (statistics.median(spans) if spans else float("nan"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True, help="folder holding dsa_lab_old/")
    ap.add_argument("--out", required=True)
    ap.add_argument("--stage", default="full", choices=("full", "select"))
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--rows", default="1,8,16,24,32,40,48")
    ap.add_argument("--contexts", default="4096,16384,65536,262144")
    ap.add_argument("--arms", default="old,new")
    ap.add_argument("--dist", default="normal")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--max-seconds", type=float, default=400)
    ap.add_argument("--seed", type=int, default=0, help="added to every point's input seed (other draws of the law)")
    ap.add_argument("--mml", type=int, default=262144, help="the padded width (a plumbing check on the CPU: small)")
    a = ap.parse_args()
    sys.path.insert(0, os.path.abspath(a.old))
    import dsa_lab_old as old  # noqa: F401
    import dsa_lab_old.select  # noqa: F401

    t0 = time.time()
    on_gpu = torch.cuda.is_available()
    dev = torch.device("cuda" if on_gpu else "cpu")
    facts = device_facts(0 if on_gpu else None)
    arms = a.arms.split(",")
    cols = ["stage", "k", "rows", "context", "dist", "arm", "median_us", "p10_us", "p90_us", "ratio_vs_old", "bad",
            "span_us", "kernels"]
    data.save_meta(data.meta_path(a.out), data.collect_metadata(
        "python3 scripts/gpu_ab_old.py " + " ".join(sys.argv[1:]), {"old": os.path.abspath(a.old)}))
    w = csv.DictWriter(open(a.out, "w", newline=""), fieldnames=cols)
    w.writeheader()
    for ctx_len in [int(c) for c in a.contexts.split(",")]:
        for rows in [int(r) for r in a.rows.split(",")]:
            if time.time() - t0 > a.max_seconds:
                print("time box reached", flush=True)
                return
            p = Point(suite=a.stage, stage=a.stage, context=ctx_len, concurrency=rows, next_n=1, k=a.k, dist=a.dist)
            seed = 1000 + rows * 7 + ctx_len % 997 + 100003 * a.seed
            if a.stage == "full":
                inp = full_stage_inputs(p, a.mml, seed, dev)
                ref_ids, ref_flags = select_candidate_blocks(inp["logits"], inp["ends"], a.k, block_size=BLOCK_SIZE,
                                                             impl="reference", with_flags=True)
            else:
                inp = select_stage_inputs(p, a.mml, seed, dev)
                ref_ids = topk_select(inp["scores"], a.k, lengths=inp["lengths"], impl="reference")
                ref_flags = None
            fns = {arm: arm_fn(arm, a.stage, inp, a.k, old, facts) for arm in arms}
            bad = {arm: check(a.stage, fn, cx, ref_ids, ref_flags) for arm, (fn, cx) in fns.items()}
            if a.reps == 0:  # compile and check only (a parallel warm-up of the arms' kernels)
                print(f"{a.stage} k{a.k} {rows} x {ctx_len}: checked {bad}", flush=True)
                continue
            meds = {arm: [] for arm in arms}
            last = {}
            for _ in range(a.reps):
                for arm, (fn, cx) in fns.items():
                    with cx():
                        t = timing.time_fn(fn)
                    meds[arm].append(t.median_us)
                    last[arm] = t
            prof = {arm: profile(fn, cx) if a.profile and on_gpu else ({}, float("nan")) for arm, (fn, cx) in fns.items()}
            base = statistics.median(meds["old"]) if "old" in meds else float("nan")
            line = []
            for arm in arms:
                m = statistics.median(meds[arm])
                kern, span = prof[arm]
                w.writerow({"stage": a.stage, "k": a.k, "rows": rows, "context": ctx_len, "dist": a.dist, "arm": arm,
                            "median_us": round(m, 3), "p10_us": round(last[arm].p10_us, 3),
                            "p90_us": round(last[arm].p90_us, 3), "ratio_vs_old": round(m / base, 4),
                            "bad": bad[arm], "span_us": round(span, 3),
                            "kernels": ";".join(f"{n}={v:.2f}" for n, v in kern.items())})
                line.append(f"{arm} {m:7.2f}{'' if not bad[arm] else ' BAD'}"
                            + (f" [{' '.join(f'{n[:14]}={v:.1f}' for n, v in kern.items())}]" if kern else ""))
            print(f"{a.stage} k{a.k} {rows:4d} x {ctx_len:6d}: " + " | ".join(line), flush=True)
            del fns, inp
    print(f"done in {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
