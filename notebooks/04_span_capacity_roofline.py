# %% [markdown]
# # 04 · Span, capacity and the roofline
#
# Decode has 1–640 rows (concurrency × next_n), usually fewer than the GPU's multiprocessors (132 on an H200).
# One program per row leaves most of the GPU idle at low concurrency and makes a long row a serial scan; splitting
# a row across programs fills the GPU but adds a **merge**, and for a long single row the merge, not the scan, is
# the cost (`docs/design.md` §6: a plain split-and-merge `tl.topk` over 32768 blocks costs 14 µs at best, 47–60 µs
# with 128 programs). This notebook makes the case for how the kernels spend the GPU, one claim per section, each
# backed by a proof, a recorded H200 measurement from `data/h200/`, or a plot:
#
# 1. **The rule**: the launch comes from shapes and the SM count; each row's split from its live extent, on the device.
# 2. **Time vs rows**: few rows are bound by a chain of dependent steps, many rows by bytes.
# 3. **Tile vs context**: the default kernel has no tile width to tune per context.
# 4. **Large k**: no sorting for k > 256: a radix select at few rows, a register-resident bisect select at many,
#    and a one-read long-row select for token-level top-k over 64K-256K-column rows.
# 5. **Short rows**: shorter chains, chosen per row on the device.
# 6. **One row**: the floor of a dependent `tl.topk` chain, and what lies below it outside Triton.
# 7. **Fused or unfused**: measured, and the unfused composition won.
# 8. **The roofline**: every point against measured ceilings, and where the largest point's time goes.
#
# Then one table of what was tried and lost, and a live widget. The kernels are described in `docs/design.md` §7,
# the rules that pick them in `dsa_lab/plans.py` with the measurement behind each in §9, the measurement
# conventions in §5; the history of every version in `notes/select_kernel.md`.

# %%
# NBVAL_IGNORE_OUTPUT
import torch

import dsa_lab
from dsa_lab import _env

_env.interpret_without_gpu()  # no GPU: the kernels run in the Triton interpreter (before any kernel is imported)

from dsa_lab.bench.report import markdown, points, sections, targets
from dsa_lab.bench.report import tables as report_tables
from dsa_lab.workbook import backend, dev_runs, figures, longrow, records, tables, widgets
from IPython.display import Markdown, display

figures.setup("none")
print(backend.backend_banner())
sweep = records.load_records("select_sweep")
seed_speedup = records.load_records("speedup_by_context", gpu="mi355x_seed")
idx = points.index(sweep[0]) if sweep[0] else {}
print(records.record_status(sweep))


def dev(run):
    """A dev run's record (data/h200/tune_dev/): one CSV and its metadata per run."""
    return f"tune_dev/tune_dev_{run}"


def against_previous(tag):
    """The large-k select A/B against an older package (k_large/select_ab_{tag}_k2048 / _k512), point by point."""
    recs = [records.load_records(f"k_large/select_ab_{tag}_k{kk}") for kk in (2048, 512)]
    print(records.record_status(recs[0]))
    print(tables.format_table(dev_runs.old_new_rows(recs)))

# %% [markdown]
# ## 1. The rule: the grid from shapes and the SM count, the split from the live extent
#
# **Claim.** `dsa_lab.plans` fixes the launch from **shapes and the SM count only**: about `2 × SMs` programs in
# all (`P ≈ 2·SMs // rows` per row), capped so that every program has enough columns to stream. Each program then
# reads its row's live extent **on the device**: a short row is handled by one program with no merge, and only a
# long row spreads across its `P` programs and pays a merge.
#
# **Evidence.** How the default kernel derives and merges, from its own docstring (so this stays in sync with the
# code):

# %%
# NBVAL_IGNORE_OUTPUT
from dsa_lab.kernels import hier

print(hier.__doc__)

# %% [markdown]
# What a select launches on an H200 (132 SMs, or the SM count of the recorded run) at k = 64 and k = 2048, over a
# 32768-block workspace: each kernel, its grid and programs per row, and the constexprs that pick its compiled
# variant. The constexprs are the same at every row count. At k = 2048 the split radix select is one kernel launched
# once per digit step (`launches`) below SM/6 rows; from there the bisect select runs one program per row, in one
# launch:

# %%
sm = (sweep[1] or {}).get("sm_count") or 132
print(f"SM count used: {sm}")
print(tables.format_table(tables.split_rule_rows(sm, k=64)))
print()
launches = {}  # at k = 2048 each split radix step is a launch of the same kernel: one line per kernel, counted
for r in tables.split_rule_rows(sm, k=2048):
    launches[tuple(r.items())] = launches.get(tuple(r.items()), 0) + 1
print(tables.format_table([{**dict(key), "launches": n} for key, n in launches.items()]))

# %% [markdown]
# **What it means.** Nothing on the host depends on values, so a call captures in a CUDA graph and a replay with
# other lengths stays exact. The compiled variants depend on a few constexprs (the k bucket, the stage, alignment),
# not on rows or lengths, so `dsa-lab warmup` can compile the whole set ahead of use.
#
# ## 2. Time vs rows: where split rows and one program per row cross
#
# **Claim.** At few rows the split keeps the GPU busy and the time is set by the chain of dependent steps after the
# stream (launch, merge, top-k stages), so it hardly grows with rows. From about as many rows as SMs, one program
# per row fills the GPU by itself, and as rows grow the time follows the bytes.
#
# **Evidence.** The recorded sweep (select stage, k = 64), at 64K and 256K context. The dotted line marks the SM
# count.

# %%
# NBVAL_IGNORE_OUTPUT
figures.time_vs_rows_figure(*sweep, context=65536)

# %%
# NBVAL_IGNORE_OUTPUT
figures.time_vs_rows_figure(*sweep, context=262144)

# %% [markdown]
# The same record at representative points, with each point's bytes floor (`max(launch, bytes / measured
# bandwidth)`) and the fraction of it reached (`roofline frac`, 1.0 = on the roofline):

# %%
print(records.record_label(sweep[1], sweep[2]) if sweep[0] else "NO RECORD")
display(Markdown(report_tables.representative_table(idx, "select") if sweep[0] else "NO RECORD"))

# %% [markdown]
# **What it means.** From 1 to 32 rows the time stays nearly flat, far above a floor of one launch: the chain sets
# it. At 640 rows the 256K point moves toward its bytes floor. So the split is worth its merge only while the GPU
# would otherwise idle. From about as many rows as SMs the plan gives one program per row and no merge. The
# one-row chain is the subject of section 6.
#
# ## 3. Tile choice vs context: no tile to choose
#
# **Claim.** The seed's own open point (MI355X, transcribed) was a tile width that helps 64K context but hurts 4K.
# The default kernel for k ≤ 512 ("hier", `dsa_lab.kernels.hier`) has no single tile to choose. A row of at most
# 512 live columns takes one direct 512-key top-k, so short contexts pay for nothing wider. Longer rows are streamed
# in super groups (64 columns at k ≤ 64) by programs that each take at least 1024 columns. The last program ranks
# group maxima: three 512-key top-k stages whatever the context. The cost is set by the live extent and by
# `next_pow2(k)`.
#
# **Evidence.** The seed's note, then the speedup over `torch.topk` per context: this project's H200 sweep beside the
# seed's MI355X medians. The GPUs differ, so compare the shape across contexts, not the absolute numbers.

# %%
tile_note = records.load_records("tile_note", gpu="mi355x_seed")
print(records.record_label(tile_note[1], tile_note[2]))
print(tables.format_table(tile_note[0]) if tile_note[0] else "NO RECORD")

# %%
# NBVAL_IGNORE_OUTPUT
figures.seed_comparison_figure(sweep, seed_speedup)

# %%
print("this project, select stage:")
print(tables.format_table(tables.speedup_rows(sweep[0])) if sweep[0] else "NO RECORD")
print("this project, full stage:")
print(tables.format_table(tables.speedup_rows(sweep[0], stage="full")) if sweep[0] else "NO RECORD")
print(records.record_label(seed_speedup[1], seed_speedup[2]) + ":")
print(tables.format_table(seed_speedup[0]) if seed_speedup[0] else "NO RECORD")

# %% [markdown]
# **What it means.** The speedup still falls with context, because a longer row streams more bytes while `torch.topk`
# costs the same over the padded width. But no context is traded against another through a tile width. Where the
# hier kernel does break down is large k (next section).
#
# ## 4. Large k: a radix select instead of sorting
#
# **Claim.** At k = 2048 the hier kernel's groups shrink to 2 × 2 and its last stage is one program running a
# bitonic top-k over up to 8192 keys. That is slower than `torch.topk` at 64K and 256K context. A radix select
# (`dsa_lab.kernels.radix`) finds the k-th key digit by digit from histograms and never sorts.
#
# **Evidence.** A dev run timed both beside torch on the sweep's inputs, every output checked against the exact
# reference first (best of the radix select's two tile sizes, normal values):

# %%
radix = records.load_records("radix_dev")
print(records.record_label(radix[1], radix[2]) if radix[0] else "NO RECORD")
print(tables.format_table([r for r in dev_runs.radix_dev_rows(radix[0]) if r["dist"] == "normal"])
      if radix[0] else "NO RECORD")

# %% [markdown]
# Radix wins at every k = 2048 point. At k = 512 it wins at 16K–64K and loses at 4K and 256K, and at k = 64 it loses
# almost everywhere. With one program per row, though, a 256K row is still streamed several times. A second dev run
# split every digit pass over the row's programs (`r33`), against one program per row (`r30`), the hier kernel
# (`hier`) and hier with register radix stages (`rsel`):

# %%
radix_split = records.load_records(dev("F"))
print(records.record_label(radix_split[1], radix_split[2]) if radix_split[0] else "NO RECORD")
if radix_split[0]:
    print(tables.format_table(dev_runs.variant_rows(radix_split[0], ["torch", "hier", "rsel", "r30", "r33"],
                                               dist="normal")))

# %% [markdown]
# The split wins by a wide margin at 1–32 rows of 64K–256K, at k = 512 as well as at k = 2048. It loses at 160 rows
# and more, and on short rows, where its launches cost more than the row's whole select. So the rules
# (`docs/design.md` §7) takes the radix select for k > 512, and for k = 257–512 when the call has few enough rows to
# split. With several programs per row it splits every digit pass over them: one kernel launched once per step,
# each program adding its histogram to the row's totals. A row of at most `RADIX_SHORT` live columns, read on the
# device, is selected whole by one program in the first launch. The current record, per k and context (every value
# distribution), and at k = 2048 and 256K per row count:

# %%
display(Markdown(report_tables.k_table(idx, "select") if sweep[0] else "NO RECORD"))
print("k = 2048, 256K context, select stage, by rows:")
print(tables.format_table(tables.speedup_rows(records.select_rows(sweep[0], context=262144), k=2048, by="rows"))
      if sweep[0] else "NO RECORD")

# %% [markdown]
# **Many rows: the bisect select.** From about SM/2 rows the radix select ran one program per row, each streaming
# its row once per digit with a 256-bin `tl.histogram` (about ten instructions a word per bit resolved), and it was
# slower than `torch.topk` at 256K from 128 rows. The bisect select (`dsa_lab.kernels.bisect`) keeps the row in
# registers and brackets the k-th ordered word by steps on its value, each one compare and one count over the
# registers with exact counts, until the bracket's middle holds at most 2048 words. One pass over the registers then
# writes every word above the middle to its slot and the middle's columns to a scratch, and the k-th word is found
# among those few. One process on the H200, every arm's ids checked against `torch.topk` first: `triton` is the
# rules (bisect from SM/6 rows), `radix` the radix select it replaced there.

# %%
ab = records.load_records("k_large/select_ab_final")
print(records.record_status(ab))
if ab[0]:
    print(tables.format_table(dev_runs.variant_rows(ab[0], ["torch", "torch_live", "radix", "triton"], dist="normal")))

# %% [markdown]
# The bracket replaced a plain bisection for the k-th word (steps until the word itself, then a second pass that
# re-read the row from L2 in tiles to write it out). Both versions in one process, same inputs, ids checked first
# (`previous` is the package at the commit before, `ratio` the current time over the previous one):

# %%
against_previous("old")

# %% [markdown]
# The pass over the registers then changed its order. It had placed the words in column order, with a scan across
# the lanes for every word a thread holds; now each thread counts its own words, one scan of one count per thread
# places them, and a tie wider than the need finds its k-th column from counts per group of consecutive columns. At
# the same time the split radix select's five launches became programmatic dependents of each other (each starts
# while the one before it drains), and the bisect select took the rows from SM/6 (SM/2 before). The package at the
# commit before against this one, same process:

# %%
against_previous("f3e3a44")

# %% [markdown]
# Then the bracket's steps. On the 8192- and 32768-word tiles they took 4-7 interpolating steps, each a compare and a
# count over the whole row. Now the first step counts two words at once, placed around rank k by a normal law fitted
# to the row's finite scores (their sum and sum of squares, taken as the row loads); on bell-shaped rows that one step
# closes the middle, and since the counts stay exact a poor fit only costs steps. The interpolation estimate also
# became a float32 product instead of an int64 division. The package at the commit before against this one:

# %%
against_previous("f8e2ef0")

# %% [markdown]
# Then fewer instructions per word, with the algorithm unchanged. The pass tests the middle with one unsigned
# compare, `(h - lo) < span`, where it took two compares, a compare on the column for a wide tie, and a bound on the
# scratch slot. The bracket already guarantees the slot bound. A wide tie now turns the ties past its cut into
# padding words before the pass, so the pass no longer tests the column. The first counts take the row's ends from
# rotated unsigned words (a subtract and a min or max, no select). The law's sums mask on one `|x| < inf` test.
# Against the package at the commit before:

# %%
against_previous("548c909")

# %% [markdown]
# Then the bracket's start. The trimmed kernel still spent a pass over the row on its candidate count and extremes
# (two packed counts, a minimum and a maximum a word) before the law's step. Now the law's two probes come first,
# and where they bracket the k-th word they are the bracket: the count and the extremes are taken only where a probe
# misses. The law's sums come from a quarter of the row (every fourth run of 512 columns, the runs alternating so
# that their mean and spread are the row's), and a uniform law beside the normal one places the probes on flat rows
# as well as on bell-shaped ones. Each thread also loads its words from one base address (constant offsets, no
# 64-bit address computed per word). Against the package at the commit before these changes:

# %%
against_previous("f914747")

# %% [markdown]
# Then the rows the probes missed. 1 % NaN rows at k = 512 put their NaN above the upper probe, and took the pass
# of counts and extremes. Now the excess over the rank that probe aimed at is taken as scores on top, and both probes
# are tried once more. The middle's search starts from the bracket's ends, and its steps interpolate with a margin on
# the wider side, so both ends close in. Against the package at the commit before (whose kernel is 29876e9's):

# %%
against_previous("1dbd9ae")

# %% [markdown]
# Then the order of the row's loads. Each chunk's sums and ordered words were computed right after that chunk's
# loads, and the compiler placed some of a thread's 64 loads after that arithmetic. Loading the four chunks first
# lets it issue them together. The work is the same, in another order. Against 0ae5745's kernel:

# %%
against_previous("0ae5745")

# %% [markdown]
# **What it means.** Large k is a different algorithm, picked from shapes alone. It is not a bigger sort. Below SM/6
# rows of 256K the split radix select keeps every SM busy; from SM/6 rows, and at any row count when the rows are
# 2048-8192 blocks wide, one register-resident row per SM is faster. What is left is one SM's work per row: at 256K
# about 20 µs, one program per SM (the tile takes the register file), so 640 rows run in five waves. Cutting the
# kernel after each stage (a probe, in git at 0ae5745) shows where a wave goes:

# %%
stages = records.load_records("k_large/bisect_stages_7ef8050")
print(records.record_status(stages))
if stages[0]:
    print(tables.format_table([{k: "-" if r[k] is None else r[k]
                                for k in ("dist", "k", "variant", "median_us", "per_wave_us", "check")}
                               for r in stages[0]]))

# %% [markdown]
# Loading the row with the law's sums is under a third of a wave, and prefetching the next wave's rows into L2
# (`middle_pf`) does not shorten it. The probes, the bracket and the pass take about 9 µs more, the middle and the
# tail about 4.3. The 640 rows take about 94 µs: five waves of about 19 µs. Going much further would take two rows
# in flight per SM, and a register-resident row does not leave room for them.
#
# What a wave does with its time, counted: Nsight Compute on the same launch (a probe in git at 4bb2bee, the
# card's clocks as found), with the caches flushed before each of its replay passes (its default) and kept (as
# back-to-back calls find them). The first two records are the kernel before the trims above (548c909), the third the
# trimmed one (e8cefdd), caches kept; the bracket's new start was not profiled. Per case: the profiled time, warp
# instructions per row and the ALU pipe's share of them, how busy the ALU pipe and the issue slots were, eligible of
# resident warps per scheduler, and the largest stall reasons (cycles a warp waited per instruction issued):

# %%
for name in ("k_large/bisect_pipes_601327a", "k_large/bisect_pipes_30373a5_warm", "k_large/bisect_pipes_e8cefdd_warm"):
    pipes = records.load_records(name)
    kept = (pipes[1] or {}).get("cache_control", "all") == "none"
    print(records.record_label(pipes[1], pipes[2]) if pipes[0] else "NO RECORD",
          "· caches", "kept" if kept else "flushed", "between the profiler's passes")
    if pipes[0]:
        print(tables.format_table(dev_runs.pipe_rows(pipes[0])))

# %% [markdown]
# **What it means.** One program per row leaves 4 warps a scheduler, and the row's integer work (compares, selects,
# counts: the ALU pipe, at half the FMA pipe's rate) keeps that pipe busy more than half of the kernel. At 640 rows
# the ALU instructions alone took about 73 of the 136 profiled µs before the trims and 63 of 123 after them (11 %
# fewer instructions a row), and the loads, reductions and instruction fetch around them are not hidden by 4 warps;
# warm or flushed caches change that little. (Flushed, a single wave waits mostly on fetching the row's unrolled
# code; warm, as the timed calls run, it does not.) Fewer instructions a word are the way out that won, twice: the
# trims, then the bracket's start without its own pass over the row. The others measured lost (the table at the
# end): fewer ALU instructions through a scratch round trip became waits on memory, more words counted per search
# step added ALU work, and twice the warps per program (1024 threads) ran slower everywhere.

# %% [markdown]
# ### Value distributions at one wave
#
# **Claim.** Across the five value distributions (normal, +100 shift, all equal, 1 % NaN, ramp) the select should
# stay within 1.2x of its fastest. At 160 and 640 rows it does, with room. At one wave of rows it sits at that bound,
# because a wave takes as long as its slowest row. Equal and ramp rows finish without a long search (a middle of one
# value, or the law's probes close to exact); normal and 1 % NaN rows search their middle for a number of steps that
# depends on their scores, and at k = 512 the 1 % NaN rows also count once more, their NaN lying above the law's
# upper probe.
#
# **Evidence.** The same shapes at 256K in eight processes, each drawing other scores of the same laws (`--seed`):
# per shape, each draw's slowest / fastest time over the five distributions, summarized over the draws:

# %%
spread = records.load_records("k_large/select_ab_dists_seeds")
print(records.record_label(spread[1], spread[2]) if spread[0] else "NO RECORD")
if spread[0]:
    print(tables.format_table(dev_runs.dist_spread_rows(spread[0])))

# %% [markdown]
# **What it means.** The fastest distributions take the same time in every draw; the slowest moves by about 2 µs
# with the slowest of its 128 rows. At 128 rows and k = 512 the median draw is at the 1.2x bound, so one record's
# verdict at that shape is a draw. Shorter searches for the slowest row (five forms) and sparing the 1 % NaN rows
# their second count (four forms) were each measured in one process against the kernel of their day
# (`notes/select_kernel.md`, "Large k at long context" and the changelog): each cost the other rows, or the 640-row
# batch, more than it saved here. The target stays missed at this one shape in this H200 record. A sixth form, one
# max where a single word is missing at either end of the search, adds nothing to a step and is the kernel now.
# No H200 was lent for it: every request for one got an H100. The same seven-draw run on an H100, at this kernel:

# %%
spread100 = records.load_records("k_large/select_ab_dists_seeds", gpu="h100")
print(records.record_label(spread100[1], spread100[2]) if spread100[0] else "NO RECORD")
if spread100[0]:
    print(tables.format_table(dev_runs.dist_spread_rows(spread100[0])))

# %% [markdown]
# **What it means.** On the H100 no draw of any shape passes 1.2x: the worst is 1.158, 128 rows at k = 512, the
# shape where the H200 record of the kernel before had five draws of eight above it. The two records differ in card
# and kernel, so they are not a ratio of each other. On this card the distribution target is met at every shape;
# an H200 run of this kernel is still owed.
#
# ### The targets at k = 2048 and 512, in one record
#
# **Claim.** At k = 2048 and 512 the default arm is faster than `torch.topk` over the padded width (`torch`) and
# over the host-known live slice (`torch_live`) at every point of the decode grid (concurrency 1, 32, 128 ×
# next_n 1, 5 × 4K-256K), in both stages. The select stage's median is at least 3x at every context, and 640
# rows × 256K select in under 100 µs at k = 2048. The full stage's median at 256K is not 3x.
#
# **Evidence.** One sweep, all three arms timed in one process on the same inputs, on an H100 (the card this
# kernel was recorded on):

# %%
big = records.load_records("k_large_sweep/select_sweep", gpu="h100")
idx_big = points.index(big[0]) if big[0] else {}
display(Markdown(markdown.provenance(big[1], big[0], big[2]) if big[0] else "NO RECORD"))
display(Markdown(markdown.table(["target", "measured", "status", "detail"], targets.large_k_targets(idx_big))
                 if big[0] else "NO RECORD"))

# %% [markdown]
# **Where the full stage stops.** The full stage reads every live logit (8 per block), writes the block scores and
# reads them back in the select, and writes ids and flags. Its time cannot go below those bytes at the measured
# streaming rate (`floor µs`). Per row count at 256K: the time that 3x over `torch` allows, the floor of the
# default composition, the floor of a path that would read the logits once and keep no scores tensor, what the
# allowance leaves after the default floor, and the select stage alone, from the same run:

# %%
ceilings = (big[1] or {}).get("ceilings")
for kk in (2048, 512):
    print(f"H100, k = {kk}, 256K context, full stage:")
    display(Markdown(targets.full_budget_table(idx_big, 262144, kk, ceilings) if ceilings else "NO RECORD"))
print("H200 (the main record: the previous kernel, torch arms from an earlier run), k = 2048, 256K context, full stage:")
display(Markdown(targets.full_budget_table(idx, 262144, 2048, sweep[1]["ceilings"]) if sweep[0] else "NO RECORD"))

# %% [markdown]
# **What it means.** On the H100, at 640 rows, 3x over `torch` asks for less time than the default composition's
# bytes take at its streaming rate (3.1 TB/s), so no select that keeps a scores tensor can reach it there, however
# fast. A one-pass path would have about 53 µs of room. The package has no one-pass kernel for k > 256: the fused
# kernel keeps `KP × G1 × block_size` logits in registers, at most 4096. And at k = 64 the fused arm lost to the
# unfused one (section 7). The H200 streams 1.5x faster (4.6 TB/s) and `torch` gains less from it, so there the
# same allowance leaves 44 µs after the floor at 640 rows: the limit on that card is the select's five waves
# (94 µs), not the bytes. At 128 and 160 rows the H100's floor leaves 14 and 9 µs for the select at k = 2048 (12
# and 6 at k = 512). One wave of the register-resident select takes 19 µs (two waves at 160 rows): one program per
# SM, its tile taking the register file, and the pipes records above (the same design, earlier kernels) place a
# wave's time on the ALU pipe. At 5 rows the split radix select takes 21 of the 22.8 µs left, and the scores
# launch needs more than the rest. With six points per context, a 3x median needs four points at 3x: the two that
# are met (1 and 32 rows) and two of 5, 128 and 160 rows, each short by the margin shown. So the full-stage median
# target stays missed at 256K on both cards: on the H100 at the bytes (640 rows) and the select's wave (128-160
# rows), on the H200 at the select's wave and the scores launch. Every other large-k target is met in the H100
# record of this kernel.
#
# **Correctness of this kernel.** The k > 256 fuzz draws k from 257 to 2048 (up to 160 rows, `row_repeat` 1-5,
# every value distribution, ragged ends, garbage past the ends), poisons the output and compares every slot with
# the exact reference. The large-k matrix adds the named cases (all-equal rows, NaN payloads, rows shorter than k,
# `row_repeat`). Both ran on the H100 at this kernel:

# %%
for name in ("fuzz_large_k.json", "verify_matrix_large_k.csv"):
    print(records.summarize_verification(records.data_dir() / "h100" / "k_large" / name))

# %% [markdown]
# ### Token-level top-k on long rows (k = 512 / 2048, 64K-256K tokens)
#
# DeepSeek V3.2's indexer selects k = 2048 tokens from each row of logits, and a row is as long as the context:
# 64K-256K columns, eight times the block workspace above. The bisect select cannot hold such a row in registers,
# and the radix select reads it once per digit, which lost to `torch.topk` from 32 rows.
#
# **Claim.** The long-row select (`kernels/longrow.py`, `docs/design.md` §7) reads each row once, in three
# launches. A sample launch picks, per row, a threshold word meant to leave somewhat more than k of the row above
# it, and a bucket width for the words above it. Then several programs per row stream the row, keep only the few
# words above the threshold (and, apart, the columns equal to it), and count them in a per-row histogram of those
# buckets. A finish launch, one program per row, reads the histogram to find the bucket that holds the k-th word,
# so it ranks only that bucket's few words. A sample that misses costs a second read of the row, never a
# wrong answer. So it should beat `torch.topk` at every k = 512 / 2048 point where the rule sends it, and at many
# rows its time should follow the bytes.
#
# **Evidence.** `python -m dsa_lab.bench.tokens` on an H100, with `torch.topk` in the same process and the ids
# compared as sets first. The table gives, per k and width, the median speedup over the grid's 20 points (1-640
# rows, full and ragged lengths; 163840 columns is the width of one of the peers' shapes below):

# %%
tok = records.load_records("longrow/tokens", gpu="h100")
print(records.record_status(tok))
if tok[0]:
    print(f"rows whose ids differ from torch.topk's: {longrow.bad_rows(tok[0])}")
    print(tables.format_table(longrow.speedup_summary(tok[0])))

# %% [markdown]
# The value laws at the two sizes that take the most time, and prefill-shaped calls (4096 causal rows), with each
# point's time over one read of its live logits at the measured streaming rate (`x_floor`):

# %%
if tok[0]:
    print(tables.format_table(longrow.point_rows(tok[0], "laws")))
    print()
    print(tables.format_table(longrow.point_rows(tok[0], "prefill")))

# %% [markdown]
# **What it means.** Every point of the grid, every value law and every prefill shape is faster than
# `torch.topk`: the grid medians are 4.3-5.6x, the smallest grid point 3.6x, so the target of a 4x median holds at
# every width (both k together: 4.34 / 4.62 / 4.88 / 5.27x). Every value law runs within 1.32x the time of normal
# values (`x_normal`), the 1.5x targeted: the slowest is a narrow `band` of values with sparse outliers, 1.32x at
# 64 x 256K and 1.16x at 640 x 64K. It took 1.57x before two changes kept together (changelog): the sample launch
# now zeroes each row's counters in the call's own buffer, so no buffer is kept between calls and no reset or
# barrier is left in the finish (normal values 0.99x over the A/B's points, 64 x 256K 60 to 54 µs), and from a
# search's 12th step a probe that finds no word between it and the bound it replaces moves that bound on to the
# nearest word, one reduction where halving the empty range between `band`'s clusters took about 30 steps. The
# one-read floor is still off: 1.80x at 640 x 256K, 2.5-3.8x in prefill; the 1.3x targeted is open.
#
# Ties that overflow the buffer used to cost the stream as well: every tile sent its ties through the buffer's
# slots (an atomic, a scan, the stores) even after it was full. Now a program that has seen the buffer full only
# counts its ties, and adds them once at its end. The laws in one process, before (`5752739`) and after:

# %%
ties = records.load_records("longrow/ab/ab_v3_ties_laws", gpu="h100")
print(records.record_status(ties))
if ties[0]:
    print(tables.format_table(longrow.probe_rows(ties[0], {"torch": "torch_us", "old": "before", "new": "after"})))

# %% [markdown]
# **What it means.** Where the tie is wide and the buffer fills early (`equal`, `three`), the call takes 0.65-0.94x
# the time; at 640 x 256K `equal` goes from 533 to 346 µs. `band` barely moves (0.96-0.99x): its cost is the
# finish's scan, not the stream.
#
# That scan took steps of 2048 columns. Two changes to it were measured against the kernels before them (`0a8df9e`),
# each in one process: steps of 8192 columns after the first 2048 (kept: a tie met in the first columns still reads
# no more), and the scan shared among up to 16 finish programs a row, each taking some of the stream programs'
# shares, placed in column order by the counts those programs wrote (not kept). Then the wide steps only where the
# tie is spread thin, against wide steps everywhere (`82b81d3`). The value laws at 64 rows:

# %%
scan = records.load_records("longrow/ab/ab_v3_scan_laws", gpu="h100")
share = records.load_records("longrow/ab/ab_v3_share_laws", gpu="h100")
print(records.record_status(scan))
print(records.record_status(share))
if scan[0] and share[0]:
    print(tables.format_table(longrow.probe_rows(scan[0], {"old": "before", "new": "wider_steps"}, where={"rows": 64})))
    print()
    print(tables.format_table(longrow.probe_rows(share[0], {"old": "before", "new": "shared"}, where={"rows": 64})))
steps = records.load_records("longrow/ab/ab_v3_steps_laws", gpu="h100")
print(records.record_status(steps))
if steps[0]:
    print(tables.format_table(longrow.probe_rows(steps[0], {"old": "wide_steps", "new": "where_thin"},
                                                 where={"rows": 64})))

# %% [markdown]
# **What it means.** Wider steps take `band` at 64 x 256K from 219 to 193 µs, and cost `three` up to 8 % (its needed
# ties lie within a few thousand columns, where one wide step costs more than the narrow ones it replaces). Taking
# them only where the needed rest lies more than four narrow steps off at the tie's mean density over the row takes
# that cost back and keeps `band`'s gain (the third table, at 64 rows; over 1, 64 and 640 rows `three` takes
# 0.95-0.98x the time at five of its six points, 1.03x at 64 x 64K). Sharing
# the scan cut `band` further, to 157 µs, but made `equal` at 64 x 64K a third slower and every call with normal
# values up to 4 % slower: a finish program holds 512 threads at 94 registers, one program an SM, so the added
# programs run in waves whatever the values. Even with a scan as cheap as normal values' finish, `band` would keep
# the rest of its excess: its stream takes 86 µs against 63 (its ties go through the buffer's slots until the buffer
# is full) and its sample 24 against 12 (more counting steps).
#
# **Claim.** The sample can see such a tie before the stream runs: its word is held by many sampled columns (about
# 70 of 4096 at 256K), and the ties needed lie far into the row. With the threshold one sampled word below it, the
# tie comes with the candidates (the words above the threshold, 8192 at most), and the finish cuts it by column in
# registers, with no scan. Two forms, each against the kernels before them (`b769bda`) in one process: the step
# wherever the tie would fill half its buffer (`4915d68`), and only where the finish's scan for it would take more
# than four wide steps (`4535d98`), for `band` and normal values:

# %%
for name, label in (("ab_v3_tiestep_all_laws", "step_wherever_wide"), ("ab_v3_tiestep_laws", "step_before_long_scan")):
    rec = records.load_records(f"longrow/ab/{name}", gpu="h100")
    print(records.record_status(rec))
    if rec[0]:
        for law in ("band", "normal"):
            print(tables.format_table(longrow.probe_rows(rec[0], {"old": "before", "new": label},
                                                         where={"dist": law})))
            print()

# %% [markdown]
# **What it means.** Stepping below the tie takes `band` at 64 x 256K from 194 to 102 µs (1.34x normal values
# then, 2.45x before), one row from 99 to 43, and 640 x 256K from 1117 to 747. The first form also
# stepped at 64K, where the tie (about 3,900 columns) fits its buffer: there it only added candidates and cost
# `band` 1.32-1.38x at 1-640 rows. The scan-length condition keeps those rows as they were. Normal values never take the step; their
# calls run 0-4 % faster with the changed sample launch. A tie too wide for the candidate buffer (more than about
# 6,000 columns with the words above it) is still found by a scan: `three` and `equal` are far wider, but their
# needed ties lie close.
#
# Where the time goes, from the same kind of call profiled one launch at a time (`dsa-lab ab --profile`). The
# launches overlap: the stream's programs start while the sample runs and wait for its threshold, and the finish's
# programs start while the stream's last ones run, so each time includes some waiting and the parts add up to more
# than the call:

# %%
prof = records.load_records("longrow/ab/ab_v5_lean", gpu="h100")
print(records.record_status(prof))
if prof[0]:
    print(tables.format_table(longrow.stage_rows(prof[0], arm="new")))

# %% [markdown]
# The same kind of calls placed in time instead, with the current kernels (the `old` arm of `ab/ab_v8_float.csv`:
# `dsa-lab ab --profile` records each launch's median start and end from the call's first kernel start). `before_us`
# is how far into the call the stream's first program starts, `after_us` how long the finish runs past the stream's
# last program, and the stream's rate is the rows' bytes over its span:

# %%
tl8 = records.load_records("longrow/ab/ab_v8_float", gpu="h100")
print(records.record_status(tl8))
if tl8[0]:
    print(tables.format_table(longrow.timeline_rows(tl8[0], arm="old")))

# %% [markdown]
# **What it means.** From 64 rows the stream launch is most of the time. At 640 x 256K 62 of the call's 389 µs lie
# outside it: its first programs start 24 µs in, as the sample launch's programs end, and the finish runs 38 µs past
# its last one; over its own span it moves the rows at 2.07 TB/s. Within 1.3x the token record's floor (217 µs: 282)
# and with both ends
# as they are, the stream would have 220 µs, the floor itself: the ends must shrink, not only the stream. The stream
# reads the row once, but at
# 0.9-2.1 TB/s, not the card's 3.2 TB/s. At a few rows the call takes 13-20 µs, and the launches that run one
# program per row set it: the sample's search for its threshold word over its 4096 words, then the finish's for the
# k-th word in its bucket, each step of them a reduction across the program's warps.
#
# How much of a one-row call the two searches take, from a probe on an H200: trees of the kernel before the change
# below (`ee46a1f`) that skip one search or both, timed in one process with it at two draws of the inputs. Skipping
# the finish's search returns wrong ids (`!`) unless the bucket was needed whole; without the sample's search the
# threshold is the word of 2.0, which leaves fewer than k above it at 64K, where the row is then read again:

# %%
for seed in ("s0", "s7"):
    probe_s = records.load_records(f"longrow/ab/probe_search_{seed}", gpu="h200")
    print(records.record_status(probe_s))
    if probe_s[0]:
        print(tables.format_table(longrow.probe_rows(probe_s[0], {
            "new": "both", "pkg_nofk": "no_finish_search", "pkg_nosk": "no_sample_search", "pkg_none": "neither"},
            where={"rows": 1})))

# %% [markdown]
# **What it means.** Without either search one row takes 12-14 µs on this H200. The sample's search adds 0.3-8.5
# µs to a call, the finish's up to 3.6 (nothing where the k-th word's bucket is needed whole). Which calls take
# longer is a matter of the draw: the number of counting steps changes with how the words fall.
#
# **Claim.** The finish's search can be shorter. The bucket of the k-th word holds a few words (a few dozen at
# most on normal values), and which of them are needed depends only on their order. Stored to the row's buffer of
# equal columns (not needed where the top k lie above the threshold), at most 64 of them can each be ranked against
# all the others at once, in pairs (word, then column: ties to the smaller column): one round trip through memory
# and one reduction, where the counting steps over the 8192-word tile take one reduction each. A larger bucket is
# searched as before. The two finishes in one process on an H100, the threshold rank below in both (`ee46a1f`
# against `0c5657f`):

# %%
pairs = records.load_records("longrow/ab/ab_v3_pairs_rank", gpu="h100")
pairs_laws = records.load_records("longrow/ab/ab_v3_pairs_rank_laws", gpu="h100")
print(records.record_status(pairs))
print(records.record_status(pairs_laws))
if pairs[0] and pairs_laws[0]:
    print(tables.format_table(longrow.probe_rows(pairs[0], {"torch": "torch_us", "old": "counting", "new": "pairs"},
                                                 where={"k": 2048})))
    print()
    print(tables.format_table(longrow.probe_rows(pairs_laws[0], {"old": "counting", "new": "pairs"},
                                                 where={"rows": 640})))

# %% [markdown]
# **What it means.** At 4-8 rows every call takes 2-9 % less time (4 x 160K from 22.3 to 20.7 µs, against the
# 20 µs targeted); 64 rows move by -5 to +3 %, 640 rows within 1 % on normal values and up to 2.3 % slower on
# `nan1pct` and (at k = 512) `band`. One row moves by -8 to +5 %: the round trip through memory costs about what a
# few counting steps do, so a draw whose search was short gains nothing. The sample's search is the larger of the
# two and is not changed.
#
# **Claim.** The sample's search could take fewer rounds. Each of its steps counts the words at or above one probe
# word and waits for a reduction across the program's eight warps. Counting four probe words a round (four 16-bit
# counts in one 64-bit sum) takes about half as many rounds on normal values, and letting the search stop on any
# word up to half a standard deviation of the rank above it (a slightly lower threshold, a few more candidates)
# saves one more. The finish's search took the same rounds. Before and after in one process on an H100
# (`a21b046` against `1533c4b`; `no_window`: the rounds without the early stop):

# %%
search4 = records.load_records("longrow/ab/ab_v3_search4", gpu="h100")
probes4 = records.load_records("longrow/ab/ab_v3_search_probes", gpu="h100")
print(records.record_status(search4))
print(records.record_status(probes4))
if search4[0] and probes4[0]:
    print(tables.format_table(longrow.probe_rows(
        search4[0], {"torch": "torch_us", "old": "one_count", "new": "four_counts", "new:RW=0": "no_window"},
        where={"k": 2048})))
    print()
    print(tables.format_table(longrow.probe_rows(
        probes4[0], {"old": "one_count", "pkg_fin": "finish_four", "pkg_s2": "sample_two"}, where={"k": 2048})))

# %% [markdown]
# **What it means.** Four counts a round are slower at 38 of 40 points, by up to 8 % (64 x 256K from 75.7 to
# 79.8 µs). The profiles show the sample launch taking up to 1.5 µs longer at one row and 3.5-8 µs longer at 640
# rows. Four compares, 64-bit adds and a 64-bit reduction a round cost more than the steps they save. The early
# stop alone changes nothing (median 0.998x). Two probes of the idea fare no better. With the finish alone on four
# counts (`finish_four`) nothing moves. With the sample on two counts packed in one 32-bit sum (`sample_two`) some
# shapes gain and others lose by as much (1 x 256K 19.4 to 17.6 µs, 1 x 64K 16.8 to 18.0). All three were reverted
# (changelog "long-row rank search in rounds of four counts"). A one-row call stays bound by its three launches and
# by a reduction's latency per step, not by the number of words it counts.
#
# The sample's size matters too. It was 8192 words (1024 runs of 8 columns); 4096 words cost less at every point,
# and 2048 words lose where the threshold misses. The same calls under three sample sizes, one process (a probe of
# plan variants on the kernels of 8fd5dca; `!` marks ids that differ from `torch.topk`'s, none here):

# %%
probe = records.load_records("longrow/ab/probe_8fd5dca", gpu="h100")
print(records.record_status(probe))
if probe[0]:
    print(tables.format_table(longrow.probe_rows(probe[0], {
        "torch": "torch_us", "new:nch1024": "8192 words", "new": "4096 words", "new:nch256": "2048 words"})))

# %% [markdown]
# **What it means.** 4096 words take 1 x 256K from 23.3 to 17.7 µs and 640 x 256K from 621 to 596. The
# threshold is the sample's word of the rank that leaves about 2k of the row above it, so the sample's rank is
# 2k scaled down to it: 64 at 256K columns for k = 2048, but 16 for k = 512, and 8 with 2048 words. A rank of 8
# misses often (the 1275 µs above: rows with fewer than k words above the threshold are read again by one
# program), and so does 16: one row in 120 on rows of independent values (a Poisson tail). So the rank is at least
# 64 where the buffer has room for twice what it aims at (8192 words above the threshold, for either k); that puts
# the miss below one row in a million. 2048 words are faster still where they do not miss, but rank 64 in them
# aims at 8192 words above the threshold at 256K, the whole buffer; at their rank 32 (k = 2048 over 256K) one row
# in 3,600 misses.
#
# **Claim.** Aiming at 2k is more margin than a dense sample needs. The rank that the row's k-th word takes in
# the sample, `m = k x 4096 / L`, spreads by about its square root on rows of independent values. A threshold at
# rank `m + 5 sqrt(m) + 4` (at most the rank that aims at half the buffer: `plans.longrow_rank`) misses at most
# about one row in 3.6 million at every width to 256K, and aims at fewer words than 2k wherever the sample sees
# the row densely (64K-160K at k = 2048) or k is small (k = 512): fewer words for the stream to compact and the
# finish to rank. The rank, the words it aims at, and the exact odds against a miss (the sample's word's rank in the
# row follows a negative hypergeometric law):

# %%
print(tables.format_table(longrow.rank_rows([65536, 131072, 163840, 262144], [512, 2048])))

# %% [markdown]
# The two rules in one process on an H100, the kernels otherwise the same (`1cb6959` against `ee46a1f`):

# %%
rank_ab = records.load_records("longrow/ab/ab_v3_rank", gpu="h100")
print(records.record_status(rank_ab))
if rank_ab[0]:
    print(tables.format_table(longrow.probe_rows(rank_ab[0], {"torch": "torch_us", "old": "aim_2k", "new": "margin"},
                                                 where={"rows": 640})))

# %% [markdown]
# **What it means.** Where the rank falls the call follows the words it no longer compacts: 640 x 64K at
# k = 2048 (3024 words aimed at instead of 4096) takes 239 µs instead of 261, 640 x 256K at k = 512 (1728 instead
# of 4096) 544 instead of 557. At 256K and k = 2048 the rank stays 64, and so does the time. The odds hold only where
# the sampled words are independent: a row whose values follow each other closely over the 8-column runs counts as
# fewer samples, and the rule aims at the same odds at every width where the old one had far longer odds at 64K.
# A miss costs a second read, never a wrong answer.
#
# Why the stream is slow: the stream as it was before the change below, in the same calls with parts of it taken
# out, one tree each, in one process (these trees return wrong ids on purpose; only their stream times are read).
# `count only` compares each word with the threshold and counts, and does nothing else:

# %%
parts = records.load_records("longrow/ab/ab_v3_parts", gpu="h100")
vec = records.load_records("longrow/ab/ab_v3_vec", gpu="h100")
print(records.record_status(parts))
print(records.record_status(vec))
if parts[0] and vec[0]:
    print(tables.format_table(longrow.stream_parts_rows(
        {"full": (parts[0], "old"), "no histogram": (parts[0], "pkg_nohist"), "no tile scan": (parts[0], "pkg_nocum"),
         "no slot, scan or store": (parts[0], "pkg_nostore"), "count only": (vec[0], "pkg_nocold"),
         "count, 16-byte loads": (vec[0], "pkg_noc")}, where={"k": 2048})))

# %% [markdown]
# **What it means.** Counting alone streams 640 x 256K in 273 µs (2.5 TB/s), 240 µs with 16-byte loads. The
# compaction of about 1.6 % of the words costs the other 400 µs. Taken out one at a time, the tile's prefix scan
# saves 221 µs and the histogram 115; without the slot's round trip, the scan and the stores the stream takes 322. Nsight Compute on the stream launch (`logs/ncu_stream_a95e778.txt`)
# says the same from the other side: the SMs issue on 74 % of cycles (compute throughput 77 %) while DRAM runs at
# 26 %. The launch is bound by instructions, not by bytes or by an atomic's round trip: every word pays for a
# compaction that 98 % of them do not need.
#
# So each thread of the stream now holds a column of the tile (a tile is [8, 128]: eight words a thread, 32 columns
# apart), counts its own words, and keeps its first two words above the threshold in registers; only those 2 x 128
# go through the slot scan, the stores and the histogram. A tile where some thread holds three or more takes all its
# words through them, as before. That took the stream from 652 to 512 µs at 640 x 256K (`ab/ab_v3_pairs.csv`, the
# two in one process) and from 81 to 69 at 64 x 256K. At k = 2048 on 64K rows the words above the threshold are
# 6 % of the row, so most tiles of 128 threads have a thread with three, and the time stayed.
#
# The stream stayed bound by instruction issue. Nsight Compute on it at 640 x 256K (`logs/ncu_stream_details.csv`,
# `logs/ncu_stream_sass_summary.csv`): the SMs are 84 % busy issuing while DRAM is 38 % busy, and each warp spends
# about 457 instructions on a 1024-column tile, 10 of them barriers. Trimming them (one packed sum a tile instead of
# two, unmasked loads in whole tiles: 3-11 % fewer, `logs/ncu_stream_trees.csv`) moved the graph-timed call by
# -1 to +7 % (`ab/probe_stream_cuts.csv`).
#
# **Claim.** The finish spends its instructions elsewhere: each of its compactions (the words above the k-th word's
# bucket, the bucket's words to the tie buffer, the taken words, the ties) is a prefix sum over its 8192-word tile,
# and Triton lowers a scan over a 1-D tile of 16 words a thread as 16 scans across the threads. Laid out as
# `[16, 512]` (a column a thread), the same compaction is one scan over the threads' totals and the rest in
# registers: the finish's code drops from 11,512 to 9,168 instructions under the GPU's Triton (3.6). So the finish
# should take less time wherever it is on the path: at few rows, where it is a third of the call, and at 640 rows,
# where it runs in waves of one program an SM. Apart from it, the stream's register cap: chosen at 72 (seven
# programs an SM) under a newer Triton, it spills 32 bytes a thread under 3.6; at 80 (six) it does not. And a third
# form: a stream without its bucket histogram, whose finish then searches all its candidates for the k-th word.
# All six trees in one process on an H100 (`old`: the kernels before; `old80`: with the cap at 80; `slots`: the
# thread-order finish; `slots80`: both; `nohist`, `nohist80`: the stream without the histogram):

# %%
cand = records.load_records("longrow/ab/ab_v4_cand", gpu="h100")
cand_laws = records.load_records("longrow/ab/ab_v4_cand_laws", gpu="h100")
print(records.record_status(cand))
print(records.record_status(cand_laws))
cand_arms = {"torch": "torch_us", "old": "old", "pkg_old80": "old80", "new": "slots", "pkg_fin80": "slots80",
             "pkg_nohist": "nohist", "pkg_nohist80": "nohist80"}
if cand[0] and cand_laws[0]:
    print(tables.format_table(longrow.probe_rows(cand[0], cand_arms, where={"k": 2048})))
    print()
    print(tables.format_table(longrow.probe_rows(cand_laws[0], cand_arms, where={"rows": 640})))

# %% [markdown]
# **What it means.** The thread-order finish takes 0.81-0.97x the time at every point (geometric mean 0.88 over
# both k): the finish launch itself from 20 to 13 µs at 64 x 256K and from 103 to 68 at 640 x 256K, most at one to
# four rows (1 x 64K from 16.9 to 13.8 µs). The cap of 80 alone moves the call by -1 to +3 % (geometric mean
# 0.998), and with it the stream no longer spills. Without the histogram the stream is 5-6 % faster, and the call
# is faster at 640 rows of k = 2048 and on the laws, but its finish's longer search costs more than that at 1-64
# rows (up to 1.36x the thread-order finish's time at one row), so it is not kept. The kept form (`slots80`) is
# the one the token grid above measures, with the stream below.
#
# **Claim.** At four warps a program, every reduction of a stream tile crosses the warps: the tile's counts, the
# scan of the threads' counts, the largest count and the slot's atomic, handed to every thread, go through shared
# memory and barriers (ten a tile), and the four warps wait on the slowest. A program of one warp keeps each of them
# inside the warp, with no barrier, and a tile takes the "first two words" path or not for 32 threads, not 128.
# Then the loop itself: the tile's loads addressed from one scalar (a thread's eight loads at fixed offsets from one
# address, each bounded by one 32-bit compare), the row's counter claimed by one lane and handed on by a warp
# reduction, the general compaction stored flat, and a thread's first two words from a chain of selects over its
# eight. It then compiles at 64 registers, so 32 programs share an SM. The stream should take less time wherever it
# is most of the call (from 64 rows), and one row should not move. Two A/Bs, each in one process on an H100: one
# warp (`one_warp`) and two (`two_warps`) against four, then the trimmed loop against one warp:

# %%
warps = records.load_records("longrow/ab/ab_v5_warps", gpu="h100")
lean = records.load_records("longrow/ab/ab_v5_lean", gpu="h100")
lean_laws = records.load_records("longrow/ab/ab_v5_lean_laws", gpu="h100")
print(records.record_status(warps))
print(records.record_status(lean))
print(records.record_status(lean_laws))
if warps[0] and lean[0] and lean_laws[0]:
    print(tables.format_table(longrow.probe_rows(
        warps[0], {"torch": "torch_us", "old": "four_warps", "new": "one_warp", "pkg_w2": "two_warps"},
        where={"k": 2048})))
    print()
    print(tables.format_table(longrow.probe_rows(lean[0], {"torch": "torch_us", "old": "one_warp", "new": "trimmed"},
                                                 where={"k": 2048})))
    print()
    print(tables.format_table(longrow.probe_rows(lean_laws[0], {"old": "one_warp", "new": "trimmed"})))

# %% [markdown]
# **What it means.** One warp a program takes 0.88-1.05x the time of four over both k (geometric mean 0.96): the
# stream launch at 640 x 256K from 471 to 427 µs, at 640 x 64K from 153 to 126. Two warps gain less (0.99) and are
# not kept. The trimmed loop takes 0.79-1.00x the one-warp time (geometric mean 0.905): the stream at 640 x 256K from
# 427 to 323 µs (2.1 TB/s), at 64 x 256K from 57 to 51, while one row takes 0.96-1.00x. The laws gain as well
# (0.81-1.00x), `band` least (0.95-0.98x at 64 rows): its time is not in the stream's common path. Both are in
# the kernels the token grid above measures. The stream still spends about 256 instructions a warp on a 256-column
# tile, 32 a word of a thread, for compaction work that about 1.6 % of the words need: the bytes floor needs fewer
# instructions a word again.
#
# **Where the stream's time goes now.** The ablation above, repeated on the one-warp stream in one process on an
# H100 (`ab/ab_v5_parts.csv`; the stream launch compiles as in the grid's kernels): the whole launch, the launch
# only counting its words above and equal to the threshold (no slot, store or histogram atomic: the finish then
# reads the rows again, so only the stream launch's time counts here), and the launch only reading its words:

# %%
parts5 = records.load_records("longrow/ab/ab_v5_parts", gpu="h100")
print(records.record_status(parts5))
if parts5[0]:
    print(tables.format_table(longrow.stream_parts_rows(
        {"whole": (parts5[0], "new"), "count only": (parts5[0], "pkg_count"), "read only": (parts5[0], "pkg_read")})))

# %% [markdown]
# **What it means.** This launch reads 640 x 256K in 243 µs (2.76 TB/s, 1.15x the measured floor of 212), and
# counting adds nothing to the read. The compaction of the few words above the threshold (the tile's slot claim,
# the two words' stores, the histogram's atomics) takes the other 84 of its 327 µs, and 20 of 51 at 64 x 256K.
# The sample and the finish add about 70 µs around the stream at 640 rows. 1.3x this run's floor is 276 µs: the read
# alone leaves 33 µs for the compaction, the sample and the finish together. Sizing the stream's grid to one wave
# of programs (32 an SM) or to 128 does not close it (changelog).
#
# Serving engines use CUDA top-k kernels. Their times below are transcribed, not measured by this harness:
# FlashInfer's radix top-k measured on an H100 with `torch.topk` in the same process, and two figures the peers
# published (their card and method; the record's metadata says where each comes from). Each speedup is over the
# `torch.topk` of its own process:

# %%
peers = records.load_records("longrow/peers_transcribed", gpu="h100")
print(records.record_status(peers))
if peers[0] and tok[0]:
    same = records.gpu_name(peers[1]) == records.gpu_name(tok[1])  # else each speedup over its own torch only
    print(tables.format_table(longrow.peers_rows(peers[0], tok[0], same_card=same)))

# %% [markdown]
# **What it means.** Against FlashInfer's radix top-k (its times transcribed, each ratio against its own
# process's `torch`) the select is faster at all ten of its shapes: 1.64-2.89x its speed at 128K-256K columns, 1-640
# rows, and 1.15x / 1.17x at its two of 64K. The published cluster kernel is 1.1x as fast at 64 x 256K (49.5 µs
# against 54.7); vLLM's persistent top-k takes 22.1 µs at 4 x 160K, against 19.4 here. Those kernels are CUDA only;
# none of them runs on ROCm.
#
# The record before this one (e521f8f) had two launches: the row's last program to arrive finished it alone,
# with 64-bit digit passes over its keys. The same points, in two records of the same harness on the same kind of
# card (each ratio is against `torch` in its own process):

# %%
old = records.load_records("longrow/tokens_e521f8f", gpu="h100")
print(records.record_status(old))
if old[0] and tok[0]:
    print(tables.format_table(longrow.versions_rows(old[0], tok[0], shape="grid", where={"rows": 640})))
    print()
    print(tables.format_table(longrow.versions_rows(old[0], tok[0], shape="laws", where={"rows": 64})))

# %% [markdown]
# **What it means.** A finish that searches one bucket in registers, and a stream that only streams and
# compacts, halve the time at 640 rows. The laws that ran slower than `torch` before (`shifted_narrow`, `band`,
# `nan1pct`) now run faster. The tries that lost are in the notes' changelog. They include a stream of wider tiles,
# slot blocks that drop the per-tile atomic, a second tile read ahead, 16-byte loads (the scattered stores then
# need a layout change through shared memory), a slot per word from eight counters, and a prefix scan over the
# lanes' counts.
#
# **Where the rule sends it.** At few rows the parallel radix select already fills the GPU, and the long-row
# select's sample and finish are fixed costs. Both forced, with the rule's choice beside them:

# %%
cx = records.load_records("longrow/crossover", gpu="h100")
print(records.record_status(cx))
if cx[0]:
    rows_cx = longrow.crossover_rows(cx[0], sm_count=(cx[1] or {}).get("sm_count") or 132)
    print(tables.format_table(rows_cx))
    missed = [r for r in rows_cx if r["faster"] != r["rule"]]
    print(f"the rule picks the slower of the two at {len(missed)} of {len(rows_cx)} points")

# %% [markdown]
# **What it means.** From 128K columns the long-row select wins from one row (14-18 µs against the radix's
# 32-53: the radix pays a pass per digit over the row). The rule: rows of 2^16 columns and more at any row count,
# narrower rows from 2^20 columns in all (`plans.LONGROW_MIN_WIDTH`, `plans.LONGROW_MIN_COLUMNS`). It is a shape
# rule, so it adds no compiled variant. Its bound was 2^17 while the two were within 15 % at 64K up to 8 rows; with
# the 4096-word sample the long-row select won there at 5 of 8 points (the radix 7-27 % slower), so the bound moved
# to 2^16. In this record the rule picks the faster kernel at every point; the closest are 2-4 rows of 64K at
# k = 2048, where the radix takes 1.29-1.32x the time.
#
# **Correctness.** The fuzz menu's long-row entries draw widths above 32768 columns, k from 257 to 2048, token and
# block-size-1 candidate calls and every value law. They poison the output and check every slot against the exact
# reference. The named matrix's long-row cases pin the laws, ragged and zero lengths, k above the live length and
# row repeats at GPU sizes. The concurrency check ran the long-row select on four streams, two threads and
# concurrent graphs. All of these ran the current kernels' instructions: the records name three commits (24c3785,
# a4f0fde, 27a4205) whose long-row kernels compile to the same instructions on every target
# (`dsa-lab compile-check --compare`). The fuzz below has 70,598 cases, the next 25,646:

# %%
for name in ("fuzz_longrow.json", "fuzz_longrow_27a4205.json", "verify_matrix_long.csv", "streams.json"):
    print(records.summarize_verification(records.data_dir() / "h100" / "longrow" / name))

# %% [markdown]
# **Compile once.** The long-row select is three kernels, two forms each (logits, and block scores at block size
# 1): six variants in the warm list, none chosen by a shape. Fresh processes after `dsa-lab warmup`, each making the
# first call at long-row shapes the warm list never used (`dsa-lab coldstart --long`):

# %%
cold = records.load_records("longrow/coldstart_long", gpu="h100")
print(records.record_status(cold))
if cold[0]:
    print(longrow.first_call_summary(cold[0]))

# %% [markdown]
# **The decode step in DeepSeek V3.2's form.** With `block_size=1` the decode step selects tokens, not blocks:
# the producer writes each row's scores and the long-row select reads them (`DecodeStep(..., topk_blocks=2048,
# block_size=1)`). `dsa-lab sweep --suite step --block-size 1` at 128K, beside the upstream composition (`torch`:
# the same producer, then `torch.topk` over the row):

# %%
v32 = records.load_records("step_breakdown", gpu="h100")
print(records.record_status(v32))
if v32[0]:
    print(tables.format_table(longrow.step_rows(v32[0], block_size=1)))

# %% [markdown]
# **What it means.** The fused step is 1.6-3.2x the upstream composition's speed, every point checked against
# `torch.topk`'s ids. At one sequence the select is most of the step (23-26 of 31-44 µs: the small-batch floor
# above). From 32 sequences the producer is (its FP8 scores over 128K tokens), and the select is 8-16 % of the
# step.

# %% [markdown]
# ## 5. Fewer dependent steps: the short chains (k = 64, 16K-64K)
#
# At k = 64 every row longer than 512 blocks took the whole hier chain: stage A split over programs, an arrival
# counter, then B-D in the last program to arrive, about 10 µs at 16K whatever the row count. But a row of at most
# KP super groups (4096 blocks at k = 64) has every super group chosen anyway, so stage A buys nothing: one program
# can run C-D over the row alone (`short_chain`, decided on the device from the row's extent). Dev run K timed it
# against the stage-A chain (`chain_a`) on the same inputs (predicted 10.0 → about 5.5 µs at 1 row; measured 7.7):

# %%
tune16 = records.load_records(dev("K"))
print(records.record_label(tune16[1], tune16[2]) if tune16[0] else "NO RECORD")
if tune16[0]:
    print(tables.format_table(dev_runs.variant_rows(tune16[0], ["torch", "default", "chain_a"], stage="select", k=64)))

# %% [markdown]
# The wider super groups everywhere (`g2_16`) against the kernel without them (`default`): 64K rows gain (they now
# take a short chain) but 256K rows, which still take the main chain, lose (stage C ranks 1024 level-1 maxima instead
# of 512). A rule on shapes cannot tell the two apart, since the width is the same. So the wide groups live only in a
# chain that a row takes when its own extent fits:

# %%
tune64 = records.load_records(dev("L"))
print(records.record_label(tune64[1], tune64[2]) if tune64[0] else "NO RECORD")
if tune64[0]:
    print(tables.format_table(dev_runs.variant_rows(tune64[0], ["torch", "default", "g2_16"], stage="select", k=64)))

# %% [markdown]
# And the check that the chains earn their code: both short chains compiled out (`chains_off`) against the kernel
# with them (`default`; `fast` adds the unmasked whole-tile loads that the kernel also kept):

# %%
chains = records.load_records(dev("M"))
print(records.record_label(chains[1], chains[2]) if chains[0] else "NO RECORD")
if chains[0]:
    print(tables.format_table(dev_runs.variant_rows(chains[0], ["torch", "default", "fast", "chains_off"],
                                                    stage="select", k=64)))

# %% [markdown]
# **What it means.** Without the chains, 64K rows are much slower, and 256K rows are within a few percent either
# way. The chains stay. They cost nothing on the host, because each row picks its own chain on the device.
#
# ## 6. One row: the floor of a dependent chain
#
# **Claim.** At one row the select is a chain of dependent steps, not a stream. With `tl.topk` as the selection
# step, that chain has a floor of its own, whatever the bytes.
#
# **Evidence.** `python -m dsa_lab.bench.latency` times the chain's steps alone (one program
# per launch, each stage's load depending on the previous stage's top-k, every output checked against `torch.topk`),
# beside the 1-row select in the same process. The `640 programs` cases run the same chain in 640 programs at once
# (one per row, as the hier kernel runs it beyond the SM count). That is the chain's throughput at the 640 × 256K
# point, set beside that point's bytes floor.

# %%
lat = records.load_records("latency_ladder")
f640 = idx.get(("triton", "select", 262144, 128, 5, 64, "normal"), {}).get("floor_us")
Markdown(sections.latency_section(lat[0], lat[1] or {}, lat[2], "####", f640) if lat[0] else "NO RECORD")

# %% [markdown]
# Is that limit Triton's or the GPU's? A probe outside the package (in git at 5670acf) answers by measurement with
# two selects written in CUDA C++, checked against the reference before they are timed beside the Triton
# default. The first is one CTA per row. The second spreads one row over a cluster of 8 CTAs that exchange warp
# maxima and candidates through distributed shared memory; it handles only the common rows and visibly refuses the
# rest:

# %%
probe = records.load_records("cuda_probe/cuda_probe")
Markdown(sections.cuda_probe_section(probe[0], probe[1] or {}, probe[2], "####") if probe[0] else "NO RECORD")

# %% [markdown]
# **What it means.** One CTA per row is no faster than Triton at 16K and 256K, because a single SM issues all the
# work. Going below the `tl.topk` chain's floor needs the cluster's explicit exchange, which `triton.language` does
# not offer. So the package stays Triton-only (`docs/design.md` §7, targets), and the probe stays outside it. The
# per-step costs are in `notes/select_kernel.md`.
#
# ## 7. Fused or unfused: measured, not assumed
#
# **Claim.** The fused kernel reads each row's logits once and never writes block scores. The unfused composition
# (bounded scores kernel → select → flags) writes them and reads them back, each pass 1/8 of the logits' bytes at
# block_size 8. On bytes alone the fused kernel should win. Measured, it does not, so `impl="triton"` takes the
# unfused composition and the fused kernel stays an arm of its own (`impl="triton_fused"`).
#
# **Evidence.** The recorded sweep, full stage (logits → candidates → flags), k = 64: the fused arm's speedup over
# the default (unfused) arm per context (below 1 = fused slower), then both arms at representative points with the
# default arm's floor:

# %%
print(records.record_label(sweep[1], sweep[2]) if sweep[0] else "NO RECORD")
display(Markdown(report_tables.fused_table(idx) if sweep[0] else "NO RECORD"))
display(Markdown(report_tables.representative_table(idx, "full") if sweep[0] else "NO RECORD"))

# %% [markdown]
# Why the fused stream is slow was measured, not guessed. Unmasked 16-byte loads moved it little
# (`notes/select_kernel.md`, v2.4), and stage A in a launch of its own with fewer registers did not help either (the
# table at the end). A stand-alone kernel that does exactly stage A's work, checked on every slot against a torch
# reference, then isolated the cause: the tile's layout. `cur` is the old formulation, a 3-D `[NT, S, BS]` tile of
# pointers whose compiled layout spreads a warp over eight super groups 2 KB apart. `flat` loads the same logits as
# one contiguous 1-D vector reshaped to `[level-1 group, block, logit]`. `flat_hi` also keeps block maxima as
# ordered integers, one int64 max per level-1 key. `scores` and `read` drop the keys (timing only) and give the
# ceiling of this loop shape. Per shape and variant, the fastest configuration:

# %%
stagea = records.load_records("tune_dev/stagea_dev")
print(records.record_label(stagea[1], stagea[2]) if stagea[0] else "NO RECORD")
if stagea[0]:
    print(tables.format_table(dev_runs.stagea_rows(stagea[0])))

# %% [markdown]
# **What it means.** The kernel now loads whole tiles as `flat_hi` does (`_l1_keys_whole`), close to the bare read
# at 160–640 rows. The fused arm still loses at almost every point of the record, so the default stays unfused:
# the choice comes from the table above, not from counting bytes. The fused kernel stays an arm of its own,
# measured in every sweep.
#
# ## 8. The roofline, with measured ceilings
#
# **Claim.** Every point is placed against `floor = max(launch time in a graph, bytes / streaming bandwidth)`, with
# both ceilings measured on the same GPU in the same run (`docs/design.md` §5). Few-row points sit far from the floor,
# because the chain of section 6 sets them. The largest points come closest, and what is left there is the scores
# stream itself.
#
# **Evidence.** The ceilings of the record, then every sweep point (circles: the `select` stage; diamonds: the
# `full` stage, fused and unfused Triton arms side by side), then the fraction of the floor reached per stage and arm:

# %%
print("ceilings:", (sweep[1] or {}).get("ceilings", "NO RECORD"))

# %%
# NBVAL_IGNORE_OUTPUT
figures.roofline_figure(*sweep)

# %% [markdown]
# The same at k = 2048. The byte model counts one read of the live scores (and the logits for `full`); the radix
# select reads its row once per digit and the bisect select once into registers (its middle, at most 2048 columns,
# once more from L2), so the distance to the floor is, in part, passes:

# %%
# NBVAL_IGNORE_OUTPUT
figures.roofline_figure(*sweep, k=2048)

# %%
if sweep[0]:
    for stage in ("select", "full"):
        pts = records.select_rows(sweep[0], stage=stage, k=64, dist="normal")
        for arm in sorted({r["arm"] for r in pts}):
            fr = sorted(r["roofline_frac"] for r in records.select_rows(pts, arm=arm) if r.get("roofline_frac"))
            if fr:
                print(f"{stage:6s} {arm:15s} roofline fraction: median {fr[len(fr) // 2]:.3f}, best {fr[-1]:.3f}, worst {fr[0]:.3f}")
    display(Markdown(markdown.table(["target", "measured", "status", "detail"],
                                  [targets.big_point_target(idx, "select", limit_us=40.0),
                                   targets.big_point_target(idx, "full", floor_mult=1.5)])))
else:
    print("NO RECORD")

# %% [markdown]
# At 640 × 256K the full stage is the scores launch and then the select. A dev run timed each alone, one after the
# other, and on two streams with no dependency between them. That last form is faster than any real overlap of the
# two could be, so it bounds what overlapping them can buy. Below the table: that bound against the point's floor
# for live logits read once (the fused arm's floor in the sweep):

# %%
bound = records.load_records("tune_dev/overlap_bound")
print(records.record_label(bound[1], bound[2]) if bound[0] else "NO RECORD")
if bound[0]:
    print(tables.format_table([{c: r[c] for c in ("context", "rows", "arm", "median_us", "check")} for r in bound[0]]))
    live = [r["floor_us"] for r in records.select_rows(sweep[0] or [], stage="full", context=262144, concurrency=128,
                                                   next_n=5, k=64, dist="normal", arm="triton_fused") if r.get("floor_us")]
    best = min(r["median_us"] for r in bound[0] if r["context"] == 262144 and r["rows"] == 640
               and r["arm"].startswith("concurrent"))
    scores = next(r["median_us"] for r in bound[0] if r["context"] == 262144 and r["rows"] == 640
                  and r["arm"] == "scores")
    if live:
        print(f"\n640 x 256K: live-logits floor {live[0]:.1f} µs; scores launch alone {scores:.1f} µs = "
              f"{scores / live[0]:.2f}x the floor; both launches with no dependency {best:.1f} µs = "
              f"{best / live[0]:.2f}x the floor")

# %% [markdown]
# **What it means.** Even with no dependency between the two launches, the 640 × 256K full stage stays above 1.5×
# its live-logits floor. The scores launch alone takes most of that time. Overlapping the two launches (a per-row
# handoff, or one launch for both) cannot close the gap, and the table below shows those attempts lost. The remaining
# lever is the scores stream's own rate.
#
# ## What we tried
#
# Each row below was a measured candidate against the kernel of its day, in one process on the same inputs, and
# lost or did not pay for its code. Ratios are candidate time / baseline time (above 1 = the candidate slower),
# computed here from the dev records named in the last column; where one experiment was timed on both stages, each
# stage has its own summary. What each option was and the versions around it: `notes/select_kernel.md` ("Options
# deleted" and "Changelog").

# %%
SEL, FULL = "select", "full"
TRIED = [  # (option, what it was, verdict, [(record, stage, baseline arm, candidate arm(s)[, filter]), ...])
    ("radix: compacted list, two-launch split",
     "k = 2048: the later digits over a compacted list of the threshold bin, or the row split over two launches "
     "(the faster of the two per point)",
     "deleted: on tied or shifted values the list is as long as the row, and a shape rule cannot see values",
     [(dev("A"), SEL, "r30", ("r31", "r32"), {"k": 2048})]),
    ("register radix select at k = 64", "the hier stages' top-k as a register radix select instead of a bitonic one",
     "kept only from KP = 512, where it wins", [(dev("G"), SEL, "default", "rsel")]),
    ("stage A in a launch of its own", "stage A in one launch, B–D in a second with one program per row "
     "(select; the fused kernel on the full stage)",
     "deleted: no consistent gain for one more launch",
     [(dev("W"), SEL, "default", "tp"), (dev("U"), SEL, "default", "tp"),
      (dev("P"), FULL, "fold_fused", "fold_fused_2p")]),
    ("group maxima from strided loads", "level-1 keys from strided loads and an elementwise max (no replicated layout)",
     "deleted: the strided gathers cost more than the replication they avoid", [(dev("V"), SEL, "old", "default")]),
    ("level-1 groups of 4 at 64K / 256K", "narrower level-1 groups in the long chains (stage B then ranks twice as "
     "many super maxima)", "deleted",
     [(dev("S"), SEL, "default", "g4"), (dev("S"), FULL, "fold_unfused", "fold_unfused_g4")]),
    ("wider stage-A tiles", "128 or 256 super groups per stage-A iteration (the faster per point)",
     "deleted: more registers, fewer resident programs", [(dev("T"), SEL, "default", ("nt128", "nt256"))]),
    ("scores: one program per padded tile", "the scores grid as one program per 512-block tile of the padded width",
     "deleted: idle programs at short contexts", [(dev("S"), FULL, "fold_unfused", "fold_unfused_grid")]),
    ("scores: a live schedule", "the scores programs scheduled by the rows' live extents (the fastest variant per "
     "point)", "deleted",
     [(dev("AH"), FULL, "fold_unfused", ("fold_unfused_live_m8", "fold_unfused_live_m16", "fold_unfused_live_t256_m8",
                                         "fold_unfused_live_t256_m16", "fold_unfused_live_w8_m4",
                                         "fold_unfused_live_w8_m8"))]),
    ("one launch (tail)", "the unfused composition as one launch: each row's last scores program selects the row",
     "deleted: the one kernel's registers leave two programs per SM resident",
     [(dev("AM"), FULL, "fold_unfused", ("fold_unfused_tail", "fold_unfused_tail_w4", "fold_unfused_tail_m8"))]),
    ("threshold filter", "rank only the keys above a lower bound of the k-th key, in place of the chains' last top-k "
     "stages", "deleted",
     [(dev("AN"), SEL, "hier", ("hier_f4", "hier_f1")), (dev("AN"), FULL, "fold_unfused", "fold_unfused_f4")]),
    ("per-row handoff", "each row's select waits for that row's scores only, not the whole scores launch",
     "deleted: the scores launch fills the SMs until its last wave",
     [(dev("AP"), FULL, "fold_unfused", "fold_unfused_rs")]),
    ("stage-A prefetch", "stage A with two tiles' loads in flight", "deleted: the select gains a little, the full stage "
     "loses (more registers)",
     [(dev("AQ"), SEL, "hier", "hier_apf"), (dev("AQ"), FULL, "fold_unfused", "fold_unfused_apf")]),
    ("register bounds", "Triton's maxnreg on the scores launch and on the select kernel",
     "deleted: within a few percent, one more knob",
     [(dev("AR"), FULL, "fold_unfused", "fold_unfused_r64"),
      (dev("AR"), FULL, "fold_unfused_sa", "fold_unfused_sa_r64")]),
    ("stage A compiled out", "a hier variant without stage A for calls whose scores launch stored its keys",
     "reverted: a small gain at 256K only, not worth a compiled variant per k bucket",
     [(dev("AV_full_k64_vs37a65ab"), FULL, "old", "new")]),
    ("no early signal at SM/5–SM/4 rows", "the stage-A scores launch not signalling its dependent select early, at "
     "27–33 rows (132 SMs)", "reverted: the early signal stays at every row count",
     [(dev("AY_full_k64"), FULL, "pkg_prev", "new", {"rows": (27, 32, 33)})]),
    ("stage-A tiles of 8192 lanes", "the stage-A scores launch on 1024-block tiles (half the programs), 8 or 4 "
     "warps, at every row count or above SM/5 rows", "not adopted: 4K gains at 32 rows, 256K loses 2-4 µs there",
     [(dev("AZ_full"), FULL, "new", "pkg_bj"), (dev("AZ_full"), FULL, "new", "pkg_bjr"),
      (dev("BB_bjr4"), FULL, "new", "pkg_bjr4")]),
    ("stage-A launch at <= 32 registers", "the same launch as two half tiles in turn, or under maxnreg 32: 16 "
     "programs per SM, every stage-A grid in one wave", "not adopted: 1 row and 256K slower",
     [(dev("BC_full"), FULL, "new", "pkg_half"), (dev("BC_full"), FULL, "new", "pkg_r32")]),
    ("bisect: one compaction pass", "k > 256: every word at or above the bracket's low end written once, with its "
     "column, to a scratch; the picks found and written from that tile read back",
     "reverted: 256K k = 512 faster, k = 2048 no faster from 128 rows, 16K-64K and the full stage slower; the ALU "
     "work it saved became waits on memory",
     [(dev("BD_select_k2048"), SEL, "old", "new"), (dev("BD_select_k512"), SEL, "old", "new"),
      (dev("BD_full"), FULL, "old", "new")]),
    ("bisect: 1024 threads", "k > 256: a program of 32 warps (the register tile at 64 registers a thread, still one "
     "program per SM: twice the warps to hide latency), the smallest tile 4096 words; alone and with the trimmed pass",
     "not adopted: slower at every point from 32 rows (16K up to 2x, 640 x 256K 125 -> 140 µs)",
     [(dev("BF_select_k2048"), SEL, "old", ("pkg_w32", "pkg_w32lean")),
      (dev("BF_select_k512"), SEL, "old", ("pkg_w32", "pkg_w32lean"))]),
    ("bisect: masks again, middle in thirds", "on the trimmed pass: its store masks compared again after the scans "
     "(a run-time zero keeps the compiler from parking them in registers), alone and with the middle searched two "
     "probes a step near the thirds", "not adopted: 1-6 % faster at 32-160 rows x 256K, 3-5 % slower at 640 x 256K "
     "(the batch where the select costs most); the simpler pass kept",
     [(dev("BG_select_k2048"), SEL, "pkg_lean", ("pkg_lean2", "new")),
      (dev("BG_select_k512"), SEL, "pkg_lean", ("pkg_lean2", "new"))]),
    ("bisect: the middle in thirds, again", "on the bracket started from the law's probes: the middle's search with "
     "two probes a step near the thirds of its range (one reduction of two packed counts)",
     "not adopted: within 3 % either way, no gain; the halving search kept",
     [(dev("BH_select_k2048"), SEL, "pkg_v3", "pkg_v4"), (dev("BH_select_k512"), SEL, "pkg_v3", "pkg_v4")]),
    ("bisect: 16 words a search step", "the middle's search counting 16 (or 8) words a reduction, laddered around "
     "the interpolated k-th or spread evenly; the 2048-word tile through the middle or in registers (the fastest "
     "variant per point)", "reverted: each step's compares cost more than the reductions it saved",
     [(dev("BE_select_k2048"), SEL, "old", ("new", "pkg_n8", "pkg_uni", "pkg_c0", "pkg_ld")),
      (dev("BE_select_k512"), SEL, "old", ("new", "pkg_n8", "pkg_uni", "pkg_c0", "pkg_ld"))]),
    ("bisect: the middle aimed at rank k", "the middle's interpolating search aiming each step (or its first step) at "
     "rank k itself, without the margin on the wider side",
     "not adopted: the aim stalls on one end of a bell's tail; ramp rows faster, normal and shifted ones slower",
     [(dev("BJ_select"), SEL, "pkg_v7n", "new"), (dev("BL_select"), SEL, "pkg_v7r2", "new")]),
    ("bisect: the +inf / NaN retry counting one word", "where the upper probe counts k or more: it becomes the "
     "bracket's lower end and one more word is counted (not two probes)",
     "not adopted: the distributions at 128 x 256K closer (1.145x against 1.177x), 640 x 256K 96.7 -> 99.6 µs",
     [(dev("BM_select"), SEL, "pkg_v7r2", "new")]),
    ("bisect: +inf as the bracket's end after a miss", "where the upper probe counts k or more: it becomes the "
     "bracket's lower end and +inf its upper one (one count of +inf and above instead of the second try), the "
     "middle's own largest word its upper end; alone and with the loads first",
     "not adopted: slower at every point, the 1 % NaN rows too; the loads first kept alone",
     [(dev("BN_select"), SEL, "pkg_head", ("new", "pkg_R", "pkg_Rhead"))]),
]
tried = dev_runs.tried_rows(TRIED)
Markdown(markdown.table(list(tried[0]), [list(r.values()) for r in tried]))

# %% [markdown]
# ## Try it: rows × context
#
# Live on a GPU; without one, the nearest recorded point plus an interpreter check at 1/64 scale (the title says
# which).

# %%
# NBVAL_IGNORE_OUTPUT
widgets.rows_widget(records=sweep)
