"""dsa_lab.bench.sweep: `dsa-lab sweep` under the Triton interpreter (tiny shapes): columns, labels, checks,
resumability; its plan, inputs and arms."""
import json

import pytest
import torch

from dsa_lab import cli
from dsa_lab.bench import data
from dsa_lab.bench.sweep import arms, inputs, plan, runner
from dsa_lab.bench.sweep import cli as sweep_cli

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter lane (GPU runs write real data)")

SEED = ["--seed", "7", "--no-progress"]


def _keys(rows):
    return [tuple(str(r[c]) for c in plan.KEY) for r in rows]


@pytest.fixture(scope="module")
def quick_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    rc = cli.main(["sweep", "--quick", "--out", str(out)] + SEED)
    assert rc == 0
    return out


def test_quick_sweep_columns_and_labels(quick_dir):
    path = quick_dir / "select_sweep.csv"
    header = data.read_header(path)
    for col in ("arm", "stage", "context", "concurrency", "next_n", "rows", "k", "dist", "median_us", "p10_us",
                "p90_us", "bytes", "gbps", "floor_us", "roofline_frac", "max_model_len", "block_size"):
        assert col in header
    rows = data.load_rows(path)
    assert {r["stage"] for r in rows} == {"select", "full"}
    arms = {r["arm"] for r in rows}
    assert {"torch", "torch_live", "triton"} <= arms
    for r in rows:
        assert r["timing"] == "interpreter (not a performance measurement)"
        assert r["rows"] == r["concurrency"] * r["next_n"]
        assert r["max_model_len"] == plan.CPU_MML and r["block_size"] == 8
        assert r["median_us"] > 0 and r["bytes"] > 0 and r["floor_us"] > 0
        assert r["p10_us"] <= r["median_us"] <= r["p90_us"]
        if r["arm"] != "torch":
            assert r["check"] == "ok", r
    assert len(set(_keys(rows))) == len(rows)  # no duplicates
    meta = json.loads((quick_dir / "select_sweep.meta.json").read_text())
    assert meta["label"] == "interpreter (not a performance measurement)"
    assert set(meta["ceilings"]) >= {"stream_gbps", "launch_us", "two_launch_us"}
    assert meta["command"].startswith("dsa-lab sweep") and "--quick" in meta["command"]
    assert meta["status"] == "complete" and meta["runs"][-1]["rows_added_this_run"] == len(rows)


def test_rerun_adds_nothing(quick_dir, capsys):
    path = quick_dir / "select_sweep.csv"
    before = path.read_bytes()
    assert cli.main(["sweep", "--quick", "--out", str(quick_dir)] + SEED) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert path.read_bytes() == before
    assert cli.main(["sweep", "--quick", "--plan", "--out", str(quick_dir)] + SEED) == 0
    assert "0 rows to measure" in capsys.readouterr().out


def test_resume_fills_only_missing_rows(quick_dir, tmp_path):
    src = (quick_dir / "select_sweep.csv").read_text().splitlines(keepends=True)
    part = tmp_path / "select_sweep.csv"
    part.write_text("".join(src[: len(src) - 3]))  # an interrupted run: the last 3 rows never came
    kept = data.load_rows(part)
    assert cli.main(["sweep", "--quick", "--out", str(tmp_path)] + SEED) == 0
    rows = data.load_rows(part)
    assert len(rows) == len(src) - 1
    assert rows[: len(kept)] == kept  # earlier rows untouched
    assert sorted(_keys(rows)) == sorted(_keys(data.load_rows(quick_dir / "select_sweep.csv")))


def test_max_seconds_stops_cleanly(tmp_path, capsys):
    assert cli.main(["sweep", "--quick", "--suite", "select", "--max-seconds", "0", "--out", str(tmp_path)] + SEED) == 0
    out = capsys.readouterr().out
    assert "stopped at --max-seconds" in out
    assert data.load_rows(tmp_path / "select_sweep.csv") == []
    meta = data.load_meta(tmp_path / "select_sweep.meta.json")
    assert meta["status"].startswith("stopped")


def test_plan_filters(capsys):
    assert cli.main(["sweep", "--plan", "--suite", "select", "--arms", "torch", "--contexts", "512",
                     "--out", "/nonexistent-dir-never-written"]) == 0
    out = capsys.readouterr().out
    assert "select" in out and "torch_live" not in out


def test_failing_arm_is_reported_and_others_recorded(tmp_path, monkeypatch, capsys):
    real = runner.select_arm_fn

    def broken(arm, inp, k):
        if arm == "torch_live":
            def fn():
                raise RuntimeError("boom")
            return fn
        return real(arm, inp, k)

    monkeypatch.setattr(runner, "select_arm_fn", broken)
    rc = cli.main(["sweep", "--suite", "select", "--contexts", "512", "--concurrency", "1", "--next-n", "1",
                   "--out", str(tmp_path)] + SEED)
    assert rc == 1
    assert "ERROR torch_live" in capsys.readouterr().out
    arms = {r["arm"] for r in data.load_rows(tmp_path / "select_sweep.csv")}
    assert "torch" in arms and "torch_live" not in arms


def test_step_and_producer_suites(tmp_path):
    rc = cli.main(["sweep", "--quick", "--suite", "step,producer", "--out", str(tmp_path)] + SEED)
    assert rc == 0
    step = data.load_rows(tmp_path / "step_breakdown.csv")
    stages = {(r["arm"], r["stage"]) for r in step}
    assert ("triton", "logits") in stages and ("triton", "step") in stages and ("torch", "step") in stages
    assert all(r["check"] == "ok" for r in step)
    prod = data.load_rows(tmp_path / "producer_sweep.csv")
    assert {(r["arm"], r["stage"]) for r in prod} >= {("triton", "logits"), ("bounded", "sanitize"),
                                                     ("full_width", "sanitize")}
    ref = [r for r in prod if r["arm"] == "torch"]
    assert ref and ref[0]["check"].startswith("rel_err=")
    assert float(ref[0]["check"].split("=")[1]) < 1e-3
    assert all(r["timing"] == "interpreter (not a performance measurement)" for r in step + prod)
    assert (tmp_path / "step_breakdown.meta.json").exists() and (tmp_path / "producer_sweep.meta.json").exists()


def test_report_renders_from_the_sweep(quick_dir, tmp_path):
    out = tmp_path / "report.md"
    assert cli.main(["report", "--data", str(quick_dir), "--out", str(out)]) == 0
    md = out.read_text()
    assert "not a performance measurement" in md.lower()
    assert "Targets: select stage" in md and "transcribed" in md


def test_torch_topk_store_matches_the_torch_arm():
    from dsa_lab.select import topk_select_torch

    g = torch.Generator().manual_seed(3)
    x = torch.randn(3, 300, generator=g)
    x[1, 100:] = float("-inf")  # fewer candidates than k on row 1
    x[2, 5] = float("nan")
    for k in (1, 16, 250, 400):  # 400 > width: padded with -1
        got = arms.torch_topk_store(x, k)
        want = topk_select_torch(x, k)
        assert got.dtype == torch.int32 and got.shape == (3, k)
        assert arms.mismatched_rows(got, want) == 0


def test_inputs_follow_the_decode_bounds():
    p = plan.Point("select", "select", 100, 2, 3, 8, "normal")
    assert inputs.decode_ends(100, 2, 3) == [98, 99, 100, 98, 99, 100]
    inp = inputs.select_stage_inputs(p, 256, 0, "cpu")
    sc = inp["scores"]
    assert inp["live"] == [13, 13, 13, 13, 13, 13]
    assert torch.isinf(sc[:, 12]).all() and (sc[:, 12] > 0).all()  # newest block pinned to +inf
    assert (sc[:, 13:] == float("-inf")).all()
    f = inputs.full_stage_inputs(plan.Point("full", "full", 100, 2, 3, 8, "ramp"), 256, 0, "cpu")
    assert torch.isnan(f["logits"][0, 98:]).all() and not torch.isnan(f["logits"][0, :98]).any()
    for d in plan.DISTS:
        v = inputs.make_values(d, 2, 1000, torch.Generator().manual_seed(0), "cpu")
        assert v.shape == (2, 1000) and v.dtype == torch.float32


def test_gpu_plan_shape(monkeypatch):
    """The GPU plan (built without a GPU): the seed's grid at k=64 first, subsets for the rest."""
    import argparse

    monkeypatch.setattr(plan, "on_gpu", lambda: True)
    p = argparse.ArgumentParser()
    sweep_cli.add_arguments(p)
    pts = plan.build_plan(p.parse_args([]))
    main = [x for x in pts if x.k == 64 and x.dist == "normal"]
    assert len(main) == 2 * 160  # select + full: 8 concurrency x 5 next_n x 4 contexts
    assert pts[: len(main)] == main  # recorded first by a time-boxed run
    assert {(x.concurrency, x.next_n) for x in pts if x.k == 2048} == {(1, 1), (1, 5), (32, 1), (32, 5),
                                                                   (128, 1), (128, 5)}
    assert {x.dist for x in pts if x.k == 64} == set(plan.DISTS)
    assert {x.dist for x in pts if x.k != 64} == {"normal"}
    assert len(pts) == 608
    quick = plan.build_plan(p.parse_args(["--quick"]))
    assert 0 < len(quick) <= 40
    step = plan.build_plan(p.parse_args(["--suite", "step"]))
    assert len(step) == 4 * 3 * 4 and {x.context for x in step} == {4096, 16384, 65536, 131072}


def test_full_stage_arms_fused_only_where_it_serves(tmp_path):
    """The full stage times triton (the default dispatch) and triton_fused; the fused arm is left out where the
    fused kernel does not serve the shape (k > 256 at block_size 8), instead of being recorded as an error."""
    import argparse

    p = argparse.ArgumentParser()
    sweep_cli.add_arguments(p)
    args = p.parse_args(["--out", str(tmp_path)] + SEED)
    args._dirty = False
    sw = runner.Sweep(args, {}, tmp_path, None)
    assert plan.arms_for("full") == ["torch", "torch_live", "triton", "triton_fused"]
    small = sw.pending_arms(plan.Point("full", "full", 512, 1, 1, 64, "normal"))
    big = sw.pending_arms(plan.Point("full", "full", 512, 1, 1, 2048, "normal"))
    assert "triton_fused" in small and "triton_fused" not in big and "triton" in big


def test_step_suite_at_block_size_one_beside_block_size_eight(tmp_path):
    """``--block-size 1`` (DeepSeek V3.2's top-k of tokens) records its own rows beside the block-size-8 ones: the
    block size is part of a row's key, so neither run skips the other's points."""
    base = ["sweep", "--suite", "step", "--contexts", "256", "--concurrency", "1", "--next-n", "2",
            "--out", str(tmp_path)] + SEED
    assert cli.main(base + ["--block-size", "1"]) == 0
    one = data.load_rows(tmp_path / "step_breakdown.csv")
    assert one and {r["block_size"] for r in one} == {1} and all(r["check"] == "ok" for r in one)
    assert ("fused", "step") in {(r["arm"], r["stage"]) for r in one}
    assert cli.main(base) == 0
    rows = data.load_rows(tmp_path / "step_breakdown.csv")
    assert {r["block_size"] for r in rows} == {1, 8} and len(rows) == 2 * len(one)
    assert cli.main(base + ["--block-size", "1"]) == 0  # every point recorded: nothing added
    assert len(data.load_rows(tmp_path / "step_breakdown.csv")) == len(rows)
