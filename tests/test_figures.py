"""dsa_lab.workbook.figures: the plotly figures the notebooks show (traces, axes, titles; absent records say so)."""
import pytest
from _workbook_helpers import producer_rows, synthetic_sweep

from dsa_lab.workbook import backend, figures, records

go = pytest.importorskip("plotly.graph_objects")


@pytest.fixture(autouse=True)
def _template():
    figures.setup("none")


def test_setup_and_backend():
    import plotly.io as pio

    info = figures.setup("none")
    assert pio.templates.default == "none"
    assert info["mode"] in ("gpu", "interpreter", "torch-cpu")
    assert backend.backend_banner().startswith("Backend: ")


def test_key_figures():
    f = figures.key_bits_figure("nan", 5)
    assert isinstance(f, go.Figure)
    assert "0x7FFFFFFFFFFFFFFA" in f.layout.title.text
    z = f.data[0].z
    assert len(z) == 2 and len(z[0]) == 32 and z[0][0] == 0 and z[0][1] == 1
    m = figures.ordered_map_figure(33)
    ys = list(m.data[0].y)
    assert ys == sorted(ys)  # positives: increasing
    yn = list(m.data[1].y)
    assert yn == sorted(yn, reverse=True)  # negatives: decreasing in the bits
    assert max(yn) < min(ys)


def test_pipeline_figure():
    f = figures.pipeline_figure()
    texts = " ".join(a.text for a in f.layout.annotations)
    assert "32768" in texts and "candidate select" in texts


def test_skip_figure():
    f = figures.skip_figure((4096, 65536))
    assert list(f.data[0].y) == [512, 8192]


def test_absent_record_figures(tmp_path):
    rows, meta, path = records.load_records("select_sweep", root=tmp_path)
    f = figures.time_vs_context_figure(rows, meta, path)
    assert "NO RECORD" in f.layout.annotations[0].text
    assert "NO RECORD" in figures.roofline_figure(rows, meta, path).layout.annotations[0].text


def test_sweep_figures(tmp_path):
    root = synthetic_sweep(tmp_path)
    sw = records.load_records("select_sweep", root=root)
    rows, meta, path = sw
    assert rows and meta["sm_count"] == 132
    f = figures.time_vs_context_figure(*sw)
    assert [t.name for t in f.data] == ["torch", "torch_live", "triton"]
    assert list(f.data[0].x) == [4096, 16384, 65536]
    assert "NVIDIA H200" in f.layout.title.text and "select_sweep.csv" in f.layout.title.text
    assert f.layout.xaxis.type == "log"
    f = figures.time_vs_rows_figure(*sw, context=16384)
    assert list(f.data[2].x) == [1, 8, 128]
    r = figures.roofline_figure(*sw)
    names = [t.name for t in r.data]
    assert "triton · select" in names and "torch · full" in names and any(n.startswith("floor") for n in names)
    floor = r.data[-1]
    assert min(floor.y) == pytest.approx(1.21)
    seed = records.load_records("speedup_by_context", gpu="mi355x_seed", root=root)
    c = figures.seed_comparison_figure(sw, seed)
    assert any("MI355X" in t.name and "transcribed" in t.name for t in c.data)
    assert any("H200" in t.name for t in c.data)


def test_step_breakdown_figure(tmp_path):
    wide = [{"arm": "triton", "context": 4096, "concurrency": 8, "next_n": 1, "logits_us": 10.0, "scores_us": 0,
             "select_us": 4.0, "flags_us": 1.0, "sanitize_us": 1.0}]
    f = figures.step_breakdown_figure(wide, {"gpu_name": "NVIDIA H200"}, tmp_path / "step_breakdown.csv")
    assert [t.name for t in f.data][:2] == ["logits", "scores"]
    # long format, as `dsa-lab sweep --suite step` records it
    long = [{"arm": a, "stage": s, "context": 4096, "concurrency": 8, "next_n": 1, "median_us": v}
            for a in ("triton", "torch") for s, v in (("logits", 10.0), ("sanitize", 1.0), ("scores", 2.0),
                                                     ("select", 3.0), ("flags", 1.0), ("candidates", 5.0),
                                                     ("step", 18.0))]
    f = figures.step_breakdown_figure(long, {"gpu_name": "NVIDIA H200"}, tmp_path / "step_breakdown.csv")
    assert [t.name for t in f.data] == ["logits", "sanitize", "scores", "select", "flags", "whole step (measured)"]
    assert list(f.data[0].y) == [10.0] and "H200" in f.layout.title.text


def test_producer_roofline_figure():
    """One trace per next_n and the roofline (min of the fp8 peak and intensity x bandwidth)."""
    meta, rows = producer_rows()
    fig = figures.producer_roofline_figure(rows, meta, "x.csv")
    names = [tr.name for tr in fig.data]
    assert names[:2] == ["next_n 1", "next_n 5"] and names[2].startswith("roofline")
    ys = fig.data[2].y
    assert max(ys) == 1000.0 and min(ys) < 1000.0  # the flat compute roof and the sloped bandwidth roof


def test_static_figures(tmp_path):
    figs = figures.static_figures(root=synthetic_sweep(tmp_path))
    assert {"key_layout", "extent_skipping", "time_vs_context", "roofline", "speedup_vs_seed"} <= set(figs)
    assert all(isinstance(figs[n], go.Figure) for n in ("key_layout", "time_vs_context", "roofline", "speedup_vs_seed"))
    assert figs["step_breakdown"] is None  # absent record: not exported
    empty = figures.static_figures(root=tmp_path / "nothing")
    assert empty["roofline"] is None and empty["key_layout"] is not None


def test_every_title_clears_the_toolbar(tmp_path):
    """Each figure a notebook shows puts its title below plotly's toolbar band (the modebar, top right) and leaves
    room for every title line in the top margin."""
    from dsa_lab.workbook import widgets

    sw = records.load_records("select_sweep", root=synthetic_sweep(tmp_path))
    absent = records.load_records("select_sweep", root=tmp_path / "nothing")
    meta, prod = producer_rows()
    step = [{"arm": "triton", "stage": s, "context": 4096, "concurrency": 8, "next_n": 1, "median_us": 1.0}
            for s in ("logits", "step")]
    figs = [figures.pipeline_figure(), figures.key_bits_figure("nan", 5), figures.ordered_map_figure(9),
            figures.skip_figure(), figures.time_vs_context_figure(*sw), figures.time_vs_rows_figure(*sw),
            figures.roofline_figure(*sw), figures.seed_comparison_figure(sw, absent),
            figures.step_breakdown_figure(step, {}, "s.csv"), figures.fused_step_figure(step, {}, "s.csv"),
            figures.producer_roofline_figure(prod, meta, "p.csv"), figures.time_vs_context_figure(*absent),
            widgets.point_figure(widgets.extent_point(4096, 1, 64, records=sw, mode="torch-cpu"), "a point")]
    for f in figs:
        t = f.layout.title
        lines = t.text.count("<br>") + 1
        assert (t.yref, t.y, t.yanchor, t.pad.t) == ("container", 1, "top", figures.MODEBAR_PX), t.text
        assert (t.xref, t.x, t.xanchor) == ("paper", 0, "left"), t.text
        assert f.layout.margin.t >= figures.MODEBAR_PX + figures.TITLE_LINE_PX * lines, t.text
