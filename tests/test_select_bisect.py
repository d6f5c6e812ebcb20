"""The bisect select (dsa_lab.kernels.bisect, planned by dsa_lab.plans) against the exact reference: outputs
poisoned, every slot compared as sets, at k in {257, 512, 1000, 2048} on rows that reach each register tile (live
lengths up to 2048, 8192 and 32768 columns), each exit of the search (every candidate taken, a midpoint with exactly
k at or above it, the k-th word found with ties split by column order), each way the middle ends (gathered and
searched, or one tied value written straight out; reached at interpreter sizes with a small middle capacity), ragged and
zero-length rows, garbage past the ends, row_repeat, and the candidate-block composition with row starts and the
flags written by the kernel."""
import pytest
import torch
import triton
import triton.language as tl
from _select_helpers import assert_same_sets, blocks_triton, poisoned, topk_triton

import dsa_lab
from dsa_lab import plans
from dsa_lab._impl import facts_for
from dsa_lab.bench.shapes import DISTS, SPECIAL_DISTS, fill
from dsa_lab.flags import candidate_flags_torch
from dsa_lab.kernels import bisect as bk
from dsa_lab.keys import ordered_hi
from dsa_lab.launch import select as launch
from dsa_lab.select import topk_select_reference

INF, NAN = float("inf"), float("nan")
KS = (257, 512, 1000, 2048)


def bisect(x, k, lens, rr=1):
    out = poisoned(x.shape[0], k, x.device.type)
    return topk_triton(x, k, lens, rr, out, **{"algo": "bisect"})


def _ragged(rows, n, gen, zero=True):
    """Lengths: the full width, a zero-length row (``zero``), the rest random; garbage (NaN) is put past them."""
    lens = torch.randint(0, n + 1, (rows,), generator=gen)
    lens[0] = n
    if zero and rows > 2:
        lens[2] = 0
    return lens.to(torch.int32)


def _garbage(x, lens):
    return torch.where(torch.arange(x.shape[1])[None, :] >= lens[:, None], torch.full_like(x, NAN), x)


@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("dist", DISTS + SPECIAL_DISTS)
def test_bisect_matrix(dist, k, fresh_seed):
    """Every distribution at every k, on rows of the three tiles: 3000 columns (ragged: some rows shorter than k,
    one of length 0) and one row of 20000 (the widest tile)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    x = fill(dist, 4, 3000, gen=gen)
    lens = _ragged(4, 3000, gen)
    x = _garbage(x, lens)
    assert_same_sets(bisect(x, k, lens), topk_select_reference(x, k, lens, 1), f"{dist} k={k} seed={fresh_seed}")
    w = fill(dist, 1, 20000, gen=gen)
    assert_same_sets(bisect(w, k, None), topk_select_reference(w, k, None, 1), f"{dist} wide k={k} seed={fresh_seed}")


@pytest.mark.parametrize("n", [2048, 2049, 8192, 8193, 32768])
def test_bisect_tile_edges(n, fresh_seed):
    """Live lengths at and one past each register tile's width, with heavy ties across the k boundary."""
    gen = torch.Generator().manual_seed(fresh_seed)
    x = fill("few_values", 2, n, gen=gen)
    lens = torch.tensor([n, n - 1], dtype=torch.int32)
    assert_same_sets(bisect(x, 1000, lens), topk_select_reference(x, 1000, lens, 1), f"n={n} seed={fresh_seed}")


@pytest.mark.parametrize("shape", ["two_clusters", "huge", "one_outlier", "tiny_spread"])
def test_bisect_model_misses(shape, fresh_seed):
    """The first step's probes come from a law fitted to a sample of the row (warp size 32: the interpreter's);
    rows it fits badly must still come out exact: two far clusters (both probes on one side), values whose squares
    overflow float32 (no spread: the probes miss and the bracket starts from the extremes), one huge outlier among
    normal scores (a spread far too wide), and scores that differ in the last bits only (probes on words a few
    apart)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n, k = 9000, 700
    x = torch.randn((2, n), generator=gen)
    if shape == "two_clusters":
        x = torch.where(torch.rand((2, n), generator=gen) < 0.9, x, x + 1e6)
    elif shape == "huge":
        x = x * 1e30
    elif shape == "one_outlier":
        x[:, 17] = 3e38
    else:
        x = 1.0 + x * 1e-7
    lens = torch.tensor([n, n - 123], dtype=torch.int32)
    assert_same_sets(bisect(x, k, lens), topk_select_reference(x, k, lens, 1), f"{shape} seed={fresh_seed}")


@pytest.mark.parametrize("k", [300, 700, 1500])
@pytest.mark.parametrize("shape", ["cauchy", "exponential", "bimodal", "steps"])
def test_bisect_probe_misses(shape, k, fresh_seed):
    """Rows the law's two probes miss on one side, often by a few words: the bracket then starts from the row's
    extremes, narrowed by the probe that missed (its count exact), and the result must not depend on it: heavy
    tails (Cauchy), one-sided tails (exponential, the law's lower probe too low or its upper too high), two modes
    a few spreads apart, and a staircase of 16 values (ties at every probe)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n, rows = 6000, 12
    u = torch.rand((rows, n), generator=gen)
    if shape == "cauchy":
        x = torch.tan(torch.pi * (u - 0.5))
    elif shape == "exponential":
        x = -torch.log1p(-u) * torch.where(torch.arange(rows) % 2 == 0, 1.0, -1.0)[:, None]
    elif shape == "bimodal":
        x = torch.randn((rows, n), generator=gen) + 6.0 * (u < 0.2)
    else:
        x = torch.floor(u * 16)
    lens = torch.linspace(2100, n, rows).to(torch.int32)  # (the law's probes move with the length: some miss by a few)
    assert_same_sets(bisect(x, k, lens), topk_select_reference(x, k, lens, 1), f"{shape} k={k} seed={fresh_seed}")


@pytest.mark.parametrize("k", [300, 700, 1500])
def test_bisect_top_heavy(k, fresh_seed):
    """Rows whose +inf and NaN (outside the sample's law) push the upper probe's count to k or past it, from a few
    words below k to past it: the probes are tried again with the excess counted on top, and the bracket is taken
    from whichever of the four counted words bound the k-th (or, where none is above it, from the row's extremes)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n, rows = 6000, 12
    x = torch.randn((rows, n), generator=gen)
    ntop = torch.linspace(k // 4, k + 40, rows).to(torch.int64)
    for r in range(rows):
        cols = torch.randperm(n, generator=gen)[: int(ntop[r])]
        x[r, cols] = torch.where(torch.rand(len(cols), generator=gen) < 0.5, INF, NAN)
    lens = torch.full((rows,), n, dtype=torch.int32)
    lens[1::3] = torch.randint(n // 2, n, (rows // 3,), generator=gen).to(torch.int32)
    x = _garbage(x, lens)
    assert_same_sets(bisect(x, k, lens), topk_select_reference(x, k, lens, 1), f"k={k} seed={fresh_seed}")


@pytest.mark.parametrize("cap", [256, plans.BISECT_MID_CAP])
def test_bisect_heavy_tail(cap, fresh_seed):
    """A tenth of each row in a narrow bump above the bulk (a finite upper tail heavier than the sampled law's, with
    +inf / NaN on top in some rows, k - 1 of them in one): the upper probe counts k or more, the probes are tried
    again with the excess counted on top, and the bracket's steps go on where its middle is wider than the capacity
    (2048, and 256: the bump alone is 600 words)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n, rows, k = 6000, 6, 500
    x = torch.randn((rows, n), generator=gen)
    for r in range(rows):
        cols = torch.randperm(n, generator=gen)
        x[r, cols[:600]] = 3.0 + 0.1 * torch.randn(600, generator=gen)
        nt = (0, 40, 80, 0, 40, k - 1)[r]  # (the last: one pick left for the middle, its largest word)
        x[r, cols[600:600 + nt]] = torch.where(torch.rand(nt, generator=gen) < 0.5, INF, NAN)
    lens = torch.full((rows,), n, dtype=torch.int32)
    lens[4] = 5000
    x = _garbage(x, lens)
    out = poisoned(rows, k, "cpu")
    launch.bisect(x, lens, None, out, None, n, n, k, 1, plans.bisect(facts_for(x), mid_cap=cap), block_scores=False)
    assert_same_sets(out, topk_select_reference(x, k, lens, 1), f"cap={cap} seed={fresh_seed}")


def test_bisect_search_exits():
    """The search's three exits, on worked rows: at most k candidates (all taken, -1 tail); distinct integers, where
    some midpoint has exactly k words at or above it; one value repeated, where the k-th word is tied and the ties go
    to the smaller columns (the NaN first, the -inf column never)."""
    x = torch.full((1, 600), -INF)
    x[0, :300] = torch.arange(300, dtype=torch.float32)
    got = bisect(x, 512, None)[0]
    assert sorted(got[:300].tolist()) == list(range(300)) and got[300:].eq(-1).all()
    r = torch.arange(3000, dtype=torch.float32)[None, :]
    assert sorted(bisect(r, 1000, None)[0].tolist()) == list(range(2000, 3000))
    t = torch.full((1, 3000), 2.5)
    t[0, 2000] = NAN
    t[0, 0] = -INF
    assert sorted(bisect(t, 300, None)[0].tolist()) == list(range(1, 300)) + [2000]


@triton.jit
def _kth_kernel(w_ptr, n, k, lo, hi, out_ptr, N: tl.constexpr):
    h = tl.load(w_ptr + tl.arange(0, N))
    T, base, f = bk._kth(h, n, k, lo.to(tl.int64), hi.to(tl.int64))
    tl.store(out_ptr, T)
    tl.store(out_ptr + 1, base)
    tl.store(out_ptr + 2, f)


def _kth_words(kind, n, gen):
    """``n`` ordered words of one shape: spread over all of int32, two clusters far apart, a few tied values, or
    near the top (the +inf and NaN words)."""
    def ints(lo, hi, m):
        return torch.randint(lo, hi, (m,), generator=gen, dtype=torch.int64)
    if kind == "spread":
        return ints(-2**31 + 1, 2**31, n)
    if kind == "clusters":
        a = int(ints(0, n + 1, 1))
        return torch.cat([ints(-2**30, -2**30 + 8, a), ints(2**30, 2**30 + 8, n - a)])
    if kind == "ties":
        return torch.tensor([-7, 0, 3, 2**20, 2**31 - 1])[ints(0, 5, n)]
    return ints(0x7F800000 - 4, 2**31, n)


@pytest.mark.parametrize("kind", ["spread", "clusters", "ties", "top"])
def test_bisect_kth_search(kind, fresh_seed):
    """The middle's search on its own (``_kth`` over a 64-word tile, the unused slots below the bracket): the words
    above ``T`` and the ties it asks for (``k - base + f * ties``, at most all of them) make ``k``, for every ``k`` of
    ``1 .. n - 1``, so each way the search ends is reached: exact counts, one value
    left, and one word missing at either end (the largest word below the upper bound, the smallest at or above the
    lower, with ties there too)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    N = 64
    for trial in range(4):
        n = int(torch.randint(2, N + 1, (1,), generator=gen))
        w = _kth_words(kind, n, gen)
        lo = max(int(w.min()) - int(torch.randint(0, 3, (1,), generator=gen)), -2**31 + 1)
        hi = min(int(w.max()) + 1 + int(torch.randint(0, 3, (1,), generator=gen)), 2**31)
        h = torch.full((N,), -2**31, dtype=torch.int32)
        h[torch.randperm(N, generator=gen)[:n]] = w.to(torch.int32)
        desc = torch.sort(w, descending=True).values  # (T is the k-th word wherever a tie is split)
        for k in range(1, n):
            out = torch.full((3,), 12345, dtype=torch.int32)
            _kth_kernel[(1,)](h, n, k, lo, hi, out, N=N)
            T, base, f = out.tolist()
            ties = int((w == T).sum())
            ctx = f"{kind} n={n} k={k} lo={lo} hi={hi} seed={fresh_seed} trial={trial}: T={T} base={base} f={f}"
            nt = k - base + f * ties
            assert 0 <= nt <= ties and int((w > T).sum()) + nt == k, ctx
            assert nt == 0 or T == int(desc[k - 1]), ctx


@triton.jit
def _middle_kernel(src_ptr, out_ptr, mid_ptr, L, k, lo, hi1, c_lo, c_hi, MC: tl.constexpr):
    bk._middle(src_ptr, (L * 0).to(tl.int64), out_ptr, mid_ptr, L, k, lo, hi1, c_lo, c_hi, L < 0, MC)


@pytest.mark.parametrize("dist", ["normal", "few_values", "nan_payloads"])
def test_bisect_middle_stage(dist, fresh_seed):
    """Stage 3 on its own: a bracket ``[lo, hi1]`` of a row with at most 64 words in it (their columns in the scratch
    in random order), ``c_hi`` words above it; the middle's picks must fill output slots ``c_hi .. k - 1`` with its
    ``k - c_hi`` largest words (ties: the smaller columns) and leave every slot from ``k`` on untouched.  ``k`` runs
    over every need from one word to all but one, and every other row has column 0 as the middle's smallest word,
    alone: where that one word is to be left out, the tie search asked for none must not take it."""
    gen = torch.Generator().manual_seed(fresh_seed)
    MC = 64
    ran = 0
    for trial in range(12):  # until three rows gave a middle (few_values' long rows hold none of at most MC words)
        if ran == 3:
            break
        L = int(torch.randint(40, 400, (1,), generator=gen))
        x = fill(dist, 1, L, gen=gen)[0]
        w = ordered_hi(x)
        vals = torch.unique(w, sorted=True).flip(0)  # distinct words, largest first
        small = [i for i in range(len(vals) - 1) if int((w == vals[i]).sum()) <= MC - 2]
        if not small:
            continue
        a = small[int(torch.randint(0, len(small), (1,), generator=gen))]
        b = a
        while b + 1 < len(vals) and int(((w >= vals[b + 1]) & (w <= vals[a])).sum()) <= MC - 1:
            b += 1
        lo, hi1 = int(vals[b]), int(vals[a])
        if trial % 2 == 0:  # column 0 the middle's smallest word, alone
            x[0] = torch.nextafter(x[w == lo][0], torch.tensor(-INF))
            w = ordered_hi(x)
            lo = int(w[0])
        mid = ((w >= lo) & (w <= hi1)).nonzero()[:, 0]
        c_hi = int((w > hi1).sum())
        nm = len(mid)
        if nm < 2:
            continue
        key = w[mid] * (1 << 20) - mid  # larger word first, then the smaller column
        order = mid[torch.argsort(key, descending=True)]
        for need in range(1, nm):
            k = c_hi + need
            scratch = torch.full((MC,), 77777, dtype=torch.int32)
            scratch[:nm] = mid[torch.randperm(nm, generator=gen)].to(torch.int32)
            out = torch.full((k + 8,), -5, dtype=torch.int32)
            _middle_kernel[(1,)](x, out, scratch, L, k, lo, hi1, c_hi + nm, c_hi, MC=MC)
            ctx = f"{dist} L={L} nm={nm} need={need} col0 in middle={0 in mid.tolist()} seed={fresh_seed} trial={trial}"
            assert sorted(out[c_hi:k].tolist()) == sorted(order[:need].tolist()), ctx
            assert out[:c_hi].eq(-5).all() and out[k:].eq(-5).all(), ctx
        ran += 1
    assert ran, f"no row of {dist} gave a middle (seed {fresh_seed})"


@pytest.mark.parametrize("cap", [64, 256])
@pytest.mark.parametrize("dist", ["normal", "ramp", "few_values", "equal", "nan_payloads"])
def test_bisect_middle(dist, cap, fresh_seed):
    """The bracket's middle at a capacity of 64 / 256 words, so that rows of 3000 and 20000 columns reach it: a
    middle gathered from the scratch and searched (normal, ramp, NaN payloads), one tied value wider than the
    capacity (equal, few values), and rows of at most k candidates (the ragged lengths)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    for rows, n, k in ((3, 3000, 300), (1, 20000, 1000)):
        x = fill(dist, rows, n, gen=gen)
        lens = _ragged(rows, n, gen)
        out = poisoned(rows, k, "cpu")
        launch.bisect(x, lens, None, out, None, n, n, k, 1, plans.bisect(facts_for(x), mid_cap=cap), block_scores=False)
        assert_same_sets(out, topk_select_reference(x, k, lens, 1), f"{dist} cap={cap} n={n} seed={fresh_seed}")


@pytest.mark.parametrize("n,first,k", [(2000, 1500, 300), (8000, 2100, 700), (8000, 7000, 600), (20000, 9000, 1000),
                                     (30000, 17000, 2048), (32768, 25000, 1500)])
def test_bisect_ties_start_late(n, first, k, fresh_seed):
    """A top value tied over every column from ``first`` on, wider than k: the output takes its first k columns, so
    the search for the k-th tied column goes past the first chunks and slabs of the tile (random noise below)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    x = torch.rand((2, n), generator=gen) - 2.0
    x[:, first:] = 1.0
    x[1, first + 1:first + 40] = 5.0  # a few words above the tie in the second row
    got = bisect(x, k, None)
    assert_same_sets(got, topk_select_reference(x, k, None, 1), f"n={n} first={first} k={k} seed={fresh_seed}")
    assert sorted(got[0].tolist()) == list(range(first, first + k))


def test_bisect_row_repeat_and_strides(fresh_seed):
    """row_repeat 3 (lengths per group), an unaligned row stride (a column slice of a wider tensor), NaN payloads."""
    gen = torch.Generator().manual_seed(fresh_seed)
    base = fill("nan_payloads", 6, 5001, gen=gen)
    x = base[:, 1:]  # stride 5001, rows start unaligned
    lens = torch.tensor([5000, 1234], dtype=torch.int32)
    assert_same_sets(bisect(x, 700, lens, 3), topk_select_reference(x, 700, lens, 3), f"seed={fresh_seed}")


@pytest.mark.parametrize("dist", ["normal", "equal", "nan1pct"])
def test_bisect_candidate_blocks(dist, fresh_seed):
    """select_candidate_blocks through the bisect select: the bounded scores launch zeroes the flags, the select
    writes the ids and sets the flags; row starts, an end past the width, row_repeat 2; flags poisoned first."""
    gen = torch.Generator().manual_seed(fresh_seed)
    lg = fill(dist, 4, 30000, gen=gen)
    ends = torch.tensor([30000, 41000], dtype=torch.int32)
    starts = torch.tensor([10, 600], dtype=torch.int32)
    for k in (257, 2048):
        fl = torch.full((4, 3751), 0xAB, dtype=torch.uint8)
        got, flags = blocks_triton(lg, ends, k, starts, 8, 2, poisoned(4, k, "cpu"),
                                                             with_flags=True, flags_out=fl, **{"algo": "bisect"})
        ref = dsa_lab.select_candidate_blocks(lg, ends, k, row_starts=starts, block_size=8, row_repeat=2,
                                              impl="reference")
        assert_same_sets(got, ref, f"{dist} k={k} seed={fresh_seed}")
        assert torch.equal(flags, candidate_flags_torch(ref, 30000, starts, 8, 2)), f"{dist} k={k} flags"


def test_bisect_rule_and_width_limit():
    """The rules take the bisect select for k > 256 on rows of at most 32768 columns from SM/6 rows, and from one
    row on rows of 2048-8192 columns; wider rows keep the radix select, and forcing the bisect select on them is
    refused by name."""
    assert plans.select_algo(22, 32768, 2048, 132) == "bisect" == plans.select_algo(640, 32768, 257, 132)
    assert plans.select_algo(21, 32768, 2048, 132) == "radix" and plans.select_algo(640, 32769, 4096, 132) == "radix"
    assert plans.select_algo(1, 8192, 2048, 132) == "bisect" == plans.select_algo(1, 2048, 512, 132)
    assert plans.select_algo(1, 2047, 512, 132) == "radix" == plans.select_algo(1, 8193, 512, 132)
    assert plans.select_algo(640, 32768, 256, 132) == "hier"
    x = torch.zeros((1, plans.BISECT_MAX_COLS + 1))
    with pytest.raises(ValueError, match="at most 32768 columns"):
        bisect(x, 300, None)


@pytest.mark.gpu
@pytest.mark.parametrize("rows,live,k", [(132, 32768, 2048), (640, 8192, 2048), (640, 2048, 512), (200, 32768, 1000),
                                         (66, 32768, 257)])
def test_gpu_bisect(rows, live, k, fresh_seed):
    gen = torch.Generator(device="cuda").manual_seed(fresh_seed)
    for dist in DISTS + ("few_values", "nan_payloads", "signed_zero"):
        x = fill(dist, rows, 32768, gen=gen)
        lens = torch.randint(0, live + 1, (rows,), device="cuda", generator=gen).to(torch.int32)
        out = poisoned(rows, k, "cuda")
        dsa_lab.topk_select(x, k, lengths=lens, impl="triton", out=out)
        assert_same_sets(out, topk_select_reference(x, k, lens, 1), f"{dist} seed={fresh_seed}")
