"""dsa_lab.compat against plain-Python loop oracles written here (no package code in them).

Inputs are fresh each run (the seed is in every failure message): integer-valued float logits in [-3, 3] (heavy
ties) with -inf and NaN sprinkled in, every row group's bounds drawn from the lengths {0, 1, w/2, w-1, w} (and an end
past the width) at start 0 and at a random start, outputs poisoned before each call, every slot checked.  On the CPU
the Triton arm runs in the interpreter at small widths only; the torch arms take every width.  The ``gpu`` tests
capture each call in a CUDA graph and replay it with new lengths.
"""
import pytest
import torch

import dsa_lab.compat as compat

NEG, POS, NAN = float("-inf"), float("inf"), float("nan")
HAS_CUDA = torch.cuda.is_available()
DEV = "cuda" if HAS_CUDA else "cpu"
WIDTHS = [0, 1, 7, 8, 9, 17, 16384, 16385, 32769]
BUDGETS = [1, 2, 2048]
BS = 8
# interpreter-sized cases for the Triton arm on the CPU (its hier select costs seconds a call there: k = 1 and 2
# share one hier bucket, k = 2048 is the radix select)
SEL_TRITON_WIDTHS = WIDTHS if HAS_CUDA else [9, 17]
MASK_TRITON_WIDTHS = WIDTHS if HAS_CUDA else [0, 1, 7, 8, 9, 17, 2000]


def budgets(arm):
    return BUDGETS if HAS_CUDA or arm != "triton" else [1, 2048]


# ------------------------------------------------------------------------------------------------------ oracles
def _isnan(v):
    return v != v


def _same(a, b):
    return a == b or (_isnan(a) and _isnan(b))


def first_mismatch(got, want):
    """``(row, column, got, want)`` of the first slot where two lists of rows differ (NaN equals NaN), or None."""
    if len(got) != len(want):
        return (None, None, f"{len(got)} rows", f"{len(want)} rows")
    for r, (g, w) in enumerate(zip(got, want)):
        if len(g) != len(w):
            return (r, None, f"{len(g)} slots", f"{len(w)} slots")
        for j, (a, b) in enumerate(zip(g, w)):
            if not _same(a, b):
                return (r, j, a, b)
    return None


def assert_rows_equal(got, want, what, seed):
    bad = first_mismatch(got, want)
    if bad is not None:
        r, j, a, b = bad
        near = "" if j is None else f"\n  got  {got[r][max(0, j - 4):j + 5]}\n  want {want[r][max(0, j - 4):j + 5]}"
        msg = f"{what} (seed {seed}): first mismatch at row {r}, column {j}: got {a!r}, want {b!r}{near}"
        print(msg)
        pytest.fail(msg)


def _rank(scored):
    """Blocks ``[(b, score)]`` best first: NaN above everything, then higher score, then the smaller block."""
    return sorted(scored, key=lambda t: (0, 0, t[0]) if _isnan(t[1]) else (1, -t[1], t[0]))


def _block_max(vals):
    m = NEG
    for v in vals:
        if _isnan(v):
            return NAN
        m = v if v > m else m
    return m


def oracle_select(rows, starts, ends, k, bs, rr):
    """vLLM's select_candidate_blocks, per row: the chosen block ids sorted, then -1 up to k slots."""
    want = []
    for r, row in enumerate(rows):
        width, start, end = len(row), starts[r // rr], ends[r // rr]
        lim = min(end, width)
        scored = []
        for b in range(-(-width // bs)):
            lo = start + b * bs
            s = _block_max(row[lo:min(lo + bs, lim)]) if lo < lim else NEG
            if end > start and b == (end - start - 1) // bs:
                s = POS
            if s != NEG:
                scored.append((b, s))
        ids = sorted(b for b, _ in _rank(scored)[:k])
        want.append(ids + [-1] * (k - len(ids)))
    return want


def canonical_ids(out, want):
    """Each row of ``out`` with its first ``len(selected)`` slots sorted (the order is free), the rest as is."""
    res = []
    for g, w in zip(out, want):
        m = sum(1 for v in w if v != -1)
        res.append(sorted(g[:m]) + g[m:])
    return res


def oracle_mask(rows, starts, ends, cands, bs, rr):
    """vLLM's apply_candidate_mask: the kept columns hold their input, every other column is -inf."""
    want = []
    for r, row in enumerate(rows):
        width, start, end = len(row), starts[r // rr], ends[r // rr]
        flags, edge = set(), False
        for b in cands[r]:
            if start + b * bs >= width:
                edge = True
            elif b >= 0:
                flags.add(b)
        want.append([row[c] if start <= c < end and ((c - start) // bs in flags or (c == width - 1 and edge))
                     else NEG for c in range(width)])
    return want


def oracle_reference(rows, lens, k, bs):
    """DeepSeek's reference candidate mask, per block (ties to the smaller block)."""
    want = []
    for row, n in zip(rows, lens):
        nb = -(-len(row) // bs)
        scores = [_block_max(row[b * bs:(b + 1) * bs]) for b in range(nb)]
        last = (n - 1) // bs
        if 0 <= last < nb:
            scores[last] = POS
        top = _rank(list(enumerate(scores)))[:min(k, nb)]
        keep = [False] * nb
        for b, s in top:
            keep[b] = not _isnan(s) and s > NEG
        want.append(keep)
    return want


# ------------------------------------------------------------------------------------------------------- inputs
def lengths(w):
    return sorted({0, 1, w // 2, w - 1, w} & set(range(w + 1)))


def make_logits(rows, width, gen, *, pad=0):
    """Integer-valued float32 logits, 5% -inf and 1% NaN; with ``pad`` a row-strided view (padding = 7777)."""
    x = torch.randint(-3, 4, (rows, width + pad), generator=gen).float()
    u = torch.rand(rows, width + pad, generator=gen)
    x[u < 0.05] = NEG
    x[u > 0.99] = NAN
    x[:, width:] = 7777.0
    return x.to(DEV)[:, :width]


def make_bounds(width, gen, with_starts):
    """Row groups: each length at start 0 (and at a random start, possibly past the width), plus an end past it."""
    starts, ends = [], []
    for n in lengths(width) + [width + 3]:
        starts.append(0)
        ends.append(n)
        if with_starts:
            s = int(torch.randint(1, width + 2, (1,), generator=gen))
            starts.append(s)
            ends.append(s + n)
    return starts, ends


def _t(vals, dtype=torch.int32):
    return torch.tensor(vals, dtype=dtype, device=DEV)


def poisoned(rows, k, gen):
    return torch.randint(-100, 10**6, (rows, k), generator=gen, dtype=torch.int32).to(DEV)


def _case(width, seed, with_starts, rr):
    gen = torch.Generator().manual_seed(seed)
    starts, ends = make_bounds(width, gen, with_starts)
    x = make_logits(len(ends) * rr, width, gen, pad=5)
    return gen, starts, ends, x


def _params(triton_widths, torch_arm):
    return ([pytest.param(w, torch_arm, id=f"{torch_arm}-w{w}") for w in WIDTHS]
            + [pytest.param(w, "triton", id=f"triton-w{w}") for w in triton_widths])


# -------------------------------------------------------------------------------------------------------- tests
@pytest.mark.parametrize("width,arm", _params(SEL_TRITON_WIDTHS, "reference"))
def test_select_and_mask_match_oracles(width, arm, monkeypatch, fresh_seed):
    """The pipeline: select (every budget), then mask with the selected ids; the row-strided padding is untouched."""
    monkeypatch.setenv("DSA_LAB_IMPL", arm)
    rr = 2 if width < 1000 else 1
    for with_starts in (False, True):
        gen, starts, ends, x = _case(width, fresh_seed, with_starts, rr)
        rows_vals = x.tolist()
        ks = _t(starts) if with_starts else None
        ke = _t(ends, torch.int64)
        for k in budgets(arm):
            out = poisoned(x.shape[0], k, gen)
            assert compat.vllm_select_candidate_blocks(x, ks, ke, k, BS, out, rr) is None
            want = oracle_select(rows_vals, starts, ends, k, BS, rr)
            got = out.tolist()
            assert_rows_equal(canonical_ids(got, want), want, f"select w={width} k={k} starts={with_starts}",
                              fresh_seed)
            ybuf = torch.full((x.shape[0], width + 5), 7777.0, device=DEV)
            y = ybuf[:, :width]
            y.copy_(x)
            compat.vllm_apply_candidate_mask(y, ks, ke, out, BS, rr)
            assert_rows_equal(y.tolist(), oracle_mask(rows_vals, starts, ends, got, BS, rr),
                              f"mask w={width} k={k} starts={with_starts}", fresh_seed)
            assert bool((ybuf[:, width:] == 7777.0).all()), "the row stride's padding was written"


@pytest.mark.parametrize("width,arm", _params(MASK_TRITON_WIDTHS, "torch"))
def test_mask_random_candidates(width, arm, monkeypatch, fresh_seed):
    """Any ids: -1, other negatives, duplicates, ids past the width (the sentinel keeps column width - 1)."""
    monkeypatch.setenv("DSA_LAB_IMPL", arm)
    rr = 2
    gen, starts, ends, x = _case(width, fresh_seed, True, rr)
    rows_vals = x.tolist()
    nb = -(-width // BS)
    for k in BUDGETS if width < 20000 else (1, 2048):
        cand = torch.randint(-2, nb + 3, (x.shape[0], k), generator=gen)
        if k > 1:
            cand[:, 1] = cand[:, 0]  # a duplicate
        for dtype in (torch.int32, torch.int64):
            y = x.clone()
            c = cand.to(dtype).to(DEV)
            compat.vllm_apply_candidate_mask(y, _t(starts), _t(ends), c, BS, rr)
            assert_rows_equal(y.tolist(), oracle_mask(rows_vals, starts, ends, cand.tolist(), BS, rr),
                              f"mask w={width} k={k} {dtype}", fresh_seed)
    # no ids at all: every column is -inf
    y = x.clone()
    compat.vllm_apply_candidate_mask(y, None, _t(ends), torch.empty((x.shape[0], 0), dtype=torch.int32, device=DEV),
                                     BS, rr)
    assert bool((y == NEG).all())


@pytest.mark.parametrize("width,arm", _params(SEL_TRITON_WIDTHS, "reference"))
def test_reference_candidate_mask(width, arm, monkeypatch, fresh_seed):
    monkeypatch.setenv("DSA_LAB_IMPL", arm)
    gen = torch.Generator().manual_seed(fresh_seed)
    lens = lengths(width) + [width + 5]
    x = make_logits(len(lens), width, gen, pad=3)
    rows_vals = x.tolist()
    for k in budgets(arm):
        got = compat.reference_candidate_mask(x, _t(lens, torch.int64), k, BS)
        assert got.dtype == torch.bool and got.shape == (len(lens), -(-width // BS))
        assert_rows_equal(got.tolist(), oracle_reference(rows_vals, lens, k, BS), f"reference w={width} k={k}",
                          fresh_seed)
    k = budgets(arm)[-1]
    got = compat.reference_candidate_mask(x, _t(lens)[:, None], k, BS)  # the reference's prefill layout
    assert_rows_equal(got.tolist(), oracle_reference(rows_vals, lens, k, BS), f"reference [rows, 1] w={width}",
                      fresh_seed)
    n = width // 2  # decode: one int for every row
    got = compat.reference_candidate_mask(x, n, k, BS)
    assert_rows_equal(got.tolist(), oracle_reference(rows_vals, [n] * len(lens), k, BS), f"reference int w={width}",
                      fresh_seed)


@pytest.mark.parametrize("bs", [1, 3, 64])
def test_other_block_sizes_and_a_strided_out(bs, monkeypatch, fresh_seed):
    monkeypatch.setenv("DSA_LAB_IMPL", "reference")
    gen, starts, ends, x = _case(200, fresh_seed, True, 1)
    rows_vals = x.tolist()
    buf = poisoned(x.shape[0], 10, gen)
    tail = buf[:, 7:].tolist()
    out = buf[:, :7]  # upstream accepts any out strides
    compat.vllm_select_candidate_blocks(x, _t(starts), _t(ends), 7, bs, out, 1)
    want = oracle_select(rows_vals, starts, ends, 7, bs, 1)
    assert_rows_equal(canonical_ids(out.tolist(), want), want, f"select bs={bs}", fresh_seed)
    assert buf[:, 7:].tolist() == tail, "out's row padding was written"
    y = x.clone()
    compat.vllm_apply_candidate_mask(y, _t(starts), _t(ends), out, bs, 1)
    assert_rows_equal(y.tolist(), oracle_mask(rows_vals, starts, ends, out.tolist(), bs, 1), f"mask bs={bs}",
                      fresh_seed)
    lens = [e - s for s, e in zip(starts, ends)]
    got = compat.reference_candidate_mask(x, _t(lens), 5, bs)
    assert_rows_equal(got.tolist(), oracle_reference(rows_vals, lens, 5, bs), f"reference bs={bs}", fresh_seed)


def test_empty_shapes():
    """rows == 0: nothing written; width == 0: select writes -1, mask does nothing, the block mask is [rows, 0]."""
    out = torch.full((0, 3), 5, dtype=torch.int32, device=DEV)
    compat.vllm_select_candidate_blocks(torch.empty((0, 16), device=DEV), None, _t([]), 3, BS, out)
    x = torch.empty((4, 0), device=DEV)
    out = torch.full((4, 3), 5, dtype=torch.int32, device=DEV)
    compat.vllm_select_candidate_blocks(x, None, _t([1, 1, 1, 1]), 3, BS, out)
    assert bool((out == -1).all())
    compat.vllm_apply_candidate_mask(x, None, _t([1, 1, 1, 1]), out, BS)
    assert compat.reference_candidate_mask(x, 3, 2, BS).shape == (4, 0)


def test_bad_input_names_the_argument():
    x = torch.zeros((4, 32), device=DEV)
    ke, out, cand = _t([32, 32]), torch.zeros((4, 2), dtype=torch.int32, device=DEV), _t([[0, 1]] * 4)
    sel, mask = compat.vllm_select_candidate_blocks, compat.vllm_apply_candidate_mask
    cases = [
        (TypeError, "logits", lambda: sel(x.double(), None, ke, 2, BS, out, 2)),
        (ValueError, "logits", lambda: sel(x.t(), None, ke, 2, BS, torch.zeros((32, 2), dtype=torch.int32), 1)),
        (TypeError, "row_ke", lambda: sel(x, None, ke.float(), 2, BS, out, 2)),
        (ValueError, "row_ke", lambda: sel(x, None, ke[:1], 2, BS, out, 2)),
        (ValueError, "row_ke", lambda: sel(x, None, _t([32, -1]), 2, BS, out, 2)),
        (ValueError, "row_ks", lambda: sel(x, _t([0, 9]), _t([32, 8]), 2, BS, out, 2)),
        (TypeError, "row_ks", lambda: sel(x, [0, 0], ke, 2, BS, out, 2)),
        (ValueError, "topk_blocks", lambda: sel(x, None, ke, 0, BS, out, 2)),
        (TypeError, "block_size", lambda: sel(x, None, ke, 2, 8.0, out, 2)),
        (ValueError, "row_repeat", lambda: sel(x, None, ke, 2, BS, out, 3)),
        (TypeError, "out", lambda: sel(x, None, ke, 2, BS, out.long(), 2)),
        (ValueError, "out", lambda: sel(x, None, ke, 3, BS, out, 2)),
        (ValueError, "candidate_blocks", lambda: mask(x, None, ke, cand[:3], BS, 2)),
        (TypeError, "candidate_blocks", lambda: mask(x, None, ke, cand.float(), BS, 2)),
        (ValueError, "row_ks", lambda: mask(x, _t([0, 40]), ke, cand, BS, 2)),
        (TypeError, "compress_lens", lambda: compat.reference_candidate_mask(x, 3.0, 2, BS)),
        (TypeError, "compress_lens", lambda: compat.reference_candidate_mask(x, _t([3]).float(), 2, BS)),
        (ValueError, "compress_lens", lambda: compat.reference_candidate_mask(x, _t([3, 3]), 2, BS)),
        (ValueError, "topk_blocks", lambda: compat.reference_candidate_mask(x, 3, -1, BS)),
    ]
    for i, (exc, name, call) in enumerate(cases):
        with pytest.raises(exc, match=name):
            call()


def test_ops_are_registered_with_fake_impls(monkeypatch):
    """torch.library.opcheck: schema (declared mutations only), fake tensors, AOT dispatch."""
    monkeypatch.setenv("DSA_LAB_IMPL", "reference")
    gen = torch.Generator().manual_seed(0)
    x = make_logits(4, 40, gen)
    ks, ke = _t([0, 3]), _t([40, 30])
    out = torch.zeros((4, 3), dtype=torch.int32, device=DEV)
    torch.library.opcheck(torch.ops.dsa_lab.vllm_select_candidate_blocks.default, (x, ks, ke, 3, BS, out, 2))
    cand = _t([[0, 1, 4]] * 4)
    torch.library.opcheck(torch.ops.dsa_lab.vllm_apply_candidate_mask.default, (x.clone(), ks, ke, cand, BS, 2))
    torch.library.opcheck(torch.ops.dsa_lab.reference_candidate_mask.default, (x, _t([40, 1, 0, 9]), 3, BS))


@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_torch_compile_fullgraph(backend, monkeypatch, fresh_seed):
    """A compiled caller keeps one graph holding the three ops (never their launchers) and matches eager."""
    monkeypatch.setenv("DSA_LAB_IMPL", "reference")

    def step(x, ks, ke, out):
        y = x * 2.0
        compat.vllm_select_candidate_blocks(y, ks, ke, 3, BS, out, 1)
        compat.vllm_apply_candidate_mask(y, ks, ke, out, BS, 1)
        return y + 1.0, compat.reference_candidate_mask(x, ke, 3, BS)

    gen = torch.Generator().manual_seed(fresh_seed)
    x = make_logits(3, 37, gen)
    ks, ke = _t([0, 5, 2]), _t([37, 20, 44])
    torch._dynamo.reset()
    seen = []

    def record(gm, example_inputs):
        seen.extend(str(n.target) for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    torch.compile(step, fullgraph=True, backend=record)(x, ks, ke, poisoned(3, 3, gen))
    for name in ("vllm_select_candidate_blocks", "vllm_apply_candidate_mask", "reference_candidate_mask"):
        assert f"dsa_lab.{name}.default" in seen, seen
    assert not any("launch" in s or "triton" in s for s in seen), seen
    torch._dynamo.reset()
    o1 = poisoned(3, 3, gen)
    o2 = o1.clone()
    got = torch.compile(step, fullgraph=True, backend=backend)(x, ks, ke, o1)
    want = step(x, ks, ke, o2)
    assert torch.equal(o1, o2)
    torch.testing.assert_close(got[0], want[0], rtol=0, atol=0, equal_nan=True)
    assert torch.equal(got[1], want[1])


@pytest.mark.parametrize("arm", ["torch", "triton"])
def test_mask_programs_stride_over_tiles(arm, monkeypatch, fresh_seed):
    """Fewer programs than tiles (one SM): each program loops over its row's tiles of a row-strided view."""
    from dsa_lab import plans
    from dsa_lab.launch import scores as launch

    width = 2 * plans.MASK_TILE + 37
    gen, starts, ends, x = _case(width, fresh_seed, True, 2)
    rows, nb = x.shape[0], -(-width // BS)
    assert plans.mask_programs(rows, width, 1) < -(-width // plans.MASK_TILE)
    cand = torch.randint(-1, nb + 2, (rows, 16), generator=gen)
    ybuf = torch.full((rows, width + 5), 7777.0, device=DEV)
    y = ybuf[:, :width]
    y.copy_(x)
    if arm == "triton":
        flags = torch.empty((rows, nb + 1), dtype=torch.uint8, device=DEV)
        launch.apply_mask(y, _t(ends), _t(starts), cand.to(DEV), flags, BS, 2, 1)
    else:
        compat.apply_candidate_mask_torch(y, _t(ends), _t(starts), cand.to(DEV), BS, 2)
    assert_rows_equal(y.tolist(), oracle_mask(x.tolist(), starts, ends, cand.tolist(), BS, 2), f"mask {arm}",
                      fresh_seed)
    assert bool((ybuf[:, width:] == 7777.0).all())


# ----------------------------------------------------------------------------------------------------- CUDA graph
def replay_with_new_lengths(k, width, seed, capture):
    """Each compat call on static buffers, captured once in a CUDA graph (``capture``) or called again (eager),
    then run three times with new bounds, new logits and a poisoned out; every run checked against the oracles."""
    rr, groups = 2, 4
    rows = groups * rr
    gen = torch.Generator().manual_seed(seed)
    x = make_logits(rows, width, gen)
    ks = torch.zeros(groups, dtype=torch.int32, device=DEV)
    ke = torch.full((groups,), width, dtype=torch.int32, device=DEV)
    lens = torch.full((rows,), width, dtype=torch.int64, device=DEV)
    out = torch.zeros((rows, k), dtype=torch.int32, device=DEV)
    y = torch.empty_like(x)

    def calls():
        compat.vllm_select_candidate_blocks(x, ks, ke, k, BS, out, rr)
        y.copy_(x)
        compat.vllm_apply_candidate_mask(y, ks, ke, out, BS, rr)
        return compat.reference_candidate_mask(x, lens, k, BS)

    if capture:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # compile before the capture
            calls()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            blocks = calls()
    for trial in range(3):
        starts = [int(v) for v in torch.randint(0, width // 2, (groups,), generator=gen)]
        ends = [s + int(v) for s, v in zip(starts, torch.randint(0, width, (groups,), generator=gen))]
        ends[0] = starts[0]  # an empty row
        ls = [int(v) for v in torch.randint(0, width + 9, (rows,), generator=gen)]
        ks.copy_(torch.tensor(starts))
        ke.copy_(torch.tensor(ends))
        lens.copy_(torch.tensor(ls))
        x.copy_(make_logits(rows, width, gen))
        out.copy_(poisoned(rows, k, gen))
        if capture:
            graph.replay()
            torch.cuda.synchronize()
        else:
            blocks = calls()
        rows_vals = x.tolist()
        want = oracle_select(rows_vals, starts, ends, k, BS, rr)
        got = out.tolist()
        what = f"{'graph' if capture else 'eager'} k={k} trial {trial}"
        assert_rows_equal(canonical_ids(got, want), want, f"select {what}", seed)
        assert_rows_equal(y.tolist(), oracle_mask(rows_vals, starts, ends, got, BS, rr), f"mask {what}", seed)
        assert_rows_equal(blocks.tolist(), oracle_reference(rows_vals, ls, k, BS), f"reference {what}", seed)


def test_static_buffers_rerun_with_new_lengths(monkeypatch, fresh_seed):
    """The graph test's body, eager on the torch arms (so it is checked here too)."""
    monkeypatch.setenv("DSA_LAB_IMPL", "reference")
    replay_with_new_lengths(64, 4099, fresh_seed, capture=False)


@pytest.mark.gpu
@pytest.mark.parametrize("k", [1, 64, 2048])
@pytest.mark.parametrize("width", [4099, 262144])
def test_cuda_graph_capture_replays_with_new_lengths(k, width, fresh_seed):
    replay_with_new_lengths(k, width, fresh_seed, capture=True)
