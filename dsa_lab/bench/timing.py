"""Timing and the measured ceilings (stream bandwidth, launch floors, fp8 MMA rate).

Timing (docs/design.md §5)
------------------
:func:`time_fn` times a callable that launches GPU work:

* On CUDA: :func:`time_cuda_graph` — warm up, capture ``inner`` back-to-back calls in
  one CUDA graph (``inner`` chosen so one replay lasts about ``target_replay_us``), replay
  it many times with a CUDA event pair around each replay, and report the per-call time
  (replay time / ``inner``): median, p10, p90, min and max over the replays.  This is the
  method of ``triton.testing.do_bench_cudagraph`` (an unrolled graph, events around the
  replay) with more replays so that a spread can be reported; its API differs between
  triton 3.6 and 3.9 only in details, so this module does not depend on it
  (:func:`time_do_bench_cudagraph` calls it, for comparison).
  Inputs are not rotated: the numbers are warm-L2 numbers, and none is claimed cold (docs/design.md §5).
* Without CUDA: :func:`time_wallclock` — ``time.perf_counter`` around calls.  Under the
  Triton interpreter this measures the interpreter, so every such result is labelled
  :data:`INTERPRETER_LABEL` ("interpreter (not a performance measurement)").

Ceilings (measured, never quoted): :func:`measure_ceilings` → read-only streaming
bandwidth (a sum over a multi-GB tensor, best of ``torch.sum`` and a Triton read-only
reduction), the time of one empty Triton launch in a graph and of two.

The bytes models and the roofline placement of a measurement: :mod:`dsa_lab.bench.roofline`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import math
import statistics
import time

import torch

__all__ = [
    "INTERPRETER_LABEL",
    "CUDA_GRAPH_LABEL",
    "Timing",
    "has_cuda",
    "timing_method",
    "time_fn",
    "time_cuda_graph",
    "time_wallclock",
    "time_do_bench_cudagraph",
    "measure_ceilings",
]

INTERPRETER_LABEL = "interpreter (not a performance measurement)"
WALLCLOCK_LABEL = "cpu wall clock (not a GPU measurement)"
CUDA_GRAPH_LABEL = "cuda graph"


def has_cuda() -> bool:
    return torch.cuda.is_available()


def _interpreter() -> bool:
    from .._impl import interpreter_active

    return interpreter_active()


def timing_method() -> str:
    """The label every timing of this process carries."""
    if has_cuda():
        return CUDA_GRAPH_LABEL
    return INTERPRETER_LABEL if _interpreter() else WALLCLOCK_LABEL


@dataclasses.dataclass
class Timing:
    """Per-call time of a callable, microseconds, over ``n`` samples."""

    median_us: float
    p10_us: float
    p90_us: float
    min_us: float
    max_us: float
    n: int
    inner: int
    method: str

    def as_row(self) -> dict:
        return {
            "median_us": self.median_us,
            "p10_us": self.p10_us,
            "p90_us": self.p90_us,
            "min_us": self.min_us,
            "max_us": self.max_us,
            "samples": self.n,
            "timing": self.method,
        }


def _quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    if len(s) == 1:
        return s[0]
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _summarize(per_call_us: list[float], inner: int, method: str) -> Timing:
    return Timing(
        median_us=statistics.median(per_call_us),
        p10_us=_quantile(per_call_us, 0.1),
        p90_us=_quantile(per_call_us, 0.9),
        min_us=min(per_call_us),
        max_us=max(per_call_us),
        n=len(per_call_us),
        inner=inner,
        method=method,
    )


@contextlib.contextmanager
def _capture(graph, stream):
    """``torch.cuda.graph`` with Python's cyclic GC off during the capture (as triton's
    ``cuda_graph_without_gc``): a collected Triton kernel object would unload its module mid-capture."""
    was = gc.isenabled()
    gc.disable()
    try:
        with torch.cuda.graph(graph, stream=stream):
            yield
    finally:
        if was:
            gc.enable()


def time_cuda_graph(
    fn,
    *,
    target_replay_us: float = 200.0,
    max_inner: int = 100,
    rep_ms: float = 25.0,
    min_replays: int = 10,
    max_replays: int = 200,
    warmup: int = 2,
) -> Timing:
    """CUDA-graph timing of ``fn`` (see the module docstring).

    ``fn`` must be capturable (no host syncs, no allocation that depends on data).
    Runs on a side stream, as graph capture requires.
    """
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warmup):
            fn()
        stream.synchronize()
        # estimate from a 1-call graph (no host launch overhead in the estimate)
        g1 = torch.cuda.CUDAGraph()
        with _capture(g1, stream):
            fn()
        g1.replay()
        stream.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(stream)
        for _ in range(5):
            g1.replay()
        e.record(stream)
        e.synchronize()
        est_us = max(s.elapsed_time(e) * 1e3 / 5, 0.5)
        del g1
        inner = int(max(1, min(max_inner, round(target_replay_us / est_us))))
        g = torch.cuda.CUDAGraph()
        with _capture(g, stream):
            for _ in range(inner):
                fn()
        g.replay()
        stream.synchronize()
        replays = int(max(min_replays, min(max_replays, rep_ms * 1e3 / (est_us * inner))))
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(replays)]
        for s, e in events:
            s.record(stream)
            g.replay()
            e.record(stream)
        stream.synchronize()
        per_call = [s.elapsed_time(e) * 1e3 / inner for s, e in events]
        del g
    torch.cuda.current_stream().wait_stream(stream)
    return _summarize(per_call, inner, CUDA_GRAPH_LABEL)


def time_do_bench_cudagraph(fn, rep_ms: float = 20.0) -> Timing:
    """``triton.testing.do_bench_cudagraph`` (10 replays of an unrolled graph) as a :class:`Timing`.

    Uses ``return_mode="all"`` (triton 3.6 and 3.9 both have it), falling back to the
    median for older versions.
    """
    import triton.testing as tt

    with torch.cuda.stream(torch.cuda.Stream()):
        try:
            ms = tt.do_bench_cudagraph(fn, rep=rep_ms, return_mode="all")
        except (TypeError, AssertionError):  # an older triton without return_mode="all"
            ms = [tt.do_bench_cudagraph(fn, rep=rep_ms)]
    if not isinstance(ms, (list, tuple)):
        ms = [ms]
    return _summarize([m * 1e3 for m in ms], 0, CUDA_GRAPH_LABEL + " (triton.testing.do_bench_cudagraph)")


def time_wallclock(fn, *, reps: int = 1, warmup: int = 0, method: str | None = None) -> Timing:
    """``time.perf_counter`` around ``reps`` calls (after ``warmup``), per call."""
    for _ in range(warmup):
        fn()
    if has_cuda():
        torch.cuda.synchronize()
    xs = []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter()
        fn()
        if has_cuda():
            torch.cuda.synchronize()
        xs.append((time.perf_counter() - t0) * 1e6)
    return _summarize(xs, 1, method or timing_method())


def time_fn(fn, **kw) -> Timing:
    """CUDA-graph timing on a GPU; wall clock (labelled) otherwise.  ``kw`` go to the chosen timer."""
    if has_cuda():
        return time_cuda_graph(fn, **{k: v for k, v in kw.items() if k != "reps"})
    return time_wallclock(fn, reps=kw.get("reps", 1))


# ----------------------------------------------------------------------------- ceilings


@functools.lru_cache(maxsize=None)
def _kernels():
    """Triton kernels of this module, defined on first use (TRITON_INTERPRET is read at decoration)."""
    import triton
    import triton.language as tl

    @triton.jit
    def empty_kernel(x_ptr):
        pass

    @triton.jit
    def stream_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, ITERS: tl.constexpr):
        pid = tl.program_id(0)
        nprog = tl.num_programs(0)
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        offs = tl.arange(0, BLOCK)
        for i in range(ITERS):
            base = (i * nprog + pid).to(tl.int64) * BLOCK
            m = base + offs < n
            acc += tl.load(x_ptr + base + offs, mask=m, other=0.0, cache_modifier=".cg")
        tl.store(out_ptr + pid, tl.sum(acc, axis=0))

    return empty_kernel, stream_sum_kernel


@functools.lru_cache(maxsize=None)
def _fp8_matmul_kernel():
    """A plain Triton fp8 GEMM (``C = A @ B``, e4m3fn in, fp32 accumulate, bf16 out): the ``tl.dot`` fp8 rate a
    Triton kernel reaches on this device (the compute ceiling's Triton half)."""
    import triton
    import triton.language as tl

    @triton.jit
    def fp8_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          GROUP: tl.constexpr):
        pid = tl.program_id(0)
        nm, nn = tl.cdiv(M, BM), tl.cdiv(N, BN)
        g = pid // (GROUP * nn)
        first = g * GROUP
        rows = tl.minimum(nm - first, GROUP)
        pm = first + (pid % (GROUP * nn)) % rows
        pn = (pid % (GROUP * nn)) // rows
        om = pm * BM + tl.arange(0, BM)
        on = pn * BN + tl.arange(0, BN)
        ok = tl.arange(0, BK)
        a = a_ptr + om[:, None] * K + ok[None, :]  # A [M, K] row-major
        b = b_ptr + on[None, :] * K + ok[:, None]  # B^T [N, K] row-major: K-major operand
        acc = tl.zeros([BM, BN], dtype=tl.float32)
        for _ in range(0, K, BK):
            acc = tl.dot(tl.load(a), tl.load(b), acc)
            a += BK
            b += BK
        tl.store(c_ptr + om[:, None] * N + on[None, :], acc.to(tl.bfloat16))

    return fp8_matmul_kernel


def measure_fp8_mma_peak(device=None, n: int = 8192) -> dict:
    """The dense fp8 (e4m3fn) tensor-core rate of this GPU, Tflop/s: the best of ``torch._scaled_mm`` and a
    Triton ``tl.dot`` GEMM (a few tile configurations) on ``n x n x n`` matrices, each timed in a CUDA graph.

    Returns ``{"fp8_tflops", "fp8_method", "fp8_scaled_mm_tflops", "fp8_triton_tflops", "fp8_n"}``; an empty dict
    without a CUDA GPU with fp8 ``tl.dot`` (see :func:`dsa_lab.paged.fp8_dot_supported`)."""
    from ..paged import fp8_dot_supported

    dev = torch.device(device or "cuda")
    if not has_cuda() or not fp8_dot_supported(dev):
        return {}
    flops = 2.0 * n ** 3
    a = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
    bt = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)  # B^T, row-major
    one = torch.ones((), device=dev)
    res = {}
    try:
        t = time_cuda_graph(lambda: torch._scaled_mm(a, bt.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                            target_replay_us=5000, max_inner=2, rep_ms=100)
        res["scaled_mm"] = flops / (t.median_us * 1e6)
    except Exception:  # noqa: BLE001 - a torch without _scaled_mm for this device: the Triton GEMM alone
        pass
    c = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
    kern = _fp8_matmul_kernel()
    best = 0.0
    for bm, bn, bk, warps, stages in ((128, 256, 128, 8, 3), (128, 128, 128, 4, 4), (256, 128, 128, 8, 3)):
        grid = ((n // bm) * (n // bn),)
        try:
            t = time_cuda_graph(lambda: kern[grid](a, bt, c, n, n, n, BM=bm, BN=bn, BK=bk, GROUP=8, num_warps=warps,
                                                   num_stages=stages), target_replay_us=5000, max_inner=2, rep_ms=100)
        except Exception:  # noqa: BLE001 - a configuration that does not fit this device is skipped
            continue
        best = max(best, flops / (t.median_us * 1e6))
    if best:
        res["triton"] = best
    if not res:
        return {}
    method = max(res, key=res.get)
    return {"fp8_tflops": round(res[method], 1), "fp8_method": {"scaled_mm": "torch._scaled_mm",
                                                                 "triton": "triton tl.dot GEMM"}[method],
            "fp8_scaled_mm_tflops": round(res.get("scaled_mm", 0.0), 1) or None,
            "fp8_triton_tflops": round(res.get("triton", 0.0), 1) or None, "fp8_n": n}


def _stream_triton(x: torch.Tensor, out: torch.Tensor, nprog: int, block: int):
    _, k = _kernels()
    iters = -(-x.numel() // (nprog * block))
    k[(nprog,)](x, out, x.numel(), BLOCK=block, ITERS=iters, num_warps=8)


def measure_ceilings(*, stream_bytes: int | None = None, device=None) -> dict:
    """Measured ceilings of this device.

    Returns ``{"stream_gbps", "launch_us", "two_launch_us", "stream_bytes", "stream_method",
    "timing"}``:

    * ``stream_gbps`` — read-only streaming bandwidth, GB/s (1e9 B/s): the best of
      ``torch.sum`` and a Triton read-only reduction over a ``stream_bytes`` fp32 tensor
      (default 4 GiB on a GPU, 32 MiB without one), each timed in a CUDA graph.
    * ``launch_us`` / ``two_launch_us`` — one / two empty Triton launches per call, in a graph.

    Without CUDA the same quantities are measured by wall clock on the CPU (interpreter)
    and ``timing`` says so: they are then not a performance measurement.
    """
    empty, _ = _kernels()
    if has_cuda():
        dev = torch.device(device or "cuda")
        nbytes = int(stream_bytes or 4 * 2**30)
        free = torch.cuda.mem_get_info(dev)[0]
        nbytes = min(nbytes, int(free * 0.5))
        x = torch.empty(nbytes // 4, dtype=torch.float32, device=dev).uniform_()
        sink = torch.empty((), device=dev)
        t_torch = time_cuda_graph(lambda: torch.sum(x, 0, out=sink), target_replay_us=2000, max_inner=4, rep_ms=60)
        sm = torch.cuda.get_device_properties(dev).multi_processor_count
        best = ("torch.sum", t_torch)
        for per_sm, block in ((4, 4096), (8, 2048), (16, 1024)):
            nprog = sm * per_sm
            partial = torch.empty(nprog, dtype=torch.float32, device=dev)
            try:
                t = time_cuda_graph(lambda: _stream_triton(x, partial, nprog, block), target_replay_us=2000,
                                    max_inner=4, rep_ms=60)
            except Exception:  # noqa: BLE001 - a config that does not compile is just skipped
                continue
            if t.median_us < best[1].median_us:
                best = (f"triton read-only sum ({nprog} programs x {block})", t)
        stream_gbps = x.numel() * 4 / (best[1].median_us * 1e3)
        del x
        z = torch.zeros(1, device=dev)
        t1 = time_cuda_graph(lambda: empty[(1,)](z), target_replay_us=300, max_inner=200, rep_ms=30)

        def two():
            empty[(1,)](z)
            empty[(1,)](z)

        t2 = time_cuda_graph(two, target_replay_us=300, max_inner=200, rep_ms=30)
        method = CUDA_GRAPH_LABEL
    else:
        nbytes = int(stream_bytes or 32 * 2**20)
        x = torch.rand(nbytes // 4)
        t_sum = time_wallclock(lambda: x.sum(), reps=5, warmup=1, method=timing_method())
        best = ("torch.sum (cpu)", t_sum)
        stream_gbps = x.numel() * 4 / (t_sum.median_us * 1e3)
        z = torch.zeros(1)
        t1 = time_wallclock(lambda: empty[(1,)](z), reps=5, warmup=1)

        def two():
            empty[(1,)](z)
            empty[(1,)](z)

        t2 = time_wallclock(two, reps=5, warmup=1)
        method = timing_method()
    return {
        "stream_gbps": round(stream_gbps, 1),
        "launch_us": round(t1.median_us, 3),
        "two_launch_us": round(t2.median_us, 3),
        "stream_bytes": nbytes,
        "stream_method": best[0],
        "timing": method,
    }
