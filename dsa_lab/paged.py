"""Paged FP8 key cache: layout helpers, FP8 format helpers and random decode problems.

Cache layout (docs/design.md §3, as DeepGEMM / aiter): ``kv_cache`` is ``uint8 [num_blocks, block_kv, 1, D + 4]``.
The ``[block_kv, 1, D + 4]`` shape is only a byte container: within one cache block the first
``block_kv * D`` bytes are the fp8 e4m3fn keys of its ``block_kv`` tokens (token-major, ``D`` bytes each),
followed by ``block_kv`` fp32 scales (4 bytes each).  Token ``p`` of sequence ``b`` lives in cache block
``block_table[b, p // block_kv]`` at slot ``p % block_kv``.  The dequantised key is ``scale(p) * k(p)``;
the producer applies the scale after the ReLU (it is positive), so ``logit = scale * sum_h w_h relu(q_h . k)``.

FP8 formats: NVIDIA Hopper/Ada/Blackwell and AMD gfx950 use OCP ``e4m3fn`` (bias 7, no inf, NaN = ``S.1111.111``);
AMD gfx942 (MI300) uses ``e4m3fnuz`` (bias 8, one NaN = ``0x80``, no -0).  Same bits, different values: this
package accepts ``torch.float8_e4m3fn`` only and rejects the ``fnuz`` types with a ``TypeError``.
"""
from __future__ import annotations

import math

import torch

__all__ = [
    "FP8_DTYPE",
    "FP8_MAX",
    "check_fp8",
    "fp8_dot_supported",
    "e4m3fn_to_float32",
    "quantize_keys",
    "cache_block_bytes",
    "split_cache",
    "build_paged_cache",
    "gather_dense_keys",
    "random_decode_problem",
    "context_lens_2d",
]

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = 448.0  # largest finite e4m3fn
_FNUZ = tuple(getattr(torch, n) for n in ("float8_e4m3fnuz", "float8_e5m2fnuz") if hasattr(torch, n))


def check_fp8(t: torch.Tensor, name: str) -> torch.Tensor:
    """Accept ``torch.float8_e4m3fn`` only; a clear ``TypeError`` otherwise (``fnuz`` named explicitly)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dtype in _FNUZ:
        raise TypeError(
            f"{name} has dtype {str(t.dtype).replace('torch.', '')} (the gfx942 'fnuz' FP8 format: bias 8, "
            f"NaN = 0x80); dsa_lab's producer takes OCP float8_e4m3fn (H200, gfx950). Convert with "
            f"{name}.float().to(torch.float8_e4m3fn) (and rescale the cache) or add an fnuz kernel"
        )
    if t.dtype != FP8_DTYPE:
        raise TypeError(f"{name} must have dtype float8_e4m3fn, got {str(t.dtype).replace('torch.', '')}")
    return t


def fp8_dot_supported(device: torch.device) -> bool:
    """True when Triton can feed e4m3fn operands straight to ``tl.dot`` on ``device``.

    Verified: NVIDIA H200 (sm_90).  Assumed by capability: sm_89+ (Ada, Blackwell).  AMD gfx950 (MI355X: a
    native e4m3fn MFMA) and gfx942 (MI300X: its native fp8 is ``fnuz``; Triton converts e4m3fn operands to f16 for
    an f16 MFMA, exact): compiled and resource-checked on a CPU (``dsa-lab compile-check``), never run.  Any other
    device, and the Triton interpreter (numpy has no fp8): False, the upcast path.
    """
    from ._impl import device_facts, fp8_dot_for_arch, interpreter_active

    if interpreter_active() or device.type != "cuda":
        return False
    return fp8_dot_for_arch(device_facts(device.index if device.index is not None else torch.cuda.current_device())
                            ["arch"])


def e4m3fn_to_float32(bits: torch.Tensor) -> torch.Tensor:
    """Decode e4m3fn bytes (uint8) to float32 with integer ops: the torch twin of the Triton upcast.

    ``S EEEE MMM``: normal ``(-1)^S 2^(E-7) (1 + M/8)``; ``E = 0`` subnormal ``(-1)^S M 2^-9``;
    ``E = 15, M = 7`` NaN (no infinities).  Bit-identical to ``bits.view(float8_e4m3fn).float()``.
    """
    u = bits.to(torch.int32)
    sign = (u >> 7) << 31
    e = (u >> 3) & 0xF
    m = u & 0x7
    normal = sign | ((e + 120) << 23) | (m << 20)  # rebias 7 → 127
    sub = (m.to(torch.float32) * 2.0**-9).view(torch.int32) | sign  # exact: m < 8
    out = torch.where(e == 0, sub, normal)
    out = torch.where((u & 0x7F) == 0x7F, sign | 0x7FC00000, out)
    return out.view(torch.float32)


def quantize_keys(k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token FP8 quantisation: ``(k_fp8, scale)`` with ``k ≈ scale[..., None] * k_fp8``.

    ``scale = amax(|k|, -1) / 448`` (1 where a token is all zero), so every token uses the full e4m3 range.
    """
    k = k.float()
    amax = k.abs().amax(dim=-1)
    scale = torch.where(amax > 0, amax / FP8_MAX, torch.ones_like(amax))
    return (k / scale[..., None]).to(FP8_DTYPE), scale


def cache_block_bytes(block_kv: int, head_dim: int) -> int:
    return block_kv * (head_dim + 4)


def split_cache(kv_cache: torch.Tensor, head_dim: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Views ``(keys uint8 [num_blocks, block_kv, D], scales fp32 [num_blocks, block_kv])`` of a contiguous cache."""
    nb, bkv, _, dp4 = kv_cache.shape
    d = dp4 - 4 if head_dim is None else head_dim
    flat = kv_cache.view(nb, bkv * dp4)
    keys = flat[:, : bkv * d].view(nb, bkv, d)
    scales = flat[:, bkv * d :].view(torch.float32)
    return keys, scales


def build_paged_cache(
    k_fp8: torch.Tensor,
    scales: torch.Tensor,
    seq_lens,
    block_kv: int,
    *,
    num_blocks: int | None = None,
    max_blocks: int | None = None,
    generator: torch.Generator | None = None,
    pad_block: int = 0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scatter dense per-sequence keys into a paged cache at random block positions.

    Args:
        k_fp8: float8_e4m3fn ``[B, T, D]`` dense keys (token ``p`` of sequence ``b`` is ``k_fp8[b, p]``).
        scales: float32 ``[B, T]`` per-token scales.
        seq_lens: ints (list or 1-D tensor) ``[B]``, tokens of each sequence to place (``<= T``).
        block_kv: tokens per cache block.
        num_blocks: cache blocks (default: exactly the blocks needed, plus 3 spare ones).
        max_blocks: block-table width (default ``cdiv(T, block_kv)``).
        generator: CPU generator for the placement permutation.
        pad_block: block id written into unused block-table entries (never read by the producer).

    Returns:
        ``(kv_cache uint8 [num_blocks, block_kv, 1, D + 4], block_table int32 [B, max_blocks])`` on
        ``k_fp8``'s device.  Unused cache blocks are filled with random bytes (never read).
    """
    check_fp8(k_fp8, "k_fp8")
    B, T, D = k_fp8.shape
    lens = [int(x) for x in (seq_lens.tolist() if isinstance(seq_lens, torch.Tensor) else seq_lens)]
    if len(lens) != B or any(not 0 <= x <= T for x in lens):
        raise ValueError(f"seq_lens must be {B} ints in [0, {T}], got {lens}")
    need = [math.ceil(x / block_kv) for x in lens]
    max_blocks = max_blocks if max_blocks is not None else max(1, math.ceil(T / block_kv))
    if max(need, default=0) > max_blocks:
        raise ValueError(f"max_blocks={max_blocks} is smaller than the {max(need)} blocks a sequence needs")
    total = sum(need)
    num_blocks = num_blocks if num_blocks is not None else total + 3
    if num_blocks < total:
        raise ValueError(f"num_blocks={num_blocks} < {total} blocks needed")
    dev = k_fp8.device
    perm = torch.randperm(num_blocks, generator=generator)
    cache = torch.randint(0, 256, (num_blocks, block_kv, 1, D + 4), dtype=torch.uint8, generator=generator)
    keys, sc = split_cache(cache, D)
    sc.fill_(float("nan"))  # unused slots: a NaN scale would poison any logit that read it
    table = torch.full((B, max_blocks), pad_block, dtype=torch.int32)
    kb = k_fp8.cpu().view(torch.uint8)
    s_cpu = scales.cpu().float()
    used = 0
    for b in range(B):
        for j in range(need[b]):
            blk = int(perm[used])
            used += 1
            table[b, j] = blk
            lo, hi = j * block_kv, min((j + 1) * block_kv, lens[b])
            keys[blk, : hi - lo] = kb[b, lo:hi]
            sc[blk, : hi - lo] = s_cpu[b, lo:hi]
    return cache.to(dev), table.to(dev)


def gather_dense_keys(kv_cache: torch.Tensor, block_table: torch.Tensor, head_dim: int | None = None):
    """Inverse of :func:`build_paged_cache`: ``(keys uint8 [B, max_blocks*block_kv, D], scales [B, ...])``.

    Every block-table entry is gathered (entries past a sequence's end give whatever that block holds).
    """
    keys, sc = split_cache(kv_cache, head_dim)
    bt = block_table.long()
    B, mb = bt.shape
    k = keys[bt].reshape(B, mb * keys.shape[1], keys.shape[2])
    s = sc[bt].reshape(B, mb * keys.shape[1])
    return k, s


def context_lens_2d(context_lens: torch.Tensor, next_n: int) -> torch.Tensor:
    """The ``(B, next_n)`` layout describing the same bounds as the ``(B,)`` one: ``ctx - next_n + n + 1``."""
    n = torch.arange(next_n, device=context_lens.device, dtype=context_lens.dtype)
    return (context_lens[:, None] - next_n + n[None, :] + 1).clamp(min=0).contiguous()


def random_decode_problem(
    batch: int,
    next_n: int,
    context_lens,
    *,
    num_heads: int = 64,
    head_dim: int = 128,
    block_kv: int = 64,
    max_model_len: int = 262144,
    layout: str = "1d",
    device="cpu",
    seed: int = 0,
    spare_blocks: int = 7,
    table_width: int | None = None,
) -> dict:
    """A random decode-step input set, generated on ``device`` (memory ~ the cache itself; chunked).

    Args:
        batch, next_n: ``B`` sequences, ``next_n`` query rows each (``rows = B * next_n``).
        context_lens: an int (every sequence) or ``B`` ints: tokens in each sequence's cache.
        num_heads, head_dim, block_kv: ``H``, ``D`` and tokens per cache block.
        max_model_len: logits width.
        layout: ``"1d"`` → ``context_lens`` int32 ``[B]``; ``"2d"`` → int32 ``[B, next_n]`` per-row ends
            (``ctx - next_n + n + 1``), the same bounds.
        table_width: block-table columns (default: enough for the longest sequence).
        spare_blocks: extra cache blocks that no sequence owns (random placement has room to scatter).

    Returns:
        dict with ``q_fp8`` e4m3fn ``[B, next_n, H, D]``, ``kv_cache`` uint8 ``[num_blocks, block_kv, 1, D+4]``,
        ``weights`` fp32 ``[B*next_n, H]``, ``context_lens``, ``block_table`` int32 ``[B, table_width]``,
        ``max_model_len``, ``seq_lens`` (a host list).  Cache blocks are placed by a random permutation;
        keys are N(0,1) quantised to e4m3fn, scales in [0.5, 1.5) / 448 * 3 (positive).
    """
    if layout not in ("1d", "2d"):
        raise ValueError(f"layout must be '1d' or '2d', got {layout!r}")
    device = torch.device(device)
    lens = [int(context_lens)] * batch if isinstance(context_lens, int) else [int(x) for x in context_lens]
    if len(lens) != batch:
        raise ValueError(f"context_lens must have {batch} entries, got {len(lens)}")
    gen = torch.Generator(device=device).manual_seed(seed)
    cpu_gen = torch.Generator().manual_seed(seed)
    need = [math.ceil(x / block_kv) for x in lens]
    width = table_width if table_width is not None else max(1, max(need))
    num_blocks = sum(need) + spare_blocks
    D = head_dim
    cache = torch.empty((num_blocks, block_kv, 1, D + 4), dtype=torch.uint8, device=device)
    keys, sc = split_cache(cache, D)
    step = max(1, (1 << 24) // (block_kv * D))  # ~64 MB of fp32 temporaries per chunk
    for lo in range(0, num_blocks, step):
        hi = min(num_blocks, lo + step)
        x = torch.randn((hi - lo, block_kv, D), generator=gen, device=device)
        keys[lo:hi] = x.to(FP8_DTYPE).view(torch.uint8)
        sc[lo:hi] = (torch.rand((hi - lo, block_kv), generator=gen, device=device) + 0.5) * (3.0 / FP8_MAX)
    perm = torch.randperm(num_blocks, generator=cpu_gen)
    table = torch.zeros((batch, width), dtype=torch.int32)
    used = 0
    for b in range(batch):
        table[b, : need[b]] = perm[used : used + need[b]].to(torch.int32)
        used += need[b]
    q = torch.randn((batch, next_n, num_heads, D), generator=gen, device=device).to(FP8_DTYPE)
    w = torch.randn((batch * next_n, num_heads), generator=gen, device=device) * num_heads**-0.5
    ctx = torch.tensor(lens, dtype=torch.int32, device=device)
    if layout == "2d":
        ctx = context_lens_2d(ctx, next_n)
    return {
        "q_fp8": q,
        "kv_cache": cache,
        "weights": w,
        "context_lens": ctx,
        "block_table": table.to(device),
        "max_model_len": max_model_len,
        "seq_lens": lens,
    }
