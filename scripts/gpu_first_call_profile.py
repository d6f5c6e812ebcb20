"""Where a fresh process's first call goes, after its kernels are loaded: the cold-start record's first calls, split.

    python3 scripts/gpu_first_call_profile.py OUT.json [--repeat 3] [--preload all|call]

For each first call of ``scripts/gpu_coldstart.py``'s four processes (seed 0), ``--repeat`` fresh processes each:
initialise CUDA, then ``dsa_lab.warmup.preload()`` (``all``: every warm variant and one call of every path; needs a
warmed cache) or load only that call's variants (``call``: compiled first where the cache lacks them), then make the
call twice.  The first is split into the host's part (until the call returns) and the wait, with the caching
allocator's device allocations counted, and runs under ``cProfile`` in every other process (its 25 most expensive
functions, cumulative); the second is timed whole.  Rows go to OUT (JSON, the run's metadata beside them), rewritten
after each process.  Needs a CUDA GPU.
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))


def child(spec: dict) -> dict:
    import cProfile
    import io
    import pstats

    import torch

    torch.cuda.init()
    torch.empty(1, device="cuda").sum().item()
    from gpu_coldstart import case

    from dsa_lab import warmup
    from dsa_lab._impl import device_facts

    facts = device_facts(torch.cuda.current_device())
    sh = spec["shape"]
    call, call_rec, _, _, _ = case(sh, spec["seed"])  # (the inputs first; the timed call comes after the preload)
    t0 = time.perf_counter()
    if spec["preload"] == "all":
        warmup.preload()
    else:
        warmup._triton_key()
        vs = warmup.variants([call_rec], facts)
        warmup.warm([(key, launch) for key, (launch, _) in vs.items()], threads=4, progress=False)
    preload_s = time.perf_counter() - t0
    torch.cuda.synchronize()
    allocs0 = torch.cuda.memory_stats().get("num_device_alloc", 0)
    prof = cProfile.Profile() if spec["profile"] else None
    t0 = time.perf_counter()
    if prof:
        prof.enable()
    call()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    if prof:
        prof.disable()
    allocs1 = torch.cuda.memory_stats().get("num_device_alloc", 0)
    t3 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    t4 = time.perf_counter()
    top = None
    if prof:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(25)
        top = s.getvalue()
    return {**sh, "process": spec["process"], "repeat": spec["repeat"], "profiled": bool(prof),
            "preload": spec["preload"], "preload_s": round(preload_s, 3),
            "first_ms": round((t2 - t0) * 1e3, 3), "first_host_ms": round((t1 - t0) * 1e3, 3),
            "second_ms": round((t4 - t3) * 1e3, 3), "device_allocs_in_first": allocs1 - allocs0, "profile": top}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--preload", choices=("all", "call"), default="call")
    a = ap.parse_args()
    from gpu_coldstart import shapes

    from dsa_lab.bench import data

    shs = shapes(24, 0)
    firsts = [shs[p::4][0] for p in range(4)]
    rows = []
    for rep in range(a.repeat):
        for p, sh in enumerate(firsts):
            spec = {"shape": sh, "seed": 0, "process": p, "repeat": rep, "preload": a.preload,
                    "profile": (rep + p) % 2 == 1}
            r = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True,
                               text=True, env=dict(os.environ, PYTHONPATH=ROOT))
            if r.returncode:
                print(r.stderr[-3000:], file=sys.stderr)
                continue
            row = json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("{")][-1])
            rows.append(row)
            print(f"p{p} rep{rep} {sh['entry']} {sh['rows']}x{sh['width']} k={sh['k']}: first {row['first_ms']} ms "
                  f"(host {row['first_host_ms']}), second {row['second_ms']}, device allocs {row['device_allocs_in_first']}"
                  f"{' (profiled)' if row['profiled'] else ''}", flush=True)
            with open(a.out, "w") as f:
                json.dump({"meta": data.collect_metadata("python3 scripts/gpu_first_call_profile.py "
                                                         + " ".join(sys.argv[1:])), "rows": rows}, f, indent=1)
    for row in rows:
        if row["profile"]:
            print(f"--- p{row['process']} rep{row['repeat']} first {row['first_ms']} ms (profiled)")
            print("\n".join(row["profile"].splitlines()[:45]))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(json.loads(sys.argv[2]))), flush=True)
    else:
        sys.exit(main())
