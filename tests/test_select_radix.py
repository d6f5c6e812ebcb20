"""The experimental radix select (dsa_lab.select_radix_triton) against the exact reference: the same
poisoned outputs and set comparison as the default kernel, on the shapes that reach each of its exits
(every candidate taken up front, early exit on a whole bin, all four digits with column-order ties)."""
import pytest
import torch

from _select_helpers import assert_same_sets, poisoned

import dsa_lab
from dsa_lab.select import topk_select_reference
from dsa_lab.select_radix_triton import select_candidate_blocks_radix, topk_select_radix
from dsa_lab.shapes import fill

INF, NAN = float("inf"), float("nan")

CASES = [
    # rows, n, k, dist, lengths kind
    (1, 700, 64, "normal", "full"),            # 1 row, continuous values: early exit after 2-3 digits
    (3, 1500, 512, "normal", "ragged"),        # ragged ends, k = 512
    (2, 2048, 2048, "normal", "ragged"),       # k = 2048 >= live: every candidate, -1 tail
    (2, 1000, 2048, "shifted", "full"),        # k > width
    (4, 900, 100, "equal", "ragged"),          # every score tied: all four digits, column-order ties
    (3, 1200, 333, "few_values", "ragged"),    # heavy ties across the k boundary
    (3, 800, 64, "nan_payloads", "ragged"),    # NaN (every payload) ranks on top
    (3, 800, 64, "signed_zero", "ragged"),     # -0.0 below +0.0
    (2, 600, 64, "denormal", "full"),
    (2, 600, 64, "specials", "ragged"),
    (2, 500, 64, "all_neginf", "full"),        # no candidate: all -1
    (2, 500, 64, "all_nan", "ragged"),
    (3, 1000, 1, "ramp", "zeros"),             # k = 1, some rows of length 0
    (5, 640, 100, "nan1pct", "ragged"),        # non-power-of-two k
]


def _variant(v, gpu=False):
    """Keyword arguments of a radix variant: compact True / False (one program per row), or "parallel"
    (v3.3: every digit pass over several programs; 3 forced on the CPU, the SM-count plan on a GPU)."""
    if v == "parallel":
        return {"parallel": True, "split": None if gpu else 3}
    return {"compact": v}


def _lengths(kind, groups, n, gen):
    if kind == "full":
        return None
    lens = torch.randint(0, n + 1, (groups,), generator=gen)
    lens[0] = n
    if kind == "zeros":
        lens[1::2] = 0
    return lens.to(torch.int32)


@pytest.mark.parametrize("compact", [True, False, "parallel"], ids=["compact", "full-passes", "parallel"])
@pytest.mark.parametrize("rows,n,k,dist,lk", CASES, ids=[f"{c[3]}-{c[0]}x{c[1]}-k{c[2]}-{c[4]}" for c in CASES])
def test_radix_matches_reference(rows, n, k, dist, lk, compact, fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    x = fill(dist, rows, n, gen=gen)
    lens = _lengths(lk, rows, n, gen)
    if lens is not None:  # garbage past the ends must be ignored
        tail = torch.arange(n)[None, :] >= lens[:, None]
        x = torch.where(tail, torch.full_like(x, NAN), x)
    out = poisoned(rows, k, "cpu")
    if compact == "parallel":  # v3.3: every digit pass over 3 programs of 256-column tiles
        topk_select_radix(x, k, lens, 1, out, parallel=True, split=3, tile=256)
    else:
        topk_select_radix(x, k, lens, 1, out, compact=compact)
    assert_same_sets(out, topk_select_reference(x, k, lens, 1), f"seed={fresh_seed}")


@pytest.mark.parametrize("compact", [True, False, "parallel"], ids=["compact", "full-passes", "parallel"])
@pytest.mark.parametrize("tile", [256, 1024])
def test_radix_tiles_and_row_repeat(tile, compact, fresh_seed):
    """Rows longer than a tile (the histogram and the column-order carry cross tiles), row_repeat 3."""
    gen = torch.Generator().manual_seed(fresh_seed)
    x = fill("few_values", 6, 1900, gen=gen)
    lens = torch.tensor([1900, 777], dtype=torch.int32)
    out = poisoned(6, 300, "cpu")
    topk_select_radix(x, 300, lens, 3, out, tile=tile, **_variant(compact))
    assert_same_sets(out, topk_select_reference(x, 300, lens, 3), f"seed={fresh_seed}")


@pytest.mark.parametrize("compact", [True, False, "parallel"], ids=["compact", "full-passes", "parallel"])
def test_radix_candidate_blocks(compact, fresh_seed):
    """The candidate-block composition (bounded scores → radix over the live block extent), with
    starts, ends past the width and row_repeat, equals the reference pipeline."""
    gen = torch.Generator().manual_seed(fresh_seed)
    lg = torch.randn(4, 3000, generator=gen)
    ends = torch.tensor([3000, 4100], dtype=torch.int32)
    starts = torch.tensor([10, 600], dtype=torch.int32)
    for k in (64, 300):
        got = select_candidate_blocks_radix(lg, ends, k, starts, 8, 2, poisoned(4, k, "cpu"), tile=128,
                                            **_variant(compact))
        ref = dsa_lab.select_candidate_blocks(lg, ends, k, row_starts=starts, block_size=8, row_repeat=2,
                                              impl="reference")
        assert_same_sets(got, ref, f"k={k} seed={fresh_seed}")


@pytest.mark.parametrize("compact", [True, False, "parallel"], ids=["compact", "full-passes", "parallel"])
def test_radix_ties_take_the_smaller_columns(compact):
    """Worked example: 10 equal scores, k = 4 → columns 1-3 and the NaN at 7 (NaN ranks first; the
    ties go through all four digits, then column order; the -inf column 0 is never taken)."""
    x = torch.full((1, 10), 2.5)
    x[0, 7] = NAN
    x[0, 0] = -INF
    got = topk_select_radix(x, 4, **_variant(compact))
    assert sorted(got[0].tolist()) == [1, 2, 3, 7]
    got = topk_select_radix(torch.full((1, 3), -INF), 4, **_variant(compact))
    assert got[0].tolist() == [-1, -1, -1, -1]


@pytest.mark.gpu
@pytest.mark.parametrize("rows,n,live,k", [(1, 32768, 32768, 2048), (640, 32768, 8192, 2048), (32, 32768, 2048, 512),
                                           (8, 32768, 32768, 64)])
def test_gpu_radix_large(rows, n, live, k, fresh_seed):
    gen = torch.Generator(device="cuda").manual_seed(fresh_seed)
    for dist in ("normal", "equal", "nan1pct", "few_values"):
        x = fill(dist, rows, n, gen=gen)
        lens = torch.randint(1, live + 1, (rows,), device="cuda", generator=gen).to(torch.int32)
        for compact in (True, False, "parallel"):
            out = poisoned(rows, k, "cuda")
            topk_select_radix(x, k, lens, 1, out, **_variant(compact, gpu=True))
            assert_same_sets(out, topk_select_reference(x, k, lens, 1), f"{dist} compact={compact} seed={fresh_seed}")


@pytest.mark.parametrize("P", [2, 3, 5])
@pytest.mark.parametrize("dist,k", [("normal", 64), ("few_values", 300), ("equal", 100), ("nan_payloads", 64),
                                    ("all_neginf", 64), ("signed_zero", 512)])
def test_radix_split_rows(P, dist, k, fresh_seed):
    """The split radix (P programs per row, two launches, last-arriver refinement) on rows longer and
    shorter than P tiles, ragged ends with a zero-length row, garbage past the ends; then a second call
    on new values through the same counters (they must have been reset)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    for rep in range(2):
        x = fill(dist, 4, 1500, gen=gen)
        lens = torch.tensor([1500, 700, 0, 257], dtype=torch.int32)
        tail = torch.arange(1500)[None, :] >= lens[:, None]
        x = torch.where(tail, torch.full_like(x, NAN), x)
        out = poisoned(4, k, "cpu")
        topk_select_radix(x, k, lens, 1, out, tile=256, split=P)
        assert_same_sets(out, topk_select_reference(x, k, lens, 1), f"P={P} rep={rep} seed={fresh_seed}")
        out = poisoned(4, k, "cpu")  # v3.3 (parallel) on the same rows and programs
        topk_select_radix(x, k, lens, 1, out, tile=256, split=P, parallel=True)
        assert_same_sets(out, topk_select_reference(x, k, lens, 1), f"parallel P={P} rep={rep} seed={fresh_seed}")
        out = poisoned(4, k, "cpu")  # v3.4: rows of at most 700 live columns whole in one program, the rest parallel
        topk_select_radix(x, k, lens, 1, out, tile=256, split=P, parallel=True, short=700)
        assert_same_sets(out, topk_select_reference(x, k, lens, 1), f"short P={P} rep={rep} seed={fresh_seed}")


def test_radix_split_plan_and_blocks(fresh_seed):
    """split=True sizes P from the device's SM count (1 row → several programs, many rows → 1), and the
    candidate-block composition runs through it."""
    from dsa_lab.select_triton import split_programs

    assert split_programs(1, 32768, 132, 1024) == 32 and split_programs(640, 32768, 132, 1024) == 1
    assert split_programs(4, 3000, 132, 1024) == 3
    # at least 4 programs per row up to twice as many rows as SMs (measured, tune_dev_K.csv), one beyond
    assert split_programs(160, 32768, 132, 1024) == 4 and split_programs(264, 32768, 132, 1024) == 4
    assert split_programs(265, 32768, 132, 1024) == 1
    gen = torch.Generator().manual_seed(fresh_seed)
    lg = torch.randn(2, 4000, generator=gen)
    ends = torch.tensor([4000, 2500], dtype=torch.int32)
    got = select_candidate_blocks_radix(lg, ends, 64, None, 1, 1, poisoned(2, 64, "cpu"), tile=256, split=True)
    ref = dsa_lab.select_candidate_blocks(lg, ends, 64, block_size=1, impl="reference")
    assert_same_sets(got, ref, f"seed={fresh_seed}")


def test_radix_through_the_triton_arm(monkeypatch, fresh_seed):
    """config={"algo": "radix"} routes topk_select_triton and the candidate-block path to the radix kernels;
    RADIX_MIN_KP switches the default by k (1024: k > 512 takes radix; None turns it off), and fused radix is
    refused."""
    from dsa_lab import select_radix_triton as radix
    from dsa_lab import select_triton

    assert select_triton.RADIX_MIN_KP == 1024 and select_triton.default_algo(2048) == "radix"
    assert select_triton.plan(1, 100, 2048, {"sm_count": 132})["compact"] is False  # the full-pass form
    monkeypatch.setattr(select_triton, "RADIX_MIN_KP", None)
    assert select_triton.default_algo(2048) == "hier"
    gen = torch.Generator().manual_seed(fresh_seed)
    x = fill("few_values", 3, 900, gen=gen)
    lens = torch.tensor([900, 300, 0], dtype=torch.int32)
    calls = []
    real = radix._launch
    monkeypatch.setattr(radix, "_launch", lambda *a, **kw: calls.append(a[7]) or real(*a, **kw))
    out = select_triton.topk_select_triton(x, 600, lens, 1, poisoned(3, 600, "cpu"), config={"algo": "radix", "tile": 256})
    assert_same_sets(out, topk_select_reference(x, 600, lens, 1), f"seed={fresh_seed}")
    assert calls == [600]
    out = select_triton.topk_select_triton(x, 600, lens, 1, poisoned(3, 600, "cpu"),
                                           config={"algo": "radix", "parallel": True, "split": 2, "tile": 128})
    assert_same_sets(out, topk_select_reference(x, 600, lens, 1), f"parallel seed={fresh_seed}")
    assert calls == [600, 600]
    monkeypatch.setattr(select_triton, "RADIX_MIN_KP", 1024)
    assert select_triton.default_algo(512) == "hier" and select_triton.default_algo(513) == "radix"  # KP 1024
    assert select_triton.default_algo(2048, fused=True) == "hier"
    # KP = 512 takes the parallel radix only with several programs per row (fewer rows than SMs)
    assert select_triton.default_algo(512, rows=1, n=32768, sm_count=132) == "radix"
    assert select_triton.default_algo(512, rows=640, n=32768, sm_count=132) == "hier"
    assert select_triton.default_algo(64, rows=1, n=32768, sm_count=132) == "hier"
    few, many = (select_triton.plan(r, 32768, 2048, {"sm_count": 132}) for r in (1, 640))
    assert (few["parallel"], few["short"], many["parallel"], many["short"]) == (True, select_triton.RADIX_SHORT, False, 0)
    assert select_triton.plan(640, 32768, 512, {"sm_count": 132})["rsel"] is True  # hier, radix-select stages
    assert select_triton.plan(640, 32768, 64, {"sm_count": 132})["rsel"] is False
    got = dsa_lab.topk_select(x, 1100, lengths=lens, impl="triton")
    assert_same_sets(got, topk_select_reference(x, 1100, lens, 1), f"seed={fresh_seed}")
    assert calls == [600, 600, 1100]
    lg = torch.randn(2, 20000, generator=gen)
    ends = torch.tensor([20000, 9000], dtype=torch.int32)
    got = dsa_lab.select_candidate_blocks(lg, ends, 1500, block_size=8, impl="triton")
    assert_same_sets(got, dsa_lab.select_candidate_blocks(lg, ends, 1500, block_size=8, impl="reference"), "blocks")
    assert calls == [600, 600, 1100, 1500]
    with pytest.raises(ValueError, match="no fused path"):
        select_triton.plan(1, 100, 64, {"sm_count": 132}, fused=True, algo="radix")
    with pytest.raises(ValueError, match="no fused path"):  # an explicit fused=True is not silently dropped
        select_triton.select_candidate_blocks_triton(lg, ends, 64, fused=True, config={"algo": "radix"})
    with pytest.raises(ValueError, match="radix config takes"):
        select_triton.plan(1, 100, 64, {"sm_count": 132}, algo="radix", group=4)
