"""Merge ``dsa-lab sweep`` runs into ``data/<gpu>/select_sweep.csv``, keeping an older record's rows where the runs
did not replace them.

    python -m dsa_lab.bench.merge [--note TEXT] [--arms A,B] [--name NAME] OLD_CSV OUT_DIR RUN_DIR[:stage] ...

``--name``: the record merged (default ``select_sweep``; ``producer_sweep`` and ``step_breakdown`` have the same key).

Each RUN_DIR holds a ``select_sweep.csv`` and its ``.meta.json`` from a real run (``:select`` / ``:full`` keeps only
that stage's rows of it; a later run's row replaces an earlier run's row).  Without ``--arms`` a point (stage,
context, concurrency, next_n, k, dist) keeps all its arms from one run, so every speedup still compares arms measured
in one process: a point a run measured only in part (its ``triton`` arm missing) keeps the older rows.  With
``--arms`` only those arms' rows are replaced, row by row (a re-record of changed kernels against baselines whose code
did not change): those speedups compare two processes, and the metadata says so.  Nothing is typed in: rows are
copied as the runs wrote them, each with its own ``commit`` column.  The meta JSON is the old record's with ``--arms``
(its baselines and ceilings), else the first run's; every run's metadata and ceilings go under ``runs``, the row count
per commit under ``rows_per_commit``, the note under ``merged``.
"""
from __future__ import annotations

import csv
import json
import os
import sys

KEY = ("stage", "context", "concurrency", "next_n", "k", "dist")


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main(argv) -> None:
    """Merge as the module docstring says (``argv`` without the program name); prints the merged row counts."""
    command = " ".join(["python -m dsa_lab.bench.merge"] + [f"'{a}'" if " " in a else a for a in argv])
    note, arms, name = "", None, "select_sweep"
    while argv[:1] in (["--note"], ["--arms"], ["--name"]):
        if argv[0] == "--note":
            note = argv[1]
        elif argv[0] == "--name":
            name = argv[1]
        else:
            arms = set(argv[1].split(","))
        argv = argv[2:]
    old_csv, out_dir, specs = argv[0], argv[1], argv[2:]
    fields = list(csv.DictReader(open(old_csv)).fieldnames)
    point = lambda r: tuple(r[x] for x in KEY)  # noqa: E731
    unit = (lambda r: point(r) + (r["arm"],)) if arms else point  # noqa: E731
    new, runs, meta0 = {}, [], None
    for spec in specs:
        d, _, stage = spec.partition(":")
        rows = [r for r in load(os.path.join(d, f"{name}.csv")) if not stage or r["stage"] == stage]
        assert all(list(r.keys()) == fields for r in rows), f"{d}: columns differ"
        by_unit = {}
        if arms:
            for r in rows:
                if r["arm"] in arms:
                    by_unit[unit(r)] = [r]
        else:
            with_triton = {point(r) for r in rows if r["arm"] == "triton"}
            for r in rows:
                if point(r) in with_triton:
                    by_unit.setdefault(point(r), []).append(r)
        new.update(by_unit)
        m = json.load(open(os.path.join(d, f"{name}.meta.json")))
        meta0 = meta0 or m
        for run in m.get("runs", []):
            runs.append({**run, "ceilings": m["ceilings"], "source": spec, "units_kept": len(by_unit)})
    old_rows = load(old_csv)
    if arms:
        old_meta_path = os.path.splitext(old_csv)[0] + ".meta.json"
        old_meta = json.load(open(old_meta_path)) if os.path.exists(old_meta_path) else {}
        runs = [{**r, "ceilings": old_meta.get("ceilings"), "source": old_csv} for r in old_meta.get("runs", [])] + runs
        meta0 = {**old_meta, **{k: v for k, v in meta0.items() if k in ("gpu_name", "sm_count", "driver", "torch",
                                                                      "triton", "cuda_runtime", "python")}}
    kept = [r for r in old_rows if unit(r) not in new]
    order = {point(r): i for i, r in enumerate(old_rows)}
    rows = sorted([r for rs in new.values() for r in rs] + kept, key=lambda r: order.get(point(r), len(order)))
    with open(os.path.join(out_dir, f"{name}.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    commits = sorted({r["commit"] for r in rows})
    meta = {**meta0, "runs": runs, "rows_per_commit": {c: sum(r["commit"] == c for r in rows) for c in commits},
            "command": command, "merged": note,
            "status": f"merged: {len(rows) - len(kept)} rows from the runs listed, {len(kept)} kept from {old_csv}"}
    with open(os.path.join(out_dir, f"{name}.meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(meta["status"], meta["rows_per_commit"])


if __name__ == "__main__":
    main(sys.argv[1:])
