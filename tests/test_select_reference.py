"""The exact reference and the torch before-arm: hand-worked rules of docs/design.md §2, randomized agreement,
and where CPU torch.topk's tie order departs from the contract."""
import pytest
import torch

import dsa_lab
from dsa_lab.flags import candidate_flags_torch
from dsa_lab.scores import block_scores_torch
from dsa_lab.select import topk_select_reference, topk_select_torch

INF, NAN = float("inf"), float("nan")


def as_set(ids):
    return [sorted(x for x in row if x != -1) for row in ids.tolist()]


# --- rule 1: columns at or past L are never candidates, whatever they hold
def test_rule1_columns_past_length_ignored():
    s = torch.tensor([[1.0, 2.0, NAN, INF, 9.0]])
    out = dsa_lab.topk_select(s, 3, lengths=torch.tensor([2]), impl="reference")
    assert out.tolist() == [[1, 0, -1]]


# --- rule 2: -inf live columns are padding
def test_rule2_neg_inf_never_selected():
    s = torch.tensor([[-INF, 0.5, -INF, -1e30]])
    assert dsa_lab.topk_select(s, 4, impl="reference").tolist() == [[1, 3, -1, -1]]


# --- rule 3: ordered(score) descending, ties to the smaller index; NaN > +inf; -0 < +0
def test_rule3_ties_to_smaller_index():
    s = torch.tensor([[3.0, 5.0, 3.0, 5.0, 3.0]])
    assert dsa_lab.topk_select(s, 3, impl="reference").tolist() == [[1, 3, 0]]


def test_rule3_nan_above_inf_and_nans_tie():
    nan_neg = torch.tensor([-1], dtype=torch.int32).view(torch.float32)[0]  # 0xFFFFFFFF, a negative NaN
    s = torch.tensor([[INF, NAN, 1.0, float(nan_neg), INF]])
    assert dsa_lab.topk_select(s, 3, impl="reference").tolist() == [[1, 3, 0]]


def test_rule3_negative_zero_below_positive_zero():
    s = torch.tensor([[-0.0, -0.0, 0.0, -1.0]])
    assert dsa_lab.topk_select(s, 2, impl="reference").tolist() == [[2, 0]]


# --- rule 4: first min(k, #candidates), rest -1
def test_rule4_k_above_candidates_and_width():
    s = torch.tensor([[2.0, -INF, 1.0]])
    assert dsa_lab.topk_select(s, 5, impl="reference").tolist() == [[0, 2, -1, -1, -1]]


def test_row_repeat_shares_lengths():
    s = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    out = dsa_lab.topk_select(s, 2, lengths=torch.tensor([1, 3]), row_repeat=2, impl="reference")
    assert out.tolist() == [[0, -1], [0, -1], [2, 1], [2, 1]]


def test_out_is_written_and_returned():
    s = torch.randn(3, 10)
    out = torch.full((3, 4), 12345, dtype=torch.int32)
    r = dsa_lab.topk_select(s, 4, impl="reference", out=out)
    assert r is out and bool((out != 12345).all())


# --- block scores: hand-worked example of every rule
def test_block_scores_hand_worked():
    lg = torch.tensor([[1.0, 5.0, 2.0, NAN, 7.0, 0.0, 3.0, 9.0, 8.0, 4.0]])
    # start 1, end 8, block_size 3: blocks cover [1,4) [4,7) [7,8); newest = (8-1-1)//3 = 2 → +inf
    sc = dsa_lab.block_scores(lg, torch.tensor([8]), row_starts=torch.tensor([1]), block_size=3, impl="torch")
    assert sc.shape == (1, 4)
    assert torch.isnan(sc[0, 0])  # NaN propagates
    assert sc[0, 1].item() == 7.0
    assert sc[0, 2].item() == INF  # newest block pinned
    assert sc[0, 3].item() == -INF  # no live column


def test_block_scores_empty_row_and_end_past_width():
    lg = torch.arange(16, dtype=torch.float32).reshape(2, 8)
    sc = dsa_lab.block_scores(lg, torch.tensor([0, 100]), block_size=4, impl="torch")
    assert sc[0].tolist() == [-INF, -INF]  # end == start: nothing pinned
    assert sc[1].tolist() == [15.0, 15.0 - 0.0] or sc[1, 0].item() == 11.0
    assert sc[1, 0].item() == 11.0 and sc[1, 1].item() == 15.0  # newest (99//4=24) is past nblocks: not pinned


def test_candidate_flags_sentinel():
    c = torch.tensor([[0, 2, -1], [1, -1, -1]], dtype=torch.int32)
    # width 10, bs 4 → nblocks 3; row 1 starts at 7: block 1 begins at 11 >= 10 → sentinel slot 3
    f = dsa_lab.candidate_flags(c, 10, row_starts=torch.tensor([0, 7]), block_size=4, impl="torch")
    assert f.dtype == torch.uint8 and f.tolist() == [[1, 0, 1, 0], [0, 0, 0, 1]]


# --- randomized agreement of the two arms where ties cannot occur
@pytest.mark.parametrize("rows,n,k", [(1, 50, 7), (8, 300, 64), (5, 1000, 512), (3, 40, 100)])
def test_reference_and_torch_agree_without_ties(rows, n, k, fresh_seed):
    s = torch.randn(rows, n)  # continuous: ties have probability ~0
    L = torch.randint(0, n + 1, (rows,))
    ref = topk_select_reference(s, k, L)
    tor = topk_select_torch(s, k, L)
    assert as_set(ref) == as_set(tor), f"seed {fresh_seed}"


def test_reference_equals_a_literal_stable_sort(fresh_seed):
    """The reference is a stable sort on (ordered desc, index asc): rebuild it with Python's sort."""
    s = torch.randint(0, 5, (4, 60)).to(torch.float32)
    s[0, 3] = NAN
    s[1, ::7] = -INF
    s[2, 5] = -0.0
    L = torch.tensor([60, 41, 17, 0])
    got = topk_select_reference(s, 10, L)
    o = dsa_lab.ordered_bits(s)
    for r in range(4):
        cand = [c for c in range(int(L[r])) if s[r, c].item() != -INF]
        want = sorted(cand, key=lambda c: (-int(o[r, c]), c))[:10]
        assert got[r].tolist() == want + [-1] * (10 - len(want)), f"row {r}, seed {fresh_seed}"


def test_cpu_torch_topk_tie_order_departs_from_contract():
    """Documented finding: CPU torch.topk on an all-equal row does not keep the smallest indices,
    and treats -0.0 and +0.0 as equal; the contract (and CUDA torch.topk, measured) does not."""
    s = torch.full((1, 10), 1.0)
    ref = topk_select_reference(s, 8)
    cpu = topk_select_torch(s, 8)
    assert as_set(ref) == [list(range(8))]
    assert as_set(cpu) != as_set(ref), "CPU torch.topk now keeps the smallest tied indices: update the docs"
    z = torch.tensor([[-0.0, 0.0, -0.0, 0.0]])
    assert as_set(topk_select_reference(z, 2)) == [[1, 3]]


def test_full_pipeline_reference_composition():
    lg = torch.randn(4, 200)
    ends = torch.tensor([200, 55, 0, 9])
    ids = dsa_lab.select_candidate_blocks(lg, ends, 5, block_size=8, impl="reference")
    sc = block_scores_torch(lg, ends, None, 8, 1)
    assert as_set(ids) == as_set(topk_select_reference(sc, 5))
    assert ids[2].tolist() == [-1] * 5
    f = candidate_flags_torch(ids, 200)
    assert int(f.sum()) == int((ids >= 0).sum())
