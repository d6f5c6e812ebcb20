"""The notebooks' widgets: ``ipywidgets.interactive`` factories whose callbacks are thin wrappers of package
functions (:func:`extent_point`, :func:`dsa_lab.workbook.tables.key_fields`), so the logic is tested without a
browser; ``ui.result`` holds the callback's last return value, and the timing widgets' callbacks keep their last
point in ``ui.f.last`` (:func:`dsa_lab.workbook.live.widget_sweep` reads it).

A live widget runs the kernels on a GPU; without one it runs a tiny interpreter check and shows recorded times.
"""
from __future__ import annotations

import math
import statistics
import textwrap
import time

import torch

from .. import keys
from .backend import backend_info
from .figures import ARM_COLORS, titled
from .records import record_label, select_rows
from .tables import key_fields, key_fields_html, skip_fraction


def key_widget(score: str = "-0.0", index: int = 5):
    """Type a score (decimal, ``nan``, ``-inf`` or ``0x`` bits) and an index; see every bit field."""
    import ipywidgets as w
    from IPython.display import HTML

    def show(score, index):
        try:
            f = key_fields(score, index)
        except ValueError as e:
            return HTML(f"<b style='color:#d62728'>{e}</b>")
        return HTML(key_fields_html(f))

    return w.interactive(
        show,
        {"auto_display": True},  # show the callback's return value (a figure / HTML) under the controls
        score=w.Text(value=score, description="score", continuous_update=False),
        index=w.BoundedIntText(value=index, min=0, max=keys.MAX_INDEX + 1, description="index"),
    )



def _nearest(records_rows, /, **want):
    """The recorded row minimising the log-distance to ``want`` (numeric fields) among exact matches of the rest."""
    exact = {k: v for k, v in want.items() if not isinstance(v, (int, float)) or isinstance(v, bool)}
    num = {k: v for k, v in want.items() if k not in exact}
    cand = select_rows(records_rows, **exact)
    if not cand:
        return None
    return min(cand, key=lambda r: sum(abs(math.log(max(r.get(k) or 1, 1)) - math.log(max(v, 1)))
                                       for k, v in num.items()))


COMPILE_NOTE_S = 1.0  # a first call slower than this compiled a kernel (a warmed one loads in milliseconds)
_LIVE_SHAPES: set = set()  # shapes a widget already ran live in this process


def first_use_notice(key) -> str | None:
    """The line a live widget prints *before* the first run of a shape in this process (``key``: the shape), so a
    kernel that has to compile shows as compiling instead of a frozen widget; None once the shape has run."""
    if key in _LIVE_SHAPES:
        return None
    _LIVE_SHAPES.add(key)
    return ("first run of this shape in this process: loading its kernels (milliseconds when `dsa-lab warmup` has "
            "compiled them; a kernel it has not compiles now, for tens of seconds) ...")


def compile_note(first_call_s: float | None) -> str:
    """What a live widget says about its first Triton call: nothing when it was quick, else how long it took and why."""
    if first_call_s is None or first_call_s < COMPILE_NOTE_S:
        return ""
    return (f"the first Triton call took {first_call_s:.1f} s: its kernel was compiled here, not warmed "
            "(`dsa-lab warmup` compiles every variant ahead)")


def live_time_us(fn, iters: int = 20) -> float:
    """Median of ``iters`` CUDA-event times (µs) of ``fn()`` after one untimed call: what a live cell shows."""
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(iters):
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) * 1e3)
    return statistics.median(ts)


def extent_point(context: int, rows: int, k: int, *, records=None, mode: str | None = None,
                 max_model_len: int = 262144, block_size: int = 8) -> dict:
    """One point of the extent-skipping widget.

    ``mode="gpu"``: run ``topk_select`` (torch and triton arms) live on a random scores matrix of
    ``[rows, max_model_len / block_size]`` with every row's live length = ``cdiv(context, block_size)``,
    time with CUDA events around eager calls (a quick look: the times include host launch overhead and,
    for the ``dsa_lab`` arms, the input checks with their host sync, recorded in ``data/h200/live_widgets.json``,
    so they are not kernel times; the recorded sweep times kernels in CUDA graphs).
    ``mode="interpreter"``/``"torch-cpu"``: run the same call at a tiny width (contexts scaled by 1/64),
    check the arms against the exact reference, and take times from the nearest recorded point.
    Returns a dict with ``mode``, ``skipped``, per-arm ``us`` and ``source``.
    """
    from ..select import topk_select

    mode = mode or backend_info()["mode"]
    nb = -(-max_model_len // block_size)
    live = min(-(-context // block_size), nb)
    out = {"context": context, "rows": rows, "k": k, "mode": mode, "live_blocks": live, "padded_blocks": nb,
           "skipped": skip_fraction(context, max_model_len, block_size), "us": {}, "source": ""}
    if mode == "gpu":
        g = torch.Generator(device="cuda").manual_seed(0)
        x = torch.randn(rows, nb, device="cuda", generator=g)
        lengths = torch.full((rows,), live, dtype=torch.int32, device="cuda")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        topk_select(x, k, lengths=lengths, impl="triton")  # the first call: a kernel load, or a compile
        torch.cuda.synchronize()
        out["first_call_s"] = time.perf_counter() - t0
        for arm in ("torch", "triton"):
            out["us"][arm] = live_time_us(lambda: topk_select(x, k, lengths=lengths, impl=arm))
        out["us"]["torch_live"] = live_time_us(lambda: torch.topk(x[:, :live], min(k, live), dim=1))
        out["source"] = (f"live on {torch.cuda.get_device_name(0)} (CUDA events around eager calls, median of 20: "
                         "includes launch overhead and the API's input checks; the CUDA-graph sweep is the "
                         "measurement)")
        return out
    # tiny shapes: correctness of the arms at 1/64 scale
    tiny_nb = max(nb // 64, 8)
    tiny_live = max(min(live // 64, tiny_nb), 1)
    tiny_rows = min(rows, 4)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(tiny_rows, tiny_nb, generator=g)
    lengths = torch.full((tiny_rows,), tiny_live, dtype=torch.int32)
    kk = min(k, tiny_nb)
    ref = torch.sort(topk_select(x, kk, lengths=lengths, impl="reference"), dim=1).values
    arms = ["torch"] + (["triton"] if mode == "interpreter" else [])
    out["tiny"] = {"rows": tiny_rows, "width": tiny_nb, "live": tiny_live, "k": kk,
                   "agree": {a: bool(torch.equal(torch.sort(topk_select(x, kk, lengths=lengths, impl=a), dim=1).values,
                                                 ref))
                             for a in arms}}
    if records:
        rec_rows, meta, path = records
        for arm in ("torch", "torch_live", "triton"):
            r = _nearest(rec_rows or [], arm=arm, stage="select", dist="normal", k=k, context=context, rows=rows)
            if r:
                out["us"][arm] = r["median_us"]
                out.setdefault("recorded_at", {})[arm] = f"ctx {r['context']} rows {r['rows']} k {r['k']}"
        out["source"] = f"recorded: {record_label(meta, path)} (nearest point)" if rec_rows else "no record"
    return out



def point_figure(p: dict, title: str):
    """The bars of one :func:`extent_point` result (µs per arm), with where the times come from, a compile note, and
    the tiny run's agreement with the reference in the title."""
    import plotly.graph_objects as go

    arms = [a for a in ("torch", "torch_live", "triton") if a in p["us"]]
    fig = go.Figure(go.Bar(x=arms, y=[p["us"][a] for a in arms], marker_color=[ARM_COLORS[a] for a in arms],
                           text=[f"{p['us'][a]:.1f} µs" for a in arms], textposition="outside"))
    sub = "<br>".join(textwrap.wrap(p["source"] or "no timing available", 120))  # a figure is ~1000 px wide
    if compile_note(p.get("first_call_s")):
        sub += "<br>" + compile_note(p.get("first_call_s"))
    if "tiny" in p:
        t = p["tiny"]
        sub += (f"<br>tiny run ({t['rows']}×{t['width']}, live {t['live']}, k {t['k']}) agrees with the reference: "
                f"{t['agree']}")
    mode = {"gpu": "GPU live", "interpreter": "no GPU: Triton interpreter, tiny shapes",
            "torch-cpu": "no GPU: torch on CPU, tiny shapes"}.get(p["mode"], p["mode"])
    titled(fig, f"{title} · {mode}<br><sub>{sub}</sub>", yaxis_title="µs", height=400 + 16 * sub.count("<br>"))
    if not arms:
        fig.add_annotation(text="no timing here: no GPU, and no recorded point (data/h200/select_sweep.csv absent)",
                           showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper",
                           font=dict(size=14, color="#d62728"))
        fig.update_layout(xaxis=dict(visible=False), yaxis=dict(visible=False))
    return fig


def extent_widget(records=None):
    """Sliders context / rows / k → time per arm (live on a GPU; recorded + tiny interpreter check without)."""
    import ipywidgets as w

    def show(context, rows, k):
        if backend_info()["mode"] == "gpu" and (note := first_use_notice(("select", rows, k))):
            print(note, flush=True)
        p = show.last = extent_point(context, rows, k, records=records)
        return point_figure(p, f"context {context} ({100 * p['skipped']:.1f}% of the workspace skipped), "
                               f"rows {rows}, k {k}")

    return w.interactive(
        show,
        {"auto_display": True},  # show the callback's return value (a figure / HTML) under the controls
        context=w.SelectionSlider(options=[512, 1024, 4096, 16384, 65536, 131072, 262144], value=4096,
                                  description="context",
                                  continuous_update=False),
        rows=w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128, 256, 640], value=1, description="rows",
                               continuous_update=False),
        k=w.SelectionSlider(options=[64, 512, 2048], value=64, description="k", continuous_update=False),
    )


def rows_point(rows: int, context: int, k: int = 64, *, records=None, mode: str | None = None) -> dict:
    """Recorded (or live) time per arm at one rows × context: the point the rows widget shows."""
    return extent_point(context, rows, k, records=records, mode=mode)


def rows_widget(records=None):
    """rows × context → the split/merge decision's cost per arm (same machinery as :func:`extent_widget`)."""
    import ipywidgets as w

    def show(rows, context):
        if backend_info()["mode"] == "gpu" and (note := first_use_notice(("select", rows, 64))):
            print(note, flush=True)
        p = show.last = rows_point(rows, context, 64, records=records)
        return point_figure(p, f"rows {rows}, context {context}, k 64")

    return w.interactive(
        show,
        {"auto_display": True},  # show the callback's return value (a figure / HTML) under the controls
        rows=w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128, 256, 640], value=8, description="rows",
                               continuous_update=False),
        context=w.SelectionSlider(options=[4096, 16384, 65536, 262144], value=65536, description="context",
                                  continuous_update=False),
    )
