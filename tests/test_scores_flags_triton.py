"""Triton block scores (bounded and padded) and candidate flags against the torch contract code."""
import pytest
import torch

import dsa_lab
from dsa_lab.flags import candidate_flags_torch
from dsa_lab.flags_triton import candidate_flags_triton
from dsa_lab.scores import block_scores_torch
from dsa_lab.scores_triton import block_scores_triton

INF, NAN = float("inf"), float("nan")


def same_bits(a, b):
    """Equal including NaN positions (NaN payloads are not part of the contract) and signed zeros."""
    both_nan = a.isnan() & b.isnan()
    eq = (a == b) & (torch.signbit(a) == torch.signbit(b))
    return bool((both_nan | eq).all())


CASES = [
    # rows, width, bs, rr, ends, starts
    (4, 100, 8, 1, [100, 37, 0, 1], None),
    (4, 100, 8, 2, [250, 9], [3, 9]),          # end past width; start == end (empty row)
    (6, 333, 3, 3, [333, 120], [17, 0]),        # width not a multiple of bs, start not block aligned
    (2, 64, 1, 1, [64, 10], [5, 0]),
    (2, 130, 64, 1, [130, 65], [1, 64]),
    (3, 50, 16, 1, [1, 50, 49], [0, 49, 0]),
]


@pytest.mark.parametrize("rows,width,bs,rr,ends,starts", CASES)
@pytest.mark.parametrize("padded", [False, True], ids=["bounded", "padded"])
def test_block_scores_match_torch(rows, width, bs, rr, ends, starts, padded, fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    x = torch.randn(rows, width, generator=gen)
    x[torch.rand(rows, width, generator=gen) < 0.05] = NAN
    x[torch.rand(rows, width, generator=gen) < 0.05] = -0.0
    e = torch.tensor(ends, dtype=torch.int32)
    s = None if starts is None else torch.tensor(starts, dtype=torch.int64)
    got = block_scores_triton(x, e, s, bs, rr, padded=padded)
    want = block_scores_torch(x, e, s, bs, rr)
    assert got.shape == want.shape and got.dtype == torch.float32
    assert same_bits(got, want), f"seed={fresh_seed}\n{got}\n{want}"


def test_block_scores_garbage_past_end_and_public_api():
    x = torch.randn(2, 64)
    x[0, 20:] = NAN
    x[1, 5:] = INF
    e = torch.tensor([20, 5])
    for padded in (False, True):
        got = block_scores_triton(x, e, None, 8, 1, padded=padded)
        assert same_bits(got, block_scores_torch(x, e, None, 8, 1))
        assert not got[:, 3:].isnan().any()  # blocks past the end are -inf, never the garbage
    assert same_bits(dsa_lab.block_scores(x, e, impl="triton"), block_scores_torch(x, e))


def test_block_scores_nan_propagates_and_newest_pinned():
    x = torch.zeros(1, 32)
    x[0, 3] = NAN
    got = block_scores_triton(x, torch.tensor([30]), None, 8, 1)
    assert got[0, 0].isnan() and got[0, 3] == INF and got[0, 1] == 0.0


FLAG_CASES = [
    # rows, width, bs, rr, starts, candidates
    (2, 100, 8, 1, None, [[0, 12, -1, 5], [-1, -1, -1, -1]]),
    (2, 100, 8, 2, [60], [[7, 8, 12, 0], [3, 3, 3, -1]]),  # start 60: blocks >= 5 land in the sentinel
    (1, 17, 1, 1, [0], [[16, 0, -1]]),
]


@pytest.mark.parametrize("rows,width,bs,rr,starts,cands", FLAG_CASES)
def test_flags_match_torch(rows, width, bs, rr, starts, cands):
    c = torch.tensor(cands, dtype=torch.int32)
    s = None if starts is None else torch.tensor(starts)
    got = candidate_flags_triton(c, width, s, bs, rr)
    want = candidate_flags_torch(c, width, s, bs, rr)
    assert got.dtype == torch.uint8 and got.shape == want.shape
    assert torch.equal(got, want)


def test_flags_random_and_public_api(fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs, k, rr = 6, 1000, 8, 300, 3
    nb = -(-width // bs)
    c = torch.randint(-1, nb, (rows, k), generator=gen)
    s = torch.randint(0, 500, (rows // rr,), generator=gen)
    got = dsa_lab.candidate_flags(c, width, row_starts=s, block_size=bs, row_repeat=rr, impl="triton")
    assert torch.equal(got, candidate_flags_torch(c, width, s, bs, rr)), f"seed={fresh_seed}"


@pytest.mark.gpu
def test_gpu_block_scores_large():
    rows, width = 64, 262144
    x = torch.randn(rows, width, device="cuda")
    e = torch.randint(0, 2 * width, (rows,), device="cuda", dtype=torch.int32)
    s = (e.clamp(max=width) // 3).to(torch.int32)
    want = block_scores_torch(x, e, s, 8, 1)
    for padded in (False, True):
        assert same_bits(block_scores_triton(x, e, s, 8, 1, padded=padded), want)
