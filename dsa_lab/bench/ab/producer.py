"""``dsa-lab ab --stage producer``: the paged MQA-logits kernel of this tree against other trees', same inputs.

An arm is ``TREE[+PARTS][:KEY=V[:KEY=V]]``: ``TREE`` ``new`` / ``old`` / ``pkg_NAME`` (as every stage's); ``+f`` the
kernel as the fused decode step launches it (sanitized logits, block scores, flags zeroed), ``+s`` / ``+b`` / ``+z``
(or a combination) only those parts of that epilogue; ``KEY=V`` launch-config overrides
(:func:`dsa_lab.plans.producer_config`'s keys, e.g. ``num_warps=8``, ``BLOCK_T=64``).

Every arm's output is checked first, on the same inputs: the output poisoned with NaN, every slot past a row's end
still NaN, every in-window value finite, within ``2^-8`` of max |ref| of the fp32 torch reference on the first 4
sequences and within ``1e-5`` (relative to the largest) of the first arm's everywhere.  Then CUDA-graph medians;
the ceilings measured in the same run give each row's roofline fraction.
"""
from __future__ import annotations

import importlib

import torch

from .. import data, timing
from ..roofline import roofline
from ..trees import package

COLUMNS = ["arm", "concurrency", "next_n", "context", "median_us", "p10_us", "p90_us", "ratio_vs_first", "bytes",
           "flops", "gbps", "tflops", "floor_us", "roofline_frac", "check", "seed"]
HEADS, HEAD_DIM = 64, 128


def _launcher(tree: str, folder: str | None):
    """The tree's producer launcher (this layout's ``launch.producer.paged_mqa_logits``; earlier trees':
    ``kernels.producer.paged_mqa_logits_triton`` or ``producer_triton``)."""
    pkg = package(tree, folder)
    for mod, name in (("launch.producer", "paged_mqa_logits"), ("kernels.producer", "paged_mqa_logits_triton"),
                      ("producer_triton", "paged_mqa_logits_triton")):
        try:
            return getattr(importlib.import_module(f"{pkg.__name__}.{mod}"), name)
        except (ImportError, AttributeError):
            continue
    raise ValueError(f"{pkg.__name__} has no producer launcher")


def _epilogue(f, parts: str):
    """``f`` launched with parts of the fused step's epilogue: ``s`` sanitize, ``b`` block scores, ``z`` flags
    zeroed; the scores' rows padded to 16 blocks, as the decode step allocates them."""
    from ...producer import decode_row_ends

    bufs: dict = {}

    def call(q, kv, w, ctx, bt, out, config=None):
        rows, width = out.shape
        if rows not in bufs:
            nb = -(-width // 8)
            scores = torch.empty((rows, -(-nb // 16) * 16), dtype=torch.float32, device=out.device)[:, :nb]
            flags = torch.empty((rows, nb + 1), dtype=torch.uint8, device=out.device)
            bufs[rows] = (scores, flags, decode_row_ends(ctx, q.shape[1]))
        sc, fl, ends = bufs[rows]
        return f(q, kv, w, ctx, bt, out, config=config, sanitize="s" in parts, scores_out=sc if "b" in parts else None,
                 block_size=8, flags_out=fl if "z" in parts else None, row_ends=ends)
    return call


def arm(spec: str, folder: str | None):
    """``(launcher, config overrides)`` of an arm spec (module docstring)."""
    name, *kv = spec.split(":")
    cfg = {k: int(v) for k, v in (x.split("=") for x in kv)}
    tree, _, parts = name.partition("+")
    f = _launcher(tree, folder)
    if parts:
        f = _epilogue(f, "sbz" if parts == "f" else parts)
    return f, cfg


def _check(out, live, ref4, r4, base) -> str:
    bad = []
    if not bool(torch.isnan(out[~live]).all()):
        bad.append("wrote past a row end")
    if not bool(torch.isfinite(out[live]).all()):
        bad.append("non-finite in a window")
    err = (out[:r4] - ref4).abs()[live[:r4]]
    scale = ref4[live[:r4]].abs().max().clamp(min=1e-30)
    if err.numel() and float(err.max() / scale) > 2.0 ** -8:
        bad.append(f"max err {float(err.max() / scale):.2e} of max |ref|")
    if base is not None and bool(live.any()):
        d = float((out - base).abs()[live].max() / base[live].abs().max().clamp(min=1e-30))
        if d > 1e-5:
            bad.append(f"differs from the first arm by {d:.2e}")
    return "; ".join(bad) or "ok"


def run_points(args, arms: list[str], points, write, deadline) -> None:
    """Time ``arms`` at every (concurrency, next_n, context) of ``points``; ``write(row)`` each row."""
    from ...paged import random_decode_problem
    from ...producer import decode_row_ends, paged_mqa_logits_torch
    from ..roofline import producer_bytes, producer_flops

    dev = torch.device("cuda" if timing.has_cuda() else "cpu")
    ceil = timing.measure_ceilings(stream_bytes=2 * 2**30 if timing.has_cuda() else None)
    ceil.update(timing.measure_fp8_mma_peak() if timing.has_cuda() else {})
    data.save_meta(data.meta_path(args.out), {**data.load_meta(data.meta_path(args.out)), "ceilings": ceil})
    launch = {a: arm(a, args.old) for a in arms}
    mml = args.mml
    for conc, nn, context, seed in points:
        if deadline():
            return
        p = random_decode_problem(conc, nn, context, num_heads=HEADS, head_dim=HEAD_DIM, max_model_len=mml,
                                  device=dev, seed=seed)
        q, kv, w, ctx, bt = p["q_fp8"], p["kv_cache"], p["weights"], p["context_lens"], p["block_table"]
        ends = decode_row_ends(ctx, nn)
        nbytes = producer_bytes(p["seq_lens"], nn, HEADS, HEAD_DIM, max_model_len=mml)["total"]
        flops = producer_flops(p["seq_lens"], nn, HEADS, HEAD_DIM, max_model_len=mml)
        s4 = min(conc, 4)
        r4 = s4 * nn
        ref4 = torch.full((r4, mml), float("nan"), device=dev)
        paged_mqa_logits_torch(q[:s4], kv, w[:r4], ctx[:s4], bt[:s4], ref4)
        live = torch.arange(mml, device=dev)[None, :] < ends[:, None].clamp(max=mml)
        base, first_us = None, None
        for a in arms:
            f, cfg = launch[a]
            out = torch.full((conc * nn, mml), float("nan"), device=dev)

            def fn(f=f, cfg=cfg, out=out):
                return f(q, kv, w, ctx, bt, out, config=cfg or None)
            fn()
            if timing.has_cuda():
                torch.cuda.synchronize()
            check = _check(out, live, ref4, r4, base)
            base = out.clone() if base is None else base
            if not args.reps:  # check only
                print(f"producer {conc:4d} x {nn} ctx {context:6d} {a:28s} {check}", flush=True)
                write({"arm": a, "concurrency": conc, "next_n": nn, "context": context, "check": check, "seed": seed})
                continue
            t = timing.time_fn(fn, target_replay_us=3000, max_inner=2, rep_ms=200)
            first_us = first_us or t.median_us
            rf = roofline(nbytes, t.median_us, ceil, flops=flops)
            write({"arm": a, "concurrency": conc, "next_n": nn, "context": context, "median_us": round(t.median_us, 3),
                   "p10_us": round(t.p10_us, 3), "p90_us": round(t.p90_us, 3),
                   "ratio_vs_first": round(t.median_us / first_us, 4), "bytes": nbytes, "flops": flops,
                   "gbps": rf["gbps"], "tflops": flops / (t.median_us * 1e6), "floor_us": rf["floor_us"],
                   "roofline_frac": rf["roofline_frac"], "check": check, "seed": seed})
            print(f"producer {conc:4d} x {nn} ctx {context:6d} {a:28s} {t.median_us:9.1f} us  "
                  f"roofline {rf['roofline_frac']:.3f}  {check}", flush=True)
            del out
