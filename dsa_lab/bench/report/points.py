"""The recorded points of a sweep, indexed by their key, and the speedups of one arm over another."""
from __future__ import annotations

import statistics


def _key(r, with_arm=False):
    k = (r.get("stage"), r.get("context"), r.get("concurrency"), r.get("next_n"), r.get("k"), r.get("dist"))
    return (r.get("arm"),) + k if with_arm else k


def index(rows) -> dict:
    """(arm, stage, context, concurrency, next_n, k, dist) → row (the last recorded wins)."""
    out = {}
    for r in rows:
        if r.get("median_us") is not None:
            out[_key(r, True)] = r
    return out


def pick(rows, **kw):
    """The rows whose fields equal every ``kw`` item."""
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def speedups(idx: dict, base: str, arm: str, **kw) -> list[tuple[dict, float]]:
    """[(row of ``arm``, base_median / arm_median)] over points where both are recorded, filtered by kw."""
    out = []
    for key, r in idx.items():
        if key[0] != arm or not all(r.get(k) == v for k, v in kw.items()):
            continue
        b = idx.get((base,) + key[1:])
        if b and r["median_us"] > 0:
            out.append((r, b["median_us"] / r["median_us"]))
    return out


def summary(xs: list[float]):
    """(median, min, max) of ``xs``; three Nones when it is empty."""
    if not xs:
        return None, None, None
    return statistics.median(xs), min(xs), max(xs)
