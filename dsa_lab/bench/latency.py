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
* :data:`THROUGHPUT_CASES`: the same chain in 640 programs at once (one per row, as the hier kernel runs B-D
  beyond the SM count): the chain's own cost at the 640 x 256K select point, with no stage A in front of it.
* :func:`record` (``python -m dsa_lab.bench.latency OUT.csv``, on a GPU): the record ``dsa-lab report`` reads
  (``data/<gpu>/latency_ladder.csv``): every case at 8 and 4 warps, and in the same process the default 1-row
  select and ``torch.topk`` at each sweep context.

Arch: no warp-size-specific code; ROCm is unverified.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

__all__ = ["chain_topk", "ladder", "record", "LADDER_CASES", "THROUGHPUT_CASES"]


@triton.jit(do_not_specialize=["mask"])
def _chain_kernel(src_ptr, out_ptr, mask, N: tl.constexpr, K: tl.constexpr, STAGES: tl.constexpr,
                  SORT: tl.constexpr):
    j = tl.arange(0, N)
    # program r reads its own keys and writes its own output (rows > 1: many chains at once, a throughput floor)
    r = tl.program_id(0).to(tl.int64)
    src_ptr += r * (STAGES * N)
    out_ptr += r * K
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
               num_warps: int = 8, rows: int = 1) -> torch.Tensor:
    """Launch :func:`_chain_kernel`: ``rows`` programs, each its own chain (1: the latency ladder; many: the
    chain's throughput, as the hier kernel runs it at one program per row).

    Args:
        keys: int64, contiguous, at least ``rows * stages * n`` elements (program ``r``'s stage ``i`` reads
            ``keys[(r * stages + i) * n:][:n]``).
        out: int64, contiguous, at least ``rows * k`` elements; program ``r`` writes ``out[r * k:][:k]`` (``sort``:
            the last stage's top-``k`` sorted descending) or ``out[r * k]`` (its max); untouched when
            ``stages == 0``.
        n, k: powers of two, ``n >= k >= 2``.
    Returns ``out``.
    """
    if not isinstance(keys, torch.Tensor) or keys.dtype != torch.int64 or not keys.is_contiguous():
        raise TypeError("keys must be a contiguous int64 tensor")
    for name, v in (("n", n), ("k", k)):
        if not isinstance(v, int) or v < 2 or v & (v - 1):
            raise ValueError(f"{name} must be a power of two >= 2, got {v!r}")
    if k > n:
        raise ValueError(f"k must be <= n, got k={k}, n={n}")
    if not isinstance(rows, int) or rows < 1:
        raise ValueError(f"rows must be an int >= 1, got {rows!r}")
    if not isinstance(stages, int) or stages < 0 or keys.numel() < rows * stages * n:
        raise ValueError(f"stages must be an int in [0, keys.numel() // (rows * n)], got {stages!r}")
    if not isinstance(out, torch.Tensor) or out.dtype != torch.int64 or not out.is_contiguous() \
            or out.numel() < rows * k:
        raise TypeError(f"out must be a contiguous int64 tensor of at least rows * k = {rows * k} elements")
    _chain_kernel[(rows,)](keys, out, 0, N=n, K=k, STAGES=stages, SORT=bool(sort), num_warps=num_warps)
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

# (name, n, k, stages, sort, rows): the same chain in many programs at once, one per row as the hier kernel runs it
# beyond the SM count (640 rows: the 640 x 256K select target of 40 µs), with no stage A in front of it
THROUGHPUT_CASES = [
    ("640 programs: 3 x load 512 keys + max", 512, 64, 3, False, 640),
    ("640 programs: 1 x topk 512 -> 64", 512, 64, 1, True, 640),
    ("640 programs: 3 x topk 512 -> 64 (B, C, D)", 512, 64, 3, True, 640),
]


def ladder(device="cuda", cases=None, *, timer=None, seed: int = 0, num_warps: int = 8) -> list[dict]:
    """Run (and, with ``timer``, time) every case; each output is checked against ``torch.topk`` first.

    ``timer``: a callable ``fn -> Timing`` (e.g. :func:`dsa_lab.bench.time_cuda_graph`); None = check only (the
    CPU interpreter lane: not a measurement).  Returns one dict per case: name, n, k, stages, sort, check
    ("ok" or the first mismatch) and, timed, median_us / p10_us / p90_us.
    """
    gen = torch.Generator().manual_seed(seed)
    rows = []
    for case in (cases or LADDER_CASES):
        name, n, k, stages, sort = case[:5]
        rows_ = case[5] if len(case) > 5 else 1
        # distinct keys (a permutation), so the top-k is unique and the check exact
        keys = (torch.randperm(rows_ * max(stages, 1) * n, generator=gen).to(torch.int64) * 7919 - 2**40).to(device)
        out = torch.full((rows_ * k,), -12345, dtype=torch.int64, device=device)
        chain_topk(keys, out, n, k, stages, sort, num_warps, rows_)
        if stages == 0:
            check = "ok" if bool((out == -12345).all()) else "empty launch wrote its output"
        else:
            # every program's last stage: its top-k (sorted), or its max in slot 0 and the rest untouched
            last = keys.view(rows_, stages, n)[:, stages - 1].cpu()
            got = out.view(rows_, k).cpu()
            want = got.clone()
            if sort:
                want = torch.topk(last, k, dim=1).values
            else:
                want[:, 0] = last.max(dim=1).values
                want[:, 1:] = -12345
            bad = (got != want).nonzero()
            check = "ok" if not len(bad) else (f"row {int(bad[0, 0])} slot {int(bad[0, 1])}: "
                                               f"{int(got[tuple(bad[0])])} != {int(want[tuple(bad[0])])}")
        row = {"case": name, "n": n, "k": k, "stages": stages, "sort": sort, "num_warps": num_warps, "rows": rows_,
               "check": check}
        if timer is not None and check == "ok":
            t = timer(lambda keys=keys, out=out, n=n, k=k, stages=stages, sort=sort:
                      chain_topk(keys, out, n, k, stages, sort, num_warps, rows_))
            row.update(median_us=t.median_us, p10_us=t.p10_us, p90_us=t.p90_us)
        rows.append(row)
    return rows


COLUMNS = ["what", "case", "n", "k", "stages", "num_warps", "rows", "context", "median_us", "p10_us", "p90_us", "check",
           "timing", "commit"]


def record(out_csv, contexts=(4096, 16384, 65536, 262144)) -> None:
    """Write the latency record to ``out_csv`` (replaced; metadata beside it): every case of :data:`LADDER_CASES`
    and :data:`THROUGHPUT_CASES` at 8 and 4 warps (``what`` = ``ladder``), then the default ``impl="triton"`` select
    (ids checked against the reference first) and ``torch.topk`` + store at 1 row, k = 64, at each of ``contexts``
    on the sweep's inputs (``select triton`` / ``select torch``).  CUDA-graph timing; needs a CUDA GPU."""
    import os
    import sys

    from ..select import topk_select
    from . import data, timing
    from .sweep import MML, Point, select_stage_inputs, torch_topk_store
    from .verify import compare

    if not torch.cuda.is_available():
        raise SystemExit("the latency record needs a CUDA GPU")
    if os.path.exists(out_csv):
        os.remove(out_csv)
    meta = data.collect_metadata(" ".join(["python -m dsa_lab.bench.latency"] + sys.argv[1:]), {
        "timing": "cuda graph (dsa_lab.bench.timing.time_cuda_graph, rep 10 ms)",
        "note": "one program per ladder launch; each ladder output checked against torch.topk before timing"})
    tag = {"timing": timing.CUDA_GRAPH_LABEL, "commit": str(meta.get("commit") or "")[:12]}

    def timer(fn):
        return timing.time_cuda_graph(fn, rep_ms=10.0, max_replays=60)

    for nw in (8, 4):
        for r in ladder("cuda", LADDER_CASES + THROUGHPUT_CASES, timer=timer,
                        seed=int.from_bytes(os.urandom(4), "little"), num_warps=nw):
            row = {"what": "ladder", "context": "", **{c: r.get(c, "") for c in COLUMNS if c in r}, **tag}
            data.append_row(out_csv, row, COLUMNS)
            print(f"ladder nw{nw} {r['case']:<44} {r.get('median_us', float('nan')):8.2f} us  {r['check']}", flush=True)
    for ctx in contexts:
        inp = select_stage_inputs(Point("select", "select", ctx, 1, 1, 64, "normal"), MML,
                                  int.from_bytes(os.urandom(4), "little"), "cuda")
        sc, lengths = inp["scores"], inp["lengths"]
        out = torch.full((1, 64), 0x7EADBEEF, dtype=torch.int32, device="cuda")
        topk_select(sc, 64, lengths=lengths, impl="triton", out=out)
        nbad, msg = compare(out, topk_select(sc, 64, lengths=lengths, impl="reference"))
        check = "ok" if not nbad else msg[:120]
        for what, fn in (("select triton", lambda: topk_select(sc, 64, lengths=lengths, impl="triton", out=out)),
                         ("select torch", lambda: torch_topk_store(sc, 64))):
            t = timer(fn)
            data.append_row(out_csv, {"what": what, "case": "1 row", "n": inp["nblocks"], "k": 64, "stages": "",
                                      "rows": 1, "num_warps": "", "context": ctx, "median_us": t.median_us,
                                      "p10_us": t.p10_us, "p90_us": t.p90_us,
                                      "check": check if what == "select triton" else "", **tag}, COLUMNS)
            print(f"{what:<14} ctx {ctx:>6} 1 row {t.median_us:8.2f} us {check}", flush=True)
    data.save_meta(data.meta_path(out_csv), meta)


if __name__ == "__main__":
    import sys

    record(sys.argv[1] if len(sys.argv) > 1 else "data/h200/latency_ladder.csv")
