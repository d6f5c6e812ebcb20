"""Markdown for the report: number formats, tables, and the provenance line every table carries."""
from __future__ import annotations

import math
from pathlib import Path

from .. import data as _data

INTERP = "interpreter (not a performance measurement)"


def fmt(v, nd=2) -> str:
    """A number for a table cell: ``nd`` decimals (none from 100 up), ``—`` for None / NaN; anything else as text."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if isinstance(v, int) and not isinstance(v, bool):
        v = float(v)
    if isinstance(v, float):
        if abs(v) >= 100:
            return f"{v:.0f}" if nd <= 2 else f"{v:.1f}"
        return f"{v:.{nd}f}"
    return str(v)


def fx(v) -> str:
    """A ratio as ``1.23x`` (``—`` for None)."""
    return "—" if v is None else f"{v:.2f}x"


def table(headers: list[str], rows: list[list]) -> str:
    """A markdown table (a note when there are no rows)."""
    if not rows:
        return "_(no recorded points)_\n"
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out) + "\n"


def ctx_label(c) -> str:
    """A context in tokens as ``4K`` (a multiple of 1024) or its number."""
    c = int(c)
    return f"{c // 1024}K" if c >= 1024 and c % 1024 == 0 else str(c)



def provenance(meta: dict, rows: list[dict], path: Path) -> str:
    """Where a table's numbers come from: the record, GPU, versions, commits, timing and measured ceilings (and a
    warning for interpreter rows)."""
    if not meta and not rows:
        return f"_No record at `{path}`._\n"
    commits = sorted({str(r.get("commit")) for r in rows if r.get("commit")})
    timing = sorted({str(r.get("timing")) for r in rows if r.get("timing")})
    gpu = meta.get("gpu_name") or ("Triton interpreter on CPU" if meta.get("triton_interpreter")
                                   else meta.get("device"))
    c = meta.get("ceilings") or {}
    lines = [
        f"Source: `{rel(path)}` — {len(rows)} rows; GPU **{gpu}**"
        + (f" ({meta.get('sm_count')} SMs)" if meta.get("sm_count") else "")
        + f", driver {meta.get('driver') or '—'}, torch {meta.get('torch')}, triton {meta.get('triton')}; "
        + (f"rows per commit: {', '.join(f'`{c_}` {n}' for c_, n in meta['rows_per_commit'].items())}"
           if len(commits) > 1 and isinstance(meta.get("rows_per_commit"), dict)
           else f"last run {meta.get('date_utc')} at commit `{str(meta.get('commit') or '')[:12]}`"
           + (" (dirty tree)" if meta.get("dirty") else "")
           + f"; row commits: {', '.join('`' + x + '`' for x in commits) or '—'}")
        + f"; timing: {', '.join(timing) or '—'}.",
    ]
    if c:
        lines.append(
            f"Measured ceilings: read-only streaming **{fmt(c.get('stream_gbps'), 0)} GB/s**"
            + (f" ({c['stream_method']})" if c.get("stream_method") else "")
            + f", empty Triton launch in a graph **{fmt(c.get('launch_us'))} µs**, "
            f"two launches **{fmt(c.get('two_launch_us'))} µs**."
        )
    if any(t.startswith("cuda graph") for t in timing):
        lines.append("Times are CUDA-graph medians over replays of back-to-back calls on the same inputs (warm L2: "
                     "inputs that fit in the 50 MB L2 stay there, so a `roofline_frac` above 1 means L2-served); "
                     + ("speedups compare arms measured in the same process on the same inputs." if len(commits) <= 1
                        else "the record merges runs of several commits: "
                        + str(meta.get("merged") or "a speedup may compare two processes") + "."))
    if any(INTERP in str(t) for t in timing) or meta.get("triton_interpreter"):
        lines.append(f"\n> **{INTERP.upper()}** — these rows time the Triton interpreter on a CPU at tiny shapes; "
                     "they test the command and the format, they say nothing about kernel speed.")
    return "\n".join(lines) + "\n"


def rel(path: Path) -> str:
    """``path`` relative to the repository root where it lies under it."""
    try:
        return str(Path(path).resolve().relative_to(_data.repo_root()))
    except ValueError:
        return str(path)

