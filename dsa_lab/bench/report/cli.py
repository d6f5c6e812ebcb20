"""The ``dsa-lab report`` command line: write docs/results.md (and optionally the README's results section)."""
from __future__ import annotations

import argparse
from pathlib import Path

from .markdown import rel
from .writer import LANE_END, LANE_START, build, default_data_dir, gpu_lane_text, rewrite_readme


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``dsa-lab report``'s options: the records folder, the output, the README, the ITL-share model."""
    p.add_argument("--data", default=None, help="folder of records (default data/h200, else the first GPU folder)")
    p.add_argument("--out", default="docs/results.md", help="markdown file to write (default docs/results.md)")
    p.add_argument("--readme", default=None,
                   help="also rewrite this README's results section (between markers) with the headline tables")
    p.add_argument("--itl-ms", type=float, default=14.6, help="inter-token latency for the share model (default 14.6)")
    p.add_argument("--layers", type=int, default=1, help="indexer calls per decode step in the share model (default 1)")
    p.add_argument("--print", dest="print_", action="store_true", help="print the markdown too")


def run(args) -> int:
    """``dsa-lab report``: the full report to ``--out``, the headline to ``--readme``'s results section."""
    data_dir = Path(args.data) if args.data else default_data_dir()
    md = build(data_dir, itl_ms=args.itl_ms, layers=args.layers, level=2)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(md)
    print(f"wrote {out} from {data_dir}")
    if args.readme:
        rewrite_readme(Path(args.readme), build(data_dir, itl_ms=args.itl_ms, layers=args.layers, level=3,
                                                headline=True, full_path=rel(out)))
        print(f"rewrote the results section of {args.readme}")
        if LANE_START in Path(args.readme).read_text():
            rewrite_readme(Path(args.readme), gpu_lane_text(data_dir.parent), LANE_START, LANE_END)
    if args.print_:
        print(md)
    return 0
