"""The report's sections from the other records: the decode step (staged and fused), the producer, the latency
floor, the CUDA C++ probe, compile cost and the seed's MI355X numbers."""
from __future__ import annotations

import statistics
from pathlib import Path

from .. import data as _data
from .markdown import ctx_label, fmt, fx, provenance, rel, table

SEED_LABEL = "transcribed from the seed pull request text, not measured by this project"
STEP_ORDER = ["logits", "sanitize", "scores", "select", "flags", "candidates", "step"]


def step_section(rows, meta, path, itl_ms: float, layers: int, h: str) -> str:
    """The decode step per stage and shape (``step_breakdown.csv``), the fused step where recorded, and each step's
    share of an ``itl_ms`` inter-token latency over ``layers`` layers; a note when the record is absent."""
    if not rows:
        return f"{h} Decode indexer step breakdown\n\n_No record at `{rel(path)}`._\n"
    idx = {}
    for r in rows:
        idx[(r["arm"], r["stage"], r["context"], r["concurrency"], r["next_n"])] = r
    shapes = sorted({(r["context"], r["concurrency"], r["next_n"]) for r in rows})
    hdr = ["context", "conc", "next_n"] + [f"{s} µs" for s in STEP_ORDER] + ["upstream step µs", "step saving µs"]
    body = []
    for c, b, n in shapes:
        line = [ctx_label(c), b, n]
        for s in STEP_ORDER:
            r = idx.get(("triton", s, c, b, n))
            line.append(fmt(r and r["median_us"]))
        up = idx.get(("torch", "step", c, b, n))
        ours = idx.get(("triton", "step", c, b, n))
        line += [fmt(up and up["median_us"]),
                 fmt(up["median_us"] - ours["median_us"] if up and ours else None)]
        body.append(line)
    itl_us = itl_ms * 1e3
    share_hdr = ["context", "conc", "next_n", "indexer step µs (ours)",
                 f"share of {itl_ms:g} ms ITL × {layers} layer(s)", "logits share", "selection share (ids + flags)",
                 "upstream step µs", "upstream share"]
    share = []
    own = "fused" if any(k[0] == "fused" for k in idx) else "triton"  # the package's default step
    for c, b, n in shapes:
        ours = idx.get((own, "step", c, b, n))
        up = idx.get(("torch", "step", c, b, n))
        lg = idx.get((own, "logits", c, b, n))
        sel = [idx.get(("triton", s, c, b, n)) for s in ("scores", "select", "flags")]
        cand = idx.get((own, "candidates", c, b, n))
        sel_us = cand["median_us"] if cand else (sum(r["median_us"] for r in sel) if all(sel) else None)
        pct = lambda us: "—" if us is None else f"{100 * us * layers / itl_us:.2f}%"  # noqa: E731
        share.append([ctx_label(c), b, n, fmt(ours and ours["median_us"]), pct(ours and ours["median_us"]),
                      pct(lg and lg["median_us"]), pct(sel_us), fmt(up and up["median_us"]),
                      pct(up and up["median_us"])])
    text = [f"{h} Decode indexer step breakdown\n", provenance(meta, rows, path)]
    if any(k[0] == "fused" for k in idx):
        text.append(fused_step_section(rows))
    text += [
            "Per-stage CUDA-graph medians of this package's path (`triton` arm: producer → bounded sanitize → "
            "bounded scores → select → flags; `candidates` = "
            "`select_candidate_blocks(impl=\"triton\", with_flags=True)`, "
            "the logits → ids + flags path as the package dispatches it (flags written by the select kernel); "
            "`step` = the whole chain in one graph) and of the upstream composition around the same producer "
            "(`torch` arm: full-width "
            "sanitize, padded scores, torch.topk, store, flags).\n",
            table(hdr, body),
            f"\nITL-share model: share = stage time × layers / ITL, with ITL = {itl_ms:g} ms (the seed's measured "
            f"median ITL) and {layers} indexer call(s) per decode step (`--layers`; DeepSeek-V3.2 runs an indexer in "
            "each of "
            "its 61 layers, the seed's ~45 µs / 14.6 ms estimate counted one call); \"ours\" is the package's default "
            "step (the fused one where the record has it: its logits share is the producer with the block scores, its "
            "selection share the select with the flags).\n",
            table(share_hdr, share)]
    return "\n".join(text)


def fused_step_rows(step_rows, *, next_n=None) -> list[dict]:
    """Per recorded shape of ``step_breakdown.csv``: the producer alone, the fused step (the producer writing block
    scores, then the select), the staged step and the upstream one (µs), the fused step over the producer, and its
    speedup over the staged step.  ``next_n``: only those shapes."""
    med = {(r["arm"], r["stage"], r["context"], r["concurrency"], r["next_n"]): r["median_us"]
           for r in step_rows or () if r.get("arm")}
    out = []
    for c, b, n in sorted({k[2:] for k in med if k[0] == "fused" and k[1] == "step"}):
        if next_n is not None and n != next_n:
            continue
        g = lambda a, st: med.get((a, st, c, b, n))  # noqa: E731
        prod, fused, staged, up = g("triton", "logits"), g("fused", "step"), g("triton", "step"), g("torch", "step")
        out.append({"context": c, "concurrency": b, "next_n": n, "producer_us": prod,
                    "producer_scores_us": g("fused", "logits"), "select_flags_us": g("fused", "candidates"),
                    "fused_step_us": fused, "staged_step_us": staged, "upstream_step_us": up,
                    "fused/producer": f"{fused / prod:.2f}" if prod else "",
                    "vs staged": f"{staged / fused:.2f}x" if staged else ""})
    return out


def fused_step_section(rows) -> str:
    """The fused step (the producer writes sanitized logits, block scores and zeroed flags; then the select) beside
    the staged composition and the upstream one, with the targets: step <= 1.15 x the producer, every point faster
    than the staged step."""
    pts = fused_step_rows(rows)
    body = [[ctx_label(r["context"]), r["concurrency"], r["next_n"], fmt(r["producer_us"]),
             fmt(r["producer_scores_us"]), fmt(r["select_flags_us"]), f"**{fmt(r['fused_step_us'])}**",
             fmt(r["staged_step_us"]),
             fmt(r["upstream_step_us"]),
             f"{r['fused_step_us'] / r['producer_us']:.3f}" if r["producer_us"] else "—",
             fx(r["staged_step_us"] / r["fused_step_us"]) if r["staged_step_us"] else "—",
             fx(r["upstream_step_us"] / r["fused_step_us"]) if r["upstream_step_us"] else "—"] for r in pts]
    faster = sum(bool(r["staged_step_us"] and r["fused_step_us"] < r["staged_step_us"]) for r in pts)
    hdr = ["context", "conc", "next_n", "producer µs", "producer + scores µs", "select + flags µs", "fused step µs",
           "staged step µs", "upstream step µs", "step / producer", "vs staged", "vs upstream"]
    tgt = []
    for r in pts:
        fs, prod, st = r["fused_step_us"], r["producer_us"], r["staged_step_us"]
        if r["context"] == 131072 and r["concurrency"] == 128 and prod and st:
            tgt.append(f"| {r['next_n']} | {fmt(prod)} | {fmt(fs)} | {fs / prod:.3f} | "
                       f"**{'met' if fs <= 1.15 * prod else 'not met'}** | {fmt(st)} | {fx(st / fs)} |")
    out = ["The fused step (`fused` arm, the default `DecodeStep`): the producer stores sanitized logits, writes each "
           "row's block scores over its window and zeroes the flags from the tile it holds in registers; the select "
           "reads the scores and sets the flags.  Nothing in the step reads the logits back.  `staged` = producer → "
           "bounded sanitize → scores + select (+ flags), `upstream` = the `torch` arm below.\n",
           table(hdr, body),
           f"\nFaster than the staged step at {faster} of {len(pts)} points."]
    if tgt:
        out.append("\nTargets at 128K context × concurrency 128: the step ≤ 1.15 × the producer's own time (the plain "
                   "logits kernel, same run):\n\n| next_n | producer µs | fused step µs | ratio | ≤ 1.15 "
                   "| staged step µs | speedup over staged |\n|---|---|---|---|---|---|---|\n" + "\n".join(tgt) + "\n")
    return "\n".join(out) + "\n"


def producer_section(rows, meta, path, h: str) -> str:
    """The producer per shape (``producer_sweep.csv``): time, bandwidth and its share of the stream ceiling, the torch
    reference, the two sanitizes, and the 70%-of-roofline target at 128K x 128; a note when absent."""
    if not rows:
        return f"{h} Producer bandwidth\n\n_No record at `{rel(path)}`._\n"
    idx = {(r["arm"], r["stage"], r["context"], r["concurrency"], r["next_n"]): r for r in rows}
    shapes = sorted({(r["context"], r["concurrency"], r["next_n"]) for r in rows})
    bw = (meta.get("ceilings") or {}).get("stream_gbps")
    body = []
    for c, b, n in shapes:
        t = idx.get(("triton", "logits", c, b, n))
        ref = idx.get(("torch", "logits", c, b, n))
        sb = idx.get(("bounded", "sanitize", c, b, n))
        sf = idx.get(("full_width", "sanitize", c, b, n))
        body.append([
            ctx_label(c), b, n, fmt(t and t["median_us"]), fmt(t and t.get("gbps"), 0),
            f"{100 * t['stream_frac']:.0f}%" if t and t.get("stream_frac") is not None else "—",
            fmt(ref and ref["median_us"]), fx(ref["median_us"] / t["median_us"]) if ref and t else "—",
            (ref or {}).get("check") or "—",
            fmt(sb and sb["median_us"]), fmt(sf and sf["median_us"]),
        ])
    # issue target: >= 70% of the roofline max(bytes / stream, flops / fp8 MMA peak) at 128K x 128, per next_n
    ceil = meta.get("ceilings") or {}
    peak = ceil.get("fp8_tflops")
    tri = [r for r in rows if r["arm"] == "triton" and r["stage"] == "logits" and r.get("roofline_frac") is not None]
    lines = []
    for n in sorted({r["next_n"] for r in tri}):
        pt = [r for r in tri if r["next_n"] == n and r["context"] == 131072 and r["concurrency"] == 128]
        if not pt:
            continue
        r = pt[0]
        ok = r["roofline_frac"] >= 0.7
        bound = "fp8 MMA" if (r.get("mma_frac") or 0) > (r.get("stream_frac") or 0) else "stream"
        lines.append(f"| {n} | {fmt(r['median_us'])} | {fmt(r.get('tflops'), 0)} | {100 * r['stream_frac']:.0f}% | "
                     f"{100 * (r.get('mma_frac') or 0):.0f}% | {bound} | **{100 * r['roofline_frac']:.0f}%** | "
                     f"**{'met' if ok else 'not met'}** |")
    tgt = ""
    if lines:
        tgt = ("\nTarget: ≥ 70% of the roofline `max(bytes / stream, flops / fp8 MMA peak)` at 128K context × "
               f"concurrency 128, both ceilings measured in the same run ({fmt(bw, 0)} GB/s, {fmt(peak, 0)} Tflop/s "
               f"{ceil.get('fp8_method', '')}):\n\n"
               "| next_n | triton µs | Tflop/s | of stream | of fp8 peak | bound | of roofline | status |\n"
               "|---|---|---|---|---|---|---|---|\n" + "\n".join(lines) + "\n")
    return "\n".join([
        f"{h} Producer: paged FP8 MQA logits\n", provenance(meta, rows, path),
        "Bytes = fp8 keys + fp32 scales of each sequence's live tokens (once per sequence) + q + weights "
        "(+ the block-table entries read); GB/s counts those reads, not the logits written. `torch` = the chunked "
        "torch reference (CUDA events around eager calls); the accuracy column is max |triton − torch| / "
        "max |torch| over the windows.\n",
        table(["context", "conc", "next_n", "triton µs", "GB/s", "of stream ceiling", "torch ref µs", "speedup",
               "accuracy", "bounded sanitize µs", "full-width sanitize µs"], body),
        tgt,
    ])


def latency_section(rows, meta, path, h: str, select_floor_us: float | None = None) -> str:
    """The 1-row targets against the floor of the chain's own steps (``python -m dsa_lab.bench.latency``);
    ``select_floor_us``: the recorded bytes floor of the 640 x 256K select point (the sweep's), set beside the
    640-program chain when both are recorded."""
    if not rows:
        return ""
    lad = [r for r in rows if r.get("what") == "ladder"]
    sel = {(r["what"], r["context"]): r for r in rows if r.get("what", "").startswith("select")}
    nws = sorted({r.get("num_warps") for r in lad}, reverse=True)
    by = {(r["case"], r.get("num_warps")): r for r in lad}
    body = [[c] + [fmt(by.get((c, w), {}).get("median_us")) for w in nws]
            for c in dict.fromkeys(r["case"] for r in lad)]
    out = [f"{h} Latency floor of the 1-row select chain\n", provenance(meta, rows, path),
           "One program per launch, CUDA-graph timed; each stage loads its keys at an address that depends on the "
           "previous stage's top-k, as the hier kernel's stages B → C → D do at one row (its stage A and the "
           "arrival come before them). Every output checked against `torch.topk` first.\n",
           table(["case"] + [f"{w} warps µs" for w in nws], body)]
    ctxs = sorted({c for _, c in sel})
    if ctxs:
        out += ["\nIn the same process, 1 row, k = 64 (`triton` = the default dispatch):\n",
                table(["context", "triton µs", "torch µs", "check"],
                      [[ctx_label(c), fmt(sel.get(("select triton", c), {}).get("median_us")),
                        fmt(sel.get(("select torch", c), {}).get("median_us")),
                        sel.get(("select triton", c), {}).get("check") or "—"] for c in ctxs])]

    def best(case):  # fastest over the warp counts
        ts = [r["median_us"] for (c, _), r in by.items() if c == case and r.get("median_us") is not None]
        return min(ts) if ts else None

    three, two = best("3 x topk 512 -> 64 (dependent: B, C, D)"), best("2 x topk 512 -> 64 (dependent)")
    one = best("1 x topk 1024 -> 64")
    if None not in (three, two, one):
        long_rows = [r["median_us"] for (w, c), r in sel.items() if w == "select triton" and c > 8192
                     and r.get("median_us") is not None]
        gap = (f" The measured 1-row select at 16K-256K ({fmt(min(long_rows))}-{fmt(max(long_rows))} µs) adds "
               "stage A (the row's stream and the arrival) and the gathers to that." if long_rows else "")
        out.append(f"\nWith `tl.topk` as the selection step, the steps alone (fastest warp count) are: three "
                   f"dependent 512 → 64 stages (the chain B → C → D) {fmt(three)} µs, two {fmt(two)} µs, one "
                   f"top-k over 1024 keys {fmt(one)} µs. A row with more than 2048 candidate blocks (k = 64: 64K "
                   "context and up) needs at least two 512-key stages after its stream (or one stage over more than "
                   "1024 keys), so it spends about 5 µs in selection steps alone: the 1-row target of 5 µs is out "
                   "of reach for a `tl.topk`-based chain there. A 2048-block row (16K) ranks 512 and then 256 keys "
                   f"(the third short chain) and lands at the target's edge.{gap} Getting under it needs a selection "
                   "that Triton's primitives do not offer; the CUDA C++ probe below measures two outside the "
                   "package.\n")
    many, loads = best("640 programs: 3 x topk 512 -> 64 (B, C, D)"), best("640 programs: 3 x load 512 keys + max")
    if many is not None:
        out.append(f"Run as 640 programs at once (one per row, as the hier kernel runs B → C → D beyond the SM count), "
                   f"the three 512 → 64 stages alone take {fmt(many)} µs"
                   + (f" (their loads and a max alone {fmt(loads)} µs)" if loads is not None else "")
                   + f": {'more than' if many > 40 else 'a part of'} the 40 µs the 640 × 256K select target allows "
                   "for the whole stage"
                   + (f"; with the point's bytes floor for stage A's stream of the scores ({fmt(select_floor_us)} µs, "
                      f"the sweep's) in front of it and no overlap between the two, {fmt(many + select_floor_us)} µs"
                      if select_floor_us else "") + ".\n")
    return "\n".join(out)


PROBE_ARMS = (("triton", "Triton default µs"), ("cuda_fit", "one CTA, fitted µs"), ("cuda_nt512", "one CTA 512x64 µs"),
              ("cluster", "cluster of 8 µs"), ("cluster_q", "cluster, q-th threshold µs"))
PROBE_M_ARMS = (("cluster", "cluster M"), ("cluster_q", "q-th M"))  # candidate counts let through


def cuda_probe_section(rows, meta, path, h: str, target_us: float = 5.0) -> str:
    """The CUDA C++ probe (``scripts/gpu_cuda_select_probe.py`` and ``scripts/cuda/``, in git at 02e8f29 / 5670acf;
    kernels outside the package, checked before timing): its 1-row ``normal`` points per context against the 1-row
    target, and every check it recorded."""
    if not rows:
        return ""

    def is_refused(r):  # "refused" or "refused n/rows": every differing row declined with -2
        return str(r.get("check") or "").startswith("refused")

    bad = [r for r in rows if r.get("check") and r["check"] not in ("ok", "timing only") and not is_refused(r)]
    refused = sum(is_refused(r) for r in rows)
    checked = sum(r.get("check") == "ok" for r in rows)
    one = {(r["context"], r["arm"]): r for r in rows if r.get("rows") == 1 and r.get("dist") == "normal"}
    ctxs = sorted({c for c, _ in one})

    def count(v):  # a candidate count: an integer, "—" where none was recorded
        return str(int(v)) if isinstance(v, (int, float)) else fmt(v)

    def t(c, arm):
        r = one.get((c, arm))
        if r is None:
            return "—"
        return "refused" if is_refused(r) else fmt(r.get("median_us"))

    body = [[ctx_label(c)] + [t(c, a) for a, _ in PROBE_ARMS]
            + [count(one.get((c, a), {}).get("compacted_max")) for a, _ in PROBE_M_ARMS] for c in ctxs]
    under = [ctx_label(c) for c in ctxs
             if isinstance(one.get((c, "cluster"), {}).get("median_us"), (int, float))
             and one[(c, "cluster")]["median_us"] < target_us and one[(c, "cluster")].get("check") == "ok"]
    out = [f"{h} CUDA C++ probe: the 1-row select outside Triton (not the package)\n", provenance(meta, rows, path),
           "`scripts/cuda/topk_row_cta.cu` (one CTA per row) and `scripts/cuda/cluster_floor.cu` (in git at 5670acf; "
           "one row per cluster "
           "of 8 CTAs exchanging through distributed shared memory; common rows only, the rest refused with -2 and "
           "not timed), beside the Triton default on the same inputs in the same process, graph-timed, each checked "
           f"against the reference first: {checked} checks ok, {refused} refused, "
           + (f"**{len(bad)} failing**" if bad else "0 failing") + ". 1 row, k = 64, normal:\n",
           table(["context"] + [lab for _, lab in PROBE_ARMS] + [lab for _, lab in PROBE_M_ARMS], body),
           f"\nUnder the {fmt(target_us)} µs 1-row target with the cluster kernel: "
           + (", ".join(under) if under else "none") + ". `cluster M` is how many candidates its threshold let "
           "through (64 are needed); the q-th threshold (`-DCTA_Q=1`: each CTA's q-th best thread value) lets "
           "fewer through (`q-th M`) at the cost of a step of its own; `notes/select_kernel.md` has the step costs. "
           "The package's kernels are `triton.language`, which has no explicit cluster exchange.\n"]
    return "\n".join(out)


def compile_section(warm_rows, warm_meta, warm_path, cold_rows, cold_meta, cold_path, h: str) -> str:
    """Compile cost as recorded: ``dsa-lab warmup --csv`` (every variant, when its compile finished) and
    ``dsa-lab coldstart`` (first calls of fresh processes at shapes the warmup never used)."""
    if not warm_rows and not cold_rows:
        return ""
    out = [f"{h} Compile cost\n"]
    if warm_rows:
        kern = {}
        for r in warm_rows:
            name = str(r.get("variant") or "").split(" ", 1)[0]
            kern.setdefault(name, []).append(r.get("done_s"))
        m = warm_meta
        out += [f"Source: `{rel(warm_path)}` — {m.get('gpu_name')} ({m.get('sm_count')} SMs), "
                f"driver {m.get('driver')}, torch {m.get('torch')}, triton {m.get('triton')}; {m.get('date_utc')} "
                f"at commit `{m.get('commit')}`; "
                f"`{m.get('command')}`.\n",
                f"From an empty cache, {len(warm_rows)} variants compiled in "
                f"{fmt(max(_num(r.get('done_s')) for r in warm_rows), 1)} s with {m.get('threads')} threads "
                f"(the calls listed: {m.get('calls')}):\n",
                table(["kernel", "variants", "done after (s)"],
                      [[f"`{k}`", len(v), f"{fmt(min(map(_num, v)), 1)}–{fmt(max(map(_num, v)), 1)}"]
                       for k, v in sorted(kern.items())])]
    if cold_rows:
        m = cold_meta
        starts = {}  # each process's first call also pays Triton's per-process setup (unless preloaded)
        for i, r in enumerate(cold_rows):
            starts.setdefault(r.get("process", i), i)
        opening = set(starts.values())
        groups = (("the process's first call", lambda i, r: i in opening),
                  ("a later call launching a kernel new to its process",
                   lambda i, r: i not in opening and bool(r.get("first_in_process"))),
                  ("every kernel already launched in the process",
                   lambda i, r: i not in opening and not r.get("first_in_process")))
        body = []
        for label, pick in groups:
            rs = [r for i, r in enumerate(cold_rows) if pick(i, r)]
            if rs:
                f1 = [_num(r.get("first_call_ms")) for r in rs]
                f2 = [_num(r.get("second_call_ms")) for r in rs]
                body.append([label, len(rs), fmt(statistics.median(f1)), f"{fmt(min(f1))}–{fmt(max(f1))}",
                             fmt(statistics.median(f2)), sum(bool(r.get("ok")) for r in rs),
                             sum(bool(r.get("warmed")) for r in rs)])
        out += [f"\nSource: `{rel(cold_path)}` — {m.get('gpu_name')}, {m.get('date_utc')} at commit "
                f"`{m.get('commit')}`; `{m.get('command')}`.  The first call of a fresh process at a shape the warmup "
                "never used, "
                "synchronised and wall-timed, then a second call at the same shape; every result checked against the "
                "reference" + _preload_note(cold_rows) + ":\n",
                table(["first call", "calls", "first call ms (median)", "range", "second call ms (median)",
                       "results correct", "kernels all warmed"], body)]
    return "\n".join(out) + "\n"


def _preload_note(rows) -> str:
    ms = [_num(r.get("preload_ms")) for r in rows if r.get("preload_ms") not in (None, "")]
    if not ms:
        return " (no `dsa_lab.warmup.preload()` first)"
    return f" (each process called `dsa_lab.warmup.preload()` first: {fmt(min(ms))}–{fmt(max(ms))} ms)"


def _num(v) -> float:
    return float(v) if isinstance(v, (int, float)) else float("nan")


def seed_section(root: Path, h: str) -> str:
    """The seed PR's MI355X numbers (``<root>/mi355x_seed/``), labelled as transcribed; empty when absent."""
    d = root / "mi355x_seed"
    ctxs = _data.load_rows(d / "speedup_by_context.csv")
    pts = _data.load_rows(d / "representative_points.csv")
    tile = _data.load_rows(d / "tile_note.csv")
    if not (ctxs or pts):
        return ""
    meta = _data.load_meta(d / "select_sweep.meta.json")
    parts = [f"{h} Seed PR on MI355X ({SEED_LABEL})\n",
             f"{meta.get('gpu_name', 'AMD Instinct MI355X')}; {meta.get('what', '')}. Source: `data/mi355x_seed/`.\n",
             table(["context", "median", "range", "points"],
                   [[ctx_label(r["context"]), fx(r["median_x"]), f"{fx(r['min_x'])}–{fx(r['max_x'])}", r["points"]]
                    for r in ctxs]),
             "\n",
             table(["context", "conc", "next_n", "rows", "before µs", "after µs", "speedup"],
                   [[ctx_label(r["context"]), r["concurrency"], r["next_n"], r["rows"], fmt(r["before_us"]),
                     fmt(r["after_us"]), fx(r["speedup_x"])] for r in pts])]
    if tile:
        parts.append("\nTILE note (as written in the PR): " + "; ".join(
            f"{ctx_label(r['context'])} at TILE {r['tile']}: {fx(r['speedup_x'])}" for r in tile) + ".\n")
    return "\n".join(parts)
