"""The ``dsa-lab sweep`` command line: its arguments, the plan printout, and the run loop."""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch

from .. import data as _data
from .. import timing as bench
from ..shapes import DISTS
from .plan import BLOCK_KV, CSV_NAME, Point, build_plan, on_gpu
from .record import write_meta
from .runner import Deadline, Sweep


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``dsa-lab sweep``'s options: suites, grid filters, output, time box, timer, seed."""
    p.add_argument("--suite", default="select,full",
                   help="comma list of suites: select, full, step, producer (default select,full)")
    p.add_argument("--out", default=None,
                   help="output folder (default data/<gpu slug>/, or data/interpreter/ without a GPU)")
    p.add_argument("--k", default=None, help="comma list of k (default 64 on the whole grid + 512, 2048 on the subset)")
    p.add_argument("--dists", default=None, help=f"comma list of distributions from {', '.join(DISTS)}")
    p.add_argument("--arms", default=None,
                   help="comma list of arms (torch, torch_live, triton, triton_unfused; "
                        "step: fused, triton, torch; producer: triton, torch, bounded, full_width)")
    p.add_argument("--contexts", default=None, help="comma list of contexts (tokens)")
    p.add_argument("--concurrency", default=None, help="comma list of concurrencies")
    p.add_argument("--next-n", dest="next_n", default=None, help="comma list of next_n")
    p.add_argument("--grid", choices=("auto", "full", "subset"), default="auto",
                   help="auto: whole grid for k=64 normal, subset (conc {1,32,128} x next_n {1,5}) for the rest")
    p.add_argument("--quick", action="store_true", help="a small subset (smoke run)")
    p.add_argument("--plan", action="store_true", help="print how many points/rows would run, then exit")
    p.add_argument("--max-seconds", type=float, default=None,
                   help="stop cleanly after this long (rows written are kept)")
    p.add_argument("--max-model-len", type=int, default=None,
                   help="workspace width (default 262144; 2048 without a GPU)")
    p.add_argument("--heads", type=int, default=None,
                   help="indexer heads for step/producer (default 64; 32 without a GPU)")
    p.add_argument("--block-kv", type=int, default=BLOCK_KV, help="tokens per KV-cache block (default 64)")
    p.add_argument("--block-size", type=int, default=None,
                   help="the step suite's candidate block size (default 8; 1: DeepSeek V3.2's top-k of tokens)")
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
    """``data/<gpu slug>/`` on a GPU, ``data/interpreter/`` without one."""
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
    """``dsa-lab sweep``: plan, skip what is recorded, measure the ceilings, run the points; 1 on any error or
    mismatch."""
    if not on_gpu():  # the kernels need the interpreter, read when a kernel is decorated: set it early
        os.environ.setdefault("TRITON_INTERPRET", "1")
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
        write_meta(out_dir, name, command, sw, plan, status="running")
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
        write_meta(out_dir, name, command, sw, plan, status="stopped (--max-seconds)" if stopped else "complete",
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
