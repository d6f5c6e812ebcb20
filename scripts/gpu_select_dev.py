"""Select-kernel development run on a GPU: correctness on GPU shapes, graph-capture replay, then
CUDA-graph timings of the Triton select / fused paths vs the torch arms.  Writes $OUT/select_dev.json.

    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 scripts/gpu_select_dev.py [--quick] [--no-check] [--matrix]
    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 scripts/gpu_select_dev.py --mini   # key points, num_warps 4/2/1
"""
import json
import os
import sys
import time
import traceback

import torch
import triton
from triton.testing import do_bench_cudagraph

from dsa_lab.flags_triton import candidate_flags_triton
from dsa_lab.scores import block_scores_torch
from dsa_lab.scores_triton import block_scores_triton
from dsa_lab.select import topk_select_reference, topk_select_torch
from dsa_lab.select_triton import plan, select_candidate_blocks_triton, topk_select_triton
from dsa_lab.shapes import fill
from dsa_lab._impl import facts_for

OUT = os.environ.get("OUT", "build/gpu_out")
os.makedirs(OUT, exist_ok=True)
T_START = time.time()
REC = {"timings": [], "checks": []}
dev = "cuda"
gen = torch.Generator().manual_seed(1234)


def first_mismatch(got, ref):
    g, r = got.sort(1).values, ref.sort(1).values
    bad = (g != r).any(1)
    if not bool(bad.any()):
        return None
    row = int(bad.nonzero()[0, 0])
    col = int((g[row] != r[row]).nonzero()[0, 0])
    return f"{int(bad.sum())} bad rows; row {row} sorted slot {col}: got {int(g[row, col])} want {int(r[row, col])}"


def check(name, got, ref):
    m = first_mismatch(got, ref)
    REC["checks"].append({"name": name, "ok": m is None, "msg": m})
    print(f"  check {name}: {'ok' if m is None else 'MISMATCH ' + m}", flush=True)


def scores_input(rows, nb, live, dist):
    x = fill(dist, rows, live, gen=gen, device=dev)
    s = torch.full((rows, nb), float("-inf"), device=dev)
    s[:, :live] = x
    return s


def bench(fn):
    ms = do_bench_cudagraph(fn, rep=30, quantiles=[0.5, 0.1, 0.9])
    return [round(v * 1000, 2) for v in ms]


def correctness():
    POISON = 0x7EADBEEF
    for rows, n, k, dist, cfg in [
        (1, 32768, 64, "normal", None), (1, 32768, 64, "ramp", None), (1, 32768, 64, "equal", None),
        (8, 32768, 64, "nan1pct", None), (128, 32768, 64, "few_values", None), (640, 32768, 64, "normal", None),
        (3, 32768, 2048, "normal", None), (32, 32768, 2048, "equal", None), (4, 1000, 2048, "normal", None),
        (16, 8192, 100, "specials", None), (1, 32768, 64, "normal", {"algo": "fold", "cap": 64}),
        (8, 32768, 64, "normal", {"algo": "fold"}), (1, 32768, 2048, "normal", {"algo": "fold"}),
    ]:
        x = fill(dist, rows, n, gen=gen, device=dev)
        L = torch.randint(0, n + 1, (rows,), generator=gen).to(dev)
        L[0] = n
        out = torch.full((rows, k), POISON, dtype=torch.int32, device=dev)
        topk_select_triton(x, k, L, 1, out, config=cfg)
        check(f"select r{rows} n{n} k{k} {dist} {cfg}", out, topk_select_reference(x, k, L, 1))
        if cfg is None:
            check(f"torch.topk r{rows} n{n} k{k} {dist}", topk_select_torch(x, k, L, 1), topk_select_reference(x, k, L, 1))
    for rows, w, k, bs, rr, starts, dist in [
        (1, 262144, 64, 8, 1, False, "normal"), (64, 262144, 64, 8, 1, True, "nan1pct"),
        (30, 65536, 2048, 8, 3, True, "normal"), (16, 8192, 64, 64, 1, True, "equal"), (8, 16384, 64, 1, 2, False, "normal"),
    ]:
        x = fill(dist, rows, w, gen=gen, device=dev)
        g = rows // rr
        e = torch.randint(0, 2 * w, (g,), generator=gen)
        s = (torch.rand(g, generator=gen) * e.clamp(max=w) * 0.5).long().to(dev) if starts else None
        e = e.to(dev)
        ref = topk_select_reference(block_scores_torch(x, e, s, bs, rr), k, None, 1)
        for fused in ((None,) if k > 512 else (True, False)):  # None: auto (unfused at k=2048)
            check(f"blocks fused={fused} r{rows} w{w} k{k} bs{bs} rr{rr} starts={starts} {dist}",
                  select_candidate_blocks_triton(x, e, k, s, bs, rr, None, fused=fused), ref)
        for padded in (False, True):
            a, b = block_scores_triton(x, e, s, bs, rr, padded=padded), block_scores_torch(x, e, s, bs, rr)
            ok = bool(((a == b) | (a.isnan() & b.isnan())).all())
            REC["checks"].append({"name": f"scores padded={padded} r{rows}", "ok": ok})
            print(f"  check scores padded={padded}: {ok}")


def graph_replay():
    rows, n, k = 4, 32768, 64
    x = torch.randn(rows, n, device=dev)
    L = torch.full((rows,), 100, dtype=torch.int32, device=dev)
    out = torch.full((rows, k), -7, dtype=torch.int32, device=dev)
    topk_select_triton(x, k, L, 1, out)  # warm (compile, counters)
    torch.cuda.synchronize()
    gr = torch.cuda.CUDAGraph()
    with torch.cuda.graph(gr):
        topk_select_triton(x, k, L, 1, out)
    for vals in ([100, 5000, 32768, 0], [32768, 1, 64, 20000], [7, 7, 7, 7]):
        L.copy_(torch.tensor(vals, dtype=torch.int32))
        out.fill_(0x7EADBEEF)
        gr.replay()
        torch.cuda.synchronize()
        check(f"graph replay lengths={vals}", out.clone(), topk_select_reference(x, k, L, 1))


def timings(quick):
    nb = 32768
    ctxs = (512, 2048, 8192, 32768)
    rowss = (1, 8, 32, 128, 640) if not quick else (1, 8, 128, 640)
    print(f"{'stage':<7} {'rows':>4} {'ctxblk':>6} {'k':>5} {'dist':<8} {'arm':<22} {'med_us':>8} {'p10':>7} {'p90':>7}  plan")
    facts = facts_for(torch.empty(1, device=dev))

    def line(stage, rows, live, k, dist, arm, t, extra=""):
        REC["timings"].append(dict(stage=stage, rows=rows, live=live, k=k, dist=dist, arm=arm, med=t[0], p10=t[1], p90=t[2], plan=extra))
        print(f"{stage:<7} {rows:>4} {live:>6} {k:>5} {dist:<8} {arm:<22} {t[0]:>8} {t[1]:>7} {t[2]:>7}  {extra}", flush=True)

    variants = [("triton", None), ("triton_fold_v1", {"algo": "fold"})]
    for rows in rowss:
        for live in ctxs:
            s = scores_input(rows, nb, live, "normal")
            L = torch.full((rows,), live, dtype=torch.int32, device=dev)
            out = torch.empty((rows, 64), dtype=torch.int32, device=dev)
            line("select", rows, live, 64, "normal", "torch", bench(lambda: topk_select_torch(s, 64)))
            for name, cfg in (variants if rows in (1, 640) and live in (2048, 32768) else variants[:1]):
                pl = plan(rows, nb, 64, facts, **(cfg or {}))
                line("select", rows, live, 64, "normal", name, bench(lambda: topk_select_triton(s, 64, L, 1, out, config=cfg)),
                     f"P={pl['P']}")
    for rows, live in (((1, 32768), (128, 8192), (640, 32768), (32, 2048)) if not quick else ((1, 32768), (640, 32768))):
        for dist in ("shifted", "equal", "nan1pct", "ramp"):
            s = scores_input(rows, nb, live, dist)
            L = torch.full((rows,), live, dtype=torch.int32, device=dev)
            line("select", rows, live, 64, dist, "triton", bench(lambda: topk_select_triton(s, 64, L, 1)))
    W = 262144
    for rows in ((1, 64, 640) if not quick else (1, 640)):
        x = torch.randn(rows, W, device=dev)
        for ctx in ((4096, 65536, 262144) if not quick else (4096, 262144)):
            e = torch.full((rows,), ctx, dtype=torch.int32, device=dev)

            def torch_full():
                sc = block_scores_triton(x, e, None, 8, 1, padded=True)
                c = topk_select_torch(sc, 64)
                return candidate_flags_triton(c, W, None, 8, 1)

            def fused_full():
                c = select_candidate_blocks_triton(x, e, 64, None, 8, 1, None, fused=True)
                return candidate_flags_triton(c, W, None, 8, 1)

            def unfused_full():
                c = select_candidate_blocks_triton(x, e, 64, None, 8, 1, None, fused=False)
                return candidate_flags_triton(c, W, None, 8, 1)

            for name, fn in (("torch_full", torch_full), ("triton_fused", fused_full), ("triton_unfused", unfused_full),
                             ("fused_select_only", lambda: select_candidate_blocks_triton(x, e, 64, None, 8, 1, None, fused=True))):
                line("full", rows, ctx // 8, 64, "normal", name, bench(fn))
        del x
    if quick or time.time() - T_START > float(os.environ.get("SELECT_DEV_BUDGET_S", "400")):
        return
    for rows in (1, 32, 640):
        for live in (2048, 32768):
            s = scores_input(rows, nb, live, "normal")
            L = torch.full((rows,), live, dtype=torch.int32, device=dev)
            line("select", rows, live, 2048, "normal", "torch", bench(lambda: topk_select_torch(s, 2048)))
            line("select", rows, live, 2048, "normal", "triton", bench(lambda: topk_select_triton(s, 2048, L, 1)))
            line("select", rows, live, 2048, "normal", "triton_fold_v1",
                 bench(lambda: topk_select_triton(s, 2048, L, 1, config={"algo": "fold"})))


def step(name, fn):
    t0 = time.time()
    print(f"== {name}", flush=True)
    try:
        fn()
    except Exception:
        traceback.print_exc()
    print(f"== {name}: {time.time() - t0:.1f}s", flush=True)


def mini():
    """A few key points only (fits a ~30 s device slot): hier correctness + timing at 640 rows, then
    1 row, then the fused full-width case, each printed as soon as it is measured."""
    nb = 32768

    def quick(fn):
        ms = do_bench_cudagraph(fn, rep=10, quantiles=[0.5, 0.1, 0.9])
        return [round(v * 1000, 2) for v in ms]

    warps = [int(w) for w in os.environ.get("SELECT_DEV_WARPS", "4,2,1").split(",")]
    for rows, live in ((640, 32768), (640, 512), (1, 32768), (1, 2048), (1, 512), (128, 8192)):
        s = scores_input(rows, nb, live, "normal")
        L = torch.full((rows,), live, dtype=torch.int32, device=dev)
        tt = quick(lambda: topk_select_torch(s, 64))
        for nw in warps:
            cfg = {"num_warps": nw}
            out = torch.full((rows, 64), 0x7EADBEEF, dtype=torch.int32, device=dev)
            topk_select_triton(s, 64, L, 1, out, config=cfg)
            check(f"hier nw={nw} r{rows} live{live}", out, topk_select_reference(s, 64, L, 1))
            t = quick(lambda: topk_select_triton(s, 64, L, 1, out, config=cfg))
            REC["timings"].append(dict(stage="select", rows=rows, live=live, k=64, arm=f"hier_nw{nw}", med=t[0], torch=tt[0]))
            print(f"select rows={rows} live={live} nw={nw}: hier {t} us, torch {tt} us, speedup {tt[0] / t[0]:.1f}x", flush=True)
    W = 262144
    for rows, ctx in ((640, W), (1, W), (640, 4096)):
        x = torch.randn(rows, W, device=dev)
        e = torch.full((rows,), ctx, dtype=torch.int32, device=dev)
        ref = topk_select_reference(block_scores_torch(x, e, None, 8, 1), 64)
        for fused in (True, False):
            check(f"blocks fused={fused} r{rows} ctx{ctx}", select_candidate_blocks_triton(x, e, 64, None, 8, 1, None, fused=fused), ref)
            t = quick(lambda: select_candidate_blocks_triton(x, e, 64, None, 8, 1, None, fused=fused))
            print(f"candidates fused={fused} {rows} x ctx {ctx}: {t} us (bytes floor {rows * ctx * 4 / 4.64e6:.1f} us)", flush=True)
        del x


if __name__ == "__main__" and "--mini" in sys.argv:
    mini()
    with open(os.path.join(OUT, "select_mini.json"), "w") as f:
        json.dump(REC, f, indent=1)
    sys.exit(0)

if __name__ == "__main__":
    p = torch.cuda.get_device_properties(0)
    REC["env"] = dict(gpu=p.name, sm=p.multi_processor_count, torch=torch.__version__, triton=triton.__version__)
    print(REC["env"], flush=True)
    if "--no-check" not in sys.argv:
        step("correctness", correctness)
    step("graph replay", graph_replay)
    step("timings", lambda: timings("--quick" in sys.argv))
    if "--matrix" in sys.argv:
        def matrix():
            from dsa_lab import verify
            res = verify.run_matrix(scale="gpu", arms=("triton",), seed=7, device=dev, progress=False)
            print(verify.format_table(res))
            REC["matrix_failures"] = verify.failures(res)
        step("matrix", matrix)
    nbad = sum(not c["ok"] for c in REC["checks"])
    print(f"checks: {len(REC['checks'])}, failed {nbad}; total {time.time() - T_START:.0f}s")
    with open(os.path.join(OUT, "select_dev.json"), "w") as f:
        json.dump(REC, f, indent=1)
