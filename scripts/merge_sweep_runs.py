"""Merge several ``dsa-lab sweep`` runs of one commit into ``data/<gpu>/select_sweep.csv``, keeping the rows of an
older recording for the points the new runs did not reach.

    python3 scripts/merge_sweep_runs.py [--note TEXT] OLD_CSV OUT_DIR RUN_DIR[:stage] [RUN_DIR[:stage] ...]

Each RUN_DIR holds a ``select_sweep.csv`` and its ``.meta.json`` from a real run (``:select`` / ``:full`` keeps only
that stage's rows of it; a later run's row replaces an earlier run's row of the same point).  A point (stage,
context, concurrency, next_n, k, dist) keeps all its arms from one run, so every speedup still compares arms measured
in one process: a point a run measured only in part (its ``triton`` arm missing) keeps the older rows.  Nothing is
typed in: rows are copied as the runs wrote them, each with its own ``commit`` column.  The meta JSON is the first
run's, with every run's metadata and ceilings under ``runs`` and the row count per commit.
"""
import csv
import json
import os
import sys

KEY = ("stage", "context", "concurrency", "next_n", "k", "dist")


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def main(argv):
    note = ""
    if argv[:1] == ["--note"]:
        note, argv = argv[1], argv[2:]
    old_csv, out_dir, specs = argv[0], argv[1], argv[2:]
    fields = list(csv.DictReader(open(old_csv)).fieldnames)
    point = lambda r: tuple(r[x] for x in KEY)  # noqa: E731
    new, runs, meta0 = {}, [], None
    for spec in specs:
        d, _, stage = spec.partition(":")
        rows = [r for r in load(os.path.join(d, "select_sweep.csv")) if not stage or r["stage"] == stage]
        assert all(list(r.keys()) == fields for r in rows), f"{d}: columns differ"
        with_triton = {point(r) for r in rows if r["arm"] == "triton"}
        by_point = {}
        for r in rows:
            if point(r) in with_triton:
                by_point.setdefault(point(r), []).append(r)
        new.update(by_point)
        m = json.load(open(os.path.join(d, "select_sweep.meta.json")))
        meta0 = meta0 or m
        for run in m.get("runs", []):
            runs.append({**run, "ceilings": m["ceilings"], "source": spec, "points_kept": len(by_point)})
    kept = [r for r in load(old_csv) if point(r) not in new]
    rows = [r for pts in new.values() for r in pts] + kept
    with open(os.path.join(out_dir, "select_sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    commits = sorted({r["commit"] for r in rows})
    meta = {**meta0, "runs": runs, "rows_by_commit": {c: sum(r["commit"] == c for r in rows) for c in commits},
            "command": "python3 " + " ".join(["scripts/merge_sweep_runs.py"] + argv), "merge_note": note,
            "status": f"merged: {len(rows) - len(kept)} rows from the runs listed, {len(kept)} kept from {old_csv}"}
    with open(os.path.join(out_dir, "select_sweep.meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(meta["status"], meta["rows_by_commit"])


if __name__ == "__main__":
    main(sys.argv[1:])
