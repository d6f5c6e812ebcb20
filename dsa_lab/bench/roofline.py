"""Bytes models of each stage and the roofline placement of a measurement.

:func:`select_bytes` / :func:`full_bytes` / :func:`producer_bytes` model the fewest DRAM bytes each arm of a stage
must move (each input read once, each output written once; multi-pass algorithms move more), and
:func:`producer_flops` the producer's MMA work; :func:`roofline` places a measured time against the measured
ceilings (``dsa_lab.bench.timing.measure_ceilings``): ``floor_us = max(launch floor, bytes / stream bandwidth,
flops / MMA rate)`` and ``roofline_frac = floor_us / median_us`` (1.0 = at the roofline).
"""
from __future__ import annotations

import torch

from ..producer import decode_row_ends

__all__ = ["select_bytes", "full_bytes", "producer_bytes", "producer_flops", "roofline"]

F32 = 4
I32 = 4
I64 = 8


def _topk_out_bytes(rows: int, k: int, n: int) -> int:
    """torch.topk outputs (fp32 values + int64 indices) and the store pass (reads both, writes int32)."""
    kk = min(k, n)
    return rows * kk * (F32 + I64) + rows * kk * (F32 + I64) + rows * k * I32


def select_bytes(arm: str, live_blocks: list[int], nblocks: int, k: int) -> int:
    """Modelled DRAM bytes of the ``select`` stage (block scores → candidate ids) for one call.

    * ``triton``: the live scores of each row read once + the ids written (``rows * k * 4``).
    * ``torch``: ``torch.topk`` reads the whole padded width (``rows * nblocks * 4``), writes
      values + int64 indices, and the store pass reads them and writes int32 ids.
    * ``torch_live``: the same over the host-known live slice ``[:, :max(live)]``.
    Lower bounds: multi-pass algorithms read more; the model counts each input once.
    """
    rows = len(live_blocks)
    live = [min(max(int(x), 0), nblocks) for x in live_blocks]
    if arm == "torch":
        return rows * nblocks * F32 + _topk_out_bytes(rows, k, nblocks)
    if arm == "torch_live":
        n = max(live) if live else 0
        return rows * n * F32 + _topk_out_bytes(rows, k, max(n, 1))
    return sum(live) * F32 + rows * k * I32


def full_bytes(arm: str, row_ends: list[int], width: int, block_size: int, k: int) -> int:
    """Modelled DRAM bytes of the ``full`` stage (logits → scores → ids → flags) for one call.

    Triton arms: each row's live logits read once (``sum(min(end, width)) * 4``); every arm: the
    flags written once (``rows * (nblocks + 1)`` bytes; zeroing and setting are one pass).

    * ``triton_fused``: + ids written (``rows * k * 4``); no scores tensor.
    * ``triton`` (the default path: unfused) and ``triton_unfused``: + the live block scores written and
      read back, + ids.
    * ``torch``: the upstream scores kernel loads the whole padded width (``rows * width * 4``, in place
      of the live logits), writes the padded scores and ``torch.topk`` reads them
      (``2 * rows * nblocks * 4``), + topk outputs and the store pass.
    * ``torch_live``: the same over the host-known live slice ``[:, :max(end)]``.
    """
    rows = len(row_ends)
    nb = -(-width // block_size)
    ends = [min(max(int(e), 0), width) for e in row_ends]
    live_blocks = [-(-e // block_size) for e in ends]
    flags = rows * (nb + 1)
    common = sum(ends) * F32 + flags
    if arm == "torch":
        return rows * width * F32 + flags + 2 * rows * nb * F32 + _topk_out_bytes(rows, k, nb)
    if arm == "torch_live":
        emax = max(ends) if ends else 0
        n = -(-emax // block_size)
        return rows * emax * F32 + flags + 2 * rows * n * F32 + _topk_out_bytes(rows, k, max(n, 1))
    if arm in ("triton", "triton_unfused"):
        return common + 2 * sum(live_blocks) * F32 + rows * k * I32
    return common + rows * k * I32


def roofline(nbytes: int, median_us: float, ceilings: dict, launches: int = 1, flops: float = 0.0) -> dict:
    """``{"gbps", "floor_us", "roofline_frac"}`` of one measurement.

    ``floor_us = max(launch floor, bytes / stream bandwidth, flops / fp8 MMA rate)`` with the launch floor the
    measured time of one empty launch in a graph (``launches=2`` uses the two-launch time) and the MMA term only
    where ``flops`` and ``ceilings["fp8_tflops"]`` are given; ``roofline_frac = floor_us / median_us`` (1.0 = on
    the roofline, 0.1 = 10x above it).
    """
    bw = float(ceilings.get("stream_gbps") or 0.0)
    launch = float(ceilings.get("two_launch_us" if launches >= 2 else "launch_us") or 0.0)
    bw_us = nbytes / (bw * 1e3) if bw > 0 else 0.0
    peak = float(ceilings.get("fp8_tflops") or 0.0)
    mma_us = flops / (peak * 1e6) if flops and peak > 0 else 0.0
    floor = max(launch, bw_us, mma_us)
    gbps = nbytes / (median_us * 1e3) if median_us > 0 else float("nan")
    frac = floor / median_us if median_us > 0 else float("nan")
    return {"gbps": gbps, "floor_us": floor, "roofline_frac": frac}


def producer_bytes(context_lens, next_n, num_heads, head_dim=128, *, block_kv=64, max_model_len=None) -> dict:
    """Bytes one :func:`dsa_lab.paged_mqa_logits` call must move (the roofline denominator), as host ints.

    Args:
        context_lens: an int per sequence (list, 1-D or 2-D tensor in either layout; see
            :func:`dsa_lab.decode_row_ends`) — host-known sizes, as a benchmark has them.
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
    """The fp8 MMA work of one :func:`dsa_lab.paged_mqa_logits` call on the Triton path (the roofline's compute term):
    ``2 * next_n * H * D`` flops for every key of a sequence up to its largest row end (the kernel multiplies each
    loaded key tile by all of the sequence's rows; a row's columns past its own end are computed, never stored)."""
    ctx = context_lens if isinstance(context_lens, torch.Tensor) else torch.tensor(list(context_lens))
    ends = decode_row_ends(ctx.cpu().to(torch.int64), next_n).to(torch.int64)
    if max_model_len is not None:
        ends = ends.clamp(max=int(max_model_len))
    B = ends.numel() // next_n
    return 2 * next_n * num_heads * head_dim * int(ends.view(B, next_n).amax(dim=1).sum())
