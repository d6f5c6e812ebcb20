"""dsa_lab.workbook.viz: figure builders, tables and widget callbacks (what the notebooks show)."""
import csv
import json

import pytest
import torch

from dsa_lab import keys

from dsa_lab.workbook import viz

go = pytest.importorskip("plotly.graph_objects")
pytest.importorskip("ipywidgets")


@pytest.fixture(autouse=True)
def _template():
    viz.setup("none")


def _sweep(tmp_path):
    """A small synthetic select_sweep record in tmp_path/h200 (same columns as the real one)."""
    d = tmp_path / "h200"
    d.mkdir()
    cols = ["arm", "stage", "context", "concurrency", "next_n", "rows", "k", "dist", "median_us", "p10_us", "p90_us",
            "bytes", "gbps", "floor_us", "roofline_frac", "max_model_len", "block_size"]
    rows = []
    for arm, base in (("torch", 50.0), ("torch_live", 20.0), ("triton", 4.0)):
        for stage in ("select", "full"):
            for ctx in (4096, 16384, 65536):
                for conc in (1, 8, 128):
                    t = base * (1 + conc / 64) * (1 if arm == "torch" else ctx / 4096) ** 0.5 * (2 if stage == "full" else 1)
                    b = conc * ctx // 2
                    rows.append(dict(arm=arm, stage=stage, context=ctx, concurrency=conc, next_n=1, rows=conc, k=64,
                                     dist="normal", median_us=t, p10_us=0.9 * t, p90_us=1.1 * t, bytes=b,
                                     gbps=b / t / 1e3, floor_us=max(1.2, b / 4.64e6), roofline_frac=max(1.2, b / 4.64e6) / t,
                                     max_model_len=262144, block_size=8))
    with open(d / "select_sweep.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    (d / "select_sweep.meta.json").write_text(json.dumps(
        {"gpu_name": "NVIDIA H200", "sm_count": 132, "ceilings": {"stream_gbps": 4640.0, "launch_us": 1.21, "two_launch_us": 1.78}}))
    seed = tmp_path / "mi355x_seed"
    seed.mkdir()
    (seed / "speedup_by_context.csv").write_text("context,points,median_x,min_x,max_x\n4096,40,4.16,3.97,5.08\n")
    (seed / "speedup_by_context.meta.json").write_text(json.dumps({"gpu_name": "AMD Instinct MI355X", "transcribed": True}))
    return tmp_path


def test_setup_and_backend():
    import plotly.io as pio

    info = viz.setup("none")
    assert pio.templates.default == "none"
    assert info["mode"] in ("gpu", "interpreter", "torch-cpu")
    assert viz.backend_banner().startswith("Backend: ")


@pytest.mark.parametrize("text,bits", [("-0.0", 0x80000000), ("nan", 0x7FC00000), ("0x7f800001", 0x7F800001),
                                       ("-inf", 0xFF800000), ("1.5", 0x3FC00000), ("0xFFFFFFFF", 0xFFFFFFFF)])
def test_key_fields(text, bits):
    f = viz.key_fields(text, 7)
    assert f["bits"] == f"0x{bits:08X}"
    x = viz._score_tensor(text)
    k = int(keys.pack_keys(x, torch.tensor([7]))[0])
    assert f["key_signed"] == k
    assert f["key"] == f"0x{k & (2**64 - 1):016X}"
    assert f["key_lo"] == f"0x{0xFFFFFFFF - 7:08X}"
    assert f["ordered"] == f"0x{int(keys.ordered_bits(x)[0]):08X}"
    assert f["unpacked_index"] == 7
    assert len(f["key_bits"]) == 64
    assert f["candidate"] == (text != "-inf")


def test_key_fields_errors():
    with pytest.raises(ValueError):
        viz.key_fields("banana", 0)
    with pytest.raises(ValueError, match="MAX_INDEX"):
        viz.key_fields("1.0", keys.MAX_INDEX + 1)


def test_key_widget_drives_callback():
    ui = viz.key_widget("1.0", 3)
    assert "0x3F800000" in ui.result.data
    ui.children[0].value = "-0.0"
    assert "0x80000000" in ui.result.data and "-0.0" in ui.result.data
    ui.children[0].value = "not a number"
    assert "not a number" in ui.result.data  # the error is shown, not raised


def test_key_figures():
    f = viz.key_bits_figure("nan", 5)
    assert isinstance(f, go.Figure)
    assert "0x7FFFFFFFFFFFFFFA" in f.layout.title.text
    z = f.data[0].z
    assert len(z) == 2 and len(z[0]) == 32 and z[0][0] == 0 and z[0][1] == 1
    m = viz.ordered_map_figure(33)
    ys = list(m.data[0].y)
    assert ys == sorted(ys)  # positives: increasing
    yn = list(m.data[1].y)
    assert yn == sorted(yn, reverse=True)  # negatives: decreasing in the bits
    assert max(yn) < min(ys)


def test_pipeline_figure():
    f = viz.pipeline_figure()
    texts = " ".join(a.text for a in f.layout.annotations)
    assert "32768" in texts and "candidate select" in texts


def test_skip_fraction():
    assert viz.skip_fraction(4096) == pytest.approx(1 - 512 / 32768)
    assert viz.skip_fraction(262144) == 0
    assert viz.skip_fraction(10**7) == 0
    r = viz.skip_rows((4096,))
    assert r[0]["skipped"] == "98.44%" and r[0]["live_blocks"] == 512
    f = viz.skip_figure((4096, 65536))
    assert list(f.data[0].y) == [512, 8192]


def test_absent_records(tmp_path):
    rows, meta, path = viz.load_records("select_sweep", root=tmp_path)
    assert rows is None and path == tmp_path / "h200" / "select_sweep.csv"
    assert viz.record_status((rows, meta, path)).startswith("NO RECORD")
    f = viz.time_vs_context_figure(rows, meta, path)
    assert "NO RECORD" in f.layout.annotations[0].text
    assert "NO RECORD" in viz.roofline_figure(rows, meta, path).layout.annotations[0].text
    assert "NO RECORD" in viz.summarize_verification(tmp_path / "h200" / "fuzz.json")


def test_sweep_figures(tmp_path):
    root = _sweep(tmp_path)
    sw = viz.load_records("select_sweep", root=root)
    rows, meta, path = sw
    assert rows and meta["sm_count"] == 132
    f = viz.time_vs_context_figure(*sw)
    assert [t.name for t in f.data] == ["torch", "torch_live", "triton"]
    assert list(f.data[0].x) == [4096, 16384, 65536]
    assert "NVIDIA H200" in f.layout.title.text and "select_sweep.csv" in f.layout.title.text
    assert f.layout.xaxis.type == "log"
    f = viz.time_vs_rows_figure(*sw, context=16384)
    assert list(f.data[2].x) == [1, 8, 128]
    r = viz.roofline_figure(*sw)
    names = [t.name for t in r.data]
    assert "triton · select" in names and "torch · full" in names and any(n.startswith("floor") for n in names)
    floor = r.data[-1]
    assert min(floor.y) == pytest.approx(1.21)
    sp = viz.speedup_rows(rows)
    assert [s["context"] for s in sp] == [4096, 16384, 65536]
    assert sp[0]["points"] == 3 and float(sp[0]["median_x"]) > 1
    seed = viz.load_records("speedup_by_context", gpu="mi355x_seed", root=root)
    c = viz.seed_comparison_figure(sw, seed)
    assert any("MI355X" in t.name and "transcribed" in t.name for t in c.data)
    assert any("H200" in t.name for t in c.data)


def test_extent_point_and_widget(tmp_path):
    sw = viz.load_records("select_sweep", root=_sweep(tmp_path))
    p = viz.extent_point(16384, 8, 64, records=sw, mode="torch-cpu")
    assert p["live_blocks"] == 2048 and p["mode"] == "torch-cpu"
    assert p["us"]["torch"] > p["us"]["triton"]
    assert p["tiny"]["agree"]["torch"] in (True, False)
    assert "recorded" in p["source"]
    ui = viz.extent_widget(records=sw)
    assert isinstance(ui.result, go.Figure)
    ui.children[0].value = 65536
    assert "context 65536" in ui.result.layout.title.text
    ui2 = viz.rows_widget(records=sw)
    ui2.children[0].value = 128
    assert "rows 128" in ui2.result.layout.title.text


def test_summarize_verification(tmp_path):
    p = tmp_path / "verify_matrix.csv"
    p.write_text("case,arm,mismatches\na,torch,0\nb,torch,2\na,triton,0\n")
    s = viz.summarize_verification(p)
    assert "arm torch: 2 configurations, 1 with a mismatch" in s
    assert "MISMATCH b" in s and "arm triton: 1 configurations, 0 with a mismatch" in s
    j = tmp_path / "fuzz.json"
    j.write_text(json.dumps({"cases": 100000, "mismatches": 0, "gpu_name": "NVIDIA H200"}))
    s = viz.summarize_verification(j)
    assert "cases: 100000" in s and "NVIDIA H200" in s
    # the `dsa-lab verify --fuzz` record format
    j.write_text(json.dumps({"n": 300, "meta": {"gpu_name": "NVIDIA H200", "commit": "abcdef123", "date_utc": "2026-11-29T09:00"},
                             "arms": {"triton": {"cases": 300, "mismatched_cases": 1}, "torch": {"cases": 300, "mismatched_cases": 0}},
                             "failures": [{"case": "fuzz_blocks", "arm": "triton", "seed": 7, "error": "", "first_mismatch": "row 3"}]}))
    s = viz.summarize_verification(j)
    assert "random cases: 300" in s and "arm triton: 300 cases, 1 with a mismatch" in s and "commit abcdef1" in s
    assert "MISMATCH fuzz_blocks [triton] seed 7: row 3" in s and "NVIDIA H200" in s


def test_itl_and_step_breakdown(tmp_path):
    wide = [{"arm": "triton", "context": 4096, "concurrency": 8, "next_n": 1, "logits_us": 10.0, "scores_us": 0,
             "select_us": 4.0, "flags_us": 1.0, "sanitize_us": 1.0}]
    r = viz.itl_share_rows(wide, itl_ms=16.0)
    assert r[0]["step_us"] == 16.0 and r[0]["itl_share"] == "0.10%"
    f = viz.step_breakdown_figure(wide, {"gpu_name": "NVIDIA H200"}, tmp_path / "step_breakdown.csv")
    assert [t.name for t in f.data][:2] == ["logits", "scores"]
    # long format, as `dsa-lab sweep --suite step` records it
    long = [{"arm": a, "stage": s, "context": 4096, "concurrency": 8, "next_n": 1, "median_us": v}
            for a in ("triton", "torch") for s, v in (("logits", 10.0), ("sanitize", 1.0), ("scores", 2.0),
                                                     ("select", 3.0), ("flags", 1.0), ("candidates", 5.0), ("step", 18.0))]
    f = viz.step_breakdown_figure(long, {"gpu_name": "NVIDIA H200"}, tmp_path / "step_breakdown.csv")
    assert [t.name for t in f.data] == ["logits", "sanitize", "scores", "select", "flags", "whole step (measured)"]
    assert list(f.data[0].y) == [10.0] and "H200" in f.layout.title.text
    r = viz.itl_share_rows(long, itl_ms=18.0, layers=10)
    assert len(r) == 1 and r[0]["step_us"] == 180.0 and r[0]["itl_share"] == "1.00%"
    cmp = viz.itl_compare_rows(long, itl_ms=18.0, layers=10)
    assert cmp == [{"context": 4096, "concurrency": 8, "next_n": 1, "torch_us": 18.0, "triton_us": 18.0,
                    "saving_us x10 layers": 0.0, "torch_share": "1.0%", "triton_share": "1.0%"}]
    prod = [{"arm": a, "stage": "sanitize", "context": 4096, "concurrency": 8, "next_n": 1, "median_us": v}
            for a, v in (("bounded", 2.0), ("full_width", 50.0))] + [
           {"arm": "triton", "stage": "logits", "context": 4096, "concurrency": 8, "next_n": 1, "median_us": 9.0}]
    sr = viz.sanitize_rows(prod)
    assert sr == [{"context": 4096, "concurrency": 8, "next_n": 1, "bounded_us": 2.0, "full_width_us": 50.0,
                   "full/bounded": "25.0x"}]


def test_split_rule_rows():
    pytest.importorskip("dsa_lab.select_triton")
    t = viz.split_rule_rows(132, rows_list=(1, 640))
    assert t[0]["rows"] == 1 and t[0]["P"] >= t[1]["P"] >= 1
    assert t[1]["grid"] == 640 * t[1]["P"]
    r = viz.split_rule_rows(132, rows_list=(1, 640), k=2048)  # the parallel radix at 1 row: 32 programs
    assert (r[0]["algo"], r[0]["parallel"], r[0]["P"], r[0]["grid"]) == ("radix", True, 32, 32)
    assert (r[1]["parallel"], r[1]["P"], r[1]["grid"]) == (False, 1, 640)


def test_static_figures(tmp_path):
    figs = viz.static_figures(root=_sweep(tmp_path))
    assert {"key_layout", "extent_skipping", "time_vs_context", "roofline", "speedup_vs_seed"} <= set(figs)
    assert all(isinstance(figs[n], go.Figure) for n in ("key_layout", "time_vs_context", "roofline", "speedup_vs_seed"))
    assert figs["step_breakdown"] is None  # absent record: not exported
    empty = viz.static_figures(root=tmp_path / "nothing")
    assert empty["roofline"] is None and empty["key_layout"] is not None


@pytest.mark.gpu
def test_extent_point_live_on_gpu():
    p = viz.extent_point(16384, 8, 64, mode="gpu")
    assert set(p["us"]) == {"torch", "triton", "torch_live"} and all(v > 0 for v in p["us"].values())
    assert "live on" in p["source"]


def test_float_max_table(tmp_path):
    p = tmp_path / "h200" / "float_max_check.json"
    assert "NO RECORD" in viz.float_max_table(p)
    p.parent.mkdir()
    p.write_text(json.dumps({"meta": {"gpu_name": "NVIDIA H200", "commit": "0123456789"}, "rows": [
        {"block": "-0,+0", "contract": "0x00000000", "torch_amax": "0x80000000", "triton_tl_max": "0x00000000",
         "torch_amax_ok": False, "triton_tl_max_ok": True}]}))
    s = viz.float_max_table(p)
    assert "NVIDIA H200" in s and "commit 0123456" in s
    assert "0x80000000 !" in s and "0x00000000 !" not in s


def test_radix_dev_rows():
    rows = [{"k": 2048, "dist": "normal", "context": 4096, "rows": 1, "arm": a, "median_us": v, "check": c}
            for a, v, c in (("torch", 60.0, ""), ("triton", 20.0, ""), ("radix_t2048", 5.0, "ok"), ("radix_t4096", 10.0, "ok"))]
    rows += [{"k": 64, "dist": "normal", "context": 4096, "rows": 1, "arm": a, "median_us": v, "check": "ok"}
             for a, v in (("torch", 40.0), ("triton", 2.0), ("radix_t2048", 8.0))]
    t = viz.radix_dev_rows(rows)
    assert [r["k"] for r in t] == [2048, 64]
    assert t[0]["radix_us"] == "5.0" and t[0]["radix_vs_hier"] == "4.00x" and t[0]["radix_vs_torch"] == "12.00x"
    assert t[1]["radix_vs_hier"] == "0.25x" and t[0]["check"] == "ok"


def test_variant_rows():
    rows = [{"stage": "select", "k": 2048, "dist": d, "context": 262144, "rows": 1, "arm": a, "median_us": v, "check": c}
            for d, a, v, c in (("normal", "torch", 60.0, ""), ("normal", "hier", 340.0, "ok"), ("normal", "r30", 170.0, "ok"),
                               ("normal", "r32", 103.0, "ok"), ("equal", "torch", 61.0, ""), ("equal", "r30", 200.0, "ok"),
                               ("equal", "r32", 350.0, "mismatch 1/1"))]
    rows.append({"stage": "select", "k": 64, "dist": "normal", "context": 4096, "rows": 1, "arm": "r30", "median_us": 9.0,
                 "check": "ok"})
    t = viz.variant_rows(rows, ["torch", "hier", "r30", "r32"], k=2048)
    assert [(r["dist"], r["rows"]) for r in t] == [("normal", 1), ("equal", 1)]
    assert t[0]["fastest"] == "torch" and t[0]["r32"] == "103.0" and t[0]["checks"] == "ok"
    assert t[1]["hier"] == "—" and t[1]["checks"] == "FAILED"
    t = viz.variant_rows(rows, ["hier", "r30", "r32"], k=2048, dist="normal")
    assert len(t) == 1 and t[0]["fastest"] == "r32"
    assert viz.variant_rows(rows, ["r30"], stage="full") == []
    # timing-only arms (parts of a kernel, W's t_*) are not failures; a run without a dist column counts as normal
    part = [{"k": 64, "context": 4096, "rows": 32, "arm": a, "median_us": v, "check": c}
            for a, v, c in (("default", 5.0, "ok"), ("t_stage_a", 2.0, "timing only"))]
    t = viz.variant_rows(part, ["default", "t_stage_a"], dist="normal")
    assert len(t) == 1 and t[0]["checks"] == "ok + timing only" and t[0]["fastest"] == "default"
    assert t[0]["t_stage_a"] == "2.0"  # shown, but a part of a kernel is never the fastest
    part.append({"k": 64, "context": 4096, "rows": 32, "arm": "bad", "median_us": 1.0, "check": "mismatch 1/32"})
    assert viz.variant_rows(part, ["default"])[0]["checks"] == "FAILED"


def test_stagea_rows():
    def row(v, n, us, P=4, nw=4, check="ok"):
        return {"variant": v, "rows": n, "context": 262144, "P": P, "NT": 8, "num_warps": nw, "median_us": us,
                "gbps": n * 262144 * 4 / (us * 1e3), "check": check}
    rows = [row("read", 640, 150.0, check="timing-only"), row("read", 640, 160.0, P=8, check="timing-only"),
            row("cur", 640, 330.0), row("cur", 640, 300.0, nw=8), row("flat_hi", 640, 180.0, P=8, nw=8),
            row("flat_hi", 640, 170.0, check="MISMATCH l1 3"), row("cur", 32, 20.0)]
    t = viz.stagea_rows(rows)
    assert [(r["rows"], r["variant"]) for r in t] == [(640, "cur"), (640, "flat_hi"), (640, "read"), (32, "cur")]
    cur, hi, rd, small = t
    assert cur["median_us"] == "300.0" and cur["config"] == "P 4 / NT 8 / nw 8" and cur["x read"] == "2.00"
    assert cur["check"] == "ok" and rd["check"] == "timing-only" and rd["x read"] == "1.00"
    assert hi["median_us"] == "170.0" and hi["check"] == "MISMATCH l1 3"  # a failing configuration is shown
    assert small["x read"] == "—"  # no load-only row for that shape


def test_old_new_rows_pair_by_point():
    """The older package's time beside this tree's at the same point, whatever the row order; a point without its
    ``old`` row, and an absent record, are left out."""
    def row(arm, rows, us, ratio=None):
        return {"k": 2048, "rows": rows, "context": 262144, "arm": arm, "median_us": us, "ratio_vs_old": ratio}
    rec = ([row("new", 640, 140.0, 0.85), row("new", 1, 16.0, 0.75), row("old", 1, 21.3), row("old", 640, 165.0),
            row("new", 5, 18.0, 0.79)], {}, "x.csv")
    got = viz.old_new_rows([rec, (None, None, "absent.csv")])
    assert [(r["rows"], r["previous_us"], r["current_us"], r["ratio"]) for r in got] == [(640, 165.0, 140.0, 0.85),
                                                                                        (1, 21.3, 16.0, 0.75)]


def test_pipe_rows_one_line_per_case():
    """The counters record, one line per case in its order: time in µs, warp instructions per row, the ALU share,
    the pipe and issue percentages, eligible / resident warps, and the largest stalls without ``selected``."""
    st = "smsp__average_warps_issue_stalled_"
    def case(rows, k, us, inst, alu, stalls):
        m = {"gpu__time_duration.sum": us * 1000, "smsp__inst_executed.sum": inst, "smsp__inst_executed_pipe_alu.sum": alu,
             "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active": 57.8,
             "smsp__issue_active.avg.pct_of_peak_sustained_active": 45.9,
             "smsp__warps_eligible.avg.per_cycle_active": 1.19, "smsp__warps_active.avg.per_cycle_active": 4.0,
             "launch__registers_per_thread": 128}
        m.update({f"{st}{why}_per_issue_active.ratio": v for why, v in stalls.items()})
        return [{"rows": rows, "n": 32768, "k": k, "dist": "normal", "metric": name, "value": v} for name, v in m.items()]
    rec = (case(640, 2048, 134.4, 640 * 94000, 640 * 60000, {"selected": 1.0, "not_selected": 1.59, "wait": 1.37,
                                                             "barrier": 0.47, "math_pipe_throttle": 1.44})
           + case(128, 512, 39.7, 128 * 93000, 128 * 62000, {"no_instruction": 4.8, "selected": 1.0}))
    got = viz.pipe_rows(rec, stalls=3)
    assert [r["case"] for r in got] == ["640 x 32768, k = 2048, normal", "128 x 32768, k = 512, normal"]
    assert got[0]["µs"] == 134.4 and got[0]["warp instr / row"] == 94000 and got[0]["ALU share"] == 0.64
    assert got[0]["eligible / resident warps"] == "1.19 / 4.00"
    assert got[0]["stalls (cycles / issue)"] == "not_selected 1.59, math_pipe_throttle 1.44, wait 1.37"
    assert got[1]["stalls (cycles / issue)"] == "no_instruction 4.80"


def test_ab_ratios_and_tried_rows(tmp_path):
    rows = [{"stage": "full", "k": 64, "dist": "normal", "context": c, "rows": n, "arm": a, "median_us": v, "check": "ok"}
            for c, n, a, v in ((4096, 1, "base", 10.0), (4096, 1, "c1", 12.0), (4096, 1, "c2", 11.0),
                               (4096, 32, "base", 20.0), (4096, 32, "c1", 10.0),
                               (65536, 1, "base", 10.0))]  # no candidate at this point: left out
    rows.append({"stage": "select", "k": 64, "dist": "normal", "context": 4096, "rows": 1, "arm": "c1",
                 "median_us": 1.0, "check": "ok"})
    assert viz.ab_ratios(rows, "base", "c1", stage="full") == [1.2, 0.5]
    assert viz.ab_ratios(rows, "base", ("c1", "c2"), stage="full") == [1.1, 0.5]  # the faster candidate per point
    assert viz.ab_ratios(rows, "base", "c1", stage="full", rows=(32, 640)) == [0.5]
    assert viz.ab_ratios(rows, "base", "c1", stage="select") == []
    d = tmp_path / "h200" / "tune_dev"
    d.mkdir(parents=True)
    with open(d / "run1.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    t = viz.tried_rows([("opt", "what", "deleted", [("tune_dev/run1", "full", "base", "c1")]),
                        ("gone", "what", "deleted", [("tune_dev/absent", "full", "base", "c1")])], root=tmp_path)
    assert list(t[0]) == ["option", "what it was", "candidate / baseline time", "verdict", "records"]
    assert t[0]["candidate / baseline time"] == "full: median 0.85x, 0.50–1.20x, slower at 1 of 2"
    assert t[0]["records"].endswith("run1.csv") and t[0]["verdict"] == "deleted"
    assert t[1]["candidate / baseline time"].startswith("NO RECORD") and t[1]["records"] == "—"


def test_live_widgets_say_when_a_kernel_compiles():
    """A live widget announces a shape's first run before it (the kernels may compile) and, after it, says so when the
    first Triton call took long enough to have compiled; a shape it already ran is not announced again."""
    key = ("test-shape", 3, 64)
    assert "compiles now" in viz.first_use_notice(key) and viz.first_use_notice(key) is None
    assert viz.compile_note(None) == "" and viz.compile_note(0.02) == ""
    assert "took 31.5 s" in viz.compile_note(31.5) and "dsa-lab warmup" in viz.compile_note(31.5)


def test_producer_roofline_rows_and_figure():
    """The producer's points at 128K x 128 per next_n against the record's roofline: fractions carried from the
    record, the binding ceiling named, the 70% target judged; the figure draws one trace per next_n and the
    roofline (min of the fp8 peak and intensity x bandwidth)."""
    meta = {"ceilings": {"stream_gbps": 4000.0, "fp8_tflops": 1000.0}}
    rows = [dict(arm="triton", stage="logits", context=131072, concurrency=128, next_n=n, median_us=t, bytes=2e9,
                 flops=f, tflops=f / t / 1e6, stream_frac=sf, mma_frac=mf, roofline_frac=max(sf, mf))
            for n, t, f, sf, mf in ((1, 700.0, 3e11, 0.714, 0.43), (5, 2000.0, 1.4e12, 0.25, 0.7))]
    rows.append(dict(rows[0], context=4096))  # another context: not in the table
    t = viz.producer_roofline_rows(rows, meta)
    assert [r["next_n"] for r in t] == [1, 5]
    assert t[0]["bound"] == "stream" and t[0][">= 70%"] == "met" and t[0]["of_roofline"] == 0.714
    assert t[1]["bound"] == "fp8 MMA" and t[1][">= 70%"] == "met" and t[1]["peak_tflops"] == 1000.0
    assert viz.producer_roofline_rows([dict(rows[1], roofline_frac=0.69)], meta)[0][">= 70%"] == "not met"
    fig = viz.producer_roofline_figure(rows, meta, "x.csv")
    names = [tr.name for tr in fig.data]
    assert names[:2] == ["next_n 1", "next_n 5"] and names[2].startswith("roofline")
    ys = fig.data[2].y
    assert max(ys) == 1000.0 and min(ys) < 1000.0  # the flat compute roof and the sloped bandwidth roof


def test_dist_spread_rows_per_draw_ratio():
    def row(seed, dist, us, arm="triton", check="ok", k=512, n=128):
        return {"k": k, "rows": n, "seed": seed, "dist": dist, "arm": arm, "median_us": us, "check": check}

    rows = [row(0, "normal", 20.0), row(0, "equal", 16.0), row(0, "nan1pct", 25.0),
            row(1, "normal", 19.0), row(1, "equal", 17.0), row(1, "nan1pct", 18.0),
            row(2, "normal", 18.0), row(2, "equal", 15.0), row(2, "nan1pct", 16.0),
            row(0, "normal", 99.0, arm="torch", check="baseline"),
            row(1, "ramp", 1.0, check="mismatch:1/128"),  # a wrong answer never counts as the fastest
            row(0, "normal", 30.0, k=2048), row(0, "equal", 30.0, k=2048)]
    by = {(r["k"], r["rows"]): r for r in viz.dist_spread_rows(rows)}
    r = by[(512, 128)]
    assert r["draws"] == 3
    assert (r["ratio_min"], r["ratio_median"], r["ratio_max"]) == (round(19 / 17, 3), 1.2, round(25 / 16, 3))
    assert r["draws_over_1.2"] == 1  # 1.2 itself is within the target
    assert r["fastest_us"] == "15.00-17.00" and r["slowest_us"] == "18.00-25.00"
    assert r["slowest_dist"] == "normal 2, nan1pct 1"
    assert by[(2048, 128)]["ratio_max"] == 1.0
