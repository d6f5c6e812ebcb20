"""The decode indexer step on fixed inputs, staged for timing: :class:`DecodeStep`.

The product's decode step is two launches (:func:`dsa_lab.paged_mqa_logits` with ``sanitize`` and
``block_scores_out``, then the select on those scores); this harness holds its inputs and intermediates and
exposes each stage as a callable, so the sweep and the notebooks time the whole step or one stage.
"""
from __future__ import annotations

import torch

from .. import _checks, _impl
from ..flags import candidate_flags
from ..launch import producer as launch_producer
from ..launch import select as launch_select
from ..launch.scores import scores_buffer
from ..producer import (
    PRODUCER_IMPLS,
    _check_producer_args,
    decode_row_ends,
    paged_mqa_logits,
    sanitize_decode_logits,
    sanitize_decode_logits_full,
)
from ..scores import block_scores
from ..select import select_candidate_blocks, topk_select

__all__ = ["DecodeStep", "decode_step"]


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
            self.scores = scores_buffer(  # rows 16 blocks apart: the select's loads stay aligned
                self.rows, self.nblocks, dev)
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
            # the select's kept buffer first: in a capture its one zeroing then precedes the producer, not the
            # select launched as the producer's programmatic dependent (the select takes the same buffer)
            launch_select.select_sync(self.rows, self.nblocks, self.topk_blocks, self.logits.device,
                                      block_size=self.block_size)
            launch_producer.paged_mqa_logits(*args, self.logits, sanitize=True, scores_out=self.scores,
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
        if self.compose == "fused":
            if self._triton(self.select_impl):
                if not self._triton(self.impl):  # the torch producer did not zero them
                    self.flags.zero_()
                launch_select.candidate_blocks(self.logits, self.row_ends, self.topk_blocks, None, self.block_size, 1,
                                               self.candidates, with_flags=True, flags_out=self.flags,
                                               scores=self.scores)
                return
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
        self._keep("scores", block_scores(self.logits, self.row_ends, block_size=self.block_size,
                                          impl=self._scores_impl()))

    def stage_topk_select(self):
        topk_select(self.scores, self.topk_blocks, lengths=self.live_blocks, impl=self.select_impl, out=self.topk)

    def stage_flags(self):
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
