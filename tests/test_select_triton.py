"""The hier select (dsa_lab.kernels.hier, planned by dsa_lab.plans) against the exact reference.

CPU lane: the Triton interpreter at small sizes.  Forced plan choices (:func:`dsa_lab.plans.select`'s keywords:
smaller groups, a smaller direct tile, forced programs per row, the pairing threshold, the stage-A forms) reach every
path of the kernel at these sizes: the direct top-k, the narrow / short / wide chains, the main chain with one and
several programs per row (the last-arriver merge), stage B's fold over wide rows, the register radix stages (KP 512).
Every output is poisoned first and every slot compared (rows as sets); the first mismatching row and slot are named.
GPU lane (``gpu`` marker): GPU-sized shapes and the CUDA-graph replay with new lengths.
"""
import pytest
import torch
from _select_helpers import POISON, assert_same_sets, blocks_triton, poisoned, topk_triton

import dsa_lab
from dsa_lab import plans
from dsa_lab.flags import candidate_flags_torch
from dsa_lab.launch import select as launch
from dsa_lab.scores import block_scores_torch
from dsa_lab.select import topk_select_reference

INF, NAN = float("inf"), float("nan")

# (name, test hooks, width): each reaches one path of the kernel for rows of that width (k = 16: KP 64)
PATHS = [
    ("direct_and_narrow", {}, 200),  # the direct top-k (rows <= 128 columns) and the narrow chain
    ("narrow", {"direct": 64}, 200),
    ("short", {"direct": 64, "group": 2}, 200),
    ("wide", {"direct": 64, "group": 2}, 400),
    ("wide_pairs", {"direct": 64, "group": 2, "l1p": 2}, 400),
    ("short_pairs", {"direct": 64, "group": 4, "l1p": 2}, 900),
    ("main_one_program", {"direct": 64, "group": 2, "programs": 1}, 600),
    ("main_multi", {"direct": 64, "group": 2, "programs": 5}, 600),
    ("main_multi_fast", {"direct": 64, "group": 2, "programs": 5, "fast": True}, 600),
    ("main_group4", {"direct": 64, "group": 4, "programs": 3}, 2100),
]


def _values(kind, rows, n, gen):
    if kind == "normal":
        return torch.randn(rows, n, generator=gen)
    if kind == "ramp":
        return torch.arange(n, dtype=torch.float32).expand(rows, n).clone()
    if kind == "equal":
        return torch.full((rows, n), 0.5)
    if kind == "specials":
        pool = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 1e-45, -1e-45, 1.0, -1.0])
        x = pool[torch.randint(0, len(pool), (rows, n), generator=gen)]
        nan_bits = torch.tensor([0x7F800001, 0xFFC00000 - 2**32, 0x7FFFFFFF], dtype=torch.int64)
        m = torch.rand(rows, n, generator=gen) < 0.05
        x[m] = nan_bits[torch.randint(0, 3, (int(m.sum()),), generator=gen)].to(torch.int32).view(torch.float32)
        return x
    raise ValueError(kind)


@pytest.mark.parametrize("path,over,n", PATHS, ids=[p[0] for p in PATHS])
@pytest.mark.parametrize("kind", ["normal", "ramp", "equal", "specials"])
def test_paths_match_reference(path, over, n, kind, fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, k = 3, 16
    x = _values(kind, rows, n, gen)
    lengths = torch.tensor([n, 0, int(torch.randint(1, n, (1,), generator=gen))])
    x[2, int(lengths[2]):] = NAN  # garbage past the end must be ignored
    out = poisoned(rows, k, "cpu")
    topk_triton(x, k, lengths, 1, out, **over)
    assert_same_sets(out, topk_select_reference(x, k, lengths, 1), f"{path}/{kind} seed={fresh_seed}")


@pytest.mark.parametrize("k", [1, 3, 100, 250, 700])
def test_k_values_incl_k_above_live_and_width(k, fresh_seed):
    """k not a power of two, above the live length, above the width (-1 tail); several programs per row.  k = 700
    takes the radix select (KP 1024), the others hier buckets 64 / 128 / 256."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, n = 2, 240
    x = torch.randn(rows, n, generator=gen)
    lengths = torch.tensor([n, 37])
    out = poisoned(rows, k, "cpu")
    topk_triton(x, k, lengths, 1, out, **{"direct": 2, "group": 2, "programs": 3})
    assert_same_sets(out, topk_select_reference(x, k, lengths, 1), f"k={k} seed={fresh_seed}")
    assert (out[1] == -1).sum() == max(0, k - 37)


@pytest.mark.parametrize("over,n,k", [
    ({"group": 2, "programs": 1}, 4500, 9),  # stage B folds 1125 super groups in tiles of 1024
    ({"algo": "hier", "direct": 64}, 400, 300),  # KP 512: the register radix select, direct
    ({"algo": "hier", "direct": 64, "group": 2, "programs": 3}, 2500, 300),  # ... its chain, B folded
], ids=["fold", "rsel_direct", "rsel_main"])
def test_wide_rows_and_radix_stages(over, n, k, fresh_seed):
    """Rows of more super groups than stage B's tile (the fold, then C-D), and the register radix select of the
    KP 512 bucket, on tied values whose threshold bin is split (the prefix-sum tie break, four digits deep)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    pool = torch.tensor([1.0, 1.0000001, 1.0000002, -2.0, -INF, NAN])
    x = pool[torch.randint(0, len(pool), (2, n), generator=gen)]
    lengths = torch.tensor([n, n * 2 // 3])
    out = poisoned(2, k, "cpu")
    topk_triton(x, k, lengths, 1, out, **over)
    assert_same_sets(out, topk_select_reference(x, k, lengths, 1), f"{over} seed={fresh_seed}")


def test_row_repeat_strided_view_and_public_api(fresh_seed):
    """row_repeat, a row-strided view whose stride is not a multiple of 16 (the select copies it into an aligned
    buffer), lengths past the width, no lengths; the public entry writes into ``out``."""
    gen = torch.Generator().manual_seed(fresh_seed)
    big = torch.randn(6, 307, generator=gen)
    x = big[:, :250]
    lengths = torch.tensor([1000, 117], dtype=torch.int32)
    out = poisoned(6, 20, "cpu")
    res = dsa_lab.topk_select(x, 20, lengths=lengths, row_repeat=3, impl="triton", out=out)
    assert res.data_ptr() == out.data_ptr()
    assert_same_sets(out, topk_select_reference(x, 20, lengths, 3), f"seed={fresh_seed}")
    assert_same_sets(dsa_lab.topk_select(x, 20, impl="triton"), topk_select_reference(x, 20), "no lengths")


def test_counters_reset_after_merge():
    x = torch.randn(2, 600)
    for _ in range(2):  # a second call must see zeroed counters
        out = poisoned(2, 8, "cpu")
        topk_triton(x, 8, None, 1, out, **{"direct": 64, "group": 2, "programs": 4})
        assert_same_sets(out, topk_select_reference(x, 8), "repeat call")
    assert int(launch.counters(x.device, 2)[:2].abs().sum()) == 0


def test_width_zero_and_no_rows():
    out = dsa_lab.topk_select(torch.empty(3, 0), 4, impl="triton")
    assert out.tolist() == [[-1] * 4] * 3
    assert dsa_lab.topk_select(torch.empty(0, 50), 4, impl="triton").shape == (0, 4)


# ---------------------------------------------------------------- candidate blocks (unfused / fused), with flags

# (name, test hooks, width): rows = 6, block size 8, row_repeat 2, k = 24
BLOCK_PATHS = [
    ("direct", {}, 700),
    ("short", {"direct": 16, "group": 2}, 700),
    ("main", {"direct": 16, "group": 2, "programs": 3}, 5000),
    ("main_fast", {"direct": 16, "group": 2, "programs": 3, "fast": True}, 5000),
    ("main_stage_a_in_scores", {"direct": 16, "group": 2, "a_done": True}, 5000),
    ("radix", {"algo": "radix", "programs": 2}, 5000),
]


def _block_case(width, gen):
    rows, bs, rr = 6, 8, 2
    x = torch.randn(rows, width, generator=gen)
    x[torch.rand(rows, width, generator=gen) < 0.03] = NAN  # NaN inside blocks propagates
    ends = torch.tensor([width, width * 2 + 1, width // 3])  # the second past the width
    starts = torch.tensor([0, 130, 50])
    return x, ends, starts, bs, rr


UNFUSED_ONLY = ("radix", "main_stage_a_in_scores")  # forms of the unfused composition
FLAG_CASES = [(p, f) for p in BLOCK_PATHS for f in (False, True) if not (f and p[0] in UNFUSED_ONLY)]


@pytest.mark.parametrize("path,over,width,fused", [(*p, f) for p, f in FLAG_CASES],
                         ids=[f"{p[0]}-{'fused' if f else 'unfused'}" for p, f in FLAG_CASES])
@pytest.mark.parametrize("k", [1, 24])
def test_candidate_blocks_with_flags(path, over, width, fused, k, fresh_seed):
    """Ids and flags in one call (unfused: the scores launch zeroes the flags, the select sets them; radix: the
    flags kernel after; fused: the kernel zeroes and sets them).  Ids and every flags byte poisoned first; the
    flags must equal the contract (sentinel slot included: an end past the width, non-zero starts)."""
    gen = torch.Generator().manual_seed(fresh_seed)
    x, ends, starts, bs, rr = _block_case(width, gen)
    ref = topk_select_reference(block_scores_torch(x, ends, starts, bs, rr), k)
    fl = torch.full((6, -(-width // bs) + 1), 0xAB, dtype=torch.uint8)
    ids, got = blocks_triton(x, ends, k, starts, bs, rr, poisoned(6, k, "cpu"),
                                                       fused=fused, with_flags=True, flags_out=fl, **over)
    assert_same_sets(ids, ref, f"{path} fused={fused} k={k} seed={fresh_seed}")
    bad = (got != candidate_flags_torch(ref, width, starts, bs, rr)).nonzero()
    assert got is fl and not len(bad), f"{path} fused={fused} k={k}: first bad (row, slot) {bad[:3].tolist()}"


def test_candidate_blocks_without_flags_and_ends_only(fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    x = torch.randn(3, 5000, generator=gen)
    ends = torch.tensor([5000, 2100, 3])
    ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), 24)
    for fused in (False, True):
        out = poisoned(3, 24, "cpu")
        blocks_triton(x, ends, 24, None, 8, 1, out, fused=fused,
                                                **{"direct": 16, "group": 2, "programs": 3})
        assert_same_sets(out, ref, f"fused={fused} seed={fresh_seed}")


def test_fused_whole_tiles_and_the_newest_block(fresh_seed):
    """Fused stage A's whole tiles (one contiguous load, keys in the ordered-integer domain) on rows whose extent
    ends on a tile boundary, so the pinned newest block and NaN blocks lie inside whole tiles."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs, k = 4, 8192, 8, 5
    x = torch.randn(rows, width, generator=gen)
    x[:, 3::8] = -x[:, 3::8].abs() - 50.0  # one lane of every block far below: the block max must skip it
    x[:, [1410, 2770]] = NAN
    ends = torch.tensor([4096, 8192, 5000, 3000])
    ref = topk_select_reference(block_scores_torch(x, ends, None, bs, 1), k)
    fl = torch.full((rows, width // bs + 1), 0xAB, dtype=torch.uint8)
    ids, got = blocks_triton(x, ends, k, None, bs, 1, poisoned(rows, k, "cpu"), fused=True,
                                                       with_flags=True, flags_out=fl,
                                                       **{"direct": 16, "group": 2, "programs": 2})
    assert_same_sets(ids, ref, f"seed={fresh_seed}")
    newest = ((ends - 1) // bs).tolist()
    for r in range(rows):
        assert newest[r] in ids[r].tolist(), f"row {r}: newest block {newest[r]} not selected"
    assert torch.equal(got, candidate_flags_torch(ref, width, None, bs, 1))


def test_candidate_blocks_fused_flags_by_the_flags_kernel_at_many_rows(fresh_seed):
    """Fused, more rows than twice the SM count (4 under the interpreter): the flags kernel writes the flags."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs, rr, k = 12, 300, 8, 3, 10
    x = torch.randn(rows, width, generator=gen)
    ends, starts = torch.tensor([300, 500, 17, 0]), torch.tensor([0, 40, 9, 0])
    ref = topk_select_reference(block_scores_torch(x, ends, starts, bs, rr), k)
    flags = torch.full((rows, -(-width // bs) + 1), 0xAB, dtype=torch.uint8)
    out = poisoned(rows, k, "cpu")
    _, fl = blocks_triton(x, ends, k, starts, bs, rr, out, fused=True, with_flags=True,
                                                    flags_out=flags)
    assert_same_sets(out, ref, f"seed={fresh_seed}")
    assert torch.equal(fl, candidate_flags_torch(ref, width, starts, bs, rr))


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_candidate_blocks_flags_out_misaligned(fused, fresh_seed):
    """A ``flags_out`` at an odd address: the word-wise zeroing (16-byte aligned tensors only) falls back to byte
    stores; every byte equals the contract and the byte before the view is untouched."""
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs, k = 3, 700, 8, 24
    x = torch.randn(rows, width, generator=gen)
    ends = torch.tensor([700, 333, 1500])
    nb = -(-width // bs)
    buf = torch.full((rows * (nb + 1) + 1,), 0xAB, dtype=torch.uint8)
    fl = buf[1:].view(rows, nb + 1)
    ref = topk_select_reference(block_scores_torch(x, ends, None, bs, 1), k)
    ids, got = blocks_triton(x, ends, k, None, bs, 1, poisoned(rows, k, "cpu"), fused=fused,
                                                       with_flags=True, flags_out=fl, **{"direct": 16, "group": 2})
    assert_same_sets(ids, ref, f"fused={fused} seed={fresh_seed}")
    assert torch.equal(got, candidate_flags_torch(ref, width, None, bs, 1)) and int(buf[0]) == 0xAB


@pytest.mark.parametrize("bs", [1, 3, 64])
def test_candidate_blocks_block_sizes(bs, fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, k = 2, 640, 10
    x = torch.randn(rows, width, generator=gen)
    ends = torch.tensor([640, 0])  # a zero-length row: all -1
    ref = topk_select_reference(block_scores_torch(x, ends, None, bs, 1), k)
    for fused in ((True, False) if plans.fusable(k, bs) else (False,)):
        out = poisoned(rows, k, "cpu")
        blocks_triton(x, ends, k, None, bs, 1, out, fused=fused,
                                                **{"direct": 16, "group": 2})
        assert_same_sets(out, ref, f"bs={bs} fused={fused}")
        assert (out[1] == -1).all()


def test_candidate_blocks_public_impls(fresh_seed):
    """impl="triton" (unfused), "triton_unfused" (the same) and "triton_fused" give the contract's blocks, and with
    flags equal candidate_flags of their own ids; "triton_fused" refuses shapes it does not serve, naming them."""
    gen = torch.Generator().manual_seed(fresh_seed)
    x = torch.randn(3, 2000, generator=gen)
    x[torch.rand(3, 2000, generator=gen) < 0.02] = NAN
    ends = torch.tensor([2000, 900, 0])
    ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), 20)
    for impl in ("triton", "triton_unfused", "triton_fused", "torch", "reference"):
        ids, fl = dsa_lab.select_candidate_blocks(x, ends, 20, block_size=8, impl=impl, with_flags=True)
        if impl != "torch":  # (CPU torch.topk's tie order is not the contract's: tests/test_select_reference.py)
            assert_same_sets(ids, ref, f"impl={impl} seed={fresh_seed}")
        assert torch.equal(fl, dsa_lab.candidate_flags(ids, 2000, block_size=8, impl="torch")), impl
        assert fl[2].sum() == 0
    assert plans.fusable(64, 8) and plans.fusable(256, 8) and not plans.fusable(257, 8)
    assert not plans.fusable(10, 64)
    with pytest.raises(ValueError, match="topk_blocks=2048"):
        dsa_lab.select_candidate_blocks(x, ends, 2048, block_size=8, impl="triton_fused")
    with pytest.raises(TypeError, match="with_flags"):
        dsa_lab.select_candidate_blocks(x, ends, 16, with_flags=1)


def test_candidate_blocks_garbage_past_end_ignored():
    x = torch.randn(2, 512)
    ends = torch.tensor([100, 37])
    x[0, 100:] = INF
    x[1, 37:] = NAN
    ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), 8)
    for fused in (True, False):
        out = poisoned(2, 8, "cpu")
        blocks_triton(x, ends, 8, None, 8, 1, out, fused=fused,
                                                **{"direct": 2, "group": 2, "programs": 2})
        assert_same_sets(out, ref, f"fused={fused}")


WS_POISON = -0x5A5A5A5A5A5A5A5A


def test_stage_a_keys_from_the_scores_launch_are_the_ones_read(monkeypatch, fresh_seed):
    """With stage A in the scores launch (``a_done``) the select reads keys only that launch wrote: the workspace is
    poisoned with keys that would outrank every real one, so a main-chain row whose keys the launch skipped or
    misplaced selects the wrong super groups.  Rows on both sides of :func:`dsa_lab.plans.main_chain_min`."""
    from dsa_lab.keys import pack_keys

    poison = int(pack_keys(torch.tensor([NAN]), torch.tensor([0]))[0])  # NaN at column 0: the top key
    monkeypatch.setattr(launch, "_workspace", lambda plan, rows, dev: torch.full((rows * plan.wrow,), poison,
                                                                                dtype=torch.int64, device=dev))
    gen = torch.Generator().manual_seed(fresh_seed)
    over = {"direct": 16, "group": 4, "a_done": True}
    pl = plans.hier(1, {"sm_count": 4, "name": "triton-interpreter"}, block_size=8, group=4, direct=16)
    m = plans.main_chain_min(pl)
    lens = [m - 1, m, m + 1, 3 * m, 3, 2 * m, 17, m + 9]  # extents in blocks around the bound
    x = torch.randn(8, 8 * 3 * m, generator=gen)
    ends = torch.tensor([8 * n for n in lens])
    ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), 1)
    out = poisoned(8, 1, "cpu")
    blocks_triton(x, ends, 1, None, 8, 1, out, **over)
    assert_same_sets(out, ref, f"seed={fresh_seed}")


# ---------------------------------------------------------------- GPU lane

def _capture_replay(call, bounds, cases, ref, out):
    """Capture ``call()`` in a CUDA graph, then for each entry of ``cases`` write it into the device tensor
    ``bounds``, poison ``out``, replay and compare with ``ref()``: the bounds are read on the device only."""
    call()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        call()
    for vals in cases:
        bounds.copy_(torch.tensor(vals, dtype=torch.int32))
        out.fill_(POISON)
        g.replay()
        torch.cuda.synchronize()
        assert_same_sets(out, ref(), f"replay {vals}")


@pytest.mark.gpu
@pytest.mark.parametrize("k", [64, 512, 2048])
def test_gpu_graph_capture_replay_with_new_lengths(k):
    rows, n = 4, 32768
    x = torch.randn(rows, n, device="cuda")
    lengths = torch.full((rows,), 100, dtype=torch.int32, device="cuda")
    out = torch.empty((rows, k), dtype=torch.int32, device="cuda")
    _capture_replay(lambda: dsa_lab.topk_select(x, k, lengths=lengths, impl="triton", out=out), lengths,
                    ([100, 5000, 32768, 0], [32768, 1, 64, 20000], [7, 7, 7, 7]),
                    lambda: topk_select_reference(x, k, lengths, 1), out)


@pytest.mark.gpu
@pytest.mark.parametrize("impl,k,rows", [("triton", 64, 8), ("triton_fused", 64, 8), ("triton", 64, 300),
                                         ("triton", 512, 8), ("triton", 512, 300), ("triton", 2048, 40)])
def test_gpu_candidate_blocks_with_flags_graph_replay(impl, k, rows):
    """ids + flags in one captured call, replayed with new ends; ids and every flags byte poisoned first."""
    width = 262144
    x = torch.randn(rows, width, device="cuda")
    ends = torch.full((rows,), 4096, dtype=torch.int32, device="cuda")
    out = torch.empty((rows, k), dtype=torch.int32, device="cuda")
    fl = torch.empty((rows, width // 8 + 1), dtype=torch.uint8, device="cuda")
    call = lambda: dsa_lab.select_candidate_blocks(x, ends, k, impl=impl, out=out, with_flags=True)  # noqa: E731
    call()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        _, flags = call()
    gen = torch.Generator().manual_seed(rows + k)
    for _ in range(3):
        ends.copy_(torch.randint(0, width + 5000, (rows,), generator=gen).to(torch.int32))
        out.fill_(POISON)
        flags.fill_(0xAB)
        g.replay()
        torch.cuda.synchronize()
        ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), k)
        assert_same_sets(out, ref, f"{impl} k={k} rows={rows}")
        assert torch.equal(flags, candidate_flags_torch(ref, width, None, 8, 1))
    del fl


@pytest.mark.gpu
@pytest.mark.parametrize("rows,live,kind", [(1, 8192, "normal"), (1, 32768, "specials"), (640, 8192, "equal"),
                                           (640, 32768, "normal"), (128, 2048, "ramp"), (300, 32768, "specials")])
def test_gpu_select_sizes(rows, live, kind):
    gen = torch.Generator().manual_seed(rows * 11 + live)
    x = _values(kind, rows, 32768, gen).cuda()
    lengths = torch.randint(live // 2, live + 1, (rows,), generator=gen).cuda()
    lengths[0] = live
    for k in (64, 512):
        out = poisoned(rows, k, "cuda")
        dsa_lab.topk_select(x, k, lengths=lengths, impl="triton", out=out)
        assert_same_sets(out, topk_select_reference(x, k, lengths, 1), f"{rows}x{live} k={k} {kind}")
