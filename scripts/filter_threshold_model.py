"""A torch (CPU) model of the hier kernel's threshold filter (``filter_cap``), to check its rule and size its cap.

    python3 scripts/filter_threshold_model.py [--rows N] [--seed S] [--k K] [--csv PATH]

The filter replaces the last top-k stages of a chain by one: find a key T that at least k distinct keys of the row
reach, keep the keys >= T (M of them: the top k are among them), and rank those M with one top-k of ``cap`` slots;
a row with M > cap takes the chain as before.  Two lower bounds on the row's k-th best key are cheap to compute from
one tile of keys, and T is the larger:

* ``T_a``: the smallest of the maxima of KP disjoint groups (each group holds a key at least its maximum, so KP
  distinct keys reach it);
* ``T_b``: the largest of the minima of groups of at least KP live columns (such a group alone holds KP keys at
  or above its minimum).  It is what rescues rows of equal values and ramps, where ``T_a`` lets almost every
  column through.

Two layouts, as in the kernel:

* ``noa`` (the direct / short chains: rows of at most ``KP * W`` columns, no stage A): the row as a ``[R, KP]``
  tile of consecutive columns.  ``T_a`` over the KP *columns* of the tile (interleaved groups: column ``c`` is in
  group ``c mod KP``, so every group is live once ``L >= KP``); ``T_b`` over its fully live *rows* (KP consecutive
  columns each).
* ``main`` (rows with stage A): after stage B chose the KP super groups of S columns, ``T_a`` over the chosen
  groups' maxima and ``T_b`` over their minima (fully live groups, S >= KP).  All keys >= T lie in the chosen
  groups, which B-D's exactness already needs.

It reports M per distribution and row length (median, p90, p99, max, share of rows over each cap), and checks on
every row that the k best keys are all at or above T.  This models the rule, not the Triton code; the kernel's own
tests compare its ids with the reference.
"""
import argparse
import csv
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from dsa_lab.keys import pack_keys  # noqa: E402  (the contract's keys, DESIGN section 2)
from dsa_lab.select_triton import filter_threshold_main, filter_threshold_noa  # noqa: E402  (the kernel's references)

DISTS = ("normal", "shifted", "equal", "nan1pct", "ramp", "few4", "sparse97")
CAPS = (128, 256, 512)


def row_values(dist: str, n: int, g: torch.Generator) -> torch.Tensor:
    x = torch.randn(n, generator=g)
    if dist == "shifted":
        x = x + 100.0
    elif dist == "equal":
        x = torch.full((n,), 0.5)
    elif dist == "nan1pct":
        x[torch.rand(n, generator=g) < 0.01] = float("nan")
    elif dist == "ramp":
        x = torch.arange(n, dtype=torch.float32)
    elif dist == "few4":
        x = torch.randint(0, 4, (n,), generator=g).float()
    elif dist == "sparse97":
        x[torch.rand(n, generator=g) < 0.97] = float("-inf")
    return x.float()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200, help="rows per (distribution, length)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--q", type=int, default=4, help="FQ: the q-th best key of KP / q groups (1, 2, 4)")
    ap.add_argument("--csv", default=None, help="write the table as CSV here")
    a = ap.parse_args()
    KP = 1 << max(1, math.ceil(math.log2(a.k)))
    g = torch.Generator().manual_seed(a.seed)
    # (layout, L): the chains of the unfused k = 64 plan (16K: 2048 blocks, 64K: 8192, 256K: 32768 with stage A),
    # and ragged ends inside each chain's range
    cases = [("noa", 2048), ("noa", 1500), ("noa", 4096), ("noa", 8192), ("noa", 5000), ("main", 32768),
             ("main", 20000)]
    out, bad = [], 0
    print(f"k = {a.k} (KP = {KP}), FQ = {a.q}, {a.rows} rows per case, seed {a.seed}")
    print(f"{'layout':6} {'L':>6} {'dist':9} {'M med':>6} {'p90':>6} {'p99':>6} {'max':>6} "
          + " ".join(f"{'>' + str(c):>6}" for c in CAPS))
    for layout, L in cases:
        for dist in DISTS:
            ms = []
            for _ in range(a.rows):
                x = row_values(dist, L, g)
                keys = pack_keys(x, torch.arange(L))
                if layout == "noa":
                    T = filter_threshold_noa(keys, L, KP, a.q)
                    pool = keys
                else:
                    T, cols = filter_threshold_main(keys, L, KP, 64)
                    pool = keys[cols]
                kth = torch.topk(keys, min(a.k, L)).values
                if bool((kth < T).any()):  # a top-k key below T: the rule would be wrong
                    bad += 1
                ms.append(int((pool >= T).sum()))
            m = torch.tensor(ms, dtype=torch.float64)
            q = torch.quantile(m, torch.tensor([0.5, 0.9, 0.99], dtype=torch.float64)).tolist()
            over = [float((m > c).double().mean()) for c in CAPS]
            out.append(dict(layout=layout, L=L, dist=dist, k=a.k, q=a.q, rows=a.rows, m_median=q[0], m_p90=q[1],
                            m_p99=q[2], m_max=float(m.max()), **{f"over_{c}": o for c, o in zip(CAPS, over)}))
            print(f"{layout:6} {L:>6} {dist:9} {q[0]:>6.0f} {q[1]:>6.0f} {q[2]:>6.0f} {float(m.max()):>6.0f} "
                  + " ".join(f"{o:>6.2f}" for o in over))
    print(f"rows whose top-{a.k} fell below T: {bad}")
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(out[0]))
            w.writeheader()
            w.writerows(out)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
