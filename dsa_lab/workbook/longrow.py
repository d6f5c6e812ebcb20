"""Tables of the token-level top-k records (``python -m dsa_lab.bench.tokens``: ``data/<gpu>/longrow/``): speedups over
``torch.topk`` per k and width, the named shapes (value laws, prefill), two kernels' records side by side, and the
crossover between the long-row and the parallel radix select with the rule's pick beside it; from ``dsa-lab ab
--profile`` records, the long-row launches and the stream's parts; plan variants side by side (the plan probe's
records); the decode step at block size 1 (``step_breakdown.csv``) and the long-row first calls (``dsa-lab coldstart
--long``).  Each returns a list of dicts or a dict (deterministic: notebooks print them)."""
from __future__ import annotations

import math
import statistics

from .. import plans


def _log_choose(n: int, r: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(r + 1) - math.lgamma(n - r + 1)


def miss_probability(L: int, k: int, r: int, s: int = 4096) -> float:
    """On a row of ``L`` independent values (no ties) sampled at ``s`` of its columns: the probability that fewer than
    ``k`` of the row lie at or above the sample's ``r``-th largest (the long-row finish reads the row again).  Exact:
    that word's rank in the row is ``j`` with probability ``C(j-1, r-1) C(L-j, s-r) / C(L, s)``."""
    tot = _log_choose(L, s)
    return sum(math.exp(_log_choose(j - 1, r - 1) + _log_choose(L - j, s - r) - tot) for j in range(r, k))


def rank_rows(widths, ks, plan: plans.Longrow | None = None) -> list[dict]:
    """Per (width, k): the sample rank of the long-row threshold (:func:`dsa_lab.plans.longrow_rank`), the words
    it aims at above it (rank x width / sample) and, on rows of independent values, the odds against a miss (one row
    in ``1 / miss_probability``); ``plan``: the rules' own by default."""
    plan = plan or plans.longrow(1, max(widths), plans.LONGROW_MAX_KP, {"sm_count": 1})
    s = plan.NCH * plan.CH
    out = []
    for w in widths:
        for k in ks:
            r = plans.longrow_rank(w, k, plan)
            p = miss_probability(w, k, r, s)
            out.append({"width": w, "k": k, "k_rank": f"{k * s / w:.1f}", "rank": r, "aims_at": r * w // s,
                        "one_miss_in": f"{1 / p:.2g}" if p > 0 else "never"})
    return out


def _points(rows, shape: str | None = None) -> dict:
    """``{(shape, rows, width, k, lengths, dist): {arm: row}}``."""
    out: dict = {}
    for r in rows or ():
        if shape is not None and r["shape"] != shape:
            continue
        key = (r["shape"], int(r["rows"]), int(r["width"]), int(r["k"]), str(r["lengths"]), str(r["dist"]))
        out.setdefault(key, {})[str(r["arm"])] = r
    return out


def bad_rows(rows) -> int:
    """Rows of a record whose ids differed from ``torch.topk``'s as sets, summed over every timed point (``bad``)."""
    return sum(int(r["bad"]) for r in rows or () if r.get("bad") not in (None, ""))


def speedup_summary(rows, *, arm: str = "triton", shape: str = "grid") -> list[dict]:
    """Per (k, width): the points of ``shape``, and the median / min / max of ``torch`` time over ``arm`` time."""
    groups: dict = {}
    for (_, _, width, k, _, _), arms in _points(rows, shape).items():
        if arm in arms and "torch" in arms:
            groups.setdefault((k, width), []).append(float(arms["torch"]["median_us"]) / float(arms[arm]["median_us"]))
    return [{"k": k, "width": w, "points": len(v), "median_x": f"{statistics.median(v):.2f}",
             "min_x": f"{min(v):.2f}", "max_x": f"{max(v):.2f}"} for (k, w), v in sorted(groups.items())]


def point_rows(rows, shape: str, *, arm: str = "triton") -> list[dict]:
    """One row per point of ``shape``: torch and ``arm`` µs, the speedup, ``arm``'s time over the one-read floor and,
    where ``shape`` holds several value laws, over its time on normal values at the same size (``x_normal``)."""
    pts = _points(rows, shape)
    several = len({key[5] for key in pts}) > 1
    normal = {key[1:5]: float(arms[arm]["median_us"]) for key, arms in pts.items()
              if several and key[5] == "normal" and arm in arms}
    out = []
    for (_, nrows, width, k, lengths, dist), arms in pts.items():
        if arm not in arms or "torch" not in arms:
            continue
        a, t = arms[arm], arms["torch"]
        out.append({"rows": nrows, "width": width, "k": k, "lengths": lengths, "dist": dist,
                    "torch_us": f"{float(t['median_us']):.1f}", f"{arm}_us": f"{float(a['median_us']):.1f}",
                    "speedup": f"{float(t['median_us']) / float(a['median_us']):.2f}x",
                    "x_floor": f"{float(a['x_floor']):.1f}"})
        if normal:
            ref = normal.get((nrows, width, k, lengths))
            out[-1]["x_normal"] = f"{float(a['median_us']) / ref:.2f}" if ref else "—"
    return out


def versions_rows(old, new, *, shape: str, arm: str = "triton", where: dict | None = None) -> list[dict]:
    """Two records of the same points side by side (``old`` / ``new``: their rows): ``arm``'s µs in each and its
    speedup over the ``torch`` of the same process; points in both, filtered by ``where`` (field = value)."""
    a, b = _points(old, shape), _points(new, shape)
    keys = ("rows", "width", "k", "lengths", "dist")
    out = []
    for key in sorted(set(a) & set(b)):
        row = dict(zip(keys, key[1:]))
        if any(row.get(f) != v for f, v in (where or {}).items()):
            continue
        if not all(arm in d and "torch" in d for d in (a[key], b[key])):
            continue
        for tag, d in (("old", a[key]), ("new", b[key])):
            us = float(d[arm]["median_us"])
            row[f"{tag}_us"] = f"{us:.1f}"
            row[f"{tag}_x"] = f"{float(d['torch']['median_us']) / us:.2f}"
        out.append(row)
    return out


def crossover_rows(rows, sm_count: int = 132) -> list[dict]:
    """The ``crossover`` points: torch, the parallel radix and the long-row select (both forced), the faster of
    the two, and what :func:`dsa_lab.plans.select_algo` picks for that shape on ``sm_count`` SMs."""
    out = []
    for (_, nrows, width, k, _, _), arms in sorted(_points(rows, "crossover").items(),
                                                   key=lambda t: (t[0][3], t[0][2], t[0][1])):
        if not all(a in arms for a in ("torch", "radix", "longrow")):
            continue
        r, lr = float(arms["radix"]["median_us"]), float(arms["longrow"]["median_us"])
        out.append({"k": k, "width": width, "rows": nrows, "columns": nrows * width,
                    "torch_us": f"{float(arms['torch']['median_us']):.1f}", "radix_us": f"{r:.1f}",
                    "longrow_us": f"{lr:.1f}", "faster": "radix" if r < lr else "longrow",
                    "rule": plans.select_algo(nrows, width, k, sm_count)})
    return out


def peers_rows(peers, rows, *, arm: str = "triton", same_card: bool = True) -> list[dict]:
    """Transcribed peer times (``data/<gpu>/longrow/peers_transcribed.csv``) beside this record's ``arm`` at the same
    shape (full lengths, normal values; ``—`` where the record has no such point).  Speedups are each over the
    ``torch.topk`` of its own process, so two processes on the same kind of card compare as ratios:
    ``{arm}_vs_peer`` is the peer's time over the arm's.  ``same_card=False`` (the record from another card than the
    peer's measurement): times of two cards are not compared; ``{arm}_x_over_peer_x`` is the arm's speedup over its
    ``torch`` divided by the peer's over its own (where the peer has one)."""
    ours = {(n, w, k): arms for (_, n, w, k, lengths, dist), arms in _points(rows, "grid").items()
            if lengths == "full" and dist == "normal"}
    out = []
    for p in peers or ():
        key = (int(p["rows"]), int(p["width"]), int(p["k"]))
        mine = ours.get(key, {})
        torch_p = p.get("torch_us")
        peer_x = float(torch_p) / float(p["peer_us"]) if torch_p not in (None, "") else None
        row = {"rows": key[0], "width": key[1], "k": key[2], "peer (transcribed)": p["peer"],
               "peer_us": f"{float(p['peer_us']):.1f}", "peer_x": f"{peer_x:.2f}" if peer_x else "—"}
        cmp = f"{arm}_vs_peer" if same_card else f"{arm}_x_over_peer_x"
        row.update({f"{arm}_us": "—", f"{arm}_x": "—", cmp: "—"})
        if arm in mine and "torch" in mine:
            us = float(mine[arm]["median_us"])
            x = float(mine["torch"]["median_us"]) / us
            row.update({f"{arm}_us": f"{us:.1f}", f"{arm}_x": f"{x:.2f}"})
            if same_card:
                row[cmp] = f"{float(p['peer_us']) / us:.2f}"
            elif peer_x:
                row[cmp] = f"{x / peer_x:.2f}"
        out.append(row)
    return out


def stage_rows(rows, *, arm: str = "new") -> list[dict]:
    """The long-row select's three launches from a ``dsa-lab ab --profile`` record (``kernels``: mean µs per kernel
    in a profiled graph replay) at each point where ``arm`` ran it: sample, stream and finish µs, and the stream's
    rate over the row bytes it reads once (rows x width x 4)."""
    out = []
    for r in rows or ():
        if r.get("arm") != arm or "_longrow_stream_kernel" not in str(r.get("kernels", "")):
            continue
        kern = dict(p.rsplit("=", 1) for p in str(r["kernels"]).split(";") if "=" in p)
        us = {s: float(kern[f"_longrow_{s}_kernel"]) for s in ("sample", "stream", "finish")}
        nbytes = int(r["rows"]) * int(r["width"]) * 4
        out.append({"rows": int(r["rows"]), "width": int(r["width"]), "k": int(r["k"]),
                    "call_us": f"{float(r['median_us']):.1f}", "sample_us": f"{us['sample']:.1f}",
                    "stream_us": f"{us['stream']:.1f}", "finish_us": f"{us['finish']:.1f}",
                    "stream_GB/s": f"{nbytes / us['stream'] / 1e3:.0f}"})
    return out


def timeline_rows(rows, *, arm: str = "old", dist: str = "normal") -> list[dict]:
    """The long-row select's three launches placed in the call, from a ``dsa-lab ab --profile`` record's ``timeline``
    (``name@start-end``: each launch's median start and end in µs from the call's first kernel start) at each point
    where ``arm`` ran it on the value law ``dist``: each launch's span, ``before`` (how far into the call the stream's
    first program starts), ``after`` (how long the last launch runs past the stream's end), and the stream's rate over
    its span (rows x width x 4 bytes)."""
    out = []
    for r in rows or ():
        if r.get("arm") != arm or str(r.get("dist") or "normal") != dist or "_longrow_stream" not in str(
                r.get("timeline") or ""):
            continue
        spans = dict(p.rsplit("@", 1) for p in str(r["timeline"]).split(";") if "@" in p)
        at = {s: tuple(float(v) for v in spans[f"_longrow_{s}_kernel"].split("-"))
              for s in ("sample", "stream", "finish")}
        (s0, s1), (t0, t1) = at["stream"], at["finish"]
        nbytes = int(r["rows"]) * int(r["width"]) * 4
        out.append({"rows": int(r["rows"]), "width": int(r["width"]), "k": int(r["k"]),
                    "call_us": f"{float(r['median_us']):.1f}", "sample": "{:.1f}-{:.1f}".format(*at["sample"]),
                    "stream": f"{s0:.1f}-{s1:.1f}", "finish": f"{t0:.1f}-{t1:.1f}", "before_us": f"{s0:.1f}",
                    "after_us": f"{max(t1, at['sample'][1]) - s1:.1f}",
                    "stream_GB/s": f"{nbytes / (s1 - s0) / 1e3:.0f}"})
    return out


def stream_parts_rows(records_by_arm: dict, *, where: dict | None = None) -> list[dict]:
    """The stream launch's µs at each point under several trees (``{label: (rows, arm)}``: ``dsa-lab ab --profile``
    records and the arm in each), one column per label: an ablation read as what each part of the stream costs.
    ``where``: keep the points whose fields equal these."""
    pts: dict = {}
    for label, (rows, arm) in records_by_arm.items():
        for r in stage_rows(rows, arm=arm):
            if where and any(r[f] != v for f, v in where.items()):
                continue
            pts.setdefault((r["rows"], r["width"], r["k"]), {})[label] = r["stream_us"]
    return [{"rows": rw, "width": w, "k": k, **{lab: parts.get(lab, "—") for lab in records_by_arm}}
            for (rw, w, k), parts in sorted(pts.items())]


def probe_rows(rows, arms: dict, *, where: dict | None = None) -> list[dict]:
    """A ``dsa-lab ab`` record (``ab/*.csv``: one row per point and arm) as one row per point: the µs of each arm of
    ``arms`` (``{arm: column label}``), ``!`` after an arm whose ids differed from ``torch.topk``'s on some row, and
    the value law (``dist``) where the record holds several; ``where``: keep the points whose fields equal these
    (``dist`` among them: ``normal`` where a record names none)."""
    pts: dict = {}
    for r in rows or ():
        got = {f: str(r.get(f) or "normal") if f == "dist" else str(r[f]) for f in where or ()}
        if int(r["rows"]) == 0 or any(got[f] != str(v) for f, v in (where or {}).items()):
            continue  # (rows 0: the null-launch chain)
        mark = "!" if int(r["bad"]) else ""
        key = (int(r["rows"]), int(r["width"]), int(r["k"]), str(r.get("dist") or "normal"))
        pts.setdefault(key, {})[str(r["arm"])] = f"{float(r['median_us']):.1f}{mark}"
    laws = len({key[3] for key in pts}) > 1
    return [{"rows": rw, "width": w, "k": k, **({"dist": d} if laws else {}),
             **{lab: got.get(arm, "—") for arm, lab in arms.items()}}
            for (rw, w, k, d), got in pts.items()]


def step_rows(rows, *, block_size: int = 1) -> list[dict]:
    """The decode step of a ``dsa-lab sweep --suite step`` record at ``block_size`` per (context, concurrency,
    next_n): the producer (the fused step's logits launch), the fused step, the upstream torch composition's step and
    its ``torch.topk`` select, and the fused step's speedup over torch's."""
    pts: dict = {}
    for r in rows or ():
        if int(r.get("block_size") or 0) != block_size:
            continue
        key = (int(r["context"]), int(r["concurrency"]), int(r["next_n"]), int(r["k"]))
        pts.setdefault(key, {})[(str(r["arm"]), str(r["stage"]))] = r
    out = []
    for (ctx, conc, nn, k), st in sorted(pts.items()):
        us = {name: float(st[key]["median_us"]) if key in st else None
              for name, key in (("producer", ("fused", "logits")), ("select", ("fused", "candidates")),
                                ("step", ("fused", "step")), ("torch_select", ("torch", "select")),
                                ("torch_step", ("torch", "step")))}
        fmt = {f"{n}_us": (f"{v:.1f}" if v is not None else "—") for n, v in us.items()}
        x = f"{us['torch_step'] / us['step']:.2f}x" if us["step"] and us["torch_step"] else "—"
        checks = {str(r["check"]) for r in st.values()}
        out.append({"context": ctx, "concurrency": conc, "next_n": nn, "k": k, **fmt, "speedup": x,
                    "check": "ok" if checks == {"ok"} else ",".join(sorted(checks))})
    return out


def first_call_summary(rows) -> dict:
    """A ``dsa-lab coldstart`` record in one line's facts: calls, the worst and median first call (ms), whether every
    kernel was in the warm list and every call's ids were right."""
    rows = list(rows or ())
    firsts = [float(r["first_call_ms"]) for r in rows]
    truth = lambda v: str(v).lower() == "true"  # noqa: E731
    return {"calls": len(rows), "worst_ms": f"{max(firsts):.2f}" if firsts else "—",
            "median_ms": f"{statistics.median(firsts):.2f}" if firsts else "—",
            "all_warmed": all(truth(r["warmed"]) for r in rows), "all_ok": all(truth(r["ok"]) for r in rows)}
