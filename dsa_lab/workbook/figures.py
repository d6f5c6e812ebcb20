"""Plotly figures for the notebooks: each function returns a ``plotly.graph_objects.Figure``; figures built from
measurements name the GPU and the record file in their title, and an absent record gives a figure that says so.

Every figure is titled through :func:`titled`, so the title clears plotly's toolbar.
"""
from __future__ import annotations

import os
import statistics
from typing import TYPE_CHECKING

import torch

from .. import keys
from .backend import backend_info
from .records import load_records, record_label, rel_path, select_rows
from .tables import (
    STAGE_COLUMNS,
    STEP_STAGES,
    STEP_TOTAL,
    fused_step_rows,
    key_fields,
    long_format,
    skip_rows,
    speedup_rows,
)

if TYPE_CHECKING:
    import plotly.graph_objects as go


ARM_COLORS = {
    "torch": "#d62728",
    "torch_live": "#ff7f0e",
    "triton": "#1f77b4",
    "triton_unfused": "#17becf",
    "triton_fused": "#9467bd",
    "seed_triton": "#9467bd",
    "seed_torch": "#8c564b",
}


def setup(template: str = "none") -> dict:
    """Set plotly's default template (small, deterministic JSON) and return :func:`backend_info`."""
    import plotly.io as pio

    if template == "dsa":
        import plotly.graph_objects as go

        pio.templates["dsa"] = go.layout.Template(
            layout=dict(font=dict(family="sans-serif", size=12), colorway=list(ARM_COLORS.values()))
        )
    pio.templates.default = template
    return backend_info()


# plotly's toolbar (the modebar) floats over a figure's top-right corner: a title in that band runs under it.  So the
# title starts below the band, left-aligned over the plot, and the top margin grows with the title's lines.
MODEBAR_PX = 32  # the toolbar's band at the top of a figure
TITLE_LINE_PX = 24  # one title line (a <br><sub> line included)


def titled(fig, title: str, **layout):
    """Apply ``title`` (below the toolbar's band) and ``layout`` to ``fig``; a ``margin`` in ``layout`` keeps its
    other sides, its top is set from the title's lines.  Returns ``fig``."""
    margin = dict(layout.pop("margin", None) or {})
    margin["t"] = MODEBAR_PX + TITLE_LINE_PX * (title.count("<br>") + 1) + 8
    fig.update_layout(title=dict(text=title, x=0, xref="paper", xanchor="left", y=1, yref="container", yanchor="top",
                                 pad=dict(t=MODEBAR_PX)),
                      margin=margin, **layout)
    return fig


def _absent_figure(title: str, path) -> "go.Figure":
    import plotly.graph_objects as go

    fig = go.Figure()
    titled(
        fig, title,
        annotations=[dict(text=f"NO RECORD: {rel_path(path)} is absent", showarrow=False, x=0.5, y=0.5,
                          xref="paper", yref="paper", font=dict(size=16, color="#d62728"))],
        xaxis=dict(visible=False), yaxis=dict(visible=False), height=260,
    )
    return fig


def pipeline_figure(rows: str = "B*next_n", max_model_len: int = 262144, block_size: int = 8, k: int = 64):
    """The decode indexer step (docs/design.md §1) as boxes and arrows, with each tensor's shape."""
    import plotly.graph_objects as go

    nb = -(-max_model_len // block_size)
    stages = [
        ("paged FP8 K cache<br>q_fp8, weights", "inputs", "#f0f0f0"),
        ("paged MQA logits<br><i>producer</i> (nb 05)",
         f"logits fp32<br>[{rows},<br>{max_model_len}]<br>cols < row end written", "#fde0dd"),
        (f"block scores<br>NaN-max per {block_size} cols", f"scores fp32<br>[{rows},<br>{nb}]<br>newest block = +inf",
         "#fcc5c0"),
        ("candidate select<br><i>packed-key top-k</i><br>(nb 01–04)",
         f"candidates int32<br>[{rows},<br>{k}]<br>-1 padded", "#c6dbef"),
        ("candidate flags", f"flags uint8<br>[{rows},<br>{nb + 1}]<br>+ sentinel slot", "#deebf7"),
        ("mask + token top-k<br>(out of scope)", "", "#f0f0f0"),
    ]
    fig = go.Figure()
    n = len(stages)
    for i, (name, out, color) in enumerate(stages):
        x0, x1 = i / n + 0.01, (i + 1) / n - 0.03
        fig.add_shape(type="rect", x0=x0, x1=x1, y0=0.55, y1=0.95, xref="x", yref="y",
                      fillcolor=color, line=dict(color="#555"))
        fig.add_annotation(x=(x0 + x1) / 2, y=0.75, xref="x", yref="y", text=f"<b>{name}</b>",
                           showarrow=False, font=dict(size=11))
        if out:
            fig.add_annotation(x=(x0 + x1) / 2, y=0.25, xref="x", yref="y", text=out, showarrow=False,
                               font=dict(size=10, family="monospace"))
        if i < n - 1:
            fig.add_annotation(x=(i + 1) / n + 0.008, y=0.75, ax=x1 - 0.002, ay=0.75, xref="x", yref="y",
                               axref="x", ayref="y", text="", showarrow=True, arrowhead=2, arrowsize=1.2)
    titled(fig, f"Decode indexer step per layer (max_model_len {max_model_len}, block_size {block_size}, k {k})",
           xaxis=dict(visible=False, range=[0, 1]), yaxis=dict(visible=False, range=[0, 1]), height=320, width=None,
           margin=dict(l=10, r=10, b=10))
    return fig


def key_bits_figure(score, index: int):
    """A 2 × 32 grid of the key's bits (row 0: high word = ordered score; row 1: low word = inverted index)."""
    import plotly.graph_objects as go

    f = key_fields(score, index)
    b = f["key_bits"]
    z = [[int(c) for c in b[:32]], [int(c) for c in b[32:]]]
    fig = go.Figure(
        go.Heatmap(
            z=z, text=[list(b[:32]), list(b[32:])], texttemplate="%{text}", showscale=False,
            colorscale=[[0, "#f7fbff"], [1, "#6baed6"]], xgap=2, ygap=2,
            x=list(range(31, -1, -1)), y=[f"hi {f['key_hi']}", f"lo {f['key_lo']}"],
        )
    )
    titled(
        fig, f"key of score {f['score']} at index {f['index']}: {f['key']} ({f['class']})",
        xaxis=dict(title="bit within word", autorange="reversed", dtick=4), yaxis=dict(autorange="reversed"),
        height=230, margin=dict(l=130, r=20, b=40),
    )
    return fig



def ordered_map_figure(samples: int = 257):
    """``ordered(x)`` against the float's raw bit pattern: the sign transform folds the negative half
    below the positive one, reversed, so unsigned order becomes float order."""
    import plotly.graph_objects as go

    pos = torch.linspace(0, 0x7F800000, samples, dtype=torch.float64).to(torch.int64)
    neg = pos + 0x80000000
    traces = []
    for name, b, color in (("x ≥ +0.0 (sign 0)", pos, "#1f77b4"), ("x ≤ -0.0 (sign 1)", neg, "#d62728")):
        x = torch.where(b >= 2**31, b - 2**32, b).to(torch.int32).view(torch.float32)
        o = keys.ordered_bits(x)
        traces.append(go.Scatter(x=b.tolist(), y=o.tolist(), mode="lines", name=name, line=dict(color=color)))
    nan_o = 0xFFFFFFFF
    traces.append(go.Scatter(x=[0x7F800001, 0x7FFFFFFF, 0xFF800001, 0xFFFFFFFF], y=[nan_o] * 4, mode="markers",
                             name="NaN patterns → 0xFFFFFFFF", marker=dict(color="black", symbol="x")))
    fig = go.Figure(traces)
    titled(
        fig, "ordered(x) vs float32 bits: negatives flipped below positives; NaN on top",
        xaxis=dict(title="float32 bit pattern (unsigned)", tickformat="#x"),
        yaxis=dict(title="ordered(x) (unsigned)"), height=380,
    )
    return fig



def skip_figure(contexts=(512, 4096, 16384, 65536, 131072, 262144), max_model_len=262144, block_size=8):
    """Stacked blocks per row at each context: the live ones read, the padding skipped (:func:`.tables.skip_rows`)."""
    import plotly.graph_objects as go

    rows = skip_rows(contexts, max_model_len, block_size)
    fig = go.Figure([
        go.Bar(x=[str(r["context"]) for r in rows], y=[r["live_blocks"] for r in rows], name="live blocks (read)",
               marker_color="#1f77b4"),
        go.Bar(x=[str(r["context"]) for r in rows], y=[r["padded_blocks"] - r["live_blocks"] for r in rows],
               name="padding blocks (skipped)", marker_color="#d9d9d9", text=[r["skipped"] for r in rows],
               textposition="inside"),
    ])
    titled(fig, f"Blocks per row in a {max_model_len}-token workspace (block_size {block_size})", barmode="stack",
           xaxis=dict(title="context (tokens)", type="category"), yaxis_title="blocks", height=360)
    return fig



def _arms(rows) -> list[str]:
    order = list(ARM_COLORS)
    seen = sorted({r.get("arm") for r in rows}, key=lambda a: (order.index(a) if a in order else 99, str(a)))
    return seen


def _err(rs):
    if all(r.get("p90_us") is not None and r.get("p10_us") is not None for r in rs):
        return dict(type="data", symmetric=False, array=[r["p90_us"] - r["median_us"] for r in rs],
                    arrayminus=[r["median_us"] - r["p10_us"] for r in rs], thickness=1)
    return None


def time_vs_context_figure(rows, meta, path, *, stage="select", k=64, dist="normal", concurrency=1, next_n=1):
    """Median time (p10–p90 bars) vs context per arm, at one concurrency × next_n."""
    import plotly.graph_objects as go

    title = f"{stage} stage, k={k}, {dist}, concurrency {concurrency} × next_n {next_n}"
    if rows is None:
        return _absent_figure(title, path)
    sel = select_rows(rows, stage=stage, k=k, dist=dist, concurrency=concurrency, next_n=next_n)
    traces = []
    for arm in _arms(sel):
        rs = sorted(select_rows(sel, arm=arm), key=lambda r: r["context"])
        traces.append(go.Scatter(x=[r["context"] for r in rs], y=[r["median_us"] for r in rs], name=arm,
                                 mode="lines+markers", error_y=_err(rs), line=dict(color=ARM_COLORS.get(arm))))
    fig = go.Figure(traces)
    titled(fig, f"{title}<br><sub>{record_label(meta, path)}</sub>", xaxis=dict(title="context (tokens)", type="log"),
           yaxis=dict(title="median µs", type="log"), height=420)
    return fig


def time_vs_rows_figure(rows, meta, path, *, context=65536, stage="select", k=64, dist="normal"):
    """Median time vs rows (= concurrency × next_n) per arm at one context: where the curves cross."""
    import plotly.graph_objects as go

    title = f"{stage} stage vs rows, context {context}, k={k}, {dist}"
    if rows is None:
        return _absent_figure(title, path)
    sel = select_rows(rows, stage=stage, k=k, dist=dist, context=context)
    traces = []
    for arm in _arms(sel):
        by = {}
        for r in select_rows(sel, arm=arm):
            by.setdefault(r["rows"], []).append(r["median_us"])
        xs = sorted(by)
        traces.append(go.Scatter(x=xs, y=[statistics.median(by[x]) for x in xs], name=arm, mode="lines+markers",
                                 line=dict(color=ARM_COLORS.get(arm))))
    sm = (meta or {}).get("sm_count")
    ys = [y for t in traces for y in t.y]
    if sm and ys:
        # a trace, not add_vline: a shape on a log axis pulls plotly's autorange to 10**sm
        traces.append(go.Scatter(x=[sm, sm], y=[min(ys), max(ys)], mode="lines", name=f"{sm} SMs",
                                 line=dict(dash="dot", color="black")))
    fig = go.Figure(traces)
    titled(fig, f"{title}<br><sub>{record_label(meta, path)}</sub>",
           xaxis=dict(title="rows (concurrency × next_n)", type="log"), yaxis=dict(title="median µs", type="log"),
           height=420)
    return fig



def roofline_figure(rows, meta, path, *, k=64, dist="normal", stages=("select", "full")):
    """Every sweep point (time vs bytes) against the measured ceilings: max(launch, bytes / stream bandwidth)."""
    import plotly.graph_objects as go

    title = f"Roofline, k={k}, {dist}"
    if rows is None:
        return _absent_figure(title, path)
    ceil = (meta or {}).get("ceilings", {}) or {}
    bw = ceil.get("stream_gbps")
    launch = ceil.get("launch_us")
    sel = [r for r in select_rows(rows, k=k, dist=dist) if r.get("stage") in stages and r.get("bytes")]
    traces = []
    for stage in stages:
        for arm in _arms(select_rows(sel, stage=stage)):
            rs = select_rows(sel, stage=stage, arm=arm)
            traces.append(go.Scatter(
                x=[r["bytes"] for r in rs], y=[r["median_us"] for r in rs], mode="markers", name=f"{arm} · {stage}",
                marker=dict(color=ARM_COLORS.get(arm), symbol="circle" if stage == "select" else "diamond", size=6,
                            opacity=0.7),
                text=[f"ctx {r['context']} rows {r['rows']}" for r in rs],
            ))
    if bw and sel:
        lo = max(min(r["bytes"] for r in sel) / 2, 1)
        hi = max(r["bytes"] for r in sel) * 2
        xs = [lo * (hi / lo) ** (i / 60) for i in range(61)]
        ys = [max(launch or 0, x / (bw * 1e3)) for x in xs]  # GB/s → bytes/µs is ×1e3
        traces.append(go.Scatter(x=xs, y=ys, mode="lines",
                                 name=f"floor: max({launch} µs launch, bytes / {bw:.0f} GB/s)",
                                 line=dict(color="black", dash="dash")))
    fig = go.Figure(traces)
    titled(fig, f"{title} (measured ceilings)<br><sub>{record_label(meta, path)}</sub>",
           xaxis=dict(title="bytes moved (model)", type="log"), yaxis=dict(title="median µs", type="log"), height=480)
    return fig


def seed_comparison_figure(sweep, seed_speedup, *, k=64, stages=("select", "full")):
    """Median speedup over torch.topk per context (bars: min–max): this project's recorded sweep (one bar per
    stage) beside the seed PR's MI355X medians (``data/mi355x_seed/speedup_by_context.csv``, transcribed)."""
    import plotly.graph_objects as go

    rows, meta, path = sweep
    srows, smeta, spath = seed_speedup
    traces = []
    for stage in stages:
        sp = speedup_rows(rows, stage=stage, k=k) if rows else []
        if sp:
            traces.append(go.Bar(
                x=[str(r["context"]) for r in sp], y=[float(r["median_x"]) for r in sp],
                name=f"triton vs torch, {stage} stage: {record_label(meta, path)}",
                error_y=dict(type="data", symmetric=False, array=[float(r["max_x"]) - float(r["median_x"]) for r in sp],
                             arrayminus=[float(r["median_x"]) - float(r["min_x"]) for r in sp])))
    if srows:
        traces.append(go.Bar(
            x=[str(r["context"]) for r in srows], y=[float(r["median_x"]) for r in srows], marker_color="#9467bd",
            name=f"seed kernel vs torch: {record_label(smeta, spath)}",
            error_y=dict(type="data", symmetric=False, array=[float(r["max_x"]) - float(r["median_x"]) for r in srows],
                         arrayminus=[float(r["median_x"]) - float(r["min_x"]) for r in srows])))
    if not traces:
        return _absent_figure("Speedup over torch.topk per context", path)
    fig = go.Figure(traces)
    note = "" if rows else f"<br><sub>NO RECORD: {rel_path(path)} is absent; only the seed's numbers are shown</sub>"
    titled(fig, f"Median speedup over torch.topk per context, k={k} (bars: min–max){note}",
           barmode="group", showlegend=True,
           xaxis=dict(title="context (tokens)", type="category"), yaxis_title="speedup ×", height=460,
           legend=dict(orientation="h", y=-0.3))
    return fig



def step_breakdown_figure(rows, meta, path, *, next_n=1, arm="triton"):
    """Stacked per-stage time of the decode indexer step per context × concurrency (one arm), with the
    measured whole step as a marker (stages timed one by one need not add up to it exactly)."""
    import plotly.graph_objects as go

    title = f"Decode indexer step breakdown, arm {arm}, next_n {next_n}"
    if rows is None:
        return _absent_figure(title, path)
    if long_format(rows):
        sel = select_rows(rows, next_n=next_n, arm=arm)
        xs = sorted({(r["context"], r["concurrency"]) for r in sel})
        labels = [f"ctx {c} · B {b}" for c, b in xs]
        have = {r["stage"] for r in sel}
        stages = [s for s in STEP_STAGES if s in have] or sorted(have - {STEP_TOTAL})
        traces = []
        for st in stages:
            ys = []
            for c, b in xs:
                m = select_rows(sel, stage=st, context=c, concurrency=b)
                ys.append(m[0]["median_us"] if m else 0)
            traces.append(go.Bar(x=labels, y=ys, name=st))
        if STEP_TOTAL in have:
            ys = []
            for c, b in xs:
                m = select_rows(sel, stage=STEP_TOTAL, context=c, concurrency=b)
                ys.append(m[0]["median_us"] if m else None)
            traces.append(go.Scatter(x=labels, y=ys, name="whole step (measured)", mode="markers",
                                     marker=dict(symbol="line-ew-open", size=18, color="black")))
    else:
        sel = sorted(select_rows(rows, next_n=next_n, arm=arm if any("arm" in r for r in rows) else None),
                     key=lambda r: (r["context"], r["concurrency"]))
        cols = [c for c in STAGE_COLUMNS if any(r.get(c) is not None for r in sel)]
        labels = [f"ctx {r['context']} · B {r['concurrency']}" for r in sel]
        traces = [go.Bar(x=labels, y=[r.get(c) or 0 for r in sel], name=c.replace("_us", "")) for c in cols]
    fig = go.Figure(traces)
    titled(fig, f"{title}<br><sub>{record_label(meta, path)}</sub>", barmode="stack", yaxis_title="µs",
           height=440)
    return fig



def fused_step_figure(rows, meta, path, *, next_n=1):
    """The whole step per context × concurrency in three compositions: fused (producer + scores, then the select),
    staged (producer, sanitize, scores + select, flags) and upstream, with the producer alone as a marker."""
    import plotly.graph_objects as go

    title = f"Decode indexer step: fused vs staged vs upstream, next_n {next_n}"
    if rows is None:
        return _absent_figure(title, path)
    pts = fused_step_rows(rows, next_n=next_n)
    labels = [f"ctx {r['context']} · B {r['concurrency']}" for r in pts]
    traces = [go.Bar(x=labels, y=[r[key] for r in pts], name=name) for key, name in
              (("fused_step_us", "fused step"), ("staged_step_us", "staged step"),
               ("upstream_step_us", "upstream step"))]
    traces.append(go.Scatter(x=labels, y=[r["producer_us"] for r in pts], name="producer alone", mode="markers",
                             marker=dict(symbol="line-ew-open", size=18, color="black")))
    fig = go.Figure(traces)
    titled(fig, f"{title}<br><sub>{record_label(meta, path)}</sub>", barmode="group", yaxis_title="µs",
           yaxis_type="log", height=440)
    return fig



def producer_roofline_figure(rows, meta, path):
    """Every producer logits point as achieved Tflop/s against arithmetic intensity (fp8 MMA flops per byte read),
    under the roofline ``min(fp8 peak, intensity x stream bandwidth)`` of the same run (both ceilings measured)."""
    import plotly.graph_objects as go

    title = "Producer on the roofline"
    pts = [r for r in rows or () if r.get("arm") == "triton" and r.get("stage") == "logits" and r.get("flops")
           and r.get("bytes")]
    ceil = (meta or {}).get("ceilings", {}) or {}
    bw, peak = ceil.get("stream_gbps"), ceil.get("fp8_tflops")
    if not pts:
        return _absent_figure(title, path)
    traces = []
    for n in sorted({r["next_n"] for r in pts}):
        rs = [r for r in pts if r["next_n"] == n]
        traces.append(go.Scatter(
            x=[r["flops"] / r["bytes"] for r in rs], y=[r["flops"] / r["median_us"] / 1e6 for r in rs], mode="markers",
            name=f"next_n {n}", marker=dict(size=7, opacity=0.8),
            text=[f"ctx {r['context']} conc {r['concurrency']}: {r['median_us']:.0f} µs, "
                  f"{100 * (r.get('roofline_frac') or 0):.0f}% of the roofline" for r in rs]))
    if bw and peak:
        lo = min(r["flops"] / r["bytes"] for r in pts) / 2
        hi = max(r["flops"] / r["bytes"] for r in pts) * 2
        xs = [lo * (hi / lo) ** (i / 80) for i in range(81)]
        traces.append(go.Scatter(x=xs, y=[min(peak, x * bw / 1e3) for x in xs], mode="lines",
                                 name=f"roofline: min({peak:.0f} Tflop/s, intensity × {bw:.0f} GB/s)",
                                 line=dict(color="black", dash="dash")))
    fig = go.Figure(traces)
    titled(fig, f"{title} (measured ceilings)<br><sub>{record_label(meta, path)}</sub>",
           xaxis=dict(title="fp8 MMA flops per byte read", type="log"),
           yaxis=dict(title="achieved Tflop/s", type="log"), height=480)
    return fig



def static_figures(root=None) -> dict:
    """The README's figures (name → Figure, or None when the record it needs is absent)."""
    sw = load_records("select_sweep", root=root)
    seed = load_records("speedup_by_context", gpu="mi355x_seed", root=root)
    step = load_records("step_breakdown", root=root)
    have = sw[0] is not None
    return {
        "key_layout": key_bits_figure("1.5", 5),
        "extent_skipping": skip_figure(),
        "time_vs_context": time_vs_context_figure(*sw) if have else None,
        "time_vs_rows": time_vs_rows_figure(*sw) if have else None,
        "roofline": roofline_figure(*sw) if have else None,
        "speedup_vs_seed": seed_comparison_figure(sw, seed) if (have or seed[0]) else None,
        "step_breakdown": step_breakdown_figure(*step) if step[0] is not None else None,
    }


def export_static_figures(outdir="docs/figures", *, root=None, width=900, height=None, scale=1.5) -> list[str]:
    """Write :func:`static_figures` as PNG via kaleido and the system Chromium (``BROWSER_PATH``)."""
    import plotly.io as pio

    if not os.environ.get("BROWSER_PATH"):
        for c in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"):
            if os.path.exists(c):
                os.environ["BROWSER_PATH"] = c
                break
    prev = pio.templates.default
    pio.templates.default = "plotly_white"
    try:
        os.makedirs(outdir, exist_ok=True)
        written = []
        for name, fig in static_figures(root).items():
            path = os.path.join(outdir, f"{name}.png")
            if fig is None:
                print(f"skipped {path}: its record is absent")
                continue
            pio.write_image(fig, path, format="png", width=width, height=height or fig.layout.height or 450,
                            scale=scale)
            written.append(path)
        return written
    finally:
        pio.templates.default = prev
