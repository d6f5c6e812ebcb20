"""The sweep's arms: one callable per arm and stage, the upstream path each is measured against, and the checks.

The ``torch`` arms are the upstream composition (``torch.topk`` + one store launch, padded block scores); the
``triton`` arms call the package.  Library imports stay inside the functions: ``TRITON_INTERPRET`` must be set
before a kernel module is imported.
"""
from __future__ import annotations

import torch

from .plan import BLOCK_SIZE, Point, on_gpu


def _flags_fn():
    """(name, fn(ids, width, block_size=8) -> flags): the package's Triton flags where Triton runs (a GPU or the
    interpreter), else its torch flags."""
    from ...flags import candidate_flags

    impl = "triton" if on_gpu() or _interp() else "torch"
    return impl, lambda ids, width, block_size=BLOCK_SIZE: candidate_flags(ids, width, block_size=block_size,
                                                                          impl=impl)


def _interp() -> bool:
    from ..._impl import interpreter_active

    return interpreter_active()


def padded_scores(logits, ends, block_size: int = BLOCK_SIZE):
    """Block scores as the upstream kernel computes them (its reads follow the padded width): the torch arms."""
    from ...scores import block_scores

    if on_gpu() or _interp():
        from ...launch.scores import block_scores as block_scores_triton

        return block_scores_triton(logits, ends, None, block_size, 1, padded=True)
    return block_scores(logits, ends, block_size=block_size, impl="torch")


def torch_topk_store(scores: torch.Tensor, k: int) -> torch.Tensor:
    """The upstream before-path: ``torch.topk`` over ``scores`` (whatever width it has) + one store launch.

    Falls back to :func:`dsa_lab.select.topk_select_torch` (a few elementwise torch ops) where Triton
    cannot run (CPU without the interpreter).
    """
    rows, n = scores.shape
    if not (on_gpu() or _interp()):
        from ...select import topk_select_torch

        return topk_select_torch(scores, k)
    from .store_kernel import store_candidates  # imported on first use: TRITON_INTERPRET is read then

    kk = min(k, n)
    vals, idx = torch.topk(scores, kk, dim=1)
    out = torch.empty((rows, k), dtype=torch.int32, device=scores.device)
    kp = 1 << max(int(k) - 1, 1).bit_length()
    store_candidates[(rows,)](vals, idx, out, kk, k, KP=kp)
    return out


def select_arm_fn(arm: str, inp: dict, k: int):
    """fn() -> ids for one arm of the select stage, over :func:`select_stage_inputs`' ``inp``."""
    from ...select import topk_select

    sc, lengths = inp["scores"], inp["lengths"]
    if arm == "torch":
        return lambda: torch_topk_store(sc, k)
    if arm == "torch_live":
        lmax = max(max(inp["live"]), 1)
        sl = sc[:, :lmax]
        return lambda: torch_topk_store(sl, k)
    if arm == "triton":
        out = torch.empty((sc.shape[0], k), dtype=torch.int32, device=sc.device)
        return lambda: topk_select(sc, k, lengths=lengths, impl="triton", out=out)
    raise ValueError(arm)


def full_arm_fn(arm: str, inp: dict, k: int, flags_fn):
    """fn() -> (ids, flags) for one arm of the full stage."""
    from ...select import select_candidate_blocks

    x, ends = inp["logits"], inp["ends"]
    width = x.shape[1]
    if arm == "torch":
        def fn():
            ids = torch_topk_store(padded_scores(x, ends), k)
            return ids, flags_fn(ids, width)
        return fn
    if arm == "torch_live":
        emax = max(max(inp["ends_list"]), 1)
        sl = x[:, :emax]

        def fn():
            ids = torch_topk_store(padded_scores(sl, ends), k)
            return ids, flags_fn(ids, width)
        return fn
    out = torch.empty((x.shape[0], k), dtype=torch.int32, device=x.device)
    if arm in ("triton", "triton_unfused", "triton_fused"):
        # ids + flags in one call: the hier kernel writes the flags itself (no memset, no flags launch), the radix
        # path (and the fused kernel beyond 2 x SM rows) runs the flags kernel
        def fn():
            return select_candidate_blocks(x, ends, k, block_size=BLOCK_SIZE, impl=arm, out=out, with_flags=True)
        return fn
    raise ValueError(arm)


def reference_ids(p: Point, inp: dict) -> torch.Tensor:
    """The exact contract (for checks without a GPU, where torch.topk's tie order is not the contract's)."""
    from ...select import select_candidate_blocks, topk_select

    if p.stage == "select":
        return topk_select(inp["scores"], p.k, lengths=inp["lengths"], impl="reference")
    return select_candidate_blocks(inp["logits"], inp["ends"], p.k, block_size=p.block_size or BLOCK_SIZE,
                                   impl="reference")


def mismatched_rows(got: torch.Tensor, ref: torch.Tensor) -> int:
    """Rows whose ids differ as sets (every slot compared): :func:`dsa_lab.bench.verify.compare`."""
    from ..verify import compare

    return compare(got, ref)[0]

