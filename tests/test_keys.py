"""Packed keys: contract order on special values, round trip, capacity, Triton twin bit for bit.

The exhaustive check over all 2**32 float32 patterns lives in tests/test_proofs.py (a
structured subset on CPU, the full range under the `gpu` marker).
"""
import math
import struct

import pytest
import torch
import triton
import triton.language as tl

import dsa_lab
from dsa_lab import keys
from dsa_lab.kernels import common as kt

NAN = float("nan")


def f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def t_bits(bits_list):
    b = torch.tensor([b - (1 << 32) if b >= 1 << 31 else b for b in bits_list], dtype=torch.int32)
    return b.view(torch.float32)


# Ascending contract order of distinct keys: each entry ranks strictly below the next.
ASCENDING_BITS = [
    0xFF800000,  # -inf
    0xFF7FFFFF,  # -max finite
    0xBF800000,  # -1
    0x80800000,  # -min normal
    0x807FFFFF,  # -max denormal
    0x80000001,  # -min denormal
    0x80000000,  # -0.0
    0x00000000,  # +0.0
    0x00000001,  # +min denormal
    0x007FFFFF,  # +max denormal
    0x00800000,  # +min normal
    0x3F800000,  # 1
    0x7F7FFFFF,  # +max finite
    0x7F800000,  # +inf
    0x7FC00000,  # NaN (canonical): above +inf
]
NAN_BITS = [0x7FC00000, 0x7F800001, 0x7FFFFFFF, 0xFFC00000, 0xFF800001, 0xFFFFFFFF, 0x7FA5A5A5, 0xFFD00D00]


def test_ordered_bits_strictly_ascending_on_special_values():
    o = dsa_lab.ordered_bits(t_bits(ASCENDING_BITS))
    assert o.dtype == torch.int64
    assert bool((o[1:] > o[:-1]).all()), o.tolist()
    assert int(o.min()) >= 0 and int(o.max()) <= 2**32 - 1


def test_ordered_bits_formula_on_special_values():
    for b in ASCENDING_BITS:
        want = b ^ (0xFFFFFFFF if b >> 31 else 0x80000000)
        if math.isnan(f32(b)):
            want = 0xFFFFFFFF
        assert int(dsa_lab.ordered_bits(t_bits([b]))[0]) == want, hex(b)


def test_every_nan_payload_and_sign_ties_above_inf():
    o = dsa_lab.ordered_bits(t_bits(NAN_BITS))
    assert set(o.tolist()) == {0xFFFFFFFF}
    assert int(o[0]) > int(dsa_lab.ordered_bits(torch.tensor([float("inf")]))[0])


def test_key_order_is_contract_order_on_specials_and_ties():
    vals = t_bits(ASCENDING_BITS + NAN_BITS)
    n = vals.numel()
    # every value at two indices: ties must go to the smaller index
    scores = torch.cat([vals, vals])
    idx = torch.cat([torch.arange(n), torch.arange(n) + 1000])
    k = dsa_lab.pack_keys(scores, idx)
    o = dsa_lab.ordered_bits(scores)
    for i in range(2 * n):
        for j in range(2 * n):
            contract_before = (int(o[i]) > int(o[j])) or (int(o[i]) == int(o[j]) and int(idx[i]) < int(idx[j]))
            assert (int(k[i]) > int(k[j])) == contract_before, (i, j)


def test_pack_unpack_round_trip_random_and_special(fresh_seed):
    bits = torch.randint(-(2**31), 2**31, (100_000,), dtype=torch.int64).to(torch.int32)
    x = torch.cat([bits.view(torch.float32), t_bits(ASCENDING_BITS + NAN_BITS)])
    idx = torch.randint(0, 2**32, (x.numel(),), dtype=torch.int64)
    s, i = dsa_lab.unpack_keys(dsa_lab.pack_keys(x, idx))
    assert torch.equal(i, idx)
    nan = torch.isnan(x)
    assert torch.equal(torch.isnan(s), nan)
    assert torch.equal(s[~nan].view(torch.int32), x[~nan].view(torch.int32)), f"seed {fresh_seed}"
    assert set(s[nan].view(torch.int32).tolist()) <= {0x7FC00000}


def test_index_capacity_limits():
    x = torch.zeros(2)
    assert int(keys.key_index(dsa_lab.pack_keys(x, torch.tensor([0, keys.MAX_INDEX])))[1]) == 2**32 - 1
    with pytest.raises(ValueError, match="MAX_INDEX=4294967295"):
        dsa_lab.pack_keys(x, torch.tensor([0, 2**32]))
    with pytest.raises(ValueError, match="MAX_INDEX"):
        dsa_lab.pack_keys(x, torch.tensor([-1, 0]))


def test_padding_encodings():
    k = dsa_lab.pack_keys(torch.tensor([float("-inf"), -3.4028235e38, NAN]), torch.tensor([0, 0, 5]))
    assert keys.is_candidate(k).tolist() == [False, True, True]
    assert int(k[0]) < keys.CANDIDATE_MIN <= int(k[1])
    assert keys.PAD_KEY < int(k.min())
    assert not bool(keys.is_candidate(torch.tensor([keys.PAD_KEY])))


def test_pack_keys_rejects_bad_input():
    with pytest.raises(TypeError, match="scores"):
        dsa_lab.pack_keys(torch.zeros(2, dtype=torch.float64), torch.arange(2))
    with pytest.raises(TypeError, match="index"):
        dsa_lab.pack_keys(torch.zeros(2), torch.zeros(2))
    with pytest.raises(ValueError, match="index shape"):
        dsa_lab.pack_keys(torch.zeros(2), torch.arange(3))
    with pytest.raises(TypeError, match="keys"):
        dsa_lab.unpack_keys(torch.zeros(2, dtype=torch.int32))


@triton.jit
def _pack(x_ptr, key_ptr, hi_ptr, idx_ptr, cand_ptr, N: tl.constexpr, OFF: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(x_ptr + o)
    key = kt.tl_pack_key(x, o.to(tl.int64) + OFF)
    tl.store(key_ptr + o, key)
    tl.store(hi_ptr + o, kt.tl_ordered_hi(x))
    tl.store(idx_ptr + o, kt.tl_key_index(key))
    tl.store(cand_ptr + o, kt.tl_is_candidate(key).to(tl.int8))


def test_triton_helpers_agree_bit_for_bit(fresh_seed):
    """The @triton.jit packing (kernels' twin) equals pack_keys on every slot."""
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    n = 1024
    bits = torch.randint(-(2**31), 2**31, (n,), dtype=torch.int64).to(torch.int32)
    x = bits.view(torch.float32)
    sp = t_bits(ASCENDING_BITS + NAN_BITS)
    x[: sp.numel()] = sp
    x = x.to(dev)
    off = 2**32 - 2048  # near the top of the index range
    key = torch.empty(n, dtype=torch.int64, device=dev)
    hi = torch.empty(n, dtype=torch.int32, device=dev)
    idx = torch.empty(n, dtype=torch.int64, device=dev)
    cand = torch.empty(n, dtype=torch.int8, device=dev)
    _pack[(1,)](x, key, hi, idx, cand, N=n, OFF=off)
    want = dsa_lab.pack_keys(x.cpu(), torch.arange(n) + off)
    assert torch.equal(key.cpu(), want), f"seed {fresh_seed}"
    assert torch.equal(hi.cpu().to(torch.int64), keys.ordered_hi(x.cpu()))
    assert torch.equal(idx.cpu(), torch.arange(n) + off)
    assert torch.equal(cand.cpu().bool(), keys.is_candidate(want))


def test_kernel_layout_constants_match_the_keys_module():
    """The kernels keep the key layout's constants themselves (they import nothing above them): the same values."""
    assert kt.PAD.value == keys.PAD_KEY == -(2**63)
    assert kt.NEG_HI.value == keys.NEG_INF_HI
    assert kt.NO_WORD.value < keys.NEG_INF_HI  # below every float's ordered word, -inf's the lowest
