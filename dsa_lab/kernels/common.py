"""``@triton.jit`` helpers shared by the kernels: packed keys, a row's live extent, writing ids out, flags.

Keys are the Triton twins of :mod:`dsa_lab.keys` (same bits; ``tests/test_keys.py`` checks them bit for bit): the
signed ordered high word of a float32 score in the top 32 bits and ``0xFFFFFFFF - column`` in the low 32, so a
signed int64 comparison is the selection contract's order (``docs/design.md``) and one top-k of keys yields scores
and ids together, ties to the smaller column.  ``PAD_KEY`` (INT64_MIN) marks a masked lane; no float's key equals it.

Import this package only when a Triton kernel is about to run (``TRITON_INTERPRET`` is read when a function is
decorated).
"""
from __future__ import annotations

import triton
import triton.language as tl

# The key layout's two constants, as in dsa_lab.keys (kept here so that the kernels import nothing of the package
# above them; tests/test_keys.py holds the two equal).
PAD = tl.constexpr(-(2**63))  # keys.PAD_KEY: the key of a masked lane
NO_WORD = tl.constexpr(-2147483648)  # an ordered high word no float has: "no column" in a 32-bit max
NEG_HI = tl.constexpr(-0x7F800001)  # keys.NEG_INF_HI, the ordered high word of -inf: candidates lie above it

PDL_OK = True
try:  # griddepcontrol (programmatic dependent launch): CUDA sm_90+; the launchers pass it only there
    from triton.language.extra import cuda as tl_cuda
except ImportError:  # pragma: no cover - a Triton build without the CUDA extras
    PDL_OK, tl_cuda = False, None


# ------------------------------------------------------------------------------------------------------------ keys
@triton.jit
def tl_ordered_hi(x):
    """Signed ordered high word (int32) of a float32 tensor; NaN → 0x7FFFFFFF."""
    s = x.to(tl.int32, bitcast=True)
    hi = tl.where(s >= 0, s, s ^ 0x7FFFFFFF)
    return tl.where(x != x, 0x7FFFFFFF, hi)


@triton.jit
def tl_from_ordered_hi(hi):
    """float32 whose ordered high word is ``hi`` (int32); inverse of :func:`tl_ordered_hi` off NaN."""
    s = tl.where(hi >= 0, hi, hi ^ 0x7FFFFFFF)
    return s.to(tl.float32, bitcast=True)


@triton.jit
def tl_pack_key(x, idx):
    """int64 key of float32 scores ``x`` at int columns ``idx`` (same shape)."""
    return (tl_ordered_hi(x).to(tl.int64) << 32) | (0xFFFFFFFF - idx.to(tl.int64))


@triton.jit
def tl_key_index(key):
    """Column (int64) carried by a key."""
    return 0xFFFFFFFF - (key & 0xFFFFFFFF)


@triton.jit
def tl_is_candidate(key):
    """True where the key's score is above -inf (selectable)."""
    return (key >> 32) > NEG_HI


@triton.jit
def tl_block_score(x, block_id, start, end, AXIS: tl.constexpr, BS: tl.constexpr):
    """Scores of the blocks laid along ``AXIS`` of the logits ``x`` (masked lanes already ``-inf``): the max in
    the contract's order, taken over ordered integers, so any NaN wins (as bits ``0x7FFFFFFF``), ``+0.0`` beats
    ``-0.0`` and subnormals compare exactly (a GPU float max does none of these reliably).  The newest block
    ``(end - start - 1) // BS`` is pinned to ``+inf`` when ``end > start``.  The block-scores kernel and the fused
    select both use it, so both compute the same bits."""
    s = tl_from_ordered_hi(tl.max(tl_ordered_hi(x), axis=AXIS))
    newest = tl.where(end > start, (end - start - 1) // BS, -1)
    return tl.where(block_id.to(tl.int64) == newest, float("inf"), s)


# ------------------------------------------------------------------------------------------------------- extents
@triton.jit
def row_extent(row, len_ptr, start_ptr, n, width, rr, has_len, has_start, BLOCK_SCORES: tl.constexpr,
               BS: tl.constexpr):
    """``(L, start, end)`` of a row, read on the device (group ``row // rr``).

    Columns (``BLOCK_SCORES`` False): ``L = clamp(lengths[g], 0, n)``, or ``n`` when ``has_len`` is 0.  Blocks: ``end``
    from ``len_ptr``, ``start`` from ``start_ptr`` (0 when ``has_start`` is 0; clamped to ``[0, end]``: inside a
    graph capture the host cannot check it), and ``L = max(cdiv(min(end, width) - start, BS), newest + 1)`` clamped
    to ``n`` blocks: the live blocks plus the pinned newest one."""
    g = row
    if rr > 1:  # (a division by a run-time value costs a dependent chain before the bounds' load)
        g = row // rr
    start = tl.zeros([], tl.int64)
    end = tl.zeros([], tl.int64)
    if BLOCK_SCORES:
        end = tl.maximum(tl.load(len_ptr + g).to(tl.int64), 0)
        if has_start:
            start = tl.minimum(tl.maximum(tl.load(start_ptr + g).to(tl.int64), 0), end)
        nb_live = (tl.maximum(tl.minimum(end, width) - start, 0) + BS - 1) // BS
        newest1 = tl.where(end > start, (end - start - 1) // BS + 1, 0)
        L = tl.minimum(tl.maximum(nb_live, newest1), n)
    else:
        L = tl.zeros([], tl.int64) + n
        if has_len:
            L = tl.minimum(tl.maximum(tl.load(len_ptr + g).to(tl.int64), 0), n)
    return L, start, end


# ------------------------------------------------------------------------------------------------------ write-out
@triton.jit
def write_ranked(out_ptr, row, top, k, KP: tl.constexpr):
    """Slots ``j < k`` of the row: the column of the ``j``-th key of ``top`` (sorted descending) if it is a
    candidate, else -1."""
    j = tl.arange(0, KP)
    ids = tl.where(tl_is_candidate(top), tl_key_index(top), -1).to(tl.int32)
    tl.store(out_ptr + row.to(tl.int64) * k + j, ids, mask=j < k)


@triton.jit
def write_selected(out_ptr, row, cols, sel, cnt, k, KP: tl.constexpr):
    """Compact the selected ``cols`` (a 1-D tile, mask ``sel``, ``cnt`` of them) into slots ``[0, cnt)`` of the
    row (order free); slots ``[cnt, k)`` get -1."""
    base = row.to(tl.int64) * k
    pos = tl.cumsum(sel.to(tl.int32), 0) - 1
    tl.store(out_ptr + base + pos, cols.to(tl.int32), mask=sel & (pos < k))
    j = tl.arange(0, KP)
    tl.store(out_ptr + base + j, tl.full([KP], -1, tl.int32), mask=(j >= cnt) & (j < k))


@triton.jit
def fill_tail(out_ptr, base, cnt, k, KT: tl.constexpr):
    """Slots ``[cnt, k)`` from ``out_ptr + base`` get -1 (``KT`` slots per store)."""
    jk = tl.arange(0, KT)
    for j0 in range(0, k, KT):
        j = j0 + jk
        tl.store(out_ptr + base + j, tl.full([KT], -1, tl.int32), mask=(j >= cnt) & (j < k))


# ---------------------------------------------------------------------------------------------------------- flags
@triton.jit
def zero_flags(flags_ptr, row, lo, hi, n, mode):
    """Zero bytes ``[lo, hi)`` of the row's flags (``uint8 [rows, n + 1]``) as ``mode`` says
    (:class:`dsa_lab.plans.FlagZeroing`): 0 nothing (an earlier launch zeroed them); 1 byte stores; 2 (the tensor
    16-byte aligned, checked by the launcher) the 8-byte words inside the range as int64 stores and at most 7 + 7
    bytes around them as bytes (a row is ``n + 1`` bytes, so rows rarely start aligned)."""
    base = row.to(tl.int64) * (n + 1)
    if mode == 2:
        a = base + lo
        b = base + hi
        a8 = (a + 7) // 8 * 8
        b8 = b // 8 * 8
        j8 = tl.arange(0, 8)
        z8 = tl.zeros([8], tl.uint8)
        tl.store(flags_ptr + a + j8, z8, mask=a + j8 < tl.minimum(a8, b))  # head
        tl.store(flags_ptr + tl.maximum(b8, a) + j8, z8, mask=tl.maximum(b8, a) + j8 < b)  # tail
        wp = (flags_ptr + a8).to(tl.pointer_type(tl.int64))
        nw = (b8 - a8) // 8  # <= 0 when no whole word lies inside
        jw = tl.arange(0, 512)
        zw = tl.zeros([512], tl.int64)
        for w0 in range(0, nw, 512):
            tl.store(wp + w0 + jw, zw, mask=w0 + jw < nw)
    elif mode == 1:
        j = tl.arange(0, 4096)
        z = tl.zeros([4096], tl.uint8)
        for j0 in range(lo, hi, 4096):
            tl.store(flags_ptr + base + j0 + j, z, mask=j0 + j < hi)


@triton.jit
def set_flags(flags_ptr, row, ids, sel, start, width, n, BS: tl.constexpr):
    """``flags[row, b] = 1`` for each selected block id ``b`` (mask ``sel``); the sentinel slot ``n`` when the
    block's first column ``start + b * BS`` is at or past the width (the flags contract)."""
    b = ids.to(tl.int64)
    slot = tl.where(start + b * BS >= width, n, b)
    tl.store(flags_ptr + row.to(tl.int64) * (n + 1) + slot, tl.full(b.shape, 1, tl.uint8), mask=sel)


@triton.jit
def pick_digit(hist, rem, bins):
    """(digit b, its count, candidates still needed inside b's bin) of a 256-bin int32 histogram: b is the bin
    where the count from the top bin down reaches ``rem`` (the radix selects' step)."""
    above = tl.sum(hist) - tl.cumsum(hist, 0)
    hit = (above < rem) & (above + hist >= rem)
    b = tl.max(tl.where(hit, bins, -1))
    hb = tl.sum(tl.where(bins == b, hist, 0))
    return b, hb, rem - tl.sum(tl.where(bins == b, above, 0))
