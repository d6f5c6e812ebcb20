"""Latency ladder: the dependent steps of the few-row select chain, timed one by one.

The 1-row targets (select ≤ 5 µs, full stage ≤ 6 µs at every context) are latency targets: at one row the
select kernel's time is a chain of dependent steps in one or two programs (a launch, a load of a few hundred
keys, a ``tl.topk`` of them, a gather that depends on its result, ...), not a stream.  This module times those
steps alone, one program per launch, so the report can set the measured 1-row times against the floor that
the chain's own steps put under them.

* :func:`chain_kernel` ``[1]``: ``STAGES`` dependent stages; stage ``i`` loads ``N`` int64 keys at an address
  that depends on the previous stage's result (a runtime ``mask = 0`` keeps the dependency the compiler cannot
  fold), takes ``tl.topk(keys, K)`` (``SORT=False``: a max only) and carries the smallest of them on; the last
  stage's top-``K`` is stored.  ``STAGES = 0`` is the empty launch.
* :func:`ladder` builds the cases (empty launch; 1-3 stages of 512 → 64, the hier chain's B-D; one stage of
  1024-4096 → 64, the one-program alternatives) and checks each output against ``torch.topk`` before timing.

Arch: no warp-size-specific code; ROCm is unverified.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

__all__ = ["chain_topk", "ladder", "LADDER_CASES"]


@triton.jit(do_not_specialize=["mask"])
def _chain_kernel(src_ptr, out_ptr, mask, N: tl.constexpr, K: tl.constexpr, STAGES: tl.constexpr,
                  SORT: tl.constexpr):
    j = tl.arange(0, N)
    off = tl.zeros([], tl.int64)
    for i in tl.static_range(STAGES):
        keys = tl.load(src_ptr + i * N + off + j)
        if SORT:
            top = tl.topk(keys, K)
            off = tl.min(top, axis=0) & mask  # 0 at run time, but the next load must wait for this top-k
        else:
            best = tl.max(keys, axis=0)
            off = best & mask
    if STAGES > 0:
        if SORT:
            tl.store(out_ptr + tl.arange(0, K), top)
        else:
            tl.store(out_ptr, best)


def chain_topk(keys: torch.Tensor, out: torch.Tensor, n: int, k: int, stages: int, sort: bool = True,
               num_warps: int = 8) -> torch.Tensor:
    """Launch :func:`_chain_kernel` (one program).

    Args:
        keys: int64, contiguous, at least ``stages * n`` elements (stage ``i`` reads ``keys[i*n:(i+1)*n]``).
        out: int64 ``[k]`` (``sort``) or ``[1]``; written by the last stage (untouched when ``stages == 0``).
        n, k: powers of two, ``n >= k >= 2``.
    Returns ``out``: the last stage's top-``k`` sorted descending (``sort``), or its max.
    """
    if not isinstance(keys, torch.Tensor) or keys.dtype != torch.int64 or not keys.is_contiguous():
        raise TypeError("keys must be a contiguous int64 tensor")
    for name, v in (("n", n), ("k", k)):
        if not isinstance(v, int) or v < 2 or v & (v - 1):
            raise ValueError(f"{name} must be a power of two >= 2, got {v!r}")
    if k > n:
        raise ValueError(f"k must be <= n, got k={k}, n={n}")
    if not isinstance(stages, int) or stages < 0 or keys.numel() < stages * n:
        raise ValueError(f"stages must be an int in [0, keys.numel() // n], got {stages!r}")
    _chain_kernel[(1,)](keys, out, 0, N=n, K=k, STAGES=stages, SORT=bool(sort), num_warps=num_warps)
    return out


# (name, n, k, stages, sort): what each case stands for in the hier chain of dsa_lab.select_triton
LADDER_CASES = [
    ("empty launch", 512, 64, 0, True),
    ("load 512 keys + max (no top-k)", 512, 64, 1, False),
    ("1 x topk 512 -> 64", 512, 64, 1, True),
    ("2 x topk 512 -> 64 (dependent)", 512, 64, 2, True),
    ("3 x topk 512 -> 64 (dependent: B, C, D)", 512, 64, 3, True),
    ("1 x topk 1024 -> 64", 1024, 64, 1, True),
    ("1 x topk 2048 -> 64", 2048, 64, 1, True),
    ("1 x topk 4096 -> 64", 4096, 64, 1, True),
]


def ladder(device="cuda", cases=None, *, timer=None, seed: int = 0, num_warps: int = 8) -> list[dict]:
    """Run (and, with ``timer``, time) every case; each output is checked against ``torch.topk`` first.

    ``timer``: a callable ``fn -> Timing`` (e.g. :func:`dsa_lab.bench.time_cuda_graph`); None = check only (the
    CPU interpreter lane: not a measurement).  Returns one dict per case: name, n, k, stages, sort, check
    ("ok" or the first mismatch) and, timed, median_us / p10_us / p90_us.
    """
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for name, n, k, stages, sort in (cases or LADDER_CASES):
        # distinct keys (a permutation), so the top-k is unique and the check exact
        keys = (torch.randperm(max(stages, 1) * n, generator=gen).to(torch.int64) * 7919 - 2**40).to(device)
        out = torch.full((k if sort else 1,), -12345, dtype=torch.int64, device=device)
        chain_topk(keys, out, n, k, stages, sort, num_warps)
        if stages == 0:
            check = "ok" if bool((out == -12345).all()) else "empty launch wrote its output"
        else:
            last = keys[(stages - 1) * n: stages * n]
            want = torch.topk(last, k).values if sort else last.max().reshape(1)
            bad = (out != want).nonzero()
            check = "ok" if not len(bad) else f"slot {int(bad[0])}: {int(out[bad[0]])} != {int(want[bad[0]])}"
        row = {"case": name, "n": n, "k": k, "stages": stages, "sort": sort, "num_warps": num_warps, "check": check}
        if timer is not None and check == "ok":
            t = timer(lambda keys=keys, out=out, n=n, k=k, stages=stages, sort=sort:
                      chain_topk(keys, out, n, k, stages, sort, num_warps))
            row.update(median_us=t.median_us, p10_us=t.p10_us, p90_us=t.p90_us)
        rows.append(row)
    return rows
