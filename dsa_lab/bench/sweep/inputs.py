"""The sweep's inputs: value laws and the decode bounds, as upstream hands them to each stage."""
from __future__ import annotations

import torch

from ..shapes import fill
from .plan import BLOCK_SIZE, Point


def make_values(dist: str, rows: int, n: int, gen: torch.Generator, device) -> torch.Tensor:
    """float32 ``[rows, n]`` of ``dist``: :func:`dsa_lab.shapes.fill`, generated on ``gen``'s device."""
    return fill(dist, rows, n, gen=gen, device=device)


def decode_ends(context: int, concurrency: int, next_n: int) -> list[int]:
    """Per-row causal ends (the ``(B,)`` layout of :mod:`dsa_lab.producer`): ``ctx - next_n + n + 1``."""
    return [max(context - next_n + n + 1, 0) for _ in range(concurrency) for n in range(next_n)]


def _gen(seed: int, device) -> torch.Generator:
    return torch.Generator(device=device).manual_seed(seed)


def select_stage_inputs(p: Point, mml: int, seed: int, device) -> dict:
    """The select stage's input at ``p``: block scores over the padded width (``scores``: live blocks hold
    ``p.dist``, the newest block ``+inf``, the rest ``-inf``), ``lengths`` / ``live`` (live blocks per row) and
    ``nblocks``."""
    nb = -(-mml // BLOCK_SIZE)
    ends = decode_ends(p.context, p.concurrency, p.next_n)
    live = [min(-(-e // BLOCK_SIZE), nb) for e in ends]
    g = _gen(seed, device)
    sc = make_values(p.dist, p.rows, nb, g, device)
    col = torch.arange(nb, device=device)
    L = torch.tensor(live, dtype=torch.int64, device=device)
    sc.masked_fill_(col[None, :] >= L[:, None], float("-inf"))
    has = L > 0
    sc[torch.arange(p.rows, device=device)[has], (L - 1)[has]] = float("inf")  # newest block pinned
    return {"scores": sc, "lengths": L.to(torch.int32), "live": live, "nblocks": nb}


def full_stage_inputs(p: Point, mml: int, seed: int, device) -> dict:
    """The full stage's input at ``p``: a ``[rows, mml]`` logits workspace (``logits``: live columns hold ``p.dist``,
    the tail NaN), the row ends as a tensor (``ends``) and a list (``ends_list``)."""
    ends = decode_ends(p.context, p.concurrency, p.next_n)
    g = _gen(seed, device)
    x = make_values(p.dist, p.rows, mml, g, device)
    col = torch.arange(mml, device=device)
    E = torch.tensor(ends, dtype=torch.int64, device=device)
    x.masked_fill_(col[None, :] >= E[:, None], float("nan"))  # poison past each row's end
    return {"logits": x, "ends": E.to(torch.int32), "ends_list": ends}


