"""Triton block scores (dsa_lab.kernels.scores: bounded and padded) and candidate flags (dsa_lab.kernels.flags)
against the torch contract code."""
import pytest
import torch

import dsa_lab
from dsa_lab import plans
from dsa_lab.flags import candidate_flags_torch
from dsa_lab.launch import scores as ls
from dsa_lab.scores import block_scores_torch

INF, NAN = float("inf"), float("nan")


def scores_launch(x, e, s, bs, rr, *, fill_dead=True, programs=None, zero_flags=None, stage_a=None, rows_stride=None):
    """The scores launch as the launchers make it (``programs`` per row; default one per tile of the width), into a
    new output whose row stride may be padded (``rows_stride``)."""
    rows, width = x.shape
    nb = -(-width // bs)
    out = torch.empty((rows, rows_stride or nb), dtype=torch.float32)[:, :nb]
    q = programs or plans.scores_programs(rows, nb, bs, 4, None)
    return ls.block_scores_into(x, e, s, out, bs, rr, q, fill_dead=fill_dead, zero_flags=zero_flags,
                                    stage_a=stage_a)


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
    got = ls.block_scores(x, e, s, bs, rr, padded=padded)
    want = block_scores_torch(x, e, s, bs, rr)
    assert got.shape == want.shape and got.dtype == torch.float32
    assert same_bits(got, want), f"seed={fresh_seed}\n{got}\n{want}"


def _extent(end, start, width, bs, nblocks):
    """A row's block extent (the select kernel's ``L``): live blocks, or up to the pinned newest one."""
    ext = max(-(-(max(min(end, width) - start, 0)) // bs), (end - start - 1) // bs + 1 if end > start else 0)
    return min(ext, nblocks)


@pytest.mark.parametrize("programs", [None, 2])
@pytest.mark.parametrize("fill_dead", [True, False], ids=["fill-dead", "skip-dead"])
def test_block_scores_many_programs_per_row(fill_dead, programs, fresh_seed):
    """Rows spanning several 512-block programs: programs wholly past a row's extent skip the loads; with
    fill_dead they write -inf (every slot bit-identical to torch), without it the slots up to the extent
    (the live blocks and the pinned newest one, even past the width) still are."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs = 5, 40000, 8
    x = torch.randn(rows, width, generator=gen)
    x[torch.rand(rows, width, generator=gen) < 0.01] = NAN
    e = torch.tensor([40000, 4100, 0, 39990, 45000])
    st = torch.tensor([0, 100, 0, 39000, 38000])  # last row: end past the width, newest block past it
    got = scores_launch(x, e, st, bs, 1, fill_dead=fill_dead, programs=programs, rows_stride=5008)
    want = block_scores_torch(x, e, st, bs, 1)
    if fill_dead:
        assert same_bits(got, want), f"seed={fresh_seed}"
    for r in range(rows):
        ext = _extent(int(e[r]), int(st[r]), width, bs, want.shape[1])
        assert same_bits(got[r, :ext], want[r, :ext]), f"row {r} seed={fresh_seed}"


@pytest.mark.parametrize("bs", [3, 8])
@pytest.mark.parametrize("width", [9000, 9001], ids=["aligned-rows", "unaligned-rows"])
def test_block_scores_alignment_buckets_same_bits(bs, width, fresh_seed):
    """Logits whose rows start 16 elements apart (the kernel's aligned form) and not: the output equals torch's bit
    for bit, for a block size that pads lanes (3 -> 4) and one that does not; ends inside, at and past a tile
    boundary; logits past each end are NaN (never read); with and without starts."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows = 4
    x = torch.randn(rows, width, generator=gen)
    x[torch.rand(rows, width, generator=gen) < 0.02] = NAN
    tile = 4096 // (4 if bs == 3 else bs) * bs  # columns per tile
    e = torch.tensor([width, tile, tile + 5, 2 * tile - 1])
    for r in range(rows):
        x[r, int(e[r]):] = NAN
    for starts in (None, torch.tensor([0, 7, 0, 1000])):
        got = ls.block_scores(x, e, starts, bs, 1)
        assert same_bits(got, block_scores_torch(x, e, starts, bs, 1)), f"bs={bs} starts={starts} seed={fresh_seed}"


def test_block_scores_garbage_past_end_and_public_api():
    x = torch.randn(2, 64)
    x[0, 20:] = NAN
    x[1, 5:] = INF
    e = torch.tensor([20, 5])
    for padded in (False, True):
        got = ls.block_scores(x, e, None, 8, 1, padded=padded)
        assert same_bits(got, block_scores_torch(x, e, None, 8, 1))
        assert not got[:, 3:].isnan().any()  # blocks past the end are -inf, never the garbage
    assert same_bits(dsa_lab.block_scores(x, e, impl="triton"), block_scores_torch(x, e))


def test_block_scores_nan_propagates_and_newest_pinned():
    x = torch.zeros(1, 32)
    x[0, 3] = NAN
    got = ls.block_scores(x, torch.tensor([30]), None, 8, 1)
    assert got[0, 0].isnan() and got[0, 3] == INF and got[0, 1] == 0.0



def _f32(bits):
    return torch.tensor(bits, dtype=torch.int64).to(torch.int32).view(torch.float32)


def test_block_max_is_the_contract_order_signed_zero_and_subnormals():
    """Block max in the key order, bit for bit: +0.0 beats -0.0 in either position, subnormals are
    compared exactly (never flushed), the largest negative subnormal beats -0.0's neighbours, any NaN
    wins.  A GPU float max got the first two wrong on the H200 (fuzz, 2026-11-29)."""
    blocks = [
        [0x80000000, 0x00000000, 0x80000000, 0x80000000],  # -0, +0, -0, -0 -> +0
        [0x00000000, 0x80000000, 0x80000000, 0x80000000],  # +0 first -> +0
        [0x80000000, 0x80000000, 0x80000000, 0x80000000],  # all -0 -> -0
        [0x00000003, 0x00000007, 0x00000001, 0x80000000],  # subnormals -> 7 (not flushed to 0)
        [0x80000005, 0x80000002, 0x80000009, 0x80000003],  # negative subnormals -> -2
        [0x80000005, 0x80000000, 0x80000009, 0x80000003],  # -0 beats every negative subnormal
        [0x7F800000, 0xFFC00001, 0x00000001, 0x3F800000],  # a negative NaN beats +inf
        [0x00000001, 0xBF800000, 0xFF800000, 0x80000001],  # smallest positive subnormal
    ]
    bits = [b for blk in blocks for b in blk]
    x = _f32(bits).reshape(1, -1)
    e = torch.tensor([x.shape[1] + 100])  # newest block past the width: nothing pinned
    want_bits = [0x00000000, 0x00000000, 0x80000000, 0x00000007, 0x80000002, 0x80000000, 0x7FFFFFFF, 0x00000001]
    ref = block_scores_torch(x, e, None, 4, 1)
    assert ref.view(torch.int32).tolist() == [[b - 2**32 if b >= 2**31 else b for b in want_bits]]
    for padded in (False, True):
        got = ls.block_scores(x, e, None, 4, 1, padded=padded)
        assert torch.equal(got.view(torch.int32), ref.view(torch.int32)), (padded, got.view(torch.int32))
    # ranking: NaN block 6, subnormal blocks 3 (7) and 7 (1), then the +0 blocks tie -> the smaller id 0
    ids = dsa_lab.select_candidate_blocks(x, e, 4, block_size=4, impl="reference")
    assert sorted(ids[0].tolist()) == [0, 3, 6, 7]
    for impl in ("triton", "triton_unfused"):
        got = dsa_lab.select_candidate_blocks(x, e, 4, block_size=4, impl=impl)
        assert sorted(got[0].tolist()) == [0, 3, 6, 7], impl


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
    got = ls.candidate_flags(c, width, s, bs, rr)
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
        assert same_bits(ls.block_scores(x, e, s, 8, 1, padded=padded), want)


def test_programs_per_row_rule():
    """The bounded kernel's programs per row: the padded tiles (None), else about mult x SM in all, at least one per
    row, never more than the row's tiles."""
    programs_per_row = plans.scores_programs
    assert plans.scores_tile(8) == 512 and plans.scores_tile(1) == 4096 and plans.scores_tile(3) == 1024
    assert programs_per_row(640, 32768, 8, 132, None) == 64
    assert programs_per_row(1, 32768, 8, 132, 32) == 64  # few rows: every tile its own program
    assert programs_per_row(640, 32768, 8, 132, 32) == 7
    assert programs_per_row(100000, 32768, 8, 132, 32) == 1
    assert programs_per_row(4, 100, 8, 132, 32) == 1


def test_scores_grid_rule():
    """The unfused scores grid's multiple of the SM count by rows (132 SMs): 32, then 12 from SM/5 rows, 16 from SM/3
    rows to 3 x SM, 32 beyond; without the dependent launch always 32."""
    _scores_mult = plans._scores_mult

    assert [_scores_mult(r, 132, True) for r in (1, 26, 27, 43, 44, 396, 397, 640)] == [32, 32, 12, 12, 16, 16, 32, 32]
    assert {_scores_mult(r, 132, False) for r in (1, 32, 100, 640)} == {32}


def test_zero_flags_by_the_scores_launch(fresh_seed):
    """The unfused composition's scores launch zeroes every byte of a poisoned flags tensor (the row's programs one
    slice each, 1 and 3 programs per row, rows of n + 1 bytes at every alignment; 8-byte words where the tensor is
    16-byte aligned, bytes where it is not) and writes the same scores."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs = 3, 9000, 8
    x = torch.randn(rows, width, generator=gen)
    e = torch.tensor([9000, 300, 0])
    nb = -(-width // bs)
    want = block_scores_torch(x, e, None, bs, 1)
    for q in (1, 3):
        for offset in (0, 1):
            buf = torch.full((rows * (nb + 1) + offset,), 0xAB, dtype=torch.uint8)
            fl = buf[offset:].view(rows, nb + 1)
            got = scores_launch(x, e, None, bs, 1, programs=q, zero_flags=fl)
            assert same_bits(got, want) and int(fl.count_nonzero()) == 0, f"programs={q} offset={offset}"
            assert offset == 0 or int(buf[0]) == 0xAB


@pytest.mark.parametrize("sg,q,sg_min", [(64, None, 0), (4, 3, 0), (8, 2, 163), (16, 5, 100)])
def test_stage_a_keys_by_the_scores_launch(sg, q, sg_min, fresh_seed):
    """``stage_a``: besides the same scores, the launch stores each row's stage-A keys into the select's workspace:
    for every super group ``g`` of ``sg`` blocks holding a block below the row's extent, the largest ordered high
    word of those blocks' scores and ``g``'s first block in the low word (the unfused hier kernel's ``a_first_col``
    keys), for the rows whose extent exceeds ``sg_min`` only (163: the row of 163 blocks gets none).  Every such slot
    is checked against a torch computation from the contract scores; every other slot of the poisoned workspace
    must be left as it was.  NaN and -0.0 inside blocks, ends past the width (the pinned
    newest block past it, inside a stored super group), non-zero starts, an empty row, row_repeat 2, one program per
    tile and more (the launch has no loop: fewer programs than tiles is refused)."""
    from dsa_lab.keys import ordered_hi

    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs, rr = 10, 5000, 8, 2
    x = torch.randn(rows, width, generator=gen)
    x[torch.rand(rows, width, generator=gen) < 0.02] = NAN
    x[torch.rand(rows, width, generator=gen) < 0.05] = -0.0
    # extents (blocks): 576 (a multiple of every super group, mid-tile at the default tile), 81, 0, 625 with the
    # pinned newest block 626 past the width but inside the last stored super group (it must not count), 163
    e = torch.tensor([4608, 777, 0, 5010, 5300])
    s = torch.tensor([0, 130, 0, 0, 4000])
    nb = -(-width // bs)
    wrow = -(-nb // sg) + 5  # the select's workspace has more slots per row than super groups
    poison = 0x5A5A5A5A5A5A5A5A
    ws = torch.full((rows * wrow,), poison, dtype=torch.int64)
    ntiles = plans.scores_tiles(nb, bs)
    if q is not None and q < ntiles:
        with pytest.raises(ValueError, match="one program per tile"):
            scores_launch(x, e, s, bs, rr, fill_dead=False, programs=q, stage_a=(ws, wrow, sg, sg_min))
        q = ntiles + q
    got = scores_launch(x, e, s, bs, rr, fill_dead=False, programs=q, stage_a=(ws, wrow, sg, sg_min))
    sc = block_scores_torch(x, e, s, bs, rr)
    want = torch.full_like(ws, poison)
    for r in range(rows):
        L = _extent(int(e[r // rr]), int(s[r // rr]), width, bs, nb)
        assert same_bits(got[r, :L], sc[r, :L]), f"row {r}: scores differ"
        for g in range(-(-L // sg) if L > sg_min else 0):
            hm = int(ordered_hi(sc[r, g * sg:min(g * sg + sg, L)]).max())
            want[r * wrow + g] = (hm << 32) | (0xFFFFFFFF - g * sg)
    bad = (ws != want).nonzero().flatten()
    assert not len(bad), (f"sg={sg} programs={q} seed={fresh_seed}: first bad slot {int(bad[0])} (row "
                          f"{int(bad[0]) // wrow}): got {int(ws[bad[0]]):#x}, want {int(want[bad[0]]):#x}")
