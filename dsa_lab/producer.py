"""The producer half of the decode indexer: paged FP8 MQA logits, causal bounds, bounded sanitize,
and the whole decode step (logits → block scores → candidate select → flags) staged for timing.

Causal bounds (docs/design.md §2, second seed).  Row ``r = b * next_n + n`` may read logits columns ``< end(b, n)``:

* ``context_lens`` of shape ``(B,)``: ``end = ctx[b] - next_n + n + 1`` (clamped at 0);
* ``context_lens`` of shape ``(B, next_n)``: ``end = ctx[b, n]`` as given (vLLM's precomputed layout;
  its last column is the sequence length).  The seed kernel reshaped this to ``(B,)`` and raised for
  ``next_n > 1``; here both layouts are first-class.

The producer writes exactly the columns ``< min(end, max_model_len)`` of each row and nothing at or past
them; the consumer (:func:`dsa_lab.select_candidate_blocks` with ``row_ends`` from
:func:`decode_row_ends`) reads exactly those, so the ``-inf`` prefill of the tail is unnecessary.

Numerics.  q and keys are e4m3fn; every product ``q_hd * k_d`` is exact in fp32 and both arms accumulate
in fp32 (the Triton fp8 path in the tensor cores: on Hopper the fp8 MMA accumulator keeps fewer mantissa
bits than IEEE fp32, DeepSeek-V3 §3.3.2 reports ~14).  Errors are bounded against the *magnitude*
``M(r, p) = scale(p) * sum_h |w_h| * sum_d |q_hd k_d|`` rather than ``|logit|`` (the head sum has both
signs and may cancel to ~0): ``|triton - reference| <= tol * M`` with ``tol = 1e-5`` for the fp32 upcast
path (interpreter; observed ~1e-8) and ``2**-8`` for the fp8 MMA path (H200): a worst-case allowance for a
truncating ~13-14-bit accumulator over 32-product k-steps (32 * 2**-13); the typical error is expected near
2**-12 and the measured maximum is recorded by ``scripts/gpu_producer_check.py`` (``bounded_err``).
:func:`logits_error` computes both this bounded error and a plain relative error.

FP8 formats and where each path was verified: q and keys must be OCP ``float8_e4m3fn`` (H200, gfx950);
``e4m3fnuz`` (gfx942) is rejected with a ``TypeError``.  Upcast path (bytes → fp32 by integer ops, IEEE
dot): verified on the CPU under the Triton interpreter (tests/test_producer.py, tests/test_paged.py; the
decode exhaustively over all 256 codes).  fp8 MMA path: compiled to sm_90 PTX (wgmma, pipelined cp.async)
offline; run-time verification on the H200 is ``scripts/gpu_producer_check.py`` and the ``gpu``-marked
tests.  ROCm: unverified (no MI300/MI355X here); it takes the upcast path, which is format-exact for
e4m3fn on any device.
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
    "producer_bytes",
    "producer_flops",
    "logits_error",
    "DecodeStep",
    "decode_step",
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


def logits_error(q_fp8, kv_cache, weights, context_lens, block_table, got, ref):
    """Max of ``|got - ref| / M`` over every in-window entry (``M`` in the module docstring), and the
    max plain relative error ``|got - ref| / |ref|`` over entries with ``|ref| >= 1e-2 * M``.

    Returns ``(bounded_err, rel_err)`` as floats (0.0 when nothing is in a window).  Host-side, for tests.
    """
    B, N, H, D = q_fp8.shape
    width = ref.shape[1]
    mag = torch.zeros_like(ref)
    absw = weights.abs().contiguous()
    # M is the reference computation on |q|, |k|, |w| (scales are positive)
    paged_mqa_logits_torch(
        _abs_fp8(q_fp8), _abs_cache(kv_cache, D), absw, context_lens, block_table, mag
    )
    ends = decode_row_ends(context_lens, N).to(torch.int64).clamp(max=width)
    live = torch.arange(width, device=ref.device)[None, :] < ends[:, None]
    if not bool(live.any()):
        return 0.0, 0.0
    diff = (got - ref).abs()[live].double()
    m = mag[live].double()
    bounded = float((diff / m.clamp_min(1e-30)).max())
    big = ref[live].abs().double() >= 1e-2 * m
    rel = float((diff[big] / ref[live].abs().double()[big]).max()) if bool(big.any()) else 0.0
    return bounded, rel


def _abs_fp8(x):
    return (x.view(torch.uint8) & 0x7F).view(FP8_DTYPE)


def _abs_cache(kv_cache, D):
    c = kv_cache.clone()
    keys, _ = split_cache(c, D)
    keys &= 0x7F  # clear the sign bit of every key byte; scales are positive already
    return c


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
        from .kernels.producer import paged_mqa_logits_triton

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
        from .kernels.producer import sanitize_triton

        sanitize_triton(logits, row_ends)
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


# ------------------------------------------------------------------------------------------ bytes model
def producer_bytes(context_lens, next_n, num_heads, head_dim=128, *, block_kv=64, max_model_len=None) -> dict:
    """Bytes one :func:`paged_mqa_logits` call must move (the roofline denominator), as host ints.

    Args:
        context_lens: an int per sequence (list, 1-D or 2-D tensor in either layout; see
            :func:`decode_row_ends`) — host-known sizes, as a benchmark has them.
        next_n, num_heads, head_dim, block_kv: the problem's ``next_n``, ``H``, ``D``, tokens per block.
        max_model_len: clamp the ends to the width when given.

    Returns:
        dict of ints: ``kv`` (keys + scales, once per sequence up to its largest end: ``(D + 4)`` bytes a
        token), ``q`` (fp8), ``weights`` (fp32), ``block_table`` (int32 entries read), ``read`` (their sum),
        ``out`` (the written window, 4 bytes a column) and ``total = read + out``.
    """
    ctx = context_lens if isinstance(context_lens, torch.Tensor) else torch.tensor(list(context_lens))
    ends = decode_row_ends(ctx.cpu().to(torch.int64), next_n).to(torch.int64)
    if max_model_len is not None:
        ends = ends.clamp(max=int(max_model_len))
    B = ends.numel() // next_n
    seq_end = ends.view(B, next_n).amax(dim=1)
    kv = int(seq_end.sum()) * (head_dim + 4)
    table = int(((seq_end + block_kv - 1) // block_kv).sum()) * 4
    q = B * next_n * num_heads * head_dim
    w = B * next_n * num_heads * 4
    read = kv + q + w + table
    out = int(ends.sum()) * 4
    return {"kv": kv, "q": q, "weights": w, "block_table": table, "read": read, "out": out, "total": read + out}


def producer_flops(context_lens, next_n, num_heads, head_dim=128, *, max_model_len=None) -> int:
    """The fp8 MMA work of one :func:`paged_mqa_logits` call on the Triton path (the roofline's compute term):
    ``2 * next_n * H * D`` flops for every key of a sequence up to its largest row end (the kernel multiplies each
    loaded key tile by all of the sequence's rows; a row's columns past its own end are computed, never stored)."""
    ctx = context_lens if isinstance(context_lens, torch.Tensor) else torch.tensor(list(context_lens))
    ends = decode_row_ends(ctx.cpu().to(torch.int64), next_n).to(torch.int64)
    if max_model_len is not None:
        ends = ends.clamp(max=int(max_model_len))
    B = ends.numel() // next_n
    return 2 * next_n * num_heads * head_dim * int(ends.view(B, next_n).amax(dim=1).sum())


# ------------------------------------------------------------------------------------------ decode step
class DecodeStep:
    """One decode indexer step on fixed inputs, split into stages that can be timed one by one.

    Two compositions (``compose``):

    * ``"fused"`` (default): ``row_ends`` → ``logits`` → ``candidates``.  The producer stores sanitized logits and
      each row's block scores over its window, and zeroes the flags (:func:`paged_mqa_logits` with ``sanitize`` and
      ``block_scores_out``); ``candidates`` selects from those scores and sets the flags.  Nothing reads the logits
      back within the step (the token-level top-k after the candidate mask does, later).
    * ``"staged"`` (the comparison arm): ``row_ends`` → ``logits`` → ``sanitize`` → ``candidates`` → ``flags``, where
      ``candidates`` is :func:`dsa_lab.select_candidate_blocks` (block scores from the logits, then the select).  For a
      finer breakdown ``candidates`` splits into ``block_scores`` + ``topk_select`` (the same result).

    Each stage is a no-argument callable (``step.stages()``) reading the previous stage's output from the object and
    writing its own into preallocated attributes where the API has an ``out=``: ``row_ends`` int32 [rows],
    ``logits`` fp32 [rows, max_model_len] (tail never written), ``scores`` fp32 [rows, nblocks], ``topk`` /
    ``candidates`` int32 [rows, topk_blocks], ``flags`` uint8 [rows, nblocks + 1].  Call :meth:`run` once (eagerly)
    before timing a single stage so its inputs exist; stages replayed in a CUDA graph recompute their outputs but
    keep the eager run's tensors (``row_ends``, ``live_blocks``, and in the staged composition ``scores`` and
    ``flags``, are not rebound while a graph is captured).

    Args:
        q_fp8 .. max_model_len: as :func:`paged_mqa_logits`.
        topk_blocks, block_size: candidate selection (the seed sweep: 64 and 8).
        impl: arm of the logits stage (``"auto"``/``"torch"``/``"triton"``); ``select_impl`` (default
            ``impl``) the arm of the scores / select / flags stages.
        compose: ``"fused"`` or ``"staged"`` (above).
        sanitize: staged only: ``"bounded"`` (default, :func:`sanitize_decode_logits`), ``"full"``
            (:func:`sanitize_decode_logits_full`, the comparison arm) or ``None`` (skip the stage).  The fused
            composition sanitizes in the producer: only ``"bounded"`` is accepted there.
    """

    PIPELINE = ("row_ends", "logits", "sanitize", "candidates", "flags")
    FUSED = ("row_ends", "logits", "candidates")
    SPLIT = ("block_scores", "topk_select")

    def __init__(
        self,
        q_fp8,
        kv_cache,
        weights,
        context_lens,
        block_table,
        max_model_len,
        *,
        topk_blocks=64,
        block_size=8,
        impl="auto",
        select_impl=None,
        compose="fused",
        sanitize="bounded",
    ):
        B, next_n, H, D, block_kv, width = _check_producer_args(
            q_fp8, kv_cache, weights, context_lens, block_table, max_model_len, None
        )
        if compose not in ("fused", "staged"):
            raise ValueError(f"compose must be 'fused' or 'staged', got {compose!r}")
        if sanitize not in ("bounded", "full", None):
            raise ValueError(f"sanitize must be 'bounded', 'full' or None, got {sanitize!r}")
        if compose == "fused" and sanitize != "bounded":
            raise ValueError(f"sanitize={sanitize!r} needs compose='staged' (the fused producer sanitizes the window)")
        self.q_fp8, self.kv_cache, self.weights = q_fp8, kv_cache, weights
        self.context_lens, self.block_table = context_lens, block_table
        self.next_n, self.width, self.rows = next_n, width, B * next_n
        self.topk_blocks = _checks.positive_int(topk_blocks, "topk_blocks")
        self.block_size = _checks.positive_int(block_size, "block_size")
        self.impl = impl
        self.select_impl = impl if select_impl is None else select_impl
        self.compose = compose
        self.sanitize_mode = sanitize
        dev = q_fp8.device
        self.nblocks = -(-width // self.block_size)
        self.logits = torch.empty((self.rows, width), dtype=torch.float32, device=dev)
        self.candidates = torch.empty((self.rows, self.topk_blocks), dtype=torch.int32, device=dev)
        self.topk = torch.empty((self.rows, self.topk_blocks), dtype=torch.int32, device=dev)
        self.row_ends = None
        self.live_blocks = None
        self.scores = None
        self.flags = None
        if compose == "fused":  # written in place by the producer and the select: allocated once, graph-safe
            from .dispatch import _scores_buffer  # rows 16 blocks apart: the select's loads stay aligned

            self.scores = _scores_buffer(self.rows, self.nblocks, dev)
            self.flags = torch.empty((self.rows, self.nblocks + 1), dtype=torch.uint8, device=dev)

    # -- stages
    # Stages whose API returns a new tensor keep it only outside a CUDA-graph capture: a tensor allocated
    # during capture lives in that graph's private pool and dies with the graph (a benchmark's graph is
    # dropped after timing), so later stages must keep reading the eager run's tensors.
    def _keep(self, name, value):
        if not _checks.capturing():
            setattr(self, name, value)

    def stage_row_ends(self):
        ends = decode_row_ends(self.context_lens, self.next_n)
        # blocks a row may select: cdiv(min(end, width), block_size) (the newest block is inside it)
        live = (ends.clamp(max=self.width) + self.block_size - 1) // self.block_size
        self._keep("row_ends", ends)
        self._keep("live_blocks", live)

    def stage_logits(self):
        if self.compose == "staged":
            paged_mqa_logits(self.q_fp8, self.kv_cache, self.weights, self.context_lens, self.block_table, self.width,
                             impl=self.impl, out=self.logits)
            return
        args = (self.q_fp8, self.kv_cache, self.weights, self.context_lens, self.block_table)
        if self._triton(self.impl) and self._triton(self.select_impl):
            # the launcher itself: it also zeroes the flags that the Triton select then sets
            from .dispatch import select_sync
            from .kernels.producer import paged_mqa_logits_triton

            # the select's kept buffer first: in a capture its one zeroing then precedes the producer, not the
            # select launched as the producer's programmatic dependent (the select takes the same buffer)
            select_sync(self.rows, self.nblocks, self.topk_blocks, self.logits.device, block_size=self.block_size)
            paged_mqa_logits_triton(*args, self.logits, sanitize=True, scores_out=self.scores,
                                    block_size=self.block_size, flags_out=self.flags, row_ends=self.row_ends)
            return
        paged_mqa_logits(*args, self.width, impl=self.impl, out=self.logits, sanitize=True,
                         block_scores_out=self.scores, block_size=self.block_size)

    def _triton(self, impl):
        return _impl.resolve(impl, self.q_fp8.device, PRODUCER_IMPLS) == "triton"

    def stage_sanitize(self):
        if self.sanitize_mode == "bounded":
            sanitize_decode_logits(self.logits, self.row_ends)
        elif self.sanitize_mode == "full":
            sanitize_decode_logits_full(self.logits)

    def stage_candidates(self):
        from .select import select_candidate_blocks, topk_select

        if self.compose == "fused":
            if self._triton(self.select_impl):
                from .dispatch import select_candidate_blocks_triton

                if not self._triton(self.impl):  # the torch producer did not zero them
                    self.flags.zero_()
                select_candidate_blocks_triton(self.logits, self.row_ends, self.topk_blocks, None, self.block_size, 1,
                                               self.candidates, with_flags=True, flags_out=self.flags,
                                               scores=self.scores)
                return
            from .flags import candidate_flags

            topk_select(self.scores, self.topk_blocks, lengths=self.live_blocks, impl=self.select_impl,
                        out=self.candidates)
            self.flags.copy_(candidate_flags(self.candidates, self.width, block_size=self.block_size,
                                             impl=self._scores_impl()))
            return
        select_candidate_blocks(
            self.logits, self.row_ends, self.topk_blocks, block_size=self.block_size,
            impl=self.select_impl, out=self.candidates,
        )

    def stage_block_scores(self):
        from .scores import block_scores

        self._keep("scores", block_scores(self.logits, self.row_ends, block_size=self.block_size,
                                          impl=self._scores_impl()))

    def stage_topk_select(self):
        from .select import topk_select

        topk_select(self.scores, self.topk_blocks, lengths=self.live_blocks, impl=self.select_impl, out=self.topk)

    def stage_flags(self):
        from .flags import candidate_flags

        self._keep("flags", candidate_flags(self.candidates, self.width, block_size=self.block_size,
                                            impl=self._scores_impl()))

    def _scores_impl(self):
        # scores / flags have no separate before-arm: "reference" and "torch" are the same code
        return self.select_impl

    def stages(self, split: bool = False) -> dict:
        """Ordered ``name → callable``; ``split=True`` replaces ``candidates`` by ``block_scores`` +
        ``topk_select`` (then ``flags`` still reads ``candidates``: run the unsplit pipeline once first)."""
        if self.compose == "fused":
            if split:
                raise ValueError("split=True is the staged composition's breakdown (compose='staged')")
            return {n: getattr(self, f"stage_{n}") for n in self.FUSED}
        names = list(self.PIPELINE)
        if self.sanitize_mode is None:
            names.remove("sanitize")
        if split:
            i = names.index("candidates")
            names[i : i + 1] = list(self.SPLIT)
        return {n: getattr(self, f"stage_{n}") for n in names}

    def run(self) -> "DecodeStep":
        """Run the whole pipeline once (unsplit); returns self with every intermediate filled in."""
        for fn in self.stages().values():
            fn()
        return self


def decode_step(q_fp8, kv_cache, weights, context_lens, block_table, max_model_len, **kw) -> DecodeStep:
    """Build a :class:`DecodeStep` and run it once; the intermediates are its attributes."""
    return DecodeStep(q_fp8, kv_cache, weights, context_lens, block_table, max_model_len, **kw).run()
