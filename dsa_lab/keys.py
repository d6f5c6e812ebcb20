"""Order-preserving packed keys: one int64 carries a float32 score and its column.

Bit layout of a key (signed int64, compared with ordinary signed ``<``)::

    bit 63 ............ 32 | 31 ............ 0
    hi = signed ordered(x) | lo = 0xFFFFFFFF - index

* ``ordered(x)`` is the map PyTorch's CUDA radix select uses: ``u = bits(x)``;
  ``u ^ 0xFFFFFFFF`` if the sign bit is set, else ``u ^ 0x80000000``; every NaN
  maps to ``0xFFFFFFFF``.  It is monotone: ``a < b`` as floats  ⇔  ``ordered(a) <
  ordered(b)`` as unsigned 32-bit integers, with ``-0.0`` just below ``+0.0``
  and NaN above ``+inf``.
* The high word stores ``ordered(x) - 2**31`` (the same map, read as a signed
  int32): for a float with bits ``s`` read as int32 it is ``s`` when ``s >= 0``
  and ``s ^ 0x7FFFFFFF`` when ``s < 0``.  Subtracting ``2**31`` turns unsigned
  order into signed order, so the sign bit of the key is the sign of the
  *ordered* value, and a signed int64 comparison compares ``ordered(x)`` first.
* The low word stores the index inverted, ``0xFFFFFFFF - index``: among equal
  scores the smaller index has the larger low word, hence the larger key.  The
  low word is always non-negative as part of the int64 (it is below ``2**32``),
  so it never disturbs the high word's order.
* Consequently ``key_a > key_b`` (signed) ⇔ a ranks before b in the contract of
  docs/design.md §2: higher ``ordered(score)`` first, ties to the smaller index.  Keys
  of distinct columns are distinct, so sorting keys is a total order with no
  ties left to break.

Special encodings:

* NaN (any payload, either sign): ``hi = 0x7FFFFFFF`` — the largest high word;
  all NaNs tie and rank above ``+inf`` (``hi = 0x7F800000``).
* ``-inf`` (padding): ``hi = NEG_INF_HI = -0x7F800001``.  A key whose high word
  is at or below it is *not a candidate*; :data:`CANDIDATE_MIN` is the smallest
  key that is one.
* :data:`PAD_KEY` ``= INT64_MIN`` (``hi = -2**31``) is the key kernels give to
  masked-out lanes (columns at or past a row's length).  No float produces that
  high word: it would be ``bits = 0xFFFFFFFF``, a negative NaN, which
  ``ordered`` maps to ``0xFFFFFFFF`` instead.

Index capacity: the low word holds indices ``0 .. MAX_INDEX = 2**32 - 1``;
:func:`pack_keys` raises ``ValueError`` naming the limit beyond it.
(Selection outputs are int32, so the selection API separately limits widths to
``2**31 - 1`` columns.)

The same packing exists as ``@triton.jit`` helpers in :mod:`dsa_lab.kernels.common`
(``tl_ordered_hi``, ``tl_pack_key``, ``tl_key_index``, ``tl_is_candidate``) for the
kernels; ``tests/test_keys.py`` checks they agree with these torch functions bit
for bit.  (Importing :mod:`dsa_lab` defines no Triton function: ``TRITON_INTERPRET``
is read when a kernel is decorated, so the CLI and notebooks can still switch the
interpreter on after ``import dsa_lab``.)
"""
from __future__ import annotations

import torch

__all__ = [
    "MAX_INDEX",
    "NEG_INF_HI",
    "NAN_HI",
    "PAD_KEY",
    "CANDIDATE_MIN",
    "ordered_bits",
    "ordered_hi",
    "from_ordered_hi",
    "pack_keys",
    "unpack_keys",
    "key_index",
    "is_candidate",
]

MAX_INDEX = 2**32 - 1
NAN_HI = 0x7FFFFFFF
NEG_INF_HI = -0x7F800001  # signed ordered high word of -inf
PAD_KEY = -(2**63)
CANDIDATE_MIN = (NEG_INF_HI + 1) << 32  # smallest key whose score is above -inf
_CANONICAL_NAN_BITS = 0x7FC00000


def _check_float32(x, name: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype != torch.float32:
        raise TypeError(f"{name} must be float32, got {x.dtype}")


def ordered_hi(x: torch.Tensor) -> torch.Tensor:
    """Signed ordered high word of float32 ``x`` as int64 in ``[-2**31, 2**31)``.

    Equals ``ordered_bits(x) - 2**31``.  NaN → ``NAN_HI``.
    """
    _check_float32(x, "x")
    s = x.contiguous().view(torch.int32).to(torch.int64)
    hi = torch.where(s >= 0, s, s ^ 0x7FFFFFFF)
    return torch.where(torch.isnan(x), torch.full_like(hi, NAN_HI), hi)


def from_ordered_hi(hi: torch.Tensor) -> torch.Tensor:
    """float32 whose :func:`ordered_hi` is ``hi`` (integer tensor in ``[-2**31, 2**31)``).

    Inverse of :func:`ordered_hi` on non-NaN floats; ``NAN_HI`` gives the NaN with bits
    ``0x7FFFFFFF``.  Used to turn an integer max in the contract's order back into a score.
    """
    h = hi.to(torch.int64)
    s = torch.where(h >= 0, h, h ^ 0x7FFFFFFF)
    return s.to(torch.int32).view(torch.float32)


def ordered_bits(x: torch.Tensor) -> torch.Tensor:
    """``ordered(x)`` of docs/design.md §2 for float32 ``x``, as int64 in ``0 .. 2**32 - 1``.

    Same shape and device as ``x``.  Monotone in the float order; ``-0.0`` maps
    just below ``+0.0``; every NaN maps to ``0xFFFFFFFF``.
    """
    return ordered_hi(x) + 2**31


def pack_keys(scores: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Pack float32 ``scores`` and integer ``index`` (same shape) into int64 keys.

    ``key = (ordered(score) - 2**31) << 32 | (0xFFFFFFFF - index)``.  Signed
    comparison of keys is the contract order (docs/design.md §2).  ``index`` must lie in
    ``[0, MAX_INDEX]``; a value outside raises ``ValueError`` (this reads the
    values, so it synchronises with the device).
    """
    _check_float32(scores, "scores")
    if not isinstance(index, torch.Tensor):
        raise TypeError(f"index must be a torch.Tensor, got {type(index).__name__}")
    if index.dtype.is_floating_point or index.dtype.is_complex or index.dtype == torch.bool:
        raise TypeError(f"index must be an integer tensor, got {index.dtype}")
    if index.device != scores.device:
        raise ValueError(f"index is on {index.device} but scores is on {scores.device}")
    idx = index.to(torch.int64)
    try:
        idx = torch.broadcast_to(idx, scores.shape)
    except RuntimeError:
        raise ValueError(
            f"index shape {tuple(index.shape)} does not broadcast to scores shape {tuple(scores.shape)}"
        ) from None
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) > MAX_INDEX):
        raise ValueError(
            f"index must lie in [0, MAX_INDEX={MAX_INDEX}] (32 low bits of the key); "
            f"got [{int(idx.min())}, {int(idx.max())}]"
        )
    return (ordered_hi(scores) << 32) | (MAX_INDEX - idx)


def key_index(keys: torch.Tensor) -> torch.Tensor:
    """Column index carried by ``keys`` (int64)."""
    return MAX_INDEX - (keys & MAX_INDEX)


def is_candidate(keys: torch.Tensor) -> torch.Tensor:
    """True where a key's score is above ``-inf`` (NaN included): selectable."""
    return keys >= CANDIDATE_MIN


def unpack_keys(keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact inverse of :func:`pack_keys`: ``(scores float32, index int64)``.

    Every NaN comes back as the canonical quiet NaN ``0x7FC00000`` (the key does
    not keep payloads: all NaNs tie).  ``PAD_KEY`` decodes to that canonical NaN
    too; test :func:`is_candidate` first when padding may be present.
    """
    if not isinstance(keys, torch.Tensor):
        raise TypeError(f"keys must be a torch.Tensor, got {type(keys).__name__}")
    if keys.dtype != torch.int64:
        raise TypeError(f"keys must be int64, got {keys.dtype}")
    hi = keys >> 32  # arithmetic shift: the signed high word
    is_nan = (hi == NAN_HI) | (hi == -(2**31))
    s = torch.where(hi >= 0, hi, hi ^ 0x7FFFFFFF)
    s = torch.where(is_nan, torch.full_like(s, _CANONICAL_NAN_BITS), s)
    scores = s.to(torch.int32).view(torch.float32)
    return scores, key_index(keys)
