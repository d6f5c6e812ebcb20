"""The ``dsa-lab`` command.  Each subcommand lives in a module exposing ``add_arguments(parser)`` and ``run(args)
-> int`` (the module docstring's first line is its help); ``warmup`` is defined here, over :mod:`dsa_lab.warmup`.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import time

SUBCOMMANDS = {  # name: module (None: defined here)
    "warmup": None,
    "compile-check": "dsa_lab.compile_check",
    "verify": "dsa_lab.bench.verify",
    "sweep": "dsa_lab.bench.sweep",
    "ab": "dsa_lab.bench.ab",
    "coldstart": "dsa_lab.bench.coldstart",
    "report": "dsa_lab.bench.report",
    "workbook": "dsa_lab.workbook.build",
}
COMPILE_ONLY = ("warmup", "compile-check")  # commands that compile for a GPU instead of interpreting


class _Warmup:
    """Compile every kernel variant a device can need into the on-disk cache (``--dry-run``: list them)."""

    @staticmethod
    def add_arguments(p: argparse.ArgumentParser) -> None:
        p.add_argument("--dry-run", action="store_true", help="list the variants, one per line (no GPU needed)")
        p.add_argument("--decode-only", action="store_true", help="only the decode grid's variants")
        p.add_argument("--fused", action="store_true", help="also the triton_fused arm's variants")
        p.add_argument("--verify", action="store_true",
                       help="also the variants of `dsa-lab verify --scale gpu` (the matrix and the fuzz menu)")
        p.add_argument("--threads", type=int, default=os.cpu_count() or 4, help="parallel compile threads")
        p.add_argument("--cache-dir", default=None,
                       help="Triton cache directory (default: $TRITON_CACHE_DIR, else ~/.cache/dsa_lab/triton)")
        p.add_argument("--csv", default=None, help="write each variant's compile-finish time here (+ .meta.json)")

    @staticmethod
    def run(args) -> int:
        import torch

        from . import warmup

        if args.cache_dir:
            os.environ["TRITON_CACHE_DIR"] = args.cache_dir
        calls = warmup.decode_calls() if args.decode_only else warmup.warm_calls(fused=args.fused)
        if args.verify:
            calls = list(dict.fromkeys(calls + warmup.verify_calls()))
        gpu = torch.cuda.is_available() and not args.dry_run
        facts = warmup.H200
        if gpu:
            from ._impl import device_facts

            facts = device_facts(torch.cuda.current_device())
        t0 = time.perf_counter()
        vs = warmup.variants(calls, facts)
        t_list = time.perf_counter() - t0
        if args.dry_run:
            try:
                for key in vs:
                    print(key)
                sys.stdout.flush()
            except BrokenPipeError:  # `dsa-lab warmup --dry-run | head`: the reader has enough
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return 0
            where = ("this GPU" if torch.cuda.is_available() else f"a modelled {facts['name']} (no GPU here)")
            print(f"# {len(vs)} variants for {len(calls)} calls on {where}: {facts['name']}, {facts['sm_count']} SMs; "
                  f"listed in {t_list:.1f} s", file=sys.stderr)
            return 0
        if not gpu:
            print("no CUDA GPU: nothing to compile into the cache (--dry-run lists the variants; "
                  "`dsa-lab compile-check --target` compiles them for a target on the CPU)", file=sys.stderr)
            return 2
        cache = os.environ["TRITON_CACHE_DIR"]  # (set by ``import dsa_lab`` unless the user set it)
        print(f"compiling {len(vs)} variants into {cache} with {args.threads} threads", file=sys.stderr)
        t = time.perf_counter()
        done = warmup.warm([(key, launch) for key, (launch, _) in vs.items()], threads=args.threads)
        print(f"{len(done)} variants in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        if args.csv:
            from .bench import data

            rows = [{"variant": key, "done_s": round(s, 3)} for key, s in done]
            os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
            for r in rows:
                data.append_row(args.csv, r, list(rows[0]))
            data.save_meta(data.meta_path(args.csv), data.collect_metadata(
                "dsa-lab warmup " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["warmup"] else sys.argv[1:]),
                {"variants": len(vs), "calls": len(calls), "threads": args.threads,
                 "seconds": round(time.perf_counter() - t0, 1)}))
        return 0


def _command(name: str):
    return _Warmup if SUBCOMMANDS[name] is None else importlib.import_module(SUBCOMMANDS[name])


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dsa-lab",
        description="DSA indexer decode-path workbench: verify kernels, sweep and report timings, build the workbook.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        mod = _command(name)
        doc = (mod.__doc__ or name).strip().splitlines()[0]
        sp = sub.add_parser(name, help=doc, description=mod.__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(sp)
        sp.set_defaults(_run=mod.run)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] and argv[0] not in COMPILE_ONLY:
        from . import _env

        _env.interpret_without_gpu()  # without a GPU the Triton arms run through the interpreter
    args = build_parser().parse_args(argv)
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
