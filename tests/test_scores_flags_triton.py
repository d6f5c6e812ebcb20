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


def _extent(end, start, width, bs, nblocks):
    """A row's block extent (the select kernel's ``L``): live blocks, or up to the pinned newest one."""
    ext = max(-(-(max(min(end, width) - start, 0)) // bs), (end - start - 1) // bs + 1 if end > start else 0)
    return min(ext, nblocks)


@pytest.mark.parametrize("whole", [False, True], ids=["masked", "whole-tiles"])
@pytest.mark.parametrize("fill_dead", [True, False], ids=["fill-dead", "skip-dead"])
def test_block_scores_many_programs_per_row(fill_dead, whole, fresh_seed):
    """Rows spanning several 512-block programs: programs wholly past a row's extent skip the loads; with
    fill_dead they write -inf (every slot bit-identical to torch), without it the slots up to the extent
    (the live blocks and the pinned newest one, even past the width) still are."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs = 5, 40000, 8
    x = torch.randn(rows, width, generator=gen)
    x[torch.rand(rows, width, generator=gen) < 0.01] = NAN
    e = torch.tensor([40000, 4100, 0, 39990, 45000])
    st = torch.tensor([0, 100, 0, 39000, 38000])  # last row: end past the width, newest block past it
    got = block_scores_triton(x, e, st, bs, 1, fill_dead=fill_dead, whole_tiles=whole)
    want = block_scores_torch(x, e, st, bs, 1)
    if fill_dead:
        assert same_bits(got, want), f"seed={fresh_seed}"
    for r in range(rows):
        ext = _extent(int(e[r]), int(st[r]), width, bs, want.shape[1])
        assert same_bits(got[r, :ext], want[r, :ext]), f"row {r} seed={fresh_seed}"


@pytest.mark.parametrize("bs", [3, 8])
def test_block_scores_whole_tiles_same_bits(bs, fresh_seed):
    """Programs whose tile lies wholly inside the live extent load without a bounds mask (``whole_tiles``): the
    output equals the masked kernel's and torch's bit for bit, for a block size that pads lanes (3 -> 4) and one
    that does not; ends inside, at and past a tile boundary; logits past each end are NaN (never read)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width = 4, 9000
    x = torch.randn(rows, width, generator=gen)
    x[torch.rand(rows, width, generator=gen) < 0.02] = NAN
    tile = 4096 // (4 if bs == 3 else bs) * bs  # columns per program
    e = torch.tensor([width, tile, tile + 5, 2 * tile - 1])
    for r in range(rows):
        x[r, int(e[r]):] = NAN
    for starts in (None, torch.tensor([0, 7, 0, 1000])):
        got = block_scores_triton(x, e, starts, bs, 1, whole_tiles=True)
        assert same_bits(got, block_scores_torch(x, e, starts, bs, 1)), f"bs={bs} starts={starts} seed={fresh_seed}"
        assert same_bits(got, block_scores_triton(x, e, starts, bs, 1, whole_tiles=False))


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
        got = block_scores_triton(x, e, None, 4, 1, padded=padded)
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


def test_programs_per_row_rule():
    """The bounded kernel's programs per row: the padded tiles (None), else about mult x SM in all, at least one per
    row, never more than the row's tiles."""
    from dsa_lab.scores_triton import programs_per_row

    assert programs_per_row(640, 32768, 512, 132, None) == 64
    assert programs_per_row(1, 32768, 512, 132, 32) == 64  # few rows: every tile its own program, as before
    assert programs_per_row(640, 32768, 512, 132, 32) == 7
    assert programs_per_row(100000, 32768, 512, 132, 32) == 1
    assert programs_per_row(4, 100, 128, 132, 32) == 1


def test_zero_flags_by_the_scores_launch(fresh_seed):
    """``zero_flags``: the scores launch zeroes every byte of a poisoned flags tensor (the row's programs one slice
    each, 1 and 3 programs per row, rows of n + 1 bytes at every alignment) and writes the same scores; a tensor of
    the wrong shape or dtype, or the padded kernel, is a ValueError naming the argument."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs = 3, 9000, 8
    x = torch.randn(rows, width, generator=gen)
    e = torch.tensor([9000, 300, 0])
    nb = -(-width // bs)
    want = block_scores_torch(x, e, None, bs, 1)
    for q in (1, 3):
        fl = torch.full((rows, nb + 1), 0xAB, dtype=torch.uint8)
        got = block_scores_triton(x, e, None, bs, 1, programs=q, zero_flags=fl)
        assert same_bits(got, want) and int(fl.count_nonzero()) == 0, f"programs={q}"
    for bad in (torch.zeros((rows, nb), dtype=torch.uint8), torch.zeros((rows, nb + 1), dtype=torch.int32)):
        with pytest.raises(ValueError, match="zero_flags"):
            block_scores_triton(x, e, None, bs, 1, zero_flags=bad)
    with pytest.raises(ValueError, match="zero_flags"):
        block_scores_triton(x, e, None, bs, 1, padded=True, zero_flags=torch.zeros((rows, nb + 1), dtype=torch.uint8))


@pytest.mark.parametrize("tile,q,nw", [(64, 2, 4), (1024, 1, 8), (128, None, 2)])
def test_block_scores_tile_and_warps_same_bits(tile, q, nw, fresh_seed):
    """The bounded kernel's dev knobs ``tile`` (blocks per tile) and ``num_warps``: every slot up to each row's extent
    equals torch's bit for bit, with one or several programs per row striding over tiles of that size (ends inside,
    at and past a tile boundary, NaN inside a block); a tile that is not a power of two is a ValueError."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs = 4, 3000, 8
    x = torch.randn(rows, width, generator=gen)
    x[torch.rand(rows, width, generator=gen) < 0.02] = NAN
    e = torch.tensor([3000, 512, 1, 3100])
    got = block_scores_triton(x, e, None, bs, 1, programs=q, tile=tile, num_warps=nw)
    want = block_scores_torch(x, e, None, bs, 1)
    assert same_bits(got, want), f"tile={tile} programs={q} seed={fresh_seed}"
    with pytest.raises(ValueError, match="tile"):
        block_scores_triton(x, e, None, bs, 1, tile=3)
    with pytest.raises(ValueError, match="bounded kernel only"):  # the padded kernel has no such knobs
        block_scores_triton(x, e, None, bs, 1, padded=True, tile=tile)
    # the programs rule's multiple (``mult``, the dev key scores_mult): one program per row here, same bits
    assert same_bits(block_scores_triton(x, e, None, bs, 1, tile=tile, num_warps=nw, mult=1), want), f"seed={fresh_seed}"
    # a register bound (``maxnreg``, a CUDA launch option the interpreter ignores): same bits; a bad one is refused
    assert same_bits(block_scores_triton(x, e, None, bs, 1, tile=tile, maxnreg=64), want), f"seed={fresh_seed}"
    for bad in (8, 256, True, 64.0):
        with pytest.raises(ValueError, match="maxnreg"):
            block_scores_triton(x, e, None, bs, 1, maxnreg=bad)
    with pytest.raises(ValueError, match="maxnreg"):
        block_scores_triton(x, e, None, bs, 1, padded=True, maxnreg=64)



@pytest.mark.parametrize("q,tile", [(1, None), (3, 16), (7, 64), (None, 8), (1000, 8)])
def test_block_scores_live_schedule(q, tile, fresh_seed):
    """``schedule="live"``: ``q`` programs in all take every row's live tiles (tile-major; the longest extent's tile
    count read on the device) and zero the flags as flat slices.  Every slot up to each row's extent equals torch's bit
    for bit (NaN and -0.0 inside blocks, non-zero starts, an empty row, an end past the width, row_repeat 2, a row
    longer than the rest); every byte of a poisoned flags tensor is zeroed (rows of n + 1 bytes; 1000 programs: more
    than the items, most with no flags slice); slots past each row's extent are left as they were (poisoned)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs, rr = 8, 5000, 8, 2
    x = torch.randn(rows, width, generator=gen)
    x[torch.rand(rows, width, generator=gen) < 0.02] = NAN
    x[torch.rand(rows, width, generator=gen) < 0.05] = -0.0
    e = torch.tensor([4608, 777, 0, 5300])
    s = torch.tensor([0, 130, 0, 4000])
    nb = -(-width // bs)
    want = block_scores_torch(x, e, s, bs, rr)
    fl = torch.full((rows, nb + 1), 0xAB, dtype=torch.uint8)
    got = block_scores_triton(x, e, s, bs, rr, fill_dead=False, programs=q, tile=tile, schedule="live", zero_flags=fl)
    for r in range(rows):
        L = _extent(int(e[r // rr]), int(s[r // rr]), width, bs, nb)
        assert same_bits(got[r, :L], want[r, :L]), f"row {r} q={q} tile={tile} seed={fresh_seed}"
    assert int(fl.count_nonzero()) == 0, f"flags not zeroed: q={q} tile={tile}"


def test_block_scores_live_schedule_bad_arguments():
    """The live schedule exists for the bounded kernel that leaves dead slots unwritten: with ``fill_dead`` or the
    padded kernel it is a ValueError, as is an unknown schedule; nothing falls back silently."""
    x = torch.randn(2, 1000)
    e = torch.tensor([1000, 500])
    with pytest.raises(ValueError, match="schedule"):
        block_scores_triton(x, e, None, 8, 1, schedule="live")  # fill_dead defaults to True
    with pytest.raises(ValueError, match="schedule"):
        block_scores_triton(x, e, None, 8, 1, padded=True, fill_dead=False, schedule="live")
    with pytest.raises(ValueError, match="schedule"):
        block_scores_triton(x, e, None, 8, 1, fill_dead=False, schedule="tiles")


@pytest.mark.parametrize("sched", ["rows", "live"])
@pytest.mark.parametrize("sg,tile,q,sg_min", [(64, None, None, 0), (4, 16, 3, 0), (8, 8, 1, 163), (16, 64, 2, 100)])
def test_stage_a_keys_by_the_scores_launch(sg, tile, q, sg_min, sched, fresh_seed):
    """``stage_a``: besides the same scores, the launch stores each row's stage-A keys into the select's workspace:
    for every super group ``g`` of ``sg`` blocks holding a block below the row's extent, the largest ordered high
    word of those blocks' scores and ``g``'s first block in the low word (the unfused hier kernel's ``a_first_col``
    keys), for the rows whose extent exceeds ``sg_min`` only (163: the row of 163 blocks gets none).  Every such slot
    is checked against a torch computation from the contract scores; every other slot of the poisoned workspace
    must be left as it was.  NaN and -0.0 inside blocks, ends past the width (the pinned
    newest block past it, inside a stored super group), non-zero starts, an empty row, row_repeat 2, one and several
    programs per row."""
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
    got = block_scores_triton(x, e, s, bs, rr, fill_dead=False, programs=q, tile=tile, stage_a=(ws, wrow, sg, sg_min),
                              schedule=sched)
    sc = block_scores_torch(x, e, s, bs, rr)
    want = torch.full_like(ws, poison)
    for r in range(rows):
        L = _extent(int(e[r // rr]), int(s[r // rr]), width, bs, nb)
        assert same_bits(got[r, :L], sc[r, :L]), f"row {r}: scores differ"
        for g in range(-(-L // sg) if L > sg_min else 0):
            hm = int(ordered_hi(sc[r, g * sg:min(g * sg + sg, L)]).max())
            want[r * wrow + g] = (hm << 32) | (0xFFFFFFFF - g * sg)
    bad = (ws != want).nonzero().flatten()
    assert not len(bad), (f"sg={sg} tile={tile} seed={fresh_seed}: first bad slot {int(bad[0])} (row "
                          f"{int(bad[0]) // wrow}): got {int(ws[bad[0]]):#x}, want {int(want[bad[0]]):#x}")


def test_stage_a_bad_arguments():
    """``stage_a`` errors name the argument: a super group not dividing the tile, a workspace of the wrong dtype or
    too small, the padded kernel, a negative ``sg_min``, ``fill_dead`` left on."""
    x = torch.randn(2, 1000)
    e = torch.tensor([1000, 500])
    nb = 125
    ok = torch.zeros(2 * 16, dtype=torch.int64)
    with pytest.raises(ValueError, match="stage_a"):
        block_scores_triton(x, e, None, 8, 1, fill_dead=False, tile=8, stage_a=(ok, 16, 16, 0))  # 16 into 8 blocks
    with pytest.raises(ValueError, match="stage_a"):
        block_scores_triton(x, e, None, 8, 1, fill_dead=False, stage_a=(ok, 16, 12, 0))  # not a power of two
    with pytest.raises(ValueError, match="stage_a"):
        block_scores_triton(x, e, None, 8, 1, fill_dead=False, stage_a=(ok.to(torch.int32), 16, 8, 0))
    with pytest.raises(ValueError, match="stage_a"):
        block_scores_triton(x, e, None, 8, 1, fill_dead=False, stage_a=(ok[:20], 16, 8, 0))  # < rows * wrow slots
    with pytest.raises(ValueError, match="stage_a"):
        # wrow below the row's super groups
        block_scores_triton(x, e, None, 8, 1, fill_dead=False, stage_a=(ok, -(-nb // 16) - 1, 16, 0))
    with pytest.raises(ValueError, match="stage_a"):
        block_scores_triton(x, e, None, 8, 1, fill_dead=False, padded=True, stage_a=(ok, 16, 8, 0))
    with pytest.raises(ValueError, match="sg_min"):
        block_scores_triton(x, e, None, 8, 1, fill_dead=False, stage_a=(ok, 16, 8, -1))
    with pytest.raises(ValueError, match="fill_dead"):  # its kernel leaves the dead score slots unwritten
        block_scores_triton(x, e, None, 8, 1, stage_a=(ok, 16, 8, 0))
