"""The sweep's plan: its grids, the columns it records, and the points (:class:`Point`) a command line asks for.

:func:`build_plan` turns the parsed arguments into points, the main grid (k = 64, normal values) first so a
time-boxed run records it first; without a GPU the same structure runs at interpreter-sized shapes.
"""
from __future__ import annotations

import dataclasses
import itertools

import torch

from ..shapes import DISTS  # one list of distributions

CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128)
NEXT_N = (1, 2, 3, 4, 5)
CONTEXTS = (4096, 16384, 65536, 262144)
KS = (64, 512, 2048)
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
KEY = ("arm", "stage", "context", "concurrency", "next_n", "k", "dist", "block_size")  # producer rows: no block size

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
    """One point of the plan: ``stage`` of ``suite`` at a context, concurrency, next_n, k and value law; the block
    size of its candidates (the step suite's may differ: ``--block-size 1`` is DeepSeek V3.2's top-k of tokens;
    None for the producer suite, which selects nothing)."""

    suite: str
    stage: str  # select/full; "step"/"producer" for those suites (they record several stages per point)
    context: int
    concurrency: int
    next_n: int
    k: int
    dist: str
    block_size: int | None = BLOCK_SIZE

    @property
    def rows(self) -> int:
        return self.concurrency * self.next_n


def csv_list(s, cast=str):
    """A comma list from the command line (``"1, 2"`` -> ``[1, 2]``); None stays None."""
    if s is None:
        return None
    return [cast(x) for x in str(s).replace(" ", "").split(",") if x]


def on_gpu() -> bool:
    """Whether a CUDA GPU runs the sweep (else the interpreter at tiny shapes)."""
    return torch.cuda.is_available()


def arms_for(stage: str, wanted=None) -> list[str]:
    """The arms of ``stage`` (select / full), filtered by ``wanted`` when given."""
    arms = list(STAGE_ARMS.get(stage, ()))
    if wanted:
        arms = [a for a in arms if a in wanted]
    return arms



def build_plan(args) -> list[Point]:
    """The points the parsed arguments ask for, deduplicated, the main grid (main k, normal values) first."""
    gpu = on_gpu()
    suites = csv_list(args.suite) or ["select", "full"]
    for s in suites:
        if s not in SUITES:
            raise SystemExit(f"--suite: unknown suite {s!r} (choose from {', '.join(SUITES)})")
    ks = csv_list(args.k, int)
    dists = csv_list(args.dists)
    for d in dists or ():
        if d not in DISTS:
            raise SystemExit(f"--dists: unknown distribution {d!r} (choose from {', '.join(DISTS)})")
    contexts = csv_list(args.contexts, int)
    conc = csv_list(args.concurrency, int)
    nn = csv_list(args.next_n, int)
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
            bs = getattr(args, "block_size", None) or BLOCK_SIZE
            for c, b, n in itertools.product(contexts or c_all, conc or b_all, nn or n_all):
                points.append(Point(suite, suite, c, b, n, k, "producer", bs if suite == "step" else None))
    # dedupe; the main grid (k = 64, normal) of every suite first, so a time-boxed run records it first
    seen, out = set(), []
    for p in points:
        if p not in seen:
            seen.add(p)
            out.append(p)
    main_k = 64 if gpu else CPU_KS[0]
    return sorted(out, key=lambda p: 0 if (p.k == main_k and p.dist in ("normal", "producer")) else 1)


