"""Probe (H200): a one-CTA-per-row top-k select in CUDA C++ beside the Triton default, same inputs, same process.

    DSA_LAB_COMMIT=... python3 scripts/gpu_cuda_select_probe.py [--out DIR] [--max-s S] [--check-only]

Issue 4 asks for a 1-row select under 5 µs at every context.  The Triton kernel's chain of ``tl.topk`` stages cannot
get there at 64K / 256K: ``data/h200/latency_ladder.csv`` times those steps alone.  Whether that is a limit of the
design on Triton or of the GPU is the open question, and this probe answers it by measurement.
``scripts/cuda/topk_row_cta.cu`` (its header explains the algorithm) uses what Triton does not expose: shared
memory, warp shuffles and ballots, block barriers.  It is built here with ``nvcc -cubin`` for the device's own
architecture, loaded through the driver API (ctypes, ``libcuda``) and launched on torch's current stream, so
``dsa_lab.bench.timing.time_cuda_graph`` captures and times it like every other arm.  It is not part of the package.

Arms (select stage, k = 64, the sweep's inputs ``dsa_lab.bench.sweep.select_stage_inputs``):

* ``torch``: the sweep's before-arm (``torch.topk`` over the padded width, stored); ``triton``: the package's default.
* ``cuda``: 1024 threads x 32 columns, any row up to 32768 scores (every context; lengths read on the device).
* ``cuda_fit``: 1024 threads x the fewest columns per thread that hold the point's longest row (chosen on the host
  from the point's known lengths: what a kernel specialised per context would do; labelled as such).
* ``cuda_nt512``: 512 threads x 64 columns (fewer, fatter threads; no spills at 128 registers).
* ``t_load`` / ``t_compact``: ``cuda`` stopped after the load and count, and after the compaction (timing only:
  they write counts, not ids, and are not checked; ``compacted_max`` records the compaction's largest count).
* ``cluster``: ``scripts/cuda/cluster_floor.cu``, one row per cluster of 8 CTAs x 256 threads (rows of 2048 scores
  or more, 16K context up).  It handles the common case only and refuses the rest visibly (every slot -2): such
  rows are recorded as ``refused`` and not timed; on every other row it is checked like the others.
* ``cluster_q``: the same with ``-DCTA_Q=1``, a tighter threshold from each CTA's q-th best thread value
  (``scripts/cuda/cluster_threshold_model.py`` models both rules on the CPU).

Every id-writing arm is first checked against the exact reference (poisoned output, every slot) on every input,
including an adversarial row built to overflow the compaction and take the exact-threshold path; a mismatch is
printed and recorded in the ``check`` column and the arm is not timed.  Output: ``cuda_probe.csv`` (+ meta JSON)
under ``--out``.  ROCm: not supported (the kernel is CUDA C++; MI355X unverified).
"""
import argparse
import csv
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

SRC = os.path.join(ROOT, "scripts", "cuda", "topk_row_cta.cu")
CLUSTER_SRC = os.path.join(ROOT, "scripts", "cuda", "cluster_floor.cu")
KMAX = 64  # the kernel's KMAX


def variant_for(width: int, threads: int = 1024, per_thread: int | None = None) -> tuple[int, int]:
    """(threads, columns per thread) of a build holding rows of ``width`` scores; ``ValueError`` when none does."""
    if threads % 32 or not 32 <= threads <= 1024:
        raise ValueError(f"threads must be a multiple of 32 in [32, 1024], got {threads}")
    if width < 0:
        raise ValueError(f"width must be >= 0, got {width}")
    e = per_thread if per_thread is not None else 1
    while per_thread is None and threads * e < width:
        e *= 2
    if threads * e < width or e > 64:
        raise ValueError(f"width {width} needs more than {threads} x {e} columns (at most 64 per thread)")
    return threads, e


CLUSTER_G = 8  # CTAs per row in the cluster arms (the portable maximum)
CLUSTER_DEFINES = {"cluster": (), "cluster_q": ("CTA_Q=1",)}  # cluster_q: prepared, first run pending


def cluster_per_thread(width: int, threads: int = 256, g: int = CLUSTER_G) -> int:
    """Columns per thread of the cluster arm's build for rows of ``width`` scores (a power of two, at most 64)."""
    e = 1
    while threads * g * e < width:
        e *= 2
    if e > 64:
        raise ValueError(f"width {width} needs more than {g} x {threads} x 64 columns")
    return e


def check_status(nbad: int, refused: int, rows: int, msg: str = "") -> str:
    """An arm's check: ``ok``; ``refused r/rows`` when every differing row is one the cluster kernel declined (all
    slots -2: outside its common case; not timed, not a failure); else ``mismatch`` with the first difference."""
    if not nbad:
        return "ok"
    if refused == nbad:
        return f"refused {refused}/{rows}"
    return f"mismatch {nbad}/{rows}: {msg[:120]}"


def check_args(scores, k, lengths, out, threads, per_thread, max_len=None):
    """The launcher's input contract (raises ``ValueError`` / ``TypeError`` naming the argument).  ``max_len``: a
    host-known bound on ``lengths`` (default: the width), which must fit the build's ``threads * per_thread``."""
    if not isinstance(scores, torch.Tensor) or scores.dtype != torch.float32 or scores.dim() != 2:
        raise TypeError("scores must be a 2-D float32 tensor")
    if scores.stride(1) != 1:
        raise ValueError("scores must have unit column stride")
    if not isinstance(k, int) or not 1 <= k <= KMAX:
        raise ValueError(f"k must be an int in [1, {KMAX}], got {k!r}")
    rows, width = scores.shape
    bound = width if max_len is None else min(int(max_len), width)
    if bound > threads * per_thread:
        raise ValueError(f"max_len / width {bound} exceeds the build's {threads} x {per_thread} columns")
    if lengths.dtype != torch.int32 or lengths.shape != (rows,) or lengths.device != scores.device:
        raise ValueError("lengths must be int32 of shape (rows,) on the scores' device")
    if out.dtype != torch.int32 or out.shape != (rows, k) or not out.is_contiguous() or out.device != scores.device:
        raise ValueError("out must be a contiguous int32 (rows, k) tensor on the scores' device")


class _Driver:
    """The few driver-API calls needed to load a cubin and launch it on a torch stream."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        torch.cuda.init()
        torch.empty(1, device="cuda")  # the primary context, current on this thread
        ctx = ctypes.c_void_p()
        self._ok(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            raise RuntimeError("no current CUDA context after torch initialised the device")

    def _ok(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what} failed with CUresult {rc}")

    def load(self, cubin: bytes, name: bytes):
        mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
        self._ok(self.lib.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(cubin)), "cuModuleLoadData")
        self._ok(self.lib.cuModuleGetFunction(ctypes.byref(fn), mod, ctypes.c_char_p(name)), "cuModuleGetFunction")
        return mod, fn

    def launch(self, fn, grid, block, args, stream):
        arr = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
        self._ok(self.lib.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, ctypes.c_void_p(stream), arr, None),
                 "cuLaunchKernel")


class CudaSelect:
    """One build of ``topk_row_cta.cu`` (``threads`` x ``per_thread`` columns per row), or with ``cluster`` > 1 of
    ``cluster_floor.cu`` (``cluster`` CTAs of that shape per row)."""

    def __init__(self, drv, threads, per_thread, build_dir, log, defines=(), cluster=1):
        self.drv, self.threads, self.per_thread, self.cluster = drv, threads, per_thread, cluster
        cap = torch.cuda.get_device_capability()
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        tag = "".join("_" + d.lower() for d in defines)
        src, name = (SRC, "topk_row_cta") if cluster == 1 else (CLUSTER_SRC, "cluster_floor")
        if cluster > 1:
            tag += f"_g{cluster}"
            defines = (*defines, f"G={cluster}")
        path = os.path.join(build_dir, f"{name}_nt{threads}_e{per_thread}{tag}.cubin")
        cmd = [nvcc, "-cubin", f"-arch=sm_{cap[0]}{cap[1]}", "-O3", f"-DNT={threads}", f"-DE={per_thread}",
               *[f"-D{d}" for d in defines], "-Xptxas", "-v", "-o", path, src]
        r = subprocess.run(cmd, capture_output=True, text=True)
        log.append({"cmd": " ".join(cmd), "rc": r.returncode, "ptxas": (r.stdout + r.stderr).strip()[-600:]})
        if r.returncode:
            raise RuntimeError(f"nvcc failed: {r.stderr[-800:]}")
        with open(path, "rb") as f:
            self.mod, self.fn = drv.load(f.read(), name.encode())

    def __call__(self, scores, k, lengths, out, stop_after=0, max_len=None):
        check_args(scores, k, lengths, out, self.threads * self.cluster, self.per_thread, max_len)
        args = [ctypes.c_uint64(scores.data_ptr()), ctypes.c_longlong(scores.stride(0)),
                ctypes.c_uint64(lengths.data_ptr()), ctypes.c_int(scores.shape[1]), ctypes.c_int(k),
                ctypes.c_uint64(out.data_ptr()), ctypes.c_int(stop_after)]
        self.drv.launch(self.fn, scores.shape[0] * self.cluster, self.threads, args,
                        torch.cuda.current_stream().cuda_stream)
        return out


def adversarial_input(width, live, threads, device, seed):
    """One row whose first 64 threads' columns (every j, for a build of ``threads``) hold the largest values: the
    per-warp threshold lets them all through, overflowing the compaction at 256K, so the kernel must take its
    exact-threshold path there."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(1, width, generator=g)
    col = torch.arange(width)
    big = (col % threads) < 64
    x[0, big] = 100.0 + torch.rand(int(big.sum()), generator=g)
    x[0, live:] = float("-inf")
    return {"scores": x.to(device), "lengths": torch.tensor([live], dtype=torch.int32, device=device),
            "live": [live]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="build/cuda_probe")
    ap.add_argument("--max-s", type=float, default=240.0)
    ap.add_argument("--check-only", action="store_true")
    a = ap.parse_args()
    from dsa_lab.bench import timing as bench, data
    from dsa_lab.select import topk_select
    from dsa_lab.bench.sweep import MML, Point, select_stage_inputs, torch_topk_store
    from dsa_lab.bench.verify import POISON, compare

    t0 = time.time()
    os.makedirs(a.out, exist_ok=True)
    build_dir = os.path.join(a.out, "build")
    os.makedirs(build_dir, exist_ok=True)
    drv, log = _Driver(), []
    builds = {}

    def build(nt, e, g=1, defines=()):
        if (nt, e, g, defines) not in builds:
            builds[(nt, e, g, defines)] = CudaSelect(drv, nt, e, build_dir, log, defines=defines, cluster=g)
        return builds[(nt, e, g, defines)]

    k = 64
    pts = [(ctx, 1, 1, "normal") for ctx in (4096, 16384, 65536, 262144)]
    pts += [(ctx, 32, 1, "normal") for ctx in (65536, 262144)]
    pts += [(ctx, 128, 5, "normal") for ctx in (16384, 65536, 262144)]
    pts += [(262144, 1, 1, d) for d in ("equal", "shifted", "ramp", "nan1pct")]
    pts += [(262144, 128, 5, d) for d in ("equal", "ramp")]
    f = open(os.path.join(a.out, "cuda_probe.csv"), "w", newline="")
    w = csv.DictWriter(f, fieldnames=["context", "concurrency", "next_n", "rows", "k", "dist", "arm", "threads",
                                      "per_thread", "median_us", "p10_us", "p90_us", "check",
                                      "compacted_max", "ctas_per_row"])
    w.writeheader()
    bad = 0
    nb = -(-MML // 8)
    def check(writer, rows, ref, timing_only=False):
        """Poisoned output, one launch, every slot against the reference: (status, out) -- out is reused for timing."""
        out = torch.full((rows, k), POISON, dtype=torch.int32, device="cuda")
        try:
            writer(out)
            torch.cuda.synchronize()
            if timing_only:
                return "timing only", out
            nbad, msg = compare(out, ref)
            return check_status(nbad, int((out == -2).all(dim=1).sum()), rows, msg), out
        except Exception as ex:  # recorded, not fatal
            return f"error {type(ex).__name__}: {str(ex)[:160]}", out

    # the exact-threshold path, checked (not timed) first: 256K and 64K live lengths
    for live in (nb, 8192):
        for nt, e in ((1024, 32), (512, 64)):
            inp = adversarial_input(nb, live, nt, "cuda", 11 + live + nt)
            ref = topk_select(inp["scores"], k, lengths=inp["lengths"], impl="reference")
            res, _ = check(lambda o, b=build(nt, e), inp=inp: b(inp["scores"], k, inp["lengths"], o), 1, ref)
            bad += res != "ok"
            print(f"adversarial live {live} nt{nt} e{e}: {res}", flush=True)
            w.writerow({"context": live * 8, "concurrency": 1, "next_n": 1, "rows": 1, "k": k, "dist": "adversarial",
                        "arm": "cuda" if nt == 1024 else "cuda_nt512", "threads": nt, "per_thread": e,
                        "median_us": "", "p10_us": "", "p90_us": "", "check": res})
    done = 0
    for i, (ctx, conc, nn, dist) in enumerate(pts):
        if time.time() - t0 > a.max_s:
            print(f"stopped at the time limit after {done}/{len(pts)} points", flush=True)
            break
        p = Point("select", "select", ctx, conc, nn, k, dist)
        inp = select_stage_inputs(p, MML, 9100 + i, "cuda")
        sc, L, max_len = inp["scores"], inp["lengths"], max(inp["live"])
        ref = topk_select(sc, k, lengths=L, impl="reference")
        fit = variant_for(max_len)
        # name: (threads, columns per thread, stop_after); triton's build columns are empty
        arms = {"triton": (None, None, None), "cuda": (1024, 32, 0), "cuda_fit": (*fit, 0), "cuda_nt512": (512, 64, 0),
                "t_load": (1024, 32, 1), "t_compact": (1024, 32, 2)}
        if max_len >= 2048:  # 8 CTAs x 256 threads: 64 warps, each with live columns (the common case needs k <= 64)
            arms["cluster"] = (256, cluster_per_thread(max_len), 0)
            arms["cluster_q"] = (256, cluster_per_thread(max_len), 0)  # + the per-CTA threshold (-DCTA_Q=1)
        fns, checks, outs = {"torch": lambda: torch_topk_store(sc, k)}, {}, {}
        for name, (nt, e, stop) in arms.items():
            if nt is None:
                writer = lambda o: topk_select(sc, k, lengths=L, impl="triton", out=o)  # noqa: E731
            elif name.startswith("cluster"):
                b = build(nt, e, CLUSTER_G, CLUSTER_DEFINES[name])
                writer = lambda o, b=b: b(sc, k, L, o, 0, max_len)  # noqa: E731
            else:
                writer = lambda o, b=build(nt, e), stop=stop: b(sc, k, L, o, stop, max_len)  # noqa: E731
            checks[name], out = check(writer, p.rows, ref, timing_only=bool(stop))
            outs[name] = out
            if checks[name].startswith("refused"):
                print(f"  {ctx} rows {p.rows} {dist} {name}: refused (outside its common case)", flush=True)
                continue
            if checks[name] not in ("ok", "timing only"):
                bad += 1
                print(f"  {ctx} rows {p.rows} {dist} {name}: {checks[name]}", flush=True)
                continue
            fns[name] = lambda writer=writer, out=out: writer(out)
        res = {}
        for name in ["torch", *arms]:  # every arm gets a row: refused and failing ones with their check, untimed
            fn = fns.get(name)
            nt, e, _ = arms.get(name, (None, None, None))
            row = {"context": ctx, "concurrency": conc, "next_n": nn, "rows": p.rows, "k": k, "dist": dist,
                   "arm": name, "threads": nt or "", "per_thread": e or "", "check": checks.get(name, ""),
                   "ctas_per_row": CLUSTER_G if name.startswith("cluster") else (1 if nt else "")}
            if name == "t_compact":  # the largest candidate count any row compacted (ranked when <= 512)
                row["compacted_max"] = int(outs[name][:, 0].max())
            if name.startswith("cluster") and fn is not None:  # the cluster kernels' M (stop_after 4 writes it)
                mo = torch.zeros((p.rows, k), dtype=torch.int32, device="cuda")
                build(nt, e, CLUSTER_G, CLUSTER_DEFINES[name])(sc, k, L, mo, 4, max_len)
                row["compacted_max"] = int(mo[:, 0].max())
            if fn is not None and not a.check_only:
                tm = bench.time_cuda_graph(fn, rep_ms=10.0, max_replays=60)
                res[name] = tm.median_us
                row.update(median_us=round(tm.median_us, 3), p10_us=round(tm.p10_us, 3), p90_us=round(tm.p90_us, 3))
            w.writerow(row)
        f.flush()
        print(f"{ctx:>6} r{p.rows:<4} {dist:<8} fit=nt{fit[0]}xe{fit[1]} " +
              " ".join(f"{n}={v:.2f}" for n, v in res.items()), flush=True)
        done += 1
    f.close()
    meta = data.collect_metadata(" ".join(["python3"] + sys.argv), {
        "points_done": done, "points_planned": len(pts), "failing_variants": bad, "builds": log,
        "timing": "cuda graph (dsa_lab.bench.timing.time_cuda_graph, rep 10 ms)",
        "note": "probe: a CUDA C++ one-CTA-per-row select beside the Triton default; not the recorded sweep"})
    with open(os.path.join(a.out, "cuda_probe.meta.json"), "w") as fm:
        json.dump(meta, fm, indent=1)
    print(f"cuda probe: {done} points, {bad} failing checks, {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
