"""Registers, spills and shared memory of the hier kernel compiled for sm_90, default and with dev options.  (No GPU.)

    pip install --target /tmp/t36 --no-deps triton==3.6.0      # the device's triton
    PYTHONPATH=/tmp/t36 python3 scripts/kernel_resources.py [--case select_1 ...] [--option NAME=JSON ...]

Compiles :func:`dsa_lab.select_triton._hier_kernel` at the plans of ``scripts/ptx_identity.py``'s ``CASES`` (select
1 / 640 rows, unfused candidates at 32 rows, fused 1 / 640 rows), once with the default plan and once per option
set (``OPTIONS`` below, or ``--option name='{"filter_cap": 256}'``), and prints what ``cuobjdump
--dump-resource-usage`` (Triton's NVIDIA backend) reports: registers per thread, local-memory (spill) bytes per
thread, static shared memory.  Registers bound how many programs an SM keeps resident (65536 per SM on the H200),
which is what the many-row points are sensitive to; a measurement on the GPU decides, this only predicts.
"""
import argparse
import json
import os
import re
import sys

import triton

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ptx_identity import CASES, compile_hier, cuobjdump, load_tree  # noqa: E402

OPTIONS = {  # name: plan overrides (the eighteenth session's threshold filter, dev, off by default)
    "filter_q4_256": {"filter_cap": 256, "filter_q": 4},
    "filter_q1_512": {"filter_cap": 512, "filter_q": 1},
    "filter_main_128": {"filter_cap_main": 128},
    "filter_q4_256_main_128": {"filter_cap": 256, "filter_q": 4, "filter_cap_main": 128},
}


def resources(cubin: bytes) -> dict:
    out = cuobjdump(cubin, "--dump-resource-usage")
    got = {key: int(v) for key, v in re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", out)}
    return {"regs": got.get("REG"), "stack": got.get("STACK"), "local": got.get("LOCAL"), "shared": got.get("SHARED")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", choices=sorted(CASES), help="plans to compile (default: all)")
    ap.add_argument("--option", action="append", default=[], help="NAME=JSON plan overrides (default: OPTIONS)")
    a = ap.parse_args()
    opts = dict(OPTIONS)
    if a.option:
        opts = {n: json.loads(v) for n, v in (o.split("=", 1) for o in a.option)}
    st = load_tree(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    print(f"triton {triton.__version__}, sm_90; registers / local (spill) bytes / shared bytes per program")
    for case in a.case or list(CASES):
        for name, over in [("default", {})] + list(opts.items()):
            try:
                r = resources(compile_hier(st, case, **over).asm["cubin"])
                print(f"{case:<14} {name:<24} regs {r['regs']:>4}  local {r['local']:>5}  shared {r['shared']:>6}",
                      flush=True)
            except ValueError as e:  # an option the plan refuses at this case (e.g. the main filter when fused)
                print(f"{case:<14} {name:<24} not applicable: {e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
