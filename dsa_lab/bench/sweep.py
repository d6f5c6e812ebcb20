"""Run the decode benchmark sweep (suites select, full, step, producer), appending rows to data/<gpu>/.

Suites
------
* ``select`` and ``full``: the seed's decode grid — concurrency
  {1,2,4,8,16,32,64,128} × next_n 1–5 × context {4096, 16384, 65536, 262144}, ``max_model_len``
  262144, ``block_size`` 8 (32768 blocks per row).  Rows go to ``select_sweep.csv``.

  - stage ``select`` (block scores → ids).  Input: block scores over the padded width as upstream
    produces them (live blocks hold the distribution, the newest block ``+inf``, blocks past the end
    ``-inf``).  Arms: ``torch`` (``torch.topk`` over the padded width + the ``-inf`` → ``-1`` store),
    ``torch_live`` (the same on the host-known live slice ``[:, :max live]``), ``triton``
    (:func:`dsa_lab.topk_select` with device-side lengths).
  - stage ``full`` (logits → scores → ids → flags).  Input: a padded ``[rows, max_model_len]`` logits
    workspace whose live columns hold the distribution and whose tail holds NaN (never to be selected).
    Arms: ``torch`` (upstream: the padded Triton block-scores kernel, ``torch.topk``, store, flags),
    ``torch_live`` (the same on the live slice), ``triton`` (:func:`dsa_lab.select_candidate_blocks` with
    its default dispatch and ``with_flags=True``: bounded scores → select, the hier select kernel writing
    the flags itself, the radix select followed by the flags kernel), ``triton_fused`` (the fused kernel, ``impl="triton_fused"``, flags likewise; only where it
    serves the shape, k <= 256 at block_size 8).

  Default plan: every point at k = 64 on ``normal`` values; k ∈ {512, 2048} and the distributions
  {shifted, equal, nan1pct, ramp} on the subset concurrency {1, 32, 128} × next_n {1, 5} × every
  context (``--grid full`` runs them on the whole grid).
* ``step``: the decode indexer step, stage by stage (logits, sanitize, scores,
  select, flags, candidates, step) over concurrency {1, 8, 32, 128} × next_n {1, 3, 5} × context
  {4096, 16384, 65536, 131072}; arms ``fused`` (this package's step: the producer also writes sanitized logits,
  block scores and zeroed flags, then the select), ``triton`` (the staged composition: producer, bounded sanitize,
  scores + select, flags) and ``torch`` (the upstream composition around the same producer).  Rows go to
  ``step_breakdown.csv``.
* ``producer``: paged MQA logits, Triton vs the torch reference (where it fits in
  memory), achieved read bandwidth against the measured streaming ceiling; bounded vs full-width
  sanitize.  Rows go to ``producer_sweep.csv``.

Every point gets fresh inputs; the Triton arm's ids are checked against the baseline (``torch`` on a
GPU, the exact reference without one) as sets, once per point, before timing; timing is a CUDA graph
(:mod:`dsa_lab.bench`).  Rows are appended one at a time (atomic line appends): an interrupted sweep
keeps every finished row, and a re-run skips recorded points (key: arm, stage, context, concurrency,
next_n, k, dist), so a long sweep can be run in several calls (``--max-seconds``).  ``--plan`` prints
the points that would run.  Each run rewrites ``<csv>.meta.json`` (metadata + measured ceilings) and
keeps a short history of earlier runs in it.

Without a GPU the sweep runs the Triton interpreter at tiny shapes (``max_model_len`` 2048) into
``data/interpreter/``, and every row says ``interpreter (not a performance measurement)``.
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import itertools
import os
import time
import zlib
from pathlib import Path

import torch

from . import timing as bench
from .shapes import fill
from . import data as _data
# --------------------------------------------------------------------------- grids

CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128)
NEXT_N = (1, 2, 3, 4, 5)
CONTEXTS = (4096, 16384, 65536, 262144)
KS = (64, 512, 2048)
from .shapes import DISTS  # noqa: E402  (one list of distributions)
SUBSET_CONCURRENCY = (1, 32, 128)
SUBSET_NEXT_N = (1, 5)
MML = 262144
BLOCK_SIZE = 8

STEP_CONCURRENCY = (1, 8, 32, 128)
STEP_NEXT_N = (1, 3, 5)
STEP_CONTEXTS = (4096, 16384, 65536, 131072)
HEADS, HEAD_DIM, BLOCK_KV = 64, 128, 64

# interpreter (no GPU): tiny shapes, same structure
CPU_MML = 2048
CPU_CONTEXTS = (512, 2048)
CPU_CONCURRENCY = (1, 2)
CPU_NEXT_N = (1, 2)
CPU_KS = (16,)
CPU_STEP_CONTEXTS = (256,)
CPU_HEADS = 32

SUITES = ("select", "full", "step", "producer")
STAGE_ARMS = {
    "select": ("torch", "torch_live", "triton"),
    "full": ("torch", "torch_live", "triton", "triton_fused"),
}
CSV_NAME = {"select": "select_sweep", "full": "select_sweep", "step": "step_breakdown", "producer": "producer_sweep"}
KEY = ("arm", "stage", "context", "concurrency", "next_n", "k", "dist")

SELECT_COLUMNS = [
    "arm", "stage", "context", "concurrency", "next_n", "rows", "k", "dist",
    "median_us", "p10_us", "p90_us", "min_us", "max_us", "samples",
    "bytes", "gbps", "floor_us", "roofline_frac", "max_model_len", "block_size", "live_blocks",
    "check", "timing", "seed", "commit",
]
STEP_COLUMNS = [
    "arm", "stage", "context", "concurrency", "next_n", "rows", "k", "dist",
    "median_us", "p10_us", "p90_us", "min_us", "max_us", "samples",
    "bytes", "gbps", "floor_us", "roofline_frac", "heads", "head_dim", "block_kv", "max_model_len",
    "block_size", "check", "timing", "seed", "commit",
]
PRODUCER_COLUMNS = [
    "arm", "stage", "context", "concurrency", "next_n", "rows", "k", "dist",
    "median_us", "p10_us", "p90_us", "min_us", "max_us", "samples",
    "bytes", "write_bytes", "gbps", "stream_frac", "floor_us", "roofline_frac",
    "heads", "head_dim", "block_kv", "max_model_len", "check", "timing", "seed", "commit",
    "flops", "tflops", "mma_frac",
]
COLUMNS = {"select_sweep": SELECT_COLUMNS, "step_breakdown": STEP_COLUMNS, "producer_sweep": PRODUCER_COLUMNS}


@dataclasses.dataclass(frozen=True)
class Point:
    suite: str
    stage: str  # select/full; "step"/"producer" for those suites (they record several stages per point)
    context: int
    concurrency: int
    next_n: int
    k: int
    dist: str

    @property
    def rows(self) -> int:
        return self.concurrency * self.next_n


def _csv_list(s, cast=str):
    if s is None:
        return None
    return [cast(x) for x in str(s).replace(" ", "").split(",") if x]


def on_gpu() -> bool:
    return torch.cuda.is_available()


def _ensure_interpreter():
    """Without CUDA, kernels need the interpreter (read when a kernel is decorated: set it early)."""
    if not on_gpu():
        os.environ.setdefault("TRITON_INTERPRET", "1")


def arms_for(stage: str, wanted=None) -> list[str]:
    arms = list(STAGE_ARMS.get(stage, ()))
    if wanted:
        arms = [a for a in arms if a in wanted]
    return arms


# --------------------------------------------------------------------------- plan


def build_plan(args) -> list[Point]:
    gpu = on_gpu()
    suites = _csv_list(args.suite) or ["select", "full"]
    for s in suites:
        if s not in SUITES:
            raise SystemExit(f"--suite: unknown suite {s!r} (choose from {', '.join(SUITES)})")
    ks = _csv_list(args.k, int)
    dists = _csv_list(args.dists)
    for d in dists or ():
        if d not in DISTS:
            raise SystemExit(f"--dists: unknown distribution {d!r} (choose from {', '.join(DISTS)})")
    contexts = _csv_list(args.contexts, int)
    conc = _csv_list(args.concurrency, int)
    nn = _csv_list(args.next_n, int)
    points: list[Point] = []
    for suite in suites:
        if suite in ("select", "full"):
            if gpu:
                c_all, b_all, n_all = CONTEXTS, CONCURRENCY, NEXT_N
                b_sub, n_sub = SUBSET_CONCURRENCY, SUBSET_NEXT_N
                k_all = KS
                if args.quick:
                    c_all, b_all, n_all = (4096, 262144), (1, 128), (1, 5)
                    b_sub, n_sub, k_all = (1, 128), (5,), (64, 2048)
            else:
                c_all, b_all, n_all, k_all = CPU_CONTEXTS, CPU_CONCURRENCY, CPU_NEXT_N, CPU_KS
                b_sub, n_sub = (1,), (2,)
                if args.quick:
                    b_all, n_all = (1,), (2,)
            c_all = [c for c in (contexts or c_all)]
            main_k = 64 if gpu else k_all[0]
            d_all = dists or ((DISTS if not args.quick else ("normal", "equal")) if gpu else ("normal",))
            combos = [(k, d) for k in (ks or k_all) for d in d_all
                      # the other k run on normal values, the other distributions at the main k
                      # (both lists given explicitly: their whole cross product)
                      if (ks and dists) or k == main_k or d == "normal"]
            for k, d in combos:
                main = k == main_k and d == "normal"
                full = args.grid == "full" or (args.grid == "auto" and main)
                bs_ = conc or (b_all if full else b_sub)
                ns_ = nn or (n_all if full else n_sub)
                for c, b, n in itertools.product(c_all, bs_, ns_):
                    points.append(Point(suite, suite, c, b, n, k, d))
        else:
            if gpu:
                c_all, b_all, n_all = STEP_CONTEXTS, STEP_CONCURRENCY, STEP_NEXT_N
                if args.quick:
                    c_all, b_all, n_all = (4096, 131072), (1, 128), (1, 5)
            else:
                c_all, b_all, n_all = CPU_STEP_CONTEXTS, (1,), (2,)
            k = (ks or [64 if gpu else CPU_KS[0]])[0]
            for c, b, n in itertools.product(contexts or c_all, conc or b_all, nn or n_all):
                points.append(Point(suite, suite, c, b, n, k, "producer"))
    # dedupe; the main grid (k = 64, normal) of every suite first, so a time-boxed run records it first
    seen, out = set(), []
    for p in points:
        if p not in seen:
            seen.add(p)
            out.append(p)
    main_k = 64 if gpu else CPU_KS[0]
    return sorted(out, key=lambda p: 0 if (p.k == main_k and p.dist in ("normal", "producer")) else 1)


# --------------------------------------------------------------------------- inputs


def make_values(dist: str, rows: int, n: int, gen: torch.Generator, device) -> torch.Tensor:
    """float32 ``[rows, n]`` of ``dist``: :func:`dsa_lab.shapes.fill`, generated on ``gen``'s device."""
    return fill(dist, rows, n, gen=gen, device=device)


def decode_ends(context: int, concurrency: int, next_n: int) -> list[int]:
    """Per-row causal ends (the ``(B,)`` layout of :mod:`dsa_lab.producer`): ``ctx - next_n + n + 1``."""
    return [max(context - next_n + n + 1, 0) for _ in range(concurrency) for n in range(next_n)]


def _gen(seed: int, device) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


# --------------------------------------------------------------------------- arms


def _flags_fn():
    """(name, fn(ids, width) -> flags) — the package's Triton flags when present, else a capturable torch one."""
    from ..flags import candidate_flags

    if on_gpu() or _interp():
        return "triton", lambda ids, width: candidate_flags(ids, width, impl="triton")
    if not on_gpu():
        return "torch", lambda ids, width: candidate_flags(ids, width, impl="torch")

    def scatter_flags(ids, width, bs=BLOCK_SIZE):  # graph-capturable: no boolean indexing
        rows = ids.shape[0]
        nb = -(-width // bs)
        flags = torch.zeros((rows, nb + 2), dtype=torch.uint8, device=ids.device)
        c = ids.to(torch.int64)
        slot = torch.where(c < 0, nb + 1, torch.where(c * bs >= width, nb, c))
        flags.scatter_(1, slot, 1)
        return flags[:, : nb + 1]

    return "torch-scatter", scatter_flags


def _interp() -> bool:
    from .._impl import interpreter_active

    return interpreter_active()


def _padded_scores(logits, ends):
    """Block scores as the upstream kernel computes them (its reads follow the padded width): the torch arms."""
    from ..scores import block_scores

    if on_gpu() or _interp():
        from ..dispatch import block_scores_triton

        return block_scores_triton(logits, ends, None, BLOCK_SIZE, 1, padded=True)
    return block_scores(logits, ends, block_size=BLOCK_SIZE, impl="torch")


def select_stage_inputs(p: Point, mml: int, seed: int, device) -> dict:
    nb = -(-mml // BLOCK_SIZE)
    ends = decode_ends(p.context, p.concurrency, p.next_n)
    live = [min(-(-e // BLOCK_SIZE), nb) for e in ends]
    g = _gen(seed, device)
    sc = make_values(p.dist, p.rows, nb, g, device)
    col = torch.arange(nb, device=device)
    L = torch.tensor(live, dtype=torch.int64, device=device)
    sc.masked_fill_(col[None, :] >= L[:, None], float("-inf"))
    has = L > 0
    sc[torch.arange(p.rows, device=device)[has], (L - 1)[has]] = float("inf")  # newest block pinned
    return {"scores": sc, "lengths": L.to(torch.int32), "live": live, "nblocks": nb}


def full_stage_inputs(p: Point, mml: int, seed: int, device) -> dict:
    ends = decode_ends(p.context, p.concurrency, p.next_n)
    g = _gen(seed, device)
    x = make_values(p.dist, p.rows, mml, g, device)
    col = torch.arange(mml, device=device)
    E = torch.tensor(ends, dtype=torch.int64, device=device)
    x.masked_fill_(col[None, :] >= E[:, None], float("nan"))  # poison past each row's end
    return {"logits": x, "ends": E.to(torch.int32), "ends_list": ends}


@functools.lru_cache(maxsize=None)
def _store_kernel():
    """The upstream store (``_store_candidates_kernel`` shape): one launch turns ``torch.topk``'s
    (values, int64 indices) into int32 ids with ``-1`` where the value is ``-inf``, and fills the
    slots past ``min(k, n)`` with ``-1``.  Defined on first use (``TRITON_INTERPRET`` is read then)."""
    import triton
    import triton.language as tl

    @triton.jit
    def store_candidates(v_ptr, i_ptr, out_ptr, kk, k, KP: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        j = tl.arange(0, KP)
        m = j < kk
        v = tl.load(v_ptr + row * kk + j, mask=m, other=float("-inf"))
        i = tl.load(i_ptr + row * kk + j, mask=m, other=-1)
        ids = tl.where(v != float("-inf"), i, -1).to(tl.int32)
        tl.store(out_ptr + row * k + j, ids, mask=j < k)

    return store_candidates


def torch_topk_store(scores: torch.Tensor, k: int) -> torch.Tensor:
    """The upstream before-path: ``torch.topk`` over ``scores`` (whatever width it has) + one store launch.

    Falls back to :func:`dsa_lab.select.topk_select_torch` (a few elementwise torch ops) where Triton
    cannot run (CPU without the interpreter).
    """
    rows, n = scores.shape
    if not (on_gpu() or _interp()):
        from ..select import topk_select_torch

        return topk_select_torch(scores, k)
    kk = min(k, n)
    vals, idx = torch.topk(scores, kk, dim=1)
    out = torch.empty((rows, k), dtype=torch.int32, device=scores.device)
    kp = 1 << max(int(k) - 1, 1).bit_length()
    _store_kernel()[(rows,)](vals, idx, out, kk, k, KP=kp)
    return out


def select_arm_fn(arm: str, inp: dict, k: int):
    from ..select import topk_select

    sc, lengths = inp["scores"], inp["lengths"]
    if arm == "torch":
        return lambda: torch_topk_store(sc, k)
    if arm == "torch_live":
        lmax = max(max(inp["live"]), 1)
        sl = sc[:, :lmax]
        return lambda: torch_topk_store(sl, k)
    if arm == "triton":
        out = torch.empty((sc.shape[0], k), dtype=torch.int32, device=sc.device)
        return lambda: topk_select(sc, k, lengths=lengths, impl="triton", out=out)
    raise ValueError(arm)


def full_arm_fn(arm: str, inp: dict, k: int, flags_fn):
    """fn() -> (ids, flags) for one arm of the full stage."""
    from ..select import select_candidate_blocks

    x, ends = inp["logits"], inp["ends"]
    width = x.shape[1]
    if arm == "torch":
        def fn():
            ids = torch_topk_store(_padded_scores(x, ends), k)
            return ids, flags_fn(ids, width)
        return fn
    if arm == "torch_live":
        emax = max(max(inp["ends_list"]), 1)
        sl = x[:, :emax]

        def fn():
            ids = torch_topk_store(_padded_scores(sl, ends), k)
            return ids, flags_fn(ids, width)
        return fn
    out = torch.empty((x.shape[0], k), dtype=torch.int32, device=x.device)
    if arm in ("triton", "triton_unfused", "triton_fused"):
        # ids + flags in one call: the hier kernel writes the flags itself (no memset, no flags launch: measured
        # 0.5-0.9 µs faster at 4K), the radix path (and the fused kernel beyond 2 x SM rows) runs the flags kernel
        def fn():
            return select_candidate_blocks(x, ends, k, block_size=BLOCK_SIZE, impl=arm, out=out, with_flags=True)
        return fn
    raise ValueError(arm)


def reference_ids(p: Point, inp: dict) -> torch.Tensor:
    """The exact contract (for checks without a GPU, where torch.topk's tie order is not the contract's)."""
    from ..select import select_candidate_blocks, topk_select

    if p.stage == "select":
        return topk_select(inp["scores"], p.k, lengths=inp["lengths"], impl="reference")
    return select_candidate_blocks(inp["logits"], inp["ends"], p.k, block_size=BLOCK_SIZE, impl="reference")


def mismatched_rows(got: torch.Tensor, ref: torch.Tensor) -> int:
    """Rows whose ids differ as sets (every slot compared): :func:`dsa_lab.verify.compare`."""
    from .verify import compare

    return compare(got, ref)[0]


# --------------------------------------------------------------------------- runner


class Deadline:
    def __init__(self, seconds):
        self.t0 = time.monotonic()
        self.seconds = seconds

    def passed(self) -> bool:
        return self.seconds is not None and time.monotonic() - self.t0 > self.seconds


class Recorder:
    """Appends rows of one CSV and knows which keys it already holds."""

    def __init__(self, path: Path, columns: list[str]):
        self.path = path
        self.columns = columns
        self.keys = {self.key(r) for r in _data.load_rows(path)}
        self.added = 0
        header = _data.read_header(path)
        self.keep = None
        if header and header != columns:
            missing = [c for c in columns if c not in header]
            if missing:
                print(f"note: {path} has an older header; columns {missing} are not written to it")
            self.keep = set(header)

    def add(self, row: dict) -> None:
        if self.keep is not None:
            row = {k: v for k, v in row.items() if k in self.keep}
        _data.append_row(self.path, row, self.columns)
        self.keys.add(self.key(row))
        self.added += 1

    @staticmethod
    def key(r: dict) -> tuple:
        return tuple(str(r.get(c)) for c in KEY)

    def has(self, **kv) -> bool:
        return self.key(kv) in self.keys


def _timed_call(fn):
    """(result, Timing|None): on the CPU the check call itself is the (wall-clock) timing."""
    if on_gpu():
        res = fn()
        torch.cuda.synchronize()
        return res, None
    t0 = time.perf_counter()
    res = fn()
    dt = (time.perf_counter() - t0) * 1e6
    return res, bench.Timing(dt, dt, dt, dt, dt, 1, 1, bench.timing_method())


TIMER = "graph"  # "graph": bench.time_cuda_graph; "triton": triton.testing.do_bench_cudagraph (10 replays)


def _time(fn, pre: bench.Timing | None) -> bench.Timing:
    if pre is not None:
        return pre
    if TIMER == "triton" and on_gpu():
        return bench.time_do_bench_cudagraph(fn)
    return bench.time_fn(fn)


class Sweep:
    def __init__(self, args, ceilings: dict, out_dir: Path, commit: str | None):
        self.args = args
        self.ceilings = ceilings
        self.out_dir = out_dir
        self.commit = (commit or "")[:12] + ("+dirty" if args._dirty else "") if commit else ""
        self.device = torch.device("cuda" if on_gpu() else "cpu")
        self.mml = args.max_model_len or (MML if on_gpu() else CPU_MML)
        self.recorders: dict[str, Recorder] = {}
        self.wanted_arms = _csv_list(args.arms)
        self.errors: list[str] = []
        self.mismatches: list[str] = []
        self.flags_name, self.flags_fn = _flags_fn()
        self.base_seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "little")

    def recorder(self, suite: str) -> Recorder:
        name = CSV_NAME[suite]
        if name not in self.recorders:
            self.recorders[name] = Recorder(self.out_dir / f"{name}.csv", COLUMNS[name])
        return self.recorders[name]

    def seed_for(self, p: Point) -> int:
        h = zlib.crc32(repr((p.stage, p.context, p.concurrency, p.next_n, p.k, p.dist)).encode())
        return (self.base_seed * 1000003 + h) % (2**31)

    def pending_arms(self, p: Point) -> list[str]:
        rec = self.recorder(p.suite)
        if p.suite in ("select", "full"):
            arms = arms_for(p.stage, self.wanted_arms)
            if p.stage == "full" and "triton_fused" in arms:
                from ..dispatch import fusable

                if not fusable(p.k, BLOCK_SIZE):  # the fused kernel does not serve this k (k > 256)
                    arms.remove("triton_fused")
            return [a for a in arms if not rec.has(arm=a, stage=p.stage, context=p.context, concurrency=p.concurrency,
                                                   next_n=p.next_n, k=p.k, dist=p.dist)]
        stages = STEP_STAGES if p.suite == "step" else PRODUCER_STAGES
        todo = []
        for arm, stage in stages:
            if self.wanted_arms and arm not in self.wanted_arms:
                continue
            if not rec.has(arm=arm, stage=stage, context=p.context, concurrency=p.concurrency, next_n=p.next_n,
                           k=p.k, dist=p.dist):
                todo.append(f"{arm}:{stage}")
        return todo

    def base_row(self, p: Point, arm: str, stage: str, t: bench.Timing, nbytes: int, seed: int, check: str,
                 launches: int = 1, flops: float = 0.0) -> dict:
        rf = bench.roofline(nbytes, t.median_us, self.ceilings, launches=launches, flops=flops)
        row = {
            "arm": arm, "stage": stage, "context": p.context, "concurrency": p.concurrency, "next_n": p.next_n,
            "rows": p.rows, "k": p.k, "dist": p.dist,
            **{k: v for k, v in t.as_row().items()},
            "bytes": int(nbytes), "gbps": rf["gbps"], "floor_us": rf["floor_us"], "roofline_frac": rf["roofline_frac"],
            "max_model_len": self.mml, "check": check, "seed": seed, "commit": self.commit,
        }
        return row

    # ---- select / full
    def run_select_full(self, p: Point, arms: list[str], deadline: Deadline) -> None:
        seed = self.seed_for(p)
        rec = self.recorder(p.suite)
        if p.stage == "select":
            inp = select_stage_inputs(p, self.mml, seed, self.device)
            make = lambda a: select_arm_fn(a, inp, p.k)  # noqa: E731
            ids_of = lambda r: r  # noqa: E731
        else:
            inp = full_stage_inputs(p, self.mml, seed, self.device)
            make = lambda a: full_arm_fn(a, inp, p.k, self.flags_fn)  # noqa: E731
            ids_of = lambda r: r[0]  # noqa: E731
        need_check = any(a != "torch" for a in arms)
        baseline = None
        if need_check:
            if on_gpu():
                baseline = ids_of(make("torch")()).clone()
                torch.cuda.synchronize()
            else:
                baseline = reference_ids(p, inp)
        nb = -(-self.mml // BLOCK_SIZE)
        for arm in arms:
            if deadline.passed():
                return
            try:
                fn = make(arm)
                res, pre = _timed_call(fn)
                check = "baseline" if arm == "torch" and on_gpu() else ""
                if baseline is not None and check != "baseline":
                    bad = mismatched_rows(ids_of(res), baseline)
                    check = "ok" if bad == 0 else f"mismatch:{bad}/{p.rows}"
                    if bad and arm.startswith("torch") and not on_gpu():
                        # CPU torch.topk's tie order is not the contract's (ties to the smaller index):
                        # reported, not a failure
                        check = f"cpu-topk-ties:{bad}/{p.rows}"
                    elif bad:
                        self.mismatches.append(f"{arm} {p}: {bad} rows differ")
                t = _time(fn, pre)
            except torch.cuda.OutOfMemoryError as e:  # pragma: no cover - GPU only
                torch.cuda.empty_cache()
                self.errors.append(f"{arm} {p}: out of memory ({e})")
                continue
            except Exception as e:  # noqa: BLE001 - record and continue with the next arm
                self.errors.append(f"{arm} {p}: {type(e).__name__}: {e}")
                continue
            if p.stage == "select":
                nbytes = bench.select_bytes(arm, inp["live"], nb, p.k)
                extra = {"live_blocks": max(inp["live"])}
            else:
                nbytes = bench.full_bytes(arm, inp["ends_list"], self.mml, BLOCK_SIZE, p.k)
                extra = {"live_blocks": -(-max(inp["ends_list"]) // BLOCK_SIZE)}
            row = self.base_row(p, arm, p.stage, t, nbytes, seed, check)
            row.update(extra, block_size=BLOCK_SIZE)
            rec.add(row)
        del inp

    # ---- step / producer
    def run_step_producer(self, p: Point, todo: list[str], deadline: Deadline) -> None:
        from .. import producer
        from ..paged import random_decode_problem

        seed = self.seed_for(p)
        rec = self.recorder(p.suite)
        heads = self.args.heads or (HEADS if on_gpu() else CPU_HEADS)
        prob = random_decode_problem(p.concurrency, p.next_n, p.context, num_heads=heads, head_dim=HEAD_DIM,
                                     block_kv=self.args.block_kv, max_model_len=self.mml, device=self.device,
                                     seed=seed)
        q, kv, w, ctx, bt = prob["q_fp8"], prob["kv_cache"], prob["weights"], prob["context_lens"], prob["block_table"]
        ends = producer.decode_row_ends(ctx, p.next_n)
        ends_list = [int(e) for e in ends.tolist()]
        logits = torch.full((p.rows, self.mml), float("nan"), device=self.device)

        def logits_triton():
            return producer.paged_mqa_logits(q, kv, w, ctx, bt, self.mml, impl="triton", out=logits)

        common = {"heads": heads, "head_dim": HEAD_DIM, "block_kv": self.args.block_kv}
        pbd = producer.producer_bytes(prob["seq_lens"], p.next_n, heads, HEAD_DIM, block_kv=self.args.block_kv,
                                      max_model_len=self.mml)  # keys + scales once per sequence, q, weights, table
        pb = {"read": pbd["read"], "write": pbd["out"]}
        # the fp8 MMA work of the Triton producer: every key of a sequence against each of its rows' H heads
        mma_flops = producer.producer_flops(prob["seq_lens"], p.next_n, heads, HEAD_DIM, max_model_len=self.mml)
        logits_triton()
        if on_gpu():
            torch.cuda.synchronize()
        k = p.k
        from ..select import select_candidate_blocks, topk_select
        from ..scores import block_scores

        live = [-(-e // BLOCK_SIZE) for e in ends_list]
        nb = -(-self.mml // BLOCK_SIZE)
        live_t = torch.tensor(live, dtype=torch.int32, device=self.device)
        flags_fn = self.flags_fn
        sel_out = torch.empty((p.rows, k), dtype=torch.int32, device=self.device)
        scores_b = block_scores(logits, ends, block_size=BLOCK_SIZE, impl="triton")
        scores_p = _padded_scores(logits, ends)
        ids_t = topk_select(scores_b, k, lengths=live_t, impl="triton")
        ids_u = torch_topk_store(scores_p, k)
        mm = mismatched_rows(ids_t, ids_u) if on_gpu() else mismatched_rows(
            ids_t, reference_ids(Point("full", "full", 0, 0, 0, k, ""), {"logits": logits, "ends": ends}))
        check = "ok" if mm == 0 else f"mismatch:{mm}/{p.rows}"
        if mm:
            self.mismatches.append(f"step {p}: {mm} rows differ")
        logits_bytes = pb["read"] + pb["write"]
        sel_bytes = lambda arm: bench.select_bytes(arm, live, nb, k)  # noqa: E731
        flag_bytes = p.rows * k * 4 + p.rows * (nb + 1)
        win = sum(min(e, self.mml) for e in ends_list) * 4

        def step_triton():
            logits_triton()
            producer.sanitize_decode_logits(logits, ends)
            return select_candidate_blocks(logits, ends, k, block_size=BLOCK_SIZE, impl="triton", out=sel_out,
                                           with_flags=True)[1]

        # the fused composition (the default DecodeStep): the producer also writes sanitized logits, the block
        # scores and zeroed flags; the select reads the scores.  Its own buffers: nothing to restore.
        fstep, f_check = None, ""
        if p.suite == "step":
            fstep = producer.DecodeStep(q, kv, w, ctx, bt, self.mml, topk_blocks=k, block_size=BLOCK_SIZE,
                                        impl="triton")
            fstep.run()
            f_ids = fstep.candidates.clone()
            f_ref = torch_topk_store(_padded_scores(fstep.logits, ends), k) if on_gpu() else reference_ids(
                Point("full", "full", 0, 0, 0, k, ""), {"logits": fstep.logits, "ends": ends})
            fm = mismatched_rows(f_ids, f_ref)
            f_flags_ok = torch.equal(fstep.flags, flags_fn(f_ids, self.mml))
            f_check = "ok" if fm == 0 and f_flags_ok else f"mismatch:{fm}/{p.rows}" + ("" if f_flags_ok else ",flags")
            if f_check != "ok":
                self.mismatches.append(f"fused step {p}: {f_check}")

        def fused_step():
            fstep.stage_logits()
            fstep.stage_candidates()

        def step_torch():
            logits_triton()
            torch.nan_to_num_(logits, nan=float("-inf"))
            ids = torch_topk_store(_padded_scores(logits, ends), k)
            return flags_fn(ids, self.mml)

        if p.suite == "step":
            fns = {
                ("triton", "logits"): (logits_triton, logits_bytes),
                ("triton", "sanitize"): (lambda: producer.sanitize_decode_logits(logits, ends), 2 * win),
                ("triton", "scores"): (lambda: block_scores(logits, ends, block_size=BLOCK_SIZE, impl="triton"),
                                       win + p.rows * nb * 4),  # every slot written (-inf past the extent)
                ("triton", "select"): (lambda: topk_select(scores_b, k, lengths=live_t, impl="triton", out=sel_out),
                                       sel_bytes("triton")),
                ("triton", "flags"): (lambda: flags_fn(ids_t, self.mml), flag_bytes),
                ("triton", "candidates"): (lambda: select_candidate_blocks(
                    logits, ends, k, block_size=BLOCK_SIZE, impl="triton", out=sel_out, with_flags=True)[1],
                    bench.full_bytes("triton", ends_list, self.mml, BLOCK_SIZE, k)),
                ("triton", "step"): (step_triton, logits_bytes + 2 * win
                                     + bench.full_bytes("triton", ends_list, self.mml, BLOCK_SIZE, k)),
                ("fused", "logits"): (fstep.stage_logits, logits_bytes + win // BLOCK_SIZE + p.rows * (nb + 1)),
                ("fused", "candidates"): (fstep.stage_candidates, sel_bytes("triton") + p.rows * k),
                ("fused", "step"): (fused_step, logits_bytes + win // BLOCK_SIZE + p.rows * (nb + 1)
                                    + sel_bytes("triton") + p.rows * k),
                ("torch", "sanitize"): (lambda: torch.nan_to_num_(logits, nan=float("-inf")),
                                        2 * p.rows * self.mml * 4),
                ("torch", "scores"): (lambda: _padded_scores(logits, ends),
                                      p.rows * self.mml * 4 + p.rows * nb * 4),
                ("torch", "select"): (lambda: torch_topk_store(scores_p, k), sel_bytes("torch")),
                ("torch", "flags"): (lambda: flags_fn(ids_u, self.mml), flag_bytes),
                ("torch", "step"): (step_torch, logits_bytes + 2 * p.rows * self.mml * 4
                                    + bench.full_bytes("torch", ends_list, self.mml, BLOCK_SIZE, k)),
            }
        else:
            fns = {
                ("triton", "logits"): (logits_triton, pb["read"]),
                ("bounded", "sanitize"): (lambda: producer.sanitize_decode_logits(logits, ends), 2 * win),
                ("full_width", "sanitize"): (lambda: torch.nan_to_num_(logits, nan=float("-inf")),
                                             2 * p.rows * self.mml * 4),
            }
            if _torch_producer_fits(p, heads, self.device):
                ref_out = torch.empty_like(logits)
                fns[("torch", "logits")] = (
                    lambda: producer.paged_mqa_logits(q, kv, w, ctx, bt, self.mml, impl="torch", out=ref_out),
                    pb["read"])
        for (arm, stage), (fn, nbytes) in fns.items():
            if f"{arm}:{stage}" not in todo:
                continue
            if deadline.passed():
                return
            row_check = (f_check if arm == "fused" else check) if p.suite == "step" else ""
            try:
                if p.suite == "producer" and arm == "torch":
                    res, pre = _timed_call(fn)
                    row_check = _rel_err(res, logits, ends_list)
                    t = pre if pre is not None else _time_eager(fn)
                else:
                    res, pre = _timed_call(fn)
                    t = _time(fn, pre)
            except torch.cuda.OutOfMemoryError as e:  # pragma: no cover - GPU only
                torch.cuda.empty_cache()
                self.errors.append(f"{arm}:{stage} {p}: out of memory ({e})")
                continue
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"{arm}:{stage} {p}: {type(e).__name__}: {e}")
                continue
            launches = 2 if stage == "step" else 1
            flops = mma_flops if (p.suite == "producer" and stage == "logits" and arm == "triton") else 0
            row = self.base_row(p, arm, stage, t, nbytes, seed, row_check, launches=launches, flops=flops)
            row.update(common)
            if p.suite == "step":
                row["block_size"] = BLOCK_SIZE
            else:
                row["write_bytes"] = pb["write"] if stage == "logits" else 0
                row["flops"] = flops
                peak = float(self.ceilings.get("fp8_tflops") or 0)
                row["tflops"] = flops / (t.median_us * 1e6) if flops and t.median_us > 0 else None
                row["mma_frac"] = row["tflops"] / peak if row["tflops"] and peak else None
                bw = float(self.ceilings.get("stream_gbps") or 0)
                row["stream_frac"] = row["gbps"] / bw if bw else None
            rec.add(row)
            # the step functions sanitize in place; restore real logits for the next stage
            if stage in ("sanitize", "step"):
                logits_triton()


STEP_STAGES = [
    ("triton", "logits"), ("triton", "sanitize"), ("triton", "scores"), ("triton", "select"), ("triton", "flags"),
    ("triton", "candidates"), ("triton", "step"), ("fused", "logits"), ("fused", "candidates"), ("fused", "step"),
    ("torch", "sanitize"), ("torch", "scores"), ("torch", "select"), ("torch", "flags"), ("torch", "step"),
]
PRODUCER_STAGES = [("triton", "logits"), ("torch", "logits"), ("bounded", "sanitize"), ("full_width", "sanitize")]


def _torch_producer_fits(p: Point, heads: int, device) -> bool:
    """The torch reference is chunked over tokens (bounded temporaries); on the CPU keep it small."""
    if device.type == "cuda":
        return True
    return p.concurrency * p.next_n * heads * p.context < 2**24


def _time_eager(fn, reps: int = 5) -> bench.Timing:
    """CUDA events around eager calls (for the torch producer reference: too big to capture usefully)."""
    fn()
    torch.cuda.synchronize()
    xs = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        xs.append(s.elapsed_time(e) * 1e3)
    t = bench._summarize(xs, 1, "cuda events (eager)")
    return t


def _rel_err(ref_out, tri_out, ends_list) -> str:
    """max |tri - ref| / max |ref| over every row's window (the producer's accuracy, recorded)."""
    worst, scale = 0.0, 0.0
    for r, e in enumerate(ends_list):
        if e <= 0:
            continue
        a, b = ref_out[r, :e], tri_out[r, :e]
        worst = max(worst, float((a - b).abs().max()))
        scale = max(scale, float(a.abs().max()))
    return f"rel_err={worst / scale:.2e}" if scale else "rel_err=0"


# --------------------------------------------------------------------------- CLI


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", default="select,full",
                   help="comma list of suites: select, full, step, producer (default select,full)")
    p.add_argument("--out", default=None, help="output folder (default data/<gpu slug>/, or data/interpreter/ without a GPU)")
    p.add_argument("--k", default=None, help="comma list of k (default 64 on the whole grid + 512, 2048 on the subset)")
    p.add_argument("--dists", default=None, help=f"comma list of distributions from {', '.join(DISTS)}")
    p.add_argument("--arms", default=None, help="comma list of arms (torch, torch_live, triton, triton_unfused; "
                                                "step: fused, triton, torch; producer: triton, torch, bounded, full_width)")
    p.add_argument("--contexts", default=None, help="comma list of contexts (tokens)")
    p.add_argument("--concurrency", default=None, help="comma list of concurrencies")
    p.add_argument("--next-n", dest="next_n", default=None, help="comma list of next_n")
    p.add_argument("--grid", choices=("auto", "full", "subset"), default="auto",
                   help="auto: whole grid for k=64 normal, subset (conc {1,32,128} x next_n {1,5}) for the rest")
    p.add_argument("--quick", action="store_true", help="a small subset (smoke run)")
    p.add_argument("--plan", action="store_true", help="print how many points/rows would run, then exit")
    p.add_argument("--max-seconds", type=float, default=None, help="stop cleanly after this long (rows written are kept)")
    p.add_argument("--max-model-len", type=int, default=None, help="workspace width (default 262144; 2048 without a GPU)")
    p.add_argument("--heads", type=int, default=None, help="indexer heads for step/producer (default 64; 32 without a GPU)")
    p.add_argument("--block-kv", type=int, default=BLOCK_KV, help="tokens per KV-cache block (default 64)")
    p.add_argument("--timer", choices=("graph", "triton"), default="graph",
                   help="graph: this package's CUDA-graph replay timing (default); triton: "
                        "triton.testing.do_bench_cudagraph (for a cross-check)")
    p.add_argument("--seed", type=int, default=None, help="base seed (default: fresh each run; recorded per row)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def command_line(args) -> str:
    """The command as a user would type it, rebuilt from the parsed arguments (non-defaults only)."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    defaults = vars(parser.parse_args([]))
    parts = ["dsa-lab", "sweep"]
    for a in parser._actions:
        if not a.option_strings or a.dest == "help":
            continue
        v = getattr(args, a.dest, None)
        if v == defaults.get(a.dest):
            continue
        flag = a.option_strings[-1]
        parts += [flag] if v is True else [flag, str(v)]
    return " ".join(parts)


def default_out_dir() -> Path:
    if on_gpu():
        return _data.data_root() / _data.gpu_slug(torch.cuda.get_device_name())
    return _data.data_root() / "interpreter"


def _plan_summary(sw_pending: list[tuple[Point, list[str]]]) -> str:
    from collections import Counter

    c = Counter()
    for p, arms in sw_pending:
        for a in arms:
            c[(p.suite, a)] += 1
    lines = [f"  {suite:<9} {arm:<22} {n:>5} rows" for (suite, arm), n in sorted(c.items())]
    return "\n".join(lines)


def run(args) -> int:
    global TIMER
    _ensure_interpreter()
    TIMER = getattr(args, "timer", "graph")
    t_start = time.monotonic()
    gpu = on_gpu()
    out_dir = Path(args.out) if args.out else default_out_dir()
    plan = build_plan(args)
    git = _data._git_facts()
    args._dirty = bool(git.get("dirty"))
    if not gpu:
        print(f"No CUDA device: running the Triton interpreter at tiny shapes -> {out_dir}\n"
              f"  every row is labelled '{bench.INTERPRETER_LABEL}'")
    # pending work (resume): never redo a recorded key
    sw = Sweep(args, {}, out_dir, git.get("commit"))
    pending = [(p, sw.pending_arms(p)) for p in plan]
    pending = [(p, a) for p, a in pending if a]
    total_rows = sum(len(a) for _, a in pending)
    if args.plan:
        print(f"plan: {len(plan)} points, {len(pending)} with work left, {total_rows} rows to measure -> {out_dir}")
        print(_plan_summary(pending))
        return 0
    if not pending:
        print(f"nothing to do: all {len(plan)} points are recorded in {out_dir}")
        return 0
    print(f"measuring ceilings ({bench.timing_method()}) ...", flush=True)
    sw.ceilings = bench.measure_ceilings()
    if any(p.suite == "producer" for p, _ in pending):
        sw.ceilings.update(bench.measure_fp8_mma_peak())
    print(f"  stream {sw.ceilings['stream_gbps']:.0f} GB/s, one launch {sw.ceilings['launch_us']:.2f} us, "
          f"two launches {sw.ceilings['two_launch_us']:.2f} us"
          + (f", fp8 MMA {sw.ceilings['fp8_tflops']:.0f} Tflop/s ({sw.ceilings['fp8_method']})"
             if sw.ceilings.get("fp8_tflops") else ""), flush=True)
    remaining = None if args.max_seconds is None else max(args.max_seconds - (time.monotonic() - t_start), 0.0)
    deadline = Deadline(remaining)
    command = command_line(args)
    # metadata first (a killed run still leaves its facts beside its rows)
    suites_touched = sorted({CSV_NAME[p.suite] for p, _ in pending})
    for name in suites_touched:
        _write_meta(out_dir, name, command, sw, plan, status="running")
    try:
        from tqdm import tqdm

        bar = tqdm(total=total_rows, disable=args.no_progress, unit="row", dynamic_ncols=True)
    except ImportError:  # pragma: no cover
        bar = None
    stopped = False
    for p, arms in pending:
        if deadline.passed():
            stopped = True
            break
        if bar is not None:
            bar.set_description(f"{p.stage} ctx{p.context} b{p.concurrency} n{p.next_n} k{p.k} {p.dist}")
        before = sum(r.added for r in sw.recorders.values())
        try:
            if p.suite in ("select", "full"):
                sw.run_select_full(p, arms, deadline)
            else:
                sw.run_step_producer(p, arms, deadline)
        except torch.cuda.OutOfMemoryError as e:  # pragma: no cover
            torch.cuda.empty_cache()
            sw.errors.append(f"{p}: out of memory building inputs ({e})")
        except Exception as e:  # noqa: BLE001
            sw.errors.append(f"{p}: {type(e).__name__}: {e}")
        if gpu:
            torch.cuda.empty_cache()
        if bar is not None:
            bar.update(len(arms))
        after = sum(r.added for r in sw.recorders.values())
        if deadline.passed() and after - before < len(arms):
            stopped = True
            break
    if bar is not None:
        bar.close()
    added = sum(r.added for r in sw.recorders.values())
    for name in suites_touched:
        _write_meta(out_dir, name, command, sw, plan, status="stopped (--max-seconds)" if stopped else "complete",
                    added=sw.recorders[name].added if name in sw.recorders else 0)
    elapsed = time.monotonic() - t_start
    print(f"{added} rows written to {out_dir} in {elapsed:.0f} s"
          + ("; stopped at --max-seconds: run the same command again to resume" if stopped else ""))
    if not gpu:
        print(f"(all rows: {bench.INTERPRETER_LABEL})")
    for m in sw.mismatches:
        print("MISMATCH", m)
    for e in sw.errors[:20]:
        print("ERROR", e)
    if len(sw.errors) > 20:
        print(f"... and {len(sw.errors) - 20} more errors")
    return 1 if (sw.errors or sw.mismatches) else 0


def _write_meta(out_dir: Path, name: str, command: str, sw: Sweep, plan, *, status: str, added: int = 0) -> None:
    path = out_dir / f"{name}.meta.json"
    old = _data.load_meta(path)
    history = list(old.get("runs", []))
    meta = _data.collect_metadata(command, {
        "ceilings": sw.ceilings,
        "timing": bench.timing_method(),
        "performance_measurement": on_gpu(),
        "max_model_len": sw.mml,
        "block_size": BLOCK_SIZE,
        "flags_impl": sw.flags_name,
        "arms_available": {s: arms_for(s) for s in ("select", "full")},
        "base_seed": sw.base_seed,
        "planned_points": sum(1 for p in plan if CSV_NAME[p.suite] == name),
        "status": status,
        "rows_added_this_run": added,
    })
    if not on_gpu():
        meta["label"] = bench.INTERPRETER_LABEL
    if status != "running":
        # a short history of runs: the CSV may hold rows of several runs (and commits: see its commit column)
        history.append({k: meta.get(k) for k in ("date_utc", "commit", "dirty", "command", "status",
                                                  "rows_added_this_run")})
    meta["runs"] = history[-50:]
    _data.save_meta(path, meta)
