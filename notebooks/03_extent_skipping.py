# %% [markdown]
# # 03 · Extent skipping: read only what a row can use
#
# The logits workspace is padded to `max_model_len = 262144` tokens, i.e. **32768 blocks** per row with
# `block_size = 8`, however short the context. The upstream path runs `torch.topk` over that padded width, so its
# cost is set by the workspace, not by the context: measured on an H200 (docs/design.md §6), 46–48 µs at 1 row and
# 377–405 µs at 640 rows **whatever the context**. A kernel that reads each row's live length on the device and
# never loads the columns past it skips ≈98% of the work at 4K context.

# %%
# NBVAL_IGNORE_OUTPUT
import torch

import dsa_lab
from dsa_lab import _env

_env.interpret_without_gpu()  # no GPU: the kernels run in the Triton interpreter (before any kernel is imported)

from dsa_lab.workbook import backend, figures, records, tables, widgets

figures.setup("none")
print(backend.backend_banner())

# %% [markdown]
# ## How much of the workspace a row needs

# %%
print(tables.format_table(tables.skip_rows()))

# %%
# NBVAL_IGNORE_OUTPUT
figures.skip_figure()

# %% [markdown]
# ## Columns past the length are never candidates (whatever they hold)
#
# A tiny padded workspace: 3 rows × 64 columns, live lengths 5, 20 and 64. The tail holds garbage that would win
# any top-k if it were read (`+inf`, NaN). The exact reference and the Triton arm (a GPU, or the interpreter here)
# select only live columns; the Triton kernel does not even load the tail.

# %%
g = torch.Generator().manual_seed(1)
x = torch.randn(3, 64, generator=g)
lengths = torch.tensor([5, 20, 64])
for r, L in enumerate(lengths.tolist()):
    x[r, L:] = torch.where(torch.arange(64 - L) % 2 == 0, float("inf"), float("nan"))
ref = dsa_lab.topk_select(x, 8, lengths=lengths, impl="reference")
print("reference (rank order):")
for r in range(3):
    print(f"  row {r} (L={lengths[r].item():2d}):", ref[r].tolist())
dev = backend.backend_info()["device"]
auto = dsa_lab.topk_select(x.to(dev), 8, lengths=lengths.to(dev), impl="auto").cpu()
print("auto arm selects the same sets:", torch.equal(torch.sort(auto, 1).values, torch.sort(ref, 1).values))
print("no id at or past its row's length:", bool(((ref < lengths[:, None]) | (ref == -1)).all()))

# %% [markdown]
# ## Measured: time vs context for each arm
#
# Arms of the recorded sweep (`dsa-lab sweep`, CUDA-graph timing, median with p10–p90 bars):
# `torch` = the upstream path (`torch.topk` over the padded width), `torch_live` = `torch.topk` over a host-known
# live slice (what a user with a host sync would do), `triton` = this package's kernel (lengths read on the
# device). The `torch` line is flat in the context; the `triton` line follows it.

# %%
# NBVAL_IGNORE_OUTPUT
sweep = records.load_records("select_sweep")
print(records.record_status(sweep))
figures.time_vs_context_figure(*sweep, concurrency=1, next_n=1)

# %%
# NBVAL_IGNORE_OUTPUT
figures.time_vs_context_figure(*sweep, concurrency=128, next_n=5)

# %%
# NBVAL_IGNORE_OUTPUT
print("select stage, k=64, normal scores: speedup of triton over torch per context")
print(tables.format_table(tables.speedup_rows(sweep[0])) if sweep[0] else "NO RECORD")
print()
print("... and over torch_live (the host-sync alternative)")
print(tables.format_table(tables.speedup_rows(sweep[0], baseline="torch_live")) if sweep[0] else "NO RECORD")

# %% [markdown]
# ## Try it: context / rows / k
#
# On a GPU the widget runs `topk_select` live (torch, torch on the live slice, triton) on a random
# `[rows, 32768]` workspace with every row's length set by the context. Without a GPU it runs the arms at 1/64
# scale under the interpreter, checks them against the exact reference, and shows the nearest recorded timings —
# the title says which. The callback is `dsa_lab.workbook.widgets.extent_point` (tested).

# %%
# NBVAL_IGNORE_OUTPUT
widgets.extent_widget(records=sweep)
