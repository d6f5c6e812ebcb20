"""Shapes and value distributions, in one place.

* :data:`dsa_lab.cases.MATRIX` — the named correctness configurations (their shapes live in :mod:`dsa_lab.cases`,
  which ``dsa-lab warmup`` also reads); :func:`make_inputs` makes a case's inputs.
* :data:`DECODE_SWEEP` — the seed's benchmark grid (docs/design.md §5); benchmark
  shapes live here, apart from the test shapes.
* :func:`fill` — the value distributions used by verification and benchmarks.
"""
from __future__ import annotations

import dataclasses
import math

import torch

from ..cases import MATRIX, MATRIX_BY_NAME, MML, NB, Case  # noqa: F401  (the named cases live there)

DISTS = ("normal", "shifted", "equal", "nan1pct", "ramp")
SPECIAL_DISTS = ("nan_payloads", "signed_zero", "denormal", "all_neginf", "all_nan", "specials", "few_values")
# the long-row select's laws: a narrow shift (about 130 distinct values), three values, a band of 1e-6 with sparse
# outliers (tens of distinct values, the top ones wide ties)
LONGROW_DISTS = ("shifted_narrow", "three", "band")


def _nan_with_payload(gen, shape):
    d = gen.device
    payload = torch.randint(1, 2**22, shape, generator=gen, dtype=torch.int64, device=d)
    sign = torch.randint(0, 2, shape, generator=gen, dtype=torch.int64, device=d) << 31
    quiet = torch.randint(0, 2, shape, generator=gen, dtype=torch.int64, device=d) << 22
    bits = sign | 0x7F800000 | payload | quiet
    return (bits - ((bits >> 31) << 32)).to(torch.int32).view(torch.float32)


def fill(dist: str, rows: int, n: int, *, gen: torch.Generator, device=None) -> torch.Tensor:
    """float32 ``[rows, n]`` of distribution ``dist`` (see :data:`DISTS`, :data:`SPECIAL_DISTS`).

    Generated on ``gen``'s device (reproducible for a seed there), returned on ``device``
    (default: the generator's device).
    """
    shape = (rows, n)
    d = gen.device

    def rand():
        return torch.rand(shape, generator=gen, device=d)

    def randn():
        return torch.randn(shape, generator=gen, device=d)

    if dist == "normal":
        x = randn()
    elif dist == "shifted":
        x = randn() + 100.0
    elif dist == "equal":
        x = torch.full(shape, 0.5, device=d)
    elif dist == "nan1pct":
        x = randn().masked_fill_(rand() < 0.01, float("nan"))
    elif dist == "ramp":
        x = torch.arange(n, dtype=torch.float32, device=d).expand(rows, n).contiguous()
    elif dist == "nan_payloads":
        x = torch.where(rand() < 0.05, _nan_with_payload(gen, shape), randn())
    elif dist == "signed_zero":
        x = torch.where(rand() < 0.5, torch.tensor(0.0, device=d), torch.tensor(-0.0, device=d))
        x = x.masked_fill_(rand() < 0.02, -1.0)
    elif dist == "denormal":
        mant = torch.randint(1, 64, shape, generator=gen, dtype=torch.int32, device=d)
        sign = torch.randint(0, 2, shape, generator=gen, dtype=torch.int32, device=d) << 31
        x = (mant | sign).view(torch.float32)
    elif dist == "all_neginf":
        x = torch.full(shape, float("-inf"), device=d)
    elif dist == "all_nan":
        x = _nan_with_payload(gen, shape)
    elif dist == "specials":
        pool = torch.tensor(
            [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-45, -1e-45, 3.4028235e38, -3.4028235e38,
             1.0, -1.0],
            device=d,
        )
        x = pool[torch.randint(0, len(pool), shape, generator=gen, device=d)]
    elif dist == "few_values":  # heavy ties across the k boundary
        x = torch.randint(0, 4, shape, generator=gen, device=d).to(torch.float32)
    elif dist == "shifted_narrow":
        x = randn() * 1e-3 + 1000.0
    elif dist == "three":
        x = torch.randint(0, 3, shape, generator=gen, device=d).to(torch.float32) - 1.0
    elif dist == "band":
        x = torch.where(rand() < 1e-3, 10.0 + randn(), 0.5 + 1e-6 * rand())
    else:
        raise ValueError(f"dist must be one of {DISTS + SPECIAL_DISTS + LONGROW_DISTS}, got {dist!r}")
    return x if device is None else x.to(device)


assert len(MATRIX_BY_NAME) == len(MATRIX), "case names must be unique"


def make_inputs(case: Case, *, seed: int, device="cpu") -> dict:
    """Tensors for ``case`` (already sized): scores/logits, lengths/ends, starts."""
    gen = torch.Generator().manual_seed(seed)  # small tensors (bounds): CPU
    xgen = torch.Generator(device=device).manual_seed(seed)  # the scores/logits: on their device
    rows, width = case.rows, case.width
    groups = rows // case.row_repeat
    x = fill(case.dist, rows, width, gen=xgen)
    ctx = width if case.context is None else min(case.context, width)
    if case.ends in ("ctx", "full"):
        ends = torch.full((groups,), ctx if case.ends == "ctx" else width, dtype=torch.int64)
    elif case.ends == "ragged":
        ends = torch.randint(0, ctx + 1, (groups,), generator=gen)
        ends[0] = ctx  # the longest row sets the work
    elif case.ends == "some_zero":
        ends = torch.randint(0, ctx + 1, (groups,), generator=gen)
        ends[torch.rand(groups, generator=gen) < 0.3] = 0
    elif case.ends == "zero":
        ends = torch.zeros(groups, dtype=torch.int64)
    elif case.ends == "past_width":
        ends = torch.randint(width, 2 * width, (groups,), generator=gen)
    else:
        raise ValueError(f"unknown ends kind {case.ends!r}")
    starts = None
    if case.starts:
        starts = (torch.rand(groups, generator=gen) * ends.clamp(max=width).to(torch.float32) * 0.5).to(torch.int64)
    if case.garbage_tail:  # NaN/+inf past every row's end: must be ignored
        col = torch.arange(width)
        g = torch.arange(rows) // case.row_repeat
        tail = col[None, :] >= ends[g][:, None]
        tail = tail.to(x.device)
        coin = torch.rand(rows, width, generator=xgen, device=x.device)
        garbage = torch.where(coin < 0.5, float("nan"), float("inf"))
        x = torch.where(tail, garbage, x)
    out = {"x": x.to(device), "ends": ends.to(torch.int32).to(device)}
    out["starts"] = None if starts is None else starts.to(torch.int32).to(device)
    return out


@dataclasses.dataclass(frozen=True)
class DecodePoint:
    context: int
    concurrency: int
    next_n: int
    max_model_len: int = MML
    block_size: int = 8

    @property
    def rows(self) -> int:
        return self.concurrency * self.next_n

    @property
    def nblocks(self) -> int:
        return math.ceil(self.max_model_len / self.block_size)

    @property
    def live_blocks(self) -> int:
        return math.ceil(min(self.context, self.max_model_len) / self.block_size)


CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128)
NEXT_N = (1, 2, 3, 4, 5)
CONTEXTS = (4096, 16384, 65536, 262144)
DECODE_SWEEP = tuple(DecodePoint(c, b, n) for c in CONTEXTS for b in CONCURRENCY for n in NEXT_N)
