"""Property-based tests (hypothesis) of the Triton selection arms under the interpreter: random small
shapes, lengths, k, row_repeat, value pools heavy in ties/NaN/±inf/signed zeros, and random test hooks
(:func:`dsa_lab.plans.select`'s forced choices) so every kernel path is drawn.  Property: the selected set equals the
exact reference's, every slot written."""
import torch
from _select_helpers import assert_same_sets, blocks_triton, poisoned, topk_triton
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st_

from dsa_lab import plans
from dsa_lab.scores import block_scores_torch
from dsa_lab.select import topk_select_reference

POOL = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.0, -1.0, 2.0, 1e-45, -3.5]
CONFIGS = [
    None,
    {"direct": 4, "group": 2, "programs": 3},
    {"direct": 2, "group": 2, "programs": 3, "fast": True},
    {"direct": 2, "group": 8, "programs": 2},
    {"direct": 8, "group": 4, "programs": 1, "l1p": 2},
    {"direct": 2, "group": 1, "programs": 2},
    {"algo": "radix", "programs": 1},
    {"algo": "radix", "programs": 3, "short": 0},
]


@st_.composite
def select_case(draw):
    rr = draw(st_.sampled_from([1, 1, 2, 3]))
    groups = draw(st_.integers(1, 2))
    n = draw(st_.integers(1, 160))
    k = draw(st_.one_of(st_.integers(1, 40), st_.sampled_from([64, 100, 200])))
    lengths = draw(st_.lists(st_.integers(0, n + 20), min_size=groups, max_size=groups))
    mode = draw(st_.sampled_from(["pool", "normal", "few"]))
    seed = draw(st_.integers(0, 2**31 - 1))
    cfg = draw(st_.sampled_from(CONFIGS))
    return rr, groups, n, k, lengths, mode, seed, cfg


def _values(mode, rows, n, seed):
    gen = torch.Generator().manual_seed(seed)
    if mode == "pool":
        return torch.tensor(POOL)[torch.randint(0, len(POOL), (rows, n), generator=gen)]
    if mode == "few":
        return torch.randint(0, 3, (rows, n), generator=gen).to(torch.float32)
    return torch.randn(rows, n, generator=gen)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(select_case())
def test_topk_select_property(case):
    rr, groups, n, k, lengths, mode, seed, cfg = case
    rows = rr * groups
    x = _values(mode, rows, n, seed)
    L = torch.tensor(lengths, dtype=torch.int64)
    out = poisoned(rows, k, "cpu")
    topk_triton(x, k, L, rr, out, **(cfg or {}))
    assert_same_sets(out, topk_select_reference(x, k, L, rr), f"case={case}")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st_.integers(1, 400), st_.sampled_from([1, 2, 8, 16]), st_.integers(1, 70), st_.sampled_from([1, 2]),
    st_.integers(0, 2**31 - 1), st_.sampled_from(CONFIGS[:4]), st_.booleans(), st_.booleans(),
)
def test_candidate_blocks_property(width, bs, k, rr, seed, cfg, fused, with_starts):
    gen = torch.Generator().manual_seed(seed)
    rows = 2 * rr
    x = _values("pool" if seed % 2 else "normal", rows, width, seed)
    ends = torch.randint(0, 2 * width + 1, (2,), generator=gen)
    starts = (torch.rand(2, generator=gen) * ends.clamp(max=width)).to(torch.int64) if with_starts else None
    ref = topk_select_reference(block_scores_torch(x, ends, starts, bs, rr), k)
    out = poisoned(rows, k, "cpu")
    if fused and not plans.fusable(k, bs):
        fused = False
    blocks_triton(x, ends, k, starts, bs, rr, out, fused=fused, **(cfg or {}))
    assert_same_sets(out, ref, f"w={width} bs={bs} k={k} rr={rr} seed={seed} cfg={cfg} fused={fused} starts={starts}")
