"""The radix select (dsa_lab.kernels.radix, planned by dsa_lab.plans) against the exact reference: the same
poisoned outputs and set comparison as the hier kernel, on the shapes that reach each of its exits (every candidate
taken up front, early exit on a whole bin, all four digits with column-order ties), in its two forms: one program
per row, and every digit pass split over P programs (five launches; rows of at most ``short`` live columns whole in
one program)."""
import pytest
import torch
from _select_helpers import assert_same_sets, blocks_triton, poisoned, topk_triton

import dsa_lab
from dsa_lab import plans
from dsa_lab.bench.shapes import fill
from dsa_lab.select import topk_select_reference

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

FORMS = {"one": {"programs": 1}, "parallel": {"programs": 3, "short": 0},
         "parallel_short": {"programs": 3, "short": 700}}


def radix(x, k, lens, rr, form):
    out = poisoned(x.shape[0], k, x.device.type)
    return topk_triton(x, k, lens, rr, out, **{"algo": "radix", **FORMS[form]})


def _lengths(kind, groups, n, gen):
    if kind == "full":
        return None
    lens = torch.randint(0, n + 1, (groups,), generator=gen)
    lens[0] = n
    if kind == "zeros":
        lens[1::2] = 0
    return lens.to(torch.int32)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("rows,n,k,dist,lk", CASES, ids=[f"{c[3]}-{c[0]}x{c[1]}-k{c[2]}-{c[4]}" for c in CASES])
def test_radix_matches_reference(rows, n, k, dist, lk, form, fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    x = fill(dist, rows, n, gen=gen)
    lens = _lengths(lk, rows, n, gen)
    if lens is not None:  # garbage past the ends must be ignored
        x = torch.where(torch.arange(n)[None, :] >= lens[:, None], torch.full_like(x, NAN), x)
    assert_same_sets(radix(x, k, lens, 1, form), topk_select_reference(x, k, lens, 1), f"{form} seed={fresh_seed}")


@pytest.mark.parametrize("form", list(FORMS))
def test_radix_long_rows_and_row_repeat(form, fresh_seed):
    """Rows of several 1024-column tiles per program (the histograms and the column-order carry cross tiles), ties
    across the k boundary, row_repeat 3; then a second call with another row count through the same persistent
    row totals (the kernel leaves them at zero)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    for rows, lens in ((6, [5000, 777]), (3, [4999])):
        x = fill("few_values", rows, 5000, gen=gen)
        lens = torch.tensor(lens, dtype=torch.int32)
        got = radix(x, 300, lens, 3 if rows == 6 else 3, form)
        assert_same_sets(got, topk_select_reference(x, 300, lens, 3), f"{form} rows={rows} seed={fresh_seed}")


@pytest.mark.parametrize("P", [2, 3, 5])
@pytest.mark.parametrize("dist,k", [("normal", 64), ("few_values", 300), ("equal", 100), ("nan_payloads", 64),
                                    ("all_neginf", 64), ("signed_zero", 512)])
def test_radix_parallel_programs(P, dist, k, fresh_seed):
    """The parallel form at P programs per row on rows longer and shorter than P tiles, ragged ends with a
    zero-length row, garbage past the ends; twice, so the second call meets the totals the first left behind."""
    gen = torch.Generator().manual_seed(fresh_seed)
    for rep in range(2):
        x = fill(dist, 4, 3000, gen=gen)
        lens = torch.tensor([3000, 1700, 0, 257], dtype=torch.int32)
        x = torch.where(torch.arange(3000)[None, :] >= lens[:, None], torch.full_like(x, NAN), x)
        out = poisoned(4, k, "cpu")
        topk_triton(x, k, lens, 1, out, **{"algo": "radix", "programs": P, "short": 0})
        assert_same_sets(out, topk_select_reference(x, k, lens, 1), f"P={P} rep={rep} seed={fresh_seed}")


def test_radix_candidate_blocks(fresh_seed):
    """The candidate-block composition through the radix select (bounded scores, then the radix select over each
    row's live block extent; the flags kernel after it), with starts, ends past the width and row_repeat."""
    from dsa_lab.flags import candidate_flags_torch

    gen = torch.Generator().manual_seed(fresh_seed)
    lg = torch.randn(4, 30000, generator=gen)
    ends = torch.tensor([30000, 41000], dtype=torch.int32)
    starts = torch.tensor([10, 600], dtype=torch.int32)
    for k, over in ((64, {"algo": "radix", "programs": 1}), (300, {"algo": "radix", "programs": 2, "short": 0})):
        fl = torch.full((4, 3751), 0xAB, dtype=torch.uint8)
        got, flags = blocks_triton(lg, ends, k, starts, 8, 2, poisoned(4, k, "cpu"),
                                                             with_flags=True, flags_out=fl, **over)
        ref = dsa_lab.select_candidate_blocks(lg, ends, k, row_starts=starts, block_size=8, row_repeat=2,
                                              impl="reference")
        assert_same_sets(got, ref, f"k={k} seed={fresh_seed}")
        assert torch.equal(flags, candidate_flags_torch(ref, 30000, starts, 8, 2))


@pytest.mark.parametrize("form", list(FORMS))
def test_radix_ties_take_the_smaller_columns(form):
    """Worked example: 10 equal scores, k = 4 -> columns 1-3 and the NaN at 7 (NaN ranks first; the ties go through
    all four digits, then column order; the -inf column 0 is never taken)."""
    x = torch.full((1, 10), 2.5)
    x[0, 7] = NAN
    x[0, 0] = -INF
    assert sorted(radix(x, 4, None, 1, form)[0].tolist()) == [1, 2, 3, 7]
    assert radix(torch.full((1, 3), -INF), 4, None, 1, form)[0].tolist() == [-1, -1, -1, -1]


def test_rules_take_radix_for_large_k(fresh_seed):
    """``impl="triton"`` takes the radix select from k = 513 on, and for k = 257-512 when the call gives several radix
    programs per row (fewer rows than SMs: 4 under the interpreter); the parallel form only then.  From SM/6 rows of
    at most 32768 columns the bisect select takes k > 256 instead (``tests/test_select_bisect.py``), on wider rows
    the long-row select takes k of 257-2048 (``tests/test_select_longrow.py``)."""
    assert plans.select_algo(1, 32768, 2048, 132) == "radix" and plans.select_algo(640, 65536, 4096, 132) == "radix"
    assert plans.select_algo(1, 32768, 512, 132) == "radix" and plans.select_algo(640, 65536, 512, 132) == "longrow"
    assert plans.select_algo(1, 32768, 256, 132) == "hier" and plans.select_algo(1, 500, 512, 132) == "hier"
    assert plans.radix_programs(1, 32768, 132) == plans.RADIX_MAXP == 32 and plans.radix_programs(640, 32768, 132) == 1
    assert plans.radix_programs(160, 32768, 132) == 4 and plans.radix_programs(265, 32768, 132) == 1
    gen = torch.Generator().manual_seed(fresh_seed)
    x = fill("few_values", 3, 5000, gen=gen)
    lens = torch.tensor([5000, 300, 0], dtype=torch.int32)
    got = dsa_lab.topk_select(x, 1100, lengths=lens, impl="triton")
    assert_same_sets(got, topk_select_reference(x, 1100, lens, 1), f"seed={fresh_seed}")


@pytest.mark.gpu
@pytest.mark.parametrize("rows,n,live,k", [(1, 32768, 32768, 2048), (640, 32768, 8192, 2048), (32, 32768, 2048, 512),
                                           (8, 32768, 32768, 600), (160, 32768, 32768, 1000)])
def test_gpu_radix_large(rows, n, live, k, fresh_seed):
    gen = torch.Generator(device="cuda").manual_seed(fresh_seed)
    for dist in ("normal", "equal", "nan1pct", "few_values"):
        x = fill(dist, rows, n, gen=gen)
        lens = torch.randint(1, live + 1, (rows,), device="cuda", generator=gen).to(torch.int32)
        out = poisoned(rows, k, "cuda")
        dsa_lab.topk_select(x, k, lengths=lens, impl="triton", out=out)
        assert_same_sets(out, topk_select_reference(x, k, lens, 1), f"{dist} seed={fresh_seed}")
