"""The long-row select (dsa_lab.kernels.longrow, planned by dsa_lab.plans) against the exact reference.

CPU lane: the Triton interpreter, with the plan's sizes shrunk (tiles, candidate buffers, the sample) so that rows
of a few thousand columns reach every branch: the main path (the top k of the keys above the threshold), the keys
equal to it from the buffer and from a scan of the row (a wide tie), the exact fallback (more keys above it than
the buffer holds, or fewer than k at or above it), rows sampled whole, zero-length rows, fewer candidates than k,
row repeats, and the candidate-block path at block size 1 (logits read by the select, the newest column +inf).
Every output is poisoned first and every slot compared (rows as sets).
"""
import dataclasses

import pytest
import torch
from _select_helpers import assert_same_sets, poisoned

import dsa_lab
from dsa_lab import _impl, plans
from dsa_lab.bench.shapes import fill
from dsa_lab.keys import NEG_INF_HI, ordered_hi
from dsa_lab.launch import select as launch
from dsa_lab.select import topk_select_reference

SMALL = dict(CAP=96, CAP_EQ=32, FT=128, FT_EQ=32, FB=16, TILE=64, STILE=64, NCH=16, CH=4, num_warps=4, stream_warps=4,
             fin_warps=4, NB=64)


def small(P=3, **kw):
    return plans.Longrow(P=P, **dict(SMALL, **kw))


def select(x, k, lens=None, rr=1, plan=None):
    out = poisoned(x.shape[0], k, x.device.type)
    plan = plan or small()
    launch.topk_select(x, k, lens, rr, out, plan=plan)
    return out


def _lens(rows, n, gen):
    lens = torch.randint(0, n + 1, (rows,), generator=gen)
    lens[0] = n
    if rows > 2:
        lens[1], lens[2] = 0, 40  # an empty row, a row sampled whole
    return lens.to(torch.int32)


def _runs(n, plan) -> list[int]:
    """The columns the sample launch reads in a row of ``n`` (``NCH`` runs of ``CH``, spread as the kernel spreads
    them)."""
    return [i * (n - plan.CH) // (plan.NCH - 1) + j for i in range(plan.NCH) for j in range(plan.CH)]


def _sample_words(x, runs, rank) -> list[int]:
    """Each row's word of rank ``rank`` (1 = the largest) among its sampled columns ``runs``: the threshold the
    sample launch must find."""
    return [int(ordered_hi(x[r, runs]).sort(descending=True).values[rank - 1]) for r in range(x.shape[0])]


@pytest.mark.parametrize("dist", ["normal", "shifted", "equal", "few_values", "nan1pct", "ramp", "specials",
                                  "nan_payloads", "signed_zero", "all_neginf", "band"])
@pytest.mark.parametrize("k", [5, 16, 40])
def test_longrow_matches_reference(dist, k, fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, n = 4, 1500
    x = fill(dist, rows, n, gen=gen)
    lens = _lens(rows, n, gen)
    got = select(x, k, lens)
    assert_same_sets(got, topk_select_reference(x, k, lens, 1), f"{dist} k={k} seed={fresh_seed}")


@pytest.mark.parametrize("dist", ["normal", "hot_run", "few_values", "nan1pct"])
def test_longrow_stream_tile_forms(dist, fresh_seed):
    """A 128-column tile over 32 threads, four words a thread: where no thread holds more than two words above the
    threshold only those go through the slots; a run of larger words (``hot_run``: 192 columns above the rest, a
    fixed permutation of 192 values, so the sample puts 104 of them above the threshold) puts three or four in a
    thread and takes the whole tile through them.  Both give the exact top k."""
    gen = torch.Generator().manual_seed(fresh_seed)
    x = fill("normal" if dist == "hot_run" else dist, 4, 1500, gen=gen)
    lens = _lens(4, 1500, gen)
    if dist == "hot_run":
        x[:, 1024:1216] = 10 + (torch.arange(192) * 37 % 192).float() / 192
        lens[:] = 1500
    plan = small(TILE=128, stream_warps=1, CAP=256, FT=256)
    assert plan.lanes == 32 and plan.TILE // plan.lanes == 4
    for k in (5, 40):
        got = select(x, k, lens, plan=plan)
        assert_same_sets(got, topk_select_reference(x, k, lens, 1), f"{dist} k={k} seed={fresh_seed}")
    if dist == "hot_run":  # the whole-tile form ran, and the finish took its words from the buffer
        thr, branch = _thresholds(x, lens, 40, plan), _branch(x, lens, 40, plan)
        for r in range(4):
            above = torch.zeros(1536, dtype=torch.int32)  # the row in whole tiles (tiles start at multiples of 128)
            above[:1500] = (ordered_hi(x[r]) > thr[r]).to(torch.int32)
            per_thread = above.reshape(-1, 4, 32).sum(1)  # [tile, thread]: a thread's words are 32 columns apart
            assert int(per_thread.max()) >= 3 and branch[r] == "top of keys above", (r, thr[r], fresh_seed)


def _sample(x, lens, k, plan) -> torch.Tensor:
    """The sample launch alone: int32 ``[rows, 2]``, each row's threshold word and bucket shift."""
    thr, _, _ = _sample_all(x, lens, k, plan)
    return thr


def _sample_all(x, lens, k, plan):
    """The sample launch alone, on counters and buckets that hold garbage: its thresholds, counters and buckets."""
    from dsa_lab.kernels import longrow as kernel
    from dsa_lab.launch import run

    rows, n = x.shape
    thr = torch.empty(2 * rows, dtype=torch.int32)
    cnt, hist = torch.full((rows, 4), 12345, dtype=torch.int32), torch.full((rows, plan.NB), -77, dtype=torch.int32)
    run(kernel._longrow_sample_kernel, (rows,), x, x.stride(0), lens, lens, thr, cnt, hist, n, n, k, 1, plan.CAP,
        plan.CAP_EQ, float(plan.RZ), float(plan.RB), 1, 0, BLOCK_SCORES=False, NCH=plan.NCH, CH=plan.CH, NB=plan.NB,
        STILE=plan.STILE, PDL=False, num_warps=plan.num_warps)
    return thr, cnt, hist


def _thresholds(x, lens, k, plan) -> list[int]:
    """Each row's threshold word from the sample launch."""
    return [int(t) for t in _sample(x, lens, k, plan)[0::2]]


def _stream_launch(x, lens, thr, cnt, hist, plan):
    """The stream launch alone on the given thresholds, counters and buckets: the candidate words and columns, and
    the columns equal to each row's threshold."""
    from dsa_lab.kernels import longrow as kernel
    from dsa_lab.launch import run

    rows, n = x.shape
    gtw, gtc = (torch.full((rows, plan.CAP), -7, dtype=torch.int32) for _ in range(2))
    eqc = torch.full((rows, plan.CAP_EQ), -7, dtype=torch.int32)
    run(kernel._longrow_stream_kernel, (rows, plan.P), x, x.stride(0), lens, lens, thr, gtw, gtc, eqc, cnt, hist,
        n, n, 1, 1, plan.P, plan.CAP, plan.CAP_EQ, 1, 0, BLOCK_SCORES=False, TILE=plan.TILE, LANES=plan.lanes,
        NB=plan.NB, PDL=False, num_warps=plan.stream_warps)
    return gtw, gtc, eqc


def _stream(x, lens, k, plan):
    """The sample and stream launches alone: each row's threshold, its counts of words above and equal to it, its
    bucket counts and its buffer of equal columns, as the finish would find them."""
    thr, cnt, hist = _sample_all(x, lens, k, plan)
    eqc = _stream_launch(x, lens, thr, cnt, hist, plan)[2]
    return thr[0::2], cnt, hist, eqc


@pytest.mark.parametrize("dist", ["few_values", "equal", "normal"])
def test_longrow_stream_counts(dist, fresh_seed):
    """The stream's counts are exact whatever its buffers hold: words above the threshold (and in the buckets), and
    words equal to it, also where a program saw the buffer of equal columns full and counted the rest of its share
    apart (``few_values``, ``equal``: far more ties than the buffer holds); the buffer holds distinct columns of
    words equal to the threshold."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, n, k = 4, 1500, 40
    x = fill(dist, rows, n, gen=gen)
    lens = _lens(rows, n, gen)
    plan = small()
    thr, cnt, hist, eqc = _stream(x, lens, k, plan)
    for r in range(rows):
        h = ordered_hi(x[r, :int(lens[r])])
        gt, eq = int((h > thr[r]).sum()), int((h == thr[r]).sum())
        assert (int(cnt[r, 1]), int(cnt[r, 2]), int(hist[r].sum())) == (gt, eq, gt), (dist, r, fresh_seed)
        held = eqc[r, :min(eq, plan.CAP_EQ)]
        assert len(set(held.tolist())) == len(held) and bool((h[held.long()] == thr[r]).all()), (dist, r, fresh_seed)
    if dist != "normal":  # far more ties than the buffer holds: the programs filled it, then counted apart
        assert int(cnt[0, 2]) > 4 * plan.CAP_EQ, (int(cnt[0, 2]), fresh_seed)


def _stream_at(x, lens, words, plan, sh=20):
    """The stream launch alone against given threshold words (bucket shift ``sh``), on zeroed counters: each row's
    counters, buckets, candidate words and columns, and columns equal to its threshold."""
    rows = x.shape[0]
    thr = torch.tensor([v for w in words for v in (w, sh)], dtype=torch.int32)
    cnt, hist = torch.zeros((rows, 4), dtype=torch.int32), torch.zeros((rows, plan.NB), dtype=torch.int32)
    return (cnt, hist, *_stream_launch(x, lens, thr, cnt, hist, plan))


# thresholds at every kind of word: -inf, a negative and a positive denormal, -1.0, -0.0, +0.0, 1.0, the largest
# finite, +inf, NaN
_SPECIAL_WORDS = [NEG_INF_HI, int(ordered_hi(torch.tensor([-1e-45]))[0]), int(ordered_hi(torch.tensor([-1.0]))[0]), -1,
                  0, int(ordered_hi(torch.tensor([1e-45]))[0]), int(ordered_hi(torch.tensor([1.0]))[0]),
                  int(ordered_hi(torch.tensor([3.4028235e38]))[0]), 0x7F800000, 0x7FFFFFFF]


@pytest.mark.parametrize("dist", ["specials", "signed_zero", "denormal", "nan_payloads"])
def test_longrow_stream_at_special_thresholds(dist, fresh_seed):
    """Against a threshold at any word (a compare of values as floats would be wrong at zero's two words and at
    NaN's), the stream's counts, buckets and buffers are exact: every word above the threshold with its column, once,
    in the bucket of its distance above it, and distinct columns of the words equal to it (none at -inf)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n = 700
    plan = small(CAP=1024, CAP_EQ=64, FT=1024, FT_EQ=64)
    x = fill(dist, len(_SPECIAL_WORDS), n, gen=gen)
    lens = torch.randint(n // 2, n + 1, (len(_SPECIAL_WORDS),), generator=gen).to(torch.int32)
    sh = 20
    cnt, hist, gtw, gtc, eqc = _stream_at(x, lens, _SPECIAL_WORDS, plan, sh)
    for r, T in enumerate(_SPECIAL_WORDS):
        h = ordered_hi(x[r, :int(lens[r])]).to(torch.int64)
        above, equal = h > T, (h == T) & (h > NEG_INF_HI)
        gt, eq = int(above.sum()), int(equal.sum())
        what = (dist, r, hex(T & 0xFFFFFFFF), fresh_seed)
        assert (int(cnt[r, 1]), int(cnt[r, 2])) == (gt, eq), what
        buckets = torch.clamp(((h[above] - T) & 0xFFFFFFFF) >> sh, max=plan.NB - 1)
        assert hist[r].tolist() == torch.bincount(buckets, minlength=plan.NB).tolist(), what
        got = sorted(zip(gtc[r, :gt].tolist(), gtw[r, :gt].tolist()))
        want = [(c, int(h[c])) for c in above.nonzero().flatten().tolist()]
        assert got == want, what
        held = eqc[r, :min(eq, plan.CAP_EQ)]
        assert len(set(held.tolist())) == len(held) and bool(equal[held.long()].all()), what


def test_longrow_sample_rank(fresh_seed):
    """The threshold is the sample's word of rank :func:`dsa_lab.plans.longrow_rank`: the k-th word's rank scaled to
    the sample plus the margin (``RZ`` deviations and ``RB`` words), at most the rank that aims at half the buffer,
    or at 2k where that is more (a small buffer)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n = 1600
    x = torch.randn(2, n, generator=gen)
    lens = torch.full((2,), n, dtype=torch.int32)
    # (k, plan fields, rank): the margin (m = 0.2: 0.2 + 2 x 0.45 + 1.5 -> 3); half of 512 words (m = 1.2: 11 by
    # the margin, 10 by the buffer); 2k (m = 1.2: half of 96 words is rank 1, 2k rank 3)
    for k, kw, rank in ((5, dict(CAP=1024, FT=1024, RZ=2.0, RB=1.5), 3), (30, dict(CAP=512, FT=512), 10), (30, {}, 3)):
        plan = small(**kw)
        assert plans.longrow_rank(n, k, plan) == rank, (k, kw)
        runs = _runs(n, plan)
        assert _thresholds(x, lens, k, plan) == _sample_words(x, runs, rank), (k, kw, fresh_seed)
        assert_same_sets(select(x, k, lens, plan=plan), topk_select_reference(x, k, lens, 1), f"seed={fresh_seed}")


def test_longrow_sample_rank_on_clusters_far_apart(fresh_seed):
    """The sample's threshold on words in two clusters far apart (the ``band`` law: a band of a few words near 0.5,
    outliers near 10), where the search halves the empty range between the clusters for about 40 counting steps:
    the threshold is still the sample's word of its rank, and the select exact."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n, k = 1600, 30
    plan = small()
    runs = _runs(n, plan)
    band = 0.5 + 1e-6 * torch.rand(3, n, generator=gen)
    x = torch.where(torch.rand(3, n, generator=gen) < 0.02, 10.0 + torch.randn(3, n, generator=gen), band)
    x[2, runs[::9]] = 10.0 + torch.rand(8, generator=gen)  # rank 3 of the sample among the outliers
    lens = torch.full((3,), n, dtype=torch.int32)
    rank = plans.longrow_rank(n, k, plan)
    assert _thresholds(x, lens, k, plan) == _sample_words(x, runs, rank), fresh_seed
    assert_same_sets(select(x, k, lens, plan=plan), topk_select_reference(x, k, lens, 1), f"seed={fresh_seed}")


def test_longrow_rank_misses_rarely():
    """The default plan's threshold rank: on rows of independent values of 40000-262144 columns, fewer than k at or
    above it (a second read) at most once in 3.5 million rows for k of 257-2048 (the rank's exact tail), and it aims
    at no more than half the buffer; lower than the rank that aims at 2k where the sample sees the row densely."""
    from dsa_lab.workbook.longrow import miss_probability

    plan = plans.longrow(1, 262144, 2048, {"sm_count": 132})
    s = plan.NCH * plan.CH
    for L in (40000, 65536, 100000, 131072, 163840, 200000, 262144):
        for k in (257, 512, 1024, 2048):
            r = plans.longrow_rank(L, k, plan)
            assert miss_probability(L, k, r, s) < 1 / 3.5e6 and r * L // s <= plan.CAP // 2 + L // s, (L, k, r)
    assert plans.longrow_rank(65536, 2048, plan) < 2 * 2048 * s // 65536
    assert plans.longrow_rank(262144, 512, plan) < 2 * 512 * s // 262144 + 16


def _branch(x, lens, k, plan):
    """The finish each row takes, from the sample launch's thresholds and exact counts (as the kernel decides)."""
    rows, n = x.shape
    thr = _thresholds(x, lens, k, plan)
    h = torch.where(torch.arange(n)[None, :] < lens[:, None].long(), ordered_hi(x), NEG_INF_HI)
    out = []
    for r in range(rows):
        t = thr[r]
        gt, eq = int((h[r] > t).sum()), int((h[r] == t).sum()) if t > NEG_INF_HI else 0
        if gt > plan.CAP or (t > NEG_INF_HI and gt + eq < k):
            out.append("fallback")
        elif gt >= k:
            out.append("top of keys above")
        elif t > NEG_INF_HI:
            out.append("ties from the buffer" if eq <= plan.CAP_EQ else "ties by a scan")
        else:
            out.append("fewer than k")
    return out


def test_longrow_branches(fresh_seed):
    """Rows built to take each finish: the top k of the keys above the threshold, ties at the threshold from the
    buffer and wider than it (a scan in column order), a top the sample cannot see (the exact fallback), fewer
    candidates than k."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n, k = 1600, 20
    x = torch.randn(7, n, generator=gen)
    lens = torch.full((7,), n, dtype=torch.int32)
    x[0] = 0.25  # one value everywhere: ties wider than the buffer, scanned in column order
    lens[1] = 60  # sampled whole: the threshold is the k-th word; 10 above it, 14 tied at it (fit in the buffer)
    x[1, :60] = -torch.rand(60, generator=gen)
    x[1, 3:13] = 2.0 + torch.rand(10, generator=gen)
    x[1, 20:34] = 1.0
    x[2] = torch.arange(n, dtype=torch.float32) % 7  # seven values: ties wider than the buffer
    # the sample sees only its runs: low words there, high ones elsewhere -- far more keys above the threshold
    # than the buffer holds: the exact fallback
    plan = small()
    runs = _runs(n, plan)
    x[3] += 10.0
    x[3, runs] -= 20.0
    x[5, :] = float("-inf")
    x[5, 7:12] = 1.0  # five candidates: fewer than k
    others = torch.tensor([c for c in range(n) if c not in set(runs)])
    x[6] = -10.0  # the sample's words near 0, 50 distinct ones above them elsewhere: the top k of those
    x[6, runs] = 0.01 * torch.randn(len(runs), generator=gen)
    x[6, others[torch.randperm(len(others), generator=gen)[:50]]] = 10.0 + torch.rand(50, generator=gen)
    got = select(x, k, lens, plan=plan)
    assert_same_sets(got, topk_select_reference(x, k, lens, 1), f"seed={fresh_seed}")
    assert set(_branch(x, lens, k, plan)) == {"top of keys above", "ties from the buffer", "ties by a scan",
                                               "fallback", "fewer than k"}, _branch(x, lens, k, plan)


def test_longrow_wide_tie_steps(fresh_seed):
    """A wide tie's scan in column order, a first step then steps four times as wide: needed ties far apart (row 0:
    10 words above a value that every sampled column and 60 more spread over the row hold), close together (row 1:
    four values), and a row read only in part (row 2: two values, so that the sample of its live columns holds the
    top one at least at the threshold's rank but less than once in 10^7 runs; with four, one run in about 20 put the
    threshold a value lower, above more words than the buffer holds, and took the exact fallback)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n, k = 1500, 40
    plan = small()
    runs = _runs(n, plan)
    others = torch.tensor([c for c in range(n) if c not in set(runs)])
    pick = others[torch.randperm(len(others), generator=gen)[:70]]
    x = torch.rand(3, n, generator=gen)
    x[0, runs], x[0, pick[:60]], x[0, pick[60:]] = 3.0, 3.0, 5.0 + torch.rand(10, generator=gen)
    x[1] = torch.randint(0, 4, (n,), generator=gen).float()
    x[2] = torch.randint(0, 2, (n,), generator=gen).float()
    lens = torch.tensor([n, n, int(torch.randint(500, n, (1,), generator=gen))], dtype=torch.int32)
    got = select(x, k, lens, plan=plan)
    assert_same_sets(got, topk_select_reference(x, k, lens, 1), f"seed={fresh_seed}")
    assert _branch(x, lens, k, plan) == ["ties by a scan"] * 3, _branch(x, lens, k, plan)


def test_longrow_sample_steps_below_a_wide_tie(fresh_seed):
    """A tie at the sample's threshold wider than half the buffer of equal columns (the ``band`` law: a narrow band
    whose top word many columns share, sparse outliers above): where the finish would scan more than four of its
    wide steps for the ties it needs and the words at or above the tie fit three quarters of the candidate buffer,
    the threshold is the sample's next word below and the finish cuts the tie by column from the candidates; where
    the scan is short or the words do not fit, the threshold stays and the finish scans the row for the tie, and
    where the tie fits half its buffer it stays and comes from the buffer.  Row 1: a word the sample holds once is
    no tie (no step)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n, k = 1500, 40
    runs = _runs(n, small())
    others = torch.tensor([c for c in range(n) if c not in set(runs)])
    x = torch.rand(2, n, generator=gen)
    pick = others[torch.randperm(len(others), generator=gen)[:54]]
    tied = torch.tensor(runs)[torch.randperm(len(runs), generator=gen)[:6]]
    # 50 ties (6 sampled: about 140 scaled to the row) and 10 outliers the sample misses: by the sample, all 40
    # needed from the tie, a scan of about 430 columns
    x[0, tied], x[0, pick[:44]], x[0, pick[44:]] = 2.0, 2.0, 5.0 + torch.rand(10, generator=gen)
    x[1] = torch.arange(n, dtype=torch.float32) / n
    lens = torch.full((2,), n, dtype=torch.int32)
    below = int(ordered_hi(x[0, runs][x[0, runs] < 2.0].max()))
    tie = int(ordered_hi(torch.tensor(2.0)))
    runs1 = sorted(ordered_hi(x[1, runs]).tolist(), reverse=True)
    wide = dict(CAP=512, FT=512, RZ=1.0, RB=0.0)  # rank 4 in the sample (1.7 + 1.3), room for the tie's words
    for plan, thr0, branch in ((small(STILE=16, **wide), below, "top of keys above"),  # 6.7 wide steps of 64
                               (small(STILE=64, **wide), tie, "ties by a scan"),  # 1.7 of 256: short
                               (small(STILE=16), tie, "ties by a scan"),  # the tie's words past 3/4 of CAP
                               (small(STILE=16, CAP_EQ=512, FT_EQ=512, **wide), tie, "ties from the buffer")):
        assert _thresholds(x, lens, k, plan) == [thr0, runs1[3]], (plan, fresh_seed)
        assert _branch(x, lens, k, plan)[0] == branch
        got = select(x, k, lens, plan=plan)
        assert_same_sets(got, topk_select_reference(x, k, lens, 1), f"CAP={plan.CAP} seed={fresh_seed}")
    assert _finish_of_top(x, lens, k, small(STILE=16, **wide))[0] == "ties by column"


def _finish_of_top(x, lens, k, plan):
    """For the rows whose finish takes the top k of the words above the threshold: how the histogram's bucket of
    the k-th word is used (all its words; a part ranked in pairs, at most ``FB`` words; else a part found by
    counting, or a part with ties cut by column)."""
    rows, n = x.shape
    thr = _sample(x, lens, k, plan)
    h = torch.where(torch.arange(n)[None, :] < lens[:, None].long(), ordered_hi(x), NEG_INF_HI).long()
    out = []
    for r in range(rows):
        t, sh = int(thr[2 * r]), int(thr[2 * r + 1])
        w = h[r][h[r] > t]
        if not k < len(w) <= plan.CAP:
            out.append(None)
            continue
        b = torch.clamp((w - t) >> sh, max=plan.NB - 1)
        kth = int(w.sort(descending=True).values[k - 1])
        bk = int(b[w == kth][0])
        above, inb = int((b > bk).sum()), int((b == bk).sum())
        if above + inb == k:
            out.append("bucket whole")
        elif inb <= plan.FB:
            out.append("pairs")
        else:
            out.append("ties by column" if int((w > kth).sum()) + int((w == kth).sum()) > k else "bucket part")
    return out


def test_longrow_finish_buckets(fresh_seed):
    """The finish's histogram: the bucket of the k-th word needed whole; or in part, its words ranked in pairs where
    it holds at most ``FB`` (ties at the k-th to the smaller columns); else its k-th found by counting steps over
    its words, or ties at the k-th cut by column.  The sample sees its runs only (1 to 1.5 evenly: the threshold is
    the second largest, the buckets 4096 words wide); 40 words it cannot see lie above, spread a bucket apart or
    packed into one; or 14 spread above 12 packed (5 of them needed; in row 5 the last 9 of them tied)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n, k = 1600, 20
    plan = small()
    runs = _runs(n, plan)
    others = torch.tensor([c for c in range(n) if c not in set(runs)])
    x = torch.full((6, n), -10.0)
    x[:, runs] = torch.linspace(1.0, 1.5, len(runs))
    j = torch.arange(40, dtype=torch.float32)
    few = torch.where(j < 14, 1.52 + 1e-3 * j, 1.495 + 1e-6 * (j - 14))
    planted = {0: 1.495 + 1e-3 * j, 1: 1.495 + 1e-6 * j, 2: torch.where(j < 10, 1.51, 1.495),
               4: few[:26], 5: torch.where(j[:26] < 17, few[:26], 1.495)}
    for r, v in planted.items():
        x[r, others[torch.randperm(len(others), generator=gen)[:len(v)]]] = v
    x[3] = torch.randn(n, generator=gen)
    lens = torch.full((6,), n, dtype=torch.int32)
    got = select(x, k, lens, plan=plan)
    assert_same_sets(got, topk_select_reference(x, k, lens, 1), f"seed={fresh_seed}")
    got = _finish_of_top(x, lens, k, plan)
    assert got[:3] + got[4:] == ["bucket whole", "bucket part", "ties by column", "pairs", "pairs"], got


@pytest.mark.parametrize("P", [1, 2, 7])
def test_longrow_programs_and_row_repeat(P, fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    x = torch.randn(6, 900, generator=gen)
    lens = torch.tensor([900, 0, 333], dtype=torch.int32)
    got = select(x, 24, lens, 2, plan=small(P=P))
    assert_same_sets(got, topk_select_reference(x, 24, lens, 2), f"P={P} seed={fresh_seed}")


def test_longrow_sample_zeroes_the_counters(fresh_seed):
    """The sample launch zeroes each row's counters and buckets (the stream adds into them): the call's buffer may
    hold anything before it, as a fresh allocation does."""
    gen = torch.Generator().manual_seed(fresh_seed)
    x = torch.randn(3, 700, generator=gen)
    plan = small()
    _, cnt, hist = _sample_all(x, torch.full((3,), 700, dtype=torch.int32), 9, plan)
    assert int(cnt.abs().sum()) == 0 and int(hist.abs().sum()) == 0


def test_longrow_default_sizes(fresh_seed):
    """The plan the rules make for a long row (k bucket 512: 8192 words above the threshold, 1024 equal to it,
    256-column stream tiles, the 4096-word sample), on rows wider than the bisect select's tile."""
    gen = torch.Generator().manual_seed(fresh_seed)
    x = torch.randn(2, plans.BISECT_MAX_COLS + 5, generator=gen)
    lens = torch.tensor([plans.BISECT_MAX_COLS + 5, 3000], dtype=torch.int32)
    plan = plans.longrow(2, x.shape[1], 300, _impl.facts_for(x))
    assert (plan.CAP, plan.CAP_EQ, plan.TILE, plan.NCH * plan.CH, plan.RZ, plan.RB) == (8192, 1024, 256, 4096, 5, 4)
    out = poisoned(2, 300, "cpu")
    launch.topk_select(x, 300, lens, 1, out, plan=plan)
    assert_same_sets(out, topk_select_reference(x, 300, lens, 1), f"seed={fresh_seed}")


@pytest.mark.parametrize("starts,law", [(False, "normal"), (True, "normal"), (True, "few_values")])
def test_longrow_candidate_blocks_at_block_size_one(starts, law, fresh_seed):
    """``select_candidate_blocks`` at block size 1 on the long-row path: the select reads the logits itself (no
    scores launch), each row's newest column pinned to +inf, then the flags kernel (``few_values``: ties wider than
    their buffer, the finish's scan for them bounded by the row's start and end)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, k = 4, 1200, 30
    if law == "few_values":
        x = torch.randint(0, 3, (rows, width), generator=gen).float()
    else:
        x = torch.randn(rows, width, generator=gen)
    ends = torch.tensor([1200, 700, 0, 1500], dtype=torch.int32)
    st = torch.tensor([0, 100, 0, 300], dtype=torch.int32) if starts else None
    plan = plans.CandidateBlocks(small(), 0, False, True)
    out = poisoned(rows, k, "cpu")
    flags = torch.full((rows, width + 1), 7, dtype=torch.uint8)
    launch.candidate_blocks(x, ends, k, st, 1, 1, out, with_flags=True, flags_out=flags, plan=plan)
    want, wflags = dsa_lab.select_candidate_blocks(x, ends, k, row_starts=st, block_size=1, impl="reference",
                                                   with_flags=True)
    assert_same_sets(out, want, f"seed={fresh_seed}")
    assert torch.equal(flags, wflags)


def test_longrow_rule():
    """k of 257-2048 on rows wider than the bisect select's tile take the long-row select on rows of 2^16 columns
    and more at any row count, on narrower rows from 2^20 columns in all (rows x width), the radix select below; k
    above 2048 the radix select; at block size 1 the candidate path reads the logits itself, at larger block sizes it
    keeps the scores launch and the radix select."""
    f = {"sm_count": 132, "name": "x"}
    assert plans.select_algo(1, 262144, 2048, 132) == "longrow" == plans.select_algo(640, 262144, 300, 132)
    assert plans.select_algo(1, 131072, 2048, 132) == "longrow" == plans.select_algo(1, 163840, 512, 132)
    assert plans.select_algo(1, 65535, 2048, 132) == "radix" == plans.select_algo(8, 65535, 512, 132)
    assert plans.select_algo(1, 65536, 512, 132) == "longrow" == plans.select_algo(32, 32769, 2048, 132)
    assert plans.select_algo(64, 65536, 4096, 132) == "radix" and plans.select_algo(640, 32768, 2048, 132) == "bisect"
    assert plans.select_algo(1, 65536, 256, 132) == "hier"
    pl = plans.select(640, 262144, 2048, f)
    assert (pl.P, pl.CAP, pl.CAP_EQ, pl.FT) == (14, 8192, 4096, 8192) and plans.select(16, 131072, 512, f).P == 512
    cb = plans.candidate_blocks(64, 65536, 1000, f, block_size=1)
    assert cb.select.algo == "longrow" and cb.scores_programs == 0 and cb.flags_kernel
    assert plans.candidate_blocks(64, 65536 * 8, 1000, f, block_size=8).select.algo == "radix"
    with pytest.raises(ValueError, match="at most 2048"):
        plans.longrow(1, 65536, 4096, f)
    assert dataclasses.replace(pl, P=1).P == 1


def test_longrow_compiles_once():
    """Compile once: the long-row select's variants are two sample kernels and four main kernels (k bucket x logits
    or scores), all in the warm list; rows, widths, lengths and k inside a bucket select none."""
    from dsa_lab import warmup

    warm = {key for key in warmup.variants(warmup.warm_calls(max_rows=2), warmup.H200) if "_longrow" in key}
    assert len(warm) == 6, sorted(warm)
    calls = [warmup.Call("select", r, w, k) for r in (9, 64, 640) for w in (262147, 300001) for k in (257, 700)]
    calls += [warmup.Call("full", r, 70001, k, block_size=1, starts=s) for r in (30, 99) for k in (600, 2048)
              for s in (False, True)]
    got = {key for key in warmup.variants(calls, warmup.H200) if "_longrow" in key}
    assert got <= warm, got - warm


def test_every_long_matrix_case_takes_the_long_row_select():
    """The named matrix's long-row cases are there to run the long-row select at GPU sizes: each must be a shape the
    rule sends to it (a rule change that moved one to the radix would leave that path's cases untested)."""
    from dsa_lab import cases

    long = [c for c in cases.MATRIX if c.name.startswith("long_")]
    assert len(long) >= 11
    for c in long:
        n = c.width if c.op == "select" else -(-c.width // c.block_size)
        for sm in (132, 256, 304):  # H100 / H200, MI355X, MI300X
            assert plans.select_algo(c.rows, n, c.k, sm) == "longrow", (c.name, sm)
