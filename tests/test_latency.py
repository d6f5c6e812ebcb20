"""Latency ladder kernels (dsa_lab.latency_triton): every case's output against torch.topk (CPU: the interpreter,
small cases; no timing), input errors, and the report table built from a recorded-format CSV."""
import pytest
import torch

from dsa_lab import latency_triton as lt


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
    from dsa_lab import data, report
    from dsa_lab.bench import Timing

    path = tmp_path / "latency_ladder.csv"
    assert report.latency_section([], {}, path, "###") == ""
    cases = [c for c in lt.LADDER_CASES if c[1] <= 1024]
    for nw, t in ((8, 1.5), (4, 2.5)):
        stub = lambda fn, t=t: Timing(t, t, t, t, t, 1, 1, "cuda graph")  # noqa: E731
        for r in lt.ladder("cpu", cases, timer=stub, num_warps=nw):
            data.append_row(path, {"what": "ladder", "context": "", **{c: r[c] for c in (
                "case", "n", "k", "stages", "num_warps", "median_us", "check")}})
    data.append_row(path, {"what": "select triton", "case": "1 row", "n": 32768, "k": 64, "stages": "",
                           "num_warps": "", "median_us": 12.5, "check": "ok", "context": 262144})
    md = report.latency_section(data.load_rows(path), {}, path, "###")
    assert "| 3 x topk 512 -> 64 (dependent: B, C, D) | 1.50 | 2.50 |" in md
    assert "| 256K | 12.50 |" in md and "three dependent 512 → 64 stages (the chain B → C → D) 1.50 µs" in md
    assert "(12.50-12.50 µs)" in md
