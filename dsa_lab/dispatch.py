"""Which Triton kernel serves which call, with what plan: every rule from shapes and device facts only.

A call's values (lengths, row ends, scores) never choose anything on the host, so every call captures in a CUDA
graph and replays exactly with new lengths.  Shapes choose *run-time* arguments (programs per row, flags); compiled
variants are chosen only by the few constexprs in the table below, so a new batch size, width, length or stride
never compiles a kernel (``dsa-lab warmup --dry-run`` lists every variant; ``docs/design.md`` gives the
measurement behind each rule).

==========================  ==============================================  ============================================
decision                    rule                                            why (measured on the H200)
==========================  ==============================================  ============================================
select algorithm            bisect for k > 256 on rows of at most 32768     32768-column rows, k = 2048, bisect vs split
                            columns from SM/6 rows, and from one row on     radix (live 256K): 16 rows 28.6 vs 24.4 µs, 24
                            rows of 2048-8192 columns; else radix when      rows 28.2 vs 31.4, 64 rows 29.5 vs 91.4; live
                            ``next_pow2(k) >= 1024``, or >= 512 with        64K: 1 row 12.9 vs 15.5; live 16K: 3.9 vs 9.0
                            several radix programs per row; else hier
bisect select               one program per row, the row in registers       bracketed k-th word, then positions thread by
                            (2048 / 8192 / 32768-word tile by live length), thread (one scan of one count per thread): 640
                            512 threads (16 warps; 8 waves of 64 on ROCm),  x 256K 245 -> 165 -> 141 µs (16K rows 6-8%
                            positions thread by thread                      slower); 16 waves spilled on gfx950
radix form                  parallel (P programs per row, 5 launches, each  1 x 256K k = 2048: 24 vs 170 µs; one
                            a programmatic dependent of the one before on   program per row won from 160 rows; dependent
                            sm_90+) when :func:`split_programs` > 1, else   launches 1 x 256K 21.7 -> 16.4 µs
                            one per row
radix short rows            <= 4096 live columns: one program, one launch   16K rows: 6 vs 15 µs
hier bucket                 ``KP = max(64, next_pow2(k))``                  one compiled kernel per bucket, not per k
hier groups                 8 at KP 64, 4 at 128, 2 beyond                  three 512-key top-k stages at k = 64
hier radix stages (RSEL)    from KP = 512                                   k = 512: 640 x 16K 68 -> 47 µs; k = 64 lost
hier direct top-k           rows of at most 512 columns                     a 1024-key top-k costs 2.4x a 512-key one
hier short chains           rows of at most KP super groups skip stage A;   16K: 1 row 10 -> 8 µs; 64K 640 rows 44 ->
                            at KP 64 (unfused) a narrow and a wide chain,   32 µs; the wide chain's one tile: 64K
                            the wide one's C stage in one 8192-lane tile    select 9.3 -> 8.3 µs (1 row)
hier programs per row       ``2 * SMs / rows`` (fused: at least 4), >= 1024  fill the device about twice
                            columns each
hier warps                  8 (16 from KP 1024); fused 8 up to SM rows,     tune over 1-640 rows x 4K-256K
                            else 4
stage-A whole tiles         unmasked loads at more than 2 x SM rows (fused  640 x 256K select 86 -> 79 µs; lost at 32
                            with a power-of-two block: always)              rows
stage-A keys                unfused: a super group's best word and its      640 x 256K stage A 44 -> 33 µs
                            first column (no argmin)
candidate blocks            unfused: bounded scores launch, then select;    unfused faster at 1-32 rows everywhere and
                            the fused kernel is the ``triton_fused`` arm    from 64K at every row count
flags                       unfused: zeroed by the scores launch, set by    640 x 4K 45 -> 19 µs (hier); fused beyond
                            the hier select (radix: by the flags kernel);   2 x SM rows the flags kernel was faster;
                            fused > 2 x SM rows: the flags kernel after     radix: one scores variant, not timed apart
stage A in the scores       at most SMs / 4 rows (hier, k <= 256): the      1 x 256K full 14.5 -> 11.6 µs; lost at
launch                      scores launch stores stage A's keys, one        160-640 rows; one program per tile: 32 x
                            program per tile (no loop), the select runs B-D 256K 26.2 -> 22.1 µs, 1 x 256K 13.0 -> 11.5
dependent launch            the hier select launched as a programmatic      1-24 rows 0.4-0.8 µs faster; 32-320 rows
                            dependent of the scores launch (sm_90+); the    of 4K-16K lose up to 17% unless the
                            scores grid (without stage A) 12 x SM programs  scores grid is smaller (4K 40 rows 7.6 ->
                            at SM/5-SM/3 rows, 16 x SM to 3 x SM rows, else 6.2 µs at 12 x SM; 256K 29.3 -> 31.8)
                            32 x SM
==========================  ==============================================  ============================================
"""
from __future__ import annotations

import torch

from . import _checks, _impl, _scratch
from .kernels import bisect as _bisect
from .kernels import flags as _flags
from .kernels import hier as _hier
from .kernels import radix as _radix
from .kernels import scores as _scores
from .kernels.common import np2

__all__ = [
    "topk_select_triton", "select_candidate_blocks_triton", "block_scores_triton", "candidate_flags_triton",
    "select_algo", "split_programs", "plan_hier", "fusable", "main_chain_min",
]

KP_MIN = 64  # the smallest hier bucket
RADIX_MIN_KP = 1024
RADIX_PAR_MIN_KP = 512
RADIX_SHORT = 4096
BISECT_MIN_ROWS_PER_SM = 1 / 6  # the bisect select from this many rows per SM (rows of at most 32768 columns) ...
BISECT_ANY_ROWS = (2048, 8192)  # ... and from one row for rows of this many columns
DECODE_BLOCKS = 32768  # the padded decode workspace in blocks (262144 / 8): stage B's tile is sized for it
SCORES_MULT = 32  # scores launch: about 32 x SM programs in all


# ---------------------------------------------------------------------------------------------------- rules
def split_programs(rows: int, n: int, sm_count: int, tile: int = 1024) -> int:
    """Programs per row of the parallel radix select: fill the device about twice, at least 4 while the call has at
    most twice as many rows as SMs, at least one 1024-column tile each, at most :data:`radix.MAXP`."""
    P = (2 * sm_count) // max(rows, 1)
    if rows <= 2 * sm_count:
        P = max(P, 4)
    return max(1, min(P, -(-n // tile), _radix.MAXP))


def select_algo(rows: int, n: int, k: int, sm_count: int) -> str:
    """``"bisect"``, ``"radix"`` or ``"hier"`` for a select of ``k`` from ``n`` columns over ``rows`` rows."""
    kp = np2(max(k, 2))
    few_cols = BISECT_ANY_ROWS[0] <= n <= BISECT_ANY_ROWS[1]
    if kp >= RADIX_PAR_MIN_KP and n <= _bisect.MAX_COLS and (few_cols or rows >= BISECT_MIN_ROWS_PER_SM * sm_count):
        return "bisect"
    if kp >= RADIX_MIN_KP or (kp >= RADIX_PAR_MIN_KP and split_programs(rows, n, sm_count) > 1):
        return "radix"
    return "hier"


def _group(KP: int) -> int:
    return 8 if KP <= 64 else (4 if KP <= 128 else 2)


def plan_hier(k: int, facts: dict, *, fused: bool = False, block_size: int = 1, rows: int = 1,
              group: int | None = None, direct: int | None = None, l1p: int | None = None) -> dict:
    """The hier kernel's constexprs and warps for ``k`` (from its bucket), the fusion and the block size;
    ``rows`` only picks the fused kernel's warps (two buckets).  ``group`` / ``direct`` / ``l1p`` are test hooks:
    smaller groups, direct tile or pairing threshold reach every path at interpreter sizes (each compiles a kernel
    of its own)."""
    KP = max(KP_MIN, np2(k))
    bsp = np2(block_size) if fused else 1
    G1 = G2 = _group(KP) if group is None else max(1, np2(group))
    if G1 * G2 < 2:
        G2 = 2
    S = G1 * G2
    if direct is None:
        direct = 128 if facts.get("name") == "triton-interpreter" else (512 if not fused else min(512, 4096 // bsp))
    SC2 = 2 if (not fused and KP <= 64) else 1
    SC3 = not fused and KP <= 64 and G1 >= 4
    G1S = G1 // 2 if SC3 else G1
    rsel = KP >= 512

    def chunk(width, lanes=4096):  # super groups per C-stage chunk: a [KC, S] tile of at most `lanes` lanes
        return max(1, min(KP, np2(max(1, lanes // (width * bsp)))))

    if fused:
        nw = (8 if rows <= int(facts["sm_count"]) else 4) if KP <= 128 else 8
    else:
        nw = 8 if KP <= 512 else 16
    SB = max(KP, min(max(1024, 4 * KP), np2(-(-DECODE_BLOCKS // S))))
    return dict(KP=KP, G1=G1, G2=G2, NT=max(1, np2(max(1, (4096 if fused else 2048) // (S * bsp)))),
                SB=SB, FOLD=SB * S < DECODE_BLOCKS, KC=chunk(S),
                DT=max(KP, np2(direct)), SC2=SC2, KC2=chunk(S * SC2, 8192 if SC2 > 1 else 4096), SC3=SC3, G1S=G1S, G2S=G2,
                KC3=chunk(G1S * G2), L1P=0 if rsel else (1024 if l1p is None else int(l1p)), RSEL=rsel, num_warps=nw)


def hier_fits(pl: dict, n: int) -> bool:
    """Does the hier plan ``pl`` serve rows of ``n`` columns?  Without ``FOLD`` stage B holds one tile of ``SB``
    super groups (k <= 64: up to the 32768-block decode workspace); wider selects take the radix kernel."""
    return pl["FOLD"] or n <= pl["SB"] * pl["G1"] * pl["G2"]


def main_chain_min(pl: dict) -> int:
    """The longest row extent that the hier kernel selects without stage A (direct top-k or a short chain)."""
    KP, S = pl["KP"], pl["G1"] * pl["G2"]
    m = max(pl["DT"], KP * S * pl["SC2"])
    return max(m, KP * pl["G1S"] * pl["G2S"]) if pl["SC3"] else m


def fusable(topk_blocks: int, block_size: int) -> bool:
    """Can the fused kernel serve this shape?  Its last stage holds ``KP * G1 * next_pow2(block_size)`` logits in
    registers: at most 4096 (k <= 256 at block size 8)."""
    KP = max(KP_MIN, np2(topk_blocks))
    return KP * _group(KP) * np2(block_size) <= 4096


def _with_rows(pl: dict, n: int, rows: int, facts: dict, *, fused: bool, programs: int | None = None) -> dict:
    """The run-time part of a hier plan: programs per row ``P``, the workspace layout for ``n`` columns."""
    S = pl["G1"] * pl["G2"]
    nsg = -(-n // S)
    min_sg = max(1, 1024 // S)
    r16 = lambda x: -(-x // 16) * 16  # noqa: E731  (workspace regions start 16-slot aligned: vector loads)
    if programs is None:
        P = max(1, (2 * int(facts["sm_count"])) // max(rows, 1))
        if fused:
            P = max(P, 4)
        P = max(1, min(P, -(-nsg // min_sg)))
    else:
        P, min_sg = max(1, int(programs)), 1
    wrow = r16(r16(nsg) + pl["KP"] + pl["KP"] * pl["G2"] * pl["SC2"] + (r16(nsg) * pl["G2"] if fused else 0))
    return dict(pl, nsg_max=r16(nsg), wrow=wrow, min_sg=min_sg, P=P)


# ------------------------------------------------------------------------------------------------ buffers
def counters(device: torch.device, rows: int) -> torch.Tensor:
    """The hier select's per-row arrival counters: int32 zeros, each reset by the program that finishes its row."""
    return _scratch.zeroed("hier_counters", device, rows, capturing=_checks.capturing())


def totals(device: torch.device, rows: int) -> torch.Tensor:
    """The parallel radix select's row totals ``int32 [rows, 4, 256]``: zero where a launch adds to them (each
    call's launches zero the slots they used, the last ones at the next call's first launch)."""
    return _scratch.zeroed("radix_totals", device, rows * 1024, capturing=_checks.capturing())


def _sync(route, rows: int, device) -> torch.Tensor | None:
    """The buffer kept between calls through which the route's programs meet (:mod:`dsa_lab._scratch`: private
    to the current stream or capture), or None.  Taken before a call's first launch, so a capture's one zeroing
    of it never sits between two launches that overlap."""
    algo, plan = route
    if algo == "hier":
        return counters(device, rows)
    if algo == "radix" and plan > 1:
        return totals(device, rows)
    return None


def select_sync(rows: int, n: int, k: int, device, *, block_size: int = 1, facts: dict | None = None):
    """Take the kept buffer a select of ``k`` of ``n`` columns (block scores when ``block_size > 1``) over ``rows``
    rows will use, ahead of it: a composition that launches something before the select (the decode step's
    producer) calls this first, so that in a capture the buffer's zeroing precedes both; the select then gets the
    same buffer."""
    facts = facts if facts is not None else _impl.device_facts(device.index if device.type == "cuda" else None)
    return _sync(_route(rows, n, k, facts, {}, block_size), rows, device)


def _workspace(slots: int, device) -> torch.Tensor:
    """The hier kernel's int64 row workspace (every slot it reads, it writes first; tests poison it here)."""
    return torch.empty((slots,), dtype=torch.int64, device=device)


def _scores_buffer(rows: int, nblocks: int, device) -> torch.Tensor:
    """Scores for the select: rows padded to a multiple of 16 blocks, so the select's source stride is aligned for
    every width (one compiled select, vector loads)."""
    return torch.empty((rows, -(-nblocks // 16) * 16), dtype=torch.float32, device=device)[:, :nblocks]


def _facts(t: torch.Tensor, facts: dict | None) -> dict:
    return facts if facts is not None else _impl.facts_for(t)


def _hier_plan(k, facts, over, *, fused=False, bs=1, rows=1):
    return plan_hier(k, facts, fused=fused, block_size=bs, rows=rows, group=over.get("group"),
                     direct=over.get("direct"), l1p=over.get("l1p"))


def _scores_mult(rows: int, sm: int, pdl: bool) -> int:
    """The unfused scores grid, about this many programs per SM in all: with the dependent launch, fewer programs
    from SM/5 rows (12 x SM to SM/3 rows, 16 x SM to 3 x SM rows), where a grid sized for the padded width lost more
    to its idle programs than it gained in loads in flight."""
    if pdl and sm < 5 * rows and 3 * rows < sm:
        return 12
    if pdl and sm <= 3 * rows <= 9 * sm:
        return 16
    return SCORES_MULT


def _fast(rows: int, sm: int, over: dict) -> bool:
    """Stage A's tiles wholly inside the extent load unmasked at more than 2 x SM rows (``over``: the test hook)."""
    return over.get("fast", rows > 2 * sm)


# -------------------------------------------------------------------------------------------------- entries
def _route(rows: int, n: int, k: int, facts: dict, over: dict, bs: int):
    """Which kernel selects ``k`` of ``n`` columns over ``rows`` rows: ``("bisect", None)``, ``("radix", P)`` (P
    programs per row) or ``("hier", plan)`` (the plan before its run-time part, :func:`_with_rows`)."""
    sm = int(facts["sm_count"])
    algo = over.get("algo") or select_algo(rows, n, k, sm)
    if algo == "bisect":
        return algo, None
    pl = _hier_plan(k, facts, over, bs=bs, rows=rows) if algo == "hier" else None
    if algo == "radix" or not hier_fits(pl, n):
        return "radix", over.get("programs") or split_programs(rows, n, sm)
    return "hier", pl


def _select(src, len_t, start_t, out, flags, n, width, k, rr, facts, route, sync, *, blocks, bs, over, gdc=False):
    """Select ``k`` of ``n`` columns (``blocks``: block scores, bounds from row ends) into ``out`` by ``route``
    (:func:`_route`) with its kept buffer ``sync``; the flags, when given, must already be zeroed.  Returns whether
    the select set them (hier and bisect do, radix does not)."""
    rows = out.shape[0]
    algo, plan = route
    if algo == "bisect":
        _bisect.launch(src, len_t, start_t, out, flags, n, width, k, rr, blocks=blocks, bs=bs, gdc=gdc,
                       warp_size=facts.get("warp_size", 32))
        return True
    if algo == "radix":
        _radix.launch(src, len_t, start_t, out, n, width, k, rr, P=plan,
                      short=over.get("short", RADIX_SHORT if plan > 1 else 0), blocks=blocks, bs=bs,
                      gdc=bool(facts.get("pdl")), tot=sync)
        return False
    pl = _with_rows(plan, n, rows, facts, fused=False, programs=over.get("programs"))
    _hier.launch(_aligned(src), len_t, start_t, out, _workspace(rows * pl["wrow"], src.device), sync,
                 flags, n, width, k, rr, pl, P=pl["P"], blocks=blocks, fused=False, bs=bs, fzw=2,
                 fast=_fast(rows, int(facts["sm_count"]), over))
    return True


def _aligned(scores: torch.Tensor) -> torch.Tensor:
    """``scores``, or a copy of it whose rows start 16 elements apart (the hier kernel's layouts assume it: see
    :func:`dsa_lab.kernels.hier._hier_kernel`); the decode workspace's widths are multiples of 16 already."""
    if scores.shape[0] <= 1 or scores.stride(0) % 16 == 0:
        return scores
    rows, n = scores.shape
    buf = torch.empty((rows, -(-n // 16) * 16), dtype=scores.dtype, device=scores.device)[:, :n]
    return buf.copy_(scores)


def topk_select_triton(scores, k, lengths=None, row_repeat=1, out=None, *, facts=None, over=None):
    """Triton arm of :func:`dsa_lab.topk_select` (arguments checked there): int32 ``[rows, k]``, every slot written
    (the selected column ids, ``-1`` tail).  Columns at or past a row's length are never loaded.  ``over``: test
    hooks that force a path at small sizes (``algo``, ``programs``, ``group``, ``direct``, ``l1p``, ``fast``,
    ``short``; candidate blocks also ``a_done``)."""
    rows, n = scores.shape
    if out is None:
        out = torch.empty((rows, k), dtype=torch.int32, device=scores.device)
    if n == 0:
        return out.fill_(-1)
    if rows:
        facts, over = _facts(scores, facts), over or {}
        route = _route(rows, n, k, facts, over, 1)
        _select(scores, lengths, None, out, None, n, n, k, row_repeat, facts, route, _sync(route, rows, scores.device),
                blocks=False, bs=1, over=over)
    return out


def select_candidate_blocks_triton(logits, row_ends, topk_blocks, row_starts=None, block_size=8, row_repeat=1,
                                   out=None, *, fused=False, with_flags=False, flags_out=None, facts=None, over=None,
                                   scores=None):
    """Triton arm of :func:`dsa_lab.select_candidate_blocks` (arguments checked there).

    Unfused (the default): the bounded block-scores launch (it also zeroes the flags, and at few rows stores the
    hier select's stage-A keys), then the select over each row's live block extent, launched as a programmatic
    dependent of the scores launch on sm_90+.  ``fused=True``: one hier kernel reads each row's live logits once
    and forms block maxima on the fly (:func:`fusable` shapes only).  ``with_flags``: also the candidate flags,
    ``(ids, flags)``; ``flags_out`` a given tensor to write (every byte is written).  ``scores``: the block scores
    already written over each row's extent (by the producer, :func:`dsa_lab.kernels.producer.paged_mqa_logits_triton`,
    which also zeroed ``flags_out``): no scores launch, the select alone (and the flags kernel after a radix select).

    Returns int32 ``[rows, topk_blocks]`` block ids (any order), ``-1`` tail; every slot written."""
    rows, width = logits.shape
    bs, k = int(block_size), int(topk_blocks)
    nblocks = -(-width // bs)
    dev = logits.device
    if out is None:
        out = torch.empty((rows, k), dtype=torch.int32, device=dev)
    flags = None
    if with_flags:
        flags = flags_out if flags_out is not None else torch.empty((rows, nblocks + 1), dtype=torch.uint8, device=dev)
    if nblocks == 0 or rows == 0:
        out.fill_(-1)
        return (out, flags.zero_()) if with_flags else out
    facts = _facts(logits, facts)
    over = over or {}
    sm = int(facts["sm_count"])
    if fused:
        pl = _with_rows(_hier_plan(k, facts, over, fused=True, bs=bs, rows=rows), nblocks, rows, facts, fused=True,
                        programs=over.get("programs"))
        if not hier_fits(pl, nblocks):
            raise ValueError(f"the fused kernel serves at most {pl['SB'] * pl['G1'] * pl['G2']} blocks per row at "
                             f"topk_blocks={k}; got {nblocks}: use impl='triton'")
        kflags = flags if rows <= 2 * sm else None
        _hier.launch(logits, row_ends, row_starts, out, _workspace(rows * pl["wrow"], dev), counters(dev, rows),
                     kflags, nblocks, width, k, row_repeat, pl, P=pl["P"], blocks=True, fused=True, bs=bs,
                     fzw=int(flags is not None and flags.data_ptr() % 16 == 0),
                     fast=over.get("fast", np2(bs) == bs or rows > 2 * sm))
        if flags is not None and kflags is None:
            _flags.fill_flags(out, flags, width, row_starts, bs, row_repeat)
        return (out, flags) if with_flags else out
    pdl = bool(facts.get("pdl"))
    scored = scores is not None
    sc = scores if scored else _scores_buffer(rows, nblocks, dev)
    route = _route(rows, nblocks, k, facts, over, bs)
    sync = _sync(route, rows, dev)  # before the first launch (see _sync)
    if route[0] != "hier":
        if not scored:
            _scores.launch(logits, row_ends, row_starts, sc, bs, row_repeat,
                           _scores.programs_per_row(rows, nblocks, bs, sm, SCORES_MULT), fill_dead=False,
                           zero_flags=flags, ld=pdl)
        flags_set = _select(sc, row_ends, row_starts, out, flags, nblocks, width, k, row_repeat, facts, route, sync,
                            blocks=True, bs=bs, over=over, gdc=pdl)
        if flags is not None and not flags_set:
            _flags.fill_flags(out, flags, width, row_starts, bs, row_repeat, zeroed=True)
        return (out, flags) if with_flags else out
    pl = route[1]
    S = pl["G1"] * pl["G2"]
    a_done = (not scored and over.get("a_done", rows * 4 <= sm and "programs" not in over and not pl["RSEL"])
              and _scores.tile_blocks(bs) % S == 0)
    pl = _with_rows(pl, nblocks, rows, facts, fused=False, programs=1 if a_done else over.get("programs"))
    ws = _workspace(rows * pl["wrow"], dev)
    q = (_scores.tiles(nblocks, bs) if a_done
         else _scores.programs_per_row(rows, nblocks, bs, sm, _scores_mult(rows, sm, pdl)))
    if not scored:
        _scores.launch(logits, row_ends, row_starts, sc, bs, row_repeat, q, fill_dead=False, zero_flags=flags,
                       stage_a=(ws, pl["wrow"], S, main_chain_min(pl)) if a_done else None, ld=pdl)
    _hier.launch(sc, row_ends, row_starts, out, ws, sync, flags, nblocks, width, k, row_repeat, pl,
                 P=pl["P"], blocks=True, fused=False, bs=bs, fzw=2, fast=_fast(rows, sm, over), a_done=a_done,
                 gdc=pdl)
    return (out, flags) if with_flags else out


def block_scores_triton(logits, row_ends, row_starts=None, block_size=8, row_repeat=1, *, padded=False, facts=None):
    """Triton arm of :func:`dsa_lab.block_scores` (arguments checked there): a new float32 ``[rows, nblocks]``,
    every slot written (``-inf`` past each row's extent).  ``padded``: the upstream "before" kernel, whose reads
    follow the padded width (the benchmark's torch arm)."""
    rows, width = logits.shape
    bs = int(block_size)
    nblocks = -(-width // bs)
    out = torch.empty((rows, nblocks), dtype=torch.float32, device=logits.device)
    if rows and nblocks:
        sm = int(_facts(logits, facts)["sm_count"])
        q = _scores.programs_per_row(rows, nblocks, bs, sm, None if padded else SCORES_MULT)
        _scores.launch(logits, row_ends, row_starts, out, bs, row_repeat, q, padded=padded, fill_dead=True)
    return out


def candidate_flags_triton(candidates, width, row_starts=None, block_size=8, row_repeat=1):
    """Triton arm of :func:`dsa_lab.candidate_flags` (arguments checked there): uint8 ``[rows, nblocks + 1]``."""
    rows = candidates.shape[0]
    flags = torch.empty((rows, -(-int(width) // int(block_size)) + 1), dtype=torch.uint8, device=candidates.device)
    return _flags.fill_flags(candidates, flags, width, row_starts, block_size, row_repeat)
