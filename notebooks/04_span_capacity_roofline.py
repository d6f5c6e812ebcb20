# %% [markdown]
# # 04 · Span, capacity and the roofline
#
# Decode has 1–640 rows (concurrency × next_n), usually fewer than the GPU's multiprocessors (132 on an H200).
# One program per row leaves most of the GPU idle at low concurrency and makes a long row a serial scan; splitting
# a row across programs fills the GPU but adds a **merge** — and the merge, not the scan, is what a long single
# row pays for (docs/design.md §6: a plain split-and-merge over 32768 blocks costs 14 µs at best, up to 47–60 µs with 128
# programs). This notebook shows where the curves cross, the rule the kernel uses, and how close every measured
# point is to the roofline set by **measured** ceilings.

# %%
# NBVAL_IGNORE_OUTPUT
import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before dsa_lab is imported

import dsa_lab
from dsa_lab.workbook import proofs, viz

viz.setup("none")
print(viz.backend_banner())
sweep = viz.load_records("select_sweep")
seed_speedup = viz.load_records("speedup_by_context", gpu="mi355x_seed")
print(viz.record_status(sweep))

# %% [markdown]
# ## The rule: the grid from shapes and the SM count, the split from the live extent
#
# `dsa_lab.dispatch` fixes the launch from **shapes and the SM count only**, so a call captures in a
# CUDA graph and a replay with other lengths stays exact: about `2 × SMs` programs in all (`P ≈ 2·SMs // rows`
# per row), capped so that every program has enough columns to stream. Each program then reads its row's live
# extent **on the device**: a short row is handled by one program with no merge, and only a long row spreads
# across its `P` programs and pays a merge. How the kernel derives and merges (from its own docstring, so this
# stays in sync with the code):

# %%
# NBVAL_IGNORE_OUTPUT
from dsa_lab.kernels import hier

print(hier.__doc__)

# %% [markdown]
# What a select launches on an H200 (132 SMs, or the SM count of the recorded run) at k = 64 and k = 2048, over a
# 32768-block workspace: each kernel, its grid and programs per row, and the constexprs that pick its compiled
# variant (the same at every row count) — deterministic, compared by nbval:

# %%
sm = (sweep[1] or {}).get("sm_count") or 132
print(f"SM count used: {sm}")
print(proofs.format_table(viz.split_rule_rows(sm, k=64)))
print()
print(proofs.format_table(viz.split_rule_rows(sm, k=2048)))

# %% [markdown]
# ## Time vs rows: where one program per row and split rows cross
#
# From the recorded sweep: at 1–8 rows the split path keeps the GPU busy and the time is set by the merge; from a
# few hundred rows one program per row already fills the SMs and the time follows the bytes. The dotted line marks
# the SM count.

# %%
# NBVAL_IGNORE_OUTPUT
viz.time_vs_rows_figure(*sweep, context=65536)

# %%
# NBVAL_IGNORE_OUTPUT
viz.time_vs_rows_figure(*sweep, context=262144)

# %% [markdown]
# ## Tile choice vs context
#
# The seed's own open point (MI355X, transcribed): a 1024-wide tile helps 64K context but hurts 4K. The default
# kernel for k <= 512 ("hier", `dsa_lab.kernels.hier`) has no single tile to choose: a row of at most 512 live columns
# takes one direct 512-key top-k (short contexts pay for nothing wider), longer rows are streamed in super groups
# (64 columns at k <= 64) by programs that each take at least 1024 columns, split from the row's live extent on the
# device, and the last program ranks group maxima (three 512-key top-k whatever the context). Its cost is set by
# the live extent and by `next_pow2(k)` — which is where it breaks down at large k (next section).

# %%
# NBVAL_IGNORE_OUTPUT
tile_note = viz.load_records("tile_note", gpu="mi355x_seed")
print(viz.record_label(tile_note[1], tile_note[2]))
print(proofs.format_table(tile_note[0]) if tile_note[0] else "NO RECORD")

# %% [markdown]
# ## Large k: when sorting stops paying
#
# At k = 2048 the hier kernel's groups shrink to 2 x 2 and its last stage is one program running a bitonic top-k
# over up to 8192 keys: the first recorded sweep had it *slower* than `torch.topk` at 64K and 256K context. A radix select (`dsa_lab.kernels.radix`) finds the k-th key digit by digit from histograms and never
# sorts. The first dev run on the H200 timed it beside the default kernel and torch on the sweep's inputs (every
# output checked against the exact reference first); best of its two tile sizes:

# %%
radix = viz.load_records("radix_dev")
print(viz.record_label(radix[1], radix[2]) if radix[0] else "NO RECORD")
print(proofs.format_table(viz.radix_dev_rows(radix[0])) if radix[0] else "NO RECORD")

# %% [markdown]
# A second run (`scripts/gpu_tune_dev.py`, section A) put the three radix forms side by side: `r30` every digit
# over the row, `r31` two passes over the row then the threshold bin's list (`r31_t4096`: wider tiles), `r32` the
# row split over programs (two launches). The compacting and split forms win on continuous values at 256K, but
# when values tie or share their top digit (`equal`, `shifted`: a list as long as the row) they lose up to 2x —
# and a dispatch rule sees shapes, not values. So `impl="triton"` took **`r30` for k > 512**
# (`dispatch.RADIX_MIN_KP = 1024`) and hier below, where hier won at 4K and 256K and tied at 64K (k = 512).

# %%
tuneA = viz.load_records("tune_dev/tune_dev_A")
print(viz.record_label(tuneA[1], tuneA[2]) if tuneA[0] else "NO RECORD")
if tuneA[0]:
    print(proofs.format_table(viz.variant_rows(tuneA[0], ["torch", "hier", "r30", "r31", "r31_t4096", "r32"], k=2048)))

# %% [markdown]
# The sweep recorded with that dispatch met the k = 2048 median target but not everywhere: at 256K one program per
# row still streamed 32768 keys about six times (170 µs at 1 row; torch 62). Splitting *every* digit pass over the
# row's programs — one launch per digit, each program summing the per-program histograms of the launch before, no
# atomics (`parallel=True`, v3.3) — was then timed (section F): 1 x 256K in 24 µs, but on short rows its five
# launches cost more than v3.0's whole row (`r33` vs `r30` at 16K).

# %%
tuneF = viz.load_records("tune_dev/tune_dev_F")
print(viz.record_label(tuneF[1], tuneF[2]) if tuneF[0] else "NO RECORD")
if tuneF[0]:
    print(proofs.format_table(viz.variant_rows(tuneF[0], ["torch", "hier", "rsel", "r30", "r33"], dist="normal")))

# %% [markdown]
# So the dispatch (`dsa_lab.dispatch`) became, from shapes only: for k > 512, and for k = 257-512 when the call
# has fewer rows than SMs, the radix select — **split over programs (v3.4)** when the plan gives several programs
# per row, where a row of at most `RADIX_SHORT` live columns (read on the device) is selected whole by one program in
# the first launch and skipped by the others; v3.0 otherwise. Section H timed that default against v3.0: the long
# rows gain 2-7x, the short ones pay ~8 µs of skipped launches (13.7 vs 5.9 µs at 4K and 16K) — still ~4x faster
# than torch. The hier kernel's own stages can also take a register radix select instead of a bitonic top-k
# (`rsel`, section G): slower at k = 64, faster at k = 512 with many rows, so it is on from k = 512.

# %%
tuneH = viz.load_records("tune_dev/tune_dev_H")
print(viz.record_label(tuneH[1], tuneH[2]) if tuneH[0] else "NO RECORD")
if tuneH[0]:
    print(proofs.format_table(viz.variant_rows(tuneH[0], ["torch", "default", "r30", "hier"], stage="select")))

# %% [markdown]
# ## Fewer dependent steps: the short chains (k = 64, 16K-64K)
#
# At k = 64 every row longer than 512 blocks took the whole hier chain: stage A split over programs, an arrival
# counter, then B-D in the last program to arrive — about 10 µs at 16K whatever the row count. But a row of at most
# KP super groups (4096 blocks at k = 64) has every super group chosen anyway, so stage A buys nothing: one program
# can run C-D over the row alone (`short_chain`, decided on the device from the row's extent). Section K timed it
# against the stage-A chain (`chain_a`) on the same inputs (predicted 10.0 → ~5.5 µs at 1 row; measured 7.7):

# %%
tuneK = viz.load_records("tune_dev/tune_dev_K")
print(viz.record_label(tuneK[1], tuneK[2]) if tuneK[0] else "NO RECORD")
if tuneK[0]:
    print(proofs.format_table(viz.variant_rows(tuneK[0], ["torch", "default", "chain_a"], stage="select", k=64)))

# %% [markdown]
# Section L then made the super groups twice as wide (8 x 16, `group2=16`) so that the short chain covers 64K rows
# too: 64K gained (12.4 → 9.9 µs at 1 row, 44 → 32 at 640 rows) but 256K, which still takes the chain, lost (its
# stage C then ranks 1024 level-1 maxima instead of 512). A shape rule cannot tell 64K from 256K (the width is the
# same), so the kernel now carries a *second* short chain with the wider groups, taken on the device only by rows it
# covers (`HIER_SHORT_CHAIN2`, unfused only: the fused kernel's single program then reads 256 KB of logits and lost
# at 1 row, 25 → 43 µs).

# %%
tuneL = viz.load_records("tune_dev/tune_dev_L")
print(viz.record_label(tuneL[1], tuneL[2]) if tuneL[0] else "NO RECORD")
if tuneL[0]:
    print(proofs.format_table(viz.variant_rows(tuneL[0], ["torch", "default", "g2_16"], stage="select", k=64)))

# %% [markdown]
# ## Fused or unfused: measured, not assumed
#
# The fused kernel reads each row's logits once and never writes block scores; the unfused composition writes
# and re-reads them (~1/8 of the logits' bytes at block_size 8). Section E of the same dev script timed both on
# the full stage (k = 64), after the bounded scores kernel learned to skip programs wholly past a row's extent
# (its `scores` stage in `step_breakdown.csv` had cost about the same at 640 rows whatever the context). The fused
# kernel's streaming stage turned out slower per logit than the scores kernel: fused wins only at 4K–16K context with 160–640 rows, which a rule on shapes (the
# width is the same at every context) cannot tell apart, so `impl="triton"` takes the unfused composition and the
# fused kernel stays an arm of its own (`impl="triton_fused"`). (The fused columns of this dev run belong to a
# variant with 32-bit offsets that was slower than the kept fused kernel and was reverted; the recorded sweep
# after it compares the final arms.)

# %%
tuneE = viz.load_records("tune_dev/tune_dev_E")
print(viz.record_label(tuneE[1], tuneE[2]) if tuneE[0] else "NO RECORD")
if tuneE[0]:
    print(proofs.format_table(viz.variant_rows(tuneE[0], ["torch", "fused_nw4", "fused_nw8", "unfused"], stage="full")))

# %% [markdown]
# Flags (`candidate_flags`) can be written by the select kernel itself (`select_candidate_blocks(with_flags=True)`:
# each of a row's programs zeroes a slice of its flags before it arrives, the program that finishes the row sets
# the chosen bytes — no memset, no flags launch). Section I timed both with every flags byte checked; it was cut by
# its time box after three 4K points, all faster folded, so the sweep's `full` arms take the flags that way. In the
# recorded sweep the fused arm then turned out much slower at 640 rows than before (`notes/select_kernel.md`): the
# fused-over-default ratios below include that.

# %%
tuneI = viz.load_records("tune_dev/tune_dev_I")
print(viz.record_label(tuneI[1], tuneI[2]) if tuneI[0] else "NO RECORD")
if tuneI[0]:
    print(proofs.format_table(viz.variant_rows(tuneI[0], ["torch", "sep_unfused", "fold_unfused", "sep_fused", "fold_fused"], stage="full")))

# %% [markdown]
# That slowdown was measured in one process in section K: at 160-640 rows the fused kernel ran one program per row
# (a device under-filled at 160 rows, 1.2 waves at 640) and the flags written inside it cost more than the flags
# kernel after it. So the fused plan now takes at least 4 programs per row, and the flags kernel beyond twice as
# many rows as SMs (`fold_fused_pP_nwW`: P programs per row, W warps, flags in the kernel; `sep_fused`: the flags
# kernel). The fused kernel still loses to the unfused composition at 256K: its stream is the slow part.

# %%
if tuneK[0]:
    print(proofs.format_table(viz.variant_rows(tuneK[0], ["torch", "fold_unfused", "sep_fused", "fold_fused",
                                                          "fold_fused_p4_nw4", "fold_fused_p8_nw4",
                                                          "fold_fused_p4_nw8"], stage="full")))

# %% [markdown]
# Why is the fused stream slow? Section M (sixth session) tried the cheapest suspect first: a tile's bounds mask
# `c < end` has constancy 1, so every logit was a 4-byte load (the sm_90 PTX shows 32 `ld.global.b32` per thread
# per tile). Tiles wholly inside the row's live extent now load without it (`fast_a`: 16-byte loads), and so can
# the scores kernel's (`scores_whole`). Outcome: the select stage at 640 x 256K 85.7 → 79 µs and the fused full
# stage 459 → 411, but the fused kernel at 160 rows lost (161 → 207), so `fast_a` is on only beyond twice as many
# rows as SMs; the fused stream stayed near 1.6 TB/s, so the load width was not its limit. `chains_off` is the
# 256K check of the fifth session's 2-4% regression: with both short chains compiled out, 256K is ~1% faster (1 row
# 12.4 vs 12.7 µs) and 64K much slower (9.7 → 12.0): the chains stay.

# %%
tuneM = viz.load_records("tune_dev/tune_dev_M")
print(viz.record_label(tuneM[1], tuneM[2]) if tuneM[0] else "NO RECORD")
if tuneM[0]:
    print(proofs.format_table(viz.variant_rows(tuneM[0], ["torch", "fold_unfused", "fold_unfused_fast",
                                                          "fold_fused", "fold_fused_fast", "fold_fused_fast_p8"],
                                               stage="full")))
    print(proofs.format_table(viz.variant_rows(tuneM[0], ["torch", "default", "fast", "chains_off"], stage="select",
                                               k=64)))

# %% [markdown]
# Section N then put stage A in a launch of its own (`two_phase`: B-D, and the direct / short-chain rows, in a
# second launch with one program per row), so that stage A runs with its own registers (80 at 4 warps instead of
# 96) and code (2.2K PTX lines instead of 29K). The fused stream did not speed up (640 x 256K 411 → 477 µs), so
# neither occupancy nor code size was its limit either; the option stays off (`data/h200/tune_dev/check_N.log`: the
# run's printout; its CSV did not come back from the device).

# %% [markdown]
# ### Seventh session: it was the tile's layout
#
# With the load width and the occupancy ruled out, `scripts/gpu_stagea_dev.py` took stage A out of the kernel: each
# variant is a stand-alone kernel that streams whole rows and writes exactly what stage A writes (every level-1 and
# super group's best key), checked on every slot against a torch reference before it is timed. `cur` is the kernel's
# formulation: a 3-D `[NT, S, BS]` tile of pointers. Its compiled layout (triton 3.6, sm_90) spreads a warp over
# eight super groups 2 KB apart, and its keys took a float round trip and two reductions per group. `flat` loads
# the same logits as one contiguous 1-D vector reshaped to `[level-1 group, block, logit]`, so the layout follows
# memory order (a warp reads 512 contiguous bytes); `flat_hi` also keeps the block maxima as ordered integers and
# forms each level-1 key as one int64 max. `scores` and `read` drop the keys (timing only) and show the ceiling of
# this loop shape. Per shape and variant, the fastest configuration:

# %%
stagea = viz.load_records("tune_dev/stagea_dev")
print(viz.record_label(stagea[1], stagea[2]) if stagea[0] else "NO RECORD")
if stagea[0]:
    print(proofs.format_table(viz.stagea_rows(stagea[0])))

# %% [markdown]
# `flat_hi` went into the kernel (`_l1_keys_whole`, whole tiles at a power-of-two block size; the row's last tile
# keeps the exact mask). Section O timed the whole fused kernel with it against the unfused composition (full stage
# with flags; `fold_fused` the default plan of its commit, `_fast` whole tiles forced on, `_w8` 8 warps, `_p8` 8
# programs per row): whole tiles now win at every row count, and 8 warps up to one row per SM, so those are the
# fused defaults. The fused kernel still trails the unfused composition at 64K-256K beyond a few rows (its B-D
# chain at 4 warps), and section P's two launches did not change that (`data/h200/tune_dev/tune_dev_P.csv`).

# %%
tuneO = viz.load_records("tune_dev/tune_dev_O")
print(viz.record_label(tuneO[1], tuneO[2]) if tuneO[0] else "NO RECORD")
if tuneO[0]:
    print(proofs.format_table(viz.variant_rows(tuneO[0], ["torch", "fold_unfused", "fold_fused", "fold_fused_fast",
                                                          "fold_fused_fast_w8", "fold_fused_fast_p8"],
                                               stage="full", dist="normal")))

# %% [markdown]
# ### Eighth session: idle programs, flag bytes and a narrower chain
#
# Three costs outside the chains themselves, found by section Q (`data/h200/tune_dev/check_Q.log`, the run's
# printout) and confirmed by section R below:
#
# * the bounded scores kernel launched one program per 512-block tile of the **padded** width: at 640 rows of a
#   262144-wide tensor that is 40,960 programs, 40,320 of them idle at 4K context. Now about 32 x SM programs in all
#   stride over each row's tiles (`dispatch.SCORES_MULT`): 640 x 4K full stage 44.7 → 19 µs. At 256K, where
#   every tile is live, fewer programs stream a little worse (640 rows 272 → 289 µs in the sweep);
# * the select kernel's one program per row zeroed all `n + 1` flag bytes before its chain, one byte per lane; the
#   unfused composition now has the scores launch's many programs zero them (`UNFUSED_FLAGS_IN_SCORES`), and the
#   fused kernel zeroes 8-byte words (`HIER_FLAGS_WIDE`);
# * at 16K context (2048 blocks) the short chain's stages C and D each ranked 512 keys. A third short chain, decided
#   on the device like the other two, takes level-1 groups of 4 for rows of at most 2048 blocks: C ranks 512
#   level-1 maxima, D only 256 blocks (`HIER_SHORT_CHAIN3`; select 16K 1 row 7.7 → 4.9 µs in section Q).
#
# `fold_unfused_new` is the unfused composition with all three (scores at 16 x SM programs), `_new32` with 32 x SM
# (the default now); `fold_fused_new` the fused kernel with word-wise flags and the third chain, which lost at 640
# rows (its extra chain's code slows stage A), so the fused kernel does not take that chain.

# %%
tuneR = viz.load_records("tune_dev/tune_dev_R")
print(viz.record_label(tuneR[1], tuneR[2]) if tuneR[0] else "NO RECORD")
if tuneR[0]:
    print(proofs.format_table(viz.variant_rows(tuneR[0], ["torch", "fold_unfused", "fold_unfused_new",
                                                          "fold_unfused_new32", "fold_fused", "fold_fused_new"],
                                               stage="full", dist="normal")))

# %% [markdown]
# ### Ninth session: the last levers at 256K
#
# Section S timed the scores launch's remaining knobs at the one shape where every tile is live (16 / 64 x SM
# programs, one program per padded tile, 1024-block tiles, 8 warps, unmasked whole tiles) and level-1 groups of 4 for
# the 64K / 256K chains; section T the unfused stage A's tile (64-256 super groups per loop iteration) and two programs
# per row for the 256K select. None is taken: the per-tile grid wins back ~8 µs at 640 x 256K and loses 19-25 µs at
# 640 rows of 4K-64K; groups of 4 lose at 64K and 256K (stage B then ranks 1024 super maxima); larger stage-A tiles
# lose (more registers, fewer resident programs), so that stream is not short of bytes in flight. Section U: the select
# kernel at 4 / 16 warps loses; stage A in a launch of its own gains 2-4% at 320-640 x 256K (and loses at 64K).

# %%
tuneS = viz.load_records("tune_dev/tune_dev_S")
print(viz.record_label(tuneS[1], tuneS[2]) if tuneS[0] else "NO RECORD")
if tuneS[0]:
    print(proofs.format_table(viz.variant_rows(tuneS[0], ["fold_unfused", "fold_unfused_m16", "fold_unfused_m64",
                                                          "fold_unfused_grid", "fold_unfused_t1024",
                                                          "fold_unfused_whole", "fold_unfused_g4"],
                                               stage="full", dist="normal")))
    print(proofs.format_table(viz.variant_rows(tuneS[0], ["torch", "default", "g4"], stage="select", dist="normal")))
tuneT = viz.load_records("tune_dev/tune_dev_T")
print(viz.record_label(tuneT[1], tuneT[2]) if tuneT[0] else "NO RECORD")
if tuneT[0]:
    print(proofs.format_table(viz.variant_rows(tuneT[0], ["torch", "default", "nt64", "nt128", "nt256", "p2"],
                                               stage="select", dist="normal")))
tuneU = viz.load_records("tune_dev/tune_dev_U")  # its meta JSON did not come back (data/README.md): no GPU label
print(viz.record_label(tuneU[1], tuneU[2]) if tuneU[0] else "NO RECORD")
if tuneU[0]:
    print(proofs.format_table(viz.variant_rows(tuneU[0], ["torch", "default", "w4", "w4nt16", "w16", "tp", "tp_w4_8"],
                                               stage="select", dist="normal")))

# %% [markdown]
# ### Tenth session: replicated layouts, and where the 640 x 256K select spends its time
#
# A top-k whose keys come out of a reduction over a tile axis spread across lanes (`tl.max(tile, axis=1)`) gets a
# layout Triton leaves replicated over those lanes: the sm_90 TTGIR (triton 3.6) showed stage C's 512 level-1 keys
# and the fused direct path's and stage D's block scores 8x replicated. `scripts/gpu_fused_direct_dev.py` first timed
# a minimal fused direct kernel (4096 logits → 512 block scores → top-64): 5.7 µs at 1 x 4K, where the select kernel
# over 512 precomputed scores takes 3.0. Section V then built those keys from strided loads with an elementwise max
# (`strided_keys`, `strided_direct`: no reduction, an unreplicated layout). The fused direct path gained (full stage
# 4K, 1 / 32 / 128 rows: 6.4 / 7.0 / 10.7 → 5.0 / 5.5 / 6.7 µs); the chains lost badly (select 16K 1 row 5.0 → 9.7
# µs, 640 x 256K 79.7 → 104.5): their strided gathers cost more than the replicated top-k. Both stay off.
#
# Section W split the 640 x 256K select (two launches, stage A timed alone): **stage A 44.3 µs** (its bytes floor
# 18.6), the B-D chain about 37 (the ladder's 640-program chain 23.2). Keying each super group by its first column
# instead of its best column ranks the groups identically (they are disjoint, aligned ranges) and needs one max per
# group instead of a max and an argmin (`a_first_col`): stage A 44.3 → 33.1, the select 79.6 → 70.2 µs (equal values
# 80.0 → 70.4; section X), 67.0 with two launches and four programs per row; but 32 / 64 rows lose (14.4 → 18.7,
# 16.7 → 18.3 µs).
#
# Sections Y and Z went back to the replication with a cheaper cure: keep stage C's reduced tile and pass its 512
# keys through the row's workspace (one store, a barrier, a load) so the top-k reads a plain 1-D layout
# (`c_workspace`). The 256K chain (8x replicated) gains at every row count: 1 row 12.8 → 10.5 µs, 640 rows 79.8 →
# 72.4, with `a_first_col` 63.0; the full stage 640 x 256K 288.8 → 256.3 µs. The 16K chain (4x) does not move.
# Both were adopted in the eleventh session (`c_workspace` everywhere, `a_first_col` at one or two programs per row,
# where it won) and the whole record re-run at d26f268. The recorded 640 x 256K
# select is 63.0 µs (79.6 at ee0a345), 1 x 256K 10.5 (12.8); the full stage 640 x 256K 258 µs, 1.68x its floor.
#
# Eleventh session, after that record (section AA): the 64K rows take the second short chain, whose stage C ranks
# 64 x 16 = 1024 level-1 keys in one top-k (on the ladder ~2.4x a 512-key one). Ranking adjacent pairs first
# (`l1_pairs`: a top-k over 512 pair maxima, then one over the chosen pairs' 128 keys; exact by the same hierarchy
# argument) gains at every 64K point in the table below, most at 640 rows. From 512 keys (section AB: the 16K rows'
# third short chain) the extra level loses at every point, so pairs start at 1024 keys.
#
# Twelfth session (section AC): the pairs now read the level-1 keys straight from the workspace where stage C already
# put them (no second store, two barriers fewer), and `l1_pairs` became the default (v2.8), re-recorded whole at
# 1d76555: the sweep above is of these kernels. AC's table is the default against `l1_pairs=False` in one process;
# in the record, 64K select 1 row 9.8 → 9.1 µs and 640 rows 32.2 → 27.6, the 64K full-stage median 5.05x → 5.57x
# (target 6). The same record moved the 256K full stage at 1-32 rows by up to 15% either way, a path the pairs do
# not reach; section AD timed those shapes with `l1_pairs` on and off in one process: equal within ~1% at 1-16 rows,
# the pairs slightly ahead at 32. The shape varies from process to process.
#
# Fourteenth session (sections AE-AG): the unfused full stage's scores launch also stores stage A's keys for the
# select while it streams the logits (`scores_a`; the select then runs B-D alone, one program per row). In one
# process (AG / AG_rest below: `fold_unfused_br` with the keys, `fold_unfused_nosa` without) it wins at 1-32 rows
# (1 x 256K 14.6 → 11.6 µs, 1 x 64K 12.4 → 11.8) and loses at 160-640 rows of 4K-64K: the scores kernel takes 95
# registers instead of 72 and five more block barriers per tile. Fifteenth session: on by that measured rule (at most
# a quarter as many rows as SMs) and re-recorded whole at 3e42133 — the sweep above is of these kernels. Recorded,
# against 1d76555: full 1 row 5.9 / 7.8 / 12.5 / 14.5 → 5.3 / 7.2 / 11.8 / 11.7 µs at 4K / 16K / 64K / 256K; the
# points above the rule's 33 rows and the select stage did not move.
#
# Sixteenth and seventeenth sessions (sections AJ-AL): the select launched as a programmatic dependent of the scores
# launch (Hopper's `griddepcontrol`; the select reads its row bounds, then waits), with the scores programs signalling
# early (`fold_unfused_pdl_early`), and the scores grid at 8 / 16 x SM programs instead of ~32 (`_m8_`, `_m16_`).
# `_pdl_rule` takes it by rows: early-signalled at most a fifth as many rows as SMs and from a third on, the 16 x SM
# grid from a third to 3x, plain launches between. In AL, `fold_unfused` is that rule and `fold_unfused_plain` the
# launches without it. On by the rule (v2.10) and re-recorded whole at 790c635 — the sweep above is of these kernels.
# Recorded, against 3e42133: full 1 row 5.3 / 7.2 / 11.8 / 11.7 → 4.6 / 6.5 / 11.3 / 11.1 µs; the full-stage medians
# 12.9x / 9.6x / 5.7x → 13.3x / 9.8x / 5.7x; the select stage did not move. Section AM then tried the whole unfused
# composition as one launch (`tail`: each row's last scores program selects the row, deleted since; its record stays): it
# lost at every point, 1.1-2x (the one kernel's 100-113 registers at 8 warps leave 2 programs per SM resident).
#
# Eighteenth to twentieth sessions: the last Triton-side levers, each measured and left off.
# * Section AN: a threshold filter in place of the chains' last top-k stages (`hier_f4`, `hier_f1`; after stage B
#   `hier_fm`). It is slower wherever it runs.
# * Section AP: each row's select waits for that row's scores alone (`rowsync`). No gain at 640 x 256K.
# * Section AQ: stage A with two tiles in flight (`a_prefetch`; `t_a` times stage A alone). It gains 8%, not the
#   predicted 40%: the stream is bound by its per-tile work, not by bytes in flight.
# * Section AR: register bounds through Triton's `maxnreg`. `_apf_r80` holds the select kernel to 80 registers,
#   `_sa_w8_r64` the scores launch with stage A's keys to 64.
# * Section AS: the 640 x 256K full stage is its scores launch (`t_scores`) plus its select (`t_select`), one after
#   the other.
#
# The last table runs those two kernels on two streams with no dependency between them. That bounds any overlap of
# the two: at 640 x 256K it is 1.61x the live-logits floor, and issue 7's target is 1.5x
# (`scripts/gpu_overlap_bound.py`).

# %%
for name, arms, stage in (("fused_direct_dev", None, None),
                          ("tune_dev/tune_dev_V", ["torch", "old", "default"], "select"),
                          ("tune_dev/tune_dev_V", ["fold_unfused_old", "fold_fused_old", "fold_fused"], "full"),
                          ("tune_dev/tune_dev_W", ["torch", "default", "afirst", "tp", "t_stage_a", "t_stage_a_afirst"],
                           "select"),
                          ("tune_dev/tune_dev_X", ["torch", "default", "afirst", "tp4_afirst"], "select"),
                          ("tune_dev/tune_dev_Y", ["torch", "default", "cws", "cws_afirst"], "select"),
                          ("tune_dev/tune_dev_Y", ["torch", "fold_unfused", "fold_unfused_cws"], "full"),
                          ("tune_dev/tune_dev_Z", ["torch", "fold_unfused", "fold_unfused_cws",
                                                   "fold_unfused_cws_afirst"], "full"),
                          ("tune_dev/tune_dev_AA", ["torch", "default", "pairs"], "select"),
                          ("tune_dev/tune_dev_AA", ["torch", "fold_unfused", "fold_unfused_pairs"], "full"),
                          ("tune_dev/tune_dev_AB", ["torch", "default", "pairs512"], "select"),
                          ("tune_dev/tune_dev_AB", ["torch", "fold_unfused", "fold_unfused_pairs512"], "full"),
                          ("tune_dev/tune_dev_AC", ["torch", "no_pairs", "default"], "select"),
                          ("tune_dev/tune_dev_AC", ["torch", "fold_unfused_no_pairs", "fold_unfused"], "full"),
                          ("tune_dev/tune_dev_AD", ["torch", "fold_unfused_no_pairs", "fold_unfused"], "full"),
                          ("tune_dev/tune_dev_AG", ["torch", "fold_unfused_nosa", "fold_unfused_br"], "full"),
                          ("tune_dev/tune_dev_AG_rest", ["torch", "fold_unfused_nosa", "fold_unfused_br"], "full"),
                          ("tune_dev/tune_dev_AJ", ["torch", "fold_unfused", "fold_unfused_pdl_early",
                                                    "fold_unfused_m16_pdl_early"], "full"),
                          ("tune_dev/tune_dev_AK", ["torch", "fold_unfused", "fold_unfused_pdl_early",
                                                    "fold_unfused_m16_pdl_early"], "full"),
                          ("tune_dev/tune_dev_AL", ["torch", "fold_unfused_plain", "fold_unfused_pdl_early",
                                                    "fold_unfused_m16_pdl_early", "fold_unfused"], "full"),
                          ("tune_dev/tune_dev_AM", ["torch", "fold_unfused", "fold_unfused_tail",
                                                    "fold_unfused_tail_w4", "fold_unfused_tail_m8"], "full"),
                          ("tune_dev/tune_dev_AN", ["torch", "hier", "hier_f4", "hier_f1", "hier_fm"], "select"),
                          ("tune_dev/tune_dev_AP", ["torch", "fold_unfused", "fold_unfused_rs", "fold_unfused_rs_m16"],
                           "full"),
                          ("tune_dev/tune_dev_AQ", ["torch", "hier", "hier_apf", "t_a", "t_a_apf"], "select"),
                          ("tune_dev/tune_dev_AQ", ["torch", "fold_unfused", "fold_unfused_apf"], "full"),
                          ("tune_dev/tune_dev_AR", ["torch", "fold_unfused", "fold_unfused_sa",
                                                    "fold_unfused_sa_w8_r64", "fold_unfused_apf_r80"], "full"),
                          ("tune_dev/tune_dev_AS", ["fold_unfused", "t_scores", "t_select", "t_select_apf"], "full")):
    recs = viz.load_records(name if name.startswith("tune_dev") else "tune_dev/" + name)
    print(viz.record_label(recs[1], recs[2]) if recs[0] else "NO RECORD")
    if recs[0] and arms is None:
        print(proofs.format_table(viz.variant_rows(recs[0], ["unfused_flags", "select", "fused_p1_flags", "min8",
                                                             "min8_flags", "load8"], stage=None, dist=None)))
    elif recs[0]:
        print(proofs.format_table(viz.variant_rows(recs[0], arms, stage=stage, dist="normal")))

# %%
bound = viz.load_records("tune_dev/overlap_bound")
print(viz.record_label(bound[1], bound[2]) if bound[0] else "NO RECORD")
if bound[0]:
    print(proofs.format_table([{c: r[c] for c in ("context", "rows", "arm", "median_us", "check")} for r in bound[0]]))

# %% [markdown]
# The recorded sweep, final kernels: the fused arm's time over the default (unfused) arm's, per context.

# %%
from dsa_lab.bench import report

print(viz.record_label(sweep[1], sweep[2]) if sweep[0] else "NO RECORD")
print(report.fused_table(report.index(sweep[0])) if sweep[0] else "NO RECORD")

# %% [markdown]
# ## The latency floor of one row
#
# At one row the select kernel is a chain of dependent steps, not a stream. `scripts/gpu_latency_ladder.py` times
# the chain's own steps alone (`dsa_lab.bench.latency`: one program per launch, each stage's load depending on the
# previous stage's top-k, every output checked against `torch.topk`), beside the 1-row select in the same process.
# The `640 programs` cases run the same chain in 640 programs at once (one per row, as the hier kernel runs it
# beyond the SM count): the chain's throughput at the 640 x 256K point, set beside that point's bytes floor.

# %%
lat = viz.load_records("latency_ladder")
f640 = report.index(sweep[0]).get(("triton", "select", 262144, 128, 5, 64, "normal"), {}).get("floor_us") \
    if sweep[0] else None
print(report.latency_section(lat[0], lat[1] or {}, lat[2], "###", f640) if lat[0] else "NO RECORD")

# %% [markdown]
# ### Past the floor: the CUDA C++ probe (outside the package)
#
# Is the 1-row limit Triton's or the GPU's? `scripts/gpu_cuda_select_probe.py` answers it by measurement with two
# selects written in CUDA C++ (`scripts/cuda/`), checked against the reference before they are timed beside the
# Triton default. The first is one CTA per row. It is slower than Triton at 16K and 256K, because one SM has to
# issue the work for all 32768 scores. The second spreads one row over a cluster of 8 CTAs that exchange warp
# maxima and candidates through distributed shared memory. It handles only the common rows and refuses the rest
# visibly. Neither kernel is part of the package: `triton.language` has no explicit cluster exchange. The per-step
# costs and the kernels' history are in `notes/select_kernel.md`.

# %%
probe = viz.load_records("cuda_probe/cuda_probe")
print(report.cuda_probe_section(probe[0], probe[1] or {}, probe[2], "###") if probe[0] else "NO RECORD")

# %% [markdown]
# ## The roofline, with measured ceilings
#
# Every sweep point placed against `floor = max(launch time in a graph, bytes / streaming bandwidth)`, both
# ceilings measured on the same GPU in the same run (read from the record's metadata). Circles: the `select`
# stage; diamonds: the `full` stage (logits → candidates → flags), fused and unfused Triton arms side by side.

# %%
# NBVAL_IGNORE_OUTPUT
print("ceilings:", (sweep[1] or {}).get("ceilings", "NO RECORD"))
viz.roofline_figure(*sweep)

# %%
# NBVAL_IGNORE_OUTPUT
if sweep[0]:
    for stage in ("select", "full"):
        pts = viz.select_rows(sweep[0], stage=stage, k=64, dist="normal")
        for arm in sorted({r["arm"] for r in pts}):
            fr = sorted(r["roofline_frac"] for r in viz.select_rows(pts, arm=arm) if r.get("roofline_frac"))
            if fr:
                print(f"{stage:6s} {arm:15s} roofline fraction: median {fr[len(fr) // 2]:.3f}, best {fr[-1]:.3f}, worst {fr[0]:.3f}")
else:
    print("NO RECORD")

# %% [markdown]
# ## Beside the seed's MI355X numbers
#
# The seed PR's medians (MI355X, its own kernel vs torch.topk; transcribed, not measured here) beside this
# project's H200 sweep. Different GPUs: compare the shape of the speedup across contexts, not the absolute numbers.

# %%
# NBVAL_IGNORE_OUTPUT
viz.seed_comparison_figure(sweep, seed_speedup)

# %%
# NBVAL_IGNORE_OUTPUT
print("this project, select stage:")
print(proofs.format_table(viz.speedup_rows(sweep[0])) if sweep[0] else "NO RECORD")
print("this project, full stage:")
print(proofs.format_table(viz.speedup_rows(sweep[0], stage="full")) if sweep[0] else "NO RECORD")
print(viz.record_label(seed_speedup[1], seed_speedup[2]) + ":")
print(proofs.format_table(seed_speedup[0]) if seed_speedup[0] else "NO RECORD")

# %% [markdown]
# ## Try it: rows × context
#
# Live on a GPU; without one, the nearest recorded point plus an interpreter check at 1/64 scale (the title says
# which).

# %%
# NBVAL_IGNORE_OUTPUT
viz.rows_widget(records=sweep)
