"""Latency ladder (H200): the dependent steps of the few-row select chain, timed alone, beside the 1-row select.

    DSA_LAB_COMMIT=... python3 scripts/gpu_latency_ladder.py OUT.csv

Times every case of :data:`dsa_lab.bench.latency.LADDER_CASES` (one program per launch) and
:data:`~dsa_lab.bench.latency.THROUGHPUT_CASES` (640 programs: the chain's throughput), 8 and 4 warps, each
output checked against ``torch.topk`` first, and, in the same process, the default ``impl="triton"`` select and
``torch.topk`` at 1 row, k = 64, at each sweep context (the sweep's inputs, ids checked against the reference).
CUDA-graph timing (:func:`dsa_lab.bench.timing.time_cuda_graph`).  Writes OUT.csv and OUT.meta.json.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from dsa_lab.bench import data, timing as bench  # noqa: E402
from dsa_lab.bench.latency import LADDER_CASES, THROUGHPUT_CASES, ladder  # noqa: E402
from dsa_lab.select import topk_select  # noqa: E402
from dsa_lab.bench.sweep import MML, Point, select_stage_inputs, torch_topk_store  # noqa: E402
from dsa_lab.bench.verify import compare  # noqa: E402

COLUMNS = ["what", "case", "n", "k", "stages", "num_warps", "rows", "context", "median_us", "p10_us", "p90_us", "check",
           "timing", "commit"]


def main(out_csv):
    if os.path.exists(out_csv):
        os.remove(out_csv)

    meta = data.collect_metadata(" ".join(["python3"] + sys.argv), {
        "timing": "cuda graph (dsa_lab.bench.timing.time_cuda_graph, rep 10 ms)",
        "note": "one program per ladder launch; each ladder output checked against torch.topk before timing"})
    tag = {"timing": bench.CUDA_GRAPH_LABEL, "commit": str(meta.get("commit") or "")[:12]}

    def timer(fn):
        return bench.time_cuda_graph(fn, rep_ms=10.0, max_replays=60)

    for nw in (8, 4):
        for r in ladder("cuda", LADDER_CASES + THROUGHPUT_CASES, timer=timer,
                        seed=int.from_bytes(os.urandom(4), "little"), num_warps=nw):
            row = {"what": "ladder", "context": "", **{c: r.get(c, "") for c in COLUMNS if c in r}, **tag}
            data.append_row(out_csv, row, COLUMNS)
            print(f"ladder nw{nw} {r['case']:<44} {r.get('median_us', float('nan')):8.2f} us  {r['check']}", flush=True)
    for ctx in (4096, 16384, 65536, 262144):
        p = Point("select", "select", ctx, 1, 1, 64, "normal")
        inp = select_stage_inputs(p, MML, int.from_bytes(os.urandom(4), "little"), "cuda")
        sc, L = inp["scores"], inp["lengths"]
        out = torch.full((1, 64), 0x7EADBEEF, dtype=torch.int32, device="cuda")
        topk_select(sc, 64, lengths=L, impl="triton", out=out)
        nbad, msg = compare(out, topk_select(sc, 64, lengths=L, impl="reference"))
        check = "ok" if not nbad else msg[:120]
        for what, fn in (("select triton", lambda: topk_select(sc, 64, lengths=L, impl="triton", out=out)),
                         ("select torch", lambda: torch_topk_store(sc, 64))):
            t = timer(fn)
            data.append_row(out_csv, {"what": what, "case": "1 row", "n": inp["nblocks"], "k": 64, "stages": "",
                                      "rows": 1,
                                      "num_warps": "", "context": ctx, "median_us": t.median_us, "p10_us": t.p10_us,
                                      "p90_us": t.p90_us, "check": check if what == "select triton" else "", **tag},
                            COLUMNS)
            print(f"{what:<14} ctx {ctx:>6} 1 row {t.median_us:8.2f} us {check}", flush=True)
    data.save_meta(data.meta_path(out_csv), meta)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/h200/latency_ladder.csv")
