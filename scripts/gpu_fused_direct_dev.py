"""Dev measurement (H200): where the fused direct path (rows of at most 512 blocks, 4K context) spends its time.

    DSA_LAB_COMMIT=... python3 scripts/gpu_fused_direct_dev.py [--out DIR] [--max-s S] [--smoke]

Section Q measured the fused kernel's ids-only full stage at 1 x 4K at 5.8 µs where the select kernel alone over
the precomputed scores takes 3.0: the same direct path (one program per row, one ``tl.topk`` of 512 keys) plus a
16 KB load of logits instead of 2 KB of scores.  This script times, same process, same inputs:

* ``unfused`` / ``unfused_flags``: the default composition (scores launch + select), ids only / with flags;
* ``fused`` / ``fused_flags``: the hier kernel's fused direct path (``fused=True``);
* ``fused_p1`` / ``fused_w4``: the same with one program per row / 4 warps;
* ``select``: the select kernel alone over the scores the composition would read (the stage's lower part);
* ``min8`` / ``min4``: a minimal one-kernel fused direct path (:func:`_min_direct_kernel` below: the bounds, one
  contiguous load, block maxima in the ordered-integer domain, one ``tl.topk``, ids) at 8 / 4 warps;
  ``min8_flags``: the same zeroing and setting the flags (8-byte words);
* ``load8``: the minimal kernel without the top-k (writes each row's best key): the load's share.

Every arm but ``load8`` is checked against the exact reference (poisoned output, every slot; flags byte for byte)
before timing.  Experimental kernel, kept in this dev script until a measurement says where it belongs.
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
from dsa_lab.flags import candidate_flags_torch  # noqa: E402
from dsa_lab.flags_triton import tl_zero_flags  # noqa: E402
from dsa_lab.keys_triton import tl_is_candidate, tl_key_index  # noqa: E402
from dsa_lab.scores_triton import block_scores_triton  # noqa: E402
from dsa_lab.select import select_candidate_blocks  # noqa: E402
from dsa_lab.select_triton import (_direct_keys_1d, _flags_set, _launch, _row_extent, _write_out,  # noqa: E402
                                   select_candidate_blocks_triton)
from dsa_lab.sweep import BLOCK_SIZE, MML, Point, full_stage_inputs  # noqa: E402
from dsa_lab.verify import compare  # noqa: E402

POISON = 0x7EADBEEF
_FZT = tl.constexpr(4096)  # bytes of flags zeroed per loop iteration
_WORDS = tl.constexpr(1)  # tl_zero_flags MODE 1: 8-byte words (the flags tensor is 16-byte aligned)
_LEN_ENDS = tl.constexpr(2)  # _row_extent: the extent from row ends


@triton.jit(do_not_specialize=["width", "n", "k"])
def _min_direct_kernel(x_ptr, x_stride, end_ptr, out_ptr, flags_ptr, width, n, k,
                       DT: tl.constexpr, BS: tl.constexpr, KP: tl.constexpr, FLAGS: tl.constexpr,
                       TOPK: tl.constexpr):
    """One program per row whose live extent is at most DT blocks (start 0, row_repeat 1), built from the select
    kernel's own helpers and nothing else: the bounds, the direct path's one contiguous load with block maxima in the
    ordered-integer domain, one ``tl.topk``, the ids (and flags).  (``fused_direct_dev.csv`` was written by ede7de7's
    copy of this kernel, which spelled those helpers out inline: the same operations.)"""
    row = tl.program_id(0)
    L, start, end = _row_extent(row, end_ptr, end_ptr, n, width, _LEN_ENDS, False, 1, BS)
    if FLAGS:
        tl_zero_flags(flags_ptr, row, 0, n + 1, n, _FZT, _WORDS)
    key = _direct_keys_1d(x_ptr, row.to(tl.int64) * x_stride, L, start, end, width, DT, BS)
    if TOPK:
        top = tl.topk(key, KP)
        _write_out(out_ptr, row, top, k, KP)
        if FLAGS:
            tl.debug_barrier()
            _flags_set(flags_ptr, row, tl_key_index(top), (tl.arange(0, KP) < k) & tl_is_candidate(top), start,
                       width, n, BS)
    else:  # the load and block maxima alone: one value per row, so the compiler keeps them
        j = tl.arange(0, KP)
        tl.store(out_ptr + row.to(tl.int64) * k + j, tl.max(key).to(tl.int32), mask=j < 1)


def min_direct(x, ends, k, out, flags=None, num_warps=8, topk=True):
    rows, width = x.shape
    n = -(-width // BLOCK_SIZE)
    _min_direct_kernel[(rows,)](x, x.stride(0), ends, out, flags if flags is not None else out, width, n, k,
                                DT=512, BS=BLOCK_SIZE, KP=max(2, triton.next_power_of_2(k)),
                                FLAGS=flags is not None, TOPK=topk, num_warps=num_warps)
    return out if flags is None else (out, flags)


def arms(x, E, k, out, flags, sc):
    n = -(-x.shape[1] // BLOCK_SIZE)
    return {
        "unfused": lambda: select_candidate_blocks_triton(x, E, k, None, BLOCK_SIZE, 1, out, fused=False),
        "unfused_flags": lambda: select_candidate_blocks_triton(x, E, k, None, BLOCK_SIZE, 1, out, fused=False,
                                                                with_flags=True, flags_out=flags),
        "fused": lambda: select_candidate_blocks_triton(x, E, k, None, BLOCK_SIZE, 1, out, fused=True),
        "fused_flags": lambda: select_candidate_blocks_triton(x, E, k, None, BLOCK_SIZE, 1, out, fused=True,
                                                              with_flags=True, flags_out=flags),
        "fused_p1": lambda: select_candidate_blocks_triton(x, E, k, None, BLOCK_SIZE, 1, out, fused=True,
                                                           config={"programs": 1}),
        "fused_w4": lambda: select_candidate_blocks_triton(x, E, k, None, BLOCK_SIZE, 1, out, fused=True,
                                                           config={"num_warps": 4}),
        "fused_p1_flags": lambda: select_candidate_blocks_triton(x, E, k, None, BLOCK_SIZE, 1, out, fused=True,
                                                                 with_flags=True, flags_out=flags,
                                                                 config={"programs": 1}),
        "select": lambda: _launch(sc, E, None, out, x.shape[0], n, x.shape[1], k, 1, 2, False, BLOCK_SIZE, None),
        "min8": lambda: min_direct(x, E, k, out),
        "min4": lambda: min_direct(x, E, k, out, num_warps=4),
        "min8_flags": lambda: min_direct(x, E, k, out, flags),
        "load8": lambda: min_direct(x, E, k, out, topk=False),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="build/tune_dev")
    ap.add_argument("--max-s", type=float, default=240.0)
    ap.add_argument("--smoke", action="store_true", help="CPU interpreter: checks only, two small points")
    ap.add_argument("--rows", default="1,32,64,128,640")
    ap.add_argument("--context", type=int, default=4096)
    ap.add_argument("--arms", default=None, help="a,b,...: only these arms")
    a = ap.parse_args()
    dev, mml = ("cpu", 4096) if a.smoke else ("cuda", MML)
    rows_list = [1, 3] if a.smoke else [int(v) for v in a.rows.split(",")]
    os.makedirs(a.out, exist_ok=True)
    t0 = time.time()
    f = open(os.path.join(a.out, "fused_direct_dev.csv"), "w", newline="")
    w = csv.DictWriter(f, fieldnames=["context", "rows", "k", "arm", "median_us", "p10_us", "p90_us", "check"])
    w.writeheader()
    k = 64
    for i, rows in enumerate(rows_list):
        if time.time() - t0 > a.max_s:
            print("stopped at the time limit", flush=True)
            break
        p = Point("full", "full", min(a.context, mml), rows, 1, k, "normal")
        inp = full_stage_inputs(p, mml, 9100 + i, dev)
        x, E = inp["logits"], inp["ends"]
        ref = select_candidate_blocks(x, E, k, block_size=BLOCK_SIZE, impl="reference")
        n = -(-x.shape[1] // BLOCK_SIZE)
        want_flags = candidate_flags_torch(ref, x.shape[1], None, BLOCK_SIZE, 1)
        sc = block_scores_triton(x, E, None, BLOCK_SIZE, 1, fill_dead=False)
        out = torch.empty((rows, k), dtype=torch.int32, device=dev)
        flags = torch.empty((rows, n + 1), dtype=torch.uint8, device=dev)
        res = {}
        for name, fn in arms(x, E, k, out, flags, sc).items():
            if a.arms and name not in a.arms.split(","):
                continue
            out.fill_(POISON)
            flags.fill_(0xAB)
            check = "timing only"
            try:
                got = fn()
                if dev == "cuda":
                    torch.cuda.synchronize()
                if name != "load8":
                    nbad, msg = compare(out, ref)
                    if not nbad and name.endswith("_flags"):
                        nbad = int((got[1] != want_flags).any(dim=1).sum())
                        msg = "flags differ" if nbad else msg
                    check = "ok" if not nbad else f"mismatch {nbad}/{rows}: {msg[:100]}"
            except Exception as e:
                check = f"error {type(e).__name__}: {str(e)[:160]}"
            if check not in ("ok", "timing only"):
                print(f"  rows {rows} {name}: {check}", flush=True)
                continue
            if a.smoke:
                print(f"  rows {rows} {name}: {check}", flush=True)
                continue
            tm = bench.time_cuda_graph(fn, rep_ms=10.0, max_replays=60)
            res[name] = tm.median_us
            w.writerow({"context": p.context, "rows": rows, "k": k, "arm": name, "median_us": round(tm.median_us, 3),
                        "p10_us": round(tm.p10_us, 3), "p90_us": round(tm.p90_us, 3), "check": check})
        f.flush()
        if res:
            print(f"ctx {p.context} r{rows:<4} " + " ".join(f"{nm}={v:.2f}" for nm, v in res.items()), flush=True)
    f.close()
    if not a.smoke:
        meta = data.collect_metadata(" ".join(["python3"] + sys.argv), {
            "timing": "cuda graph (dsa_lab.bench.time_cuda_graph, rep 10 ms)", "note": "dev run, not the recorded sweep"})
        with open(os.path.join(a.out, "fused_direct_dev.meta.json"), "w") as fm:
            json.dump(meta, fm, indent=1)
    print(f"done in {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
