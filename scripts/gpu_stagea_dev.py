"""Dev measurement (H200): what the fused stage A's per-logit work costs, variant by variant.

    DSA_LAB_COMMIT=... python3 scripts/gpu_stagea_dev.py [--out DIR] [--max-s S]

The fused select kernel's stage A (``_hier_kernel``, FUSED, whole tiles) streams ~1.6 TB/s where the block-scores
kernel streams ~4 (sixth session: not the load width, not occupancy or code size).  This script isolates stage A:
each variant below is a stand-alone kernel that streams whole rows of logits (grid rows x P, every tile whole)
and writes exactly what stage A writes: every level-1 group's best key and every super group's best key.  All
variants are checked against a torch reference (block scores -> packed keys -> maxima) on every slot of both
outputs before timing.

* ``cur``      the kernel's formulation: a 3-D [NT, S, BS] tile of pointers, scores, then ``_best_per_row`` over
               a reshape to [NT*G2, G1] and the super max over a reshape to [NT, G2].
* ``flat``     the same helpers, but the tile is one contiguous 1-D load of NT*S*BS logits reshaped to
               [NT*G2, G1, BS] (the load's layout then follows the memory order, not the axis-info tie-break).
* ``flat_hi``  ``flat`` with the block max kept in the ordered-integer domain and each level-1 key one int64 max
               of packed keys (no float round trip, no second min-index reduction).  Same bits.
* ``scores``   ``flat``'s load and block max only, summed per tile (no keys; splits the cost).
* ``read``     the load and a max only (the stream ceiling of this loop shape).

Not the recorded sweep: a dev run for ``notes/select_kernel.md``.  Writes ``stagea_dev.csv`` + meta JSON.
"""
import argparse
import csv
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dsa_lab import bench, data  # noqa: E402
from dsa_lab.keys import pack_keys  # noqa: E402
from dsa_lab.keys_triton import tl_ordered_hi  # noqa: E402
from dsa_lab.scores import block_scores_torch  # noqa: E402
from dsa_lab.scores_triton import tl_block_score  # noqa: E402
from dsa_lab.select_triton import _best_per_row, _scores2d_whole  # noqa: E402


@triton.jit
def _stagea_dev(x_ptr, x_stride, l1_ptr, sg_ptr, end_ptr, nsg, chunk,
                VAR: tl.constexpr, NT: tl.constexpr, G1: tl.constexpr, G2: tl.constexpr, BS: tl.constexpr):
    S: tl.constexpr = G1 * G2
    row = tl.program_id(0)
    p = tl.program_id(1)
    end = tl.load(end_ptr + row).to(tl.int64)
    start = tl.zeros([], tl.int64)
    row_off = row.to(tl.int64) * x_stride
    lo = p * chunk
    hi = tl.minimum(lo + chunk, nsg)
    jt = tl.arange(0, NT)
    js = tl.arange(0, S)
    acc = tl.zeros([NT * G2], tl.int32)
    for s0 in range(lo, hi, NT):
        boff = row_off + s0 * (S * BS)
        if VAR == 0:  # cur
            cols = s0 * S + jt[:, None] * S + js[None, :]
            valid = cols >= 0
            sc = _scores2d_whole(x_ptr, boff, jt[:, None] * S + js[None, :], cols, start, end, True, BS, BS)
            l1k = _best_per_row(tl.reshape(sc, [NT * G2, G1]), tl.reshape(cols, [NT * G2, G1]),
                                tl.reshape(valid, [NT * G2, G1]))
        else:
            x = tl.load(x_ptr + boff + tl.arange(0, NT * S * BS))
            x3 = tl.reshape(x, [NT * G2, G1, BS])
            cols = s0 * S + tl.arange(0, NT * G2)[:, None] * G1 + tl.arange(0, G1)[None, :]
            if VAR == 1:  # flat
                sc = tl_block_score(x3, cols, start, end, 2, BS)
                l1k = _best_per_row(sc, cols, cols >= 0)
            elif VAR == 2:  # flat_hi
                h = tl.max(tl_ordered_hi(x3), axis=2)
                newest = tl.where(end > start, (end - start - 1) // BS, -1)
                h = tl.where(cols.to(tl.int64) == newest, 0x7F800000, h)
                l1k = tl.max((h.to(tl.int64) << 32) | (0xFFFFFFFF - cols.to(tl.int64)), axis=1)
            elif VAR == 3:  # scores only
                h = tl.max(tl_ordered_hi(x3), axis=2)
                acc += tl.max(h, axis=1)
            else:  # read
                acc += tl.max(tl.max(x3, axis=2), axis=1).to(tl.int32)
        if VAR <= 2:
            jl = s0 * G2 + tl.arange(0, NT * G2)
            tl.store(l1_ptr + row.to(tl.int64) * (nsg * G2) + jl, l1k)
            best = tl.max(tl.reshape(l1k, [NT, G2]), axis=1)
            tl.store(sg_ptr + row.to(tl.int64) * nsg + s0 + jt, best)
    if VAR > 2:
        tl.store(l1_ptr + row.to(tl.int64) * (nsg * G2) + p * NT * G2 + tl.arange(0, NT * G2), acc.to(tl.int64))


VARS = {"cur": 0, "flat": 1, "flat_hi": 2, "scores": 3, "read": 4}
G1 = G2 = 8
BS = 8


def launch(var, x, l1, sg, ends, nsg, P, NT, nw):
    rows = x.shape[0]
    chunk = nsg // P
    _stagea_dev[(rows, P)](x, x.stride(0), l1, sg, ends, nsg, chunk, VAR=VARS[var], NT=NT, G1=G1, G2=G2, BS=BS,
                           num_warps=nw)


def reference(x, ends):
    sc = block_scores_torch(x, ends, block_size=BS)
    rows, n = sc.shape
    idx = torch.arange(n, device=x.device).expand(rows, n)
    keys = pack_keys(sc, idx)
    l1 = keys.view(rows, n // G1, G1).amax(dim=2)
    sg = l1.view(rows, n // (G1 * G2), G2).amax(dim=2)
    return l1.reshape(rows, -1), sg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--max-s", type=float, default=420.0)
    args = ap.parse_args()
    t0 = time.time()
    dev = torch.device("cuda")
    commit = os.environ.get("DSA_LAB_COMMIT", "unknown")
    path = os.path.join(args.out, "stagea_dev.csv")
    cols = ["variant", "rows", "context", "P", "NT", "num_warps", "median_us", "p10_us", "p90_us", "gbps", "check",
            "commit"]
    f = open(path, "w", newline="")
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    shapes = [(640, 262144, (4, 8)), (160, 262144, (4, 8)), (32, 262144, (8, 16)), (640, 65536, (4,))]
    for rows, ctx, Ps in shapes:
        if time.time() - t0 > args.max_s:
            print("time box reached", flush=True)
            break
        g = torch.Generator(device=dev).manual_seed(int(time.time()) & 0xFFFF)
        x = torch.randn(rows, ctx, device=dev, generator=g)
        x[:, ::997] = float("nan")  # NaN inside blocks: the ordered max must propagate it
        ends = torch.full((rows,), ctx, dtype=torch.int32, device=dev)
        nsg = ctx // BS // (G1 * G2)
        ref_l1, ref_sg = reference(x, ends)
        for var in VARS:
            for NT in (8, 16):
                for nw in (4, 8):
                    for P in Ps:
                        if nsg % (P * NT):
                            continue
                        l1 = torch.full((rows, nsg * G2), -7, dtype=torch.int64, device=dev)
                        sg = torch.full((rows, nsg), -7, dtype=torch.int64, device=dev)
                        launch(var, x, l1, sg, ends, nsg, P, NT, nw)
                        torch.cuda.synchronize()
                        if VARS[var] <= 2:
                            bad = (l1 != ref_l1).nonzero()
                            bad2 = (sg != ref_sg).nonzero()
                            check = "ok" if bad.numel() == 0 and bad2.numel() == 0 else (
                                f"MISMATCH l1 {bad.shape[0]} first {bad[:1].tolist()} sg {bad2.shape[0]}")
                        else:
                            check = "timing-only"
                        t = bench.time_cuda_graph(lambda: launch(var, x, l1, sg, ends, nsg, P, NT, nw))
                        gbps = rows * ctx * 4 / (t.median_us * 1e3)
                        row = dict(variant=var, rows=rows, context=ctx, P=P, NT=NT, num_warps=nw,
                                   median_us=round(t.median_us, 3), p10_us=round(t.p10_us, 3),
                                   p90_us=round(t.p90_us, 3), gbps=round(gbps, 1), check=check, commit=commit)
                        w.writerow(row)
                        f.flush()
                        print(f"{var:8s} rows {rows:4d} ctx {ctx:6d} P {P:2d} NT {NT:2d} nw {nw} "
                              f"{t.median_us:8.2f} us {gbps:7.1f} GB/s {check}", flush=True)
        del x
    f.close()
    meta = data.collect_metadata("python3 scripts/gpu_stagea_dev.py", {"seconds": round(time.time() - t0, 1),
                                                                        "dev_commit": commit})
    with open(os.path.join(args.out, "stagea_dev.meta.json"), "w") as fm:
        json.dump(meta, fm, indent=1)


if __name__ == "__main__":
    main()
