
# %% [markdown]
# # 00 · Tour: the DSA indexer's decode path, and what each notebook proves
#
# DeepSeek Sparse Attention runs a small **indexer** before attention. Per decode step it scores every cached
# token, groups the scores into blocks, and keeps the top-k candidate blocks of each query row. This workbook is
# about making that selection exact and cheap on a GPU:
#
# * the selection is done by one top-k over **packed int64 keys** (score and column in one integer),
# * each row reads only its **live extent**, not the padded workspace (`max_model_len = 262144`),
# * the producer writes and the consumer reads exactly the **causal window** of each row.
#
# Every function called here lives in the `dsa_lab` package (tested under `tests/`); the notebooks hold narrative
# and calls, no kernels.

# %%
# NBVAL_IGNORE_OUTPUT
# Which backend runs: a CUDA GPU runs the kernels live; without one the Triton interpreter runs them at tiny
# shapes (correct, not a performance measurement) and every timing comes from recorded data in data/.
import torch

import dsa_lab
from dsa_lab import _env

_env.interpret_without_gpu()  # no GPU: the kernels run in the Triton interpreter (before any kernel is imported)

from dsa_lab.workbook import backend, figures, records

figures.setup("none")
print(backend.backend_banner())

# %% [markdown]
# ## The pipeline in one picture
#
# `rows = B * next_n` (concurrency × speculative tokens). The logits workspace is padded to `max_model_len`, so
# with `block_size = 8` every row has 32768 blocks however short its context is. Only the **set** of selected block
# ids matters downstream: order and scores are never read.

# %%
# NBVAL_IGNORE_OUTPUT
figures.pipeline_figure()

# %% [markdown]
# ## The whole step on a toy input
#
# Two rows, a 96-column workspace (12 blocks of 8). Row 0 has 70 live columns, row 1 has 30. Columns past a row's
# end hold garbage (NaN, +inf): they must never be read or selected. The newest block of each row is pinned to
# `+inf` so it is always kept.

# %%
g = torch.Generator().manual_seed(0)
logits = torch.randn(2, 96, generator=g)
row_ends = torch.tensor([70, 30])
logits[0, 70:] = float("nan")  # garbage past the end of row 0
logits[1, 30:] = float("inf")  # garbage past the end of row 1
scores = dsa_lab.block_scores(logits, row_ends, block_size=8, impl="reference")
for r in range(2):
    print(f"row {r} block scores:", [round(v, 3) for v in scores[r].tolist()])

# %%
cand = dsa_lab.select_candidate_blocks(logits, row_ends, 4, block_size=8, impl="reference")
flags = dsa_lab.candidate_flags(cand, 96, block_size=8)
print("candidate blocks (reference, sorted):", torch.sort(cand, dim=1).values.tolist())
print("flags [rows, nblocks + 1]:")
print(flags.tolist())

# %% [markdown]
# The same call with `impl="auto"` runs the Triton kernels (on a GPU, or under the interpreter here) and must
# select exactly the same sets:

# %%
auto = dsa_lab.select_candidate_blocks(logits, row_ends, 4, block_size=8, impl="auto")
print("auto arm selects the same sets as the reference:",
      torch.equal(torch.sort(auto.cpu(), dim=1).values, torch.sort(cand, dim=1).values))

# %% [markdown]
# ## What each notebook shows
#
# | notebook | question | checked by nbval |
# |---|---|---|
# | `01_key_packing` | How does one int64 carry a float32 score and its column so that `>` is the contract order? Bit fields, NaN and padding encodings, index capacity; a widget to inspect any score. | the special-value key table, the capacity error |
# | `02_ordering_proof` | Is signed int64 order of the keys *exactly* the contract order? Checked over all 2^32 float32 patterns (GPU), a structured subset (CPU), and against real `torch.topk` on CUDA. | proof results, selected ids |
# | `03_extent_skipping` | Why does `torch.topk` cost the same at 4K and 256K context, and what does reading only the live extent save? | skip fractions, selected ids |
# | `04_span_capacity_roofline` | One program per row or split rows? Where the curves cross, the rule the kernel uses, the roofline with measured ceilings, the seed's MI355X numbers beside ours. | (recorded data; figures) |
# | `05_causal_bounds` | Producer/consumer windows, `(B,)` vs `(B, next_n)` bounds, the poisoned-tail experiment, bounded sanitize, the producer writing the block scores (the fused step), the step breakdown and its share of ITL. | bound tables, poison and fused-step results |
#
# ## Live vs recorded
#
# * **Live** (a CUDA GPU): the widgets run the kernels on the chosen shapes and time them.
# * **No GPU**: kernels run under the Triton interpreter at tiny shapes (the widgets say so), and measured numbers
#   come from the records in `data/` (each figure names the GPU and the record file).
# * Open live with `jupyter lab notebooks/`; a static HTML copy is built by `dsa-lab workbook` into `build/workbook/`.

# %% [markdown]
# ## Live: the select at real shapes
#
# On a GPU this cell runs `topk_select` (`impl="auto"`) at 262144-column rows, 1, 32 and 640 of them, at k = 64 and
# 2048, each row's length drawn between half and all of the width, and checks it against the exact reference: fresh
# random rows each run, the output poisoned before the kernel writes it, every slot compared. Without a GPU the same
# check runs at 1024 columns under the interpreter. Times are CUDA events around eager calls (launch and input checks
# included: a quick look; the measurements are the records in `data/`).

# %%
# NBVAL_IGNORE_OUTPUT
from dsa_lab.workbook import live, tables

checks = live.select_check()
print(tables.format_table(checks))

# %%
print(live.select_summary(checks))

# %%
# NBVAL_IGNORE_OUTPUT
# Records present in data/ (each figure names the one it uses).
for p in sorted(records.data_dir().glob("*/*")):
    if p.suffix in (".csv", ".json"):
        print(p.relative_to(records.data_dir().parent))
