"""dsa_lab.bench.merge (``python -m dsa_lab.bench.merge``): runs over an older record; a point keeps all its arms
from one run, or (``--arms``) only the named arms are replaced."""
import csv
import json

from dsa_lab.bench import data, merge
from dsa_lab.bench.sweep import plan


def _row(arm, stage, ctx, us, commit):
    r = {c: "" for c in plan.SELECT_COLUMNS}
    r.update(arm=arm, stage=stage, context=ctx, concurrency=1, next_n=1, rows=1, k=64, dist="normal", median_us=us,
             commit=commit)
    return r


def test_merge_keeps_whole_points(tmp_path):
    old = tmp_path / "old.csv"
    for ctx in (4096, 16384, 65536):
        for arm in ("torch", "triton"):
            data.append_row(old, _row(arm, "select", ctx, 10.0, "old"), plan.SELECT_COLUMNS)
    run = tmp_path / "r1"
    run.mkdir()
    path = run / "select_sweep.csv"
    for arm in ("torch", "triton"):
        data.append_row(path, _row(arm, "select", 4096, 5.0, "new"), plan.SELECT_COLUMNS)
        data.append_row(path, _row(arm, "full", 4096, 7.0, "new"), plan.SELECT_COLUMNS)
    data.append_row(path, _row("torch", "select", 16384, 6.0, "new"), plan.SELECT_COLUMNS)  # its triton arm missing
    meta = {"commit": "new", "ceilings": {"stream_gbps": 1.0}, "runs": [{"commit": "new", "command": "dsa-lab sweep"}]}
    (run / "select_sweep.meta.json").write_text(json.dumps(meta))
    out = tmp_path / "out"
    out.mkdir()
    merge.main(["--note", "test", str(old), str(out), f"{run}:select"])
    rows = list(csv.DictReader(open(out / "select_sweep.csv")))
    by = {(r["stage"], r["context"], r["arm"]): r["commit"] for r in rows}
    assert by[("select", "4096", "torch")] == by[("select", "4096", "triton")] == "new"
    assert by[("select", "16384", "torch")] == by[("select", "16384", "triton")] == "old"  # whole point kept old
    assert by[("select", "65536", "triton")] == "old" and ("full", "4096", "triton") not in by  # stage filter
    assert len(rows) == 6
    m = json.load(open(out / "select_sweep.meta.json"))
    assert m["rows_per_commit"] == {"new": 2, "old": 4} and m["merged"] == "test"
    assert m["runs"][0]["units_kept"] == 1 and "dsa_lab.bench.merge" in m["command"]


def test_merge_arms_replaces_only_those_arms(tmp_path):
    old = tmp_path / "old.csv"
    for ctx in (4096, 16384):
        for arm in ("torch", "triton"):
            data.append_row(old, _row(arm, "select", ctx, 10.0, "old"), plan.SELECT_COLUMNS)
    (tmp_path / "old.meta.json").write_text(json.dumps({"commit": "old", "ceilings": {"stream_gbps": 2.0},
                                                        "runs": [{"commit": "old"}]}))
    run = tmp_path / "r1"
    run.mkdir()
    data.append_row(run / "select_sweep.csv", _row("triton", "select", 4096, 5.0, "new"), plan.SELECT_COLUMNS)
    (run / "select_sweep.meta.json").write_text(json.dumps({"commit": "new", "ceilings": {"stream_gbps": 1.0},
                                                            "torch": "9", "runs": [{"commit": "new"}]}))
    out = tmp_path / "out"
    out.mkdir()
    merge.main(["--arms", "triton", "--note", "n", str(old), str(out), str(run)])
    rows = list(csv.DictReader(open(out / "select_sweep.csv")))
    by = {(r["context"], r["arm"]): r["commit"] for r in rows}
    assert by == {("4096", "torch"): "old", ("4096", "triton"): "new", ("16384", "torch"): "old",
                  ("16384", "triton"): "old"}
    m = json.load(open(out / "select_sweep.meta.json"))
    assert m["ceilings"] == {"stream_gbps": 2.0} and m["torch"] == "9" and m["merged"] == "n"
    assert [r["commit"] for r in m["runs"]] == ["old", "new"] and m["rows_per_commit"] == {"new": 1, "old": 3}
