"""The live widgets' record: the notebooks' widget callbacks run on the GPU, as a live widget calls them.

    python -m dsa_lab.workbook.live [OUT.json]      # default data/h200/live_widgets.json; needs a CUDA GPU

The key-fields widget (notebook 01) over a few special values, and the extent / rows widgets (03, 04) in live mode
(:func:`dsa_lab.workbook.viz.extent_point`, ``mode="gpu"``) at every sweep context and 1 / 32 / 640 rows, k = 64.
Their times are CUDA events around eager calls, each call's host launch overhead included: what a live widget
shows, not the graph-timed sweep.  The ipywidgets front end itself is checked in headless Chromium by
:mod:`dsa_lab.workbook.browser`.
"""
from __future__ import annotations

import json
import os
import sys

CONTEXTS = (4096, 16384, 65536, 262144)
ROWS = (1, 32, 640)
KEY_VALUES = (("-0.0", 5), ("nan", 0), ("0x7FC00001", 7), ("inf", 3), ("1e-45", 2))


def record(out: str) -> dict:
    """Run the callbacks and write the record (``meta``, ``extent_points``, ``key_fields``) to ``out``."""
    import torch

    from ..bench import data
    from . import viz

    if not torch.cuda.is_available():
        raise SystemExit("live mode needs a CUDA GPU")
    points = []
    for context in CONTEXTS:
        for rows in ROWS:
            p = viz.extent_point(context, rows, 64, mode="gpu")
            points.append(p)
            print(f"ctx {context:>6} rows {rows:>3} k 64: " + ", ".join(f"{a} {v:.1f} µs" for a, v in p["us"].items()),
                  flush=True)
    rec = {"meta": data.collect_metadata(" ".join(["python -m dsa_lab.workbook.live"] + sys.argv[1:]), {
               "note": "CUDA events, median of 20 (a quick look, not the graph-timed sweep)"}),
           "extent_points": points, "key_fields": [viz.key_fields(s, i) for s, i in KEY_VALUES]}
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump(rec, f, indent=1, default=str)
    print(f"wrote {out}")
    return rec


if __name__ == "__main__":
    record(sys.argv[1] if len(sys.argv) > 1 else "data/h200/live_widgets.json")
