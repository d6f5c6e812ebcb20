"""Latency ladder kernels (dsa_lab.bench.latency): every case's output against torch.topk (CPU: the interpreter,
small cases; no timing), input errors, and the report table built from a recorded-format CSV."""
import pytest
import torch

from dsa_lab.bench import latency as lt


def test_ladder_cases_check_against_torch(device, fresh_seed):
    cases = [c for c in lt.LADDER_CASES if c[1] <= 1024]  # the interpreter: keep tl.topk tiles small
    rows = lt.ladder(device, cases, seed=fresh_seed)
    assert [r["case"] for r in rows] == [c[0] for c in cases]
    bad = [(r["case"], r["check"]) for r in rows if r["check"] != "ok"]
    assert not bad, f"seed={fresh_seed}: {bad}"
    assert all("median_us" not in r for r in rows)  # no timer: not a measurement


def test_chain_topk_writes_the_last_stage(device, fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    keys = torch.randperm(3 * 64, generator=gen).to(torch.int64).to(device)
    out = torch.full((8,), -1, dtype=torch.int64, device=device)
    lt.chain_topk(keys, out, 64, 8, 3)
    assert torch.equal(out.cpu(), torch.topk(keys[128:].cpu(), 8).values), f"seed={fresh_seed}"


def test_chain_topk_bad_input():
    keys = torch.zeros(512, dtype=torch.int64)
    out = torch.zeros(64, dtype=torch.int64)
    with pytest.raises(TypeError, match="keys"):
        lt.chain_topk(keys.to(torch.int32), out, 512, 64, 1)
    with pytest.raises(ValueError, match="n must"):
        lt.chain_topk(keys, out, 500, 64, 1)
    with pytest.raises(ValueError, match="k must"):
        lt.chain_topk(keys, out, 256, 512, 1)
    with pytest.raises(ValueError, match="stages"):
        lt.chain_topk(keys, out, 512, 64, 2)  # needs 1024 keys


def test_report_latency_section_from_a_recorded_format_csv(tmp_path):
    """The report's latency section reads the script's CSV format: one column per num_warps, the 1-row select table
    and the floor sentence; no CSV, no section.  (Format only: the times here come from a stub timer.)"""
    from dsa_lab.bench import data
    from dsa_lab.bench.report import sections
    from dsa_lab.bench.timing import Timing

    path = tmp_path / "latency_ladder.csv"
    assert sections.latency_section([], {}, path, "###") == ""
    cases = [c for c in lt.LADDER_CASES if c[1] <= 1024]
    for nw, t in ((8, 1.5), (4, 2.5)):
        stub = lambda fn, t=t: Timing(t, t, t, t, t, 1, 1, "cuda graph")  # noqa: E731
        for r in lt.ladder("cpu", cases, timer=stub, num_warps=nw):
            data.append_row(path, {"what": "ladder", "context": "", **{c: r[c] for c in (
                "case", "n", "k", "stages", "num_warps", "rows", "median_us", "check")}})
    data.append_row(path, {"what": "select triton", "case": "1 row", "n": 32768, "k": 64, "stages": "",
                           "num_warps": "", "rows": 1, "median_us": 12.5, "check": "ok", "context": 262144})
    md = sections.latency_section(data.load_rows(path), {}, path, "###")
    assert "| 3 x topk 512 -> 64 (dependent: B, C, D) | 1.50 | 2.50 |" in md
    assert "| 256K | 12.50 |" in md and "three dependent 512 → 64 stages (the chain B → C → D) 1.50 µs" in md
    assert "(12.50-12.50 µs)" in md
    assert "640 programs" not in md  # no throughput rows recorded: no throughput sentence
    for nw, t in ((8, 45.0), (4, 52.0)):
        data.append_row(path, {"what": "ladder", "context": "", "case": lt.THROUGHPUT_CASES[-1][0], "n": 512,
                               "k": 64, "stages": 3, "num_warps": nw, "rows": 640, "median_us": t, "check": "ok"})
    md = sections.latency_section(data.load_rows(path), {}, path, "###")
    assert "the three 512 → 64 stages alone take 45.00 µs: more than the 40 µs" in md and "bytes floor" not in md
    md = sections.latency_section(data.load_rows(path), {}, path, "###", 18.5)
    assert "(18.50 µs, the sweep's) in front of it and no overlap between the two, 63.50 µs." in md


def test_chain_topk_many_programs_each_its_own_chain(device, fresh_seed):
    """rows > 1 (the throughput cases): every program's output against torch.topk of its own last stage; a kernel
    that ignored the program id would write row 0's answer (or nothing) into the other rows."""
    rows = lt.ladder(device, [("3 programs x 2 stages", 64, 8, 2, True, 3), ("3 programs, max", 64, 8, 2, False, 3)],
                     seed=fresh_seed)
    assert [r["rows"] for r in rows] == [3, 3]
    assert all(r["check"] == "ok" for r in rows), f"seed={fresh_seed}: {rows}"
    gen = torch.Generator().manual_seed(fresh_seed)
    keys = torch.randperm(3 * 2 * 64, generator=gen).to(torch.int64).to(device)
    out = torch.full((3 * 8,), -1, dtype=torch.int64, device=device)
    lt.chain_topk(keys, out, 64, 8, 2, rows=3)
    want = torch.topk(keys.cpu().view(3, 2, 64)[:, 1], 8, dim=1).values.reshape(-1)
    assert torch.equal(out.cpu(), want), f"seed={fresh_seed}"
    with pytest.raises(ValueError, match="rows"):
        lt.chain_topk(keys, out, 64, 8, 2, rows=0)
    with pytest.raises(TypeError, match="out"):
        lt.chain_topk(keys, out[:8], 64, 8, 2, rows=3)


def test_throughput_cases_are_the_hier_chain_shape():
    for name, n, k, stages, sort, rows in lt.THROUGHPUT_CASES:
        assert (n, k, rows) == (512, 64, 640) and stages in (1, 3), name
