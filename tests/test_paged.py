"""Paged-cache and FP8 helpers (dsa_lab.paged) and the Triton e4m3fn upcast."""
import pytest
import torch

from dsa_lab import paged


def _bits_equal(a, b):
    """Bit equality of float32 tensors, every NaN equal to every NaN (torch canonicalises payloads)."""
    same = a.view(torch.int32) == b.view(torch.int32)
    return bool((same | (a.isnan() & b.isnan())).all())


ALL_CODES = torch.arange(256, dtype=torch.uint8)
TORCH_DECODED = ALL_CODES.view(torch.float8_e4m3fn).float()


def test_e4m3fn_decode_torch_all_codes():
    got = paged.e4m3fn_to_float32(ALL_CODES)
    assert _bits_equal(got, TORCH_DECODED)
    assert int(TORCH_DECODED.isnan().sum()) == 2  # 0x7F, 0xFF: e4m3fn has no inf
    assert got[0x80].item() == 0 and got[0x80].view(torch.int32).item() == -(2**31)  # -0.0 kept


def test_e4m3fn_decode_triton_all_codes(device):
    from dsa_lab.launch.producer import e4m3fn_decode as e4m3fn_decode_triton

    got = e4m3fn_decode_triton(ALL_CODES.to(device)).cpu()
    assert _bits_equal(got, TORCH_DECODED)
    assert got.isnan().sum() == 2
    # the sign of zero survives (0x80 → -0.0)
    assert got[0x80].view(torch.int32).item() == -(2**31)


def test_check_fp8_rejects_other_formats():
    ok = torch.zeros(2, dtype=torch.float8_e4m3fn)
    assert paged.check_fp8(ok, "q_fp8") is ok
    if hasattr(torch, "float8_e4m3fnuz"):
        with pytest.raises(TypeError, match="q_fp8.*fnuz"):
            paged.check_fp8(torch.zeros(2, dtype=torch.float8_e4m3fnuz), "q_fp8")
    for dt in (torch.float8_e5m2, torch.float16, torch.uint8):
        with pytest.raises(TypeError, match="q_fp8"):
            paged.check_fp8(torch.zeros(2, dtype=dt), "q_fp8")
    with pytest.raises(TypeError, match="q_fp8"):
        paged.check_fp8([1, 2], "q_fp8")


def test_fp8_dot_not_used_by_interpreter_or_cpu(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert not paged.fp8_dot_supported(torch.device("cpu"))


def test_quantize_keys_roundtrip():
    g = torch.Generator().manual_seed(0)
    k = torch.randn(3, 50, 128, generator=g) * 7
    k[0, 3] = 0  # an all-zero token keeps scale 1
    kq, s = paged.quantize_keys(k)
    assert kq.dtype == torch.float8_e4m3fn and s.shape == (3, 50)
    assert s[0, 3].item() == 1.0
    deq = kq.float() * s[..., None]
    # e4m3 has 3 mantissa bits: relative rounding error <= 2^-4 of the token's amax
    assert bool(((deq - k).abs() <= k.abs().amax(-1, keepdim=True) * 2**-4 + 1e-12).all())
    assert float(kq.float().abs().amax()) == paged.FP8_MAX


@pytest.mark.parametrize("block_kv", [16, 64])
def test_build_paged_cache_roundtrip(block_kv):
    g = torch.Generator().manual_seed(block_kv)
    B, T, D = 3, 150, 128
    kq, s = paged.quantize_keys(torch.randn(B, T, D, generator=g))
    lens = [150, 1, 0]
    cache, table = paged.build_paged_cache(kq, s, lens, block_kv, generator=g, num_blocks=20)
    assert cache.dtype == torch.uint8 and cache.shape == (20, block_kv, 1, D + 4)
    assert table.dtype == torch.int32 and table.shape == (B, -(-T // block_kv))
    keys, sc = paged.gather_dense_keys(cache, table)
    for b, L in enumerate(lens):
        assert torch.equal(keys[b, :L], kq[b, :L].view(torch.uint8))
        assert torch.equal(sc[b, :L], s[b, :L])
    # random placement: each used block owned once, and not simply 0, 1, 2, ...
    used = torch.cat([table[b, : -(-L // block_kv)] for b, L in enumerate(lens)])
    assert used.unique().numel() == used.numel()
    assert not torch.equal(used, torch.arange(used.numel(), dtype=torch.int32))


def test_build_paged_cache_bad_args():
    kq = torch.zeros(2, 10, 128, dtype=torch.float8_e4m3fn)
    s = torch.ones(2, 10)
    with pytest.raises(ValueError, match="seq_lens"):
        paged.build_paged_cache(kq, s, [11, 0], 16)
    with pytest.raises(ValueError, match="num_blocks"):
        paged.build_paged_cache(kq, s, [10, 10], 4, num_blocks=3)
    with pytest.raises(TypeError, match="k_fp8"):
        paged.build_paged_cache(kq.float(), s, [1, 1], 16)


@pytest.mark.parametrize("layout", ["1d", "2d"])
def test_random_decode_problem(layout, device):
    p = paged.random_decode_problem(
        3, 4, [100, 5, 64], num_heads=32, block_kv=16, max_model_len=256, layout=layout, device=device, seed=3
    )
    assert p["q_fp8"].shape == (3, 4, 32, 128) and p["q_fp8"].dtype == torch.float8_e4m3fn
    assert p["weights"].shape == (12, 32)
    assert p["block_table"].shape == (3, 7)
    ctx = p["context_lens"]
    assert ctx.shape == ((3,) if layout == "1d" else (3, 4))
    if layout == "2d":
        assert ctx[:, -1].tolist() == [100, 5, 64]  # last column = sequence length
        assert ctx[1].tolist() == [2, 3, 4, 5]
    used = torch.cat([p["block_table"][0, :7], p["block_table"][1, :1], p["block_table"][2, :4]])
    assert used.unique().numel() == used.numel()
    _, sc = paged.split_cache(p["kv_cache"])
    assert bool((sc > 0).all())


def test_context_lens_2d_matches_decode_row_ends():
    from dsa_lab import decode_row_ends

    ctx = torch.tensor([7, 3, 1, 0], dtype=torch.int32)
    two = paged.context_lens_2d(ctx, 3)
    assert torch.equal(decode_row_ends(two, 3), decode_row_ends(ctx, 3))
