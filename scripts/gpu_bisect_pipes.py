"""What bounds the bisect select at the widest register tile: Nsight Compute's counters of the product's launch
(evidence for the notes; not product code).

    python3 scripts/gpu_bisect_pipes.py OUT.csv [--cases 640x2048xnormal,640x2048xequal,640x512xnormal,128x2048xnormal]
    python3 scripts/gpu_bisect_pipes.py OUT.csv --parse OUT.ncu.csv     # OUT.csv again from a run's ncu output

Each case is ``ROWSxKxDIST`` over rows of 32768 live columns (one program per row, one row per SM at a time): one
``topk_select`` call (the dispatch's bisect launch), profiled by ``ncu --clock-control none`` (the card's clocks as
found; ``--cache-control none`` keeps the caches warm between its replay passes, as back-to-back calls find them)
with the time, the SM clock, the warp instructions executed (in all and per pipe), each pipe's active cycles,
issue-slot use, active and eligible warps, and the stall reasons per issued instruction.  Writes ``ncu``'s own CSV
(``OUT.ncu.csv``, its counter and launch columns), one row per case and counter to ``OUT.csv`` (``metric``,
``unit``, ``value``; the SM, SMSP and GPU counters and the launch's registers, occupancy limits and waves) and the
run's metadata.  Needs a CUDA GPU and ``ncu`` on the path (``--parse`` needs neither).
"""
import argparse
import csv
import io
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

METRICS = [
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "smsp__inst_executed.sum",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "smsp__warps_active.avg.per_cycle_active",
    "smsp__warps_eligible.avg.per_cycle_active",
    r"regex:^smsp__inst_executed_pipe_[a-z0-9_]+\.sum$",
    r"regex:^sm__pipe_[a-z0-9_]+_cycles_active\.avg\.pct_of_peak_sustained_active$",
    r"regex:^smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio$",
]
LAUNCH = ("launch__registers_per_thread", "launch__occupancy_limit_registers", "launch__occupancy_limit_warps",
          "launch__waves_per_multiprocessor", "launch__grid_size", "launch__block_size")
N = 32768


def cases_of(text):
    """``[(rows, k, dist), ...]`` of ``"ROWSxKxDIST,..."``."""
    out = []
    for c in text.split(","):
        rows, k, dist = c.split("x")
        out.append((int(rows), int(k), dist))
    return out


def kept(name):
    """A counter ``OUT.csv`` keeps: the GPU's, an SM's or an SMSP's, or one of the launch's shape (not the device's
    attributes, which ``ncu`` adds to every raw page)."""
    return name.startswith(("gpu__", "sm__", "smsp__")) or name in LAUNCH


def rows_from_ncu(table, cases, commit):
    """The records of ``ncu --csv --page raw``'s table (a header of names, a row of units, then one row per profiled
    launch, in launch order): one dict per case and kept counter."""
    if len(table) < 3:
        raise ValueError("no profiled launch in the ncu output")
    names, units, launches = table[0], table[1], table[2:]
    if len(launches) != len(cases):
        raise ValueError(f"{len(launches)} profiled launches for {len(cases)} cases")
    out = []
    for (rows, k, dist), vals in zip(cases, launches):
        for name, unit, v in zip(names, units, vals):
            if kept(name):
                out.append(dict(rows=rows, n=N, k=k, dist=dist, metric=name, unit=unit, value=v.replace(",", ""),
                                commit=commit))
    return out


def child(cases):
    """One select call per case (the only launches of the bisect kernel in this process)."""
    import torch

    from dsa_lab.bench.shapes import fill
    from dsa_lab.select import topk_select

    for rows, k, dist in cases:
        g = torch.Generator(device="cuda").manual_seed(rows * 31 + k)
        x = fill(dist, rows, N, gen=g)
        lens = torch.full((rows,), N, dtype=torch.int32, device="cuda")
        topk_select(x, k, lengths=lens, impl="triton")
        torch.cuda.synchronize()
        print(f"case {rows}x{k}x{dist} launched", file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--cases", default="640x2048xnormal,640x2048xequal,640x512xnormal,128x2048xnormal")
    ap.add_argument("--cache-control", default="all", choices=("all", "none"),
                    help="ncu's: all flushes the caches before each replay pass (cold: its default), none keeps them "
                         "(warm, as CUDA-graph replays of one call run)")
    ap.add_argument("--parse", default=None, metavar="NCU_CSV",
                    help="write OUT.csv from this run's ncu output (its cases and commit from OUT.meta.json)")
    ap.add_argument("--child", action="store_true", help="(internal) the profiled process")
    a = ap.parse_args()
    if a.child:
        child(cases_of(a.cases))
        return
    from dsa_lab.bench import data

    if a.parse:
        meta = data.load_meta(data.meta_path(a.out))
        table = list(csv.reader(open(a.parse, newline="")))
    else:
        cmd = ["ncu", "--clock-control", "none", "--cache-control", a.cache_control, "--kernel-name",
               "regex:_bisect_kernel", "--csv", "--page", "raw", "--metrics", ",".join(METRICS), sys.executable,
               os.path.abspath(__file__), "--child", "--cases", a.cases]
        res = subprocess.run(cmd, capture_output=True, text=True)
        sys.stderr.write(res.stderr[-4000:])
        table = list(csv.reader(io.StringIO("\n".join(ln for ln in res.stdout.splitlines() if ln.startswith('"')))))
        # ncu's counters and the launch's shape; not its host or process columns
        keep = [i for i, c in enumerate(table[0] if table else []) if "__" in c or c in ("Kernel Name", "Grid Size",
                                                                                      "Block Size")]
        table = [[r[i] for i in keep] for r in table]
        with open(data.meta_path(a.out)[:-len(".meta.json")] + ".ncu.csv", "w", newline="") as f:
            csv.writer(f).writerows(table)
        meta = data.collect_metadata("python3 scripts/gpu_bisect_pipes.py " + " ".join(sys.argv[1:]),
                                     {"ncu": " ".join(cmd[:11]), "cases": a.cases, "cache_control": a.cache_control,
                                      "ncu_returncode": res.returncode})
        data.save_meta(data.meta_path(a.out), meta)
    cases = cases_of(meta.get("cases", a.cases))
    if os.path.exists(a.out):
        os.remove(a.out)
    for row in rows_from_ncu(table, cases, meta.get("commit")):
        data.append_row(a.out, row)
    t = table[0].index("gpu__time_duration.sum")
    for (rows, k, dist), vals in zip(cases, table[2:]):
        print(f"{rows}x{k}x{dist}: {vals[t]} {table[1][t]}", flush=True)


if __name__ == "__main__":
    main()
