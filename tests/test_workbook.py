"""The workbook: notebooks in sync with their sources, nbval hygiene, and nbval catching a regression.

``pytest --nbval --nbval-current-env notebooks/`` is the regression test of the notebooks' deterministic
cells; :func:`test_nbval_catches_changed_key_layout` shows that it fails when the key layout changes
(a copy of the package whose ``pack_keys`` no longer inverts the index), and passes on the real one.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbval")

from dsa_lab.workbook import build as workbook  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NB = ROOT / "notebooks"
IGNORE = "# NBVAL_IGNORE_OUTPUT"


def _nb(name):
    return nbformat.read(NB / f"{name}.ipynb", as_version=4)


def test_cli_subcommand_registered():
    from dsa_lab import cli

    p = cli.build_parser()
    a = p.parse_args(["workbook", "--execute-inplace", "--no-html", "--notebooks", "01_key_packing"])
    assert a.execute_inplace and a.no_html and a.notebooks == ["01_key_packing"]
    assert workbook.__doc__.splitlines()[0].startswith("Build the workbook")


def test_py_to_notebook():
    text = ('# %% [markdown]\n# # Title\n#\n# text\n\n# %% tags=["gpu", "x"]\nprint(1)\n\n\n'
            '# %%\n# NBVAL_IGNORE_OUTPUT\nx = 2\n')
    nb = workbook.py_to_notebook(text, "99_t")
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code"]
    assert nb.cells[0].source == "# Title\n\ntext"
    assert nb.cells[1].source == "print(1)" and nb.cells[1].metadata["tags"] == ["gpu", "x"]
    assert nb.cells[2].source.startswith(IGNORE)
    assert [c.id for c in nb.cells] == ["99-00", "99-01", "99-02"]
    nbformat.validate(nb)


def test_strip_notebook():
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"state": {}}
    c = nbformat.v4.new_code_cell("1")
    c.metadata["execution"] = {"iopub.status.busy": "2026"}
    c.execution_count = 3
    c.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "1"}, execution_count=3)]
    nb.cells.append(c)
    workbook.strip_notebook(nb)
    assert "widgets" not in nb.metadata and "execution" not in c.metadata
    assert c.execution_count == 3 and c.outputs  # nbval needs counts with outputs


@pytest.mark.parametrize("name", workbook.NOTEBOOKS)
def test_notebook_in_sync_and_hygienic(name):
    nb = _nb(name)
    py = NB / f"{name}.py"
    if py.exists():  # the committed notebook was built from its source: re-run `dsa-lab workbook --execute-inplace`
        src = workbook.py_to_notebook(py.read_text(), name)
        assert [(c.cell_type, c.source) for c in nb.cells] == [(c.cell_type, c.source) for c in src.cells], (
            f"{name}.ipynb is stale: run `dsa-lab workbook --execute-inplace --notebooks {name}`")
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code), "committed executed"
    first = code[0].source
    # the interpreter is switched on (no GPU) before any kernel module is imported: the workbook's own imports
    assert "_env.interpret_without_gpu()" in first
    assert first.index("_env.interpret_without_gpu()") < first.index("from dsa_lab.workbook import")
    assert "backend_banner" in first  # says which backend runs
    assert "widgets" not in nb.metadata
    for c in code:
        assert "@triton.jit" not in c.source and "tl.load" not in c.source, "no kernel code in notebooks"
        assert "pio.renderers" not in c.source and "init_notebook_mode" not in c.source
        ignored = c.source.lstrip().startswith(IGNORE)
        for o in c.outputs:
            assert o.output_type != "error", f"{name}: error output in committed notebook"
            data = o.get("data", {})
            if "application/vnd.plotly.v1+json" in data or "application/vnd.jupyter.widget-view+json" in data:
                assert ignored, f"{name}: figure/widget output must be in a {IGNORE} cell:\n{c.source[:200]}"
            html = data.get("text/html", "")
            assert "cdn.plot.ly" not in html and "plotly.js v" not in html[:20000], "no inlined / CDN plotly.js"
            if "application/vnd.plotly.v1+json" in data:
                layout = data["application/vnd.plotly.v1+json"].get("layout", {})
                tmpl = json.dumps(layout.get("template", {}))
                assert len(tmpl) < 300, "set pio.templates.default = 'none' (figures.setup): a full template is ~7 kB"


def _run_nbval(nb_path: Path, pythonpath: Path, cwd: Path):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pythonpath)
    env.setdefault("TRITON_INTERPRET", "1")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider", "-q",
         "--rootdir", str(cwd), "-c", os.devnull, str(nb_path)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
    )


def test_nbval_catches_changed_key_layout(tmp_path):
    """nbval on a copy of 01_key_packing: passes with the real package, fails when pack_keys stops
    inverting the index (ties would go to the larger index) — the special-value key table changes."""
    work = tmp_path / "nb"
    work.mkdir()
    shutil.copy(NB / "01_key_packing.ipynb", work / "01_key_packing.ipynb")
    good = _run_nbval(work / "01_key_packing.ipynb", ROOT, work)
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-2000:]

    mutant = tmp_path / "mutant"
    shutil.copytree(ROOT / "dsa_lab", mutant / "dsa_lab", ignore=shutil.ignore_patterns("__pycache__"))
    with open(mutant / "dsa_lab" / "keys.py", "a") as f:
        f.write(
            "\n\n# --- deliberate regression (tests/test_workbook.py): the index is no longer inverted\n"
            "_real_pack_keys = pack_keys\n\n\n"
            "def pack_keys(scores, index):\n"
            "    return _real_pack_keys(scores, index) ^ MAX_INDEX\n"
        )
    bad = _run_nbval(work / "01_key_packing.ipynb", mutant, work)
    assert bad.returncode != 0, "nbval did not notice a changed key layout"
    out = re.sub(r"\x1b\[[0-9;]*m", "", bad.stdout)
    assert "Cell outputs differ" in out, out[-3000:]  # a comparison failure, not a crash
    assert "0x7FFFFFFF00000005" in out  # the diff shows the changed NaN key of the special-value table


def test_browser_check_help_and_workbook_flag():
    r = subprocess.run([sys.executable, "-m", "dsa_lab.workbook.browser", "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--notebooks" in r.stdout
    r = subprocess.run([sys.executable, "-m", "dsa_lab.cli", "workbook", "--help"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "--check" in r.stdout


def test_static_html_widget_note():
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    c = nbformat.v4.new_code_cell("ui")
    c.outputs = [nbformat.v4.new_output("display_data", {"application/vnd.jupyter.widget-view+json": {"model_id": "x"},
                                                         "text/plain": "interactive(...)"})]
    nb.cells.append(c)
    workbook.static_widgets(nb)
    assert "widgets" not in nb.metadata
    assert "jupyter lab" in c.outputs[0]["data"]["text/html"]


@pytest.mark.skipif(not (os.environ.get("BROWSER_PATH") or shutil.which("chromium")
                         or os.path.exists("/usr/bin/chromium")),
                    reason="static export needs a Chromium-family browser")
def test_export_static_figures(tmp_path):
    pytest.importorskip("kaleido")
    from dsa_lab.workbook import figures

    written = figures.export_static_figures(tmp_path / "fig", root=tmp_path / "no_data")
    names = sorted(Path(p).name for p in written)
    assert names == ["extent_skipping.png", "key_layout.png"]  # the record-based ones are skipped: no records
    for p in written:
        assert Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_built_pages_load_nothing_from_a_cdn():
    from dsa_lab.workbook.build import offline_html

    page = ('<head><script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.1.10/require.min.js"></script>'
            '<script src="https://cdnjs.cloudflare.com/x/latest.js?config=TeX"> </script><script>var a = 1;</script>'
            '</head><div><script src="https://cdnjs.cloudflare.com/ajax/libs/mathjax/3.2.2/es5/tex-svg.min.js">'
            '</script><script type="text/javascript">window.PLOTLYENV={};</script></div>')
    out = offline_html(page)
    assert "https://" not in out
    assert "<script>var a = 1;</script>" in out and "window.PLOTLYENV" in out
