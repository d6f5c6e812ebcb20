"""Where a bisect-select row's time goes: the bisect kernel cut after each stage, at the widest register tile
(evidence for the notes; not product code).

    python3 scripts/gpu_bisect_stages.py OUT.csv [--rows 132,264,640] [--k 2048,512] [--dists normal,equal,ramp,nan1pct]

Variants (one program per row of 32768 columns, the product's tiles and helpers, compiled as the product is):
``load`` (the four chunks and the sampled law's sums), ``pass`` (+ the law's two probes counted, the bracket, the
tie cut and the pass that writes the ids above the middle and the middle's columns), ``middle`` (+ the middle's
search and the -1 tail: the whole select), ``middle_pf`` (the same with row ``r + SMs`` prefetched into L2 after the
pass, while the middle is searched: CUDA only), ``full`` (the product's launch).  Each row: CUDA-graph median per
call and per wave of one row per SM (every output is checked against ``torch.topk`` where the values are distinct).
Needs a CUDA GPU.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dsa_lab.bench import data, timing  # noqa: E402
from dsa_lab.bench.shapes import fill  # noqa: E402
from dsa_lab.kernels import bisect as B  # noqa: E402
from dsa_lab.kernels.common import fill_tail  # noqa: E402


@triton.jit
def _prefetch(src_ptr, off):
    cols = tl.arange(0, 1024) * 32  # one address per 128-byte line of a 32768-column row
    tl.inline_asm_elementwise("prefetch.global.L2 [$1]; mov.u32 $0, 0;", "=r,l", [src_ptr + off + cols],
                              dtype=tl.int32, is_pure=False, pack=1)


@triton.jit(do_not_specialize=["src_stride", "n", "k", "rows", "pf_step"])
def _cut_kernel(src_ptr, src_stride, out_ptr, mid_ptr, n, k, rows, pf_step, STOP: tl.constexpr, PF: tl.constexpr,
                MC: tl.constexpr, KT: tl.constexpr, WS: tl.constexpr, NW: tl.constexpr):
    row = tl.program_id(0)
    row_off = row.to(tl.int64) * src_stride
    orow = out_ptr + row.to(tl.int64) * k
    mrow = mid_ptr + row.to(tl.int64) * MC
    L = (tl.zeros([], tl.int64) + n).to(tl.int32)
    if STOP == 0:
        CW: tl.constexpr = 8192
        h0, h1, h2, h3, s1, s2 = B._row_words(src_ptr, row_off, L, CW, WS, NW, True)
        s = s1 + s2
        mx = tl.max(tl.maximum(tl.maximum(h0, h1), tl.maximum(h2, h3)))  # (keeps every word's load)
        tl.store(orow, mx + s.to(tl.int32))
    else:
        # the product's three tiles, as it compiles them
        if L <= 2048:
            lo, hi1, c_lo, c_hi, one = B._bracket_and_pass(
                src_ptr, row_off, out_ptr, mid_ptr, L, k, 2048, 0, False, False, MC, WS, NW)
        elif L <= 8192:
            lo, hi1, c_lo, c_hi, one = B._bracket_and_pass(
                src_ptr, row_off, out_ptr, mid_ptr, L, k, 8192, MC, False, True, MC, WS, NW)
        else:
            lo, hi1, c_lo, c_hi, one = B._bracket_and_pass(
                src_ptr, row_off, out_ptr, mid_ptr, L, k, 32768, MC, True, True, MC, WS, NW)
        if PF:
            if row + pf_step < rows:
                _prefetch(src_ptr, (row + pf_step).to(tl.int64) * src_stride)
        if STOP == 2:
            tl.store(orow, c_lo + c_hi + one.to(tl.int32))
        else:
            B._middle(src_ptr, row_off, orow, mrow, L, k, lo, hi1, c_lo, c_hi, one, MC)
            fill_tail(out_ptr, row.to(tl.int64) * k, tl.minimum(c_lo, k), k, KT)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--rows", default="132,264,640")
    ap.add_argument("--k", default="2048,512")
    ap.add_argument("--dists", default="normal,equal")
    a = ap.parse_args()
    dev = torch.device("cuda")
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    meta = data.collect_metadata("python3 scripts/gpu_bisect_stages.py " + " ".join(sys.argv[1:]))
    data.save_meta(data.meta_path(a.out), meta)
    n = 32768
    for dist in a.dists.split(","):
        for rows in [int(r) for r in a.rows.split(",")]:
            g = torch.Generator(device=dev).manual_seed(rows)
            sc = fill(dist, rows, n, gen=g)
            for k in [int(x) for x in a.k.split(",")]:
                out = torch.empty((rows, k), dtype=torch.int32, device=dev)
                mid = torch.empty((rows, B.MID_CAP), dtype=torch.int32, device=dev)
                ref = torch.topk(sc, k, dim=1).indices.sort(1).values
                fns = {}
                for name, stop, pf in [("load", 0, False), ("pass", 2, False), ("middle", 3, False),
                                       ("middle_pf", 3, True)]:
                    def fn(stop=stop, pf=pf):
                        _cut_kernel[(rows,)](sc, sc.stride(0), out, mid, n, k, rows, sms, STOP=stop, PF=pf,
                                             MC=B.MID_CAP, KT=B.KT, WS=32, NW=16, num_warps=16)
                    fns[name] = fn
                fns["full"] = lambda: B.launch(sc, None, None, out, None, n, n, k, 1, blocks=False, bs=1)
                for name, fn in fns.items():
                    out.fill_(-7)
                    fn()
                    torch.cuda.synchronize()
                    check = ""
                    if name in ("middle", "middle_pf", "full") and dist in ("normal", "shifted", "ramp"):
                        check = "ok" if torch.equal(out.long().sort(1).values, ref) else "mismatch"
                    t = timing.time_fn(fn)
                    waves = -(-rows // sms)
                    row = dict(dist=dist, rows=rows, n=n, k=k, variant=name, median_us=round(t.median_us, 3),
                               per_wave_us=round(t.median_us / waves, 3), waves=waves, check=check,
                               commit=meta.get("commit"))
                    data.append_row(a.out, row)
                    print(row, flush=True)


if __name__ == "__main__":
    main()
