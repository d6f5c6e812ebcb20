"""Producer A/B on a GPU, one process: this tree's paged MQA-logits kernel against candidate trees' (``pkg_NAME``
arms: ``.ab/ab/dsa_lab_NAME``, a copy of the package with its own kernel), each with launch-config overrides.

    python3 scripts/gpu_producer_ab.py OUT.csv --arms cur,grp:G=4,grp:G=4:num_warps=8 --next-n 1,3,5

``fused`` (or ``NAME+f``): this tree's (NAME's) kernel as the fused decode step launches it (sanitized logits, block
scores, flags zeroed); ``NAME+s`` / ``+b`` / ``+z`` (or a combination): only those parts of that epilogue.

Every arm's output is checked first on the same inputs: NaN-poisoned ``out``, every in-window value finite,
within ``2^-8`` of max |ref| of the fp32 torch reference on the first 4 sequences and within 1e-5 (relative to the
largest) of the first arm's everywhere, and every slot past a row's end still NaN.  Then CUDA-graph medians; the measured stream ceiling and fp8 MMA peak give each row's roofline fraction.
"""
import argparse
import csv
import importlib
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, ".ab", "ab"))

import torch  # noqa: E402

from dsa_lab import dispatch, paged, producer  # noqa: E402
from dsa_lab.bench import timing as bench  # noqa: E402
from dsa_lab.bench import data  # noqa: E402


def _fused(f, parts):
    """``f`` launched with parts of the step's epilogue: ``s`` sanitize, ``b`` block scores, ``z`` flags zeroed."""
    bufs = {}

    def call(q, kv, w, ctx, bt, out, config=None):
        rows, width = out.shape
        if rows not in bufs:
            nb = -(-width // 8)
            bufs[rows] = (dispatch._scores_buffer(rows, nb, out.device),  # as DecodeStep allocates it
                          torch.empty((rows, nb + 1), dtype=torch.uint8, device=out.device),
                          producer.decode_row_ends(ctx, q.shape[1]))
        sc, fl, ends = bufs[rows]
        return f(q, kv, w, ctx, bt, out, config=config, sanitize="s" in parts, scores_out=sc if "b" in parts else None,
                 block_size=8, flags_out=fl if "z" in parts else None, row_ends=ends)
    return call


def arm_fn(spec):
    """``name[:KEY=V[:KEY=V]]`` → (label, launcher, config overrides)."""
    name, *kv = spec.split(":")
    cfg = {k: int(v) for k, v in (x.split("=") for x in kv)}
    name, _, parts = name.partition("+")
    if name == "fused":
        name, parts = "cur", "f"
    if name == "cur":
        from dsa_lab.kernels.producer import paged_mqa_logits_triton as f
    else:
        f = importlib.import_module(f"dsa_lab_{name}.kernels.producer").paged_mqa_logits_triton
    if parts:  # f: as the fused decode step launches it (sanitize, block scores, flags zeroed); or s / b / z of it
        f = _fused(f, "sbz" if parts == "f" else parts)
    return spec, f, cfg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--arms", default="cur")
    ap.add_argument("--next-n", default="1,3,5")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--context", type=int, default=131072)
    ap.add_argument("--mml", type=int, default=262144)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    a = ap.parse_args()
    dev = torch.device("cuda")
    ceil = bench.measure_ceilings(stream_bytes=2 * 2**30)
    ceil.update(bench.measure_fp8_mma_peak())
    print(json.dumps(ceil), flush=True)
    arms = [arm_fn(s) for s in a.arms.split(",")]
    cols = ["arm", "next_n", "batch", "context", "median_us", "p10_us", "p90_us", "bytes", "flops", "gbps", "tflops",
            "floor_us", "roofline_frac", "check", "seed"]
    for nn in [int(x) for x in a.next_n.split(",")]:
        p = paged.random_decode_problem(a.batch, nn, a.context, max_model_len=a.mml, device=dev, seed=a.seed + nn)
        q, kv, w, ctx, bt = p["q_fp8"], p["kv_cache"], p["weights"], p["context_lens"], p["block_table"]
        ends = producer.decode_row_ends(ctx, nn)
        nbytes = producer.producer_bytes(p["seq_lens"], nn, 64, 128, max_model_len=a.mml)["total"]
        flops = producer.producer_flops(p["seq_lens"], nn, 64, 128, max_model_len=a.mml)
        # reference on the first 4 sequences (fp32 torch), and its bound
        r4 = 4 * nn
        ref = torch.full((r4, a.mml), float("nan"), device=dev)
        producer.paged_mqa_logits_torch(q[:4], kv, w[:r4], ctx[:4], bt[:4], ref)
        cols_idx = torch.arange(a.mml, device=dev)[None, :]
        live = cols_idx < ends[:, None].clamp(max=a.mml)
        base = None
        for label, f, cfg in arms:
            out = torch.full((a.batch * nn, a.mml), float("nan"), device=dev)
            f(q, kv, w, ctx, bt, out, config=cfg or None)
            torch.cuda.synchronize()
            bad = []
            if not bool(torch.isnan(out[~live]).all()):
                bad.append("wrote past a row end")
            lv = out[live]
            if not bool(torch.isfinite(lv).all()):
                bad.append("non-finite in a window")
            err = (out[:r4] - ref).abs()[live[:r4]]
            scale = ref[live[:r4]].abs().max().clamp(min=1e-30)
            if float(err.max() / scale) > 2.0**-8:
                bad.append(f"max err {float(err.max() / scale):.2e} of max |ref|")
            if base is None:
                base = out.clone()
            else:
                d = float(((out - base).abs()[live]).max() / base[live].abs().max())
                if d > 1e-5:
                    bad.append(f"differs from {arms[0][0]} by {d:.2e}")
            check = "ok" if not bad else "; ".join(bad)
            t = bench.time_cuda_graph(lambda: f(q, kv, w, ctx, bt, out, config=cfg or None), target_replay_us=3000,
                                      max_inner=2, rep_ms=200)
            rf = bench.roofline(nbytes, t.median_us, ceil, flops=flops)
            row = {"arm": label, "next_n": nn, "batch": a.batch, "context": a.context, "median_us": t.median_us,
                   "p10_us": t.p10_us, "p90_us": t.p90_us, "bytes": nbytes, "flops": flops, "gbps": rf["gbps"],
                   "tflops": flops / (t.median_us * 1e6), "floor_us": rf["floor_us"],
                   "roofline_frac": rf["roofline_frac"], "check": check, "seed": a.seed + nn}
            data.append_row(a.out, row, cols)
            print(f"next_n {nn} {label:28s} {t.median_us:9.1f} us  {row['tflops']:7.1f} Tflop/s  "
                  f"roofline {rf['roofline_frac']:.3f}  {check}", flush=True)
            del out
    data.save_meta(data.meta_path(a.out), data.collect_metadata(" ".join(["scripts/gpu_producer_ab.py"] + sys.argv[1:]),
                                                                {"ceilings": ceil}))


if __name__ == "__main__":
    main()
