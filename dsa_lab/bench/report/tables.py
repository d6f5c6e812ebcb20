"""The report's tables of the select sweep: speedups per context, representative points, by k, by distribution,
fused vs unfused, and the correctness line."""
from __future__ import annotations

from .markdown import ctx_label, fmt, fx, table
from .points import speedups, summary

REPRESENTATIVE = [  # the seed's points + the extremes the targets name
    (4096, 1, 1), (4096, 32, 1), (4096, 128, 5), (16384, 32, 1), (16384, 128, 5), (65536, 32, 1), (65536, 128, 5),
    (262144, 1, 1), (262144, 32, 1), (262144, 128, 5),
]



def checks_line(rows) -> str:
    """How many timed rows had their ids checked, and any mismatch (named)."""
    checked = [r for r in rows if r.get("check") not in (None, "", "baseline")]
    bad = [r for r in checked if str(r.get("check")).startswith("mismatch")]
    ties = [r for r in checked if str(r.get("check")).startswith("cpu-topk-ties")]
    line = (f"Correctness: every non-baseline row's ids were compared as sets with the baseline before timing — "
            f"{len(checked) - len(bad) - len(ties)}/{len(checked)} rows agree")
    if ties:
        line += (f"; {len(ties)} rows of CPU `torch.topk` differ on ties (expected: its CPU tie order is not the "
                 "contract's, docs/design.md §2)")
    if bad:
        line += "; **MISMATCHES**: " + "; ".join(
            f"{r['arm']} {r['stage']} ctx {r['context']} rows {r['rows']} k {r['k']} {r['dist']} ({r['check']})"
            for r in bad[:10]) + (f"; … {len(bad) - 10} more" if len(bad) > 10 else "")
    return line + ".\n"


def headline_table(idx, k) -> str:
    """One row per context: each stage's median speedup of the default arm over ``torch`` (normal values) and its
    1-row time, µs."""
    contexts = sorted({key[2] for key in idx if key[0] == "triton" and key[5] == k and key[6] == "normal"})
    rows = []
    for c in contexts:
        line = [ctx_label(c)]
        for stage in ("select", "full"):
            sp = [s for _, s in speedups(idx, "torch", "triton", stage=stage, context=c, k=k, dist="normal")]
            one = [r["median_us"] for key, r in idx.items() if key[0] == "triton" and key[1] == stage and key[2] == c
                   and key[5] == k and key[6] == "normal" and r.get("rows") == 1]
            line += [fx(summary(sp)[0]), fmt(one[0]) if one else "—"]
        rows.append(line)
    return table(["context", "select: median speedup", "select: 1 row, µs", "full: median speedup",
                  "full: 1 row, µs"], rows)


def per_context_table(idx, stage, k, dist, arm="triton", bases=("torch", "torch_live")) -> str:
    """Per context: the median and range of ``arm``'s speedup over each of ``bases``, and its roofline fraction."""
    contexts = sorted({key[2] for key in idx if key[1] == stage and key[5] == k and key[6] == dist})
    rows = []
    for c in contexts:
        line = [ctx_label(c)]
        n = 0
        for base in bases:
            sp = [s for _, s in speedups(idx, base, arm, stage=stage, context=c, k=k, dist=dist)]
            n = max(n, len(sp))
            m, lo, hi = summary(sp)
            line += [fx(m), f"{fx(lo)}–{fx(hi)}" if sp else "—"]
        fr = [r["roofline_frac"] for key, r in idx.items() if key[0] == arm and key[1] == stage and key[2] == c
              and key[5] == k and key[6] == dist and r.get("roofline_frac") is not None]
        m, lo, hi = summary(fr)
        line += [fmt(m, 3), f"{fmt(lo, 3)}–{fmt(hi, 3)}" if fr else "—", n]
        rows.append(line)
    hdr = ["context"]
    for base in bases:
        hdr += [f"median vs {base}", "range"]
    hdr += [f"{arm} roofline frac (median)", "range", "points"]
    return table(hdr, rows)


def representative_table(idx, stage, k=64, dist="normal") -> str:
    """The representative points (``REPRESENTATIVE``) in µs: before (``torch``), after (``triton``), the speedups,
    the floor and the roofline fraction."""
    rows = []
    arms = sorted({key[0] for key in idx if key[1] == stage})
    extra = [a for a in ("triton_fused",) if a in arms]
    for c, b, n in REPRESENTATIVE:
        key = (stage, c, b, n, k, dist)
        t = idx.get(("torch",) + key)
        tl = idx.get(("torch_live",) + key)
        tr = idx.get(("triton",) + key)
        if not (t or tr):
            continue
        line = [ctx_label(c), b, n, b * n, fmt(t and t["median_us"]), fmt(tl and tl["median_us"]),
                fmt(tr and tr["median_us"])]
        for a in extra:
            r = idx.get((a,) + key)
            line.append(fmt(r and r["median_us"]))
        line += [fx(t["median_us"] / tr["median_us"]) if t and tr else "—",
                 fx(tl["median_us"] / tr["median_us"]) if tl and tr else "—",
                 fmt(tr and tr.get("floor_us")), fmt(tr and tr.get("roofline_frac"), 3)]
        rows.append(line)
    hdr = ["context", "conc", "next_n", "rows", "torch µs (before)", "torch_live µs", "triton µs (after)"]
    hdr += [f"{a} µs" for a in extra]
    hdr += ["speedup vs torch", "vs torch_live", "floor µs", "roofline frac"]
    return table(hdr, rows)


def dist_table(idx, stage, k=64) -> str:
    """Per value distribution: the speedup over ``torch`` and ``triton``'s time over its ``normal`` time (rows of
    one commit compared only)."""
    dists = sorted({key[6] for key in idx if key[1] == stage and key[5] == k})
    rows = []
    for d in dists:
        sp = [s for _, s in speedups(idx, "torch", "triton", stage=stage, k=k, dist=d)]
        rel = []
        for key, r in idx.items():
            if key[0] == "triton" and key[1] == stage and key[5] == k and key[6] == d:
                n = idx.get(("triton", stage, key[2], key[3], key[4], k, "normal"))
                if n and str(n.get("commit") or "") == str(r.get("commit") or ""):  # one commit's kernels
                    rel.append(r["median_us"] / n["median_us"])
        m, lo, hi = summary(sp)
        rm, rlo, rhi = summary(rel)
        rows.append([d, len(sp), fx(m), f"{fx(lo)}–{fx(hi)}" if sp else "—", fmt(rm, 3),
                     f"{fmt(rlo, 3)}–{fmt(rhi, 3)}" if rel else "—"])
    return table(["dist", "points", "median speedup vs torch", "range", "triton time / normal (median)", "range"], rows)


def k_table(idx, stage) -> str:
    """Per k and context: the median and range of the speedup over ``torch`` (every distribution), and over
    ``torch_live``."""
    ks = sorted({key[5] for key in idx if key[1] == stage})
    rows = []
    for k in ks:
        for c in sorted({key[2] for key in idx if key[1] == stage and key[5] == k}):
            sp = [s for _, s in speedups(idx, "torch", "triton", stage=stage, k=k, context=c)]
            spl = [s for _, s in speedups(idx, "torch_live", "triton", stage=stage, k=k, context=c)]
            m, lo, hi = summary(sp)
            ml, _, _ = summary(spl)
            rows.append([k, ctx_label(c), len(sp), fx(m), f"{fx(lo)}–{fx(hi)}" if sp else "—", fx(ml)])
    return table(["k", "context", "points (every dist)", "median vs torch", "range", "median vs torch_live"], rows)


def fused_table(idx, k=64) -> str:
    """Per context: the fused kernel's speedup over ``triton`` (the default dispatch, the unfused composition)."""
    rows = []
    for c in sorted({key[2] for key in idx if key[1] == "full" and key[0] == "triton_fused"}):
        sp = [s for _, s in speedups(idx, "triton", "triton_fused", stage="full", context=c, k=k, dist="normal")]
        m, lo, hi = summary(sp)
        rows.append([ctx_label(c), len(sp), fx(m), f"{fx(lo)}–{fx(hi)}" if sp else "—"])
    return table(["context", "points", "fused speedup over unfused (median; < 1 = fused slower)", "range"], rows)
