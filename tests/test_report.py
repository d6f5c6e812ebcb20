"""`dsa-lab report`: tables and target verdicts from a synthetic GPU-like record; README rewriting."""
import pytest

from dsa_lab import cli
from dsa_lab.bench import data
from dsa_lab.bench.report import points, sections, tables, targets, writer
from dsa_lab.bench.sweep import plan

CONTEXTS = (4096, 16384, 65536, 262144)


def _row(arm, stage, ctx, conc, nn, k, dist, us, floor=1.0):
    return {"arm": arm, "stage": stage, "context": ctx, "concurrency": conc, "next_n": nn, "rows": conc * nn, "k": k,
            "dist": dist, "median_us": us, "p10_us": us * 0.95, "p90_us": us * 1.05, "bytes": 1000, "gbps": 1.0,
            "floor_us": floor, "roofline_frac": floor / us, "max_model_len": 262144, "block_size": 8,
            "check": "ok", "timing": "cuda graph", "seed": 1, "commit": "abc123def456"}


@pytest.fixture
def record(tmp_path):
    d = tmp_path / "h200"
    path = d / "select_sweep.csv"
    speed = {4096: 12.0, 16384: 11.0, 65536: 7.0, 262144: 2.0}
    for stage in ("select", "full"):
        for c in CONTEXTS:
            for conc, nn in ((1, 1), (32, 1), (128, 5)):
                base = 50.0 if conc < 128 else 400.0
                tr = base / speed[c]
                if stage == "full":
                    tr = tr / 2  # full stage: 2x the select speedup
                arms = [("torch", base), ("torch_live", base / 2), ("triton", tr)]
                if stage == "full":
                    arms.append(("triton_fused", tr / 1.5))
                for arm, us in arms:
                    data.append_row(path, _row(arm, stage, c, conc, nn, 64, "normal", us,
                                               floor=tr / 1.2 if c == 262144 and conc == 128 else 1.0),
                                    plan.SELECT_COLUMNS)
    for d_, f in (("shifted", 1.05), ("equal", 1.1), ("nan1pct", 1.0), ("ramp", 0.95)):
        for arm, us in (("torch", 50.0), ("torch_live", 25.0), ("triton", 50 / 12 * f)):
            data.append_row(path, _row(arm, "select", 4096, 1, 1, 64, d_, us), plan.SELECT_COLUMNS)
    for arm, us in (("torch", 60.0), ("torch_live", 30.0), ("triton", 15.0)):
        data.append_row(path, _row(arm, "select", 4096, 1, 1, 2048, "normal", us), plan.SELECT_COLUMNS)
    meta = {"gpu_name": "NVIDIA H200", "sm_count": 132, "driver": "570.00", "torch": "2.11", "triton": "3.6",
            "commit": "abc123def456", "dirty": False, "date_utc": "2026-11-29T08:00:00+00:00",
            "ceilings": {"stream_gbps": 4640.0, "launch_us": 1.21, "two_launch_us": 1.78}}
    data.save_meta(d / "select_sweep.meta.json", meta)
    sp = d / "step_breakdown.csv"
    for arm, stage, us in (("triton", "logits", 30.0), ("triton", "sanitize", 2.0), ("triton", "scores", 5.0),
                           ("triton", "select", 6.0), ("triton", "flags", 2.0), ("triton", "candidates", 7.0),
                           ("triton", "step", 40.0), ("torch", "step", 140.0)):
        r = _row(arm, stage, 65536, 32, 3, 64, "producer", us)
        r.update(heads=64, head_dim=128, block_kv=64)
        data.append_row(sp, r, plan.STEP_COLUMNS)
    data.save_meta(d / "step_breakdown.meta.json", meta)
    pp = d / "producer_sweep.csv"
    for arm, stage, us, frac, chk in (("triton", "logits", 100.0, 0.75, ""),
                                      ("torch", "logits", 2000.0, None, "rel_err=1e-6"),
                                      ("bounded", "sanitize", 3.0, None, ""),
                                      ("full_width", "sanitize", 90.0, None, "")):
        r = _row(arm, stage, 131072, 128, 5, 64, "producer", us)
        r.update(heads=64, head_dim=128, block_kv=64, stream_frac=frac, write_bytes=0, check=chk, gbps=3480.0,
                 roofline_frac=frac, mma_frac=frac and 0.5, tflops=frac and 700.0)
        r.pop("block_size")
        data.append_row(pp, r, plan.PRODUCER_COLUMNS)
    data.save_meta(d / "producer_sweep.meta.json", dict(meta, ceilings=dict(meta["ceilings"], fp8_tflops=1400.0)))
    return d


def test_report_tables_and_verdicts(record):
    md = writer.build(record)
    assert "NVIDIA H200" in md and "abc123def456" in md and "4640 GB/s" in md
    assert "empty Triton launch in a graph **1.21 µs**" in md
    lines = {ln.split("|")[1].strip(): ln for ln in md.splitlines() if ln.startswith(("| select:", "| full:"))}
    assert "**met**" in lines["select: median speedup over torch at 4K ≥ 10x"] and "12.00x" in lines[
        "select: median speedup over torch at 4K ≥ 10x"]
    assert "**met**" in lines["select: median speedup over torch at 64K ≥ 6x"]
    assert "**met**" in lines["select: 1 row ≤ 5 µs at every context"] or "**not met**" in lines[
        "select: 1 row ≤ 5 µs at every context"]
    assert "**not met**" in lines["select: 1 row ≤ 5 µs at every context"]  # 50/2 = 25 µs at 256K
    assert "**not met**" in lines["select: 640 rows × 262144 context ≤ 40 µs"]  # 400/2 = 200 µs
    assert "**met**" in lines["select: k = 2048 median speedup over torch ≥ 3x"]
    assert "1.158" in lines["select: slowest / fastest over the five distributions ≤ 1.2 (per shape)"]
    assert "**met**" in lines["full: median speedup over torch at 4K ≥ 15x"]  # 24x
    name = "full: 640 rows × 262144 context within 1.5x of its bytes/bandwidth floor (live logits read once)"
    assert "**met**" in lines[name]  # 1.2x
    assert "**not met**" in lines["select: every point faster than torch and torch_live"]  # 256K vs torch_live: 1x
    beyond = "select: every point faster than torch and torch_live, every k (beyond the target's k = 64)"
    assert "| —" in lines[beyond] and "every k, every dist" in lines[beyond]  # information, no verdict
    assert "| 4K | 1 | 1 | 1 | 50.00 | 25.00 | 4.17 |" in md  # representative point
    assert "Fused vs unfused" in md and "1.50x" in md
    assert "Decode indexer step breakdown" in md and "0.27%" in md  # 40 µs of 14.6 ms
    prod = md.split("Producer")[-1]
    assert "**75%**" in prod and "**met**" in prod and "1400 Tflop/s" in prod and "| stream |" in prod
    assert "transcribed from the seed pull request text" in md


def test_every_point_target_is_scoped_to_k64(record):
    """The issue lists "every point faster" under "select stage, k = 64": a slow k = 2048 point shows in the
    every-k row (information, no verdict) and leaves the k = 64 verdict to the k = 64 points."""
    idx = points.index([r for r in data.load_rows(record / "select_sweep.csv")
                        if not (r["stage"] == "select" and int(r["context"]) == 262144)])  # drop the 1x points
    idx[("triton", "select", 4096, 1, 1, 2048, "normal")]["median_us"] = 99.0  # slower than torch (60) there
    rows = {r[0]: r for r in targets.select_targets(idx)}
    assert rows["select: every point faster than torch and torch_live"][2] == "**met**"
    beyond = rows["select: every point faster than torch and torch_live, every k (beyond the target's k = 64)"]
    assert beyond[2] == "—" and "k 2048" in beyond[3] and "2 not faster" in beyond[3]


def test_layers_scale_the_share(record):
    md = writer.build(record, itl_ms=10.0, layers=61)
    assert "24.40%" in md  # 40 µs × 61 / 10 ms


def test_readme_rewrite(record, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n## Results\n\n{writer.START}\nold\n{writer.END}\n\nafter\n")
    out = tmp_path / "r.md"
    assert cli.main(["report", "--data", str(record), "--out", str(out), "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert "old" not in text and text.endswith("\nafter\n") and "### Results" in text
    assert "select: median speedup" in text and str(out.name) in text
    assert "Targets of the select and full stages" in text and " met; not met: " in text
    assert "Targets: select stage" not in text and "Speedup per context" not in text
    assert "Speedup per context" in out.read_text()  # the whole report beside it
    assert text.count(writer.START) == 1 and text.count(writer.END) == 1
    again = text
    assert cli.main(["report", "--data", str(record), "--out", str(out), "--readme", str(readme)]) == 0
    assert readme.read_text() == again  # idempotent
    bad = tmp_path / "BAD.md"
    bad.write_text("no markers")
    with pytest.raises(SystemExit):
        writer.rewrite_readme(bad, "x")


def test_missing_record_is_said(tmp_path):
    md = writer.build(tmp_path / "nothing")
    assert "No record" in md


def test_full_floor_target_uses_the_fewest_bytes_of_any_triton_arm():
    """The issue-7 floor is the live logits read once (the fused arm's bytes), not the default arm's own model."""
    def row(arm, us, floor):
        return {"arm": arm, "stage": "full", "context": 262144, "concurrency": 128, "next_n": 5, "rows": 640, "k": 64,
                "dist": "normal", "median_us": us, "floor_us": floor}
    idx = points.index([row("triton", 270.0, 190.0), row("triton_fused", 450.0, 150.0)])
    label, measured, status, detail = targets.big_point_target(idx, "full", 64, floor_mult=1.5)[:4]
    assert "1.80x" in measured and "not met" in status and "floor 150" in detail
    idx = points.index([row("triton", 270.0, 190.0)])  # no fused record: the default arm's own floor
    assert "1.42x" in targets.big_point_target(idx, "full", 64, floor_mult=1.5)[1]


def test_dist_ratio_compares_one_commits_rows_only():
    """A merged record (points not re-measured keep an older commit's rows): the distribution ratio of a shape uses
    only the rows of its normal row's commit, and says how many it left out; a ratio across two commits' kernels
    measures no distribution."""
    def row(dist, us, commit, conc=1):
        return {"arm": "triton", "stage": "select", "context": 16384, "concurrency": conc, "next_n": 1, "rows": conc,
                "k": 64, "dist": dist, "median_us": us, "commit": commit}
    rows = [row("normal", 5.0, "new"), row("equal", 5.5, "new"), row("ramp", 9.0, "old"),
            row("normal", 6.0, "new", 32), row("ramp", 6.3, "new", 32)]
    worst, where, n = targets.dist_ratio(points.index(rows), "select", 64)
    assert n == 2 and worst == pytest.approx(1.1) and "1 rows of another commit" in where
    table = tables.dist_table(points.index(rows), "select", 64)
    assert "1.050" in table and "1.800" not in table  # ramp / normal of the same commit only
    rows[2]["commit"] = "new"  # the same rows all of one commit: the ramp row counts
    worst, where, n = targets.dist_ratio(points.index(rows), "select", 64)
    assert worst == pytest.approx(1.8) and "another commit" not in where


def _probe_rows():
    rows = []
    for ctx, triton_us, cluster_us, chk in ((16384, 5.0, 4.4, "ok"), (262144, 10.5, None, "refused 1/1")):
        rows.append({"context": ctx, "rows": 1, "dist": "normal", "arm": "triton", "median_us": triton_us,
                     "check": "ok"})
        rows.append({"context": ctx, "rows": 1, "dist": "normal", "arm": "cluster", "median_us": cluster_us,
                     "check": chk, "compacted_max": 200 if chk == "ok" else None})
    rows.append({"context": 16384, "rows": 1, "dist": "normal", "arm": "cluster_q", "median_us": 5.6, "check": "ok",
                 "compacted_max": 74})
    return rows


def test_cuda_probe_section_counts_and_target():
    text = sections.cuda_probe_section(_probe_rows(), {"gpu_name": "G"}, "p.csv", "###")
    assert "4 checks ok, 1 refused, 0 failing" in text
    assert "| 16K | 5.00 | — | — | 4.40 | 5.60 | 200 | 74 |" in text  # the q-th threshold's time and M beside
    assert "| 256K | 10.50 | — | — | refused | — | — | — |" in text
    assert "cluster kernel: 16K. " in text  # 4.4 < 5; the refused 256K row does not count


def test_cuda_probe_section_flags_failures_and_misses():
    rows = _probe_rows()
    rows[1].update(check="mismatch 1/1: row 0", median_us=None)
    text = sections.cuda_probe_section(rows, {}, "p.csv", "###")
    assert "**1 failing**" in text
    assert "cluster kernel: none. " in text
    assert sections.cuda_probe_section([], {}, "p.csv", "###") == ""


def test_full_targets_show_the_select_stage_bound():
    """A full-stage median target also shows the median it would reach at the select stage's own time (same points,
    same run), and the note under the table says how close to the select stage each missed target asks the full stage
    to come: 16K here, full 8 µs against select 5 µs and torch 60 / 90 / 120 µs: bound 18x (met-able: 1.20x); a met
    target (4K) is not named."""
    def row(arm, stage, ctx, conc, us):
        return {"arm": arm, "stage": stage, "context": ctx, "concurrency": conc, "next_n": 1, "rows": conc, "k": 64,
                "dist": "normal", "median_us": us}
    rows = []
    for conc, t in ((1, 60.0), (8, 90.0), (32, 120.0)):
        rows += [row("torch", "full", 16384, conc, t), row("triton", "full", 16384, conc, 8.0),
                 row("triton", "select", 16384, conc, 5.0),
                 row("torch", "full", 4096, conc, t), row("triton", "full", 4096, conc, 3.0),
                 row("triton", "select", 4096, conc, 2.0)]
    idx = points.index(rows)
    assert targets.select_bound(idx, 16384) == pytest.approx(18.0)
    t = {r[0]: r for r in targets.full_targets(idx)}
    assert "at the select stage's own time: 18.00x" in t["full: median speedup over torch at 16K ≥ 15x"][3]
    assert t["full: median speedup over torch at 4K ≥ 15x"][2] == "**met**"  # 30x
    note = targets.bound_note(idx)
    assert "16K 1.20x" in note and "4K" not in note.replace("16K", "")


def test_compile_section_counts_variants_and_splits_cold_calls():
    warm = [{"variant": "_hier_kernel [KP=64] (*fp32)", "done_s": 40.0},
            {"variant": "_hier_kernel [KP=512] (*fp32)", "done_s": 60.5},
            {"variant": "_flags_kernel [BS=8] (*i32)", "done_s": 2.0}]
    cold = [{"first_call_ms": 900.0, "second_call_ms": 0.5, "first_in_process": True, "ok": True, "warmed": True,
             "process": 0},
            {"first_call_ms": 9.0, "second_call_ms": 0.5, "first_in_process": True, "ok": True, "warmed": True,
             "process": 0},
            {"first_call_ms": 0.7, "second_call_ms": 0.4, "first_in_process": False, "ok": False, "warmed": True,
             "process": 0}]
    meta = {"gpu_name": "G", "threads": 4, "commit": "abc"}
    text = sections.compile_section(warm, meta, "w.csv", cold, meta, "c.csv", "###")
    assert "3 variants compiled in 60.5 s with 4 threads" in text
    assert "| `_hier_kernel` | 2 | 40.0–60.5 |" in text
    assert "| the process's first call | 1 | 900 |" in text
    assert "| a later call launching a kernel new to its process | 1 | 9.00 |" in text
    assert "| every kernel already launched in the process | 1 | 0.70 | 0.70–0.70 | 0.40 | 0 | 1 |" in text
    assert "no `dsa_lab.warmup.preload()` first" in text
    pre = [dict(r, preload_ms=1500.0) for r in cold]
    assert "preload()` first: 1500–1500 ms" in sections.compile_section(warm, meta, "w.csv", pre, meta, "c.csv", "###")
    assert sections.compile_section([], {}, "w.csv", [], {}, "c.csv", "###") == ""


def test_large_k_targets_take_the_worst_context_and_every_point():
    """Per k and stage: every point faster than torch and torch_live (one point equal to torch_live fails it), and
    the lowest per-context median is the measure of "≥ 3x at every context"; the 640-row select point has its own
    µs limit."""
    rows = []
    for k in (2048, 512):
        for stage in ("select", "full"):
            for c, sp in ((4096, 10.0), (262144, 2.5 if stage == "full" else 4.0)):
                for conc in (1, 128):
                    us = 100.0 if conc == 128 and c == 262144 and stage == "select" else 10.0
                    live = us if (k, stage, c, conc) == (512, "select", 4096, 1) else us * 2
                    rows += [_row("torch", stage, c, conc, 5, k, "normal", us * sp),
                             _row("torch_live", stage, c, conc, 5, k, "normal", live),
                             _row("triton", stage, c, conc, 5, k, "normal", us)]
    t = {r[0]: r for r in targets.large_k_targets(points.index(rows))}
    assert t["k = 2048, select: every point faster than torch and torch_live"][1:3] == ["8/8 faster", "**met**"]
    slow = t["k = 512, select: every point faster than torch and torch_live"]
    assert slow[1:3] == ["7/8 faster", "**not met**"] and "1.00x vs torch_live at ctx 4K, 5 rows" in slow[3]
    row = t["k = 2048, select: median speedup over torch ≥ 3x at every context"]
    assert row[1:3] == ["lowest 4.00x (256K)", "**met**"]
    full = t["k = 2048, full: median speedup over torch ≥ 3x at every context"]
    assert full[1:3] == ["lowest 2.50x (256K)", "**not met**"] and full[3] == "4K: 10.00x, 256K: 2.50x"
    big = t["select: 640 rows × 262144 context ≤ 100 µs"]
    assert big[1:3] == ["100 µs", "**met**"]


def test_full_budget_rows_place_the_target_against_the_floors():
    """torch / 3 against the default arm's recorded floor and the one-pass floor (bytes less the scores' write and
    read-back, at the stream ceiling): a budget under the recorded floor is named as such, a select over what the
    floor leaves is named, a met point says met."""
    ceil = {"stream_gbps": 1.0, "launch_us": 0.5}  # 1 GB/s: 1000 bytes per µs
    rows = []
    for conc, torch_us, tri_us, floor, sel in ((1, 30.0, 9.0, 0.5, 4.0), (32, 60.0, 30.0, 10.0, 15.0),
                                                (128, 90.0, 45.0, 40.0, 5.0)):
        f = _row("triton", "full", 262144, conc, 1, 2048, "normal", tri_us, floor=floor)
        f.update(bytes=int(floor * 1000), live_blocks=1)
        rows += [_row("torch", "full", 262144, conc, 1, 2048, "normal", torch_us), f,
                 _row("triton", "select", 262144, conc, 1, 2048, "normal", sel)]
    got = targets.full_budget_rows(points.index(rows), 262144, 2048, ceil)
    assert [r[0] for r in got] == [1, 32, 128]
    assert got[0][3] == "3.33x" and got[0][-1] == "met"
    assert got[1][4:] == ["20.000", "10.000", "9.744", "10.000", "15.000", "select over the remainder"]
    assert got[2][4:8] == ["30.000", "40.000", "38.976", "-10.000"] and got[2][-1] == "below the default arm's floor"
    assert got[0][6] == "0.500"  # the launch floor bounds the one-pass floor from below


def test_report_adds_the_large_k_targets_where_the_record_has_them(record):
    """A record with k = 2048 rows gets the large-k targets (here select only: the full stage's rows are ungraded) and
    no full-stage allowance table without full-stage k = 2048 rows."""
    md = writer.build(record)
    assert "### Targets: k = 2048\n" in md
    assert "| k = 2048, select: every point faster than torch and torch_live | 2/2 faster | **met** |" in md
    assert "| k = 2048, select: median speedup over torch ≥ 3x at every context | lowest 4.00x (4K) | **met** |" in md
    assert "| k = 2048, full: every point faster than torch and torch_live | — | — |" in md
    assert "against 3x over `torch`" not in md


def test_gpu_lane_text_reads_the_lane_summaries(tmp_path):
    from dsa_lab.bench.report.writer import gpu_lane_text

    d = tmp_path / "h100" / "gpu_lane"
    d.mkdir(parents=True)
    (d / "summary_abc1234.txt").write_text(
        "GPU lane on NVIDIA H100 80GB HBM3 torch 2.11 (2026-12-06, commit 0000000)\n"
        "  warmup    pass    0.2 min  123 variants in 1.6 s\n"
        "  tests     pass    1.0 min  165 passed, 883 deselected\n"
        "  verify    FAIL    0.4 min  54 matrix cases x 3 arms: 1 strict failures\n"
        "logs: /x/\n")
    (d / "call_abc1234_output.txt").write_text("# header\n123 variants in 159.3 s\n123 variants in 1.6 s\n")
    text = gpu_lane_text(tmp_path)
    assert "123 variants in 2.7 min" in text
    assert "at abc1234: tests 1.0 min (165 passed, 883 deselected)" in text
    assert "verify" not in text and "warmup    " not in text  # a failed part and the warm rerun are not run times
    assert gpu_lane_text(tmp_path / "none") == "not measured yet\n"
