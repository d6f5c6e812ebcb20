"""Build markdown tables (speedups, targets, roofline, step breakdown, producer) from recorded data.

Reads ``<data>/select_sweep.csv``, ``step_breakdown.csv``, ``producer_sweep.csv`` and their
``.meta.json`` (written by ``dsa-lab sweep``) and the seed's transcribed MI355X tables in
``data/mi355x_seed/``, and writes markdown: seed-style speedup tables per context (median and
range), representative points in µs (before / after / speedup), roofline fractions, the select-
stage and full-stage targets with their measured values, k = 512 / 2048, the
distribution-insensitivity ratio, the decode-step breakdown with an ITL-share model, and the
producer's bandwidth.  ``--readme README.md`` rewrites the README between
``<!-- results:start -->`` and ``<!-- results:end -->``.

Every table says which GPU, commit and date its numbers come from; the seed's numbers are labelled
as transcribed; interpreter rows are labelled as not a performance measurement.
"""
from .cli import add_arguments, run

# the CLI (dsa_lab.cli loads this module by name); the rest lives in the submodules: points (index, speedups),
# markdown (formats, provenance), tables, targets, sections (the other records) and writer (build, README)
__all__ = ["add_arguments", "run"]
