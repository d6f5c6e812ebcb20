"""Triton ``@triton.jit`` twins of :mod:`dsa_lab.keys` (same bit layout; see that module's docstring).

Kernels import these; ``tests/test_keys.py`` checks them bit for bit against the torch functions.
Import this module only when a Triton kernel is about to be used (``TRITON_INTERPRET`` is read
when a function is decorated).
"""
import triton
import triton.language as tl


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
    hi = tl_ordered_hi(x).to(tl.int64)
    return (hi << 32) | (0xFFFFFFFF - idx.to(tl.int64))


@triton.jit
def tl_key_index(key):
    """Column (int64) carried by a key."""
    return 0xFFFFFFFF - (key & 0xFFFFFFFF)


@triton.jit
def tl_is_candidate(key):
    """True where the key's score is above -inf (selectable)."""
    return (key >> 32) > -0x7F800001
