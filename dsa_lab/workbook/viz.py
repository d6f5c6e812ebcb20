"""Plotly figures and ipywidgets for the workbook (``notebooks/``).

Everything a notebook shows is built here, so it is tested (``tests/test_viz.py``):

* ``*_figure`` functions return a ``plotly.graph_objects.Figure``; figures built
  from measurements name the GPU and the record file in their title.
* ``*_table`` / ``*_rows`` functions return plain lists of dicts (deterministic:
  the notebooks print them with :func:`dsa_lab.proofs.format_table` and nbval
  compares them strictly).
* ``*_widget`` factories return an ``ipywidgets.interactive`` whose callback is a
  thin wrapper over a package function; ``ui.result`` holds the last return
  value (what tests assert on).

Backends (:func:`backend_info`): a CUDA GPU runs kernels live; without one the
Triton interpreter runs tiny shapes (correct, not a performance measurement);
measured numbers always come from ``data/`` records.
"""
from __future__ import annotations

import json
import math
import os
import statistics
import time
from pathlib import Path

import torch

from .. import keys
from ..bench import data as _data
__all__ = [
    "setup",
    "pipeline_figure",
    "summarize_verification",
    "backend_info",
    "backend_banner",
    "data_dir",
    "load_records",
    "record_label",
    "parse_score",
    "key_fields",
    "key_fields_html",
    "key_bits_figure",
    "key_widget",
    "ordered_map_figure",
    "skip_fraction",
    "skip_rows",
    "skip_figure",
    "select_rows",
    "time_vs_context_figure",
    "time_vs_rows_figure",
    "speedup_rows",
    "roofline_figure",
    "seed_comparison_figure",
    "split_rule_rows",
    "record_status",
    "extent_point",
    "extent_widget",
    "rows_point",
    "rows_widget",
    "itl_share_rows",
    "step_breakdown_figure",
    "itl_compare_rows",
    "sanitize_rows",
    "export_static_figures",
]

ARM_COLORS = {
    "torch": "#d62728",
    "torch_live": "#ff7f0e",
    "triton": "#1f77b4",
    "triton_unfused": "#17becf",
    "triton_fused": "#9467bd",
    "seed_triton": "#9467bd",
    "seed_torch": "#8c564b",
}
SEED_LABEL = "MI355X (seed PR, transcribed)"

# ---------------------------------------------------------------------------
# Setup, backends, records
# ---------------------------------------------------------------------------


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


def backend_info() -> dict:
    """Which backend the workbook runs on here: ``gpu`` (live kernels), ``interpreter`` (Triton on CPU,
    tiny shapes, not a performance measurement) or ``torch-cpu`` (torch arms only)."""
    from .._impl import interpreter_active

    if torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
        return {"mode": "gpu", "device": "cuda", "name": name, "live": True,
                "label": f"GPU live: {name} (kernels run here; timings are real)"}
    if interpreter_active():
        return {"mode": "interpreter", "device": "cpu", "name": "Triton interpreter", "live": False,
                "label": "No GPU: Triton interpreter on CPU at tiny shapes (correctness only, not performance); "
                "measured numbers come from recorded data/"}
    return {"mode": "torch-cpu", "device": "cpu", "name": "CPU", "live": False,
            "label": "No GPU and no interpreter: torch arms on CPU; measured numbers come from recorded data/"}


def backend_banner() -> str:
    return "Backend: " + backend_info()["label"]


def data_dir() -> Path:
    """The repository's ``data/`` folder (``DSA_LAB_DATA`` overrides)."""
    env = os.environ.get("DSA_LAB_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "data"


def load_records(name: str, gpu: str = "h200", *, root: Path | None = None):
    """``(rows, meta, path)`` of ``data/<gpu>/<name>.csv`` (:func:`dsa_lab.data.load_rows`: numbers converted, the
    commit column kept as text) and its ``.meta.json``; ``(None, None, path)`` when the record is absent."""
    root = Path(root) if root is not None else data_dir()
    path = root / gpu / f"{name}.csv"
    if not path.exists():
        return None, None, path
    rows = _data.load_rows(path)
    return rows, _data.load_meta(path.with_suffix(".meta.json")), path


def _rel(path) -> str:
    p = Path(path)
    try:
        return str(p.resolve().relative_to(data_dir().resolve().parent))
    except ValueError:
        return str(p)


def record_label(meta: dict | None, path) -> str:
    """``"<GPU> · <record file>"`` for titles.  Seed data is labelled as transcribed."""
    meta = meta or {}
    gpu = meta.get("gpu") or meta.get("gpu_name")
    if isinstance(gpu, dict):
        gpu = gpu.get("name")
    if not gpu:
        gpu = "Triton interpreter on CPU" if meta.get("triton_interpreter") else (meta.get("device") or "unknown GPU")
    label = f"{gpu} · {_rel(path)}"
    if meta.get("performance_measurement") is False or meta.get("triton_interpreter"):
        label += " (interpreter: not a performance measurement)"
    if meta.get("transcribed") or "mi355x_seed" in str(path):
        label += " (seed PR numbers, transcribed, not measured here)"
    return label


def _absent_figure(title: str, path) -> "go.Figure":
    import plotly.graph_objects as go

    fig = go.Figure()
    fig.update_layout(
        title=title,
        annotations=[dict(text=f"NO RECORD: {_rel(path)} is absent", showarrow=False, x=0.5, y=0.5,
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
        ("paged MQA logits<br><i>producer</i> (nb 05)", f"logits fp32<br>[{rows},<br>{max_model_len}]<br>cols < row end written", "#fde0dd"),
        ("block scores<br>NaN-max per {bs} cols".replace("{bs}", str(block_size)), f"scores fp32<br>[{rows},<br>{nb}]<br>newest block = +inf", "#fcc5c0"),
        ("candidate select<br><i>packed-key top-k</i><br>(nb 01–04)", f"candidates int32<br>[{rows},<br>{k}]<br>-1 padded", "#c6dbef"),
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
    fig.update_layout(title=f"Decode indexer step per layer (max_model_len {max_model_len}, block_size {block_size}, k {k})",
                      xaxis=dict(visible=False, range=[0, 1]), yaxis=dict(visible=False, range=[0, 1]), height=320, width=None,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


_MISMATCH_FIELDS = ("mismatches", "mismatch_rows", "mismatch", "bad_rows", "disagree", "failures", "errors")


def _summarize_fuzz(rec: dict, rel: str, path) -> str:
    """A ``dsa-lab verify --fuzz`` record: cases and mismatching cases per arm, shards, failures."""
    meta = rec.get("meta", {})
    commits = [c[:7] for c in meta.get("commits") or [str(meta.get("commit") or "?")]]
    dates = sorted({str(d)[:10] for d in [meta.get("date_utc")] + [s.get("date_utc") for s in rec.get("shards", [])] if d})
    lines = [f"{rel} — {record_label(meta, path)} · commit{'s' * (len(commits) > 1)} {', '.join(commits)} · "
             f"{'?' if not dates else dates[0] if dates[0] == dates[-1] else f'{dates[0]} to {dates[-1]}'}",
             f"  random cases: {rec['n']:,}" + (f" in {len(rec['shards'])} shards" if rec.get("shards") else "")]
    for arm, c in sorted(rec["arms"].items()):
        lines.append(f"  arm {arm}: {c['cases']:,} cases, {c['mismatched_cases']} with a mismatch")
    for f in rec.get("failures", [])[:10]:
        lines.append(f"  MISMATCH {f.get('case')} [{f.get('arm')}] seed {f.get('seed')}: "
                     f"{f.get('error') or f.get('first_mismatch')}")
    return "\n".join(lines)


def _by_point(rows: list[dict], **want) -> list[tuple[tuple, dict]]:
    """Dev-run rows (one per arm and point) grouped per point ``(k, dist, context, rows)``: ``{arm: median_us}``
    plus ``"_checks"`` (the non-empty ``check`` values) and ``"_partial"`` (arms timed as ``timing only``),
    filtered by ``want`` (field = value, None = any) and sorted by k (large first), normal before the other
    distributions, context, rows.  A run without a ``dist`` column (``fused_direct_dev.csv``: normal values only)
    counts as ``normal``."""
    pts: dict = {}
    for r in rows:
        if any(v is not None and r.get(f, "normal" if f == "dist" else None) != v for f, v in want.items()):
            continue
        key = (int(r["k"]), str(r.get("dist", "normal")), int(r["context"]), int(r["rows"]))
        d = pts.setdefault(key, {"_checks": [], "_partial": set()})
        d[str(r["arm"])] = float(r["median_us"])
        if r.get("check") not in (None, ""):
            d["_checks"].append(str(r["check"]))
            if r["check"] == "timing only":
                d["_partial"].add(str(r["arm"]))
    return sorted(pts.items(), key=lambda t: (-t[0][0], t[0][1] != "normal", t[0][1], t[0][2], t[0][3]))


def radix_dev_rows(rows: list[dict]) -> list[dict]:
    """Rows of ``data/<gpu>/radix_dev.csv`` (``scripts/gpu_radix_dev.py``) as one table row per point:
    torch, the default kernel, the best radix variant, and the two ratios; sorted by k (large first),
    distribution, context, rows."""
    out = []
    for (k, dist, ctx, nrows), d in _by_point(rows):
        radix = [v for a, v in d.items() if a.startswith("radix")]
        if not radix or "torch" not in d or "triton" not in d:
            continue
        best = min(radix)
        out.append({"k": k, "dist": dist, "context": ctx, "rows": nrows, "torch_us": f"{d['torch']:.1f}",
                    "hier_us": f"{d['triton']:.1f}", "radix_us": f"{best:.1f}",
                    "radix_vs_hier": f"{d['triton'] / best:.2f}x", "radix_vs_torch": f"{d['torch'] / best:.2f}x",
                    "check": d["_checks"][-1] if d["_checks"] else ""})
    return out


def variant_rows(rows: list[dict], arms, *, k=None, dist=None, stage=None) -> list[dict]:
    """Rows of a dev run that timed several variants per point (``scripts/gpu_tune_dev.py`` →
    ``data/<gpu>/tune_dev/tune_dev_<section>.csv``) as one table row per point: the median µs of each of
    ``arms`` (``—`` where not timed, e.g. a variant whose check failed), the fastest of them (arms timed as
    ``timing only`` -- parts of a kernel -- are shown but never the fastest), and whether every timed variant
    passed its check (``ok + timing only`` where some timed arms were parts of a kernel, unchecked); filtered by
    ``k`` / ``dist`` / ``stage``, sorted by k, dist, context, rows."""
    out = []
    for (kk, dd, ctx, nrows), d in _by_point(rows, k=k, dist=dist, stage=stage):
        row = {"k": kk, "dist": dd, "context": ctx, "rows": nrows}
        timed = {a: d[a] for a in arms if a in d and a not in d["_partial"]}  # a part of a kernel is no contender
        for a in arms:
            row[a] = f"{d[a]:.1f}" if a in d else "—"
        row["fastest"] = min(timed, key=timed.get) if timed else "—"
        checks = [c for c in d["_checks"] if c != "baseline"]  # the reference arm of a run checks nothing
        if not checks:
            row["checks"] = "—"
        elif all(c == "ok" for c in checks):
            row["checks"] = "ok"
        elif all(c in ("ok", "timing only") for c in checks):  # parts of a kernel that write no ids (W's t_*)
            row["checks"] = "ok + timing only"
        else:
            row["checks"] = "FAILED"
        out.append(row)
    return out


def stagea_rows(rows: list[dict]) -> list[dict]:
    """Rows of the stage-A dev run (``scripts/gpu_stagea_dev.py`` -> ``data/<gpu>/tune_dev/stagea_dev.csv``: one row
    per variant x tile x warps x programs per row x shape) as one table row per shape and variant: its fastest
    configuration (median µs, GB/s of logits read, ``P / NT / num_warps``), its time over the fastest ``read``
    (the bare load + max) of that shape, and the worst ``check`` among its configurations (``ok``, ``timing-only``
    or the mismatch text).  Variants in the script's order; shapes by context, then rows (large first)."""
    order = ["cur", "flat", "flat_hi", "scores", "read"]
    best: dict = {}
    checks: dict = {}
    for r in rows:
        key = (int(r["context"]), int(r["rows"]), str(r["variant"]))
        c, prev = str(r.get("check", "")), checks.get(key)
        if prev is None or (prev in ("ok", "timing-only") and c not in ("ok", "timing-only")):
            checks[key] = c  # the first failing check wins
        if key not in best or float(r["median_us"]) < float(best[key]["median_us"]):
            best[key] = r
    out = []
    shapes = sorted({(c, n) for c, n, _ in best}, key=lambda t: (-t[0], -t[1]))
    for ctx, n in shapes:
        floor = best.get((ctx, n, "read"))
        for v in sorted({v for c, nn, v in best if (c, nn) == (ctx, n)},
                        key=lambda v: order.index(v) if v in order else len(order)):
            r = best[(ctx, n, v)]
            us = float(r["median_us"])
            out.append({"context": ctx, "rows": n, "variant": v, "median_us": f"{us:.1f}",
                        "GB/s": f"{float(r['gbps']):.0f}",
                        "config": f"P {int(r['P'])} / NT {int(r['NT'])} / nw {int(r['num_warps'])}",
                        "x read": f"{us / float(floor['median_us']):.2f}" if floor else "—",
                        "check": checks[(ctx, n, v)]})
    return out


def ab_ratios(records: list[dict], base: str, cand, /, *, stage=None, **where) -> list[float]:
    """Candidate time / baseline time at each point ``(k, dist, context, rows)`` of a dev run where both were timed
    (same process, same inputs); ``cand`` is an arm or a tuple of arms (then the fastest of them at the point).
    ``stage`` and ``where`` filter the records (field = value, or a tuple / list / set of accepted values); a run without a
    ``dist`` column counts as ``normal`` (:func:`_by_point`).  Points in :func:`_by_point`'s order."""
    cands = (cand,) if isinstance(cand, str) else tuple(cand)

    def keep(r):
        for f, v in where.items():
            got = r.get(f, "normal" if f == "dist" else None)
            if (got not in v) if isinstance(v, (tuple, list, set, frozenset)) else (got != v):
                return False
        return True

    out = []
    for _, d in _by_point([r for r in records if keep(r)], stage=stage):
        c = [d[a] for a in cands if a in d]
        if base in d and c and d[base] > 0:
            out.append(min(c) / d[base])
    return out


def old_new_rows(records) -> list[dict]:
    """The rows of ``scripts/gpu_ab_old.py`` records (each a :func:`load_records` result; absent ones skipped): per
    point, the older package's time (arm ``old``) beside this tree's (``new``) and their ratio, in the records' order."""
    out = []
    for rows, _meta, _path in records:
        old = {(r["k"], r["rows"], r["context"]): r for r in rows or [] if r["arm"] == "old"}
        for r in rows or []:
            o = old.get((r["k"], r["rows"], r["context"]))
            if r["arm"] == "new" and o is not None:
                out.append({"k": r["k"], "rows": r["rows"], "context": r["context"], "previous_us": o["median_us"],
                            "current_us": r["median_us"], "ratio": r["ratio_vs_old"]})
    return out


def dist_spread_rows(rows: list[dict], arm: str = "triton") -> list[dict]:
    """Per shape ``(k, rows)`` of a value-distribution record (``scripts/gpu_select_ab.py --dists``, one or more
    ``seed`` draws: other scores of the same laws): each draw's slowest / fastest time of ``arm`` over the
    distributions, and over the draws that ratio's median, lowest and highest, how many draws exceed 1.2, the
    fastest and slowest distribution's times (lowest-highest over the draws), and which distribution was slowest how
    often.  Rows of another arm, or whose ids did not match, are left out."""
    draws = {}
    for r in rows:
        if r["arm"] == arm and r.get("check") == "ok":
            draws.setdefault((r["k"], r["rows"]), {}).setdefault(r.get("seed", 0), {})[r["dist"]] = r["median_us"]
    out = []
    for (k, n), by_seed in sorted(draws.items()):
        ratios, lows, highs, slowest = [], [], [], {}
        for t in by_seed.values():
            lo, hi = min(t.values()), max(t.values())
            ratios.append(hi / lo)
            lows.append(lo)
            highs.append(hi)
            worst = max(t, key=t.get)
            slowest[worst] = slowest.get(worst, 0) + 1
        out.append({"k": k, "rows": n, "draws": len(ratios), "ratio_median": round(statistics.median(ratios), 3),
                    "ratio_min": round(min(ratios), 3), "ratio_max": round(max(ratios), 3),
                    "draws_over_1.2": sum(x > 1.2 for x in ratios),
                    "fastest_us": f"{min(lows):.2f}-{max(lows):.2f}", "slowest_us": f"{min(highs):.2f}-{max(highs):.2f}",
                    "slowest_dist": ", ".join(f"{d} {c}" for d, c in sorted(slowest.items(), key=lambda x: -x[1]))})
    return out


_STALL = "smsp__average_warps_issue_stalled_"


def pipe_rows(rows: list[dict], stalls: int = 4) -> list[dict]:
    """The counters of a ``scripts/gpu_bisect_pipes.py`` record (one row per case and counter), one line per case in
    the record's order: the profiled time, warp instructions per row and the ALU pipe's share of them, how busy the
    ALU pipe and the issue slots were, eligible of resident warps per scheduler, and the ``stalls`` largest stall
    reasons (cycles a warp waited per instruction issued; ``selected``, the issue itself, left out)."""
    cases: dict = {}
    for r in rows:
        cases.setdefault((r["rows"], r["n"], r["k"], r["dist"]), {})[r["metric"]] = r["value"]
    out = []
    for (nrows, n, k, dist), m in cases.items():
        inst = float(m["smsp__inst_executed.sum"])
        reasons = {name[len(_STALL):].split("_per_issue")[0]: float(v) for name, v in m.items()
                   if name.startswith(_STALL)}
        st = sorted(((v, why) for why, v in reasons.items() if why != "selected"), reverse=True)
        out.append({"case": f"{nrows} x {n}, k = {k}, {dist}",
                    "µs": round(float(m["gpu__time_duration.sum"]) / 1000, 1),
                    "warp instr / row": int(round(inst / nrows)),
                    "ALU share": round(float(m["smsp__inst_executed_pipe_alu.sum"]) / inst, 2),
                    "ALU pipe busy %": float(m["sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active"]),
                    "issue busy %": float(m["smsp__issue_active.avg.pct_of_peak_sustained_active"]),
                    "eligible / resident warps": f"{float(m['smsp__warps_eligible.avg.per_cycle_active']):.2f} / "
                                                 f"{float(m['smsp__warps_active.avg.per_cycle_active']):.2f}",
                    "stalls (cycles / issue)": ", ".join(f"{name} {v:.2f}" for v, name in st[:stalls])})
    return out


def tried_rows(experiments, *, gpu: str = "h200", root: Path | None = None) -> list[dict]:
    """The "what we tried" table: one row per experiment, each measured in dev runs against the kernel of its day.

    ``experiments``: ``(option, what it was, verdict, comparisons)``; each comparison ``(record, stage, baseline arm,
    candidate arm(s))`` or ``(record, stage, baseline, candidate, where)`` (:func:`ab_ratios`; ``record`` as for
    :func:`load_records`).  Per stage, the ratios of all its comparisons are pooled: median, range, and at how many
    points the candidate was more than 1% slower (a ratio above 1 = the candidate slower).  An absent record says
    ``NO RECORD``."""
    out = []
    for option, what, verdict, comparisons in experiments:
        by_stage: dict = {}
        recs, missing = [], []
        for comp in comparisons:
            record, stage, base, cand = comp[:4]
            where = comp[4] if len(comp) > 4 else {}
            rows, _, path = load_records(record, gpu, root=root)
            if rows is None:
                missing.append(_rel(path))
                continue
            if _rel(path) not in recs:
                recs.append(_rel(path))
            by_stage.setdefault(stage, []).extend(ab_ratios(rows, base, cand, stage=stage, **where))
        parts = []
        for stage, rs in by_stage.items():
            if rs:
                slow = sum(r > 1.01 for r in rs)
                parts.append(f"{stage}: median {statistics.median(rs):.2f}x, {min(rs):.2f}–{max(rs):.2f}x, "
                             f"slower at {slow} of {len(rs)}")
        parts += [f"NO RECORD: {m} is absent" for m in missing]
        out.append({"option": option, "what it was": what,
                    "candidate / baseline time": "; ".join(parts) or "—", "verdict": verdict,
                    "records": ", ".join(recs) or "—"})
    return out


def float_max_table(path) -> str:
    """The recorded float-max check (``scripts/gpu_float_max_check.py``): per block, the contract's max and
    what ``torch.amax`` and a Triton ``tl.max`` returned on that GPU (``!`` marks a departure)."""
    path = Path(path)
    rel = _rel(path)
    if not path.exists():
        return f"NO RECORD: {rel} is absent (scripts/gpu_float_max_check.py on a GPU writes it)."
    rec = json.loads(path.read_text())
    meta = rec.get("meta", {})
    lines = [f"{rel} — {record_label(meta, path)} · commit {str(meta.get('commit') or '?')[:7]}",
             f"{'block (bit patterns; s = subnormal)':<36}{'contract':<12}{'torch.amax':<14}tl.max"]
    for r in rec["rows"]:
        lines.append(f"{r['block']:<36}{r['contract']:<12}{r['torch_amax'] + ('' if r['torch_amax_ok'] else ' !'):<14}"
                     f"{r['triton_tl_max'] + ('' if r['triton_tl_max_ok'] else ' !'):<14}".rstrip())
    return "\n".join(lines)


def summarize_verification(path) -> str:
    """Deterministic text summary of a verification record (CSV of per-configuration results, or JSON).

    Counts configurations per arm and lists every configuration with a non-zero mismatch field
    (``mismatches``/``mismatch_rows``/... or a false ``match``/``agree``/``ok`` column).
    """
    path = Path(path)
    rel = _rel(path)
    if not path.exists():
        return f"NO RECORD: {rel} is absent (recorded by the verification run on the GPU)."
    meta_path = path.with_suffix(".meta.json")
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    if path.suffix == ".json":
        rec = json.loads(path.read_text())
        if isinstance(rec.get("arms"), dict) and "n" in rec:
            return _summarize_fuzz(rec, rel, path)
        meta = {**meta, **{k: rec[k] for k in ("gpu", "gpu_name", "device") if k in rec}}
        lines = [f"{rel} — {record_label(meta, path)}"]
        for k in sorted(rec):
            v = rec[k]
            if isinstance(v, (int, float, str, bool)) or v is None:
                if k not in ("date", "command", "commit", "seconds", "driver"):
                    lines.append(f"  {k}: {v}")
            elif isinstance(v, dict) and all(isinstance(x, (int, float, str, bool)) or x is None for x in v.values()):
                lines.append(f"  {k}: {json.dumps(v, sort_keys=True)}")
            elif isinstance(v, list):
                lines.append(f"  {k}: {len(v)} entries" + (f", first: {json.dumps(v[0], sort_keys=True)[:200]}" if v else ""))
        return "\n".join(lines)
    rows = _data.load_rows(path)
    lines = [f"{rel} — {record_label(meta, path)}: {len(rows)} rows"]
    if not rows:
        return lines[0]
    cols = list(rows[0])
    mm = next((c for c in _MISMATCH_FIELDS if c in cols), None)
    okc = next((c for c in ("match", "agree", "ok", "equal", "passed") if c in cols), None)
    name_col = next((c for c in ("case", "name", "config", "configuration") if c in cols), None)
    arm_col = "arm" if "arm" in cols else None
    groups: dict = {}
    for r in rows:
        groups.setdefault(r.get(arm_col) if arm_col else "all", []).append(r)

    def bad(r):
        if mm is not None:
            return bool(r.get(mm))
        if okc is not None:
            return str(r.get(okc)).lower() in ("false", "0", "no")
        return False

    for arm, rs in sorted(groups.items(), key=lambda t: str(t[0])):
        b = [r for r in rs if bad(r)]
        total = sum(int(r.get(mm) or 0) for r in rs) if mm else len(b)
        lines.append(f"  arm {arm}: {len(rs)} configurations, {len(b)} with a mismatch"
                     + (f" ({total} mismatching rows in all)" if mm else ""))
        for r in b[:20]:
            lines.append(f"    MISMATCH {r.get(name_col) if name_col else r}: {mm or okc}={r.get(mm or okc)}")
    if mm is None and okc is None:
        lines.append(f"  (no mismatch column among {cols})")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# 01 key packing
# ---------------------------------------------------------------------------


def parse_score(text) -> float:
    """A float32 from text: decimal (``"1.5"``, ``"-0.0"``, ``"nan"``, ``"-inf"``) or bit pattern (``"0x7fc00001"``).

    Returns a Python float carrying the float32 value; use :func:`_score_tensor` for exact bits.
    """
    return float(_score_tensor(text)[0])


def _score_tensor(text) -> torch.Tensor:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return torch.tensor([float(text)], dtype=torch.float32)
    s = str(text).strip().lower()
    if s.startswith("0x"):
        v = int(s, 16)
        if not 0 <= v < 2**32:
            raise ValueError(f"bit pattern {text!r} is not 32 bits")
        v = v - 2**32 if v >= 2**31 else v
        return torch.tensor([v], dtype=torch.int32).view(torch.float32)
    try:
        return torch.tensor([float(s)], dtype=torch.float32)
    except ValueError:
        raise ValueError(f"score {text!r} is not a number or a 0x bit pattern") from None


def _classify(x: float, bits: int) -> str:
    if math.isnan(x):
        return "NaN (ranks above +inf; every payload ties)"
    if x == float("-inf"):
        return "-inf (padding: never selected)"
    if x == float("inf"):
        return "+inf"
    if x == 0:
        return "-0.0 (just below +0.0)" if bits >> 31 else "+0.0"
    if (bits >> 23) & 0xFF == 0:
        return "denormal"
    return "normal"


def key_fields(score, index: int) -> dict:
    """Every bit field of ``pack_keys(score, index)``: the float's sign/exponent/mantissa, ``ordered``,
    the key's high and low words.  ``score`` may be text (see :func:`parse_score`)."""
    x = _score_tensor(score)
    idx = torch.tensor([int(index)], dtype=torch.int64)
    k = int(keys.pack_keys(x, idx)[0])  # raises ValueError beyond MAX_INDEX
    bits = int(x.view(torch.int32).to(torch.int64)[0]) & 0xFFFFFFFF
    o = int(keys.ordered_bits(x)[0])
    hi, lo = (k >> 32) & 0xFFFFFFFF, k & 0xFFFFFFFF
    back, back_i = keys.unpack_keys(torch.tensor([k], dtype=torch.int64))
    xv = float(x[0])
    return {
        "score": repr(xv),
        "class": _classify(xv, bits),
        "bits": f"0x{bits:08X}",
        "sign": bits >> 31,
        "exponent": (bits >> 23) & 0xFF,
        "mantissa": f"0x{bits & 0x7FFFFF:06X}",
        "ordered": f"0x{o:08X}",
        "sign_transform": "bits ^ 0xFFFFFFFF (negative: flip all)" if bits >> 31 else "bits ^ 0x80000000 (positive: flip sign)",
        "key_hi": f"0x{hi:08X}",
        "key_hi_signed": hi - 2**32 if hi >= 2**31 else hi,
        "index": int(index),
        "key_lo": f"0x{lo:08X}",
        "key_lo_is": f"0xFFFFFFFF - {int(index)}",
        "key": f"0x{k & (2**64 - 1):016X}",
        "key_signed": k,
        "candidate": bool(keys.is_candidate(torch.tensor([k]))[0]),
        "unpacked_score": repr(float(back[0])),
        "unpacked_index": int(back_i[0]),
        "key_bits": f"{k & (2**64 - 1):064b}",
    }


def key_fields_html(f: dict) -> str:
    """An HTML rendering of :func:`key_fields`: the 64 key bits coloured by field, then a table."""
    b = f["key_bits"]
    hi, lo = b[:32], b[32:]
    bits_html = (
        '<div style="font-family:monospace;font-size:14px">'
        f'<span style="background:#fde0dd" title="key sign = sign of ordered-2^31">{hi[0]}</span>'
        f'<span style="background:#fcc5c0" title="ordered score, high word">{hi[1:]}</span>'
        f'<span style="background:#deebf7" title="0xFFFFFFFF - index">{lo}</span></div>'
    )
    rows = "".join(
        f"<tr><td style='text-align:left'>{k}</td><td style='text-align:left;font-family:monospace'>{v}</td></tr>"
        for k, v in f.items()
        if k != "key_bits"
    )
    return bits_html + f"<table>{rows}</table>"


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
    fig.update_layout(
        title=f"key of score {f['score']} at index {f['index']}: {f['key']} ({f['class']})",
        xaxis=dict(title="bit within word", autorange="reversed", dtick=4), yaxis=dict(autorange="reversed"),
        height=230, margin=dict(l=130, r=20, t=50, b=40),
    )
    return fig


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
    fig.update_layout(
        title="ordered(x) vs float32 bits: negatives flipped below positives; NaN on top",
        xaxis=dict(title="float32 bit pattern (unsigned)", tickformat="#x"),
        yaxis=dict(title="ordered(x) (unsigned)"), height=380,
    )
    return fig


# ---------------------------------------------------------------------------
# 03 extent skipping
# ---------------------------------------------------------------------------


def skip_fraction(context: int, max_model_len: int = 262144, block_size: int = 8) -> float:
    """Fraction of the padded workspace's blocks a row of ``context`` tokens never needs to read."""
    nblocks = -(-max_model_len // block_size)
    live = min(-(-context // block_size), nblocks)
    return 1.0 - live / nblocks


def skip_rows(contexts=(512, 4096, 16384, 65536, 131072, 262144), max_model_len=262144, block_size=8) -> list[dict]:
    nb = -(-max_model_len // block_size)
    return [
        {
            "context": c,
            "live_blocks": min(-(-c // block_size), nb),
            "padded_blocks": nb,
            "skipped": f"{100 * skip_fraction(c, max_model_len, block_size):.2f}%",
        }
        for c in contexts
    ]


def skip_figure(contexts=(512, 4096, 16384, 65536, 131072, 262144), max_model_len=262144, block_size=8):
    import plotly.graph_objects as go

    rows = skip_rows(contexts, max_model_len, block_size)
    fig = go.Figure([
        go.Bar(x=[str(r["context"]) for r in rows], y=[r["live_blocks"] for r in rows], name="live blocks (read)",
               marker_color="#1f77b4"),
        go.Bar(x=[str(r["context"]) for r in rows], y=[r["padded_blocks"] - r["live_blocks"] for r in rows],
               name="padding blocks (skipped)", marker_color="#d9d9d9", text=[r["skipped"] for r in rows],
               textposition="inside"),
    ])
    fig.update_layout(barmode="stack", title=f"Blocks per row in a {max_model_len}-token workspace (block_size {block_size})",
                      xaxis=dict(title="context (tokens)", type="category"), yaxis_title="blocks", height=360)
    return fig


def select_rows(rows, **where) -> list[dict]:
    """Rows whose fields equal every ``where`` item (``None`` values are ignored)."""
    out = []
    for r in rows or ():
        if all(v is None or r.get(k) == v for k, v in where.items()):
            out.append(r)
    return out


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
    fig.update_layout(title=f"{title}<br><sub>{record_label(meta, path)}</sub>", xaxis=dict(title="context (tokens)", type="log"),
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
    fig.update_layout(title=f"{title}<br><sub>{record_label(meta, path)}</sub>", xaxis=dict(title="rows (concurrency × next_n)", type="log"),
                      yaxis=dict(title="median µs", type="log"), height=420)
    return fig


def speedup_rows(rows, *, baseline="torch", arm="triton", stage="select", k=64, dist="normal", by="context") -> list[dict]:
    """Per ``by`` value: median / min / max of ``baseline`` time ÷ ``arm`` time over matching points."""
    if not rows:
        return []
    sel = select_rows(rows, stage=stage, k=k, dist=dist)
    key = lambda r: (r["context"], r["concurrency"], r["next_n"])  # noqa: E731
    base = {key(r): r["median_us"] for r in select_rows(sel, arm=baseline)}
    out: dict = {}
    for r in select_rows(sel, arm=arm):
        b = base.get(key(r))
        if b and r["median_us"]:
            out.setdefault(r[by], []).append(b / r["median_us"])
    return [
        {by: v, "points": len(s), "median_x": f"{statistics.median(s):.2f}", "min_x": f"{min(s):.2f}", "max_x": f"{max(s):.2f}"}
        for v, s in sorted(out.items())
    ]


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
                marker=dict(color=ARM_COLORS.get(arm), symbol="circle" if stage == "select" else "diamond", size=6, opacity=0.7),
                text=[f"ctx {r['context']} rows {r['rows']}" for r in rs],
            ))
    if bw and sel:
        lo = max(min(r["bytes"] for r in sel) / 2, 1)
        hi = max(r["bytes"] for r in sel) * 2
        xs = [lo * (hi / lo) ** (i / 60) for i in range(61)]
        ys = [max(launch or 0, x / (bw * 1e3)) for x in xs]  # GB/s → bytes/µs is ×1e3
        traces.append(go.Scatter(x=xs, y=ys, mode="lines", name=f"floor: max({launch} µs launch, bytes / {bw:.0f} GB/s)",
                                 line=dict(color="black", dash="dash")))
    fig = go.Figure(traces)
    fig.update_layout(title=f"{title} (measured ceilings)<br><sub>{record_label(meta, path)}</sub>",
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
    note = "" if rows else f"<br><sub>NO RECORD: {_rel(path)} is absent; only the seed's numbers are shown</sub>"
    fig.update_layout(barmode="group", showlegend=True,
                      title=f"Median speedup over torch.topk per context, k={k} (bars: min–max){note}",
                      xaxis=dict(title="context (tokens)", type="category"), yaxis_title="speedup ×", height=460,
                      legend=dict(orientation="h", y=-0.3))
    return fig


def split_rule_rows(sm_count: int, rows_list=(1, 8, 32, 128, 640), k: int = 64, nblocks: int = 32768) -> list[dict]:
    """What a select of ``k`` from ``nblocks`` scores launches at each row count on a GPU of ``sm_count`` SMs (from
    shapes and the SM count only; :func:`dsa_lab.warmup.record`): each kernel with its grid, programs per row and
    the constexprs that pick its compiled variant."""
    from ..warmup import H200, Call, parts, record

    facts = dict(H200, sm_count=sm_count)
    out = []
    for rows in rows_list:
        for launch in record(Call("select", rows, nblocks, k), facts):
            name, _, cx, _ = parts(launch)
            keep = {key: v for key, v in cx.items() if key in ("KP", "G1", "G2", "DT", "RSEL", "TILE")}
            out.append({"rows": rows, "k": k, "kernel": name.lstrip("_"), "grid": "x".join(map(str, launch.grid)),
                        "P": launch.grid[1] if len(launch.grid) > 1 else 1, **keep})
    return out


def record_status(rec) -> str:
    """``"record: <GPU> · <file>"`` or ``"NO RECORD: <file> is absent"`` for a :func:`load_records` triple."""
    rows, meta, path = rec
    return f"record: {record_label(meta, path)}" if rows else f"NO RECORD: {_rel(path)} is absent"


# ---------------------------------------------------------------------------
# Widgets for 03 / 04: live on a GPU, interpreter-sized or recorded without one
# ---------------------------------------------------------------------------


def _nearest(records_rows, /, **want):
    """The recorded row minimising the log-distance to ``want`` (numeric fields) among exact matches of the rest."""
    exact = {k: v for k, v in want.items() if not isinstance(v, (int, float)) or isinstance(v, bool)}
    num = {k: v for k, v in want.items() if k not in exact}
    cand = select_rows(records_rows, **exact)
    if not cand:
        return None
    return min(cand, key=lambda r: sum(abs(math.log(max(r.get(k) or 1, 1)) - math.log(max(v, 1))) for k, v in num.items()))


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


def _live_time_us(fn, iters=20) -> float:
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
    for the ``dsa_lab`` arms, the input checks with their host sync — on the H200 ~125 µs for the Triton
    arm at every context, ``data/h200/live_widgets.json`` — so they are not kernel times; the recorded
    sweep times kernels in CUDA graphs).
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
            out["us"][arm] = _live_time_us(lambda: topk_select(x, k, lengths=lengths, impl=arm))
        out["us"]["torch_live"] = _live_time_us(lambda: torch.topk(x[:, :live], min(k, live), dim=1))
        out["source"] = (f"live on {torch.cuda.get_device_name(0)} (CUDA events around eager calls, median of 20: "
                         "includes launch overhead and the API's input checks; the CUDA-graph sweep is the measurement)")
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
                   "agree": {a: bool(torch.equal(torch.sort(topk_select(x, kk, lengths=lengths, impl=a), dim=1).values, ref))
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


def _point_figure(p: dict, title: str):
    import plotly.graph_objects as go

    arms = [a for a in ("torch", "torch_live", "triton") if a in p["us"]]
    fig = go.Figure(go.Bar(x=arms, y=[p["us"][a] for a in arms], marker_color=[ARM_COLORS[a] for a in arms],
                           text=[f"{p['us'][a]:.1f} µs" for a in arms], textposition="outside"))
    sub = p["source"] or "no timing available"
    if compile_note(p.get("first_call_s")):
        sub += "<br>" + compile_note(p.get("first_call_s"))
    if "tiny" in p:
        t = p["tiny"]
        sub += f"<br>tiny run ({t['rows']}×{t['width']}, live {t['live']}, k {t['k']}) agrees with the reference: {t['agree']}"
    mode = {"gpu": "GPU live", "interpreter": "no GPU: Triton interpreter, tiny shapes",
            "torch-cpu": "no GPU: torch on CPU, tiny shapes"}.get(p["mode"], p["mode"])
    fig.update_layout(title=f"{title} · {mode}<br><sub>{sub}</sub>", yaxis_title="µs", height=400,
                      margin=dict(t=110))
    if not arms:
        fig.add_annotation(text="no timing here: no GPU, and no recorded point (data/h200/select_sweep.csv absent)",
                           showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper", font=dict(size=14, color="#d62728"))
        fig.update_layout(xaxis=dict(visible=False), yaxis=dict(visible=False))
    return fig


def extent_widget(records=None):
    """Sliders context / rows / k → time per arm (live on a GPU; recorded + tiny interpreter check without)."""
    import ipywidgets as w

    def show(context, rows, k):
        if backend_info()["mode"] == "gpu" and (note := first_use_notice(("select", rows, k))):
            print(note, flush=True)
        p = extent_point(context, rows, k, records=records)
        return _point_figure(p, f"context {context} ({100 * p['skipped']:.1f}% of the workspace skipped), rows {rows}, k {k}")

    return w.interactive(
        show,
        {"auto_display": True},  # show the callback's return value (a figure / HTML) under the controls
        context=w.SelectionSlider(options=[512, 1024, 4096, 16384, 65536, 131072, 262144], value=4096, description="context",
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
        p = rows_point(rows, context, 64, records=records)
        return _point_figure(p, f"rows {rows}, context {context}, k 64")

    return w.interactive(
        show,
        {"auto_display": True},  # show the callback's return value (a figure / HTML) under the controls
        rows=w.SelectionSlider(options=[1, 2, 4, 8, 16, 32, 64, 128, 256, 640], value=8, description="rows",
                               continuous_update=False),
        context=w.SelectionSlider(options=[4096, 16384, 65536, 262144], value=65536, description="context",
                                  continuous_update=False),
    )


# ---------------------------------------------------------------------------
# 05 causal bounds / step breakdown
# ---------------------------------------------------------------------------

STAGE_COLUMNS = ("logits_us", "scores_us", "select_us", "flags_us", "sanitize_us")
STEP_STAGES = ("logits", "sanitize", "scores", "select", "flags")  # stacked; "candidates" = scores + select
STEP_TOTAL = "step"


def _step_long(rows) -> bool:
    return bool(rows) and "stage" in rows[0] and "median_us" in rows[0]


def itl_share_rows(step_rows, itl_ms: float = 14.6, *, arm: str | None = "triton", layers: int = 1,
                   total_field="total_us") -> list[dict]:
    """Share of an inter-token latency ``itl_ms`` spent in ``layers`` indexer steps, per recorded shape.

    Long format (``dsa-lab sweep --suite step``: one row per stage, ``stage == "step"`` the whole step):
    one output row per (arm, context, concurrency, next_n).  Wide format (``*_us`` columns): per row.
    """
    out = []
    if _step_long(step_rows):
        tot = [r for r in step_rows if r.get("stage") == STEP_TOTAL and (arm is None or r.get("arm") == arm)]
        tot.sort(key=lambda r: (str(r.get("arm")), r["context"], r["concurrency"], r["next_n"]))
        for r in tot:
            us = r["median_us"] * layers
            out.append({"arm": r.get("arm"), "context": r["context"], "concurrency": r["concurrency"],
                        "next_n": r["next_n"], "step_us": round(us, 1), "itl_share": f"{100 * us / (itl_ms * 1e3):.2f}%"})
        return out
    for r in step_rows or ():
        tot = r.get(total_field)
        if tot is None:
            tot = sum(r.get(c) or 0 for c in STAGE_COLUMNS)
        tot *= layers
        out.append({**{k: r.get(k) for k in ("arm", "context", "concurrency", "next_n") if k in r},
                    "step_us": round(tot, 1), "itl_share": f"{100 * tot / (itl_ms * 1e3):.2f}%"})
    return out


def itl_compare_rows(step_rows, itl_ms: float = 14.6, *, layers: int = 61, base: str = "torch",
                     arm: str = "triton") -> list[dict]:
    """Per recorded shape: the whole indexer step of ``base`` and ``arm`` (one layer, µs), the saving per
    decode step over ``layers`` layers, and each arm's share of an ``itl_ms`` inter-token latency."""
    if not _step_long(step_rows):
        return []
    tot = {(r["arm"], r["context"], r["concurrency"], r["next_n"]): r["median_us"]
           for r in step_rows if r.get("stage") == STEP_TOTAL}
    keys_ = sorted({k[1:] for k in tot if k[0] == arm})
    out = []
    for c, b, n in keys_:
        a, t = tot.get((base, c, b, n)), tot[(arm, c, b, n)]
        row = {"context": c, "concurrency": b, "next_n": n, f"{base}_us": a, f"{arm}_us": t}
        if a is not None:
            row[f"saving_us x{layers} layers"] = round((a - t) * layers, 1)
            row[f"{base}_share"] = f"{100 * a * layers / (itl_ms * 1e3):.1f}%"
        row[f"{arm}_share"] = f"{100 * t * layers / (itl_ms * 1e3):.1f}%"
        out.append(row)
    return out


def step_breakdown_figure(rows, meta, path, *, next_n=1, arm="triton"):
    """Stacked per-stage time of the decode indexer step per context × concurrency (one arm), with the
    measured whole step as a marker (stages timed one by one need not add up to it exactly)."""
    import plotly.graph_objects as go

    title = f"Decode indexer step breakdown, arm {arm}, next_n {next_n}"
    if rows is None:
        return _absent_figure(title, path)
    if _step_long(rows):
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
    fig.update_layout(barmode="stack", title=f"{title}<br><sub>{record_label(meta, path)}</sub>", yaxis_title="µs",
                      height=440)
    return fig


def fused_step_rows(step_rows, *, next_n=None) -> list[dict]:
    """Per recorded shape: the producer alone, the fused, staged and upstream steps (µs), the fused step over the
    producer, its speedup over the staged step (:func:`dsa_lab.bench.report.fused_step_rows`)."""
    from ..bench.report import fused_step_rows as rows_of

    return rows_of(step_rows, next_n=next_n)


def fused_step_summary(step_rows, *, context=131072, concurrency=128) -> str:
    """Two lines from ``step_breakdown.csv``: at how many points the fused step beats the staged one (and the
    slowest ratio), and the fused step over the producer alone at ``context`` x ``concurrency`` per next_n."""
    pts = fused_step_rows(step_rows)
    if not pts:
        return "NO RECORD of the fused step"
    ratio = [(r["staged_step_us"] / r["fused_step_us"], r) for r in pts if r["staged_step_us"]]
    worst, wr = min(ratio, key=lambda x: x[0])
    faster = sum(x > 1 for x, _ in ratio)
    at = [r for r in pts if r["context"] == context and r["concurrency"] == concurrency]
    own = ", ".join(f"next_n {r['next_n']}: {r['fused/producer']}" for r in at)
    return (f"fused step faster than the staged step at {faster} of {len(ratio)} points; slowest ratio "
            f"{worst:.3f} at context {wr['context']}, concurrency {wr['concurrency']}, next_n {wr['next_n']} "
            f"({wr['fused_step_us']:.2f} vs {wr['staged_step_us']:.2f} µs)\n"
            f"fused step / producer alone at context {context} x concurrency {concurrency}: {own}")


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
              (("fused_step_us", "fused step"), ("staged_step_us", "staged step"), ("upstream_step_us", "upstream step"))]
    traces.append(go.Scatter(x=labels, y=[r["producer_us"] for r in pts], name="producer alone", mode="markers",
                             marker=dict(symbol="line-ew-open", size=18, color="black")))
    fig = go.Figure(traces)
    fig.update_layout(barmode="group", title=f"{title}<br><sub>{record_label(meta, path)}</sub>", yaxis_title="µs",
                      yaxis_type="log", height=440)
    return fig


def sanitize_rows(producer_rows) -> list[dict]:
    """Bounded vs full-width sanitize from ``producer_sweep.csv`` (``stage == "sanitize"``): time of each
    and the ratio, per context × concurrency × next_n."""
    pts = [r for r in producer_rows or () if r.get("stage") == "sanitize"]
    by: dict = {}
    for r in pts:
        by.setdefault((r["context"], r["concurrency"], r["next_n"]), {})[r["arm"]] = r["median_us"]
    out = []
    for (c, b, n), d in sorted(by.items()):
        bo, fw = d.get("bounded"), d.get("full_width")
        out.append({"context": c, "concurrency": b, "next_n": n, "bounded_us": bo, "full_width_us": fw,
                    "full/bounded": f"{fw / bo:.1f}x" if bo and fw else ""})
    return out


def producer_roofline_rows(producer_rows, meta=None, *, context=131072, concurrency=128, target=0.7) -> list[dict]:
    """The producer's logits points at one context and concurrency, per next_n, against the roofline of the same run
    (``max(bytes / stream bandwidth, flops / fp8 MMA peak)``, both measured, in the record's meta): time, achieved
    Tflop/s, the fraction of each ceiling and of the roofline, and whether it reaches ``target``."""
    ceil = (meta or {}).get("ceilings", {}) or {}
    out = []
    for r in sorted((r for r in producer_rows or () if r.get("arm") == "triton" and r.get("stage") == "logits"
                     and r.get("context") == context and r.get("concurrency") == concurrency), key=lambda r: r["next_n"]):
        frac = r.get("roofline_frac")
        rd = lambda v, nd=3: None if v is None else round(float(v), nd)  # noqa: E731
        out.append({"next_n": r["next_n"], "median_us": rd(r["median_us"], 1), "tflops": rd(r.get("tflops"), 0),
                    "of_stream": rd(r.get("stream_frac")), "of_fp8_peak": rd(r.get("mma_frac")), "of_roofline": rd(frac),
                    "bound": "fp8 MMA" if (r.get("mma_frac") or 0) > (r.get("stream_frac") or 0) else "stream",
                    f">= {target:.0%}": "met" if frac is not None and frac >= target else "not met",
                    "peak_tflops": ceil.get("fp8_tflops"), "stream_gbps": ceil.get("stream_gbps")})
    return out


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
    fig.update_layout(title=f"{title} (measured ceilings)<br><sub>{record_label(meta, path)}</sub>",
                      xaxis=dict(title="fp8 MMA flops per byte read", type="log"),
                      yaxis=dict(title="achieved Tflop/s", type="log"), height=480)
    return fig


# ---------------------------------------------------------------------------
# Static figures for the README
# ---------------------------------------------------------------------------


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
            pio.write_image(fig, path, format="png", width=width, height=height or fig.layout.height or 450, scale=scale)
            written.append(path)
        return written
    finally:
        pio.templates.default = prev
