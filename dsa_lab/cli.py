"""The ``dsa-lab`` command.  Each subcommand lives in its own module exposing
``add_arguments(parser)`` and ``run(args) -> int`` (the module docstring's first
line is its help), so new subcommands slot in by name.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

SUBCOMMANDS = {  # name: module
    "warmup": "dsa_lab.warmup",
    "compile-check": "dsa_lab.compile_check",
    "verify": "dsa_lab.bench.verify",
    "sweep": "dsa_lab.bench.sweep",
    "ab": "dsa_lab.bench.ab",
    "coldstart": "dsa_lab.bench.coldstart",
    "report": "dsa_lab.bench.report",
    "workbook": "dsa_lab.workbook.build",
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dsa-lab",
        description="DSA indexer decode-path workbench: verify kernels, sweep and report timings, build the workbook.",
    )
    sub = p.add_subparsers(dest="command", required=True)
    for name, module in SUBCOMMANDS.items():
        mod = importlib.import_module(module)
        doc = (mod.__doc__ or name).strip().splitlines()[0]
        sp = sub.add_parser(name, help=doc, description=mod.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(sp)
        sp.set_defaults(_run=mod.run)
    return p


def main(argv=None) -> int:
    import torch

    argv = sys.argv[1:] if argv is None else list(argv)
    if not torch.cuda.is_available() and argv[:1] not in (["warmup"], ["compile-check"]):
        # No GPU: run the Triton arms through the interpreter (warmup and compile-check compile instead).  Must be set
        # before any kernel module is imported (TRITON_INTERPRET is read when a kernel is decorated).
        os.environ.setdefault("TRITON_INTERPRET", "1")
    args = build_parser().parse_args(argv)
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
