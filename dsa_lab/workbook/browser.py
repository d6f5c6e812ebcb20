"""Open every workbook notebook in JupyterLab in headless Chromium, run it, and save screenshots: the live
workbook's browser check.

    dsa-lab workbook --check [--notebooks 01_key_packing ...]
    python -m dsa_lab.workbook.browser [--notebooks 01_key_packing ...] [--out build/screenshots] [--max-pages 40]

What it does, offline (nothing is downloaded; no CDN may be reached):

1. copies ``notebooks/*.ipynb`` to a temporary folder (so JupyterLab's autosave never touches the
   committed notebooks) and starts JupyterLab there on ``127.0.0.1`` with a random token, notebook
   windowing off (every cell rendered) and the news/update checks off;
2. starts the system Chromium (``/usr/bin/chromium``, or ``$BROWSER_PATH``) headless with a fresh
   profile and drives it over the DevTools protocol (``websocket-client``, already a Jupyter dependency);
3. per notebook: opens it, runs all cells in the live kernel (widgets need one), waits until the kernel
   is idle, then scrolls through the notebook taking screenshots ``<out>/<name>_<page>.png``;
4. records what rendered: plotly plots (their SVG), widget views, error outputs, browser console
   errors, and every network request to a host other than 127.0.0.1 (must be none) into
   ``<out>/report.json``; exits non-zero when a notebook shows no plot where one is expected, an error
   output, a widget that failed to render, or an off-host request.

Look at the PNGs: the script checks the DOM, a person checks the picture.

``--html DIR`` checks a built HTML workbook instead (``dsa-lab workbook``'s pages, e.g. built on a GPU): each
``DIR/<name>.html`` opened from disk, its plots, error outputs and off-host requests counted as above, and one
screenshot per anchor of :data:`HTML_ANCHORS` (the section whose heading or paragraph starts with that text),
into ``<out>/<name>_html_<i>.png`` and ``<out>/report_html.json``.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from .build import NOTEBOOKS, ROOT

NO_PLOTS = {"02_ordering_proof"}  # text-only notebooks (the proof's results are printed, compared by nbval)
WIDGETS = {"01_key_packing", "03_extent_skipping", "04_span_capacity_roofline"}  # must show live widget views
LOCAL = ("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:", "about:")  # requests that stay on this host
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio", "--remote-allow-origins=*"]


# The sections of the built pages worth a picture: the live cells and the recorded figures beside them.
HTML_ANCHORS = {
    "00_tour": ("Live: the select at real shapes", "The pipeline in one picture"),
    "01_key_packing": (),
    "02_ordering_proof": ("2 · All 2^32 patterns",),
    "03_extent_skipping": ("Measured: time vs context",),
    "04_span_capacity_roofline": ("Token-level top-k on long rows",),
    "05_causal_bounds": ("Live, at a real context",),
}

HTML_STATE_JS = r"""
(() => {
  const q = (s) => document.querySelectorAll(s);
  return {
    plots: q('.js-plotly-plot').length,
    plotSvgs: q('.js-plotly-plot .main-svg').length,
    plotsWithData: Array.from(q('.js-plotly-plot')).filter(p => p.querySelector(
      '.plot .trace, .barlayer .point, .heatmaplayer image, .scatterlayer .trace, .shapelayer path, '
      + '.annotation')).length,
    tracebacks: Array.from(q('.jp-OutputArea-output')).filter(e => /Traceback/.test(e.textContent)).length,
    stderr: q('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').length,
  };
})()
"""


def check_html(cdp: "CDP", page: Path, name: str, out: Path) -> dict:
    """Open one built page from disk, wait for its plots, count what rendered, screenshot its anchors."""
    start = len(cdp.events)
    cdp.call("Page.navigate", url=page.resolve().as_uri())
    cdp.wait_for("document.readyState === 'complete'", 120)
    cdp.wait_for("document.querySelectorAll('.js-plotly-plot .main-svg').length >= "
                 "document.querySelectorAll('.js-plotly-plot').length", 120)
    time.sleep(1.0)
    r = {"notebook": name, "page": page.name, **cdp.eval(HTML_STATE_JS)}
    shots = []
    for i, text in enumerate(HTML_ANCHORS.get(name, ())):
        found = cdp.eval("(() => { const t = %s; const el = Array.from(document.querySelectorAll("
                         "'h1, h2, h3, h4, p')).find(e => e.textContent.trim().startsWith(t)); "
                         "if (!el) return false; el.scrollIntoView({block: 'start'}); return true; })()"
                         % json.dumps(text))
        if not found:
            r.setdefault("anchors_missing", []).append(text)
            continue
        time.sleep(0.5)
        path = out / f"{name}_html_{i}.png"
        cdp.screenshot(path)
        shots.append(path.name)
    r["screenshots"] = shots
    r["offhost_requests"] = sorted({e["params"]["request"]["url"][:120] for e in cdp.events[start:]
                                    if e.get("method") == "Network.requestWillBeSent"
                                    and not e["params"]["request"]["url"].startswith(("file:",) + LOCAL)})
    return r


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except Exception:
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


class CDP:
    """A minimal Chrome DevTools Protocol client over one page websocket."""

    def __init__(self, ws_url: str):
        import websocket  # websocket-client

        self.ws = websocket.create_connection(ws_url, timeout=120, suppress_origin=True)
        self.n = 0
        self.events: list[dict] = []

    def call(self, method: str, **params):
        self.n += 1
        mid = self.n
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == "Page.javascriptDialogOpening":  # e.g. "leave site?" on navigation
                    self.n += 1
                    self.ws.send(json.dumps({"id": self.n, "method": "Page.handleJavaScriptDialog",
                                             "params": {"accept": True}}))

    def eval(self, expr: str, await_promise: bool = False):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=await_promise)
        if "exceptionDetails" in r:
            raise RuntimeError(f"JS error in {expr[:80]!r}: {r['exceptionDetails'].get('text')} "
                               f"{r['exceptionDetails'].get('exception', {}).get('description', '')[:300]}")
        return r.get("result", {}).get("value")

    def wait_for(self, expr: str, timeout: float, poll: float = 0.5):
        t0 = time.time()
        while time.time() - t0 < timeout:
            try:
                v = self.eval(expr)
            except RuntimeError:
                v = None
            if v:
                return v
            time.sleep(poll)
        raise TimeoutError(f"timed out after {timeout} s waiting for: {expr[:120]}")

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))


STATE_JS = r"""
(() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return null;
  const q = (s) => panel.querySelectorAll(s);
  const prompts = Array.from(q('.jp-InputArea-prompt')).map(e => e.textContent.trim());
  const widgetViews = q('.jp-OutputArea-output .jupyter-widgets, .jp-OutputArea-output .widget-box, '
                        + '.jp-OutputArea-output .widget-inline-hbox');
  const failedWidgets = Array.from(q('.jp-OutputArea-output'))
    .filter(e => /Error displaying widget|Loading widget\.\.\.|model not found/i.test(e.textContent)).length;
  const status = document.querySelector('.jp-Notebook-ExecutionIndicator, .jp-KernelStatus');
  return {
    cells: q('.jp-Cell').length,
    running: prompts.filter(p => p.includes('*')).length,
    executed: prompts.filter(p => /\[\d+\]/.test(p)).length,
    plots: q('.js-plotly-plot').length,
    plotSvgs: q('.js-plotly-plot .main-svg').length,
    plotsWithData: Array.from(q('.js-plotly-plot')).filter(p => p.querySelector(
      '.plot .trace, .barlayer .point, .heatmaplayer image, .scatterlayer .trace, .shapelayer path, '
      + '.annotation')).length,
    widgetViews: widgetViews.length,
    failedWidgets: failedWidgets,
    errorOutputs: q('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]').length,
    tracebacks: Array.from(q('.jp-OutputArea-output')).filter(e => /Traceback|Error:/.test(e.textContent)
      && e.getAttribute('data-mime-type') === 'application/vnd.jupyter.stderr').length,
    kernelStatus: (panel.querySelector('.jp-Notebook-ExecutionIndicator') || {dataset: {}}).dataset.status,
  };
})()
"""

SCROLLER_JS = r"""
(() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  return panel && (panel.querySelector('.jp-WindowedPanel-outer') || panel.querySelector('.jp-Notebook'));
})()
"""


def drive_key_widget(cdp: CDP, out: Path, name: str) -> dict:
    """Type a score into the key widget of 01 (as a user would: focus, type, Enter) and check that the
    kernel-side callback re-rendered the bit fields: the browser -> kernel -> browser round trip."""
    find = ("(() => { const p = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');"
            " const i = p && p.querySelector('.widget-interact .widget-text input'); return i; })()")
    ok = cdp.eval(f"(() => {{ const i = {find}; if (!i) return false; i.scrollIntoView({{block: 'center'}});"
                  " i.focus(); i.select(); return true; })()")
    if not ok:
        return {"ok": False, "why": "key widget text input not found", "screenshot": ""}
    cdp.call("Input.insertText", text="0x7FC00001")
    cdp.call("Input.dispatchKeyEvent", type="keyDown", key="Enter", code="Enter", windowsVirtualKeyCode=13,
             nativeVirtualKeyCode=13, text="\r")  # with text: the keypress the Text widget listens for
    cdp.call("Input.dispatchKeyEvent", type="keyUp", key="Enter", code="Enter", windowsVirtualKeyCode=13,
             nativeVirtualKeyCode=13)
    cdp.eval(f"(() => {{ const i = {find}; if (i) i.blur(); return true; }})()")  # and a change event
    try:
        cdp.wait_for("(() => { const p = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');"
                     " const w = p && p.querySelector('.widget-interact');"
                     " return !!w && w.textContent.includes('0x7FC00001')"
                     " && w.textContent.includes('0x7FFFFFFF'); })()", 30)
        res = {"ok": True, "typed": "0x7FC00001", "expected": "bits 0x7FC00001 and key_hi 0x7FFFFFFF in the output"}
    except TimeoutError:
        res = {"ok": False, "why": "the widget output did not update"}
    time.sleep(1)
    p = out / f"{name}_widget_interaction.png"
    cdp.screenshot(p)
    res["screenshot"] = str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p)
    return res


def lab_settings(dirpath: Path) -> None:
    s = dirpath / "@jupyterlab"
    (s / "notebook-extension").mkdir(parents=True, exist_ok=True)
    (s / "notebook-extension" / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    (s / "apputils-extension").mkdir(parents=True, exist_ok=True)
    (s / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    (s / "apputils-extension" / "themes.jupyterlab-settings").write_text(json.dumps({"theme": "JupyterLab Light"}))


def check_notebook(cdp: CDP, base: str, token: str, name: str, out: Path, run_timeout: float, max_pages: int) -> dict:
    url = f"{base}/lab/tree/notebooks/{name}.ipynb?token={token}&reset"
    try:  # save the previous (temporary copy of a) notebook: no "unsaved changes" dialog on navigation
        cdp.eval("window.jupyterapp ? jupyterapp.commands.execute('docmanager:save-all') : null", await_promise=True)
    except RuntimeError:
        pass
    n_events = len(cdp.events)
    cdp.call("Page.navigate", url=url)
    cdp.wait_for("!!(window.jupyterapp && document.querySelector('.jp-NotebookPanel .jp-Cell'))", 120)
    # focus the notebook (headless windows have no focus, so the shell has no current widget), wait for its
    # kernel (the toolbar's execution indicator), then run every cell
    cdp.wait_for("(() => { const p = document.querySelector('.jp-NotebookPanel'); if (!p) return false; "
                 "jupyterapp.shell.activateById(p.id); p.querySelector('.jp-Notebook').focus(); "
                 "return !!jupyterapp.shell.currentWidget; })()", 60)
    idle = ("(() => { const d = document.querySelector('.jp-Dialog .jp-mod-accept'); if (d) d.click();"
            " const w = jupyterapp.shell.currentWidget; const k = w && w.sessionContext && w.sessionContext.session"
            " && w.sessionContext.session.kernel; return !!k && k.status === 'idle'"
            " && w.sessionContext.kernelDisplayStatus === 'idle'; })()")
    cdp.wait_for(idle, 180)
    t0 = time.time()
    cdp.eval("jupyterapp.commands.execute('notebook:run-all-cells')", await_promise=False)
    time.sleep(3)
    cdp.wait_for("(() => { const p = document.querySelectorAll("
                 "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-InputArea-prompt');"
                 " return !Array.from(p).some(e => e.textContent.includes('*')); })() && " + idle,
                 run_timeout, poll=1.0)
    run_s = time.time() - t0
    time.sleep(3)  # let plotly and widget views finish rendering
    state = cdp.eval(STATE_JS) or {}
    # screenshots, page by page through the notebook's scroller
    cdp.eval(f"({SCROLLER_JS}).scrollTop = 0")
    height = cdp.eval(f"({SCROLLER_JS}).scrollHeight") or 0
    view = cdp.eval(f"({SCROLLER_JS}).clientHeight") or 1
    shots = []
    page = 0
    top = 0
    while page < max_pages:
        cdp.eval(f"({SCROLLER_JS}).scrollTop = {top}")
        time.sleep(0.8)
        p = out / f"{name}_{page:02d}.png"
        cdp.screenshot(p)
        shots.append(str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p))
        page += 1
        if top + view >= height - 5:
            break
        top += int(view * 0.9)
    interaction = drive_key_widget(cdp, out, name) if name == "01_key_packing" else None
    evs = cdp.events[n_events:]
    offhost = sorted({e["params"]["request"]["url"] for e in evs if e.get("method") == "Network.requestWillBeSent"
                      and not e["params"]["request"]["url"].startswith(LOCAL)})
    console_errors = [
        (e["params"].get("args") or [{}])[0].get("value", "")[:300] for e in evs
        if e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") == "error"
    ] + [e["params"]["exceptionDetails"].get("text", "")[:300] for e in evs
         if e.get("method") == "Runtime.exceptionThrown"]
    if interaction is not None:
        shots.append(interaction.pop("screenshot"))
    return {"notebook": name, "run_seconds": round(run_s, 1), **state, "scroll_height": height, "screenshots": shots,
            "widget_interaction": interaction,
            "offhost_requests": offhost, "console_errors": console_errors}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--notebooks", nargs="*", default=list(NOTEBOOKS))
    ap.add_argument("--out", default=str(ROOT / "build" / "screenshots"))
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--run-timeout", type=float, default=600)
    ap.add_argument("--max-pages", type=int, default=14)
    ap.add_argument("--html", metavar="DIR", help="check the built pages DIR/<name>.html instead of JupyterLab")
    ap.add_argument("--browser",
                    default=os.environ.get("BROWSER_PATH") or shutil.which("chromium") or "/usr/bin/chromium")
    a = ap.parse_args(argv)
    names = [Path(n).stem for n in a.notebooks]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    if a.html:
        return main_html(Path(a.html), names, out, a)
    for old in out.glob("*.png"):
        old.unlink()

    tmp = Path(tempfile.mkdtemp(prefix="dsa_lab_browser_"))
    procs: list[subprocess.Popen] = []
    try:
        work = tmp / "root"
        (work / "notebooks").mkdir(parents=True)
        for n in names:
            shutil.copy(ROOT / "notebooks" / f"{n}.ipynb", work / "notebooks" / f"{n}.ipynb")
        settings = tmp / "settings"
        lab_settings(settings)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env["JUPYTER_CONFIG_DIR"] = str(tmp / "jupyter_config")
        env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp / "workspaces")
        try:
            import torch

            if not torch.cuda.is_available():
                env.setdefault("TRITON_INTERPRET", "1")
        except Exception:
            env.setdefault("TRITON_INTERPRET", "1")
        token = secrets.token_hex(16)
        port = free_port()
        lab_log = open(out / "jupyterlab.log", "w")
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
             f"--ServerApp.root_dir={work}", f"--IdentityProvider.token={token}",
             "--LabApp.expose_app_in_browser=True", f"--LabApp.user_settings_dir={settings}",
             f"--LabApp.workspaces_dir={tmp / 'workspaces'}", "--LabApp.news_url=", "--ServerApp.open_browser=False",
             "--allow-root",
             "--LabApp.extension_manager=readonly"],
            env=env, stdout=lab_log, stderr=subprocess.STDOUT, start_new_session=True))
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/api/status?token={token}", 90)

        dport = free_port()
        procs.append(subprocess.Popen(
            [a.browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp / 'chromium-profile'}",
             f"--remote-debugging-port={dport}", f"--window-size={a.width},{a.height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=open(out / "chromium.log", "w"), start_new_session=True))
        wait_http(f"http://127.0.0.1:{dport}/json/version", 60)
        with urllib.request.urlopen(f"http://127.0.0.1:{dport}/json") as r:
            page = next(t for t in json.load(r) if t.get("type") == "page")
        cdp = CDP(page["webSocketDebuggerUrl"])
        for dom in ("Page", "Runtime", "Network", "Log"):
            cdp.call(f"{dom}.enable")
        cdp.call("Emulation.setFocusEmulationEnabled", enabled=True)  # headless has no window focus; Lab tracks focus
        cdp.call("Emulation.setDeviceMetricsOverride", width=a.width, height=a.height, deviceScaleFactor=1,
                 mobile=False)

        report = []
        ok = True
        for n in names:
            t0 = time.time()
            try:
                r = check_notebook(cdp, base, token, n, out, a.run_timeout, a.max_pages)
            except Exception as e:  # keep going: report the failure
                r = {"notebook": n, "failure": f"{type(e).__name__}: {e}"}
                try:
                    cdp.screenshot(out / f"{n}_failure.png")
                except Exception:
                    pass
            r["seconds"] = round(time.time() - t0, 1)
            problems = []
            if "failure" in r:
                problems.append(r["failure"])
            else:
                if n not in NO_PLOTS and r.get("plotsWithData", 0) == 0:
                    problems.append("no rendered plotly plot")
                if r.get("plots", 0) != r.get("plotSvgs", 0) and r.get("plotSvgs", 0) < r.get("plots", 0):
                    problems.append(f"{r['plots'] - r['plotSvgs']} plot(s) without SVG")
                if n in WIDGETS and not r.get("widgetViews"):
                    problems.append("no widget view rendered")
                if r.get("failedWidgets"):
                    problems.append(f"{r['failedWidgets']} widget(s) failed to render")
                if r.get("tracebacks"):
                    problems.append(f"{r['tracebacks']} error output(s)")
                if r.get("widget_interaction") is not None and not r["widget_interaction"].get("ok"):
                    problems.append(f"widget interaction failed: {r['widget_interaction'].get('why')}")
                if r.get("offhost_requests"):
                    problems.append(f"off-host requests: {r['offhost_requests']}")
            r["problems"] = problems
            ok &= not problems
            report.append(r)
            print(f"{n}: {'OK' if not problems else 'PROBLEMS ' + '; '.join(problems)} "
                  f"(plots {r.get('plotsWithData')}/{r.get('plots')}, widgets {r.get('widgetViews')}, "
                  f"{len(r.get('screenshots', []))} screenshots, {r['seconds']} s)", flush=True)
        (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
        print(f"screenshots and report.json in {out}")
        return 0 if ok else 1
    finally:
        for p in reversed(procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=15)
            except Exception:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except Exception:
                    pass
        shutil.rmtree(tmp, ignore_errors=True)


def main_html(pages: Path, names: list[str], out: Path, a) -> int:
    """``--html``: the built pages in headless Chromium (no JupyterLab, no kernel)."""
    tmp = Path(tempfile.mkdtemp(prefix="dsa_lab_browser_"))
    proc = None
    try:
        dport = free_port()
        proc = subprocess.Popen(
            [a.browser, *CHROMIUM_FLAGS, "--allow-file-access-from-files", f"--user-data-dir={tmp / 'profile'}",
             f"--remote-debugging-port={dport}", f"--window-size={a.width},{a.height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=open(out / "chromium.log", "w"), start_new_session=True)
        wait_http(f"http://127.0.0.1:{dport}/json/version", 60)
        with urllib.request.urlopen(f"http://127.0.0.1:{dport}/json") as r:
            page = next(t for t in json.load(r) if t.get("type") == "page")
        cdp = CDP(page["webSocketDebuggerUrl"])
        for dom in ("Page", "Runtime", "Network"):
            cdp.call(f"{dom}.enable")
        cdp.call("Emulation.setDeviceMetricsOverride", width=a.width, height=a.height, deviceScaleFactor=1,
                 mobile=False)
        report, ok = [], True
        for n in names:
            r = check_html(cdp, pages / f"{n}.html", n, out)
            problems = []
            if n not in NO_PLOTS and not r["plotsWithData"]:
                problems.append("no rendered plotly plot")
            if r["plotSvgs"] < r["plots"]:
                problems.append(f"{r['plots'] - r['plotSvgs']} plot(s) without SVG")
            if r["tracebacks"] or r["stderr"]:
                problems.append(f"{r['tracebacks']} traceback(s), {r['stderr']} stderr output(s)")
            if r.get("anchors_missing"):
                problems.append(f"sections not found: {r['anchors_missing']}")
            if r["offhost_requests"]:
                problems.append(f"off-host requests: {r['offhost_requests']}")
            r["problems"] = problems
            ok &= not problems
            report.append(r)
            print(f"{n}: {'OK' if not problems else 'PROBLEMS ' + '; '.join(problems)} (plots "
                  f"{r['plotsWithData']}/{r['plots']}, {len(r['screenshots'])} screenshots)", flush=True)
        (out / "report_html.json").write_text(json.dumps(report, indent=2) + "\n")
        print(f"screenshots and report_html.json in {out}")
        return 0 if ok else 1
    finally:
        if proc is not None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=15)
            except Exception:
                pass
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
