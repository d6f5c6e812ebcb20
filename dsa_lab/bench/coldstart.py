"""Cold start after ``dsa-lab warmup``: the first call of fresh processes at shapes the warmup never used.

    dsa-lab coldstart OUT.csv [--processes 4] [--shapes 24] [--seed 0] [--preload] [--long]

Each of ``--processes`` fresh Python processes initialises CUDA first (not timed), then makes the first call of
``dsa_lab.topk_select`` / ``dsa_lab.select_candidate_blocks`` at its share of random shapes (:func:`shapes`: rows
1-640, widths, live lengths, k in :data:`KS`; candidate blocks with and without flags), synchronised and wall-timed;
then a second call at the same shape (the steady cost of the call path, host included); then checks the ids
against the exact reference (output poisoned).  ``warmed``: every kernel the call launched is in the warm list
(:mod:`dsa_lab.warmup`); ``first_in_process``: a kernel new to the process.  ``--preload``: each process calls
:func:`dsa_lab.warmup.preload` after CUDA is initialised, as a server would at startup (its time in ``preload_ms``).
``--long``: every shape a ``select`` the long-row select serves (widths 32769-262143, k 257-2048, rows from where
its rule starts: the long-row select's first calls).
Rows go to OUT.csv with the run's metadata beside it; exit status 1 unless every call's ids matched.  Needs a CUDA
GPU and a warmed Triton cache (``TRITON_CACHE_DIR``).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time

KS = (7, 64, 100, 512, 2048)
COLUMNS = ["entry", "rows", "width", "k", "first_call_ms", "second_call_ms", "warmed", "first_in_process", "ok",
           "process", "seed", "preload_ms", "flags"]


def shapes(n: int, seed: int, *, long: bool = False) -> list[dict]:
    """``n`` random shapes, alternately ``select`` and ``full``, none of them a shape of the warm list (whose widths
    are 32768 / 262144 / 1000 / 8000); every fourth ``full`` call from the second asks for flags.  ``long``: every
    shape a ``select`` of k 257-2048 over rows of 32769-262143 columns that the long-row select serves."""
    rng = random.Random(seed)
    out = []
    if long:
        from ..plans import select_algo

        for i in range(n):
            width = rng.randint(32769, 262143)
            # the fewest rows the rule sends there (its long-row bound reads rows and width, not k within 257-2048)
            fewest = next(r for r in range(1, 641) if select_algo(r, width, 2048, 132) == "longrow")
            rows = rng.randint(fewest, 640)
            k = rng.choice([rng.randint(257, 512), rng.randint(513, 2048)])
            out.append({"entry": "select", "rows": rows, "width": width, "k": k, "flags": False})
        return out
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
    """``(call, warm-list Call, x, lengths, out)`` of a shape: random inputs on the GPU seeded by the shape, ``call()``
    the public call into ``out`` (filled with -7)."""
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


def child(spec: dict) -> None:
    """One fresh process: its shapes' first and second calls, one JSON row per call on stdout."""
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
    preload_ms = round(warmup.preload()["seconds"] * 1e3, 1) if spec.get("preload") else None
    seen_kernels: set = set()
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
        row = {**sh, "first_call_ms": round((t1 - t0) * 1e3, 3), "second_call_ms": round((t3 - t2) * 1e3, 3),
               "warmed": keys <= warm, "first_in_process": not names <= seen_kernels, "ok": compare(out, ref)[0] == 0,
               "process": spec["process"], "seed": spec["seed"], "preload_ms": preload_ms}
        seen_kernels |= names
        print(json.dumps(row), flush=True)


def add_arguments(p) -> None:
    p.add_argument("out", help="CSV to write (replaced; its metadata beside it)")
    p.add_argument("--processes", type=int, default=4)
    p.add_argument("--shapes", type=int, default=24)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--preload", action="store_true", help="each process calls dsa_lab.warmup.preload() first")
    p.add_argument("--long", action="store_true", help="long-row select shapes only (the long-row first calls)")


def run(args) -> int:
    import torch

    from . import data

    if not torch.cuda.is_available():
        raise SystemExit("dsa-lab coldstart needs a CUDA GPU")
    root = str(data.repo_root())
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    shs = shapes(args.shapes, args.seed, long=args.long)
    rows = []
    for p in range(args.processes):
        spec = {"shapes": shs[p::args.processes], "seed": args.seed, "process": p, "preload": args.preload}
        r = subprocess.run([sys.executable, "-m", "dsa_lab.bench.coldstart", "--child", json.dumps(spec)],
                           capture_output=True, text=True, env=env)
        if r.returncode:
            print(r.stderr[-3000:], file=sys.stderr)
        rows += [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    if os.path.exists(args.out):
        os.remove(args.out)
    for r in rows:
        data.append_row(args.out, r, COLUMNS)
    cmd = "dsa-lab coldstart " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["coldstart"] else sys.argv[1:])
    meta = data.collect_metadata(cmd, {"cache_dir": os.environ.get("TRITON_CACHE_DIR")})
    data.save_meta(data.meta_path(args.out), meta)
    worst = max((r["first_call_ms"] for r in rows), default=float("nan"))
    print(f"{len(rows)} first calls; worst {worst:.1f} ms; all warmed: {all(r['warmed'] for r in rows)}; "
          f"all ok: {all(r['ok'] for r in rows)}")
    return 0 if rows and all(r["ok"] for r in rows) else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(json.loads(sys.argv[2]))
    else:
        sys.exit(main())
