"""dsa_lab.workbook.widgets: the widgets driven without a browser (setting a control runs the callback)."""
import pytest
from _workbook_helpers import synthetic_sweep

from dsa_lab.workbook import figures, records, widgets

go = pytest.importorskip("plotly.graph_objects")
pytest.importorskip("ipywidgets")


@pytest.fixture(autouse=True)
def _template():
    figures.setup("none")


def test_key_widget_drives_callback():
    ui = widgets.key_widget("1.0", 3)
    assert "0x3F800000" in ui.result.data
    ui.children[0].value = "-0.0"
    assert "0x80000000" in ui.result.data and "-0.0" in ui.result.data
    ui.children[0].value = "not a number"
    assert "not a number" in ui.result.data  # the error is shown, not raised


def test_extent_point_and_widget(tmp_path):
    sw = records.load_records("select_sweep", root=synthetic_sweep(tmp_path))
    p = widgets.extent_point(16384, 8, 64, records=sw, mode="torch-cpu")
    assert p["live_blocks"] == 2048 and p["mode"] == "torch-cpu"
    assert p["us"]["torch"] > p["us"]["triton"]
    assert p["tiny"]["agree"]["torch"] in (True, False)
    assert "recorded" in p["source"]
    ui = widgets.extent_widget(records=sw)
    assert isinstance(ui.result, go.Figure)
    ui.children[0].value = 65536
    assert "context 65536" in ui.result.layout.title.text
    ui2 = widgets.rows_widget(records=sw)
    ui2.children[0].value = 128
    assert "rows 128" in ui2.result.layout.title.text


@pytest.mark.gpu
def test_extent_point_live_on_gpu():
    p = widgets.extent_point(16384, 8, 64, mode="gpu")
    assert set(p["us"]) == {"torch", "triton", "torch_live"} and all(v > 0 for v in p["us"].values())
    assert "live on" in p["source"]


def test_live_widgets_say_when_a_kernel_compiles():
    """A live widget announces a shape's first run before it (the kernels may compile) and, after it, says so when the
    first Triton call took long enough to have compiled; a shape it already ran is not announced again."""
    key = ("test-shape", 3, 64)
    assert "compiles now" in widgets.first_use_notice(key) and widgets.first_use_notice(key) is None
    assert widgets.compile_note(None) == "" and widgets.compile_note(0.02) == ""
    assert "took 31.5 s" in widgets.compile_note(31.5) and "dsa-lab warmup" in widgets.compile_note(31.5)
