# %% [markdown]
# # 01 · Key packing: from float bits to one int64
#
# The selection kernel ranks columns by **one integer compare**: each score and its column are packed into a
# signed int64 key such that `key_a > key_b` exactly when column a ranks before column b in the contract
# (docs/design.md §2): higher `ordered(score)` first, NaN above `+inf`, `-0.0` below `+0.0`, ties to the smaller index.
# A single top-k over keys then yields both the winners and their indices, with no separate pass.
#
# ```
#  bit 63 ............ 32 | 31 ............ 0
#  hi = ordered(x) - 2^31 | lo = 0xFFFFFFFF - index
# ```

# %%
# NBVAL_IGNORE_OUTPUT
import torch

import dsa_lab
from dsa_lab import _env

_env.interpret_without_gpu()  # no GPU: the kernels run in the Triton interpreter (before any kernel is imported)

from dsa_lab import keys
from dsa_lab.workbook import backend, figures, proofs, tables, widgets

figures.setup("none")
print(backend.backend_banner())

# %% [markdown]
# ## Step 1 · the float32 bits
#
# A float32 is `sign | exponent (8) | mantissa (23)`. For non-negative floats, the bit pattern read as an
# unsigned integer already grows with the value. For negative floats it grows with the *magnitude*, i.e. in the
# wrong direction, and every negative pattern is above every positive one.

# %%
examples = ["-inf", "-1.0", "-0.0", "0.0", "1e-45", "1.0", "inf", "nan", "0x7F800001", "0xFFFFFFFF"]
cols = ["score", "bits", "sign", "exponent", "mantissa", "class"]
print(tables.format_table([tables.key_fields(s, 0) for s in examples], cols))

# %% [markdown]
# ## Step 2 · the sign transform: `ordered(x)`
#
# `u = bits(x); u ^ 0xFFFFFFFF` if the sign bit is set (flip everything: larger magnitude → smaller), else
# `u ^ 0x80000000` (set the sign bit: positives above all negatives). Every NaN maps to `0xFFFFFFFF`, the top.
# This is the map PyTorch's CUDA radix select uses, so the kernel and `torch.topk` on CUDA rank the same way.

# %%
print(tables.format_table([tables.key_fields(s, 0) for s in examples], ["score", "bits", "sign_transform", "ordered"]))

# %%
# NBVAL_IGNORE_OUTPUT
figures.ordered_map_figure()

# %% [markdown]
# To compare as a **signed** int64, the high word stores `ordered(x) - 2^31` (the same map read as a signed
# int32): the key's sign bit is then the sign of the shifted ordered value, and signed comparison of keys compares
# `ordered(x)` first.
#
# ## Step 3 · the inverted index in the low bits
#
# The low word is `0xFFFFFFFF - index`. For equal scores the smaller index has the larger low word, hence the
# larger key: ties go to the smaller index. The low word is always in `[0, 2^32)`, so it never changes the high
# word's order. Equal scores, four indices:

# %%
rows = [tables.key_fields("0.5", i) for i in (0, 1, 2, keys.MAX_INDEX)]
print(tables.format_table(rows, ["score", "index", "key_hi", "key_lo", "key", "key_signed"]))
ks = [r["key_signed"] for r in rows]
print("keys strictly decreasing with the index (smaller index ranks first):", all(a > b for a, b in zip(ks, ks[1:])))

# %% [markdown]
# ## Step 4 · special values, NaN and padding
#
# The table below is the contract order of every special value, best first, each packed at column 5
# (`rank` 0 is a top-k's first pick). All NaNs (any sign, any payload) share the largest high word `0x7FFFFFFF`
# and tie, so among NaNs the index decides. `-inf` is **padding**: its key is below `keys.CANDIDATE_MIN` and it is
# never selected. `keys.PAD_KEY = INT64_MIN` is what kernels give masked-out lanes (columns past a row's end);
# no float produces it. This table is compared strictly by nbval: a change of the key layout fails CI here
# (`tests/test_workbook.py::test_nbval_catches_changed_key_layout` runs nbval on this notebook against a copy of the
# package whose `pack_keys` no longer inverts the index, and expects the failure).

# %%
table = proofs.special_key_table(index=5)
print(tables.format_table(table, ["rank", "value", "bits", "ordered", "key", "candidate", "unpacked", "index_back"]))

# %%
print(f"CANDIDATE_MIN = 0x{keys.CANDIDATE_MIN & (2**64 - 1):016X}  (smallest selectable key)")
print(f"PAD_KEY       = 0x{keys.PAD_KEY & (2**64 - 1):016X}  (masked lanes; below every real key)")
print(f"-inf key      = {table[-1]['key']}  candidate: {table[-1]['candidate']}")

# %% [markdown]
# ## Step 5 · index capacity
#
# The low word holds indices `0 .. 2^32 - 1`. One more raises, naming the limit (selection outputs are int32, so
# the selection API separately limits widths to `2^31 - 1` columns).

# %%
print("MAX_INDEX =", keys.MAX_INDEX)
try:
    keys.pack_keys(torch.tensor([1.0]), torch.tensor([keys.MAX_INDEX + 1]))
except ValueError as e:
    print("ValueError:", e)

# %% [markdown]
# ## Try it: every bit field of a key
#
# Type a score (`1.5`, `-0.0`, `nan`, `-inf`, or a bit pattern such as `0x7FC00001`) and an index. The callback is
# `dsa_lab.workbook.tables.key_fields` (tested in `tests/test_tables.py`). Red: the high word (ordered score); blue: the
# low word (inverted index).

# %%
# NBVAL_IGNORE_OUTPUT
widgets.key_widget("-0.0", 5)

# %%
# NBVAL_IGNORE_OUTPUT
figures.key_bits_figure("nan", 5)

# %% [markdown]
# ## Keys at work: one row, top-4
#
# Scores with a NaN, `+inf`, ties, and signed zeros; `lengths = 9` makes the last column (a NaN) dead. The exact
# reference is a sort of packed keys; the Triton arm (a GPU, or the interpreter here) must pick the same set.

# %%
row = torch.tensor([[0.0, -0.0, float("nan"), 2.0, float("inf"), 2.0, -float("inf"), float("nan"), 0.0, float("nan")]])
lengths = torch.tensor([9], dtype=torch.int32)  # int32 bounds: the variants `dsa-lab warmup` compiles
ref = dsa_lab.topk_select(row, 4, lengths=lengths, impl="reference")
print("reference top-4 (rank order):", ref.tolist())
dev = backend.backend_info()["device"]
auto = dsa_lab.topk_select(row.to(dev), 4, lengths=lengths.to(dev), impl="auto")
print("auto arm, same set:", sorted(auto.cpu().tolist()[0]) == sorted(ref.tolist()[0]))
print("top-8:", dsa_lab.topk_select(row, 8, lengths=lengths, impl="reference").tolist())
