"""GPU baseline run (lead): environment facts, the exhaustive 2^32 key-order check, CUDA torch.topk
agreement with the contract over the named matrix, and measured ceilings.  Writes under $OUT.

    PYTHONUNBUFFERED=1 PYTHONPATH=. python3 scripts/gpu_baseline.py
"""
import json
import os
import subprocess
import sys
import time
import traceback

import torch

OUT = os.environ.get("OUT", "build/gpu_out")
os.makedirs(OUT, exist_ok=True)


def step(name, fn):
    t0 = time.time()
    print(f"== {name}", flush=True)
    try:
        fn()
        print(f"== {name}: done in {time.time() - t0:.1f}s", flush=True)
    except Exception:
        traceback.print_exc()
        print(f"== {name}: FAILED after {time.time() - t0:.1f}s", flush=True)


def env():
    import triton

    p = torch.cuda.get_device_properties(0)
    print(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem", "--format=csv"],
                         capture_output=True, text=True).stdout)
    print("torch", torch.__version__, "triton", triton.__version__, "sm", p.multi_processor_count, "name", p.name,
          "L2", getattr(p, "L2_cache_size", None), "py", sys.version.split()[0])


def exhaustive():
    from dsa_lab.workbook import proofs

    rec = proofs.exhaustive_key_order_check("cuda", progress=False)
    print(proofs.summarize_record(rec))
    proofs.save_record(rec, os.path.join(OUT, "key_order_exhaustive.json"))


def torch_agreement():
    import argparse

    from dsa_lab.bench import verify

    p = argparse.ArgumentParser()
    verify.add_arguments(p)
    rc = verify.run(p.parse_args(["--arms", "torch", "--scale", "gpu", "--no-progress", "--record", OUT]))
    print("verify torch rc", rc)


def ceilings():
    from dsa_lab.bench import timing as bench

    c = bench.measure_ceilings()
    print(c)
    with open(os.path.join(OUT, "ceilings.json"), "w") as f:
        json.dump(c, f, indent=1, default=str)


if __name__ == "__main__":
    step("env", env)
    step("exhaustive key order", exhaustive)
    step("torch.topk agreement (CUDA)", torch_agreement)
    step("ceilings", ceilings)
