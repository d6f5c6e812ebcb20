"""Cold start after ``dsa-lab warmup``: the first call of a fresh process at shapes the warmup never used.

    python3 scripts/gpu_coldstart.py OUT.csv [--processes 4] [--shapes 24] [--seed 0] [--preload]

Each of ``--processes`` fresh Python processes initialises CUDA first (not timed), then makes the first call of
``dsa_lab.topk_select`` / ``dsa_lab.select_candidate_blocks`` at its share of random shapes (rows 1-640, widths,
live lengths, k in {7, 64, 100, 512, 2048}; candidate blocks with and without flags), synchronised and wall-timed; then a second call at the same shape (the
steady cost of the call path, host included); then checks the ids against the exact reference (poisoned output).
``warmed`` says whether every kernel the call launched is in the warmup's list (``dsa_lab.warmup``).
``--preload``: each process calls :func:`dsa_lab.warmup.preload` after CUDA is initialised, as a server would at
startup; its seconds go to ``preload_ms`` (empty without it).  Rows go to
OUT.csv with the run's metadata beside it.  Needs a CUDA GPU and a warmed Triton cache (``TRITON_CACHE_DIR``).
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KS = (7, 64, 100, 512, 2048)
COLUMNS = ["entry", "rows", "width", "k", "first_call_ms", "second_call_ms", "warmed", "first_in_process", "ok",
           "process", "seed", "preload_ms", "flags"]


def shapes(n: int, seed: int) -> list[dict]:
    """Random shapes, none of them a shape of the warmup's list (its widths are 32768 / 262144 / 1000 / 8000)."""
    import random

    rng = random.Random(seed)
    out = []
    for i in range(n):
        entry = ("select", "full")[i % 2]
        rows = rng.randint(1, 640)
        k = KS[i % len(KS)]
        if entry == "select":
            width = rng.choice([rng.randint(2, 4000), rng.randint(4001, 32767)])
        else:
            width = rng.choice([rng.randint(16, 50000), rng.randint(50001, 262143)])
        out.append({"entry": entry, "rows": rows, "width": width, "k": k, "flags": entry == "full" and i % 4 == 1})
    return out


def case(sh: dict, seed: int):
    """``(call, rec_call, x, lens, out)`` for a shape of :func:`shapes`: random inputs on the GPU (seeded by the
    shape), ``call()`` the public call into ``out`` (filled with -7), ``rec_call`` its :class:`dsa_lab.warmup.Call`."""
    import torch

    import dsa_lab
    from dsa_lab import warmup

    g = torch.Generator(device="cuda").manual_seed(seed + sh["rows"] * 131 + sh["width"])
    rows, w, k = sh["rows"], sh["width"], sh["k"]
    x = torch.randn((rows, w), device="cuda", generator=g)
    lens = torch.randint(0, w + 1, (rows,), device="cuda", dtype=torch.int32, generator=g)
    out = torch.full((rows, k), -7, dtype=torch.int32, device="cuda")
    if sh["entry"] == "select":
        def call():
            return dsa_lab.topk_select(x, k, lengths=lens, out=out)
        return call, warmup.Call("select", rows, w, k), x, lens, out

    def call():
        return dsa_lab.select_candidate_blocks(x, lens, k, out=out, with_flags=sh["flags"])
    return call, warmup.Call("full", rows, w, k, flags=sh["flags"]), x, lens, out


def child(spec_json: str) -> None:
    spec = json.loads(spec_json)
    import torch

    torch.cuda.init()
    torch.empty(1, device="cuda").sum().item()  # CUDA initialised before anything is timed
    from dsa_lab import warmup
    from dsa_lab._impl import device_facts
    from dsa_lab.bench.verify import compare
    from dsa_lab.scores import block_scores_torch
    from dsa_lab.select import topk_select_reference

    facts = device_facts(torch.cuda.current_device())
    warm = set(warmup.variants(warmup.warm_calls(), facts))
    preload_ms = None
    if spec.get("preload"):
        preload_ms = round(warmup.preload()["seconds"] * 1e3, 1)
    seen_kernels = set()
    for sh in spec["shapes"]:
        call, rec_call, x, lens, out = case(sh, spec["seed"])
        launches = warmup.record(rec_call, facts)
        keys = {warmup.variant_key(launch) for launch in launches}
        names = {warmup.parts(launch)[0] for launch in launches}
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        call()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        out.fill_(-7)
        t2 = time.perf_counter()
        call()
        torch.cuda.synchronize()
        t3 = time.perf_counter()
        if sh["entry"] == "select":
            ref = topk_select_reference(x, sh["k"], lens, 1)
        else:
            ref = topk_select_reference(block_scores_torch(x, lens, None, 8, 1), sh["k"])
        ok = compare(out, ref)[0] == 0
        row = {**sh, "first_call_ms": round((t1 - t0) * 1e3, 3), "second_call_ms": round((t3 - t2) * 1e3, 3),
               "warmed": keys <= warm, "first_in_process": not names <= seen_kernels, "ok": ok,
               "process": spec["process"], "seed": spec["seed"], "preload_ms": preload_ms}
        seen_kernels |= names
        print(json.dumps(row), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--processes", type=int, default=4)
    ap.add_argument("--shapes", type=int, default=24)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--preload", action="store_true", help="each process calls dsa_lab.warmup.preload() first")
    a = ap.parse_args()
    sys.path.insert(0, ROOT)
    from dsa_lab.bench import data

    shs = shapes(a.shapes, a.seed)
    rows = []
    for p in range(a.processes):
        spec = {"shapes": shs[p::a.processes], "seed": a.seed, "process": p, "preload": a.preload}
        r = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=ROOT))
        if r.returncode:
            print(r.stderr[-3000:], file=sys.stderr)
        rows += [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    if os.path.exists(a.out):
        os.remove(a.out)
    for r in rows:
        data.append_row(a.out, r, COLUMNS)
    cmd = "python3 scripts/gpu_coldstart.py " + " ".join(sys.argv[1:])
    data.save_meta(data.meta_path(a.out), data.collect_metadata(cmd, {"cache_dir": os.environ.get("TRITON_CACHE_DIR")}))
    worst = max((r["first_call_ms"] for r in rows), default=float("nan"))
    print(f"{len(rows)} first calls; worst {worst:.1f} ms; all warmed: {all(r['warmed'] for r in rows)}; "
          f"all ok: {all(r['ok'] for r in rows)}")
    return 0 if rows and all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.path.insert(0, ROOT)
        child(sys.argv[2])
    else:
        sys.exit(main())
