"""Dev measurement (H200): choose the dispatch of ``impl="triton"`` from measured variants.

    DSA_LAB_COMMIT=... python3 scripts/gpu_tune_dev.py --section A..Z [--check-only] [--out DIR] [--max-s S]

Sections (inputs are the sweep's: :func:`dsa_lab.sweep.select_stage_inputs` / ``full_stage_inputs``):

* ``A`` large k (512, 2048), select stage: the default hier kernel against the radix variants
  (v3.0 every digit over the row, v3.1 compaction with tile 2048 / 4096, v3.2 split over programs).
* ``B`` k = 64, few rows (1 / 8 / 32) at 16K-256K, three distributions (normal, shifted, equal): hier
  with num_warps 2 / 4 / 8, hier with a 2048-key direct top-k (16K only), split and compact radix.
* ``D`` k = 64 select: hier num_warps 4 / 8 / 16 (direct path at 4K, the chain beyond); k = 2048 default dispatch.
* ``E`` k = 64 full stage: fused (num_warps 4 / 8) against the unfused composition at 4K-256K, 1-640 rows.
* ``F`` the v3.3 parallel radix (every digit pass split over programs, five launches) against v3.0 and hier,
  k = 2048 / 512 / 64 at 16K-256K, 1-640 rows, plus equal / shifted values at 256K.
* ``G`` k = 64: the hier kernel with the register radix select (v2.2, ``rsel``) in place of ``tl.topk``, with
  direct (one program) thresholds 512-8192, num_warps 4 / 8; select stage (1-640 rows, 4K-256K, normal plus
  equal / shifted at three shapes) and the full stage (fused and unfused, with and without ``rsel``).
* ``H`` the default dispatch after v3.4 / v2.2 (k = 2048 / 512: parallel radix with short rows whole in one
  program at fewer rows than SMs, v3.0 or hier with radix-select stages beyond) against v3.0 and hier; k = 64
  few rows with hier's group 4.
* ``I`` k = 64 full stage with flags: the select kernel writing the flags (``with_flags=True``) against the
  separate flags kernel, fused and unfused, 1-640 rows at 4K-256K; flags checked byte for byte.
* ``J`` prepared for the next session: fused / unfused full stage with in-kernel flags vs the flags kernel at
  160-640 rows; the parallel radix with P forced to 2 / 4 at 128-640 rows x 256K (k = 2048 / 512); hier groups of 4
  at k = 64, few rows.  Run ``--check-only`` in a parallel process first (compiles), then the timed pass.
* ``K`` fifth session: the short chain (rows of at most KP super groups skip stage A; k = 64 at 16K) against
  the stage-A chain, select and full stage; the fused full stage at 160-640 rows with 2-8 programs per row and
  num_warps 4 / 8 (flags in the kernel) beside the flags kernel and the unfused composition; the parallel radix
  with P forced to 2 / 4 at 128-640 rows x 256K (k = 2048 / 512).
* ``L`` after K: hier with super groups of 8 x 16 (``group2``; the short chain then covers 64K) at k = 64, select
  and full stage; the fused plan's P >= 4 against one program per row; the radix split rule at 64K.
* ``M`` sixth session: stage-A tiles wholly inside the live extent loaded without a bounds mask (``fast_a``), the
  scores kernel's whole tiles (``scores_whole``), fused P = 8 / 8192-logit tiles, full stage with flags at 4K-256K;
  select stage with both short chains off (the 256K regression of 851a4a9) beside the default.
* ``N`` after M: stage A in a launch of its own (``two_phase``: B-D, direct and short-chain rows in a second
  launch, one program per row), fused and unfused, full stage with flags at 4K-256K and the select stage.
* ``O`` seventh session: the fused stage A's whole tiles as one contiguous 1-D load with keys in the
  ordered-integer domain (``_l1_keys_whole``); fused (``fast_a``, 4 / 8 warps, 4 / 8 programs per row) against the
  unfused composition, full stage with flags at 4K-256K, 1-640 rows; equal and 1% NaN values at 640 x 256K.
* ``P`` after O: the fused kernel in two launches (stage A alone with 4 / 8 warps and 4 / 8 programs per row, then
  B-D with 8 warps; flags by the flags kernel or the second launch) against the single launch and the unfused
  composition beyond twice as many rows as SMs (320 / 384 / 640 rows at 4K-256K; 160 x 256K).
* ``Q`` eighth session, full stage with flags (k = 64, 4K-256K, 1-640 rows): the bounded scores kernel with
  about 4 / 16 x SM programs striding over each row's tiles (``scores_mult``) against one program per padded
  tile; the kernel's flags zeroed as 8-byte words (``flags_wide``); the fused direct path as one 1-D load
  (``direct1d``); ids without flags (the flags' cost); select stage at 16K with groups of 4.
* ``R`` after Q: the unfused full stage with the scores kernel at 16 / 32 x SM programs, the flags zeroed by the
  scores launch (``flags_in_scores``) and the third short chain (``short_chain3``: level-1 groups of 4 for rows of
  at most 2048 columns) against the default; fused with word-wise flags and the third chain; select stage: the
  third chain and the whole kernel's group 4 at 16K-256K.
* ``S`` ninth session, full stage with flags (k = 64): the scores launch's programs (16 / 32 / 64 x SM, one per
  padded tile), tiles of 1024 blocks, 8 warps, unmasked whole tiles, at 4K-256K (the 640 x 256K regression of the
  ~32 x SM grid); the whole kernel's level-1 groups of 4, full stage and select stage at 64K / 256K.
* ``T`` after S: the unfused stage A's tile (``nt`` = 64 / 128 / 256 super groups per iteration instead of 32: more
  bytes in flight per program) and two programs per row, select stage at 256K (1-640 rows), full stage at 160 / 640.
* ``U`` after T: the select kernel at 4 / 16 warps (4 with 16 super groups per stage-A tile) and stage A in a launch
  of its own (four programs per row; its second launch at 8 warps), select stage at 160-640 x 256K.
* ``V`` tenth session: the group maxima a top-k ranks (stage C's level-1 keys; fused: the direct path's and stage
  D's block scores) from strided loads with an elementwise max (``strided_keys``, the default) against the old
  reduced tiles (replicated layouts), select stage at 16K-256K (k = 64, and k = 512 at 160 x 256K) and the full
  stage (unfused and fused, with flags) at 4K-256K.
* ``W`` tenth session, select stage at 256K (1-640 rows): stage A alone (``two_phase`` with ``phase_only=1``,
  timing only: arms named ``t_*`` write no ids and are not checked) beside the two launches and the one launch, and
  the unfused stage A keying super groups by their first column (``a_first_col``: one max, no argmin); full stage
  at 160 / 640 x 256K with it.
* ``X`` after W: ``a_first_col`` at 32-640 x 256K (and with two launches, four programs per row), k = 512 at 160 /
  640 x 256K, equal values at 640 x 256K, 640 x 64K (no stage A there: a control), the full stage at 32 x 256K.
* ``Y`` after X: stage C's level-1 keys (the reduced tile) stored to the row's workspace and reloaded 1-D before
  the top-k (``c_workspace``), alone and with ``a_first_col``, select stage at 16K-256K and the full stage.
* ``Z`` after Y: ``c_workspace`` with ``a_first_col``, full stage at 160 / 640 x 256K; select at 64 / 128 rows x
  256K (the ``a_first_col`` rule's edge, P = 4 / 2).
* ``AA`` (eleventh session): the 64K rows' second short chain ranking its 1024 level-1 keys in pairs first
  (``l1_pairs``: one top-k over 512 pair maxima, one over the chosen pairs' 128 keys) against one top-k over 1024,
  select stage at 1-640 rows (and equal values at 640) and the full stage at 1 / 32 / 640 rows, 64K context.
* ``AB`` after AA: ``l1_pairs_min = 512``, so the 16K rows' third short chain (512 level-1 keys) ranks pairs
  first as well (a top-k over 256, then one over 128), select at 1 / 32 / 640 rows and full at 1 / 640 rows, 16K.
* ``AC`` (twelfth session): ``l1_pairs`` as the default, its pairs now read straight from the workspace when the
  level-1 keys are already there, against ``l1_pairs=False`` (the eleventh session's kernels): the AA points and
  k = 48 at 640 x 64K.
* ``AD`` after AC's re-record: the 256K full stage at 1-32 rows (which moved by +-15% between the records of
  d26f268 and 1d76555), ``l1_pairs`` on and off in one process; the select stage at 32 x 256K as a control.
* ``AE`` (fourteenth session): the unfused full stage with the scores launch storing stage A's keys
  (``scores_a``: the select runs B-D alone) against the default composition (stage A inside the select), k = 64
  at 4K-256K, 1-640 rows, three distributions at 640 x 256K, k = 48 / 512 at 640 x 256K.
* ``AF`` after AE (``scores_a`` lost at 160-640 rows: the scores kernel's registers 72 -> 95 at 512-block tiles, sm_90
  with triton 3.6, so fewer programs stream at once): the scores launch's tile of 256 blocks (48 registers with the
  keys, 45 without) and 8 warps, with and without ``scores_a``, full stage k = 64 at 1-640 rows.
* ``AG`` after AF: the scores launch stores stage A's keys only for rows whose extent takes the select's main chain
  (``main_chain_min``; a branch uniform over the program), so 4K-64K rows skip the reduction: 512-block tiles at 4
  and 8 warps, 256-block tiles at 4, against the default composition, full stage k = 64 at 1-640 rows.
* ``AH`` (sixteenth session): the scores launch on the live schedule (``scores_sched="live"``: about m x SM programs
  in all taking every row's live tiles, the longest extent's tile count read on the device) at m = 8 / 16, 8 warps
  (m = 4 / 8) and 256-block tiles (m = 8 / 16), against the default grid (~32 x SM programs, rows x programs per row)
  and that grid at 8 x SM; full stage with flags, k = 64, 4K-256K, 1-640 rows.
* ``AI`` after AH: the unfused select launched as a programmatic dependent of the scores launch (``pdl``: its
  bounds read before ``griddepcontrol.wait``), with the scores programs signalling ``launch_dependents`` as they start
  (``pdl_early``), and the scores grid at 8 x SM programs with and without it; full stage with flags, k = 64.
* ``AJ`` after AI (its box cut it after the 4K points: the compiles of a cold machine): ``pdl_early`` with the
  scores grid at 8 / 16 / 32 x SM programs, full stage with flags, k = 64, 16K / 64K / 256K then 4K.  Compile first
  in parallel processes (``--check-only --part i/K``), then time.
* ``AK`` after AJ: the same arms (without ``pdl_early`` at 16 x SM's plain grid) at 20 / 24 / 32 / 40 / 48 / 80 / 128 /
  320 rows, the rows that set the full stage's medians, for a rule by rows.
* ``AL`` (seventeenth session, ``UNFUSED_PDL = None``): the default (the rule) beside the plain launches,
  ``pdl_early`` and ``pdl_early`` at 16 x SM, at 256 / 320 / 384 / 512 / 640 rows, where AK stopped.
* ``AM`` (seventeenth session): the unfused composition in one launch (``tail``: each row's last scores program
  selects the row, :mod:`dsa_lab.tail_triton`) at 8 / 4 warps and with the scores grid at 8 x SM, against the default
  (two launches, the select a programmatic dependent by ``_pdl_rule``), full stage with flags, k = 64, 1-160 rows.
* ``AN`` (eighteenth session, prepared without a GPU; run in the nineteenth): the hier kernel's threshold filter in
  place of the chains' last top-k stages (``filter_cap``: rows without stage A, the 16K / 64K chains, FQ = 4 with
  256 slots, FQ = 1 with 512, FQ = 4 with 512; ``filter_cap_main``: 256K rows after stage B, 128 slots; both),
  select stage k = 64 at 1-640 rows x 4K-256K, four more distributions at 64K / 256K (equal values and ramps take the
  filter's second bound; the 1.2 spread target), and the full stage with flags at 16K-256K.  Measured: every filter
  arm slower where it runs.
* ``AO`` (nineteenth session): AN's filter cost the full stage 4-7x what it cost the select stage; the full stage at
  16K / 64K, 1 and 32 rows, default and ``filter_cap`` 256 / FQ 4, each with and without the dependent launch and
  the flags (``--profile`` adds each arm's kernels under torch.profiler).
* ``AP`` (nineteenth session): the full stage with the select waiting per row for the scores launch (``rowsync``;
  the scores grid turned to rows-last so that rows finish in order), at its default grid and at 16 / 8 x SM programs,
  160-640 rows x 4K-256K (where the select runs one program per row), against the default.
* ``AQ`` (twentieth session): the unfused stage A with two tiles' loads in flight (``a_prefetch``), select stage
  k = 64 at 1-640 rows x 256K (and 640 x 64K, a control without stage A; equal and 1% NaN values at 640 x 256K);
  at 320 / 640 rows also stage A alone (``t_*``: ``two_phase``, ``phase_only``) and 4 KB tiles, at 1-160 rows
  unmasked tiles without the prefetch (``fast_a``, off by default up to 2 x SM rows); the full stage with flags at
  32-640 rows x 256K and 640 x 64K.
* ``AR`` (twentieth session): register bounds (Triton's ``maxnreg``) on the launches whose extra registers cost
  residency -- the scores launch storing stage A's keys (``scores_a``: 95 registers against 72 at 4 warps, sm_90;
  AE / AG measured it slower at 160-640 rows, also where its rows skip the keys) with ``scores_maxnreg`` 72 / 64 and
  at 8 warps, the default scores launch at 64, and ``a_prefetch`` with the select kernel at 80 (96 without in the
  full stage's kernel); full stage with flags, k = 64, 32-640 rows x 256K and 640 rows x 4K-64K.
* ``AS`` (twentieth session): the 256K full stage at 160-640 rows taken apart in one process -- the default
  composition, its scores launch alone (``t_scores``: flags zeroed, dead slots unwritten) and the select over those
  scores alone (``t_select``, with ``a_prefetch``: ``t_select_apf``), timing only.
* ``C`` k = 64, many rows: hier's programs per row (1 / 2 / 4) x num_warps (4 / 8), select stage and the
  fused full stage (logits -> candidate blocks), beside the unfused composition.

Every variant's ids are first checked against the exact reference (poisoned output, every slot, as
sets); a mismatch is printed and recorded in the ``check`` column.  ``--check-only`` stops there (used to
compile in parallel processes before the timed, sequential run).  Timing: CUDA graphs
(:func:`dsa_lab.bench.time_cuda_graph`), median.  Writes ``tune_dev_<section>.csv`` and a meta JSON.
Not the recorded sweep: a dev run for ``notes/select_kernel.md``.
"""
import argparse
import csv
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from dsa_lab import bench, data  # noqa: E402
from dsa_lab.select import select_candidate_blocks, topk_select  # noqa: E402
from dsa_lab.select_triton import select_candidate_blocks_triton, topk_select_triton  # noqa: E402
from dsa_lab.sweep import BLOCK_SIZE, MML, Point, full_stage_inputs, select_stage_inputs, torch_topk_store  # noqa: E402
from dsa_lab.verify import compare  # noqa: E402

POISON = 0x7EADBEEF


def radix(tile=None, compact=True, split=False):
    return {"algo": "radix", "tile": tile, "compact": compact, "split": split}


def points(section):
    """[(stage, context, concurrency, next_n, k, dist, {variant: config})]"""
    pts = []
    if section == "A":
        var = {"hier": {"algo": "hier"}, "r30": radix(2048, False), "r31": radix(2048, True),
               "r31_t4096": radix(4096, True), "r32": radix(None, True, None)}
        for k in (2048, 512):
            for ctx in (4096, 16384, 65536, 262144):
                for conc, nn in ((1, 1), (32, 1), (32, 5), (128, 5)):
                    pts.append(("select", ctx, conc, nn, k, "normal", var))
        for ctx, conc, nn in ((16384, 32, 1), (262144, 1, 1), (262144, 128, 5)):
            for dist in ("equal", "shifted"):
                pts.append(("select", ctx, conc, nn, 2048, dist, var))
    elif section == "B":
        for ctx in (16384, 65536, 262144):
            var = {"hier": {"algo": "hier"}, "hier_nw2": {"algo": "hier", "num_warps": 2},
                   "hier_nw8": {"algo": "hier", "num_warps": 8}, "r32": radix(None, True, None),
                   "r31": radix(None, True, False)}
            if ctx <= 16384:
                var["hier_dt2048"] = {"algo": "hier", "direct": 2048}
                var["hier_dt2048_nw8"] = {"algo": "hier", "direct": 2048, "num_warps": 8}
            for conc in (1, 8, 32):
                for dist in ("normal", "shifted", "equal"):
                    pts.append(("select", ctx, conc, 1, 64, dist, var))
    elif section == "C":
        var = {f"hier_p{p}_nw{w}": {"algo": "hier", "programs": p, "num_warps": w} for p in (1, 2, 4) for w in (4, 8)}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 32, 5), (65536, 128, 5), (16384, 128, 5)):
            pts.append(("select", ctx, conc, nn, 64, "normal", dict(var)))
        fvar = {f"fused_p{p}_nw{w}": {"algo": "hier", "programs": p, "num_warps": w} for p in (1, 2, 4) for w in (4, 8)}
        fvar["unfused"] = None
        for ctx, conc, nn in ((262144, 128, 5), (262144, 32, 5), (65536, 128, 5), (16384, 128, 5), (262144, 1, 1)):
            pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
    elif section == "D":  # k = 64 select: num_warps of the hier kernel, direct path (4K) and chain
        var = {"hier_nw4": {"algo": "hier", "num_warps": 4}, "hier_nw8": {"algo": "hier", "num_warps": 8},
               "hier_nw16": {"algo": "hier", "num_warps": 16}}
        for ctx in (4096, 16384, 262144):
            for conc, nn in ((1, 1), (32, 1), (32, 5), (128, 5)):
                pts.append(("select", ctx, conc, nn, 64, "normal", var))
        rvar = {"default": None, "hier": {"algo": "hier"}, "r30": radix(2048, False)}
        for ctx, conc, nn in ((4096, 1, 1), (262144, 128, 5)):
            pts.append(("select", ctx, conc, nn, 2048, "normal", rvar))
    elif section == "E":  # k = 64 full stage: fused (num_warps 4 / 8) against the unfused composition
        fvar = {"fused_nw4": {"algo": "hier", "num_warps": 4}, "fused_nw8": {"algo": "hier", "num_warps": 8},
                "unfused": None}
        for ctx in (4096, 16384, 65536, 262144):
            for conc, nn in ((1, 1), (32, 1), (32, 5), (128, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
    elif section == "F":  # v3.3 parallel radix (every digit pass split over programs) against v3.0 (and hier, k=512)
        r33 = {**radix(None, True, None), "parallel": True}
        for k in (2048, 512):
            var = {"r30": radix(2048, False), "r33": r33}
            if k == 512:
                var = {"hier": {"algo": "hier"}, "rsel": {"algo": "hier", "rsel": True}, **var}
            for ctx in (16384, 65536, 262144):
                for conc, nn in ((1, 1), (32, 1), (32, 5), (128, 5)):
                    pts.append(("select", ctx, conc, nn, k, "normal", var))
        for dist in ("equal", "shifted"):
            for conc, nn in ((1, 1), (128, 5)):
                pts.append(("select", 262144, conc, nn, 2048, dist, {"r30": radix(2048, False), "r33": r33}))
    elif section == "G":  # v2.2: register radix select in place of tl.topk in the hier kernel (k = 64)
        rs = {"algo": "hier", "rsel": True}
        var = {"default": None, "rsel": rs, "rsel_nw4": {**rs, "num_warps": 4}, "rsel_dt2048": {**rs, "direct": 2048},
               "rsel_dt4096": {**rs, "direct": 4096}, "rsel_dt8192": {**rs, "direct": 8192}}
        for ctx in (4096, 16384, 65536, 262144):
            for conc, nn in ((1, 1), (8, 1), (32, 1), (32, 5), (128, 5)):
                pts.append(("select", ctx, conc, nn, 64, "normal", var))
        for ctx, conc, nn in ((16384, 1, 1), (65536, 1, 1), (262144, 128, 5)):
            for dist in ("equal", "shifted"):
                pts.append(("select", ctx, conc, nn, 64, dist, var))
        fvar = {"unfused": None, "unfused_rsel": rs, "unfused_rsel_dt2048": {**rs, "direct": 2048},
                "fused": {"algo": "hier"}, "fused_rsel": rs, "fused_rsel_nw8": {**rs, "num_warps": 8}}
        for ctx in (4096, 16384, 65536, 262144):
            for conc, nn in ((1, 1), (32, 5), (128, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
    elif section == "H":  # the default dispatch after v3.4 / v2.2 (radix parallel+short, hier rsel at k = 512)
        for k in (2048, 512):
            var = {"default": None, "r30": radix(2048, False)}
            if k == 512:
                var["hier"] = {"algo": "hier", "rsel": False}
            for ctx in (4096, 16384, 65536, 262144):
                for conc, nn in ((1, 1), (32, 1), (32, 5)):
                    pts.append(("select", ctx, conc, nn, k, "normal", var))
        var = {"default": None, "hier_g4": {"algo": "hier", "group": 4}, "hier_g4_rsel": {"algo": "hier", "group": 4, "rsel": True}}
        for ctx in (16384, 65536, 262144):
            for conc, nn in ((1, 1), (32, 1)):
                pts.append(("select", ctx, conc, nn, 64, "normal", var))
    elif section == "I":  # full stage with flags: flags written by the select kernel vs the separate flags kernel
        var = {"sep_unfused": None, "fold_unfused": None, "sep_fused": None, "fold_fused": None}
        for ctx in (4096, 16384, 65536, 262144):
            for conc, nn in ((1, 1), (8, 1), (32, 5), (128, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", var))
    elif section == "J":  # open points left by the fourth session (prepared, not yet run)
        # the fused arm with flags at many rows: in-kernel flags vs the flags kernel, in one process
        fvar = {"sep_unfused": None, "fold_unfused": None, "sep_fused": None, "fold_fused": None}
        for ctx in (16384, 262144):
            for conc, nn in ((32, 5), (128, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
        # large k at 256K with 128-640 rows: the parallel radix with P forced to 2 / 4 (the plan gives 1 there)
        r34 = {"algo": "radix", "parallel": True, "short": 4096}
        var = {"default": None, "r34_p2": {**r34, "split": 2}, "r34_p4": {**r34, "split": 4}}
        for k in (2048, 512):
            for conc, nn in ((32, 4), (32, 5), (128, 5)):
                pts.append(("select", 262144, conc, nn, k, "normal", var))
        # k = 64 few rows: hier with groups of 4 (section H ran out of time before these)
        gvar = {"default": None, "hier_g4": {"algo": "hier", "group": 4}}
        for ctx in (16384, 65536, 262144):
            for conc, nn in ((1, 1), (32, 1)):
                pts.append(("select", ctx, conc, nn, 64, "normal", gvar))
    elif section == "K":  # fifth session: the short chain (k = 64, 16K), fused programs per row, large k at 256K
        sc_off = {"short_chain": False}
        var = {"default": None, "chain_a": sc_off}
        for conc, nn in ((1, 1), (8, 1), (32, 1), (32, 5), (128, 5)):
            pts.append(("select", 16384, conc, nn, 64, "normal", var))
        for dist in ("equal", "ramp"):
            pts.append(("select", 16384, 1, 1, 64, dist, var))
        fvar = {"fold_unfused": None, "fold_unfused_chain_a": sc_off, "fold_fused": None, "fold_fused_chain_a": sc_off}
        for conc, nn in ((1, 1), (32, 1), (128, 5)):
            pts.append(("full", 16384, conc, nn, 64, "normal", fvar))
        # fused at many rows: programs per row (the plan gives 1 from 264 rows on) x num_warps; flags in the kernel
        # (fold_) vs the flags kernel (sep_)
        pvar = {"fold_unfused": None, "sep_fused": None, "fold_fused": None}
        for P in (2, 4, 8):
            for nw in (4, 8):
                pvar[f"fold_fused_p{P}_nw{nw}"] = {"algo": "hier", "programs": P, "num_warps": nw}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 64, 5), (65536, 128, 5), (262144, 32, 5)):
            pts.append(("full", ctx, conc, nn, 64, "normal", pvar))
        # large k at 256K with 128-640 rows: the parallel radix with P forced to 2 / 4 (the plan gives 1-2 there)
        r34 = {"algo": "radix", "parallel": True, "short": 4096}
        var = {"default": None, "r34_p2": {**r34, "split": 2}, "r34_p4": {**r34, "split": 4}}
        for k in (2048, 512):
            for conc, nn in ((32, 4), (32, 5), (128, 5)):
                pts.append(("select", 262144, conc, nn, k, "normal", var))
    elif section == "L":  # after K: super groups of 8 x 16 (the short chain then covers 64K), the new fused / radix P
        g = {"algo": "hier", "group2": 16}
        var = {"default": None, "g2_16": g}
        for ctx, shapes in ((65536, ((1, 1), (8, 1), (32, 1), (32, 5), (128, 5))), (262144, ((1, 1), (32, 1), (128, 5)))):
            for conc, nn in shapes:
                pts.append(("select", ctx, conc, nn, 64, "normal", var))
        pts.append(("select", 65536, 1, 1, 64, "equal", var))
        fvar = {"fold_unfused": None, "fold_unfused_g2_16": g, "fold_fused": None, "fold_fused_g2_16": g}
        for conc, nn in ((1, 1), (32, 5)):
            pts.append(("full", 65536, conc, nn, 64, "normal", fvar))
        # the fused plan's P >= 4 (default now) against one program per row where the plan gave 1
        pvar = {"fold_unfused": None, "fold_fused": None, "fold_fused_p1": {"algo": "hier", "programs": 1},
                "sep_fused": None}
        for ctx, conc, nn in ((4096, 128, 5), (16384, 128, 5), (65536, 32, 5)):
            pts.append(("full", ctx, conc, nn, 64, "normal", pvar))
        # the radix split rule (P >= 4 up to 2 x SM rows) at 64K, where K did not measure it
        old_r = {"algo": "radix", "parallel": True, "short": 4096, "split": 2}
        for k in (2048, 512):
            pts.append(("select", 65536, 32, 4, k, "normal", {"default": None, "r34_p2": old_r}))
            pts.append(("select", 65536, 32, 5, k, "normal",
                        {"default": None, "before": {"algo": "radix"} if k == 2048 else {"algo": "hier"}}))
    elif section == "M":  # sixth session: unmasked whole tiles in stage A / the scores kernel; the 256K regression
        fa = {"fast_a": True}
        # full stage with flags (the sweep's full stage): unfused composition and fused kernel, whole tiles on / off
        fvar = {"fold_unfused": None, "fold_unfused_fast": {**fa, "scores_whole": True},
                "fold_unfused_swhole": {"scores_whole": True},
                "fold_fused": None, "fold_fused_fast": fa, "fold_fused_fast_p8": {**fa, "programs": 8},
                "fold_fused_fast_nt16": {**fa, "nt": 16}}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 32, 5), (262144, 1, 1), (65536, 128, 5), (65536, 1, 1),
                              (16384, 128, 5), (4096, 128, 5), (262144, 32, 1)):
            pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
        # select stage: whole tiles in stage A; both short chains off (the 2-4% 256K regression of 851a4a9)
        svar = {"default": None, "fast": fa, "fast_nt64": {**fa, "nt": 64},
                "chains_off": {"short_chain": False, "short_chain2": False}, "chain2_off": {"short_chain2": False}}
        for ctx, conc, nn in ((262144, 1, 1), (262144, 128, 5), (262144, 32, 5), (65536, 128, 5), (65536, 1, 1)):
            pts.append(("select", ctx, conc, nn, 64, "normal", svar))
        pts.append(("select", 262144, 128, 5, 64, "equal", {"default": None, "fast": fa}))
        pts.append(("select", 262144, 128, 5, 512, "normal", {"default": None, "fast": fa}))
    elif section == "N":  # after M: stage A in a launch of its own (two_phase), fused and unfused
        fa = {"fast_a": True}
        tp = {**fa, "two_phase": True}
        fvar = {"fold_unfused": None, "fold_unfused_fast": fa, "fold_unfused_2p": tp,
                "fold_fused": None, "fold_fused_fast": fa, "fold_fused_2p": tp,
                "fold_fused_2p_kf": {**tp, "kernel_flags": True}, "fold_fused_2p_p8": {**tp, "programs": 8},
                "fold_fused_2p_w8": {**tp, "num_warps2": 8}}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 32, 5), (262144, 32, 1), (262144, 8, 1), (262144, 1, 1),
                              (65536, 128, 5), (65536, 32, 5), (65536, 1, 1), (16384, 128, 5), (16384, 32, 5),
                              (4096, 128, 5), (4096, 32, 5)):
            pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
        svar = {"default": None, "fast": fa, "fast_2p": tp, "fast_2p_p4": {**tp, "programs": 4},
                "fast_2p_w4": {**tp, "num_warps": 4, "num_warps2": 8}}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 32, 5), (262144, 1, 1), (65536, 128, 5), (65536, 1, 1)):
            pts.append(("select", ctx, conc, nn, 64, "normal", svar))
        pts.append(("select", 262144, 128, 5, 512, "normal", {"default": None, "fast": fa, "fast_2p": tp}))
    elif section == "O":  # seventh session: fused stage A's whole tiles as one contiguous load (_l1_keys_whole)
        fa = {"fast_a": True}
        fvar = {"fold_unfused": None, "fold_fused": None, "fold_fused_fast": fa,
                "fold_fused_fast_w8": {**fa, "num_warps": 8}, "fold_fused_fast_p8": {**fa, "programs": 8},
                "fold_fused_fast_p8w8": {**fa, "programs": 8, "num_warps": 8}}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 32, 5), (262144, 32, 1), (262144, 1, 1),
                              (65536, 128, 5), (65536, 32, 5), (65536, 32, 1), (65536, 1, 1),
                              (16384, 128, 5), (16384, 32, 5), (16384, 32, 1), (4096, 128, 5), (4096, 32, 1)):
            pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
        pts.append(("full", 262144, 128, 5, 64, "equal", {"fold_unfused": None, "fold_fused": None}))
        pts.append(("full", 262144, 128, 5, 64, "nan1pct", {"fold_unfused": None, "fold_fused": None}))
    elif section == "P":  # after O: the fused kernel in two launches (stage A alone, then 8-warp B-D) beyond 2 x SM rows
        tp = {"fast_a": True, "two_phase": True, "num_warps2": 8}
        fvar = {"fold_unfused": None, "fold_fused": None, "fold_fused_2p": tp,
                "fold_fused_2p_w8": {**tp, "num_warps": 8}, "fold_fused_2p_w8p8": {**tp, "num_warps": 8, "programs": 8},
                "fold_fused_2p_p8": {**tp, "programs": 8}, "fold_fused_2p_kf": {**tp, "kernel_flags": True}}
        for ctx in (262144, 65536, 16384, 4096):
            for conc, nn in ((128, 5), (128, 3), (64, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
        pts.append(("full", 262144, 32, 5, 64, "normal", fvar))
    elif section == "Q":  # eighth session: the scores kernel's idle programs, flags words, the fused direct 1-D load
        fw = {"flags_wide": True}
        fvar = {"fold_unfused": None, "fold_unfused_m4": {"scores_mult": 4}, "fold_unfused_m16": {"scores_mult": 16},
                "fold_unfused_m4_fw": {"scores_mult": 4, **fw}, "fold_fused": None, "fold_fused_fw": fw,
                "fold_fused_d1": {"direct1d": True}, "fold_fused_d1_fw": {"direct1d": True, **fw},
                "unfused": None, "unfused_m4": {"scores_mult": 4}, "fused": None}
        for ctx, conc, nn in ((4096, 1, 1), (4096, 32, 1), (4096, 128, 1), (4096, 128, 5),
                              (16384, 1, 1), (16384, 32, 1), (16384, 128, 5),
                              (65536, 1, 1), (65536, 32, 1), (65536, 128, 5),
                              (262144, 1, 1), (262144, 32, 1), (262144, 32, 5), (262144, 128, 5)):
            pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
        svar = {"default": None, "g4": {"group": 4}}
        for conc, nn in ((1, 1), (8, 4), (32, 1), (128, 5)):
            pts.append(("select", 16384, conc, nn, 64, "normal", svar))
    elif section == "R":  # after Q: the new unfused composition, the third short chain, group 4 at 64K-256K
        new = {"scores_mult": 16, "flags_in_scores": True, "short_chain3": True}
        fvar = {"fold_unfused": None, "fold_unfused_new": new, "fold_unfused_new32": {**new, "scores_mult": 32},
                "fold_fused": None, "fold_fused_new": {"flags_wide": True, "short_chain3": True}}
        for ctx, conc, nn in ((4096, 1, 1), (4096, 32, 1), (4096, 128, 5), (16384, 1, 1), (16384, 32, 1),
                              (16384, 128, 5), (65536, 1, 1), (65536, 32, 1), (65536, 128, 5),
                              (262144, 1, 1), (262144, 32, 5), (262144, 128, 5)):
            pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
        svar = {"default": None, "sc3": {"short_chain3": True}, "g4": {"group": 4}}
        for ctx, conc, nn in ((16384, 1, 1), (16384, 32, 1), (16384, 128, 5), (65536, 1, 1), (65536, 128, 5),
                              (262144, 1, 1), (262144, 128, 5)):
            pts.append(("select", ctx, conc, nn, 64, "normal", svar))
    elif section == "S":  # ninth session: the scores launch at 256K (fewer, longer programs), groups of 4 at 64K-256K
        fvar = {"fold_unfused": None, "fold_unfused_m16": {"scores_mult": 16}, "fold_unfused_m64": {"scores_mult": 64},
                "fold_unfused_grid": {"scores_programs": 1 << 20}, "fold_unfused_t1024": {"scores_tile": 1024},
                "fold_unfused_t1024w8": {"scores_tile": 1024, "scores_warps": 8},
                "fold_unfused_w8": {"scores_warps": 8}, "fold_unfused_whole": {"scores_whole": True},
                "fold_unfused_t1024whole": {"scores_tile": 1024, "scores_whole": True},
                "fold_unfused_g4": {"group": 4}}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 32, 5), (262144, 32, 1), (262144, 1, 1),
                              (65536, 128, 5), (16384, 128, 5), (4096, 128, 5), (4096, 32, 1)):
            pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
        svar = {"default": None, "g4": {"group": 4}}
        for ctx, conc, nn in ((65536, 1, 1), (65536, 32, 1), (65536, 128, 5), (262144, 1, 1), (262144, 32, 1),
                              (262144, 128, 5)):
            pts.append(("select", ctx, conc, nn, 64, "normal", svar))
    elif section == "T":  # after S: the unfused stage A's tile (super groups per iteration: bytes in flight per program)
        svar = {"default": None, "nt64": {"nt": 64}, "nt128": {"nt": 128}, "nt256": {"nt": 256},
                "p2": {"programs": 2}, "p2nt128": {"programs": 2, "nt": 128}}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 64, 5), (262144, 32, 5), (262144, 32, 1), (262144, 1, 1)):
            pts.append(("select", ctx, conc, nn, 64, "normal", svar))
        fvar = {"fold_unfused": None, "fold_unfused_nt128": {"nt": 128}, "fold_unfused_nt256": {"nt": 256}}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 32, 5)):
            pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
    elif section == "U":  # after T: the select kernel's warps and stage A in its own launch at 160-640 x 256K
        tp = {"two_phase": True, "programs": 4}
        svar = {"default": None, "w4": {"num_warps": 4}, "w4nt16": {"num_warps": 4, "nt": 16},
                "w16": {"num_warps": 16}, "tp": tp, "tp_w4_8": {**tp, "num_warps": 4, "num_warps2": 8}}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 64, 5), (262144, 32, 5)):
            pts.append(("select", ctx, conc, nn, 64, "normal", svar))
    elif section == "V":  # tenth session: group maxima by strided loads (unreplicated top-k layouts) vs the old tiles
        # arm names as in tune_dev_V.csv, written at e4b6dc1 where the strided keys were the default ("default")
        # and the reduced tiles the option ("old"); both explicit here, the reduced tiles being the default since
        new, old = {"strided_keys": True, "strided_direct": True}, {"strided_keys": False, "strided_direct": False}
        svar = {"default": new, "old": old}
        for ctx, conc, nn in ((16384, 1, 1), (16384, 32, 1), (16384, 128, 5), (65536, 1, 1), (65536, 128, 5),
                              (262144, 1, 1), (262144, 32, 1), (262144, 32, 5), (262144, 128, 5)):
            pts.append(("select", ctx, conc, nn, 64, "normal", svar))
        pts.append(("select", 262144, 32, 5, 512, "normal", svar))
        fvar = {"fold_unfused": new, "fold_unfused_old": old, "fold_fused": new, "fold_fused_old": old}
        for ctx, conc, nn in ((4096, 1, 1), (4096, 32, 1), (4096, 128, 1), (4096, 128, 5), (16384, 1, 1),
                              (16384, 32, 1), (16384, 128, 5), (65536, 32, 1), (262144, 1, 1), (262144, 32, 1),
                              (262144, 128, 5)):
            pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
    elif section == "W":  # tenth session: where the 640 x 256K select's time goes; stage A keyed by first column
        tp = {"two_phase": True}
        svar = {"default": None, "afirst": {"a_first_col": True}, "tp": tp, "tp_afirst": {**tp, "a_first_col": True},
                "t_stage_a": {**tp, "phase_only": 1}, "t_stage_a_afirst": {**tp, "phase_only": 1, "a_first_col": True}}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 64, 5), (262144, 32, 5), (262144, 32, 1), (262144, 1, 1)):
            pts.append(("select", ctx, conc, nn, 64, "normal", svar))
        fvar = {"fold_unfused": None, "fold_unfused_afirst": {"a_first_col": True}}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 32, 5)):
            pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
    elif section == "X":  # after W: stage A keyed by first column across row counts and k (adoption rule)
        af = {"a_first_col": True}
        svar = {"default": None, "afirst": af, "tp4_afirst": {**af, "two_phase": True, "programs": 4}}
        for ctx, conc, nn in ((262144, 32, 1), (262144, 64, 1), (262144, 128, 1), (262144, 128, 2),
                              (262144, 128, 5), (65536, 128, 5)):
            pts.append(("select", ctx, conc, nn, 64, "normal", svar))
        for conc, nn in ((32, 5), (128, 5)):
            pts.append(("select", 262144, conc, nn, 512, "normal", {"default": None, "afirst": af}))
        pts.append(("select", 262144, 128, 5, 64, "equal", {"default": None, "afirst": af}))
        pts.append(("full", 262144, 32, 1, 64, "normal", {"fold_unfused": None, "fold_unfused_afirst": af}))
    elif section == "Y":  # after X: stage C's level-1 keys through the workspace (unreplicated top-k layout)
        cws = {"c_workspace": True}
        svar = {"default": None, "cws": cws, "cws_afirst": {**cws, "a_first_col": True}}
        for ctx, conc, nn in ((16384, 1, 1), (16384, 32, 1), (16384, 128, 5), (65536, 1, 1), (262144, 1, 1),
                              (262144, 32, 1), (262144, 32, 5), (262144, 128, 5)):
            pts.append(("select", ctx, conc, nn, 64, "normal", svar))
        fvar = {"fold_unfused": None, "fold_unfused_cws": cws}
        for ctx, conc, nn in ((16384, 1, 1), (16384, 32, 1), (262144, 1, 1), (262144, 128, 5)):
            pts.append(("full", ctx, conc, nn, 64, "normal", fvar))
    elif section == "Z":  # after Y: c_workspace with a_first_col, full stage at 160 / 640 x 256K, the rule's edge
        cws = {"c_workspace": True}
        both = {**cws, "a_first_col": True}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 32, 5)):
            pts.append(("full", ctx, conc, nn, 64, "normal", {"fold_unfused": None, "fold_unfused_cws": cws,
                                                               "fold_unfused_cws_afirst": both}))
        for ctx, conc, nn in ((262144, 64, 1), (262144, 128, 1)):
            pts.append(("select", ctx, conc, nn, 64, "normal", {"default": None, "cws": cws, "cws_afirst": both}))
    elif section == "AA":  # eleventh session: the 64K second short chain's 1024 level-1 keys ranked in pairs first
        pr = {"l1_pairs": True}
        for conc, nn in ((1, 1), (8, 1), (32, 1), (128, 5)):
            pts.append(("select", 65536, conc, nn, 64, "normal", {"default": None, "pairs": pr}))
        pts.append(("select", 65536, 128, 5, 64, "equal", {"default": None, "pairs": pr}))
        for conc, nn in ((1, 1), (32, 1), (128, 5)):
            pts.append(("full", 65536, conc, nn, 64, "normal", {"fold_unfused": None, "fold_unfused_pairs": pr}))
    elif section == "AB":  # after AA: pairs from 512 level-1 keys, i.e. the 16K rows' third short chain too
        pr = {"l1_pairs": True, "l1_pairs_min": 512}
        for conc, nn in ((1, 1), (32, 1), (128, 5)):
            pts.append(("select", 16384, conc, nn, 64, "normal", {"default": None, "pairs512": pr}))
        for conc, nn in ((1, 1), (128, 5)):
            pts.append(("full", 16384, conc, nn, 64, "normal", {"fold_unfused": None, "fold_unfused_pairs512": pr}))
    elif section == "AC":  # twelfth session: l1_pairs as the default (no re-store) against the eleventh's kernels
        off = {"l1_pairs": False}
        for conc, nn in ((1, 1), (8, 1), (32, 1), (128, 5)):
            pts.append(("select", 65536, conc, nn, 64, "normal", {"default": None, "no_pairs": off}))
        pts.append(("select", 65536, 128, 5, 64, "equal", {"default": None, "no_pairs": off}))
        pts.append(("select", 65536, 128, 5, 48, "normal", {"default": None, "no_pairs": off}))
        for conc, nn in ((1, 1), (32, 1), (128, 5)):
            pts.append(("full", 65536, conc, nn, 64, "normal", {"fold_unfused": None, "fold_unfused_no_pairs": off}))
    elif section == "AD":  # after AC's re-record: 256K full stage at 1-32 rows moved (8 / 16 rows -15%, 32 rows
        # +15%) though l1_pairs is compiled out of stage-A rows: kernel code, or run to run?
        off = {"l1_pairs": False}
        for conc, nn in ((1, 1), (8, 1), (16, 1), (32, 1), (8, 4)):
            pts.append(("full", 262144, conc, nn, 64, "normal", {"fold_unfused": None, "fold_unfused_no_pairs": off}))
        pts.append(("select", 262144, 32, 1, 64, "normal", {"default": None, "no_pairs": off}))
    elif section == "AE":  # fourteenth session: stage A's keys stored by the scores launch (scores_a)
        var = {"fold_unfused_nosa": {"scores_a": False}, "fold_unfused_sa": {"scores_a": True}}
        for ctx in (262144, 65536, 16384, 4096):
            for conc, nn in ((1, 1), (8, 1), (32, 1), (32, 5), (128, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", var))
        for dist in ("equal", "nan1pct", "ramp"):
            pts.append(("full", 262144, 128, 5, 64, dist, var))
        for k in (48, 512):
            pts.append(("full", 262144, 128, 5, k, "normal", var))
    elif section == "AF":  # after AE: the scores_a launch's registers (tile 256, 8 warps)
        var = {"fold_unfused_nosa": {"scores_a": False}, "fold_unfused_nosa_t256": {"scores_a": False, "scores_tile": 256},
               "fold_unfused_sa": {"scores_a": True}, "fold_unfused_sa_t256": {"scores_a": True, "scores_tile": 256},
               "fold_unfused_sa_w8": {"scores_a": True, "scores_warps": 8},
               "fold_unfused_sa_t256w8": {"scores_a": True, "scores_tile": 256, "scores_warps": 8}}
        for ctx, conc, nn in ((262144, 128, 5), (65536, 128, 5), (16384, 128, 5), (4096, 128, 5), (262144, 32, 5),
                              (65536, 32, 5), (262144, 32, 1), (262144, 1, 1), (65536, 1, 1)):
            pts.append(("full", ctx, conc, nn, 64, "normal", var))
    elif section == "AG":  # after AF: keys only for main-chain rows (the launch's branch on main_chain_min)
        var = {"fold_unfused_nosa": {"scores_a": False}, "fold_unfused_br": {"scores_a": True},
               "fold_unfused_br_w8": {"scores_a": True, "scores_warps": 8},
               "fold_unfused_br_t256": {"scores_a": True, "scores_tile": 256}}
        for ctx, conc, nn in ((262144, 128, 5), (65536, 128, 5), (16384, 128, 5), (4096, 128, 5), (262144, 32, 5),
                              (65536, 32, 5), (262144, 32, 1), (65536, 32, 1), (262144, 1, 1), (65536, 1, 1)):
            pts.append(("full", ctx, conc, nn, 64, "normal", var))
    elif section == "AH":  # sixteenth session: the scores launch on the live schedule (scores_sched "live")
        lv = {"scores_sched": "live"}
        var = {"fold_unfused": None, "fold_unfused_m8": {"scores_mult": 8},
               "fold_unfused_live_m8": {**lv, "scores_mult": 8},
               "fold_unfused_live_m16": {**lv, "scores_mult": 16},
               "fold_unfused_live_w8_m4": {**lv, "scores_warps": 8, "scores_mult": 4},
               "fold_unfused_live_w8_m8": {**lv, "scores_warps": 8, "scores_mult": 8},
               "fold_unfused_live_t256_m8": {**lv, "scores_tile": 256, "scores_mult": 8},
               "fold_unfused_live_t256_m16": {**lv, "scores_tile": 256, "scores_mult": 16}}
        for ctx in (65536, 4096, 16384, 262144):
            for conc, nn in ((1, 1), (8, 1), (16, 1), (32, 1), (8, 5), (16, 4), (32, 4), (32, 5), (128, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", var))
    elif section == "AI":  # after AH: the select launch a programmatic dependent of the scores launch (pdl)
        var = {"fold_unfused": None, "fold_unfused_pdl": {"pdl": True},
               "fold_unfused_pdl_early": {"pdl": True, "pdl_early": True}, "fold_unfused_m8": {"scores_mult": 8},
               "fold_unfused_m8_pdl_early": {"scores_mult": 8, "pdl": True, "pdl_early": True}}
        for ctx in (4096, 65536, 16384, 262144):
            for conc, nn in ((1, 1), (8, 1), (16, 1), (32, 1), (8, 5), (16, 4), (32, 5), (128, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", var))
    elif section == "AJ":  # after AI (cut at 4K by its box): pdl_early with the scores grid at 8 / 16 / 32 x SM
        pe = {"pdl": True, "pdl_early": True}
        var = {"fold_unfused": None, "fold_unfused_pdl_early": pe, "fold_unfused_m8": {"scores_mult": 8},
               "fold_unfused_m8_pdl_early": {"scores_mult": 8, **pe}, "fold_unfused_m16": {"scores_mult": 16},
               "fold_unfused_m16_pdl_early": {"scores_mult": 16, **pe}}
        for ctx in (16384, 65536, 262144, 4096):
            for conc, nn in ((1, 1), (8, 1), (16, 1), (32, 1), (8, 5), (16, 4), (32, 5), (128, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", var))
    elif section == "AK":  # after AJ: the rows between its points (the medians' rows: 20-48), for a rule by rows
        pe = {"pdl": True, "pdl_early": True}
        var = {"fold_unfused": None, "fold_unfused_pdl_early": pe, "fold_unfused_m8": {"scores_mult": 8},
               "fold_unfused_m8_pdl_early": {"scores_mult": 8, **pe},
               "fold_unfused_m16_pdl_early": {"scores_mult": 16, **pe}}
        for ctx in (4096, 16384, 65536, 262144):
            for conc, nn in ((4, 5), (8, 3), (32, 1), (8, 5), (16, 3), (16, 5), (32, 4), (64, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", var))
    elif section == "AL":  # seventeenth session, UNFUSED_PDL = None: the rule's rows past AK's (256-640), forms pinned
        pe = {"pdl": True, "pdl_early": True}
        var = {"fold_unfused": None, "fold_unfused_plain": {"pdl": False}, "fold_unfused_pdl_early": pe,
               "fold_unfused_m16_pdl_early": {"scores_mult": 16, **pe}}
        for ctx in (4096, 16384, 65536, 262144):
            for conc, nn in ((64, 4), (64, 5), (128, 3), (128, 4), (128, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", var))
    elif section == "AM":  # seventeenth session: one launch, each row's last scores program selects it (tail)
        var = {"fold_unfused": None, "fold_unfused_tail": {"tail": True},
               "fold_unfused_tail_w4": {"tail": True, "scores_warps": 4},
               "fold_unfused_tail_m8": {"tail": True, "scores_mult": 8}}
        for ctx in (16384, 4096, 65536, 262144):
            for conc, nn in ((1, 1), (8, 1), (16, 1), (8, 3), (32, 1), (8, 5), (16, 4), (32, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", var))
    elif section == "AN":  # eighteenth session (prepared without a GPU): the threshold filter (filter_cap*)
        f4, f1, fm = {"filter_cap": 256, "filter_q": 4}, {"filter_cap": 512, "filter_q": 1}, {"filter_cap_main": 128}
        var = {"hier": None, "hier_f4": f4, "hier_f1": f1, "hier_fm": fm, "hier_f4_fm": {**f4, **fm},
               "hier_f4_c512": {"filter_cap": 512, "filter_q": 4}}
        for ctx in (65536, 16384, 262144, 4096):
            for conc, nn in ((1, 1), (8, 1), (32, 1), (32, 4), (128, 5)):
                pts.append(("select", ctx, conc, nn, 64, "normal", var))
        for dist in ("equal", "nan1pct", "ramp", "shifted"):
            for ctx, conc, nn in ((65536, 1, 1), (262144, 1, 1), (65536, 128, 5), (262144, 128, 5)):
                pts.append(("select", ctx, conc, nn, 64, dist, var))
        fv = {"fold_unfused": None, "fold_unfused_f4_fm": {**f4, **fm}, "fold_unfused_f4": f4}
        for ctx in (65536, 16384, 262144):
            for conc, nn in ((1, 1), (16, 1), (32, 1), (128, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", fv))
    elif section == "AO":  # nineteenth session: where AN's filter costs the full stage 4-7x what it costs the select
        f4 = {"filter_cap": 256, "filter_q": 4}
        var = {"fold_unfused": None, "fold_unfused_f4": f4, "fold_unfused_nopdl": {"pdl": False},
               "fold_unfused_f4_nopdl": {**f4, "pdl": False}, "unfused": None, "unfused_f4": f4}
        for ctx in (65536, 16384):
            for conc, nn in ((1, 1), (32, 1)):
                pts.append(("full", ctx, conc, nn, 64, "normal", var))
    elif section == "AP":  # nineteenth session: the select waits per row for the scores launch (rowsync)
        rs = {"rowsync": True}
        var = {"fold_unfused": None, "fold_unfused_rs": rs, "fold_unfused_rs_m16": {**rs, "scores_mult": 16},
               "fold_unfused_rs_m8": {**rs, "scores_mult": 8}, "fold_unfused_m16": {"scores_mult": 16}}
        for ctx in (262144, 65536, 16384, 4096):
            for conc, nn in ((128, 5), (64, 5), (32, 5)):
                pts.append(("full", ctx, conc, nn, 64, "normal", var))
    elif section == "AQ":  # twentieth session: stage A's tiles loaded two at a time (a_prefetch)
        ap = {"a_prefetch": True}
        ta = {"two_phase": True, "phase_only": 1}
        base = {"hier": None, "hier_apf": ap}
        for conc, nn in ((128, 5), (64, 5), (32, 5), (32, 1), (1, 1)):
            var = dict(base)
            if conc >= 64:  # stage A alone (timing only), and 16 super groups (4 KB) per tile with the prefetch
                var.update({"t_a": ta, "t_a_apf": {**ta, **ap}, "hier_apf_nt16": {**ap, "nt": 16}})
            else:  # fast_a is off by default up to 2 x SM rows: unmasked tiles alone, without the prefetch
                var["hier_fa"] = {"fast_a": True}
            pts.append(("select", 262144, conc, nn, 64, "normal", var))
        for dist in ("equal", "nan1pct"):
            pts.append(("select", 262144, 128, 5, 64, dist, dict(base)))
        pts.append(("select", 65536, 128, 5, 64, "normal", dict(base)))
        fv = {"fold_unfused": None, "fold_unfused_apf": ap}
        for conc, nn in ((128, 5), (64, 5), (32, 5), (32, 1)):
            pts.append(("full", 262144, conc, nn, 64, "normal", fv))
        pts.append(("full", 65536, 128, 5, 64, "normal", fv))
    elif section == "AR":  # twentieth session: register bounds (maxnreg) where registers cost residency
        sa = {"scores_a": True}
        var = {"fold_unfused": None, "fold_unfused_sa": sa, "fold_unfused_sa_r72": {**sa, "scores_maxnreg": 72},
               "fold_unfused_sa_r64": {**sa, "scores_maxnreg": 64},
               "fold_unfused_sa_w8_r64": {**sa, "scores_warps": 8, "scores_maxnreg": 64},
               "fold_unfused_r64": {"scores_maxnreg": 64},
               "fold_unfused_apf_r80": {"a_prefetch": True, "maxnreg": 80}}
        for ctx, conc, nn in ((262144, 128, 5), (262144, 64, 5), (262144, 32, 5), (262144, 32, 1),
                              (65536, 128, 5), (65536, 32, 5), (16384, 128, 5), (4096, 128, 5)):
            pts.append(("full", ctx, conc, nn, 64, "normal", var))
    elif section == "AS":  # twentieth session: the 256K full stage taken apart (timing-only parts)
        var = {"fold_unfused": None, "t_scores": None, "t_select": None, "t_select_apf": {"a_prefetch": True},
               "fold_unfused_apf_r80": {"a_prefetch": True, "maxnreg": 80}}
        for conc, nn in ((128, 5), (64, 5), (32, 5)):
            pts.append(("full", 262144, conc, nn, 64, "normal", var))
    else:
        raise SystemExit(f"unknown section {section}")
    return pts


def profile_kernels(fn, calls=20):
    """``(kernel name, launches, mean device µs per launch)`` of each kernel ``fn`` launches, under torch.profiler
    (plain launches, not a graph: the per-kernel split of a graph-timed total, not a replacement for it)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        tot = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if tot and e.count:
            rows.append((e.key[:80], e.count, tot / e.count))
    return rows


def make_fn(stage, inp, k, name, cfg, out):
    if stage == "select":
        sc, L = inp["scores"], inp["lengths"]
        if cfg is None:  # the public API's default dispatch
            return lambda: topk_select(sc, k, lengths=L, impl="triton", out=out)
        return lambda: topk_select_triton(sc, k, L, 1, out, config=cfg)
    x, E = inp["logits"], inp["ends"]
    if name.startswith("t_scores"):  # timing only: the unfused composition's scores launch alone (flags zeroed)
        from dsa_lab.scores_triton import block_scores_triton

        fl = torch.empty((x.shape[0], -(-x.shape[1] // BLOCK_SIZE) + 1), dtype=torch.uint8, device=x.device)
        return lambda: block_scores_triton(x, E, None, BLOCK_SIZE, 1, fill_dead=False, zero_flags=fl)
    if name.startswith("t_select"):  # timing only: the select over these rows' stored scores alone (no flags)
        from dsa_lab.scores_triton import block_scores_triton

        sc = block_scores_triton(x, E, None, BLOCK_SIZE, 1)
        lb = ((E.to(torch.int64) + BLOCK_SIZE - 1) // BLOCK_SIZE).to(torch.int32)
        return lambda: topk_select_triton(sc, k, lb, 1, out, config=cfg)
    if name.startswith(("sep_", "fold_")):  # ids + flags (sections I-K); "_fused" anywhere in the name: fused
        fused = "_fused" in name
        if name.startswith("fold_"):
            return lambda: select_candidate_blocks_triton(x, E, k, None, BLOCK_SIZE, 1, out, fused=fused,
                                                          with_flags=True, config=cfg)
        from dsa_lab.flags_triton import candidate_flags_triton

        def sep():
            ids = select_candidate_blocks_triton(x, E, k, None, BLOCK_SIZE, 1, out, fused=fused, config=cfg)
            return ids, candidate_flags_triton(ids, x.shape[1], None, BLOCK_SIZE, 1)
        return sep
    if name.startswith("unfused"):
        return lambda: select_candidate_blocks_triton(x, E, k, None, BLOCK_SIZE, 1, out, fused=False, config=cfg)
    return lambda: select_candidate_blocks_triton(x, E, k, None, BLOCK_SIZE, 1, out, fused=True, config=cfg)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--section", required=True)
    ap.add_argument("--check-only", action="store_true")
    ap.add_argument("--out", default="build/tune_dev")
    ap.add_argument("--max-s", type=float, default=300.0)
    ap.add_argument("--start", type=int, default=0, help="skip the first N points (a parallel --check-only compiler)")
    ap.add_argument("--smoke", action="store_true", help="CPU interpreter, tiny width, first points only (checks)")
    ap.add_argument("--part", default=None, help="i/K: only points i, i+K, ... (parallel --check-only compilers)")
    ap.add_argument("--profile", action="store_true",
                    help="also each arm's kernels under torch.profiler (20 calls): tune_dev_<section>_kernels.csv")
    ap.add_argument("--arms", default=None, help="a,b,...: only these variants (parallel --check-only compilers)")
    a = ap.parse_args()
    dev, mml = ("cpu", 4096) if a.smoke else ("cuda", MML)
    if a.smoke:
        a.check_only = True
    t0 = time.time()
    os.makedirs(a.out, exist_ok=True)
    pts = points(a.section)[a.start:]
    if a.part:
        i, kk = (int(v) for v in a.part.split("/"))
        pts = pts[i::kk]
    if a.arms:
        keep = set(a.arms.split(","))
        pts = [(st, c, cc, nn, k, d, {n: v for n, v in var.items() if n in keep}) for st, c, cc, nn, k, d, var in pts]
    if a.smoke:
        pts = [(st, min(c, mml), 1, 1, k, d, v) for st, c, cc, nn, k, d, v in pts[:2] + pts[-1:]]
    w = None
    if not a.check_only:
        f = open(os.path.join(a.out, f"tune_dev_{a.section}.csv"), "w", newline="")
        w = csv.DictWriter(f, fieldnames=["stage", "context", "concurrency", "next_n", "rows", "k", "dist", "arm",
                                          "median_us", "p10_us", "p90_us", "check"])
        w.writeheader()
        if a.profile:
            fk = open(os.path.join(a.out, f"tune_dev_{a.section}_kernels.csv"), "w", newline="")
            wk = csv.DictWriter(fk, fieldnames=["stage", "context", "rows", "arm", "kernel", "calls", "avg_us"])
            wk.writeheader()
    done = bad_total = 0
    for i, (stage, ctx, conc, nn, k, dist, var) in enumerate(pts):
        if time.time() - t0 > a.max_s:
            print(f"section {a.section}: stopped at the time limit after {done}/{len(pts)} points", flush=True)
            break
        p = Point(stage, stage, ctx, conc, nn, k, dist)
        seed = 7000 + i
        if stage == "select":
            inp = select_stage_inputs(p, mml, seed, dev)
            ref = topk_select(inp["scores"], k, lengths=inp["lengths"], impl="reference")
            base = lambda inp=inp: torch_topk_store(inp["scores"], k)  # noqa: E731
        else:
            inp = full_stage_inputs(p, mml, seed, dev)
            ref = select_candidate_blocks(inp["logits"], inp["ends"], k, block_size=BLOCK_SIZE, impl="reference")
            from dsa_lab.sweep import _padded_scores

            base = lambda inp=inp: torch_topk_store(_padded_scores(inp["logits"], inp["ends"], padded=True), k)  # noqa
        res, checks, outs = {}, {}, {}
        fns = {"torch": base}
        for name, cfg in var.items():
            out = outs[name] = torch.empty((p.rows, k), dtype=torch.int32, device=dev)
            fn = make_fn(stage, inp, k, name, cfg, out)
            out.fill_(POISON)
            try:
                got = fn()
                if dev == "cuda":
                    torch.cuda.synchronize()
                if name.startswith("t_"):  # timing only (a part of the kernel: writes no ids)
                    checks[name] = "timing only"
                    fns[name] = fn
                    continue
                nbad, msg = compare(out, ref)
                if isinstance(got, tuple) and not nbad:  # flags: every byte against the contract of the reference ids
                    from dsa_lab.flags import candidate_flags_torch

                    want = candidate_flags_torch(ref, inp["logits"].shape[1], None, BLOCK_SIZE, 1)
                    nbad = int((got[1] != want).any(dim=1).sum())
                    msg = "flags differ" if nbad else msg
                checks[name] = "ok" if not nbad else f"mismatch {nbad}/{p.rows}: {msg[:120]}"
            except Exception as e:  # a variant that fails to compile/run is recorded, not fatal
                checks[name] = f"error {type(e).__name__}: {str(e)[:160]}"
            if checks[name] != "ok":
                bad_total += 1
                print(f"  {stage} {ctx} rows {p.rows} k {k} {dist} {name}: {checks[name]}", flush=True)
            else:
                fns[name] = fn
        if not a.check_only:
            for name, fn in fns.items():
                tm = bench.time_cuda_graph(fn, rep_ms=10.0, max_replays=60)
                res[name] = tm.median_us
                if name in outs and checks.get(name) == "ok":  # the ids the graph's last replay wrote, checked again
                    nbad, msg = compare(outs[name], ref)
                    if nbad:
                        checks[name] = f"after replays: mismatch {nbad}/{p.rows}: {msg[:100]}"
                        bad_total += 1
                        print(f"  {stage} {ctx} rows {p.rows} k {k} {dist} {name}: {checks[name]}", flush=True)
                w.writerow({"stage": stage, "context": ctx, "concurrency": conc, "next_n": nn, "rows": p.rows, "k": k,
                            "dist": dist, "arm": name, "median_us": round(tm.median_us, 3),
                            "p10_us": round(tm.p10_us, 3), "p90_us": round(tm.p90_us, 3),
                            "check": checks.get(name, "")})
            f.flush()
            if a.profile:
                for name, fn in fns.items():
                    try:
                        prof_rows = profile_kernels(fn)
                    except Exception as e:  # the profiler is a side view: its failure must not cost the timings
                        print(f"  profile {name}: {type(e).__name__}: {str(e)[:160]}", flush=True)
                        prof_rows = []
                    for kname, calls, avg in prof_rows:
                        wk.writerow({"stage": stage, "context": ctx, "rows": p.rows, "arm": name, "kernel": kname,
                                     "calls": calls, "avg_us": round(avg, 3)})
                fk.flush()
            best = min((v, n) for n, v in res.items() if n != "torch")
            print(f"{a.section} {stage:<6} {ctx:>6} r{p.rows:<4} k{k:<5} {dist:<7} " +
                  " ".join(f"{n}={v:.1f}" for n, v in res.items()) + f"  best={best[1]}", flush=True)
        del inp, ref
        done += 1
    print(f"section {a.section}: {done} points, {bad_total} failing variants, {time.time() - t0:.0f} s", flush=True)
    if not a.check_only:
        f.close()
        meta = data.collect_metadata(" ".join(["python3"] + sys.argv), {
            "points_done": done, "points_planned": len(pts), "failing_variants": bad_total,
            "timing": "cuda graph (dsa_lab.bench.time_cuda_graph, rep 10 ms)", "note": "dev run, not the recorded sweep"})
        with open(os.path.join(a.out, f"tune_dev_{a.section}.meta.json"), "w") as fm:
            json.dump(meta, fm, indent=1)


if __name__ == "__main__":
    main()
