"""Compile every kernel variant before it is needed: ``dsa-lab warmup``.

A compiled variant is chosen only by a kernel's constexprs, its launch options and its arguments' dtypes (never by
a shape: :mod:`dsa_lab.plans`), so the set of variants a device can need is small and known.  This module finds it
by *recording* the launchers (:func:`dsa_lab.launch.recording`) over a list of calls on ``meta`` tensors -- the
same code path a real call runs, with nothing launched -- and then (``dsa-lab warmup``, :mod:`dsa_lab.cli`):

* ``--dry-run`` prints the variants, one per line (no GPU needed);
* on a GPU, compiles them all in parallel threads into Triton's on-disk cache (``TRITON_CACHE_DIR``; dsa_lab
  points it at ``~/.cache/dsa_lab/triton`` unless it is set), so a later process's first call loads a compiled
  kernel instead of compiling one;
* :func:`preload`, called once by a long-lived process at startup, loads them all into that process.

The calls: the decode grid (:func:`decode_calls`: every row count 1-640, k in {64, 512, 2048}, the select and the
full stage, as the benchmark sweep runs them) and, for any other call, one representative of every bucket
(:func:`warm_calls`: every hier k bucket, odd widths, the fused arm, block scores, flags); ``--verify`` adds the
correctness run's (:func:`verify_calls`: other block sizes, row starts and row repeats).
"""
from __future__ import annotations

import dataclasses
import inspect
import os
import sys
import time

import torch

H200 = {"sm_count": 132, "warp_size": 32, "name": "NVIDIA H200", "pdl": True, "arch": "sm_90"}
DECODE_WIDTH, DECODE_BLOCK = 262144, 8
DECODE_K = (64, 512, 2048)
MAX_ROWS = 640
# one k per compiled bucket: hier KP 64 / 128 / 256 / 512, radix and bisect (k-independent)
BUCKET_K = (64, 100, 200, 300, 2048)
LONGROW_K = (300, 2048)  # the long-row select's two k buckets
LONGROW_ROWS = 64  # rows of WIDE_WIDTH that take it
VERIFY_FUZZ_WIDTH = 8192  # `dsa-lab verify --scale gpu`'s default cap on the fuzz's widths
ODD_WIDTH = 1001  # a width whose rows are not 16-element aligned (the kernels' other alignment bucket)
WIDE_WIDTH = 65537  # wider than the bisect select's register tile (the long-row and radix selects' rows)


@dataclasses.dataclass(frozen=True)
class Call:
    """One public call: ``entry`` is ``select`` (:func:`dsa_lab.topk_select` over ``width`` columns), ``full``
    (:func:`dsa_lab.select_candidate_blocks` over ``width`` logits), ``fused`` (the same, the fused arm),
    ``scores`` (:func:`dsa_lab.block_scores`), ``flags`` (:func:`dsa_lab.candidate_flags`) or ``mask``
    (:func:`dsa_lab.compat.vllm_apply_candidate_mask`, ``k`` ids per row) or ``producer``
    (:func:`dsa_lab.paged_mqa_logits`: ``rows`` sequences, ``k`` = next_n, ``starts``: per-row ends, the
    ``(B, next_n)`` layout; H = 64, D = 128, 64-token cache blocks, ``width`` = max_model_len), ``producer_step`` (the
    same, as the fused decode step launches it: sanitized logits, block scores, flags zeroed) or ``step`` (the fused
    decode step's select: ``k`` of the producer's block scores of ``width`` logits, with flags); ``block_size``,
    ``row_repeat``, ``starts`` (row starts given) and ``flags`` (``with_flags``) as the call passes them (the last
    two: ``full`` and ``fused``)."""

    entry: str
    rows: int
    width: int
    k: int
    block_size: int = 8
    row_repeat: int = 1
    starts: bool = False
    flags: bool = True


def decode_calls(max_rows: int = MAX_ROWS) -> list[Call]:
    """The decode grid of the benchmark sweep: rows 1-640 (every count, not only the sweep's products), the
    select stage over the padded 32768-block workspace and the full stage over 262144 logits, k in 64/512/2048."""
    nb = DECODE_WIDTH // DECODE_BLOCK
    return [Call(e, r, nb if e == "select" else DECODE_WIDTH, k)
            for k in DECODE_K for e in ("select", "full") for r in range(1, max_rows + 1)]


def warm_calls(max_rows: int = MAX_ROWS, *, fused: bool = False) -> list[Call]:
    """Every bucket a call of the default arms can reach on one device: the decode grid, every k bucket at every row
    count and at an odd and a wide width, with and without row starts and flags, public block scores and flags;
    ``fused``: also the ``triton_fused`` arm's."""
    nb = DECODE_WIDTH // DECODE_BLOCK
    calls = decode_calls(max_rows)
    for k in BUCKET_K:
        for r in range(1, max_rows + 1):
            calls += [Call("select", r, nb, k), Call("select", r, ODD_WIDTH, k), Call("select", r, WIDE_WIDTH, k)]
            for fl in (True, False):  # with_flags: the sweep's calls and the public default
                calls += [Call("full", r, DECODE_WIDTH, k, flags=fl), Call("full", r, ODD_WIDTH, k, flags=fl),
                          Call("full", r, DECODE_WIDTH, k, starts=True, flags=fl)]
                if fused and k <= 256:
                    calls += [Call("fused", r, DECODE_WIDTH, k, flags=fl), Call("fused", r, ODD_WIDTH, k, flags=fl)]
    for k in LONGROW_K:  # the long-row select (rows x width from 2M) and the candidate path at block size 1 on it
        calls.append(Call("select", LONGROW_ROWS, WIDE_WIDTH, k))
        for fl in (True, False):
            calls += [Call("full", LONGROW_ROWS, WIDE_WIDTH, k, block_size=1, flags=fl),
                      Call("full", LONGROW_ROWS, WIDE_WIDTH, k, block_size=1, starts=True, flags=fl)]
    calls += [Call("scores", 1, DECODE_WIDTH, 0), Call("flags", 1, DECODE_WIDTH, 64),
              Call("mask", 1, DECODE_WIDTH, 64)]
    calls += [Call(e, 128, DECODE_WIDTH, nn, starts=two) for e in ("producer", "producer_step") for nn in range(1, 6)
              for two in (False, True)]
    calls += [Call("step", r, DECODE_WIDTH, k) for k in DECODE_K for r in range(1, max_rows + 1)]
    return list(dict.fromkeys(calls))


def verify_calls() -> list[Call]:
    """The calls ``dsa-lab verify --scale gpu`` makes with its default arms: every case of the named matrix and every
    entry of the fuzz menu (its rows, ends, k inside the bucket and values are random; they select no variant), with
    and without row starts, by the default and (where it serves the shape) the fused arm."""
    from .cases import FUZZ_MENU, MATRIX
    from .plans import fusable

    calls = []
    cases = [(c.op, c.rows, c.width, c.k, c.row_repeat, c.block_size, (c.starts,)) for c in MATRIX]
    cases += [(op, rows, width, kp, rr, bs, (False, True)) for op, w, kp, rr, bs in FUZZ_MENU
              for rows in (rr, rr * (64 // rr))  # the fuzz's rows: a multiple of rr, at most 64
              for width in sorted({w, min(w, VERIFY_FUZZ_WIDTH)})]  # its widths: as listed, or capped
    for op, rows, width, k, rr, bs, starts in cases:
        if op == "select":
            calls.append(Call("select", rows, width, k, 1, rr))
            continue
        for st in starts:  # verify calls without flags
            calls.append(Call("full", rows, width, k, bs, rr, st, False))
            if fusable(k, bs):
                calls.append(Call("fused", rows, width, k, bs, rr, st, False))
    return list(dict.fromkeys(calls))


def record(call: Call, facts: dict = H200) -> list:
    """The kernel launches ``call`` makes on a device with ``facts``, recorded on ``meta`` tensors."""
    from .launch import producer as lp
    from .launch import recording
    from .launch import scores as ls
    from .launch import select as lsel

    meta = torch.device("meta")
    r, w, k, bs, rr = call.rows, call.width, call.k, call.block_size, call.row_repeat
    i32 = dict(dtype=torch.int32, device=meta)
    ng = max(1, r // rr)
    with recording() as rec:
        if call.entry == "select":
            lsel.topk_select(torch.empty((r, w), device=meta), k, torch.empty((ng,), **i32), rr, facts=facts)
        elif call.entry in ("full", "fused"):
            starts = torch.empty((ng,), **i32) if call.starts else None
            lsel.candidate_blocks(torch.empty((r, w), device=meta), torch.empty((ng,), **i32), k, starts, bs, rr,
                                  fused=call.entry == "fused", with_flags=call.flags, facts=facts)
        elif call.entry == "scores":
            ls.block_scores(torch.empty((r, w), device=meta), torch.empty((ng,), **i32), None, bs, rr, facts=facts)
        elif call.entry == "flags":
            ls.candidate_flags(torch.empty((r, k), **i32), w, None, bs, rr)
        elif call.entry == "mask":
            flags = torch.empty((r, -(-w // bs) + 1), dtype=torch.uint8, device=meta)
            starts = torch.empty((ng,), **i32) if call.starts else None
            ls.apply_mask(torch.empty((r, w), device=meta), torch.empty((ng,), **i32), starts,
                          torch.empty((r, k), **i32), flags, bs, rr, facts["sm_count"])
        elif call.entry == "step":
            nb = -(-w // bs)
            lsel.candidate_blocks(torch.empty((r, w), device=meta), torch.empty((r,), **i32), k, None, bs, 1,
                                  with_flags=True, facts=facts, scores=ls.scores_buffer(r, nb, meta))
        elif call.entry in ("producer", "producer_step"):
            H, D, bkv = 64, 128, 64
            blocks = -(-w // bkv)
            fused = {}
            if call.entry == "producer_step":
                nb = -(-w // bs)
                fused = dict(sanitize=True, scores_out=torch.empty((r * k, nb), device=meta), block_size=bs,
                             flags_out=torch.empty((r * k, nb + 1), dtype=torch.uint8, device=meta),
                             row_ends=torch.empty((r * k,), **i32))
            lp.paged_mqa_logits(
                torch.empty((r, k, H, D), dtype=torch.float8_e4m3fn, device=meta),
                torch.empty((r * blocks, bkv, 1, D + 4), dtype=torch.uint8, device=meta),
                torch.empty((r * k, H), dtype=torch.float32, device=meta),
                torch.empty((r, k) if call.starts else (r,), **i32), torch.empty((r, blocks), **i32),
                torch.empty((r * k, w), dtype=torch.float32, device=meta), facts=facts, **fused)
        else:
            raise ValueError(f"unknown entry {call.entry!r}")
    return rec


_OPTIONS = ("num_warps", "num_stages", "num_ctas", "launch_pdl", "maxnreg")


def _params(kernel) -> list[tuple[str, bool]]:
    """(name, is_constexpr) of a kernel's parameters."""
    fn = getattr(kernel, "fn", kernel)
    return [(n, "constexpr" in str(p.annotation)) for n, p in inspect.signature(fn).parameters.items()]


def _arg_type(v) -> str:
    if isinstance(v, torch.Tensor):
        return "*" + {torch.float32: "fp32", torch.int32: "i32", torch.int64: "i64", torch.uint8: "u8",
                      torch.float8_e4m3fn: "fp8e4nv"}.get(v.dtype, str(v.dtype).replace("torch.", ""))
    if isinstance(v, bool):
        return "i1"
    if isinstance(v, int):
        return "i32" if -2**31 <= v < 2**31 else "i64"
    if isinstance(v, float):
        return "fp32"
    return type(v).__name__


def parts(launch) -> tuple[str, dict, dict, dict]:
    """``(name, signature, constexprs, options)`` of a recorded launch: what selects a compiled variant (pointers
    assumed 16-byte aligned, as every tensor the launchers allocate is)."""
    params = _params(launch.kernel)
    sig, cx = {}, {}
    for (name, is_cx), v in zip(params, launch.args):
        if is_cx:
            cx[name] = v
        else:
            sig[name] = _arg_type(v)
    for name, is_cx in params:
        if name in launch.meta:
            if is_cx:
                cx[name] = launch.meta[name]
        elif is_cx and name not in cx:
            cx[name] = None  # a default (none of the kernels here has one)
    opts = {key: launch.meta[key] for key in _OPTIONS if key in launch.meta}
    name = getattr(getattr(launch.kernel, "fn", launch.kernel), "__name__", str(launch.kernel))
    return name, sig, cx, opts


def variant_key(launch) -> str:
    """One line that names a compiled variant: kernel, constexprs, options, argument types."""
    name, sig, cx, opts = parts(launch)
    c = " ".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in cx.items())
    o = " ".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in opts.items())
    return f"{name} [{c}] [{o}] ({','.join(sig.values())})"


def variants(calls, facts: dict = H200, paths: dict | None = None) -> dict:
    """``{variant_key: (first launch, number of calls that use it)}`` over ``calls``, in first-use order; ``paths``
    (a dict), where given, is filled with the smallest call (rows, then width) of each path a public call takes
    (:data:`FIRST_CALL_ENTRIES`): its entry, the kernels it launches, row starts, flags, row repeat and whether its
    rows are 16-element aligned."""
    out: dict = {}
    for call in calls:
        launches = record(call, facts)
        for launch in launches:
            key = variant_key(launch)
            first, n = out.get(key, (launch, 0))
            out[key] = (first, n + 1)
        if paths is not None and call.entry in FIRST_CALL_ENTRIES:
            path = (call.entry, tuple(sorted({parts(launch)[0] for launch in launches})), call.starts, call.flags,
                    call.row_repeat, call.width % 16 == 0)
            old = paths.get(path)
            if old is None or (call.rows, call.width) < (old.rows, old.width):
                paths[path] = call
    return out


FIRST_CALL_ENTRIES = ("select", "full", "fused", "scores", "flags")


def first_call(call: Call, index_dtype=torch.int32, device="cuda"):
    """Make ``call`` through the public API on random inputs and return what it returns (``index_dtype``: its row
    bounds' dtype; ``scores``: row ends only; ``flags``: ids from ``-1`` to the last block; ``full`` with ``starts``:
    each row's start half way to its end)."""
    import dsa_lab

    g = torch.Generator(device=device).manual_seed(0)
    r, w, k, bs, rr = call.rows, call.width, call.k, call.block_size, call.row_repeat
    ng = max(1, r // rr)
    ends = torch.randint(0, w + 1, (ng,), device=device, generator=g).to(index_dtype)
    if call.entry == "flags":
        ids = torch.randint(-1, -(-w // bs), (r, k), device=device, generator=g).to(torch.int32)
        return dsa_lab.candidate_flags(ids, w, block_size=bs, row_repeat=rr)
    x = torch.randn((r, w), device=device, generator=g)
    if call.entry == "select":
        return dsa_lab.topk_select(x, k, lengths=ends, row_repeat=rr)
    if call.entry == "scores":
        return dsa_lab.block_scores(x, ends, block_size=bs, row_repeat=rr)
    return dsa_lab.select_candidate_blocks(x, ends, k, row_starts=ends // 2 if call.starts else None, block_size=bs,
                                           row_repeat=rr, with_flags=call.flags,
                                           impl="triton_fused" if call.entry == "fused" else "auto")


def _mock(v):
    return v.dtype if isinstance(v, torch.Tensor) else v  # JITFunction.warmup wraps dtypes into mock tensors


def warm(variant_list, *, threads: int, progress: bool = True) -> list[tuple[str, float]]:
    """Compile every launch of ``variant_list`` (``[(key, launch)]``) for the current GPU into Triton's caches,
    ``threads`` at a time (Triton's asynchronous compile mode: the compiler releases the GIL); returns ``(key,
    seconds until it was done)`` per variant."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    from triton.runtime._async_compile import AsyncCompileMode

    t0 = time.perf_counter()
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(variant_list), unit="kernel", desc="compiling", file=sys.stderr)
    done: list[tuple[str, float]] = []
    with ThreadPoolExecutor(max_workers=max(1, threads)) as ex:
        with AsyncCompileMode(ex) as mode:
            compiled, names = [], {}
            for key, launch in variant_list:
                n0 = len(mode.raw_futures)
                compiled.append(launch.kernel.warmup(*map(_mock, launch.args), grid=launch.grid, **launch.meta))
                for f in mode.raw_futures[n0:]:
                    names[f] = key
            for f in as_completed(list(mode.raw_futures)):
                f.result()
                done.append((names.get(f, "?"), time.perf_counter() - t0))
                if bar is not None:
                    bar.update(1)
        # load each kernel once: that builds its C launcher (a compiler run per signature, cached beside the kernels),
        # which a process's first launch would otherwise pay
        list(ex.map(lambda k: getattr(k, "result", lambda: k)()._init_handles(), compiled))
    if bar is not None:
        bar.close()
    return done


def _triton_key() -> str:
    """Triton's own cache key (a hash of its compiler sources and its C++ library), computed once per process."""
    try:
        from triton.runtime.cache import triton_key
    except ImportError:  # pragma: no cover - older Triton
        from triton.compiler.compiler import triton_key
    return triton_key()


def preload(*, fused: bool = False, threads: int | None = None) -> dict:
    """Prepare this process for first calls at any shape: call it once at startup, after ``dsa-lab warmup``.

    A fresh process pays three costs on its first calls that are not compiling: Triton's own cache key, computed on
    the process's first kernel lookup (a SHA-256 over its compiler sources and its C++ library); per kernel, loading
    its binary and launcher from the cache; and torch's own first launches of the
    operations a call makes around the kernels (the bounds' checks, an aligned copy, zeroed buffers: torch loads a
    kernel's GPU code on its first launch).  This pays all three now: the key, then (on a
    CUDA GPU) every variant of the warm list (:func:`warm_calls`; ``fused``: with the fused arm's) loaded into the
    process, compiled first where the cache lacks it, then one call of every path a public call takes
    (:func:`first_call`, int32 bounds).  Returns ``{"seconds": ..., "variants": ...,
    "first_calls": ...}``; without a CUDA GPU (or under the interpreter) only the key is computed."""
    from ._impl import device_facts, interpreter_active

    t0 = time.perf_counter()
    _triton_key()
    n = calls = 0
    if torch.cuda.is_available() and not interpreter_active():
        paths: dict = {}
        vs = variants(warm_calls(fused=fused), device_facts(torch.cuda.current_device()), paths)
        warm([(key, launch) for key, (launch, _) in vs.items()], threads=threads or os.cpu_count() or 4,
             progress=False)
        n = len(vs)
        for call in paths.values():  # (int32 bounds: the warm list's; int64 bounds are other variants)
            first_call(call)
            calls += 1
        torch.cuda.synchronize()
    return {"seconds": round(time.perf_counter() - t0, 3), "variants": n, "first_calls": calls}
