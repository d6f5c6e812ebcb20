"""Proofs about the packed key: its order is the contract order of docs/design.md §2, checked by machine.

The claim (notebook ``02_ordering_proof``): for float32 scores ``a, b`` and column
indices ``i, j`` in ``[0, MAX_INDEX]``, comparing ``pack_keys(a, i)`` and
``pack_keys(b, j)`` as signed int64 is exactly the contract order: higher
``ordered(score)`` first (NaN above ``+inf`` whatever its payload or sign,
``-0.0`` just below ``+0.0``), ties to the smaller index.

How it is checked, without trusting the key code to define the order:

* The *contract order* of the non-NaN float32 values is enumerated by
  construction: the negative bit patterns from ``-inf`` (``0xFF800000``) down to
  ``-0.0`` (``0x80000000``), then the positive ones from ``+0.0`` up to ``+inf``
  (``0x7F800000``): ``2**32 - 2*(2**23 - 1)`` patterns, each exactly once.
* For every adjacent pair ``(a, b)`` of that enumeration the hardware float
  comparison must say ``a < b`` (or ``a == b`` with ``a = -0.0, b = +0.0``: the
  only pair the contract separates and IEEE does not).  So the enumeration *is*
  the contract order.
* Along it, ``ordered_bits`` must be strictly increasing, and the packed key of
  the earlier value with the most favourable index (0) must still be below the
  key of the later value with the least favourable one (``MAX_INDEX``): a score
  difference always beats an index difference.
* Every NaN pattern (``2 * (2**23 - 1)`` of them) must map to ``0xFFFFFFFF``,
  strictly above ``ordered(+inf)``, and NaN keys must order by index alone.
* Ties: for every pattern, ``pack_keys(x, i) > pack_keys(x, i + 1)``.
* Round trip: ``unpack_keys(pack_keys(x, i)) == (x, i)`` (NaN → canonical NaN).
* Optionally the ``@triton.jit`` helpers the kernels use (``tl_pack_key``)
  produce the same int64 bit for bit (:mod:`.pack_kernel`).

:func:`exhaustive_key_order_check` runs this over all ``2**32`` patterns in
chunks (seconds on a GPU, minutes on a CPU: it takes a time budget and reports
``complete: False`` when cut short).
:func:`structured_key_order_check` runs the same pair checks on a structured
subset (every sign/exponent with edge and sampled mantissas, every special
value, random patterns) sorted by key: deterministic and quick on a CPU.

Record format of ``data/<gpu>/key_order_exhaustive.json`` (``save_record``)::

    {"record": "key_order_exhaustive", "schema": 1, "claim": str,
     "complete": bool, "patterns_checked": int (4294967296 when complete),
     "non_nan_checked": int, "nan_checked": int, "pairs_checked": int,
     "violations": {"float_order": 0, "ordered_strict": 0, "key_score_beats_index": 0,
                    "nan_ordered": 0, "nan_key_index_order": 0, "tie_smaller_index": 0,
                    "roundtrip": 0, "triton_helpers": 0 | null},
     "first_violations": [ {"check": str, "bits": "0x........"}, ... ]  (at most 20),
     "seconds": float, "chunk": int, "device": str, "triton_helpers_checked": bool,
     "gpu": str | null, "torch": str, "triton": str, "commit": str | null,
     "date": ISO-8601 UTC, "command": str}

Run on a GPU (writes the record)::

    python -m dsa_lab.workbook.proofs --device cuda --out data/h200/key_order_exhaustive.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

from .. import keys

__all__ = [
    "SPECIAL_VALUES",
    "special_values",
    "special_key_table",
    "pair_violations",
    "structured_subset_bits",
    "structured_key_order_check",
    "exhaustive_key_order_check",
    "save_record",
    "load_record",
    "summarize_record",
    "NON_NAN_COUNT",
    "NAN_COUNT",
]

TWO32 = 1 << 32
NEG_INF_BITS = 0xFF800000
POS_INF_BITS = 0x7F800000
NEG_COUNT = NEG_INF_BITS - 0x80000000 + 1  # -inf .. -0.0 inclusive
POS_COUNT = POS_INF_BITS + 1  # +0.0 .. +inf inclusive
NON_NAN_COUNT = NEG_COUNT + POS_COUNT
NAN_COUNT = 2 * (2**23 - 1)
assert NON_NAN_COUNT + NAN_COUNT == TWO32

# name, float32 bit pattern.  In contract order, lowest first.
SPECIAL_VALUES: tuple[tuple[str, int], ...] = (
    ("-inf (padding)", 0xFF800000),
    ("-max finite", 0xFF7FFFFF),
    ("-1.0", 0xBF800000),
    ("-min normal", 0x80800000),
    ("-max denormal", 0x807FFFFF),
    ("-min denormal", 0x80000001),
    ("-0.0", 0x80000000),
    ("+0.0", 0x00000000),
    ("+min denormal", 0x00000001),
    ("+max denormal", 0x007FFFFF),
    ("+min normal", 0x00800000),
    ("+1.0", 0x3F800000),
    ("+max finite", 0x7F7FFFFF),
    ("+inf", 0x7F800000),
    ("+NaN canonical", 0x7FC00000),
    ("+NaN payload 1 (signalling)", 0x7F800001),
    ("+NaN all ones", 0x7FFFFFFF),
    ("-NaN canonical", 0xFFC00000),
    ("-NaN all ones", 0xFFFFFFFF),
)


def _bits_to_float(bits: torch.Tensor) -> torch.Tensor:
    """int64 bit patterns in [0, 2**32) → float32 tensor with those bits."""
    b = torch.where(bits >= 2**31, bits - TWO32, bits)
    return b.to(torch.int32).view(torch.float32)


def _float_to_bits(x: torch.Tensor) -> torch.Tensor:
    return x.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF


def special_values(device="cpu") -> tuple[list[str], torch.Tensor]:
    """Names and float32 tensor of :data:`SPECIAL_VALUES` (contract order, lowest first)."""
    names = [n for n, _ in SPECIAL_VALUES]
    bits = torch.tensor([b for _, b in SPECIAL_VALUES], dtype=torch.int64, device=device)
    return names, _bits_to_float(bits)


def _hex32(v: int) -> str:
    return f"0x{v & 0xFFFFFFFF:08X}"


def _hex64(v: int) -> str:
    return f"0x{v & (2**64 - 1):016X}"


def special_key_table(index: int = 5) -> list[dict]:
    """One row per special value: bits, ``ordered``, the key at column ``index``, and its contract rank.

    ``rank`` 0 is the first pick of a top-k (all NaNs share rank 0: they tie, the
    index decides among them).  Rows are in contract order, best first.
    """
    names, x = special_values()
    idx = torch.full(x.shape, index, dtype=torch.int64)
    o = keys.ordered_bits(x)
    k = keys.pack_keys(x, idx)
    back, back_idx = keys.unpack_keys(k)
    rows = []
    for i, name in enumerate(names):
        rows.append(
            {
                "value": name,
                "float": repr(float(x[i])),
                "bits": _hex32(int(_float_to_bits(x[i : i + 1])[0])),
                "ordered": _hex32(int(o[i])),
                "key_hi": _hex32(int(k[i]) >> 32),
                "key_lo": _hex32(int(k[i])),
                "key": _hex64(int(k[i])),
                "key_signed": int(k[i]),
                "candidate": bool(keys.is_candidate(k[i : i + 1])[0]),
                "unpacked": repr(float(back[i])),
                "index_back": int(back_idx[i]),
            }
        )
    distinct = sorted({r["ordered"] for r in rows}, reverse=True)
    for r in rows:
        r["rank"] = distinct.index(r["ordered"])
    rows.sort(key=lambda r: (-int(r["ordered"], 16), r["value"]))
    return rows


# ---------------------------------------------------------------------------
# Pair checks shared by the structured and the exhaustive check
# ---------------------------------------------------------------------------

_CHECKS = (
    "float_order",
    "ordered_strict",
    "key_score_beats_index",
    "nan_ordered",
    "nan_key_index_order",
    "tie_smaller_index",
    "roundtrip",
)


def pair_violations(a_bits: torch.Tensor, b_bits: torch.Tensor) -> dict[str, torch.Tensor]:
    """For non-NaN patterns ``a`` claimed to sit just below ``b`` in contract order: masks of failures.

    * ``float_order``: the float comparison disagrees (``a < b``, or ``-0.0`` then ``+0.0``);
    * ``ordered_strict``: ``ordered(a) >= ordered(b)``;
    * ``key_score_beats_index``: ``pack(a, 0) >= pack(b, MAX_INDEX)`` (an index overrode a score).
    """
    a, b = _bits_to_float(a_bits), _bits_to_float(b_bits)
    zero_pair = (a_bits == 0x80000000) & (b_bits == 0)
    float_ok = (a < b) | zero_pair
    float_ok &= ~torch.isnan(a) & ~torch.isnan(b)
    oa, ob = keys.ordered_bits(a), keys.ordered_bits(b)
    ka = keys.pack_keys(a, torch.zeros_like(a_bits))
    kb = keys.pack_keys(b, torch.full_like(b_bits, keys.MAX_INDEX))
    return {
        "float_order": ~float_ok,
        "ordered_strict": oa >= ob,
        "key_score_beats_index": ka >= kb,
    }


def single_violations(bits: torch.Tensor, gen: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """Checks on each pattern alone: NaN map, NaN keys ordered by index, ties, round trip."""
    x = _bits_to_float(bits)
    nan = torch.isnan(x)
    o = keys.ordered_bits(x)
    n = bits.numel()
    if gen is not None:
        i = torch.randint(0, keys.MAX_INDEX, (n,), generator=gen, dtype=torch.int64).to(bits.device)
    else:
        i = (bits * 40503 + 12345) % keys.MAX_INDEX  # deterministic spread of indices, < MAX_INDEX
    k0 = keys.pack_keys(x, i)
    k1 = keys.pack_keys(x, i + 1)
    canon = torch.full_like(x, float("nan"))
    # NaN keys: a NaN at index i beats the canonical NaN at i + 1, loses to it at i - 1 (if any)
    kn_next = keys.pack_keys(canon, i + 1)
    back, back_i = keys.unpack_keys(k0)
    back_bits = _float_to_bits(back)
    want_bits = torch.where(nan, torch.full_like(bits, 0x7FC00000), bits)
    inf_o = keys.ordered_bits(torch.tensor([float("inf")], device=bits.device))
    return {
        "nan_ordered": nan & ((o != 0xFFFFFFFF) | (o <= inf_o)) | (~nan & (o == 0xFFFFFFFF)),
        "nan_key_index_order": nan & (k0 <= kn_next),
        "tie_smaller_index": k0 <= k1,
        "roundtrip": (back_bits != want_bits) | (back_i != i),
    }


def _triton_pack(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``tl_pack_key(x, idx)`` computed by a Triton kernel (:mod:`.pack_kernel`), int64 like ``x``'s shape."""
    import triton

    from .pack_kernel import pack_kernel  # imported on first use: TRITON_INTERPRET is read then

    out = torch.empty(x.shape, dtype=torch.int64, device=x.device)
    n = x.numel()
    block = 1024 if x.is_cuda else 1 << 16
    pack_kernel[(triton.cdiv(n, block),)](x, idx, out, n, BLOCK=block)
    return out


def _triton_usable(device: torch.device) -> bool:
    from .._impl import triton_usable

    return triton_usable(device)


def _accumulate(tally, firsts, masks: dict, bits: torch.Tensor, limit: int = 20):
    for name, m in masks.items():
        c = int(m.sum())
        tally[name] = tally.get(name, 0) + c
        if c and len(firsts) < limit:
            for v in bits[m][: limit - len(firsts)].tolist():
                firsts.append({"check": name, "bits": _hex32(v)})


# ---------------------------------------------------------------------------
# Structured subset (CPU, deterministic)
# ---------------------------------------------------------------------------


def structured_subset_bits(samples_per_exponent: int = 64, random_samples: int = 1 << 18,
                           seed: int = 0) -> torch.Tensor:
    """Distinct bit patterns: every sign × exponent (512) with edge mantissas and sampled ones,
    every special value, every NaN-payload edge, and uniform random patterns.  Sorted ascending."""
    g = torch.Generator().manual_seed(seed)
    edges = torch.tensor(
        [0, 1, 2, 3, 0x3FFFFF, 0x400000, 0x400001, 0x7FFFFC, 0x7FFFFD, 0x7FFFFE, 0x7FFFFF], dtype=torch.int64
    )
    mant = torch.cat([edges, torch.randint(0, 1 << 23, (samples_per_exponent,), generator=g, dtype=torch.int64)])
    se = torch.arange(512, dtype=torch.int64)  # sign and exponent: the top 9 bits
    grid = (se[:, None] << 23 | mant[None, :]).reshape(-1)
    special = torch.tensor([b for _, b in SPECIAL_VALUES], dtype=torch.int64)
    rand = torch.randint(0, TWO32, (random_samples,), generator=g, dtype=torch.int64)
    return torch.unique(torch.cat([grid, special, rand]))


def structured_key_order_check(samples_per_exponent: int = 64, random_samples: int = 1 << 18, seed: int = 0) -> dict:
    """The pair checks on :func:`structured_subset_bits`, adjacent in key order.  Deterministic.

    Sorting the subset by ``ordered`` and checking each adjacent pair with the float
    comparison proves, for the subset, that the key order is the contract order.
    """
    t0 = time.perf_counter()
    bits = structured_subset_bits(samples_per_exponent, random_samples, seed)
    x = _bits_to_float(bits)
    nan = torch.isnan(x)
    nn_bits = bits[~nan]
    order = torch.argsort(keys.ordered_bits(_bits_to_float(nn_bits)), stable=True)
    s = nn_bits[order]
    tally: dict[str, int] = {}
    firsts: list[dict] = []
    _accumulate(tally, firsts, pair_violations(s[:-1], s[1:]), s[:-1])
    _accumulate(tally, firsts, single_violations(bits), bits)
    if _triton_usable(bits.device):
        i = (bits * 40503 + 12345) % keys.MAX_INDEX
        tk = _triton_pack(x, i)
        _accumulate(tally, firsts, {"triton_helpers": tk != keys.pack_keys(x, i)}, bits)
    else:
        tally["triton_helpers"] = None
    return {
        "record": "key_order_structured",
        "patterns_checked": int(bits.numel()),
        "non_nan_checked": int(nn_bits.numel()),
        "nan_checked": int(nan.sum()),
        "pairs_checked": int(max(s.numel() - 1, 0)),
        "sign_exponent_combinations": 512,
        "violations": tally,
        "first_violations": firsts,
        "seconds": time.perf_counter() - t0,
    }


# ---------------------------------------------------------------------------
# Exhaustive check over all 2**32 patterns (GPU in seconds; CPU with a time budget)
# ---------------------------------------------------------------------------


def _enum_bits(pos: torch.Tensor) -> torch.Tensor:
    """Contract-order enumeration of the non-NaN patterns: position → bit pattern."""
    return torch.where(pos < NEG_COUNT, NEG_INF_BITS - pos, pos - NEG_COUNT)


def _env_meta(device: torch.device) -> dict:
    """Record metadata (GPU, versions, commit, date, command) from :func:`dsa_lab.bench.data.collect_metadata`."""
    from ..bench import data
    meta = data.collect_metadata(" ".join([os.path.basename(sys.argv[0])] + sys.argv[1:]) if sys.argv else "")
    meta["gpu"] = meta.get("gpu_name") if device.type == "cuda" else None
    meta["date"] = meta.get("date_utc")
    return meta


def exhaustive_key_order_check(
    device="cuda", chunk: int | None = None, *, time_budget_s: float | None = None, check_triton: bool | None = None,
    progress: bool = False,
) -> dict:
    """Check the key order against the contract order on all ``2**32`` float32 bit patterns.

    Args:
        device: where the chunks are computed (``"cuda"``: seconds on an H200; ``"cpu"``: minutes).
        chunk: patterns per chunk (default ``2**26`` on CUDA, ``2**22`` on CPU).
        time_budget_s: stop after this many seconds; the record then says ``complete: False``
            and how many patterns it covered (a prefix of the enumeration, then no NaNs).
        check_triton: also compare the ``@triton.jit`` packing (``tl_pack_key``) with
            :func:`dsa_lab.pack_keys` on every pattern (default: when Triton can run on ``device``
            and it is a GPU).

    Returns the record dict described in the module docstring (save it with :func:`save_record`).
    """
    dev = torch.device(device)
    if chunk is None:
        chunk = 1 << 26 if dev.type == "cuda" else 1 << 22
    if check_triton is None:
        check_triton = dev.type == "cuda"
    if check_triton and not _triton_usable(dev):
        raise ValueError(f"check_triton=True needs Triton on {dev} (a GPU or TRITON_INTERPRET=1)")
    t0 = time.perf_counter()
    tally: dict[str, int] = {c: 0 for c in _CHECKS}
    tally["triton_helpers"] = 0 if check_triton else None
    firsts: list[dict] = []
    done_nn = done_nan = pairs = 0
    complete = True
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=TWO32, unit="pat", unit_scale=True, desc="2^32 key order")
        except Exception:  # pragma: no cover
            bar = None

    def out_of_time():
        return time_budget_s is not None and time.perf_counter() - t0 > time_budget_s

    def run_singles(bits):
        _accumulate(tally, firsts, single_violations(bits), bits)
        if check_triton:
            x = _bits_to_float(bits)
            i = (bits * 40503 + 12345) % keys.MAX_INDEX
            _accumulate(tally, firsts, {"triton_helpers": _triton_pack(x, i) != keys.pack_keys(x, i)}, bits)

    # 1) the non-NaN enumeration, chunks overlapping by one so every adjacent pair is checked
    start = 0
    while start < NON_NAN_COUNT:
        if out_of_time():
            complete = False
            break
        stop = min(start + chunk, NON_NAN_COUNT)
        pos = torch.arange(start, min(stop + 1, NON_NAN_COUNT), dtype=torch.int64, device=dev)
        bits = _enum_bits(pos)
        if bits.numel() > 1:
            _accumulate(tally, firsts, pair_violations(bits[:-1], bits[1:]), bits[:-1])
            pairs += bits.numel() - 1
        own = bits[: stop - start]
        run_singles(own)
        done_nn += own.numel()
        if bar is not None:
            bar.update(own.numel())
        start = stop
    # 2) every NaN pattern (both signs)
    if complete:
        for lo in (0x7F800001, 0xFF800001):
            s = lo
            end = lo + 2**23 - 1
            while s < end:
                if out_of_time():
                    complete = False
                    break
                e = min(s + chunk, end)
                bits = torch.arange(s, e, dtype=torch.int64, device=dev)
                run_singles(bits)
                done_nan += bits.numel()
                if bar is not None:
                    bar.update(bits.numel())
                s = e
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    if bar is not None:
        bar.close()
    complete = complete and done_nn == NON_NAN_COUNT and done_nan == NAN_COUNT
    rec = {
        "record": "key_order_exhaustive",
        "schema": 1,
        "claim": "signed int64 order of pack_keys(score, index) == contract order of docs/design.md §2 "
        "(ordered(score) descending, NaN above +inf with every payload, -0.0 below +0.0, ties to the smaller index)",
        "complete": complete,
        "patterns_checked": done_nn + done_nan,
        "non_nan_checked": done_nn,
        "nan_checked": done_nan,
        "pairs_checked": pairs,
        "violations": tally,
        "first_violations": firsts,
        "seconds": round(time.perf_counter() - t0, 3),
        "chunk": chunk,
        "device": str(dev),
        "triton_helpers_checked": bool(check_triton),
    }
    rec.update(_env_meta(dev))
    return rec


def save_record(rec: dict, path) -> None:
    """Write a record as indented JSON (atomically: temp file then rename)."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(rec, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def load_record(path) -> dict | None:
    """The record at ``path``, or None when it does not exist."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def summarize_record(rec: dict | None, path: str = "") -> str:
    """A few deterministic lines describing an exhaustive-check record (or its absence)."""
    if rec is None:
        return f"NO RECORD: {path} is absent - the full 2^32 check has not been recorded on a GPU yet."
    v = rec.get("violations", {})
    bad = {k: n for k, n in v.items() if n}
    lines = [
        f"record: {path}" if path else "record:",
        f"  device: {rec.get('device')}  gpu: {rec.get('gpu')}  torch {rec.get('torch')}  triton {rec.get('triton')}",
        f"  commit: {rec.get('commit')}  date: {rec.get('date')}",
        f"  complete: {rec.get('complete')}  patterns: {rec.get('patterns_checked'):,} of {TWO32:,}"
        f"  (non-NaN {rec.get('non_nan_checked'):,}, NaN {rec.get('nan_checked'):,}, "
        f"adjacent pairs {rec.get('pairs_checked'):,})",
        f"  Triton helpers compared bit for bit: {rec.get('triton_helpers_checked')}",
        f"  seconds: {rec.get('seconds')}",
        "  violations: " + ("none (0 in every check)" if not bad else json.dumps(bad)),
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    """``python -m dsa_lab.workbook.proofs``: the exhaustive check, its summary, the record; 1 on a violation or a
    cut-short run."""
    p = argparse.ArgumentParser(prog="python -m dsa_lab.workbook.proofs",
                                description=exhaustive_key_order_check.__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--chunk", type=lambda s: int(eval(s, {}, {})), default=None, help="patterns per chunk, e.g. 2**26")
    p.add_argument("--time-budget", type=float, default=None, help="seconds; stop early (record says complete: false)")
    p.add_argument("--no-triton", action="store_true", help="skip the tl_pack_key comparison")
    p.add_argument("--out", default=None, help="write the record here (JSON)")
    a = p.parse_args(argv)
    rec = exhaustive_key_order_check(
        a.device, a.chunk, time_budget_s=a.time_budget, check_triton=False if a.no_triton else None, progress=True
    )
    print(summarize_record(rec, a.out or ""))
    if a.out:
        save_record(rec, a.out)
    bad = any(n for n in rec["violations"].values() if n)
    return 1 if bad or not rec["complete"] else 0


if __name__ == "__main__":
    sys.exit(main())
