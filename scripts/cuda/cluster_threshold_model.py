"""A numpy model of ``cluster_floor.cu``'s thresholds (steps 1-3), to check their logic and size their output on the CPU.

    python3 scripts/cuda/cluster_threshold_model.py [--rows N] [--seed S]

For each row it follows the kernel's layout (CTA g, thread t, slot j holds column g * NT * E + j * NT + t) and rules:
T0 = the smallest warp-best key over the warps holding a candidate (valid when kk <= A), and with ``-DCTA_Q=1`` T1 =
the smallest per-CTA q-th best thread value (q = ceil(k / G), counted with multiplicity) shifted into the key's high
word (valid when every CTA has q candidate threads).  It reports, per distribution, how many keys reach the chosen
threshold (M: what the kernel compacts and ranks), how many rows the kernel refuses (no valid rule, or more than
SLOTS keys in one CTA), and checks that every accepted row's kk best keys are all at or above its threshold, so
that ranking the compacted keys gives the exact answer.  It models the rules, not the CUDA code.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from dsa_lab.keys import ordered_bits  # noqa: E402  (the contract's ordered(), docs/design.md §2)

G, NT, E, SLOTS = 8, 256, 16, 128
W = NT // 32
NEG_INF_U = 0x007FFFFF


def ordered(x: np.ndarray) -> np.ndarray:
    return ordered_bits(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))).numpy().astype(np.uint64)


def model_row(x: np.ndarray, length: int, k: int, cta_q: bool):
    """(chosen threshold or None when refused, M, kk, keys) for one row of G * NT * E scores."""
    n = G * NT * E
    cols = np.arange(n, dtype=np.uint64)
    u = ordered(x.astype(np.float32))
    u[length:] = ordered(np.array([-np.inf], np.float32))[0]
    cand = u > NEG_INF_U
    keys = np.where(cand, (u << np.uint64(32)) | (np.uint64(0xFFFFFFFF) - cols), 0).astype(np.uint64)
    g, r = np.divmod(np.arange(n), NT * E)
    t = r % NT
    thread = g * NT + t
    tbest = np.zeros(G * NT, np.uint64)
    np.maximum.at(tbest, thread, keys)
    wbest = tbest.reshape(G * W, 32).max(axis=1)
    c = int(cand.sum())
    kk = min(k, c)
    if kk == 0:
        return 0, 0, 0, keys
    a = int((wbest > 0).sum())
    thr = int(wbest[wbest > 0].min()) if kk <= a else None
    if cta_q:
        q = -(-k // G)
        tv = (tbest >> np.uint64(32)).reshape(G, NT)  # 0: no candidate
        srt = -np.sort(-tv.astype(np.int64), axis=1)  # descending, with multiplicity
        cq = srt[:, q - 1]
        if (cq > 0).all():
            t1 = int(cq.min()) << 32
            thr = t1 if thr is None else max(thr, t1)
    if thr is None:
        return None, 0, kk, keys
    take = cand & (keys >= np.uint64(thr))
    per_cta = np.bincount(g[take], minlength=G)
    if (per_cta > SLOTS).any():
        return None, int(take.sum()), kk, keys
    return thr, int(take.sum()), kk, keys


def make(dist, rng):
    n = G * NT * E
    x = rng.standard_normal(n).astype(np.float32)
    if dist == "shifted":
        x += 100
    elif dist == "equal":
        x[:] = 1.0
    elif dist == "ramp":
        x = np.arange(n, dtype=np.float32)
    elif dist == "nan1pct":
        x[rng.random(n) < 0.01] = np.nan
    elif dist == "ties":
        x = np.round(x * 4) / 4
    elif dist == "inf_heavy":
        x[rng.random(n) < 0.97] = -np.inf
    elif dist == "spread":  # the k best: q = k / G per CTA, each in its own thread: T1 is exactly tight here
        for g in range(G):
            x[g * NT * E + np.arange(-(-64 // G))] = 1000 + rng.random(-(-64 // G))
    length = n if dist != "short" else int(rng.integers(1, 4096))
    x[length - 1] = np.inf  # the newest block pinned, as the sweep's inputs do
    return x, length


def run(rows: int, seed: int, cta_q: bool, k: int = 64):
    rng = np.random.default_rng(seed)
    out = {}
    for dist in ("normal", "shifted", "nan1pct", "ties", "inf_heavy", "spread", "short", "equal", "ramp"):
        ms, refused, wrong = [], 0, 0
        for _ in range(rows):
            x, length = make(dist, rng)
            thr, m, kk, keys = model_row(x, length, k, cta_q)
            if thr is None:
                refused += 1
                continue
            best = np.sort(keys[keys > 0])[::-1][:kk]
            wrong += int((best < np.uint64(thr)).any())
            ms.append(m)
        out[dist] = {"median_M": float(np.median(ms)) if ms else None,
                     "p90_M": float(np.percentile(ms, 90)) if ms else None, "refused": refused, "wrong": wrong}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    for cta_q in (False, True):
        print(f"CTA_Q={int(cta_q)} ({a.rows} rows per distribution, k = 64, {G} x {NT} x {E})")
        for dist, r in run(a.rows, a.seed, cta_q).items():
            print(f"  {dist:10s} M median {r['median_M']}  p90 {r['p90_M']}  refused {r['refused']}  wrong {r['wrong']}")


if __name__ == "__main__":
    main()
