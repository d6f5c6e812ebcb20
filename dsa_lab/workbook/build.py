"""Build the workbook: execute the notebooks to HTML under build/workbook/ (and optionally figures, screenshots).

Modes (combine freely):

* default — execute every notebook (a copy; the committed ones are untouched) and write
  ``build/workbook/<name>.html``: readable without a server, plotly.js inlined (offline).
* ``--execute-inplace`` — re-execute the committed notebooks in ``notebooks/`` in place (rebuilding
  each from its ``.py`` source first when one exists), then strip volatile metadata so
  ``pytest --nbval --nbval-current-env notebooks/`` compares against fresh outputs.  This is the
  one command to run after the data or the code changes.
* ``--figures`` — export the README's static PNGs to ``docs/figures/`` (kaleido + system Chromium).
* ``--check`` (or ``--screenshots``) — the browser check (:mod:`dsa_lab.workbook.browser`): every notebook run
  live in JupyterLab in headless Chromium, one screenshot set per notebook under ``build/screenshots/``, exit
  status 1 on a missing plot, a widget that did not render, an error output or an off-host request.

Without a GPU, ``TRITON_INTERPRET=1`` is set for the kernels (tiny shapes; recorded data for timings).
Open the notebooks live with ``jupyter lab notebooks/``.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NB_DIR = ROOT / "notebooks"
NOTEBOOKS = (
    "00_tour",
    "01_key_packing",
    "02_ordering_proof",
    "03_extent_skipping",
    "04_span_capacity_roofline",
    "05_causal_bounds",
)


def add_arguments(p) -> None:
    """``dsa-lab workbook``'s options (see the module docstring)."""
    p.add_argument("--notebooks", nargs="*", default=None, metavar="NAME",
                   help="which notebooks (default: all six), e.g. 01_key_packing")
    p.add_argument("--out", default=str(ROOT / "build" / "workbook"), help="HTML output folder")
    p.add_argument("--execute-inplace", action="store_true",
                   help="re-execute notebooks/*.ipynb in place (from their .py sources) and strip volatile metadata")
    p.add_argument("--no-html", action="store_true", help="skip the HTML build")
    p.add_argument("--figures", action="store_true", help="export the README's static PNGs to docs/figures/")
    p.add_argument("--figures-dir", default=str(ROOT / "docs" / "figures"))
    p.add_argument("--check", "--screenshots", dest="screenshots", action="store_true",
                   help="the browser check: the notebooks live in JupyterLab in headless Chromium, with screenshots")
    p.add_argument("--timeout", type=int, default=300,
                   help="per-cell timeout in seconds (a timed-out notebook is retried once)")


# ---------------------------------------------------------------------------
# py:percent sources → notebooks (jupytext-compatible subset, no jupytext needed)
# ---------------------------------------------------------------------------

_CELL = re.compile(r"^# %%(?P<md> \[markdown\])?(?P<rest>.*)$")


def py_to_notebook(text: str, name: str):
    """Parse a py:percent file (``# %%`` code cells, ``# %% [markdown]`` cells with ``# `` prefixed lines,
    ``tags=["a", "b"]`` after the marker) into an nbformat v4 notebook with deterministic cell ids."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    cells: list[tuple[str, list[str], list[str]]] = []
    cur = None
    for line in text.splitlines():
        m = _CELL.match(line)
        if m:
            tags = re.findall(r'"([^"]+)"', m.group("rest")) if "tags=" in m.group("rest") else []
            cur = ("markdown" if m.group("md") else "code", tags, [])
            cells.append(cur)
        elif cur is not None:
            cur[2].append(line)
    for i, (kind, tags, lines) in enumerate(cells):
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        if kind == "markdown":
            src = "\n".join(ln[2:] if ln.startswith("# ") else ln[1:] if ln.startswith("#") else ln for ln in lines)
            c = nbformat.v4.new_markdown_cell(src)
        else:
            c = nbformat.v4.new_code_cell("\n".join(lines))
        c.id = f"{name[:2]}-{i:02d}"
        if tags:
            c.metadata["tags"] = tags
        nb.cells.append(c)
    return nb


def strip_notebook(nb) -> None:
    """Drop what changes run to run and nbval does not compare: widget state, execution timing metadata."""
    nb.metadata.pop("widgets", None)
    for c in nb.cells:
        c.metadata.pop("execution", None)
        c.metadata.pop("ExecuteTime", None)
        if c.cell_type == "code":
            for o in c.get("outputs", []):
                o.get("metadata", {}).pop("execution", None)
                widget = "application/vnd.jupyter.widget-view+json" in o.get("data", {})
                if o.get("output_type") == "display_data" and widget:
                    o["data"]["application/vnd.jupyter.widget-view+json"].pop("model_id", None)


WIDGET_NOTE = ("<p style='border:1px solid #c6dbef;background:#f7fbff;padding:6px'><b>Interactive widget</b> "
               "(sliders and a live plot): it needs a running kernel. Open this notebook live with "
               "<code>jupyter lab notebooks/</code>.</p>")


def static_widgets(nb) -> None:
    """For the static HTML: replace widget views (which need a kernel and a widget manager from a CDN)
    with a short note, and drop the saved widget state so no CDN script is referenced."""
    nb.metadata.pop("widgets", None)
    for c in nb.cells:
        for o in c.get("outputs", []):
            data = o.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                o["data"] = {"text/html": WIDGET_NOTE, "text/plain": "[interactive widget: open live in JupyterLab]"}


def kernel_env() -> dict:
    """Environment for the notebook kernels: the repo importable, the interpreter on when there is no GPU."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except Exception:  # pragma: no cover
        has_cuda = False
    if not has_cuda:
        env.setdefault("TRITON_INTERPRET", "1")
    env.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return env


def execute(nb, cwd: Path, timeout: int, env: dict, retries: int = 1):
    """Execute ``nb`` in a fresh python3 kernel with ``env`` (cwd = ``cwd``).

    A timeout is retried ``retries`` times with a new kernel: once, on a loaded 2-core machine, a
    kernel sat idle while the client waited for a reply that never came (no cell takes minutes here).
    """
    from nbclient.exceptions import CellTimeoutError

    for attempt in range(retries + 1):
        try:
            return _execute_once(nb, cwd, timeout, env)
        except (CellTimeoutError, TimeoutError):
            if attempt == retries:
                raise
            for c in nb.cells:
                if c.cell_type == "code":
                    c.outputs, c.execution_count = [], None
            print(f"notebook timed out after {timeout} s; retrying with a new kernel")


def _quiet_output_widget():
    """nbclient's stand-in for a frontend's Output widget, minus the echo of each captured output back to the kernel.

    The echo is a comm message sent on the shell socket while nbclient awaits the cell's reply on it: now and then the
    reply is then noticed only when the cell's timeout runs out (04's widget cell: 300 s instead of 1), and after the
    last cell the kernel may still be handling the echo when the shutdown's SIGINT comes ("KeyboardInterrupt caught in
    kernel").  A batch build needs no kernel-side copy: the captured outputs stay in nbclient's widget state."""
    from nbclient.output_widget import OutputWidget

    class QuietOutputWidget(OutputWidget):
        def sync_state(self) -> None:
            pass

    return QuietOutputWidget


def _execute_once(nb, cwd: Path, timeout: int, env: dict):
    from nbclient import NotebookClient

    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)  # the kernel manager passes os.environ to the kernel
    try:
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}},
                                record_timing=False)
        client.widget_registry["@jupyter-widgets/output"]["OutputModel"] = _quiet_output_widget()
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    return nb


def _names(args) -> list[str]:
    names = args.notebooks or list(NOTEBOOKS)
    out = []
    for n in names:
        n = Path(n).stem
        if n not in NOTEBOOKS:
            raise SystemExit(f"unknown notebook {n!r}; choose from {', '.join(NOTEBOOKS)}")
        out.append(n)
    return out


def execute_inplace(names, timeout: int = 300, nb_dir: Path = NB_DIR) -> None:
    """Rebuild each notebook from its ``.py`` source (when it has one), execute it, strip volatile metadata and write
    it over ``<nb_dir>/<name>.ipynb``."""
    import nbformat

    env = kernel_env()
    for name in names:
        ipynb, py = nb_dir / f"{name}.ipynb", nb_dir / f"{name}.py"
        if py.exists():
            nb = py_to_notebook(py.read_text(), name)
        else:
            nb = nbformat.read(ipynb, as_version=4)
            for c in nb.cells:
                if c.cell_type == "code":
                    c.outputs, c.execution_count = [], None
        t0 = time.perf_counter()
        execute(nb, nb_dir, timeout, env)
        strip_notebook(nb)
        nbformat.write(nb, ipynb)
        shown = ipynb.relative_to(ROOT) if ipynb.is_relative_to(ROOT) else ipynb
        print(f"executed {shown} in {time.perf_counter() - t0:.1f} s")


# Script tags that fetch from a CDN: nbconvert's lab template (require.js, MathJax 2) and plotly's figure HTML
# (MathJax 3).  The workbook typesets no LaTeX and its pages need neither, so an offline page makes no request.
_CDN_SCRIPT = re.compile(r'<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>')


def offline_html(html: str) -> str:
    """A built page without its CDN script tags (:data:`_CDN_SCRIPT`): opened offline, it requests nothing."""
    return _CDN_SCRIPT.sub("", html)


def build_html(names, out: Path, timeout: int = 300) -> list[Path]:
    """Execute a copy of each notebook and write ``<out>/<name>.html`` (plotly.js inlined, widgets as a note)."""
    import nbformat
    from nbconvert import HTMLExporter

    env = kernel_env()
    env["PLOTLY_RENDERER"] = "plotly_mimetype+notebook"  # inline plotly.js once per page: offline HTML
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names:
        py, ipynb = NB_DIR / f"{name}.py", NB_DIR / f"{name}.ipynb"
        nb = py_to_notebook(py.read_text(), name) if py.exists() else nbformat.read(ipynb, as_version=4)
        t0 = time.perf_counter()
        execute(nb, NB_DIR, timeout, env)
        static_widgets(nb)
        html, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
        path = out / f"{name}.html"
        path.write_text(offline_html(html))
        written.append(path)
        print(f"wrote {path} ({time.perf_counter() - t0:.1f} s)")
    return written


def run(args) -> int:
    """``dsa-lab workbook``: the modes the arguments ask for; the browser check's exit code when it fails."""
    names = _names(args)
    if args.execute_inplace:
        execute_inplace(names, args.timeout)
    if not args.no_html:
        build_html(names, Path(args.out), args.timeout)
    if args.figures:
        from .figures import export_static_figures

        for p in export_static_figures(args.figures_dir):
            print(f"wrote {p}")
    if args.screenshots:
        cmd = [sys.executable, "-m", "dsa_lab.workbook.browser", "--notebooks", *names]
        rc = subprocess.call(cmd, env=kernel_env())
        if rc:
            return rc
    return 0
