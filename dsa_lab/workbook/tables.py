"""Tables for the notebooks: each a list of dicts (or a string) built from recorded rows or from the package, and
:func:`format_table`, the fixed-width text nbval compares strictly.

Key packing (notebook 01: every bit field of a key), extent skipping (03), speedups and the split rule (03, 04),
the decode step's share of an inter-token latency, the fused step, the sanitize and producer roofline (05).
"""
from __future__ import annotations

import math
import statistics

import torch

from .. import keys
from .records import select_rows


def format_table(rows: list[dict], columns: list[str] | None = None) -> str:
    """Fixed-width text table (deterministic: what nbval compares)."""
    if not rows:
        return "(no rows)"
    columns = columns or list(rows[0])
    cells = [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths))
    out = [line.rstrip(), "  ".join("-" * w for w in widths)]
    for row in cells:
        out.append("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
    return "\n".join(out)


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
        "sign_transform": ("bits ^ 0xFFFFFFFF (negative: flip all)" if bits >> 31
                           else "bits ^ 0x80000000 (positive: flip sign)"),
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



def skip_fraction(context: int, max_model_len: int = 262144, block_size: int = 8) -> float:
    """Fraction of the padded workspace's blocks a row of ``context`` tokens never needs to read."""
    nblocks = -(-max_model_len // block_size)
    live = min(-(-context // block_size), nblocks)
    return 1.0 - live / nblocks


def skip_rows(contexts=(512, 4096, 16384, 65536, 131072, 262144), max_model_len=262144,
              block_size=8) -> list[dict]:
    """Per context: live blocks (read), the padded workspace's blocks, and the share skipped."""
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



def speedup_rows(rows, *, baseline="torch", arm="triton", stage="select", k=64, dist="normal",
                 by="context") -> list[dict]:
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
        {by: v, "points": len(s), "median_x": f"{statistics.median(s):.2f}", "min_x": f"{min(s):.2f}",
         "max_x": f"{max(s):.2f}"}
        for v, s in sorted(out.items())
    ]



def split_rule_rows(sm_count: int, rows_list=(1, 8, 32, 128, 640), k: int = 64,
                    nblocks: int = 32768) -> list[dict]:
    """What a select of ``k`` from ``nblocks`` scores launches at each row count on a GPU of ``sm_count`` SMs (from
    shapes and the SM count only; :func:`dsa_lab.warmup.record`): each kernel with its grid, programs per row and
    the constexprs that pick its compiled variant."""
    # the dispatch recorded on meta tensors: warmup.record is the one place that runs a call's dispatch without a GPU
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



STAGE_COLUMNS = ("logits_us", "scores_us", "select_us", "flags_us", "sanitize_us")
STEP_STAGES = ("logits", "sanitize", "scores", "select", "flags")  # stacked; "candidates" = scores + select
STEP_TOTAL = "step"


def long_format(rows) -> bool:
    """True for a ``dsa-lab sweep --suite step`` record (one row per stage, ``median_us``); False for the wide
    format (one ``*_us`` column per stage)."""
    return bool(rows) and "stage" in rows[0] and "median_us" in rows[0]


def itl_share_rows(step_rows, itl_ms: float = 14.6, *, arm: str | None = "triton", layers: int = 1,
                   total_field="total_us") -> list[dict]:
    """Share of an inter-token latency ``itl_ms`` spent in ``layers`` indexer steps, per recorded shape.

    Long format (``dsa-lab sweep --suite step``: one row per stage, ``stage == "step"`` the whole step):
    one output row per (arm, context, concurrency, next_n).  Wide format (``*_us`` columns): per row.
    """
    out = []
    if long_format(step_rows):
        tot = [r for r in step_rows if r.get("stage") == STEP_TOTAL and (arm is None or r.get("arm") == arm)]
        tot.sort(key=lambda r: (str(r.get("arm")), r["context"], r["concurrency"], r["next_n"]))
        for r in tot:
            us = r["median_us"] * layers
            out.append({"arm": r.get("arm"), "context": r["context"], "concurrency": r["concurrency"],
                        "next_n": r["next_n"], "step_us": round(us, 1),
                        "itl_share": f"{100 * us / (itl_ms * 1e3):.2f}%"})
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
    if not long_format(step_rows):
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



def fused_step_rows(step_rows, *, next_n=None) -> list[dict]:
    """Per recorded shape: the producer alone, the fused, staged and upstream steps (µs), the fused step over the
    producer, its speedup over the staged step (:func:`dsa_lab.bench.report.sections.fused_step_rows`)."""
    from ..bench.report.sections import fused_step_rows as rows_of

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


def producer_roofline_rows(producer_rows, meta=None, *, context=131072, concurrency=128,
                           target=0.7) -> list[dict]:
    """The producer's logits points at one context and concurrency, per next_n, against the roofline of the same run
    (``max(bytes / stream bandwidth, flops / fp8 MMA peak)``, both measured, in the record's meta): time, achieved
    Tflop/s, the fraction of each ceiling and of the roofline, and whether it reaches ``target``."""
    ceil = (meta or {}).get("ceilings", {}) or {}
    out = []
    for r in sorted((r for r in producer_rows or () if r.get("arm") == "triton" and r.get("stage") == "logits"
                     and r.get("context") == context and r.get("concurrency") == concurrency),
                    key=lambda r: r["next_n"]):
        frac = r.get("roofline_frac")
        rd = lambda v, nd=3: None if v is None else round(float(v), nd)  # noqa: E731
        out.append({"next_n": r["next_n"], "median_us": rd(r["median_us"], 1), "tflops": rd(r.get("tflops"), 0),
                    "of_stream": rd(r.get("stream_frac")), "of_fp8_peak": rd(r.get("mma_frac")),
                    "of_roofline": rd(frac),
                    "bound": "fp8 MMA" if (r.get("mma_frac") or 0) > (r.get("stream_frac") or 0) else "stream",
                    f">= {target:.0%}": "met" if frac is not None and frac >= target else "not met",
                    "peak_tflops": ceil.get("fp8_tflops"), "stream_gbps": ceil.get("stream_gbps")})
    return out
