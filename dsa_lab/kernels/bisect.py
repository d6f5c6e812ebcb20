"""Top-k by bisecting the k-th key over a register-resident row: the select for ``k > 256`` on rows of at most
:data:`MAX_COLS` columns (every decode row: 32768 blocks at 262144 tokens).

One program per row loads the row's live extent once into registers, as signed ordered words (the contract's
order, NaN on top; :func:`dsa_lab.kernels.common.tl_ordered_hi`).  The k-th largest word ``T`` is found by
bisection on the word's value: each step is a compare and a count over the registers, no memory traffic, and at
most 32 steps (it stops early when a midpoint has exactly ``k`` words at or above it).  Then one streaming pass
(the row was just read, so it comes from L2) writes every column above ``T``, and the first ``need`` columns equal
to it (ties to the smaller column); slots past the count get ``-1``.  A row with at most ``k`` candidates takes
every candidate without a search.

A compare-and-count step costs about 4.4 instructions a word for the bit it resolves, a 256-bin ``tl.histogram``
about ten a bit, and the data never leave the SM; so the cost is one read of the row plus ALU work that does not
depend on the values (the search is bounded by 32 steps whatever the distribution).  The register tile is chosen per row
on the device from its live length (2048, 8192 or 32768 words, one compiled kernel), so short rows do not pay for
the widest tile.  Wider rows take :mod:`.radix`.
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import run
from .common import GDC_OK, fill_tail, row_extent, set_flags, tl_ordered_hi
from .common import NEG_HI as NEG
from .common import tl_cuda as _tl_cuda

MAX_COLS = 32768  # the widest register tile: rows of more live columns take the radix select
EMIT_TILE = 4096
KT = 1024
INF_WORD = tl.constexpr(0x7F800000)  # the ordered word of +inf (NaN's is 0x7FFFFFFF)


@triton.jit
def _search(src_ptr, row_off, L, k, W: tl.constexpr):
    """``(A, T, need)`` of a row of ``L <= W`` live columns: the selection is every word ``>= A`` plus the first
    ``need`` (column order) equal to ``T``.  Exactly ``k`` are selected when the row has more than ``k``
    candidates; else every candidate (``need`` 0)."""
    cols = tl.arange(0, W)
    s = tl.load(src_ptr + row_off + cols, mask=cols < L, other=float("-inf"))
    h = tl_ordered_hi(s)  # masked lanes and -inf: NEG
    cand = h > NEG
    ncand = tl.sum(cand.to(tl.int32))
    # the search keeps count(h >= lo) >= k > count(h >= hi) = c_hi; it brackets the finite words when fewer than
    # k are +inf or NaN (the pinned newest block, NaN scores), else the words from +inf up
    lo = tl.min(tl.where(cand, h, 0x7FFFFFFF)).to(tl.int64)
    hi = tl.max(h).to(tl.int64) + 1
    ntop = tl.sum((h >= INF_WORD).to(tl.int32))
    c_hi = tl.zeros([], tl.int32)
    if ntop < k:
        hi = tl.maximum(tl.max(tl.where(h < INF_WORD, h, NEG)).to(tl.int64) + 1, lo + 1)
        c_hi = ntop
    else:
        lo = tl.maximum(lo, INF_WORD)
    exact = tl.zeros([], tl.int32)
    go = (ncand > k) & (hi - lo > 1)
    while go:
        mid = (lo + hi) >> 1
        c = tl.sum((h >= mid.to(tl.int32)).to(tl.int32))
        big = c >= k
        lo = tl.where(big, mid, lo)
        hi = tl.where(big, hi, mid)
        c_hi = tl.where(big, c_hi, c)
        exact = (c == k).to(tl.int32)
        go = (hi - lo > 1) & (c != k)
    # exactly k at or above lo: take them all; else T = lo is the k-th word, c_hi of the row lie above it
    A = tl.where(exact != 0, lo, hi)
    need = tl.where(exact != 0, 0, k - c_hi)
    A = tl.where(ncand > k, A, NEG + 1)  # at most k candidates: every one of them
    need = tl.where(ncand > k, need, 0)
    return A, lo, need


@triton.jit(do_not_specialize=["src_stride", "n", "width", "k", "rr", "has_len", "has_start"])
def _bisect_kernel(src_ptr, src_stride, len_ptr, start_ptr, out_ptr, flags_ptr, n, width, k, rr, has_len,
                   has_start, BLOCKS: tl.constexpr, BS: tl.constexpr, FLAGS: tl.constexpr, ALIGNED: tl.constexpr,
                   GDC: tl.constexpr, ET: tl.constexpr, KT: tl.constexpr):
    """Grid ``(rows,)``: row ``r``'s ids to ``out[r, :k]`` (every slot), and with ``FLAGS`` its selected blocks'
    flags set (already zeroed by the scores launch).  ``ALIGNED``: the source's row stride is a multiple of 16.
    ``GDC``: launched as a programmatic dependent of the scores launch (the bounds are read before the wait)."""
    row = tl.program_id(0)
    L, start, end = row_extent(row, len_ptr, start_ptr, n, width, rr, has_len, has_start, BLOCKS, BS)
    if GDC:
        _tl_cuda.gdc_wait()
    L = L.to(tl.int32)  # a row is below MAX_COLS columns (the dispatch checks the width)
    if ALIGNED:
        row_off = row.to(tl.int64) * (src_stride // 16) * 16
    else:
        row_off = row.to(tl.int64) * src_stride
    if L <= 2048:
        A, T, need = _search(src_ptr, row_off, L, k, 2048)
    elif L <= 8192:
        A, T, need = _search(src_ptr, row_off, L, k, 8192)
    else:
        A, T, need = _search(src_ptr, row_off, L, k, 32768)
    # every word >= A goes to slots [0, G) in column order, the ties' first `need` to [G, G + need).  Positions come
    # from scans within groups of 32 columns plus one scan of the group totals: fewer trips through shared memory
    # than one scan of the whole tile
    orow = out_ptr + row.to(tl.int64) * k
    gi = tl.arange(0, ET // 32)[:, None] * 32 + tl.arange(0, 32)[None, :]
    a_seen = tl.zeros([], tl.int32)
    t_seen = tl.zeros([], tl.int32)
    G = tl.zeros([], tl.int32)
    if need > 0:
        G = k - need
    for t0 in range(0, L, ET):
        cols = t0 + gi
        h = tl_ordered_hi(tl.load(src_ptr + row_off + cols, mask=cols < L, other=float("-inf")))
        ab = h >= A  # (A > NEG: masked lanes never match, nor T)
        eq = (h == T) & (h < A)
        v = ab.to(tl.int32) + (eq.to(tl.int32) << 16)  # both counts of a tile fit 16 bits
        tot = tl.sum(v, 1)
        cs = tl.cumsum(v, 1) + (tl.cumsum(tot, 0) - tot)[:, None]
        pa = a_seen + (cs & 0xFFFF) - 1
        rt = t_seen + (cs >> 16)
        te = eq & (rt <= need)
        tl.store(orow + pa, cols, mask=ab)
        tl.store(orow + G + rt - 1, cols, mask=te)
        if FLAGS:
            set_flags(flags_ptr, row, cols, ab | te, start, width, n, BS)
        ts = tl.sum(tot)
        a_seen += ts & 0xFFFF
        t_seen += ts >> 16
    fill_tail(out_ptr, row.to(tl.int64) * k, a_seen + tl.minimum(t_seen, need), k, KT)


def launch(src, len_t, start_t, out, flags, n, width, k, rr, *, blocks, bs, gdc=False, num_warps=8):
    """Select into ``out`` (int32 ``[rows, k]``, every slot written), one program per row; ``flags`` (uint8
    ``[rows, n + 1]``, zeroed) or None; ``gdc``: a programmatic dependent of the previous launch (sm_90+).  Inputs
    checked by the caller; ``n <= MAX_COLS``."""
    rows = out.shape[0]
    if rows == 0:
        return out
    if n > MAX_COLS:
        raise ValueError(f"the bisect select takes rows of at most {MAX_COLS} columns, got {n}")
    dummy = out
    gdc = bool(gdc) and GDC_OK
    extra = {"launch_pdl": True} if gdc else {}
    run(_bisect_kernel, (rows,), src, src.stride(0), len_t if len_t is not None else dummy,
        start_t if start_t is not None else dummy, out, flags if flags is not None else out.view(torch.uint8),
        n, width, k, rr, int(len_t is not None), int(start_t is not None), BLOCKS=bool(blocks), BS=int(bs),
        FLAGS=flags is not None, ALIGNED=src.stride(0) % 16 == 0 or rows == 1, GDC=gdc, ET=EMIT_TILE, KT=KT,
        num_warps=num_warps, **extra)
    return out
