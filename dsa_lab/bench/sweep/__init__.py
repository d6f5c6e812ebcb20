"""Run the decode benchmark sweep (suites select, full, step, producer), appending rows to data/<gpu>/.

Suites
------
* ``select`` and ``full``: the seed's decode grid — concurrency
  {1,2,4,8,16,32,64,128} × next_n 1–5 × context {4096, 16384, 65536, 262144}, ``max_model_len``
  262144, ``block_size`` 8 (32768 blocks per row).  Rows go to ``select_sweep.csv``.

  - stage ``select`` (block scores → ids).  Input: block scores over the padded width as upstream
    produces them (live blocks hold the distribution, the newest block ``+inf``, blocks past the end
    ``-inf``).  Arms: ``torch`` (``torch.topk`` over the padded width + the ``-inf`` → ``-1`` store),
    ``torch_live`` (the same on the host-known live slice ``[:, :max live]``), ``triton``
    (:func:`dsa_lab.topk_select` with device-side lengths).
  - stage ``full`` (logits → scores → ids → flags).  Input: a padded ``[rows, max_model_len]`` logits
    workspace whose live columns hold the distribution and whose tail holds NaN (never to be selected).
    Arms: ``torch`` (upstream: the padded Triton block-scores kernel, ``torch.topk``, store, flags),
    ``torch_live`` (the same on the live slice), ``triton`` (:func:`dsa_lab.select_candidate_blocks` with
    its default dispatch and ``with_flags=True``: bounded scores → select, the hier select kernel writing
    the flags itself, the radix select followed by the flags kernel), ``triton_fused`` (the fused kernel,
    ``impl="triton_fused"``, flags likewise; only where it serves the shape, k <= 256 at block_size 8).

  Default plan: every point at k = 64 on ``normal`` values; k ∈ {512, 2048} and the distributions
  {shifted, equal, nan1pct, ramp} on the subset concurrency {1, 32, 128} × next_n {1, 5} × every
  context (``--grid full`` runs them on the whole grid).
* ``step``: the decode indexer step, stage by stage (logits, sanitize, scores,
  select, flags, candidates, step) over concurrency {1, 8, 32, 128} × next_n {1, 3, 5} × context
  {4096, 16384, 65536, 131072}; arms ``fused`` (this package's step: the producer also writes sanitized logits,
  block scores and zeroed flags, then the select), ``triton`` (the staged composition: producer, bounded sanitize,
  scores + select, flags) and ``torch`` (the upstream composition around the same producer).  Rows go to
  ``step_breakdown.csv``.  ``--block-size`` (default 8) sets its candidate blocks; 1 is DeepSeek V3.2's form, the
  top-k of tokens, where the long-row select reads the producer's scores (a row's block size is part of its key).
* ``producer``: paged MQA logits, Triton vs the torch reference (where it fits in
  memory), achieved read bandwidth against the measured streaming ceiling; bounded vs full-width
  sanitize.  Rows go to ``producer_sweep.csv``.

Every point gets fresh inputs; the Triton arm's ids are checked against the baseline (``torch`` on a
GPU, the exact reference without one) as sets, once per point, before timing; timing is a CUDA graph
(:mod:`dsa_lab.bench.timing`).  Rows are appended one at a time (atomic line appends): an interrupted sweep
keeps every finished row, and a re-run skips recorded points (key: arm, stage, context, concurrency,
next_n, k, dist), so a long sweep can be run in several calls (``--max-seconds``).  ``--plan`` prints
the points that would run.  Each run rewrites ``<csv>.meta.json`` (metadata + measured ceilings) and
keeps a short history of earlier runs in it.

Without a GPU the sweep runs the Triton interpreter at tiny shapes (``max_model_len`` 2048) into
``data/interpreter/``, and every row says ``interpreter (not a performance measurement)``.
"""
from .arms import _flags_fn, full_arm_fn, select_arm_fn, torch_topk_store
from .cli import add_arguments, run
from .inputs import full_stage_inputs, make_values, select_stage_inputs
from .plan import BLOCK_SIZE, MML, Point

# add_arguments / run: the CLI (dsa_lab.cli loads this module by name).  The rest: the sweep's inputs and arms that
# `dsa-lab ab` (dsa_lab/bench/ab.py) and the GPU scripts import from here.
__all__ = ["add_arguments", "run", "BLOCK_SIZE", "MML", "Point", "full_stage_inputs", "make_values",
           "select_stage_inputs", "_flags_fn", "full_arm_fn", "select_arm_fn", "torch_topk_store"]
