"""The workbook's live runs (`dsa_lab.workbook.live`) and the compile log (`dsa_lab._env.log_compiles`): the checks
at the interpreter's sizes here, at real shapes under the `gpu` mark; the nbval recorder on synthetic reports."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from dsa_lab.workbook import live, widgets


def test_select_check_agrees_at_interpreter_sizes():
    rows = live.select_check()
    assert [(r["rows"], r["k"]) for r in rows] == [(1, 16), (1, 100), (3, 16), (3, 100)]
    assert all(r["agrees"] and r["width"] == 1024 for r in rows)
    assert live.select_summary(rows).endswith("True")


def test_select_check_catches_a_wrong_arm(monkeypatch):
    """The check fails when the arm leaves a slot unwritten (the poison stays) or picks another column."""
    from dsa_lab import select

    real = select.topk_select

    def lazy(x, k, *, out=None, impl="auto", **kw):
        res = real(x, k, impl="reference", **kw)
        if impl == "reference" or out is None:
            return res
        out[:, :-1] = res[:, :-1]  # the last slot keeps its poison
        return out

    monkeypatch.setattr(select, "topk_select", lazy)
    rows = live.select_check("torch-cpu", seed=3)
    assert not any(r["agrees"] for r in rows)
    assert live.select_summary(rows).endswith("False")


def test_widget_settings_cover_every_slider_and_the_sweep_calls_the_callback():
    ui = widgets.rows_widget()
    s = live.widget_settings(ui)
    assert len(s) == 10 * 4 and {"rows", "context"} == set(s[0])
    assert len(live.widget_settings(widgets.extent_widget())) == 7 * 10 * 3
    pts = live.widget_sweep(ui, [{"rows": 2, "context": 4096}, {"rows": 4, "context": 16384}])
    assert [(p["rows"], p["context"]) for p in pts] == [(2, 4096), (4, 16384)]
    assert all(p["tiny"]["agree"]["torch"] for p in pts)


def test_producer_check_holds_at_tiny_shapes():
    res = live.producer_check()
    assert res["holds"] is True
    assert res["poisoned_tail"]["rows_picking_poison_without_bounds"] > 0


def test_recorder_charges_failures_and_compiles_to_their_cells():
    r = live.NotebookRecorder()
    r.add("notebooks/a.ipynb::Cell 0", "setup", "passed", 10.0, 12.0)
    r.add("notebooks/a.ipynb::Cell 0", "call", "passed", 12.0, 13.0)
    r.add("notebooks/a.ipynb::Cell 1", "call", "failed", 13.0, 15.0, "Traceback\nValueError: bad k")
    r.add("notebooks/b.ipynb::Cell 0", "call", "skipped", 20.0, 20.5, "skipped: needs a GPU")
    events = [{"t": 12.5, "kernel": "_hier_kernel", "cache_hit": True},
              {"t": 14.0, "kernel": "_radix_kernel", "cache_hit": False, "compile_us": 2_500_000},
              {"t": 30.0, "kernel": "_late", "cache_hit": False, "compile_us": 1}]
    s = r.summary(events)
    a = s["notebooks/a.ipynb"]
    assert (a["cells"], a["passed"], a["failed"], a["wall_s"]) == (2, 1, 1, 5.0)
    assert a["failures"] == [{"cell": "Cell 1", "message": "ValueError: bad k"}]
    assert a["cache_loads"] == 1 and a["compiles"] == [{"cell": "Cell 1", "kernel": "_radix_kernel",
                                                         "compile_s": 2.5, "variant": None}]
    assert s["notebooks/b.ipynb"]["skipped"] == 1
    assert s["(between cells)"]["compiles"][0]["kernel"] == "_late"


def test_compile_log_records_a_compile_then_a_cache_load(tmp_path):
    """Compiling one kernel twice for sm_90 (no GPU needed): a compile, then a load from the disk cache."""
    src = tmp_path / "k.py"
    src.write_text(textwrap.dedent("""
        import dsa_lab, triton, triton.language as tl
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource

        @triton.jit
        def tiny(X, N: tl.constexpr):
            tl.store(X + tl.arange(0, N), 1.0)

        s = ASTSource(fn=tiny, signature={"X": "*fp32", "N": "constexpr"}, constexprs={"N": 16})
        for _ in range(2):
            triton.compile(s, target=GPUTarget("cuda", 90, 32))
    """))
    log = tmp_path / "compiles.jsonl"
    env = {"DSA_LAB_COMPILE_LOG": str(log), "TRITON_CACHE_DIR": str(tmp_path / "cache"), "TRITON_INTERPRET": "0"}
    subprocess.run([sys.executable, str(src)], check=True, env={**os.environ, **env}, cwd=tmp_path)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(x["kernel"], x["cache_hit"], x["variant"]) for x in lines] == [("tiny", False, "*fp32 | N=16"),
                                                                            ("tiny", True, "*fp32 | N=16")]
    assert lines[0]["compile_us"] > lines[1]["compile_us"] >= 0


@pytest.mark.gpu
def test_live_checks_at_real_shapes():
    rows = live.select_check()
    assert {r["width"] for r in rows} == {262144} and all(r["agrees"] for r in rows)
    assert live.producer_check()["holds"]
