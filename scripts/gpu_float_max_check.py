"""Why block scores take their max over ordered integers: what a float max does on this GPU.

    python3 scripts/gpu_float_max_check.py OUT.json

Reduces a few 4-wide blocks (signed zeros, subnormals, NaN) three ways on the present CUDA device:
``torch.amax``, a Triton ``tl.max`` (the NaN-tracking float max the block-scores kernel used before
2026-11-29), and the integer max in the contract order (:func:`dsa_lab.keys.ordered_hi`, what the
kernels use now); writes every result's bits and whether each float max equals the contract order.
The GPU fuzz of 2026-11-29 found candidate sets that differed between the Triton kernels and the
torch reference on signed-zero / subnormal inputs; this isolates the cause.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from dsa_lab.bench import data  # noqa: E402
from dsa_lab.keys import from_ordered_hi, ordered_hi  # noqa: E402

BLOCKS = {
    "-0,+0,-0,-0": [0x80000000, 0x00000000, 0x80000000, 0x80000000],
    "+0,-0,-0,-0": [0x00000000, 0x80000000, 0x80000000, 0x80000000],
    "subnormals 3,7,1,-0": [0x00000003, 0x00000007, 0x00000001, 0x80000000],
    "neg subnormals -5,-2,-9,-3": [0x80000005, 0x80000002, 0x80000009, 0x80000003],
    "-5s,-0,-9s,-3s": [0x80000005, 0x80000000, 0x80000009, 0x80000003],
    "1s,-1,-inf,-1s": [0x00000001, 0xBF800000, 0xFF800000, 0x80000001],
    "+0,1s,+0,+0": [0x00000000, 0x00000001, 0x00000000, 0x00000000],
}


@triton.jit
def _float_max(x_ptr, o_ptr, BS: tl.constexpr, NB: tl.constexpr):
    j = tl.arange(0, NB)
    t = tl.arange(0, BS)
    x = tl.load(x_ptr + j[:, None] * BS + t[None, :])
    isn = x != x  # the pre-fix tl_block_score: NaN tracked apart, then a float max
    has_nan = tl.max(isn.to(tl.int32), axis=1) > 0
    s = tl.max(tl.where(isn, float("-inf"), x), axis=1)
    tl.store(o_ptr + j, tl.where(has_nan, float("nan"), s))


def _hex(t):
    return [f"0x{(int(v) & 0xFFFFFFFF):08X}" for v in t.view(torch.int32).cpu().tolist()]


def main(out_path):
    dev = torch.device("cuda")
    names = list(BLOCKS)
    bits = torch.tensor([b for n in names for b in BLOCKS[n]], dtype=torch.int64).to(torch.int32)
    x = bits.view(torch.float32).reshape(len(names), 4).to(dev)
    contract = from_ordered_hi(ordered_hi(x).amax(dim=1))
    amax = x.amax(dim=1)
    nbp = triton.next_power_of_2(len(names))
    xp = torch.full((nbp, 4), float("-inf"), device=dev)
    xp[: len(names)] = x
    tmax = torch.empty(nbp, device=dev)
    _float_max[(1,)](xp, tmax, BS=4, NB=nbp)
    tmax = tmax[: len(names)]
    rows = []
    for i, n in enumerate(names):
        c, a, t = (_hex(v[i : i + 1])[0] for v in (contract, amax, tmax))
        rows.append({"block": n, "contract": c, "torch_amax": a, "triton_tl_max": t,
                     "torch_amax_ok": a == c, "triton_tl_max_ok": t == c})
        print(f"{n:<28} contract {c}  torch.amax {a}{'' if a == c else ' !'}  tl.max {t}{'' if t == c else ' !'}")
    rec = {"meta": data.collect_metadata("python3 scripts/gpu_float_max_check.py " + out_path), "rows": rows}
    os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(rec, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/h200/float_max_check.json")
