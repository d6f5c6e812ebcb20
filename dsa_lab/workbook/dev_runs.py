"""Tables of the dev runs (``scripts/gpu_*.py`` records, ``data/<gpu>/tune_dev/``, ``k_large/``): per point A/B
times of variants, the fastest, stage-A configurations, older vs newer package, value-distribution spread, profiler
counters, and the "what we tried" table.  Each returns a list of dicts (deterministic: notebooks print them)."""
from __future__ import annotations

import statistics
from pathlib import Path

from .records import load_records, rel_path


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
    ``stage`` and ``where`` filter the records (field = value, or a tuple / list / set of accepted values); a run
    without a
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
    """The rows of one-process A/B records (``dsa-lab ab``; made by ``scripts/gpu_ab_old.py`` before 2badd2b) (each
    a :func:`load_records` result; absent ones skipped): per point, the older package's time (arm ``old``) beside
    this tree's (``new``) and their ratio, in the records' order."""
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
    """Per shape ``(k, rows)`` of a value-distribution record (``dsa-lab ab --dist``; made by
    ``scripts/gpu_select_ab.py --dists`` before 7662a29, one or more
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
                    "fastest_us": f"{min(lows):.2f}-{max(lows):.2f}",
                    "slowest_us": f"{min(highs):.2f}-{max(highs):.2f}",
                    "slowest_dist": ", ".join(f"{d} {c}" for d, c in sorted(slowest.items(), key=lambda x: -x[1]))})
    return out


_STALL = "smsp__average_warps_issue_stalled_"


def pipe_rows(rows: list[dict], stalls: int = 4) -> list[dict]:
    """The counters of a record of ``scripts/gpu_bisect_pipes.py`` (in git at 4bb2bee) (one row per case and
    counter), one line per case in
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
                missing.append(rel_path(path))
                continue
            if rel_path(path) not in recs:
                recs.append(rel_path(path))
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
