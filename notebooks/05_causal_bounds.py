# %% [markdown]
# # 05 · Causal bounds: producer and consumer agree on each row's window
#
# In decode, row `(b, n)` of the `B · next_n` rows may read logits columns `< end(b, n)`. The producer
# (`paged_mqa_logits`) writes exactly those columns and nothing past them; the consumer
# (`select_candidate_blocks` with the same ends) reads exactly those. So the `-inf` prefill of the workspace's
# tail that the upstream path does is unnecessary, and so is a sanitize over the padded width.

# %%
# NBVAL_IGNORE_OUTPUT
import torch

import dsa_lab
from dsa_lab import _env

_env.interpret_without_gpu()  # no GPU: the kernels run in the Triton interpreter (before any kernel is imported)

from dsa_lab.workbook import backend, causal, figures, records, tables

figures.setup("none")
print(backend.backend_banner())

# %% [markdown]
# ## Two layouts of the bounds
#
# `context_lens` of shape `(B,)` gives `end = ctx[b] - next_n + n + 1` (the last of the `next_n` speculative rows
# sees the whole sequence); shape `(B, next_n)` gives `end = ctx[b, n]` directly (vLLM's precomputed layout; the
# seed's kernel reshaped it to `(B,)` and raised for `next_n > 1`). `dsa_lab.decode_row_ends` accepts both; where
# they describe the same bounds they give the same ends:

# %%
print(tables.format_table(causal.decode_bounds_table([37, 150, 4], 3)))

# %% [markdown]
# ## The poisoned-tail experiment
#
# Fill the workspace with poison (a NaN with a payload, and a huge finite value that would win any top-k),
# run the producer into it, and check that (1) every in-window column matches the reference, (2) every column past
# a row's end still holds the poison **bit for bit**, (3) candidate selection over the poisoned workspace, bounded
# by the same ends, equals selection over a `-inf`-prefilled one and the exact reference. The counter-experiment
# selects without bounds: the poison wins in every row — the bound is what makes skipping the prefill safe.
# Tiny shapes (2 sequences × next_n 3, H = 32, D = 128, a 256-column workspace), both bound layouts; the arm is the
# Triton kernel (a GPU, or the interpreter here).

# %%
for layout in ("1d", "2d"):
    res = causal.poisoned_tail_experiment(layout=layout)
    print(f"context_lens layout {layout}:")
    for k, v in res.items():
        if k not in ("layout", "selected_blocks"):
            print(f"  {k:50s} {v}")
print("selected blocks (sorted):", res["selected_blocks"])

# %% [markdown]
# ## Bounded vs full-width sanitize
#
# `sanitize_decode_logits(logits, row_ends)` applies `nan_to_num(nan=-inf)` to each row's window only;
# `sanitize_decode_logits_full` is the comparison arm over the padded width. Same in-window result (above); the
# bounded one touches `sum(ends)` columns instead of `rows × 262144`, so its cost follows the context. Measured:

# %%
# NBVAL_IGNORE_OUTPUT
producer_rec = records.load_records("producer_sweep")
step = records.load_records("step_breakdown")
print(records.record_status(producer_rec))
print(tables.format_table(tables.sanitize_rows(producer_rec[0])) if producer_rec[0] else "")

# %% [markdown]
# ## The producer on the roofline
#
# **Claim.** The producer reads each cached key once for all `next_n` rows and heads of its sequence, so its bytes do
# not grow with `next_n` but its fp8 MMA work does (`2 · next_n · H · D` flops per 132-byte key). From about
# `next_n = 3` the work per byte passes the card's balance point, and the right ceiling is the roofline
# `max(bytes / stream bandwidth, flops / fp8 MMA peak)`, both measured in the run that timed the producer (the peak:
# the best of `torch._scaled_mm` and a Triton fp8 GEMM on large matrices).
#
# **Evidence.** Every recorded producer point, as achieved Tflop/s against flops per byte, under that roofline; then
# the 128K × concurrency 128 points per `next_n`, with the fraction of each ceiling:

# %%
# NBVAL_IGNORE_OUTPUT
figures.producer_roofline_figure(*producer_rec)

# %%
# NBVAL_IGNORE_OUTPUT
print(tables.format_table(tables.producer_roofline_rows(producer_rec[0], producer_rec[1])) if producer_rec[0]
      else "NO RECORD")

# %% [markdown]
# **Consequence.** At `next_n = 1` the producer is a streaming kernel and sits near the bandwidth ceiling. At 3 and 5
# it is bound by the MMAs and runs well below the fp8 peak: its MMAs and its epilogue (the head-weighted ReLU
# reduction) do not overlap. That gap, not the bounds, is what is left in the producer (`notes/producer.md`).

# %% [markdown]
# ## The decode indexer step, stage by stage
#
# Recorded on the H200 (`DecodeStep`: row ends → logits → sanitize → candidates → flags) across concurrency ×
# next_n × context, per-stage medians.

# %%
# NBVAL_IGNORE_OUTPUT
figures.step_breakdown_figure(*step, next_n=1)

# %%
# NBVAL_IGNORE_OUTPUT
figures.step_breakdown_figure(*step, next_n=5)

# %% [markdown]
# ## The producer hands the consumer what it reads
#
# **Claim.** The bound argument goes one step further. The producer holds every logit of a tile in registers, and it
# knows each row's window, so it can also do what the next two passes of that step do. It stores the logits already
# sanitized, and it writes each row's block scores over the window: the NaN-propagating max of each 8-column block,
# with the newest block pinned to `+inf`. Those scores are an eighth of the logits' bytes. The select then reads only
# the scores. Nothing in the step reads the logits back. The token-level top-k after the candidate mask still reads
# them, later. This is `paged_mqa_logits(..., sanitize=True, block_scores_out=...)`, and the default
# `DecodeStep(compose="fused")` is built on it.
#
# **Evidence (exact).** NaN key bytes and an `inf` scale are planted in the cache, and both outputs start as poison.
# The stored logits are bit for bit the plain producer's after `sanitize_decode_logits`. Every block that starts
# inside a window is bit for bit `block_scores` of them. Both tails keep their poison. The fused step picks the same
# blocks and flags as the staged one. The run below uses the Triton kernel: a GPU, or the interpreter here.

# %%
for layout in ("1d", "2d"):
    res = causal.fused_step_experiment(layout=layout)
    print(f"context_lens layout {layout}:")
    for k, v in res.items():
        print(f"  {k:50s} {v}")

# %% [markdown]
# **Live, at a real context.** On a GPU both experiments run again with the producer at a 128K-token context
# (two sequences of 131072 and 98304 tokens, `next_n = 3`, 64 heads, 64-token cache pages, k = 64 blocks of 8);
# without one, at the tiny shapes above. The line after the table must hold on either.

# %%
# NBVAL_IGNORE_OUTPUT
from dsa_lab.workbook import live

prod = live.producer_check()
print("shape:", prod["shape"], f"({prod['seconds']} s)")
for part in ("poisoned_tail", "fused_step"):
    print(part + ":")
    for k, v in prod[part].items():
        print(f"  {k:50s} {v}")

# %%
print("every check of both experiments holds at this shape:", prod["holds"])

# %% [markdown]
# **Evidence (time).** The same step is recorded on the H200 in three compositions, in one process: fused, staged
# (producer, bounded sanitize, scores + select, flags) and the upstream one. The black marker is the producer alone.

# %%
# NBVAL_IGNORE_OUTPUT
figures.fused_step_figure(*step, next_n=1)

# %%
# NBVAL_IGNORE_OUTPUT
figures.fused_step_figure(*step, next_n=5)

# %%
# NBVAL_IGNORE_OUTPUT
print(tables.fused_step_summary(step[0]) if step[0] else "NO RECORD")
print(tables.format_table(tables.fused_step_rows(step[0])) if step[0] else "")

# %% [markdown]
# **Consequence.** With the block scores written by the producer, the step costs little more than the producer
# alone, and it is faster than the staged step at almost every recorded point (the summary above names the
# exception). How the epilogue is written matters. From `next_n = 3` the producer is bound by its MMA → epilogue
# chain. A first version (`r+f` below) stored the scores through a second layout conversion per row, and it cost
# far more there than the current one (`fused`), which stores them from the tile's own layout. The A/B below was
# run in one process at 128K × concurrency 128 (`cur` is the plain producer). Past this point the step *is* the
# producer, and what is left is the producer's own schedule: at `next_n = 5` it runs at about half of the measured
# fp8 MMA roof (the roofline above; `notes/producer.md`).

# %%
# NBVAL_IGNORE_OUTPUT
ab = records.load_records("tune_dev/producer_ab_epilogue")
print(records.record_status(ab))
if ab[0]:
    print(tables.format_table([{k: r[k] for k in ("arm", "next_n", "median_us", "tflops", "check")} for r in ab[0]
                               if r["arm"] in ("cur", "fused", "r+f")]))

# %% [markdown]
# ## Its share of inter-token latency
#
# A simple model: the indexer step runs once per layer per decode step, so its share of an inter-token latency
# `ITL` is `layers × step / ITL`. The seed measured ITL = 14.6 ms on its serving run (and a ~45 µs saving); the
# RFC it cites measured the whole indexer at 4–11% of the step. Per recorded shape: the measured whole step of one
# layer for the upstream composition (`torch`) and this package's default step (`fused`), the saving per decode
# step over 61 layers (DeepSeek-V3-class), and each one's share of a 14.6 ms ITL. The model ignores overlap with
# other work.

# %%
# NBVAL_IGNORE_OUTPUT
print(records.record_status(step))
if step[0]:
    print(tables.format_table(tables.itl_compare_rows(step[0], itl_ms=14.6, layers=61, arm="fused")))
