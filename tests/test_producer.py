"""Producer: paged FP8 MQA logits, causal bounds, bounded sanitize, the decode step.

CPU runs use the Triton interpreter (upcast path: e4m3fn bytes decoded to fp32, IEEE fp32 dot) on tiny
problems; GPU-sized cases (fp8 tensor-core path) are under ``@pytest.mark.gpu``.

Tolerances: errors are measured against the magnitude ``M = scale * sum_h |w_h| * sum_d |q_hd k_d|``
(:func:`dsa_lab.bench.verify.logits_error`), because the signed head sum may cancel to ~0 where a plain
relative error means nothing.  Interpreter / upcast path: both arms sum exact fp32 products in fp32, in
different orders → ``TOL_FP32 = 1e-5`` (observed ~1e-8).  fp8 MMA (H200): Hopper's fp8 MMA accumulates
with ~13-14 mantissa bits (DeepSeek-V3 §3.3.2), truncating; over a 32-product k-step the worst case is
~32 * 2^-13 of M → ``TOL_FP8 = 2**-8`` (typical ~2^-12; the GPU script records the measured maximum).
"""

import pytest
import torch
from _select_helpers import blocks_triton

import dsa_lab
from dsa_lab import paged, producer
from dsa_lab.bench import roofline
from dsa_lab.bench.step import DecodeStep, decode_step
from dsa_lab.bench.verify import logits_error
from dsa_lab.producer import decode_row_ends, paged_mqa_logits, sanitize_decode_logits

TOL_FP32 = 1e-5
TOL_FP8 = 2.0**-8
POISON_BITS = (0x7FC0DEAD, 0x7F80BEEF, -0x21524111, 0x00000001)  # NaN payloads, 0xDEADBEEF, a denormal


def _args(p):
    return (p["q_fp8"], p["kv_cache"], p["weights"], p["context_lens"], p["block_table"], p["max_model_len"])


def _poisoned(rows, width, device, seed=0):
    g = torch.Generator().manual_seed(seed)
    pool = torch.tensor(POISON_BITS, dtype=torch.int32)
    bits = pool[torch.randint(0, len(pool), (rows, width), generator=g)]
    bits[:, ::7] = 0x7FC00000  # plenty of plain NaN too
    return bits.view(torch.float32).to(device)


def _window(row_ends, width):
    col = torch.arange(width, device=row_ends.device)
    return col[None, :] < row_ends.to(torch.int64).clamp(max=width)[:, None]


def _bits(x):
    return x.view(torch.int32)


def _dense_reference(p, ends):
    """Independent of the paged code path: gather each sequence's dense keys first, then loop rows."""
    q, cache, w, table, width = p["q_fp8"], p["kv_cache"], p["weights"], p["block_table"], p["max_model_len"]
    B, N, H, D = q.shape
    keys, sc = paged.gather_dense_keys(cache.cpu(), table.cpu())
    kf = keys.view(torch.float8_e4m3fn).double()
    out = torch.full((B * N, width), float("nan"), dtype=torch.float64)
    for b in range(B):
        for n in range(N):
            L = int(ends[b * N + n])
            if L == 0:
                continue
            dots = q[b, n].cpu().double() @ kf[b, :L].T  # [H, L]
            out[b * N + n, :L] = sc[b, :L].double() * (w[b * N + n].cpu().double() @ dots.clamp_min(0))
    return out


# --------------------------------------------------------------------------------------------- bounds
def test_decode_row_ends_1d():
    ctx = torch.tensor([10, 3, 1], dtype=torch.int32)
    assert decode_row_ends(ctx, 1).tolist() == [10, 3, 1]
    assert decode_row_ends(ctx, 3).tolist() == [8, 9, 10, 1, 2, 3, 0, 0, 1]  # ctx < next_n clamps at 0
    assert decode_row_ends(ctx.long(), 2).dtype == torch.int32


def test_decode_row_ends_2d_next_n_gt_1():
    """The seed's bug: (B, next_n) with next_n > 1 raised on a reshape to (B,)."""
    ctx = torch.tensor([[5, 6, 7], [1, 2, 3]], dtype=torch.int64)
    assert decode_row_ends(ctx, 3).tolist() == [5, 6, 7, 1, 2, 3]
    ctx1 = torch.tensor([[9], [4]], dtype=torch.int32)
    assert decode_row_ends(ctx1, 1).tolist() == [9, 4]


def test_decode_row_ends_bad():
    with pytest.raises(ValueError, match="context_lens"):
        decode_row_ends(torch.zeros(2, 3, dtype=torch.int32), 2)
    with pytest.raises(ValueError, match="context_lens"):
        decode_row_ends(torch.zeros(2, 3, 1, dtype=torch.int32), 3)
    with pytest.raises(TypeError, match="context_lens"):
        decode_row_ends(torch.zeros(2), 1)
    with pytest.raises(ValueError, match="context_lens"):
        decode_row_ends(torch.tensor([-1, 2]), 1)
    with pytest.raises(ValueError, match="next_n"):
        decode_row_ends(torch.tensor([1, 2]), 0)


# --------------------------------------------------------------------------------------------- logits
CASES = [
    # (B, next_n, H, block_kv, ctx, width)
    (1, 1, 16, 16, [300], 512),
    (2, 2, 32, 64, [257, 64], 512),
    (2, 3, 16, 16, [130, 2], 256),
    (2, 5, 16, 64, [200, 5], 320),
    (1, 4, 64, 64, [333], 512),
    (1, 8, 16, 16, [100], 128),  # every hoisted row slot of the kernel
]


@pytest.mark.parametrize("layout", ["1d", "2d"])
@pytest.mark.parametrize("B,next_n,H,block_kv,ctx,width", CASES)
def test_logits_match_reference(B, next_n, H, block_kv, ctx, width, layout, device, fresh_seed):
    p = paged.random_decode_problem(
        B, next_n, ctx, num_heads=H, block_kv=block_kv, max_model_len=width, layout=layout, device=device,
        seed=fresh_seed, spare_blocks=5,
    )
    args = _args(p)
    ends = decode_row_ends(p["context_lens"], next_n)
    ref = paged_mqa_logits(*args, impl="reference")
    tri = paged_mqa_logits(*args, impl="triton")
    win = _window(ends, width)
    dense = _dense_reference(p, ends.cpu())
    # the torch reference itself against a per-row dense float64 computation
    assert torch.allclose(ref.cpu()[win.cpu()].double(), dense[win.cpu()], rtol=1e-5, atol=1e-5)
    bounded, rel = logits_error(*args[:5], tri, ref)
    tol = TOL_FP8 if (tri.is_cuda and paged.fp8_dot_supported(tri.device)) else TOL_FP32
    assert bounded <= tol, (bounded, rel)


def test_layouts_give_identical_logits(device, fresh_seed):
    """(B,) and (B, next_n) describing the same bounds → the same logits bit for bit, both arms."""
    p = paged.random_decode_problem(2, 3, [150, 40], num_heads=16, block_kv=16, max_model_len=256, device=device,
                                    seed=fresh_seed)
    ctx2 = paged.context_lens_2d(p["context_lens"], 3)
    for impl in ("torch", "triton"):
        outs = []
        for ctx in (p["context_lens"], ctx2, ctx2.long()):
            o = torch.full((6, 256), float("nan"), device=device)
            paged_mqa_logits(p["q_fp8"], p["kv_cache"], p["weights"], ctx, p["block_table"], 256, impl=impl, out=o)
            outs.append(o)
        assert torch.equal(_bits(outs[0]), _bits(outs[1])) and torch.equal(_bits(outs[0]), _bits(outs[2])), impl


def test_2d_layout_arbitrary_ends(device, fresh_seed):
    """(B, next_n) taken as given: non-consecutive per-row ends (and a zero) are honoured per row."""
    p = paged.random_decode_problem(2, 3, [120, 60], num_heads=16, block_kv=16, max_model_len=128, device=device,
                                    seed=fresh_seed)
    ctx = torch.tensor([[17, 0, 120], [60, 33, 1]], dtype=torch.int32, device=device)
    ends = decode_row_ends(ctx, 3)
    for impl in ("torch", "triton"):
        o = _poisoned(6, 128, device)
        before = o.clone()
        paged_mqa_logits(p["q_fp8"], p["kv_cache"], p["weights"], ctx, p["block_table"], 128, impl=impl, out=o)
        win = _window(ends, 128)
        assert torch.equal(_bits(o)[~win], _bits(before)[~win]), impl
        assert not bool(o[win].isnan().any()), impl


@pytest.mark.parametrize("impl", ["torch", "triton"])
def test_poison_survives_outside_window(impl, device, fresh_seed):
    """Writes exactly the window: in-window = reference, every other column keeps its poison bit for bit."""
    B, N, width = 2, 3, 384
    p = paged.random_decode_problem(B, N, [301, 2], num_heads=32, block_kv=16, max_model_len=width, device=device,
                                    seed=fresh_seed)
    args = _args(p)
    ends = decode_row_ends(p["context_lens"], N)
    win = _window(ends, width)
    out = _poisoned(B * N, width, device, seed=fresh_seed)
    before = out.clone()
    res = paged_mqa_logits(*args, impl=impl, out=out)
    assert res is out
    assert torch.equal(_bits(out)[~win], _bits(before)[~win])
    ref = paged_mqa_logits(*args, impl="reference")
    bounded, _ = logits_error(*args[:5], out, ref)
    assert bounded <= (TOL_FP8 if out.is_cuda else TOL_FP32)
    assert not bool(out[win].isnan().any())
    assert int(win.sum()) == sum(decode_row_ends(p["context_lens"], N).tolist())


@pytest.mark.parametrize("sanitize", [False, True])
def test_prefill_unnecessary_for_bounded_selection(sanitize, device, fresh_seed):
    """Selection over the poisoned workspace (bounded by the same ends) = selection over a -inf prefill."""
    B, N, width, bs, k = 2, 3, 1024, 8, 16
    p = paged.random_decode_problem(B, N, [700, 90], num_heads=16, block_kv=64, max_model_len=width,
                                    device=device, seed=fresh_seed)
    args = _args(p)
    ends = decode_row_ends(p["context_lens"], N)
    poisoned = _poisoned(B * N, width, device, seed=fresh_seed)
    prefilled = torch.full((B * N, width), float("-inf"), device=device)
    for out in (poisoned, prefilled):
        paged_mqa_logits(*args, out=out)
        if sanitize:
            sanitize_decode_logits(out, ends)
    for impl in ("reference", "torch", "triton"):
        a = dsa_lab.select_candidate_blocks(poisoned, ends, k, block_size=bs, impl=impl)
        b = dsa_lab.select_candidate_blocks(prefilled, ends, k, block_size=bs, impl=impl)
        assert torch.equal(a.sort(dim=1).values, b.sort(dim=1).values), impl
        # and every selected block lies inside its row's live block range
        live = (ends.to(torch.int64) + bs - 1) // bs
        assert bool(((a < live[:, None].to(a.dtype)) | (a == -1)).all()), impl


def test_edge_contexts(device, fresh_seed):
    """Empty sequences, ctx < next_n, a sequence ending exactly on a cache-block boundary, ends at the width."""
    width = 128
    p = paged.random_decode_problem(4, 3, [0, 2, 64, 128], num_heads=16, block_kv=64, max_model_len=width,
                                    device=device, seed=fresh_seed)
    args = _args(p)
    ends = decode_row_ends(p["context_lens"], 3)
    assert ends.tolist() == [0, 0, 0, 0, 1, 2, 62, 63, 64, 126, 127, 128]
    ref = paged_mqa_logits(*args, impl="reference", out=_poisoned(12, width, device))
    out = _poisoned(12, width, device)
    before = out.clone()
    paged_mqa_logits(*args, impl="triton", out=out)
    win = _window(ends, width)
    assert torch.equal(_bits(out)[~win], _bits(before)[~win])
    assert logits_error(*args[:5], out, ref)[0] <= (TOL_FP8 if out.is_cuda else TOL_FP32)


def test_auto_and_env_override(device, monkeypatch):
    p = paged.random_decode_problem(1, 1, [40], num_heads=16, block_kv=16, max_model_len=64, device=device)
    a = paged_mqa_logits(*_args(p))
    monkeypatch.setenv("DSA_LAB_IMPL", "torch")
    b = paged_mqa_logits(*_args(p))
    assert torch.allclose(a[:, :40], b[:, :40], rtol=1e-4, atol=1e-4)


# --------------------------------------------------------------------------------------------- sanitize
def _dirty_logits(rows, width, device, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, width, generator=g)
    r = torch.rand(rows, width, generator=g)
    x[r < 0.05] = float("nan")
    x[(r >= 0.05) & (r < 0.08)] = float("inf")
    x[(r >= 0.08) & (r < 0.11)] = float("-inf")
    x[:, 5] = -0.0
    nanp = torch.tensor([0x7FC0DEAD], dtype=torch.int32).view(torch.float32)
    x[:, 3] = nanp  # a NaN with a payload
    return x.to(device)


@pytest.mark.parametrize("impl", ["torch", "triton"])
def test_sanitize_bounded_vs_full(impl, device, fresh_seed):
    rows, width = 6, 3000
    x = _dirty_logits(rows, width, device, fresh_seed)
    ends = torch.tensor([0, 1, 6, 2048, 2999, 5000], dtype=torch.int32, device=device)  # 5000 > width: clamped
    bounded = x.clone()
    full = x.clone()
    assert sanitize_decode_logits(bounded, ends, impl=impl) is None
    producer.sanitize_decode_logits_full(full)
    win = _window(ends, width)
    assert torch.equal(_bits(bounded)[win], _bits(full)[win])
    assert torch.equal(_bits(bounded)[~win], _bits(x)[~win])  # tail untouched, NaN payloads included
    assert torch.equal(_bits(full), _bits(x.nan_to_num(nan=float("-inf"))))
    assert not bool(bounded[win].isnan().any())


def test_sanitize_row_strided_view(device):
    base = _dirty_logits(4, 200, device, 1)
    view = base[:, :150]
    ends = torch.tensor([150, 10, 0, 149], device=device)
    expect = base.clone()
    sanitize_decode_logits(view, ends)
    w = _window(ends, 150)
    e = expect[:, :150]
    e.copy_(torch.where(w, e.nan_to_num(nan=float("-inf")), e))
    assert torch.equal(_bits(base), _bits(expect))  # columns 150.. of the base untouched too


def test_sanitize_bad_inputs(device):
    x = torch.zeros(3, 10, device=device)
    with pytest.raises(ValueError, match="row_ends"):
        sanitize_decode_logits(x, torch.zeros(2, dtype=torch.int32, device=device))
    with pytest.raises(TypeError, match="row_ends"):
        sanitize_decode_logits(x, torch.zeros(3, device=device))
    with pytest.raises(ValueError, match="row_ends"):
        sanitize_decode_logits(x, torch.tensor([1, -1, 0], device=device))
    with pytest.raises(TypeError, match="logits"):
        sanitize_decode_logits(x.double(), torch.zeros(3, dtype=torch.int32, device=device))


# --------------------------------------------------------------------------------------------- bad inputs
def _small(device, **kw):
    p = paged.random_decode_problem(2, 2, [30, 20], num_heads=16, block_kv=16, max_model_len=64, device=device, **kw)
    return dict(q_fp8=p["q_fp8"], kv_cache=p["kv_cache"], weights=p["weights"], context_lens=p["context_lens"],
                block_table=p["block_table"], max_model_len=64)


def _call(**a):
    return paged_mqa_logits(a.pop("q_fp8"), a.pop("kv_cache"), a.pop("weights"), a.pop("context_lens"),
                            a.pop("block_table"), a.pop("max_model_len"), **a)


def test_bad_inputs(device):
    good = _small(device)
    _call(**good)
    cases = [
        (TypeError, "q_fp8", dict(q_fp8=good["q_fp8"].float())),
        (TypeError, "q_fp8", dict(q_fp8=good["q_fp8"].to(torch.float8_e5m2))),
        (ValueError, "q_fp8", dict(q_fp8=good["q_fp8"][0])),
        (TypeError, "kv_cache", dict(kv_cache=good["kv_cache"].view(torch.float8_e4m3fn))),
        (TypeError, "kv_cache", dict(kv_cache=good["kv_cache"].to(torch.int8))),
        (ValueError, "kv_cache", dict(kv_cache=good["kv_cache"][..., :-4].contiguous())),
        (TypeError, "weights", dict(weights=good["weights"].half())),
        (ValueError, "weights", dict(weights=good["weights"][:3])),
        (TypeError, "context_lens", dict(context_lens=good["context_lens"].float())),
        (ValueError, "context_lens", dict(context_lens=good["context_lens"][:1])),
        (ValueError, "context_lens", dict(context_lens=torch.zeros(2, 3, dtype=torch.int32, device=device))),
        (ValueError, "context_lens", dict(context_lens=torch.tensor([-1, 3], dtype=torch.int32, device=device))),
        (ValueError, "max_model_len", dict(context_lens=torch.tensor([65, 3], dtype=torch.int32, device=device))),
        (ValueError, "block_table", dict(context_lens=torch.tensor([33, 3], dtype=torch.int32, device=device),
                                         block_table=good["block_table"][:, :2].contiguous())),
        (ValueError, "block_table", dict(block_table=torch.full_like(good["block_table"], 10**6))),
        (ValueError, "block_table", dict(block_table=good["block_table"][:1])),
        (TypeError, "block_table", dict(block_table=good["block_table"].float())),
        (TypeError, "max_model_len", dict(max_model_len=64.0)),
        (ValueError, "max_model_len", dict(max_model_len=0)),
        (ValueError, "out", dict(out=torch.empty(4, 63, device=device))),
        (TypeError, "out", dict(out=torch.empty(4, 64, dtype=torch.float64, device=device))),
        (ValueError, "impl", dict(impl="cuda")),
    ]
    if hasattr(torch, "float8_e4m3fnuz"):
        cases.append((TypeError, "fnuz", dict(q_fp8=good["q_fp8"].view(torch.uint8).view(torch.float8_e4m3fnuz))))
    for exc, match, over in cases:
        a = dict(good)
        a.update(over)
        with pytest.raises(exc, match=match):
            _call(**a)


def test_triton_shape_limits(device):
    p = paged.random_decode_problem(1, 1, [16], num_heads=24, block_kv=16, max_model_len=32, device=device)
    with pytest.raises(ValueError, match="head count"):
        paged_mqa_logits(*_args(p), impl="triton")
    paged_mqa_logits(*_args(p), impl="torch")  # the reference takes any H


# ---------------------------------------------------------------------- the producer's epilogue: sanitize + scores
def _plant_specials(p, seed):
    """NaN key bytes, +inf and NaN scales at random live tokens of every sequence: logits that are NaN, +-inf."""
    keys, scales = paged.split_cache(p["kv_cache"], p["q_fp8"].shape[-1])
    bkv = p["kv_cache"].shape[1]
    g = torch.Generator().manual_seed(seed)
    table = p["block_table"].cpu()
    for b, L in enumerate(p["seq_lens"]):
        if L == 0:
            continue
        for kind in range(4):
            t = int(torch.randint(0, L, (1,), generator=g))
            blk, slot = int(table[b, t // bkv]), t % bkv
            if kind == 0:
                keys[blk, slot, :] = 0x7F  # e4m3fn NaN
            elif kind == 1:
                scales[blk, slot] = float("inf")
            elif kind == 2:
                scales[blk, slot] = float("nan")
            else:
                keys[blk, slot, 0] = 0xFF  # one NaN lane


FUSED_CASES = [  # next_n, layout, block_size (3: no whole blocks in a tile -> the separate scores launch), arm
    (1, "1d", 8, "triton"), (2, "2d", 8, "triton"), (3, "1d", 16, "triton"), (4, "2d", 4, "triton"),
    (5, "1d", 8, "triton"), (5, "2d", 8, "triton"), (3, "2d", 3, "triton"), (2, "1d", 64, "triton"),
    (5, "2d", 8, "torch"), (3, "1d", 3, "torch"),
]


@pytest.mark.parametrize("next_n,layout,bs,impl", FUSED_CASES)
def test_fused_sanitize_and_scores(next_n, layout, bs, impl, device, fresh_seed):
    """``sanitize`` + ``block_scores_out``: the stored logits are bit for bit ``sanitize_decode_logits`` of the plain
    kernel's, the scores bit for bit ``block_scores`` of them on every block that starts in the window, and every
    logit past a row's end and every block at or past it keep their poison."""
    width = 320
    ctx = [257, 9, 0] if layout == "1d" else [131, 1, 200]  # odd lengths, a row of one token, an empty sequence
    p = paged.random_decode_problem(3, next_n, ctx, num_heads=16, block_kv=16, max_model_len=width, layout=layout,
                                    device=device, seed=fresh_seed)
    _plant_specials(p, fresh_seed)
    args = _args(p)
    rows, nb = 3 * next_n, -(-width // bs)
    ends = decode_row_ends(p["context_lens"], next_n)
    out = _poisoned(rows, width, device, fresh_seed)
    sc = _poisoned(rows, nb, device, fresh_seed + 1)
    out0, sc0 = out.clone(), sc.clone()
    paged_mqa_logits(*args, impl=impl, out=out, sanitize=True, block_scores_out=sc, block_size=bs)
    plain = paged_mqa_logits(*args, impl=impl)
    win = _window(ends, width)
    assert bool(torch.isnan(plain[win]).any()) and bool(torch.isinf(plain[win]).any())  # the planted values arrive
    sanitize_decode_logits(plain, ends, impl="torch")
    bad = (_bits(out) != _bits(plain)) & win
    assert not bool(bad.any()), f"first differing logit (row, col): {bad.nonzero()[0].tolist()}"
    assert torch.equal(_bits(out)[~win], _bits(out0)[~win])
    want = dsa_lab.block_scores(out, ends, block_size=bs, impl="torch")
    live = torch.arange(nb, device=device)[None, :] * bs < ends.to(torch.int64)[:, None]
    bad = (_bits(sc) != _bits(want)) & live
    assert not bool(bad.any()), f"first differing block (row, block): {bad.nonzero()[0].tolist()}"
    assert torch.equal(_bits(sc)[~live], _bits(sc0)[~live])


@pytest.mark.parametrize("algo", ["hier", "bisect", "radix"])
def test_select_from_producer_scores(algo, device, fresh_seed):
    """The candidate path from the producer's scores (no scores launch), with the flags the producer zeroed, on each
    select: the ids and flags of ``select_candidate_blocks`` of the same logits."""
    from dsa_lab.launch.producer import paged_mqa_logits as paged_mqa_logits_triton

    N, width, k = 2, 384, 9
    p = paged.random_decode_problem(2, N, [300, 41], num_heads=16, block_kv=16, max_model_len=width, device=device,
                                    seed=fresh_seed)
    args = _args(p)
    ends = decode_row_ends(p["context_lens"], N)
    nb = width // 8
    logits = torch.empty(4, width, device=device)
    sc = _poisoned(4, nb, device, fresh_seed)
    flags = torch.full((4, nb + 1), 7, dtype=torch.uint8, device=device)
    paged_mqa_logits_triton(*args[:5], logits, sanitize=True, scores_out=sc, block_size=8, flags_out=flags,
                            row_ends=ends)
    assert not bool(flags.any())
    ids = torch.full((4, k), -5, dtype=torch.int32, device=device)
    blocks_triton(logits, ends, k, None, 8, 1, ids, with_flags=True, flags_out=flags, scores=sc, algo=algo)
    want, wflags = dsa_lab.select_candidate_blocks(logits, ends, k, block_size=8, impl="reference", with_flags=True)
    assert torch.equal(ids.sort(1).values, want.sort(1).values)
    assert torch.equal(flags, wflags)


def test_fused_bad_inputs(device):
    good = _small(device)
    nb = 8
    cases = [
        (TypeError, "sanitize", dict(sanitize=1)),
        (TypeError, "block_size", dict(block_size=8.0)),
        (ValueError, "block_size", dict(block_size=0)),
        (TypeError, "block_scores_out", dict(block_scores_out=torch.empty(4, nb, dtype=torch.float64, device=device))),
        (ValueError, "block_scores_out", dict(block_scores_out=torch.empty(4, nb + 1, device=device))),
        (ValueError, "block_scores_out", dict(block_scores_out=torch.empty(4, 2 * nb, device=device)[:, ::2])),
        (ValueError, "block_scores_out", dict(block_scores_out=torch.empty(4, 16, device=device), block_size=8)),
    ]
    for exc, match, over in cases:
        a = dict(good)
        a.update(over)
        with pytest.raises(exc, match=match):
            _call(**a)


# --------------------------------------------------------------------------------------------- bytes, step
def test_producer_bytes():
    b = roofline.producer_bytes([100, 7], 2, 64, 128, block_kv=16)
    # ends: [99, 100, 6, 7] → sequences read 100 and 7 tokens
    assert b["kv"] == 107 * 132
    assert b["q"] == 2 * 2 * 64 * 128 and b["weights"] == 4 * 64 * 4
    assert b["block_table"] == (7 + 1) * 4
    assert b["out"] == (99 + 100 + 6 + 7) * 4
    assert b["read"] == b["kv"] + b["q"] + b["weights"] + b["block_table"]
    assert b["total"] == b["read"] + b["out"]
    two = roofline.producer_bytes(torch.tensor([[99, 100], [6, 7]]), 2, 64, 128, block_kv=16)
    assert two == b
    assert roofline.producer_bytes([100], 1, 64, max_model_len=50)["kv"] == 50 * 132


def test_producer_flops():
    # sequences read 100 and 7 tokens; each token meets 2 rows x 64 heads x 128 dims, 2 flops a multiply-add
    assert roofline.producer_flops([100, 7], 2, 64, 128) == 2 * 2 * 64 * 128 * 107
    assert roofline.producer_flops(torch.tensor([[99, 100], [6, 7]]), 2, 64, 128) == 2 * 2 * 64 * 128 * 107
    assert roofline.producer_flops([100], 1, 64, max_model_len=50) == 2 * 64 * 128 * 50


def test_decode_step_composes(device, fresh_seed):
    B, N, width, k = 2, 2, 512, 8
    p = paged.random_decode_problem(B, N, [400, 33], num_heads=16, block_kv=16, max_model_len=width,
                                    device=device, seed=fresh_seed)
    step = decode_step(*_args(p), topk_blocks=k, block_size=8, select_impl="reference", compose="staged")
    ends = decode_row_ends(p["context_lens"], N)
    assert torch.equal(step.row_ends, ends)
    ref = paged_mqa_logits(*_args(p), impl="reference")
    assert logits_error(*_args(p)[:5], step.logits, ref)[0] <= (TOL_FP8 if ref.is_cuda else TOL_FP32)
    # selection from the step's own logits (other logits, within tolerance, may rank near-ties differently)
    logits = step.logits.clone()
    sanitize_decode_logits(logits, ends)
    expect = dsa_lab.select_candidate_blocks(logits, ends, k, block_size=8, impl="reference")
    assert torch.equal(step.candidates.sort(1).values, expect.sort(1).values)
    assert step.flags.shape == (B * N, width // 8 + 1)
    assert int(step.flags.sum()) == int((expect >= 0).sum())
    stages = step.stages(split=True)
    assert list(stages) == ["row_ends", "logits", "sanitize", "block_scores", "topk_select", "flags"]
    for fn in stages.values():
        fn()
    assert torch.equal(step.topk.sort(1).values, step.candidates.sort(1).values)
    assert list(DecodeStep(*_args(p), compose="staged", sanitize=None).stages()) == [
        "row_ends", "logits", "candidates", "flags"]


@pytest.mark.parametrize("impl,select_impl", [("triton", "triton"), ("triton", "reference"), ("torch", "triton")])
def test_decode_step_fused_equals_staged(impl, select_impl, device, fresh_seed):
    """The fused composition (producer + scores, then the select) gives the staged one's ids and flags; the flags
    buffer is poisoned first (the producer zeroes it, or the step does when the producer is the torch arm)."""
    B, N, width, k = 2, 3, 512, 8
    p = paged.random_decode_problem(B, N, [400, 33], num_heads=16, block_kv=16, max_model_len=width, device=device,
                                    seed=fresh_seed)
    staged = decode_step(*_args(p), topk_blocks=k, compose="staged", impl=impl, select_impl="reference")
    f = DecodeStep(*_args(p), topk_blocks=k, impl=impl, select_impl=select_impl)
    assert list(f.stages()) == ["row_ends", "logits", "candidates"]
    f.flags.fill_(7)
    f.run()
    assert torch.equal(f.candidates.sort(1).values, staged.candidates.sort(1).values)
    assert torch.equal(f.flags, staged.flags)
    for bad in ("full", None):
        with pytest.raises(ValueError, match="compose"):
            DecodeStep(*_args(p), sanitize=bad)
    with pytest.raises(ValueError, match="compose"):
        DecodeStep(*_args(p), compose="one")
    with pytest.raises(ValueError, match="staged"):
        f.stages(split=True)


def test_decode_step_token_level_form(device, fresh_seed):
    """DeepSeek V3.2's form of the step: block size 1, so the candidates are the top-k tokens of each row's window
    (the producer's scores are its sanitized logits, the newest token pinned to +inf).  Fused equals staged with
    the exact select."""
    B, N, width, k = 2, 2, 512, 40
    p = paged.random_decode_problem(B, N, [400, 90], num_heads=16, block_kv=16, max_model_len=width, device=device,
                                    seed=fresh_seed)
    staged = decode_step(*_args(p), topk_blocks=k, block_size=1, compose="staged", select_impl="reference")
    f = DecodeStep(*_args(p), topk_blocks=k, block_size=1)
    f.flags.fill_(7)
    f.run()
    assert torch.equal(f.candidates.sort(1).values, staged.candidates.sort(1).values)
    assert torch.equal(f.flags, staged.flags)


# --------------------------------------------------------------------------------------------- GPU sized
@pytest.mark.gpu
@pytest.mark.parametrize("next_n", [1, 3, 5])
@pytest.mark.parametrize("block_kv", [16, 64])
@pytest.mark.parametrize("layout", ["1d", "2d"])
def test_gpu_full_size(next_n, block_kv, layout):
    B, width = 8, 262144
    ctx = [65536, 1, 4095, 130000, 77, 8192, 64, 20000]
    p = paged.random_decode_problem(B, next_n, ctx, num_heads=64, block_kv=block_kv, max_model_len=width,
                                    layout=layout, device="cuda", seed=next_n)
    args = _args(p)
    ends = decode_row_ends(p["context_lens"], next_n)
    out = _poisoned(B * next_n, width, "cuda")
    before = out.clone()
    paged_mqa_logits(*args, impl="triton", out=out)
    win = _window(ends, width)
    assert torch.equal(_bits(out)[~win], _bits(before)[~win])
    ref = paged_mqa_logits(*args, impl="reference")
    bounded, rel = logits_error(*args[:5], out, ref)
    assert bounded <= TOL_FP8, (bounded, rel)


@pytest.mark.gpu
@pytest.mark.parametrize("next_n", [1, 3, 5])
@pytest.mark.parametrize("layout", ["1d", "2d"])
def test_gpu_fused_full_size(next_n, layout):
    """The fp8 MMA path with the epilogue's sanitize and block scores, at the decode width: logits bit for bit the
    plain kernel's sanitized, scores bit for bit ``block_scores`` of them, poison kept past every end."""
    B, width, bs = 8, 262144, 8
    ctx = [65536, 1, 4095, 130000, 77, 8192, 64, 20001]
    p = paged.random_decode_problem(B, next_n, ctx, num_heads=64, block_kv=64, max_model_len=width, layout=layout,
                                    device="cuda", seed=10 + next_n)
    _plant_specials(p, next_n)
    args = _args(p)
    ends = decode_row_ends(p["context_lens"], next_n)
    rows, nb = B * next_n, width // bs
    out, sc = _poisoned(rows, width, "cuda"), _poisoned(rows, nb, "cuda", 1)
    out0, sc0 = out.clone(), sc.clone()
    paged_mqa_logits(*args, impl="triton", out=out, sanitize=True, block_scores_out=sc, block_size=bs)
    plain = paged_mqa_logits(*args, impl="triton")
    sanitize_decode_logits(plain, ends)
    win = _window(ends, width)
    assert torch.equal(_bits(out)[win], _bits(plain)[win])
    assert torch.equal(_bits(out)[~win], _bits(out0)[~win])
    want = dsa_lab.block_scores(out, ends, block_size=bs, impl="triton")
    live = torch.arange(nb, device="cuda")[None, :] * bs < ends.to(torch.int64)[:, None]
    assert torch.equal(_bits(sc)[live], _bits(want)[live])
    assert torch.equal(_bits(sc)[~live], _bits(sc0)[~live])


@pytest.mark.gpu
def test_gpu_cuda_graph_capture():
    p = paged.random_decode_problem(4, 2, 5000, num_heads=64, block_kv=64, max_model_len=8192, device="cuda")
    args = _args(p)
    out = torch.full((8, 8192), float("nan"), device="cuda")
    paged_mqa_logits(*args, out=out)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        ends = decode_row_ends(p["context_lens"], 2)
        paged_mqa_logits(*args, out=out)
        sanitize_decode_logits(out, ends)
    p["context_lens"].sub_(1000)  # new ends are read on the device at replay
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    win = _window(decode_row_ends(p["context_lens"], 2), 8192)
    assert not bool(out[win].isnan().any()) and bool(out[~win].isnan().all())


@pytest.mark.parametrize(
    "config",
    [
        {"BLOCK_T": 16, "HOIST_Q": False},
        {"BLOCK_T": 64},
        {"BLOCK_T": 128, "HOIST_Q": False, "NUM_STAGES": 2},
    ],
)
def test_kernel_variants(config, device, fresh_seed):
    """Every launch variant the GPU sweep may pick gives the same window (tiles smaller/larger than block_kv)."""
    from dsa_lab.launch.producer import paged_mqa_logits as paged_mqa_logits_triton

    B, N, width = 2, 3, 384
    p = paged.random_decode_problem(B, N, [300, 45], num_heads=16, block_kv=64, max_model_len=width,
                                    layout="2d", device=device, seed=fresh_seed)
    args = _args(p)
    ends = decode_row_ends(p["context_lens"], N)
    out = _poisoned(B * N, width, device)
    before = out.clone()
    paged_mqa_logits_triton(*args[:5], out, config=config)
    win = _window(ends, width)
    assert torch.equal(_bits(out)[~win], _bits(before)[~win])
    ref = paged_mqa_logits(*args, impl="reference")
    assert logits_error(*args[:5], out, ref)[0] <= (TOL_FP8 if out.is_cuda else TOL_FP32)


@pytest.mark.gpu
def test_gpu_decode_step_in_graph():
    """The whole step (and each stage) replays in a CUDA graph; the eager intermediates stay valid."""
    p = paged.random_decode_problem(8, 3, [65536, 100, 4096, 1, 30000, 7, 8192, 131072], num_heads=64,
                                    block_kv=64, max_model_len=262144, device="cuda", seed=1)
    for compose in ("fused", "staged"):
        st = DecodeStep(*_args(p), topk_blocks=64, block_size=8, compose=compose).run()
        eager = st.candidates.clone()
        eager_flags = st.flags.clone()
        torch.cuda.synchronize()
        graphs = []
        for fn in list(st.stages().values()) + [st.run]:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn()
            graphs.append(g)
        st.candidates.fill_(-7)
        for g in graphs:
            g.replay()
        torch.cuda.synchronize()
        assert torch.equal(st.candidates.sort(1).values, eager.sort(1).values), compose
        assert torch.equal(st.flags, eager_flags), compose


@pytest.mark.gpu
def test_gpu_decode_step_token_level_form():
    """The V3.2 form at its scale: top-2048 tokens of 128K-token windows (the long-row select reading the
    producer's scores), in a CUDA graph, against the staged composition with the exact select."""
    p = paged.random_decode_problem(8, 1, [131072, 70000, 2048, 1, 131072, 100000, 5000, 131072], num_heads=64,
                                    block_kv=64, max_model_len=131072, device="cuda", seed=2)
    staged = decode_step(*_args(p), topk_blocks=2048, block_size=1, compose="staged", select_impl="reference")
    st = DecodeStep(*_args(p), topk_blocks=2048, block_size=1).run()
    assert torch.equal(st.candidates.sort(1).values, staged.candidates.sort(1).values)
    assert torch.equal(st.flags, staged.flags)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        st.run()
    st.candidates.fill_(-7)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(st.candidates.sort(1).values, staged.candidates.sort(1).values)
