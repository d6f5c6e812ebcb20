"""dsa_lab.bench.data: slugs, metadata, atomic CSV appends, loading."""
import json
import multiprocessing as mp
import os
import socket

import pytest

from dsa_lab.bench import data


@pytest.mark.parametrize(
    "name, slug",
    [
        ("NVIDIA H200", "h200"),
        ("NVIDIA H200 NVL", "h200"),
        ("NVIDIA H100 80GB HBM3", "h100"),
        ("NVIDIA A100-SXM4-80GB", "a100"),
        ("AMD Instinct MI355X", "mi355x"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        (None, "unknown"),
        ("", "unknown"),
    ],
)
def test_gpu_slug(name, slug):
    assert data.gpu_slug(name) == slug


def test_data_root_is_repo_data():
    assert data.data_root().name == "data"
    assert (data.data_root().parent / "dsa_lab").is_dir()


def test_append_and_load_roundtrip(tmp_path):
    p = tmp_path / "sub" / "x.csv"
    cols = ["arm", "context", "median_us", "note", "flag", "empty"]
    data.append_row(p, {"arm": "triton", "context": 4096, "median_us": 1.23456789, "note": "a,b \"q\"", "flag": True},
                    cols)
    data.append_row(p, {"arm": "torch", "context": 16384, "median_us": 47.5, "note": "nan", "flag": False}, cols)
    lines = p.read_text().splitlines()
    assert lines[0] == ",".join(cols)
    assert len(lines) == 3
    rows = data.load_rows(p)
    assert rows[0]["arm"] == "triton" and rows[0]["context"] == 4096 and isinstance(rows[0]["context"], int)
    assert rows[0]["median_us"] == pytest.approx(1.23457)
    assert rows[0]["note"] == 'a,b "q"'
    assert rows[0]["flag"] is True and rows[1]["flag"] is False
    assert rows[0]["empty"] is None


def test_append_refuses_schema_drift(tmp_path):
    p = tmp_path / "x.csv"
    data.append_row(p, {"a": 1, "b": 2})
    with pytest.raises(ValueError, match="header lacks"):
        data.append_row(p, {"a": 1, "c": 3})
    data.append_row(p, {"b": 5})  # a missing key is left empty
    assert data.load_rows(p)[-1] == {"a": None, "b": 5}


def test_load_drops_partial_trailing_line(tmp_path):
    p = tmp_path / "x.csv"
    data.append_row(p, {"a": 1, "b": 2})
    with open(p, "a") as f:
        f.write("3,")  # a writer killed mid-line (non-atomic filesystem)
    assert data.load_rows(p) == [{"a": 1, "b": 2}]
    assert data.load_rows(tmp_path / "missing.csv") == []


def _writer(args):
    path, wid, n = args
    for i in range(n):
        data.append_row(path, {"writer": wid, "i": i, "pad": "x" * 300}, ["writer", "i", "pad"])


def test_commit_column_stays_text(tmp_path):
    """A short commit hash that reads as a number (3e42133 is float inf, 0123456 an int without its zero) stays the
    text it was, in the package's loader and through the notebooks' (``records.load_records``); other columns still
    convert."""
    from dsa_lab.workbook import records

    p = tmp_path / "h200" / "r.csv"
    p.parent.mkdir()
    p.write_text("median_us,commit\n1.5,3e42133\n2,0123456\n3,\n")
    for rows in (data.load_rows(p), records.load_records("r", root=tmp_path)[0]):
        assert [r["commit"] for r in rows] == ["3e42133", "0123456", None]
        assert [r["median_us"] for r in rows] == [1.5, 2, 3]


def test_concurrent_appends_are_whole_lines(tmp_path):
    p = str(tmp_path / "x.csv")
    ctx = mp.get_context("fork")
    with ctx.Pool(4) as pool:
        pool.map(_writer, [(p, w, 50) for w in range(4)])
    text = open(p).read()
    lines = text.splitlines()
    assert lines.count("writer,i,pad") == 1 and lines[0] == "writer,i,pad"
    rows = data.load_rows(p)
    assert len(rows) == 200
    assert {(r["writer"], r["i"]) for r in rows} == {(w, i) for w in range(4) for i in range(50)}
    assert all(r["pad"] == "x" * 300 for r in rows)


def test_meta_roundtrip_and_metadata_fields(tmp_path):
    meta = data.collect_metadata("dsa-lab sweep --quick", {"ceilings": {"stream_gbps": 1.0}})
    for key in ("gpu_name", "sm_count", "driver", "torch", "triton", "commit", "dirty", "date_utc", "command"):
        assert key in meta
    assert meta["command"] == "dsa-lab sweep --quick"
    assert meta["ceilings"] == {"stream_gbps": 1.0}
    assert meta["date_utc"].endswith("+00:00")
    dumped = json.dumps(meta)
    host = socket.gethostname()
    if len(host) > 3:
        assert host not in dumped
    p = tmp_path / "m.meta.json"
    data.save_meta(p, meta)
    assert data.load_meta(p) == json.loads(dumped)
    assert data.load_meta(tmp_path / "none.json") == {}
    assert not [f for f in os.listdir(tmp_path) if ".tmp" in f]


def test_meta_path_beside_the_record():
    assert data.meta_path("a/b/verify_matrix.csv") == "a/b/verify_matrix.meta.json"
    assert data.meta_path("a/fuzz") == "a/fuzz.meta.json"
