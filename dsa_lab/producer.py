"""Paged FP8 MQA logits producer, causal bounds and bounded sanitize (issue 5: in progress)."""
from __future__ import annotations


def decode_row_ends(context_lens, next_n):
    raise NotImplementedError("decode_row_ends: producer work in progress")


def paged_mqa_logits(q_fp8, kv_cache, weights, context_lens, block_table, max_model_len, *, impl="auto", out=None):
    raise NotImplementedError("paged_mqa_logits: producer work in progress")


def sanitize_decode_logits(logits, row_ends):
    raise NotImplementedError("sanitize_decode_logits: producer work in progress")
