"""Dev measurement (H200): how much of the unfused full stage's select could hide behind its scores launch.

    DSA_LAB_COMMIT=... python3 scripts/gpu_overlap_bound.py [--out DIR] [--smoke]

The unfused full stage is the scores launch (reads the logits, writes the block scores) and then the select over
those scores; at 640 x 256K the two take ~193 + ~63 µs one after the other (``tune_dev_AS``), where issue 7's target
(1.5x the live logits' bytes floor) allows ~225.  Every handoff tried so far (the dependent launch, per-row counters
``rowsync``, one launch ``tail``) ran the select after the scores, not beside them.  This asks what running beside
could give at best, without building it: the same two kernels on two streams of one CUDA graph, with **no
dependency between them** -- the scores launch over one batch of logits and the select over another batch's scores,
stored beforehand -- so the GPU may run them at once however it likes.  The pair's time is a bound for any scheme
in which a row's select waits for that row's scores (such a scheme can only add waiting).

Arms, same process, CUDA-graph medians (:func:`dsa_lab.bench.time_cuda_graph`):
``scores`` the scores launch alone (dead slots unwritten, flags zeroed: the composition's launch);
``select`` the select kernel alone over stored scores (the select stage, no flags);
``sequential`` both on one stream, one after the other;
``concurrent`` the select on a second stream forked from the first (both launched together; the scores first);
``concurrent_sel_first`` the same with the select launched first.
Every replayed output is checked after the timing: the select's ids against the reference (poisoned first, every
slot), the scores' live slots bit for bit against the torch reference.  Writes ``overlap_bound.csv`` and its
meta JSON.  Not the recorded sweep.
"""
import argparse
import csv
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from dsa_lab import bench, data  # noqa: E402
from dsa_lab.scores import block_scores_torch  # noqa: E402
from dsa_lab.scores_triton import block_scores_triton  # noqa: E402
from dsa_lab.select import topk_select  # noqa: E402
from dsa_lab.select_triton import topk_select_triton  # noqa: E402
from dsa_lab.sweep import BLOCK_SIZE, MML, Point, full_stage_inputs  # noqa: E402
from dsa_lab.verify import compare  # noqa: E402

POISON = 0x7EADBEEF
POINTS = [(262144, 128, 5), (262144, 64, 5), (262144, 32, 5), (65536, 128, 5)]  # (context, concurrency, next_n)


def live_same_bits(got, want, ends, bs):
    """Rows' slots below their extent equal bit for bit (dead slots are left unwritten by this launch)."""
    nb = got.shape[1]
    for r in range(got.shape[0]):
        n = min(nb, -(-int(ends[r]) // bs))
        if not torch.equal(got[r, :n].view(torch.int32), want[r, :n].view(torch.int32)):
            return False
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="build/tune_dev")
    ap.add_argument("--smoke", action="store_true", help="CPU interpreter, tiny width: builds every arm once, no timing")
    a = ap.parse_args()
    dev, mml = ("cpu", 4096) if a.smoke else ("cuda", MML)
    k = 64
    os.makedirs(a.out, exist_ok=True)
    rows_out = []
    w = None
    if not a.smoke:
        f = open(os.path.join(a.out, "overlap_bound.csv"), "w", newline="")
        w = csv.DictWriter(f, fieldnames=["context", "concurrency", "next_n", "rows", "k", "arm", "median_us",
                                          "p10_us", "p90_us", "check"])
        w.writeheader()
    for i, (ctx, conc, nn) in enumerate(POINTS[:1] if a.smoke else POINTS):
        p = Point("full", "full", min(ctx, mml), conc if not a.smoke else 1, nn if not a.smoke else 1, k, "normal")
        ia = full_stage_inputs(p, mml, 8100 + i, dev)  # the batch whose scores are computed
        ib = full_stage_inputs(p, mml, 8200 + i, dev)  # the batch whose stored scores are selected
        xa, ea, xb, eb = ia["logits"], ia["ends"], ib["logits"], ib["ends"]
        rows, width = xa.shape
        nb = -(-width // BLOCK_SIZE)
        sc_b = block_scores_triton(xb, eb, None, BLOCK_SIZE, 1)  # every slot written: the select reads up to L
        lb = ((eb.to(torch.int64) + BLOCK_SIZE - 1) // BLOCK_SIZE).to(torch.int32)
        ref_ids = topk_select(sc_b, k, lengths=lb, impl="reference")
        ref_sc = block_scores_torch(xa, ea, None, BLOCK_SIZE, 1)
        fl = torch.empty((rows, nb + 1), dtype=torch.uint8, device=dev)
        ids = torch.full((rows, k), POISON, dtype=torch.int32, device=dev)
        got = {}

        def scores():
            got["sc"] = block_scores_triton(xa, ea, None, BLOCK_SIZE, 1, fill_dead=False, zero_flags=fl)

        def select():
            topk_select_triton(sc_b, k, lb, 1, ids)

        side = torch.cuda.Stream() if dev == "cuda" else None

        def pair(first, second):
            def fn():
                main = torch.cuda.current_stream()
                side.wait_stream(main)
                first()
                with torch.cuda.stream(side):
                    second()
                main.wait_stream(side)
            return fn

        arms = {"scores": scores, "select": select, "sequential": lambda: (scores(), select())}
        if dev == "cuda":
            arms["concurrent"] = pair(scores, select)
            arms["concurrent_sel_first"] = pair(select, scores)
        for name, fn in arms.items():
            ids.fill_(POISON)
            got.pop("sc", None)
            if a.smoke:
                fn()
                tm = None
            else:
                tm = bench.time_cuda_graph(fn, rep_ms=10.0, max_replays=60)
                torch.cuda.synchronize()
            checks = []
            if name != "scores":
                nbad, msg = compare(ids, ref_ids)
                checks.append("ids ok" if not nbad else f"ids mismatch {nbad}/{rows}: {msg[:100]}")
            if name != "select":
                # the output of the last replay (allocated in the graph's capture)
                checks.append("scores ok" if live_same_bits(got["sc"], ref_sc, ea.tolist(), BLOCK_SIZE)
                              else "scores differ")
            check = "; ".join(checks)
            row = {"context": ctx, "concurrency": conc, "next_n": nn, "rows": rows, "k": k, "arm": name,
                   "median_us": round(tm.median_us, 3) if tm else "", "p10_us": round(tm.p10_us, 3) if tm else "",
                   "p90_us": round(tm.p90_us, 3) if tm else "", "check": check}
            rows_out.append(row)
            if w:
                w.writerow(row)
                f.flush()
            print(f"{ctx:>6} r{rows:<4} {name:<22} {row['median_us']!s:>9} µs  {check}", flush=True)
        del ia, ib, xa, xb, sc_b, ref_sc
    if w:
        f.close()
        meta = data.collect_metadata(" ".join(["python3"] + sys.argv), {
            "points": len(POINTS), "timing": "cuda graph (dsa_lab.bench.time_cuda_graph, rep 10 ms)",
            "note": "dev run, not the recorded sweep: a bound on overlapping the select with the scores launch"})
        with open(os.path.join(a.out, "overlap_bound.meta.json"), "w") as fm:
            json.dump(meta, fm, indent=1)
    bad = [r for r in rows_out if "mismatch" in r["check"] or "differ" in r["check"]]
    print(f"{len(rows_out)} arms, {len(bad)} failing", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
