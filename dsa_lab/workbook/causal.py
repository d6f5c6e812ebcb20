"""Causal bounds (notebook 05): the decode row ends in both layouts, and experiments showing that the producer
writes, and the consumer reads, exactly each row's window.

Each experiment fills its outputs with a poison first (a NaN with a payload, a huge finite value) and returns a
dict of counts and booleans, deterministic for a seed.
"""
from __future__ import annotations

import torch

POISON_NAN_BITS = 0x7FBADBAD  # a signalling NaN with a payload
POISON_BIG_BITS = 0x7F7FBEEF  # a huge finite value (~3.39e38): would win any top-k if it were read


def decode_bounds_table(context_lens, next_n: int) -> list[dict]:
    """Per row ``(b, n)``: the causal end from the ``(B,)`` layout and from the ``(B, next_n)`` layout
    describing the same bounds (:func:`dsa_lab.decode_row_ends` on both)."""
    from ..paged import context_lens_2d
    from ..producer import decode_row_ends

    ctx = torch.as_tensor(list(context_lens), dtype=torch.int32)
    e1 = decode_row_ends(ctx, next_n).tolist()
    c2 = context_lens_2d(ctx, next_n)
    e2 = decode_row_ends(c2, next_n).tolist()
    out = []
    for b, c in enumerate(ctx.tolist()):
        for n in range(next_n):
            r = b * next_n + n
            out.append({"row": r, "b": b, "n": n, "ctx[b]": c, "end (B,): ctx-next_n+n+1": e1[r],
                        "ctx2d[b, n]": int(c2[b, n]), "end (B, next_n)": e2[r], "same": e1[r] == e2[r]})
    return out


def _poison(rows: int, width: int, device) -> torch.Tensor:
    bits = torch.full((rows, width), POISON_NAN_BITS, dtype=torch.int64)
    bits[:, 1::2] = POISON_BIG_BITS
    return bits.to(torch.int32).view(torch.float32).to(device)


def poisoned_tail_experiment(batch: int = 2, next_n: int = 3, context_lens=(37, 150), *, max_model_len: int = 256,
                             num_heads: int = 32, head_dim: int = 128, block_kv: int = 16, block_size: int = 8,
                             topk_blocks: int = 4, layout: str = "2d", impl: str = "auto", device=None,
                             seed: int = 0) -> dict:
    """The producer writes exactly each row's window, so the consumer needs no ``-inf`` prefill.

    1. Fill the logits workspace with a poison (NaN with a payload / a huge finite value, alternating).
    2. :func:`dsa_lab.paged_mqa_logits` (arm ``impl``) into it.  Check: every in-window column matches
       the torch reference (error bounded as in :func:`dsa_lab.bench.verify.logits_error`), every column at
       or past a row's end still holds the poison bit for bit.
    3. Select candidate blocks over the poisoned workspace, bounded by the same row ends, and over a
       ``-inf``-prefilled one: the selected sets must be identical (and equal the exact reference).
    4. Counter-experiment: select over the poisoned workspace *without* bounds (ends = width):
       poison wins, which is what the bound prevents.
    5. Bounded vs full-width sanitize: same in-window result; the bounded one leaves the tail untouched.

    Returns a dict of counts and booleans (deterministic for a seed).
    """
    from .. import producer
    from ..bench.verify import logits_error
    from ..paged import random_decode_problem
    from ..select import select_candidate_blocks

    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    # generated on the CPU (the same numbers on every machine), then moved to the device
    p = random_decode_problem(batch, next_n, list(context_lens), num_heads=num_heads, head_dim=head_dim,
                              block_kv=block_kv, max_model_len=max_model_len, layout=layout, device="cpu", seed=seed)
    p = {k: v.to(dev) if isinstance(v, torch.Tensor) else v for k, v in p.items()}
    args = (p["q_fp8"], p["kv_cache"], p["weights"], p["context_lens"], p["block_table"])
    rows = batch * next_n
    ends = producer.decode_row_ends(p["context_lens"], next_n)
    col = torch.arange(max_model_len, device=dev)
    win = col[None, :] < ends.to(torch.int64).clamp(max=max_model_len)[:, None]

    poisoned = _poison(rows, max_model_len, dev)
    poison_bits = poisoned.view(torch.int32).clone()
    producer.paged_mqa_logits(*args, max_model_len, impl=impl, out=poisoned)
    ref = producer.paged_mqa_logits(*args, max_model_len, impl="reference")
    bounded_err, _ = logits_error(*args, poisoned, ref)
    tail_bits_kept = bool(torch.equal(poisoned.view(torch.int32)[~win], poison_bits[~win]))

    prefilled = torch.full((rows, max_model_len), float("-inf"), device=dev)
    producer.paged_mqa_logits(*args, max_model_len, impl=impl, out=prefilled)
    window_same = bool(torch.equal(poisoned[win], prefilled[win]))

    kw = dict(block_size=block_size)
    s_poison = select_candidate_blocks(poisoned, ends, topk_blocks, impl=impl, **kw)
    s_prefill = select_candidate_blocks(prefilled, ends, topk_blocks, impl=impl, **kw)
    s_ref = select_candidate_blocks(prefilled.cpu(), ends.cpu(), topk_blocks, impl="reference", **kw)
    srt = lambda t: torch.sort(t.cpu(), dim=1).values  # noqa: E731
    full_ends = torch.full_like(ends, max_model_len)
    s_unbounded = select_candidate_blocks(poisoned, full_ends, topk_blocks,
                                          impl="reference" if dev.type == "cpu" else impl, **kw)
    live_blocks = (-(-ends.to(torch.int64) // block_size)).cpu()
    past = (s_unbounded.cpu().to(torch.int64) >= live_blocks[:, None]).any(dim=1)

    # sanitize: inject NaNs inside the window, then bounded vs full-width
    noisy = poisoned.clone()
    inj = win & (col[None, :] % 5 == 2)
    noisy[inj] = float("nan")
    a, b = noisy.clone(), noisy.clone()
    producer.sanitize_decode_logits(a, ends, impl=impl)
    producer.sanitize_decode_logits_full(b)
    return {
        "rows": rows,
        "layout": layout,
        "row_ends": ends.cpu().tolist(),
        "max_model_len": max_model_len,
        "in_window_columns": int(win.sum()),
        "tail_columns": int((~win).sum()),
        "window_matches_reference (bounded error <= 1e-3)": bounded_err <= 1e-3,
        "tail_poison_kept_bit_for_bit": tail_bits_kept,
        "window_same_as_prefilled_run": window_same,
        "selection_poisoned == selection_prefilled": bool(torch.equal(srt(s_poison), srt(s_prefill))),
        "selection == exact reference": bool(torch.equal(srt(s_poison), srt(s_ref))),
        "rows_picking_poison_without_bounds": int(past.sum()),
        "sanitize_bounded == full in window": bool(torch.equal(a[win], b[win])),
        "sanitize_bounded_tail_untouched": bool(torch.equal(a.view(torch.int32)[~win], noisy.view(torch.int32)[~win])),
        "sanitize_full_changed_tail_columns": int((b.view(torch.int32)[~win] != noisy.view(torch.int32)[~win]).sum()),
        "selected_blocks": srt(s_poison).tolist(),
    }


def fused_step_experiment(batch: int = 2, next_n: int = 3, context_lens=(37, 150), *, max_model_len: int = 256,
                          num_heads: int = 32, head_dim: int = 128, block_kv: int = 16, block_size: int = 8,
                          topk_blocks: int = 4, layout: str = "2d", impl: str = "auto", device=None,
                          seed: int = 0) -> dict:
    """The producer hands the consumer exactly what it reads: sanitized logits and block scores from one pass.

    NaN key bytes and an ``inf`` scale are planted in the cache; then, into poisoned outputs,
    :func:`dsa_lab.paged_mqa_logits` with ``sanitize=True, block_scores_out=...`` (arm ``impl``).  Checks: the
    stored logits are bit for bit the plain producer's after :func:`dsa_lab.sanitize_decode_logits`; every block
    that starts in a row's window is bit for bit :func:`dsa_lab.block_scores` of them; the logits past each end and
    the blocks at or past it keep their poison; and the fused :class:`dsa_lab.bench.step.DecodeStep` (producer +
    scores, then the select) picks the staged step's blocks and flags.  Returns a dict of counts and booleans.
    """
    from .. import producer
    from ..bench.step import decode_step
    from ..paged import random_decode_problem, split_cache
    from ..scores import block_scores

    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    p = random_decode_problem(batch, next_n, list(context_lens), num_heads=num_heads, head_dim=head_dim,
                              block_kv=block_kv, max_model_len=max_model_len, layout=layout, device="cpu", seed=seed)
    keys, scales = split_cache(p["kv_cache"], head_dim)
    table = p["block_table"]
    t = context_lens[0] // 2  # sequence 0: a NaN key and an inf scale in its window
    keys[int(table[0, t // block_kv]), t % block_kv, :] = 0x7F
    scales[int(table[0, (t + 1) // block_kv]), (t + 1) % block_kv] = float("inf")
    p = {k: v.to(dev) if isinstance(v, torch.Tensor) else v for k, v in p.items()}
    args = (p["q_fp8"], p["kv_cache"], p["weights"], p["context_lens"], p["block_table"], max_model_len)
    rows, nb = batch * next_n, -(-max_model_len // block_size)
    ends = producer.decode_row_ends(p["context_lens"], next_n)
    win = torch.arange(max_model_len, device=dev)[None, :] < ends.to(torch.int64)[:, None]
    live = torch.arange(nb, device=dev)[None, :] * block_size < ends.to(torch.int64)[:, None]

    logits, scores = _poison(rows, max_model_len, dev), _poison(rows, nb, dev)
    lbits, sbits = logits.view(torch.int32).clone(), scores.view(torch.int32).clone()
    producer.paged_mqa_logits(*args, impl=impl, out=logits, sanitize=True, block_scores_out=scores,
                              block_size=block_size)
    plain = producer.paged_mqa_logits(*args, impl=impl)
    planted = int(plain[win].isnan().sum() + plain[win].isinf().sum())
    producer.sanitize_decode_logits(plain, ends, impl=impl)
    want = block_scores(logits, ends, block_size=block_size, impl=impl)
    bits = lambda x: x.view(torch.int32)  # noqa: E731
    kw = dict(topk_blocks=topk_blocks, block_size=block_size, impl=impl)
    fused = decode_step(*args, **kw)
    staged = decode_step(*args, compose="staged", **kw)
    srt = lambda x: torch.sort(x.cpu(), dim=1).values  # noqa: E731
    return {
        "rows": rows,
        "in_window_columns": int(win.sum()),
        "blocks_starting_in_a_window": int(live.sum()),
        "NaN / inf logits planted in the windows": planted,
        "logits == sanitize(plain producer), bit for bit": bool(torch.equal(bits(logits)[win], bits(plain)[win])),
        "logits past each end: poison kept": bool(torch.equal(bits(logits)[~win], lbits[~win])),
        "scores == block_scores(logits), bit for bit": bool(torch.equal(bits(scores)[live], bits(want)[live])),
        "blocks at or past each end: poison kept": bool(torch.equal(bits(scores)[~live], sbits[~live])),
        "fused step blocks == staged step blocks": bool(torch.equal(srt(fused.candidates), srt(staged.candidates))),
        "fused step flags == staged step flags": bool(torch.equal(fused.flags.cpu(), staged.flags.cpu())),
        "fused step launches (Triton)": list(fused.stages()),
    }
