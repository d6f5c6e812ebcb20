"""Run the notebooks' live-widget callbacks on the GPU (the package functions the widgets wrap):
the key-fields widget (01) and the extent / rows widgets (03, 04) in live mode, over the widgets' slider
settings.  Writes data/h200/live_widgets.json (with metadata).  The ipywidgets front end itself is checked
in headless Chromium on the CPU machine (scripts/browser_check.py)."""
import json
import os
import sys

import torch

from dsa_lab.bench import data

from dsa_lab.workbook import viz

assert torch.cuda.is_available(), "live mode needs a GPU"
points = []
for context in (4096, 16384, 65536, 262144):
    for rows in (1, 32, 640):
        for k in (64,):
            p = viz.extent_point(context, rows, k, mode="gpu")
            points.append(p)
            print(f"ctx {context:>6} rows {rows:>3} k {k:>4}: " +
                  ", ".join(f"{a} {v:.1f} µs" for a, v in p["us"].items()), flush=True)
keys = [viz.key_fields(s, i) for s, i in (("-0.0", 5), ("nan", 0), ("0x7FC00001", 7), ("inf", 3), ("1e-45", 2))]
rec = {"meta": data.collect_metadata(" ".join(sys.argv), {"note": "CUDA events, median of 20 (a quick look, not the graph-timed sweep)"}),
       "extent_points": points, "key_fields": keys}
os.makedirs("data/h200", exist_ok=True)
with open("data/h200/live_widgets.json", "w") as f:
    json.dump(rec, f, indent=1, default=str)
print("wrote data/h200/live_widgets.json")
