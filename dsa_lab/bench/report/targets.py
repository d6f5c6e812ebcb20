"""The report's targets: each a row (target, measured, status, detail) computed from the indexed sweep points."""
from __future__ import annotations

import statistics
from collections import defaultdict

from .markdown import ctx_label, fmt, fx, table
from .points import speedups

# (label, stage, context or None, kind, threshold)
SELECT_TARGETS = [
    ("median speedup over torch at 4K", "select", 4096, "median_speedup", 10.0),
    ("median speedup over torch at 16K", "select", 16384, "median_speedup", 10.0),
    ("median speedup over torch at 64K", "select", 65536, "median_speedup", 6.0),
]
FULL_TARGETS = [
    ("median speedup over torch at 4K", "full", 4096, "median_speedup", 15.0),
    ("median speedup over torch at 16K", "full", 16384, "median_speedup", 15.0),
    ("median speedup over torch at 64K", "full", 65536, "median_speedup", 6.0),
]


def _target_row(label, measured, ok, detail="") -> list:
    status = "—" if ok is None else ("**met**" if ok else "**not met**")
    return [label, measured, status, detail]


def _faster_count(idx, **kw) -> tuple[int, int, tuple | None]:
    """(comparisons, how many not faster, (speedup, base, row) of the slowest) of ``triton`` against ``torch`` and
    ``torch_live`` over the points ``kw`` selects."""
    n, slow, worst = 0, 0, None
    for base in ("torch", "torch_live"):
        for r, s in speedups(idx, base, "triton", **kw):
            n, slow = n + 1, slow + (s <= 1.0)
            if worst is None or s < worst[0]:
                worst = (s, base, r)
    return n, slow, worst


def select_targets(idx, k=64) -> list[list]:
    """The select stage's target rows: median speedups per context, every point faster than both torch arms, the
    1-row and the largest point's times, k = 2048, and the distribution ratio."""
    out = []
    for label, stage, c, _, thr in SELECT_TARGETS:
        sp = [s for _, s in speedups(idx, "torch", "triton", stage=stage, context=c, k=k, dist="normal")]
        m = statistics.median(sp) if sp else None
        out.append(_target_row(f"select: {label} ≥ {thr:g}x", fx(m), None if m is None else m >= thr,
                               f"{len(sp)} points"))
    # every point faster than torch and torch_live: the target's own scope (k = 64, every distribution), then every
    # recorded k as information beyond it (the issue lists this target under "select stage, k = 64"; k = 2048 has a
    # target of its own)
    for scope in (k, None):
        n, slow, worst = _faster_count(idx, stage="select", **({} if scope is None else {"k": scope}))
        label = ("select: every point faster than torch and torch_live" if scope is not None else
                 f"select: every point faster than torch and torch_live, every k (beyond the target's k = {k})")
        if worst:
            r = worst[2]
            det = (f"{n} comparisons ({'k = ' + str(scope) if scope is not None else 'every k'}, every dist); slowest: "
                   f"{fx(worst[0])} vs {worst[1]} at ctx {ctx_label(r['context'])}, {r['rows']} rows, k {r['k']}, "
                   f"{r['dist']}")
            out.append(_target_row(label, f"{n - slow}/{n} faster", (slow == 0) if scope is not None else None,
                                   det + ("" if scope is not None or not slow else f"; {slow} not faster")))
        else:
            out.append(_target_row(label, "—", None))
    out.append(one_row_target(idx, "select", 5.0, k))
    out.append(big_point_target(idx, "select", k, limit_us=40.0))
    sp = [s for _, s in speedups(idx, "torch", "triton", stage="select", k=2048)]
    m = statistics.median(sp) if sp else None
    out.append(_target_row("select: k = 2048 median speedup over torch ≥ 3x", fx(m), None if m is None else m >= 3.0,
                           f"{len(sp)} points (every dist)"))
    ratio, where, nshape = dist_ratio(idx, "select", k)
    out.append(_target_row("select: slowest / fastest over the five distributions ≤ 1.2 (per shape)",
                           fmt(ratio, 3), None if ratio is None else ratio <= 1.2,
                           f"worst of {nshape} shapes{': ' + where if where else ''}"))
    return out


def one_row_target(idx, stage, limit, k=64) -> list:
    """The 1-row time of ``stage`` at every context against ``limit`` µs (the slowest context decides)."""
    rs = [r for key, r in idx.items() if key[0] == "triton" and key[1] == stage and r.get("rows") == 1 and key[5] == k
          and key[6] == "normal"]
    if not rs:
        return _target_row(f"{stage}: 1 row ≤ {limit:g} µs at every context", "—", None)
    worst = max(rs, key=lambda r: r["median_us"])
    per = ", ".join(f"{ctx_label(r['context'])}: {fmt(r['median_us'])}" for r in sorted(rs, key=lambda r: r["context"]))
    return _target_row(f"{stage}: 1 row ≤ {limit:g} µs at every context", f"max {fmt(worst['median_us'])} µs",
                       worst["median_us"] <= limit, per)


def big_point_target(idx, stage, k=64, *, limit_us=None, floor_mult=None) -> list:
    """The most rows at the longest context: within ``limit_us`` µs, or within ``floor_mult`` x the fewest bytes
    any Triton arm moves there."""
    ctx = max((key[2] for key in idx if key[1] == stage), default=None)
    rs = [r for key, r in idx.items() if key[0] == "triton" and key[1] == stage and key[2] == ctx and key[5] == k
          and key[6] == "normal"]
    r = max(rs, key=lambda r: r["rows"], default=None)
    if r is None:
        label = f"{stage}: 640 rows × 262144"
        return _target_row(label, "—", None)
    label = f"{stage}: {r['rows']} rows × {r['context']} context"
    if limit_us is not None:
        return _target_row(f"{label} ≤ {limit_us:g} µs", f"{fmt(r['median_us'])} µs", r["median_us"] <= limit_us,
                           f"floor {fmt(r.get('floor_us'))} µs, "
                           f"{fmt(r['median_us'] / r['floor_us'] if r.get('floor_us') else None)}x the floor")
    # the floor is the fewest bytes any Triton arm moves at this point (the fused arm: live logits read once),
    # not the default arm's own model (the unfused composition also writes and re-reads the block scores)
    floors = [x.get("floor_us") for key, x in idx.items() if key[0] in ("triton", "triton_fused")
              and key[1:] == (stage, r["context"], r["concurrency"], r["next_n"], k, "normal") and x.get("floor_us")]
    floor = min(floors) if floors else None
    ratio = r["median_us"] / floor if floor else None
    return _target_row(f"{label} within {floor_mult:g}x of its bytes/bandwidth floor (live logits read once)",
                       f"{fx(ratio)} the floor", None if ratio is None else ratio <= floor_mult,
                       f"{fmt(r['median_us'])} µs vs floor {fmt(floor)} µs")


def _same_commit(d: dict) -> tuple[dict, int]:
    """{dist: (median_us, commit)} → ({dist: median_us} of the rows sharing the ``normal`` row's commit (else the
    most common one), how many were left out): a ratio between kernels of two commits measures no distribution."""
    if not d:
        return {}, 0
    commits = [c for _, c in d.values()]
    ref = d["normal"][1] if "normal" in d else max(set(commits), key=commits.count)
    keep = {x: m for x, (m, c) in d.items() if c == ref}
    return keep, len(d) - len(keep)


def dist_ratio(idx, stage, k=64, arm="triton"):
    """Worst slowest / fastest time over the distributions of one shape, comparing only rows of one commit
    (:func:`_same_commit`); ``where`` names the shape and says how many rows another commit's left out."""
    by_shape = defaultdict(dict)
    for key, r in idx.items():
        if key[0] == arm and key[1] == stage and key[5] == k:
            by_shape[(key[2], key[3], key[4])][key[6]] = (r["median_us"], str(r.get("commit") or ""))
    worst, where, n, left = None, "", 0, 0
    for shape, d in by_shape.items():
        d, out = _same_commit(d)
        left += out
        if len(d) < 2:
            continue
        n += 1
        ratio = max(d.values()) / min(d.values())
        if worst is None or ratio > worst:
            worst = ratio
            slow = max(d, key=d.get)
            fast = min(d, key=d.get)
            where = f"ctx {ctx_label(shape[0])}, conc {shape[1]}, next_n {shape[2]} ({slow} / {fast})"
    if left:
        where += ("; " if where else "") + f"{left} rows of another commit than their shape's normal row left out"
    return worst, where, n


def select_bound(idx, context, k=64) -> float | None:
    """The full-stage median speedup over ``torch`` if the full stage (logits -> ids + flags) cost no more than the
    ``triton`` *select* stage (block scores -> ids) of the same point and run: per point, ``torch`` full over
    ``triton`` select; the median over the points."""
    b = []
    for key, r in idx.items():
        if key[0] == "triton" and key[1] == "select" and key[2] == context and key[5] == k and key[6] == "normal":
            t = idx.get(("torch", "full") + key[2:])
            if t and r["median_us"] > 0:
                b.append(t["median_us"] / r["median_us"])
    return statistics.median(b) if b else None


def full_targets(idx, k=64) -> list[list]:
    """Each median target also shows :func:`select_bound`."""
    out = []
    for label, stage, c, _, thr in FULL_TARGETS:
        sp = [s for _, s in speedups(idx, "torch", "triton", stage=stage, context=c, k=k, dist="normal")]
        m = statistics.median(sp) if sp else None
        bound = select_bound(idx, c, k)
        detail = f"{len(sp)} points" + ("" if bound is None else f"; at the select stage's own time: {fx(bound)}")
        out.append(_target_row(f"full: {label} ≥ {thr:g}x", fx(m), None if m is None else m >= thr, detail))
    out.append(one_row_target(idx, "full", 6.0, k))
    out.append(big_point_target(idx, "full", k, floor_mult=1.5))
    return out


def bound_note(idx, k=64) -> str:
    """One sentence under the full-stage targets: how close to the select stage alone each missed median target asks
    the full stage to come (:func:`select_bound`)."""
    parts = []
    for _, _, c, _, thr in FULL_TARGETS:
        b = select_bound(idx, c, k)
        m = [s for _, s in speedups(idx, "torch", "triton", stage="full", context=c, k=k, dist="normal")]
        if b is not None and m and statistics.median(m) < thr:
            parts.append(f"{ctx_label(c)} {b / thr:.2f}x")
    if not parts:
        return ""
    return ("\nThe full stage reads the logits (8 floats per block) and writes the flags, the select stage only reads "
            "block scores, and the full stage's selection is the select stage's.  \"At the select stage's own time\" "
            "is the median if the full stage cost no more than the select stage at the same points (same run).  Each "
            "missed median target allows the full stage at most this multiple of the select stage's time (median): "
            + ", ".join(parts) + ".\n")


def large_k_targets(idx, ks=(2048, 512), *, mult=3.0, big_limit_us=100.0) -> list[list]:
    """The large-k targets per ``k`` and stage: every point faster than ``torch`` and ``torch_live``; the median
    speedup over ``torch`` at least ``mult`` at every context (the smallest per-context median is the measure); and
    the select stage's largest point at the longest context within ``big_limit_us`` at the largest k."""
    out = []
    for k in ks:
        for stage in ("select", "full"):
            n, slow, worst = _faster_count(idx, stage=stage, k=k)
            det = "" if worst is None else (f"slowest: {fx(worst[0])} vs {worst[1]} at ctx "
                                            f"{ctx_label(worst[2]['context'])}, {worst[2]['rows']} "
                                            f"row{'s' * (worst[2]['rows'] != 1)}")
            out.append(_target_row(f"k = {k}, {stage}: every point faster than torch and torch_live",
                                   f"{n - slow}/{n} faster" if n else "—", (slow == 0) if n else None, det))
            med = {}
            for c in sorted({key[2] for key in idx if key[1] == stage and key[5] == k}):
                sp = [s for _, s in speedups(idx, "torch", "triton", stage=stage, k=k, context=c)]
                if sp:
                    med[c] = statistics.median(sp)
            low = min(med, key=med.get) if med else None
            out.append(_target_row(f"k = {k}, {stage}: median speedup over torch ≥ {mult:g}x at every context",
                                   f"lowest {fx(med[low])} ({ctx_label(low)})" if med else "—",
                                   None if not med else med[low] >= mult,
                                   ", ".join(f"{ctx_label(c)}: {fx(m)}" for c, m in med.items())))
    out.append(big_point_target(idx, "select", max(ks), limit_us=big_limit_us))
    return out


def full_budget_rows(idx, context, k, ceilings, *, mult=3.0) -> list[list]:
    """Where a full-stage point misses ``mult`` x over ``torch``: per row count at ``context``, the time the target
    allows (``torch`` full / ``mult``) against two bytes/bandwidth floors (``ceilings``: the record's ``stream_gbps``
    and ``launch_us``): the default arm's (its recorded ``floor_us``: the logits read once, the block scores written
    and read back, ids and flags) and one of a path that reads the logits once and keeps no scores tensor; what the
    allowance leaves after the default arm's floor, beside the measured select stage.  A negative remainder means
    the target lies below the floor of the default composition: no selection, however fast, meets it there."""
    bw, launch = float(ceilings["stream_gbps"]), float(ceilings.get("launch_us") or 0.0)
    out = []
    for key, r in sorted(idx.items(), key=lambda kv: kv[1].get("rows") or 0):
        if key[0] != "triton" or key[1:3] != ("full", context) or key[5] != k or key[6] != "normal":
            continue
        t = idx.get(("torch",) + key[1:])
        sel = idx.get(("triton", "select") + key[2:])
        if not t:
            continue
        budget = t["median_us"] / mult
        floor = r["floor_us"]
        # the scores tensor's write and read-back (rows x live blocks x 4 B, twice), which a one-pass path skips
        once = max(launch, (r["bytes"] - 8 * r["rows"] * r["live_blocks"]) / (bw * 1e3))
        left = budget - floor
        sp = t["median_us"] / r["median_us"]
        if sp >= mult:
            verdict = "met"
        elif left < 0:
            verdict = "below the default arm's floor"
        elif sel and sel["median_us"] > left:
            verdict = "select over the remainder"
        else:
            verdict = "not met (launches, scores pass)"
        out.append([r["rows"], fmt(t["median_us"], 3), fmt(r["median_us"], 3), fx(sp), fmt(budget, 3),
                    fmt(floor, 3), fmt(once, 3), fmt(left, 3), fmt(sel["median_us"], 3) if sel else "—", verdict])
    return out


def full_budget_table(idx, context, k, ceilings, *, mult=3.0, rows=None) -> str:
    """:func:`full_budget_rows` as markdown (``rows``: already computed ones)."""
    return table(["rows", "torch full µs", "triton full µs", "speedup", f"torch / {mult:g} µs", "floor µs",
                  "floor, logits once µs", "left after the floor µs", "triton select µs", "verdict"],
                 full_budget_rows(idx, context, k, ceilings, mult=mult) if rows is None else rows)
