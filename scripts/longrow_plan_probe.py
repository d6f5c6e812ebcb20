"""A probe of the long-row select's plan (evidence, not product): latency by tree and plan variant at k = 2048 (and
512), normal values, on a GPU.

    OUT=DIR [ARMS=torch,old,new,new:nch1024] [SHAPES=1x262144k2048] [TREES=.ab] python scripts/longrow_plan_probe.py
    python scripts/longrow_plan_probe.py --ncu    # one call at 1 x 128K, 1 x 256K, 64 x 256K in a profiler range

An arm is ``torch`` (``torch.topk``), a tree (``new``, ``old``, ``pkg_NAME``: :mod:`dsa_lab.bench.trees`, under
``TREES``) or ``TREE:VARIANT``, the tree's long-row plan with fields replaced (the table ``VARIANTS``).  Each arm is
checked against ``torch.topk`` first (output poisoned, value sets per row), then timed in three interleaved rounds
(CUDA-graph medians).  Writes ``OUT/probe.csv`` as it goes, then times a null chain of three one-program launches
(plain and programmatic dependents).  The records it made are ``data/h100/longrow/ab/probe_*.csv``."""
import csv
import dataclasses
import importlib
import os
import statistics
import sys
import time

import torch
import triton
import triton.language as tl

from dsa_lab.bench.timing import time_fn
from dsa_lab.bench.trees import package

TREES = os.environ.get("TREES", ".ab")
if "--ncu" in sys.argv:
    import dsa_lab

    xs = [torch.randn(r, n, device="cuda") for r, n in ((1, 131072), (1, 262144), (64, 262144))]
    for x in xs:
        for _ in range(3):
            dsa_lab.topk_select(x, 2048)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for x in xs:
        dsa_lab.topk_select(x, 2048)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    sys.exit(0)

OUT = os.environ.get("OUT", "/tmp")
dev = torch.device("cuda")
props = torch.cuda.get_device_properties(0)
SM = props.multi_processor_count
print(props.name, SM, torch.__version__, triton.__version__, os.environ.get("DSA_LAB_COMMIT"), flush=True)

SHAPES = [(1, 131072, 2048), (1, 262144, 2048), (4, 163840, 2048), (8, 262144, 2048), (32, 262144, 2048),
          (64, 262144, 2048), (128, 262144, 2048), (640, 262144, 2048), (64, 65536, 2048), (640, 65536, 2048),
          (1, 262144, 512), (64, 262144, 512)]
only = os.environ.get("SHAPES")
if only:
    SHAPES = [s for s in SHAPES if f"{s[0]}x{s[1]}k{s[2]}" in only.split(",")]
ARMS = os.environ.get("ARMS", "torch,old,new,new:sw4,new:sw16,new:nch1024,new:fw8,new:P7,new:P14").split(",")


def variants(tiles: int, rows: int) -> dict:
    """Plan fields a variant replaces (``P7`` / ``P14`` / ``P32``: that many programs per SM over the rows)."""
    return {"sw4": dict(num_warps=4), "sw16": dict(num_warps=16), "fw8": dict(fin_warps=8), "fw32": dict(fin_warps=32),
            "nch256": dict(NCH=256), "nch512": dict(NCH=512), "nch1024": dict(NCH=1024),
            "nch1024ch4": dict(NCH=1024, CH=4),
            **{f"P{m}": dict(P=max(1, min(tiles, m * SM // rows))) for m in (7, 14, 32)}}


def make(arm, x, k):
    rows, n = x.shape
    out = torch.empty((rows, k), dtype=torch.int32, device=dev)
    if arm == "torch":
        return lambda: torch.topk(x, k, dim=1, sorted=False).indices
    tree, _, var = arm.partition(":")
    pkg = package(tree, TREES)
    plans = importlib.import_module(pkg.__name__ + ".plans")
    launch = importlib.import_module(pkg.__name__ + ".launch.select")
    facts = importlib.import_module(pkg.__name__ + "._impl").facts_for(x)
    pl = plans.select(rows, n, k, facts)
    if var:
        if pl.algo != "longrow":
            raise ValueError(f"{arm}: the rule sends {rows} x {n} to {pl.algo}, not the long-row select")
        pl = dataclasses.replace(pl, **variants(-(-n // pl.TILE), rows)[var])
    return lambda: launch.topk_select(x, k, None, 1, out, plan=pl, facts=facts)


def check(fn, x, k):
    r = fn()
    r.fill_(-7)
    r = fn()
    torch.cuda.synchronize()
    ref = torch.topk(x, k, dim=1).values.sort(1).values
    got = x.gather(1, r.long().clamp(min=0)).sort(1).values
    return int(((got != ref).any(1) | (r < 0).any(1)).sum())


f = open(os.path.join(OUT, "probe.csv"), "w", newline="")
w = csv.writer(f)
w.writerow(["rows", "width", "k", "arm", "median_us", "bad", "vs_torch", "vs_old", "P", "gpu", "commit"])
t0 = time.time()
for rows, n, k in SHAPES:
    g = torch.Generator(device=dev).manual_seed(rows * 7 + n + k)
    x = torch.randn(rows, n, device=dev, generator=g)
    fns, bad = {}, {}
    for a in ARMS:
        try:
            fns[a] = make(a, x, k)
            bad[a] = 0 if a == "torch" else check(fns[a], x, k)
        except Exception as e:  # noqa: BLE001
            print("ERR", a, type(e).__name__, str(e)[:200], flush=True)
    times = {a: [] for a in fns}
    for rnd in range(3):
        order = list(fns) if rnd % 2 == 0 else list(fns)[::-1]
        for a in order:
            times[a].append(time_fn(fns[a]).median_us)
    med = {a: statistics.median(v) for a, v in times.items()}
    line = []
    for a in fns:
        vt = med["torch"] / med[a] if "torch" in med else float("nan")
        vo = med["old"] / med[a] if "old" in med else float("nan")
        w.writerow([rows, n, k, a, f"{med[a]:.2f}", bad[a], f"{vt:.3f}", f"{vo:.3f}", "", props.name,
                    os.environ.get("DSA_LAB_COMMIT")])
        line.append(f"{a}={med[a]:.1f}{'!' if bad[a] else ''}")
    f.flush()
    print(f"{rows:4d}x{n:6d} k{k}: " + " ".join(line), f"[{time.time() - t0:.0f}s]", flush=True)
    del x


# a null chain: one program per launch, a full launch then two PDL dependents (as the select's three)
@triton.jit
def _null(p, WAIT: tl.constexpr, TRIG: tl.constexpr):
    if TRIG:
        tl.extra.cuda.gdc_launch_dependents()
    if WAIT:
        tl.extra.cuda.gdc_wait()
    tl.store(p + tl.program_id(0), tl.load(p + tl.program_id(0)) + 1)


buf = torch.zeros(4096, dtype=torch.int32, device=dev)


def chain(n, grid=1):
    def f():
        _null[(1,)](buf, WAIT=False, TRIG=True, num_warps=4)
        for i in range(n - 1):
            _null[(grid,)](buf, WAIT=True, TRIG=True, num_warps=4, launch_pdl=True)
    return f


def plain(n):
    def f():
        for i in range(n):
            _null[(1,)](buf, WAIT=False, TRIG=False, num_warps=4)
    return f


for name, fn in [("null1", plain(1)), ("null3", plain(3)), ("pdl3", chain(3)), ("pdl3_g256", chain(3, 256))]:
    fn()
    m = statistics.median(time_fn(fn).median_us for _ in range(3))
    print(f"{name}: {m:.2f} us", flush=True)
    w.writerow([0, 0, 0, name, f"{m:.2f}", 0, "", "", "", props.name, os.environ.get("DSA_LAB_COMMIT")])
f.close()
