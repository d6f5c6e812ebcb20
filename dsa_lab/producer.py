"""The producer half of the decode indexer: paged FP8 MQA logits, causal bounds and the bounded sanitize (the
decode step staged for timing: :class:`dsa_lab.bench.step.DecodeStep`).

Causal bounds (docs/design.md §2).  Row ``r = b * next_n + n`` may read logits columns ``< end(b, n)``:

* ``context_lens`` of shape ``(B,)``: ``end = ctx[b] - next_n + n + 1`` (clamped at 0);
* ``context_lens`` of shape ``(B, next_n)``: ``end = ctx[b, n]`` as given (vLLM's precomputed layout;
  its last column is the sequence length).

The producer writes exactly the columns ``< min(end, max_model_len)`` of each row and nothing at or past
them; the consumer (:func:`dsa_lab.select_candidate_blocks` with ``row_ends`` from
:func:`decode_row_ends`) reads exactly those, so the ``-inf`` prefill of the tail is unnecessary.

Numerics.  q and keys are e4m3fn; every product ``q_hd * k_d`` is exact in fp32 and both arms accumulate in fp32
(the fp8 MMA path in the tensor cores, whose accumulator keeps fewer mantissa bits than IEEE fp32).  Errors are
bounded against the *magnitude* ``M(r, p) = scale(p) * sum_h |w_h| * sum_d |q_hd k_d|`` rather than ``|logit|``
(the head sum may cancel to ~0): ``|triton - reference| <= tol * M`` with ``tol = 1e-5`` on the fp32 upcast path
and ``2**-8`` on the fp8 MMA path, a worst-case allowance for a truncating ~13-14-bit accumulator over 32-product
k-steps (:func:`dsa_lab.bench.verify.logits_error`).

FP8 formats: q and keys must be OCP ``float8_e4m3fn``; ``e4m3fnuz`` (gfx942's native format) is rejected with a
``TypeError``.  The upcast path (bytes → fp32 by integer ops, IEEE dot) is format-exact on any device; the fp8 MMA
path runs where :func:`dsa_lab.paged.fp8_dot_supported` says (where each was verified: ``docs/design.md``).
"""
from __future__ import annotations

import torch

from . import _checks, _impl
from .paged import FP8_DTYPE, check_fp8, split_cache

__all__ = [
    "decode_row_ends",
    "paged_mqa_logits",
    "paged_mqa_logits_torch",
    "sanitize_decode_logits",
    "sanitize_decode_logits_full",
    "window_blocks",
]

PRODUCER_IMPLS = ("reference", "torch", "triton")


# ----------------------------------------------------------------------------------------------- bounds
def _check_context_lens(context_lens, next_n: int, batch: int | None = None):
    _checks.tensor(context_lens, "context_lens", dtypes=_checks.INT_DTYPES)
    if context_lens.dim() == 1:
        pass
    elif context_lens.dim() == 2:
        if context_lens.shape[1] != next_n:
            raise ValueError(
                f"context_lens of shape (B, next_n) must have next_n={next_n} columns, got shape "
                f"{tuple(context_lens.shape)}"
            )
    else:
        raise ValueError(f"context_lens must have shape (B,) or (B, next_n), got {tuple(context_lens.shape)}")
    if batch is not None and context_lens.shape[0] != batch:
        raise ValueError(f"context_lens must have B={batch} rows (q_fp8.shape[0]), got {context_lens.shape[0]}")
    if context_lens.numel() and not _checks.capturing():
        lo = int(context_lens.min())
        if lo < 0:
            raise ValueError(f"context_lens must be >= 0, got min {lo}")
    return context_lens


def decode_row_ends(context_lens, next_n):
    """Per-row causal ends of a decode step, int32 ``[B * next_n]`` (row ``r = b * next_n + n``).

    ``context_lens`` ``(B,)`` → ``max(ctx[b] - next_n + n + 1, 0)``; ``(B, next_n)`` → ``ctx[b, n]``
    as given.  Device-side (graph-capturable); value checks are skipped while a graph is captured.
    """
    next_n = _checks.positive_int(next_n, "next_n")
    _check_context_lens(context_lens, next_n)
    return _row_ends(context_lens, next_n)


def _row_ends(context_lens, next_n):
    """:func:`decode_row_ends` of checked inputs (no host read)."""
    if context_lens.dim() == 2:
        return context_lens.reshape(-1).to(torch.int32)
    n = torch.arange(next_n, device=context_lens.device, dtype=torch.int64)
    ends = context_lens.to(torch.int64)[:, None] - next_n + n[None, :] + 1
    return ends.clamp(min=0).reshape(-1).to(torch.int32)


# ---------------------------------------------------------------------------------------------- checks
def _check_producer_args(q_fp8, kv_cache, weights, context_lens, block_table, max_model_len, out):
    check_fp8(q_fp8, "q_fp8")
    if q_fp8.dim() != 4:
        raise ValueError(f"q_fp8 must be 4-D [B, next_n, H, D], got shape {tuple(q_fp8.shape)}")
    B, next_n, H, D = q_fp8.shape
    if q_fp8.stride(3) != 1 and D > 1:
        raise ValueError("q_fp8 must be contiguous along D (stride(3) == 1)")
    dev = q_fp8.device
    if isinstance(kv_cache, torch.Tensor) and kv_cache.dtype in (FP8_DTYPE,) + tuple(
        getattr(torch, n) for n in ("float8_e4m3fnuz",) if hasattr(torch, n)
    ):
        raise TypeError("kv_cache must be the uint8 byte container [num_blocks, block_kv, 1, D + 4], not an fp8 view")
    _checks.tensor(kv_cache, "kv_cache", dtypes=(torch.uint8,), ndim=4, device=dev)
    nb, block_kv, one, dp4 = kv_cache.shape
    if one != 1 or dp4 != D + 4:
        raise ValueError(
            f"kv_cache must have shape [num_blocks, block_kv, 1, D + 4] = [*, *, 1, {D + 4}] for D={D}, "
            f"got {tuple(kv_cache.shape)}"
        )
    if not kv_cache.is_contiguous():
        raise ValueError("kv_cache must be contiguous")
    _checks.tensor(weights, "weights", dtypes=(torch.float32,), ndim=2, device=dev)
    if tuple(weights.shape) != (B * next_n, H):
        raise ValueError(f"weights must have shape [B*next_n, H] = {(B * next_n, H)}, got {tuple(weights.shape)}")
    if weights.stride(1) != 1 and H > 1:
        raise ValueError("weights must be contiguous along H (stride(1) == 1)")
    _checks.tensor(context_lens, "context_lens", dtypes=_checks.INT_DTYPES, device=dev)
    _check_context_lens(context_lens, next_n, B)
    _checks.tensor(block_table, "block_table", dtypes=_checks.INT_DTYPES, ndim=2, device=dev)
    if block_table.shape[0] != B:
        raise ValueError(f"block_table must have B={B} rows, got shape {tuple(block_table.shape)}")
    if block_table.shape[1] > 1 and block_table.stride(1) != 1:
        raise ValueError("block_table must be contiguous along its last dim")
    width = _checks.positive_int(max_model_len, "max_model_len")
    if width > _checks.MAX_WIDTH:
        raise ValueError(f"max_model_len {width} exceeds {_checks.MAX_WIDTH}")
    _checks.out_tensor(out, (B * next_n, width), torch.float32, dev)
    if context_lens.numel() and not _checks.capturing():
        ends = decode_row_ends(context_lens, next_n).view(B, next_n).to(torch.int64)
        seq_end = ends.amax(dim=1)
        top = int(seq_end.max())
        if top > width:
            raise ValueError(f"context_lens reach {top} tokens, past max_model_len={width}")
        cap = block_table.shape[1] * block_kv
        if top > cap:
            raise ValueError(
                f"context_lens reach {top} tokens but block_table has {block_table.shape[1]} blocks of "
                f"{block_kv} tokens ({cap})"
            )
        need = (seq_end + block_kv - 1) // block_kv  # blocks each sequence reads
        used = torch.arange(block_table.shape[1], device=dev)[None, :] < need[:, None]
        if bool(used.any()):
            ids = block_table[used]
            lo, hi = int(ids.min()), int(ids.max())
            if lo < 0 or hi >= nb:
                raise ValueError(f"block_table entries in use must lie in [0, {nb}), got range [{lo}, {hi}]")
    return B, next_n, H, D, block_kv, width


def _check_triton_shapes(H, D, block_kv):
    def pow2(x):
        return x > 0 and x & (x - 1) == 0

    if not (pow2(H) and 16 <= H <= 256):
        raise ValueError(f"impl='triton' needs a power-of-two head count H in [16, 256], got {H}")
    if not (pow2(D) and 32 <= D <= 512):
        raise ValueError(f"impl='triton' needs a power-of-two head_dim D in [32, 512], got {D}")
    if not pow2(block_kv):
        raise ValueError(f"impl='triton' needs a power-of-two block_kv, got {block_kv}")


# ------------------------------------------------------------------------------------------- reference
def paged_mqa_logits_torch(q_fp8, kv_cache, weights, context_lens, block_table, out, *, max_elems=1 << 26):
    """Torch reference: dequantise to fp32 and compute, vectorised over the batch, chunked over tokens.

    Token chunks span the block-table width (shape-derived: no host reads, graph-capturable); each
    chunk's temporaries stay under ``max_elems`` fp32 elements.  Writes ``out`` only where
    ``column < end`` (a select against ``out``'s own bits elsewhere, so the tail is unchanged bit for bit).
    """
    B, N, H, D = q_fp8.shape
    width = out.shape[1]
    block_kv = kv_cache.shape[1]
    keys_u8, scales = split_cache(kv_cache, D)
    ends = decode_row_ends(context_lens, N).to(torch.int64).clamp(max=width).view(B, N)
    seq_end = ends.amax(dim=1)
    qf = q_fp8.float().reshape(B, N * H, D)
    wv = weights.view(B, N, H)
    T = min(block_table.shape[1] * block_kv, width)
    chunk = max(1, max_elems // max(1, B * max(N * H, D)))
    out3 = out.view(B, N, width)
    for t0 in range(0, T, chunk):
        t1 = min(T, t0 + chunk)
        tok = torch.arange(t0, t1, device=out.device)
        valid = tok[None, :] < seq_end[:, None]  # [B, c]
        pages = torch.where(valid, block_table[:, tok // block_kv].to(torch.int64), 0)
        slots = (tok % block_kv)[None, :].expand_as(pages)
        k = keys_u8[pages, slots].view(FP8_DTYPE).float()  # [B, c, D]
        s = scales[pages, slots]  # [B, c]
        dots = torch.bmm(qf, k.transpose(1, 2)).view(B, N, H, t1 - t0)
        lg = (dots.clamp_min(0) * wv[..., None]).sum(dim=2) * s[:, None, :]  # [B, N, c]
        o = out3[:, :, t0:t1]
        o.copy_(torch.where(tok[None, None, :] < ends[:, :, None], lg, o))
    return out


# ---------------------------------------------------------------------------------------------- public
def paged_mqa_logits(q_fp8, kv_cache, weights, context_lens, block_table, max_model_len, *, impl="auto", out=None,
                     sanitize=False, block_scores_out=None, block_size=8):
    """Paged FP8 MQA logits of one decode step, written only inside each row's causal window; optionally
    sanitized, and with the row's block scores, in the same pass.

    ``logits[b*next_n + n, p] = scale(p) * sum_h weights[b*next_n + n, h] * relu(q[b, n, h, :] . k(p))``
    for ``p < end(b, n)`` (see :func:`decode_row_ends`); columns at or past the end are not written.

    Args:
        q_fp8: float8_e4m3fn ``[B, next_n, H, D]``, contiguous along ``D``.  ``e4m3fnuz`` → ``TypeError``.
        kv_cache: uint8 ``[num_blocks, block_kv, 1, D + 4]``, contiguous (layout in :mod:`dsa_lab.paged`).
        weights: float32 ``[B * next_n, H]``.
        context_lens: int32/int64 ``(B,)`` or ``(B, next_n)`` (module docstring); read on the device.
        block_table: int32/int64 ``[B, max_blocks]``; entry ``j`` of sequence ``b`` is the cache block of
            tokens ``j*block_kv ..``; only entries below ``cdiv(seq_end, block_kv)`` are read.
        max_model_len: logits width (int).
        impl: ``"reference"``/``"torch"`` (the same torch code), ``"triton"`` or ``"auto"``.  The Triton
            arm needs power-of-two ``H`` in [16, 256], ``D`` in [32, 512] and ``block_kv``.
        out: optional float32 ``[B * next_n, max_model_len]`` contiguous workspace.
        sanitize: store ``nan_to_num(nan=-inf)`` of each logit (bit for bit :func:`sanitize_decode_logits` of
            the plain result).
        block_scores_out: optional float32 ``[B * next_n, cdiv(max_model_len, block_size)]`` (unit stride along
            the blocks): the row's block scores (:func:`dsa_lab.block_scores` of the stored logits with
            ``row_ends = decode_row_ends(context_lens, next_n)``, bit for bit) on every block that starts below
            the row's end; blocks at or past it are not written (a select bounded by the same ends never reads
            them).  The Triton arm forms them from the tile in registers when ``block_size`` is a power of two of
            at most the kernel's tile (8 is), else with the block-scores launch after the logits.
        block_size: columns per block, ``>= 1``.

    Returns:
        ``out`` (or a new ``torch.empty`` tensor, whose columns past each end stay uninitialised).

    Raises ``TypeError``/``ValueError`` naming the argument.  Outside a CUDA-graph capture it also checks
    values: ends ``<= max_model_len`` and ``<= max_blocks * block_kv``, block ids in use within the cache.
    Inside a capture the kernel clamps ends to both instead.
    """
    B, next_n, H, D, block_kv, width = _check_producer_args(
        q_fp8, kv_cache, weights, context_lens, block_table, max_model_len, out
    )
    if not isinstance(sanitize, bool):
        raise TypeError(f"sanitize must be a bool, got {type(sanitize).__name__}")
    bs = _checks.positive_int(block_size, "block_size")
    if block_scores_out is not None:
        _checks.tensor(block_scores_out, "block_scores_out", dtypes=(torch.float32,), device=q_fp8.device)
        _checks.row_strided(block_scores_out, "block_scores_out")
        want = (B * next_n, -(-width // bs))
        if tuple(block_scores_out.shape) != want:
            raise ValueError(f"block_scores_out must have shape [B*next_n, cdiv(max_model_len, block_size)] = {want}, "
                             f"got {tuple(block_scores_out.shape)}")
    arm = _impl.resolve(impl, q_fp8.device, PRODUCER_IMPLS)
    if out is None:
        out = torch.empty((B * next_n, width), dtype=torch.float32, device=q_fp8.device)
    if B == 0:
        return out
    if arm == "triton":
        _check_triton_shapes(H, D, block_kv)
        from .launch.producer import paged_mqa_logits as paged_mqa_logits_triton

        ends = _row_ends(context_lens, next_n) if block_scores_out is not None else None
        return paged_mqa_logits_triton(q_fp8, kv_cache, weights, context_lens, block_table, out, sanitize=sanitize,
                                       scores_out=block_scores_out, block_size=bs, row_ends=ends)
    paged_mqa_logits_torch(q_fp8, kv_cache, weights, context_lens, block_table, out)
    if sanitize or block_scores_out is not None:
        ends = _row_ends(context_lens, next_n)
        if sanitize:
            sanitize_decode_logits(out, ends, impl="torch")
        if block_scores_out is not None:
            from .scores import block_scores_torch

            sc = block_scores_torch(out, ends, None, bs)
            block_scores_out.copy_(torch.where(window_blocks(ends, sc.shape[1], bs, width), sc, block_scores_out))
    return out


def window_blocks(row_ends, nblocks: int, block_size: int, width: int):
    """bool ``[rows, nblocks]``: the blocks that start below each row's end (clamped to ``width``): those
    ``paged_mqa_logits(block_scores_out=...)`` writes."""
    j = torch.arange(nblocks, device=row_ends.device)
    return j[None, :] * block_size < row_ends.to(torch.int64).clamp(max=width)[:, None]


def _check_sanitize(logits, row_ends):
    _checks.tensor(logits, "logits", dtypes=(torch.float32,), ndim=2)
    _checks.row_strided(logits, "logits")
    _checks.bounds(row_ends, "row_ends", logits.shape[0], logits.device)


def sanitize_decode_logits(logits, row_ends, *, impl="auto"):
    """In place: ``nan_to_num(nan=-inf)`` on columns ``[0, min(end, width))`` of each row only.

    Bit-identical to ``torch.nan_to_num(x, nan=-inf)`` inside the window — NaN → ``-inf``, and, as torch
    does, ``+inf`` → ``FLT_MAX`` and ``-inf`` → ``-FLT_MAX`` — and every column at or past a row's end
    untouched bit for bit.  ``row_ends``: int ``[rows]`` (from :func:`decode_row_ends`).

    The Triton arm (GPU / interpreter) touches only the window: its cost follows the context, not the
    padded width.  The torch arm (CPU without the interpreter) computes the same result over the full
    width (a masked select), for correctness only.  Returns None.
    """
    _check_sanitize(logits, row_ends)
    arm = _impl.resolve(impl, logits.device, PRODUCER_IMPLS)
    if arm == "triton":
        from .launch.producer import sanitize

        sanitize(logits, row_ends)
        return None
    col = torch.arange(logits.shape[1], device=logits.device)
    win = col[None, :] < row_ends.to(torch.int64)[:, None]
    logits.copy_(torch.where(win, logits.nan_to_num(nan=float("-inf")), logits))
    return None


def sanitize_decode_logits_full(logits):
    """The comparison arm: ``logits.nan_to_num_(nan=-inf)`` over the whole padded width, in place."""
    _checks.tensor(logits, "logits", dtypes=(torch.float32,), ndim=2)
    logits.nan_to_num_(nan=float("-inf"))
    return None
