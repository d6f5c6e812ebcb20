"""The workbook's live runs: the kernels at real shapes where a GPU is present, the same checks at tiny shapes where
the Triton interpreter stands in, and the widgets' callbacks over every slider setting.

* :func:`select_check` -- ``topk_select`` at 262144-column rows (1 / 32 / 640 rows; k 64 and 2048) against the exact
  reference, every slot, output poisoned first; notebook 00's live cell.
* :func:`producer_check` -- the poisoned-tail and fused-step experiments of :mod:`dsa_lab.workbook.causal` with the
  producer at a 128K-token context; notebook 05's live cell.
* :func:`widget_sweep` / :func:`record` -- every slider setting of the extent and rows widgets (notebooks 03, 04)
  and a few key-widget values (01), through the widgets' own callbacks::

      python -m dsa_lab.workbook.live [OUT.json]      # needs a CUDA GPU

* :class:`NotebookRecorder` -- what ``pytest --nbval`` executed per notebook (cells, wall time, failures, every
  first call that waited for a compile), written by ``notebooks/conftest.py`` when ``DSA_LAB_WORKBOOK_RECORD``
  names a file.

Times are CUDA events around eager calls (median of 20), each call's launch overhead and input checks included:
what a live cell shows, not the graph-timed sweep.
"""
from __future__ import annotations

import itertools
import json
import os
import sys
import time

import torch

from .backend import backend_info
from .widgets import live_time_us

LIVE_SELECT = {"rows": (1, 32, 640), "width": 262144, "k": (64, 2048)}
TINY_SELECT = {"rows": (1, 3), "width": 1024, "k": (16, 100)}  # interpreter sizes: a few programs, <= 1-2K columns
LIVE_PRODUCER = {"context_lens": (131072, 98304), "max_model_len": 131072, "num_heads": 64, "block_kv": 64,
                 "block_size": 8, "topk_blocks": 64}  # V3.2's heads and cache pages; the select's candidate blocks
KEY_VALUES = (("-0.0", 5), ("nan", 0), ("0x7FC00001", 7), ("inf", 3), ("1e-45", 2))
POISON_ID = -7  # not an id any select writes (ids are >= -1)


def select_check(mode: str | None = None, *, seed: int | None = None) -> list[dict]:
    """``topk_select`` (``impl="auto"``) against the exact reference at every shape of :data:`LIVE_SELECT` (a GPU)
    or :data:`TINY_SELECT` (no GPU), one random row set per shape (``seed``: fresh when None), each row's length
    drawn between half and all of the width.  The output is poisoned before the kernel writes it; the check
    compares every slot of the rank-sorted ids.  Returns a row per shape: ``rows``, ``width``, ``k``, ``agrees``,
    ``first_call_s`` (the first call: a kernel load, or a compile) and, on a GPU, ``auto_us`` and ``torch_us``."""
    from ..select import topk_select

    mode = mode or backend_info()["mode"]
    gpu = mode == "gpu"
    plan = LIVE_SELECT if gpu else TINY_SELECT
    dev = "cuda" if gpu else "cpu"
    impl = "auto" if mode in ("gpu", "interpreter") else "torch"
    g = torch.Generator(device=dev).manual_seed(seed if seed is not None else int.from_bytes(os.urandom(4), "little"))
    out = []
    for rows, k in itertools.product(plan["rows"], plan["k"]):
        n = plan["width"]
        x = torch.randn(rows, n, device=dev, generator=g)
        lengths = torch.randint(n // 2, n + 1, (rows,), device=dev, generator=g, dtype=torch.int32)
        got = torch.full((rows, k), POISON_ID, dtype=torch.int32, device=dev)
        if gpu:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        topk_select(x, k, lengths=lengths, impl=impl, out=got)
        if gpu:
            torch.cuda.synchronize()
        first = time.perf_counter() - t0
        ref = topk_select(x, k, lengths=lengths, impl="reference")
        srt = lambda t: torch.sort(t, dim=1).values  # noqa: E731  (the contract is the set: compare sorted ids)
        row = {"rows": rows, "width": n, "k": k, "impl": impl, "agrees": bool(torch.equal(srt(got), srt(ref))),
               "first_call_s": round(first, 4)}
        if gpu:
            row["auto_us"] = round(live_time_us(lambda: topk_select(x, k, lengths=lengths, impl=impl)), 1)
            row["torch_us"] = round(live_time_us(lambda: topk_select(x, k, lengths=lengths, impl="torch")), 1)
        out.append(row)
    return out


def producer_check(mode: str | None = None) -> dict:
    """The poisoned-tail and fused-step experiments (:mod:`dsa_lab.workbook.causal`) with the producer at a
    128K-token context (:data:`LIVE_PRODUCER`) on a GPU, at their own tiny defaults without one.  Returns
    ``{"shape", "poisoned_tail", "fused_step", "seconds", "holds"}``; ``holds``: every boolean check of both
    experiments is true, and the counter-experiment (the bounds dropped) does pick poison."""
    from . import causal

    mode = mode or backend_info()["mode"]
    kw = dict(LIVE_PRODUCER) if mode == "gpu" else {}
    impl = "auto" if mode in ("gpu", "interpreter") else "reference"
    res = {"shape": kw or "tiny (the experiments' defaults)"}
    t0 = time.perf_counter()
    tail = causal.poisoned_tail_experiment(layout="2d", impl=impl, **kw)
    tail.pop("selected_blocks")
    tail.pop("row_ends")
    res["poisoned_tail"] = tail
    res["fused_step"] = causal.fused_step_experiment(layout="2d", impl=impl, **kw)
    res["seconds"] = round(time.perf_counter() - t0, 2)
    checks = [v for d in (tail, res["fused_step"]) for v in d.values() if isinstance(v, bool)]
    res["holds"] = bool(checks) and all(checks) and tail["rows_picking_poison_without_bounds"] > 0
    return res


def select_summary(rows: list[dict]) -> str:
    """One line, the same on every backend: whether every shape's select agreed with the reference."""
    return f"every live select agrees with the exact reference, every slot: {all(r['agrees'] for r in rows)}"


def widget_settings(ui) -> list[dict]:
    """Every combination of an ``ipywidgets.interactive``'s slider options (its controls with ``options``)."""
    ctrls = [c for c in ui.kwargs_widgets if hasattr(c, "options")]
    names = [c._kwarg for c in ctrls] if all(hasattr(c, "_kwarg") for c in ctrls) else [c.description for c in ctrls]
    return [dict(zip(names, vals)) for vals in itertools.product(*[[o[1] if isinstance(o, tuple) else o
                                                                     for o in c.options] for c in ctrls])]


def widget_sweep(ui, settings: list[dict] | None = None) -> list[dict]:
    """Call the widget's callback (``ui.f``) at every setting (default :func:`widget_settings`); each call's point is
    the one the callback left in ``ui.f.last`` (see :func:`dsa_lab.workbook.widgets.extent_widget`)."""
    out = []
    for s in settings if settings is not None else widget_settings(ui):
        ui.f(**s)
        out.append(dict(ui.f.last))
    return out


def record(out: str) -> dict:
    """Sweep the extent widget (every context x rows x k) and the rows widget (every rows x context) live, run the
    key widget's callback over :data:`KEY_VALUES`, and write ``meta``, ``extent_points``, ``rows_points``,
    ``key_fields`` to ``out``."""
    from ..bench import data
    from . import tables, widgets

    if not torch.cuda.is_available():
        raise SystemExit("live mode needs a CUDA GPU")
    rec = {"meta": data.collect_metadata(" ".join(["python -m dsa_lab.workbook.live"] + sys.argv[1:]), {
        "note": "the widgets' callbacks at every slider setting; CUDA events around eager calls, median of 20 "
                "(a quick look, not the graph-timed sweep)"})}
    for name, ui in (("extent_points", widgets.extent_widget()), ("rows_points", widgets.rows_widget())):
        t0 = time.perf_counter()
        rec[name] = widget_sweep(ui)
        print(f"{name}: {len(rec[name])} settings in {time.perf_counter() - t0:.1f} s", flush=True)
    rec["key_fields"] = [tables.key_fields(s, i) for s, i in KEY_VALUES]
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump(rec, f, indent=1, default=str)
    print(f"wrote {out}")
    return rec


class NotebookRecorder:
    """Per notebook, what an nbval run executed: cells (passed / failed / skipped), wall time, failures, and every
    Triton kernel a cell loaded (from the compile log of :func:`dsa_lab._env.log_compiles`): a compile
    (``cache_hit`` false: the cell waited for the compiler) or a load from the disk cache."""

    def __init__(self):
        self.cells: list[dict] = []

    def add(self, nodeid: str, when: str, outcome: str, start: float, stop: float, message: str = "") -> None:
        """One pytest report (``when``: setup / call / teardown) of one cell."""
        nb, _, cell = nodeid.partition("::")
        c = next((c for c in self.cells if c["notebook"] == nb and c["cell"] == cell), None)
        if c is None:
            c = {"notebook": nb, "cell": cell, "outcome": "passed", "start": start, "stop": stop, "message": ""}
            self.cells.append(c)
        c["start"], c["stop"] = min(c["start"], start), max(c["stop"], stop)
        if outcome == "failed" or (outcome == "skipped" and c["outcome"] == "passed"):
            c["outcome"] = outcome
            if message.strip() and not c["message"]:
                c["message"] = message.strip().splitlines()[-1][:300]

    def summary(self, compile_events: list[dict]) -> dict:
        """``{notebook: {cells, passed, failed, skipped, wall_s, failures, compiles, cache_loads}}``; an event is
        charged to the cell whose run holds its time (one outside every cell: to ``"(between cells)"``)."""
        out: dict = {}
        for c in self.cells:
            nb = out.setdefault(c["notebook"], {"cells": 0, "passed": 0, "failed": 0, "skipped": 0, "wall_s": 0.0,
                                                "failures": [], "compiles": [], "cache_loads": 0})
            nb["cells"] += 1
            nb[c["outcome"]] += 1
            nb["wall_s"] = round(nb["wall_s"] + (c["stop"] - c["start"]), 2)
            if c["outcome"] == "failed":
                nb["failures"].append({"cell": c["cell"], "message": c["message"]})
        for e in compile_events:
            c = next((c for c in self.cells if c["start"] <= e["t"] <= c["stop"]), None)
            nb = out.get(c["notebook"]) if c else out.setdefault("(between cells)", {"compiles": [], "cache_loads": 0})
            if e.get("cache_hit"):
                nb["cache_loads"] += 1
            else:
                nb["compiles"].append({"cell": c["cell"] if c else None, "kernel": e.get("kernel"),
                                       "compile_s": round(e.get("compile_us", 0) / 1e6, 2),
                                       "variant": e.get("variant")})
        return out


def read_compile_log(path: str) -> list[dict]:
    """The JSON lines :func:`dsa_lab._env.log_compiles` appended (none when the file is absent)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


if __name__ == "__main__":
    record(sys.argv[1] if len(sys.argv) > 1 else "data/h100/live_widgets.json")
