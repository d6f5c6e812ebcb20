"""Plans: which kernel serves a call, with which constexprs and grid -- pure functions of shapes and device facts.

A call's values (lengths, row ends, scores) never choose anything on the host, so every call captures in a CUDA
graph and replays with new lengths.  Shapes choose *run-time* arguments (programs per row, the split, flags);
compiled variants are chosen only by a plan's constexprs (the k bucket, the stage, the block size, alignment), so a
new batch size, width, length or stride never compiles a kernel (``dsa-lab warmup --dry-run`` lists every variant).
The launchers (:mod:`dsa_lab.launch`) turn a plan into buffers and launches.

The rules (the measurement behind each: ``docs/design.md`` §9):

==========================  =========================================================================================
decision                    rule
==========================  =========================================================================================
select algorithm            bisect for k > 256 on rows of at most 32768 columns from SM/6 rows, and from one row on
                            rows of 2048-8192 columns; long-row for k of 257-2048 on rows of 2^16 columns and more,
                            and on wider rows than 32768 from 2^20 columns in all (rows x width); else radix when
                            the k bucket is at least 1024, or 512 with several radix programs per row; else hier
long-row select             a sample launch (a threshold per row), then P one-warp programs per row (at most 64 an
                            SM in all) stream it once and compact the few keys above the threshold; a finish
                            launch, one program per row, ranks the bucket that holds the k-th key
bisect select               one program per row, the row in registers, 512 threads (16 warps; 8 waves of 64 on ROCm)
radix form                  P programs per row (:func:`radix_programs`), 5 dependent launches, when P > 1; else one
                            program per row; rows of at most 4096 live columns whole in one program
hier k bucket               ``KP = max(64, next_pow2(k))``: one compiled kernel per bucket, not per k
hier groups                 8 at KP 64, 4 at 128, 2 beyond; register radix stages (``RSEL``) from KP 512
hier direct top-k           rows of at most 512 columns
hier short chains           rows of at most KP super groups skip stage A; at KP 64 (unfused) a narrow and a wide chain
hier programs per row       ``2 * SMs / rows`` (fused: at least 4), at least 1024 columns each
hier warps                  8 (16 from KP 1024); fused 8 up to SM rows, else 4
stage-A whole tiles         unmasked loads at more than 2 x SM rows (fused with a power-of-two block: always)
candidate blocks            unfused: the bounded scores launch, then the select; fused: the ``triton_fused`` arm
flags                       unfused: zeroed by the scores launch, set by the hier / bisect select (radix: the flags
                            kernel); fused beyond 2 x SM rows: the flags kernel after the select
stage A in the scores       at most SM/4 rows (hier, k <= 256): the scores launch stores stage A's keys
launch
dependent launch            the select launched as a programmatic dependent of the scores launch (sm_90+); the
                            scores grid 12 x SM programs at SM/5-SM/3 rows, 16 x SM to 3 x SM rows, else 32 x SM
==========================  =========================================================================================

Glossary (one name per concept, in Python and in the kernels' constexprs): **block size** ``block_size`` /
``BS`` (``BSP``: the next power of two); **k bucket** ``k_bucket(k)`` / ``KP``; **flag zeroing**
:class:`FlagZeroing` / ``ZERO_FLAGS``; **dependent launch** ``pdl`` / ``PDL`` (a kernel waits for the launch it
depends on, or lets its dependent start); **block scores** as a select's source ``BLOCK_SCORES``; **an AMD target**
``hip`` / ``HIP``.
"""
from __future__ import annotations

import dataclasses
import enum
import math
import struct

__all__ = [
    "FlagZeroing", "Hier", "Radix", "Bisect", "Longrow", "CandidateBlocks", "Producer",
    "np2", "k_bucket", "select_algo", "radix_programs", "hier", "hier_fits", "main_chain_min", "fusable", "longrow",
    "longrow_rank", "select",
    "candidate_blocks", "scores_programs", "scores_tile", "scores_tiles", "mask_programs", "producer",
    "producer_config",
]

KP_MIN = 64  # the smallest k bucket
RADIX_MIN_KP = 1024
RADIX_PAR_MIN_KP = 512
RADIX_SHORT = 4096  # parallel radix: rows of at most this many live columns whole in one program
RADIX_MAXP = 32  # programs per row of the parallel radix select, at most
RADIX_TILE, RADIX_PAR_TILE = 2048, 1024
KT = 1024  # ids per store step: one tile for any k (a tile sized by k would compile one kernel per k)
BISECT_MIN_ROWS_PER_SM = 1 / 6  # the bisect select from this many rows per SM (rows of at most 32768 columns) ...
BISECT_ANY_ROWS = (2048, 8192)  # ... and from one row on rows of this many columns
BISECT_MAX_COLS = 32768  # its widest register tile
BISECT_MID_CAP = 2048
BISECT_THREADS = 512
DECODE_BLOCKS = 32768  # the padded decode workspace in blocks (262144 / 8): stage B's tile is sized for it
LONGROW_MAX_KP = 2048  # the long-row select serves k buckets 512 and 2048 on rows wider than the bisect's tile
LONGROW_WORDS = 8  # words a long-row stream thread holds a step: its tile is this many times its threads
LONGROW_WARPS = 1  # warps a long-row stream program: its tile loop reduces within a warp (no barrier)
LONGROW_PROGRAMS = 64  # long-row stream programs per SM in all, at most (one tile each at least)
LONGROW_NB = 2048  # buckets of the long-row finish's histogram (of the candidates' distance above the threshold)
LONGROW_HS = 4  # copies of a row's histogram: its stream programs' atomics spread over them (a tie's one bucket)
LONGROW_MIN_WIDTH = 1 << 16  # the long-row select on rows this wide at any row count (the radix's passes cost more)
LONGROW_MIN_COLUMNS = 1 << 20  # and on narrower rows from this many columns in all (rows x width); the radix below
SCORES_MULT = 32  # scores launch: about 32 x SM programs in all
SCORES_LANES = 4096  # logits per scores tile, whatever the width
MASK_TILE, MASK_PROGRAMS = 2048, 16


class FlagZeroing(enum.IntEnum):
    """How a launch zeroes the candidate flags it is given (``ZERO_FLAGS``): not at all (an earlier launch did, or
    there are none), byte by byte, or in 8-byte words (the flags tensor 16-byte aligned)."""

    NONE = 0
    BYTES = 1
    WORDS = 2


def flag_zeroing(aligned: bool) -> FlagZeroing:
    return FlagZeroing.WORDS if aligned else FlagZeroing.BYTES


def np2(x: int) -> int:
    """The smallest power of two ``>= x`` (1 for ``x <= 1``)."""
    return 1 if x <= 1 else 1 << (int(x) - 1).bit_length()


def k_bucket(k: int) -> int:
    """The hier select's k bucket ``KP``: one compiled kernel serves every k of a bucket."""
    return max(KP_MIN, np2(k))


# ----------------------------------------------------------------------------------------------------- select
def radix_programs(rows: int, n: int, sm_count: int, tile: int = RADIX_PAR_TILE) -> int:
    """Programs per row of the parallel radix select: fill the device about twice, at least 4 while the call has at
    most twice as many rows as SMs, at least one tile each, at most :data:`RADIX_MAXP`."""
    P = (2 * sm_count) // max(rows, 1)
    if rows <= 2 * sm_count:
        P = max(P, 4)
    return max(1, min(P, -(-n // tile), RADIX_MAXP))


def select_algo(rows: int, n: int, k: int, sm_count: int) -> str:
    """``"bisect"``, ``"longrow"``, ``"radix"`` or ``"hier"`` for a select of ``k`` from ``n`` columns over ``rows``
    rows."""
    kp = np2(max(k, 2))
    few_cols = BISECT_ANY_ROWS[0] <= n <= BISECT_ANY_ROWS[1]
    if kp >= RADIX_PAR_MIN_KP and n <= BISECT_MAX_COLS and (few_cols or rows >= BISECT_MIN_ROWS_PER_SM * sm_count):
        return "bisect"
    if RADIX_PAR_MIN_KP <= kp <= LONGROW_MAX_KP and n > BISECT_MAX_COLS and (
            n >= LONGROW_MIN_WIDTH or rows * n >= LONGROW_MIN_COLUMNS):
        return "longrow"
    if kp >= RADIX_MIN_KP or (kp >= RADIX_PAR_MIN_KP and radix_programs(rows, n, sm_count) > 1):
        return "radix"
    return "hier"


@dataclasses.dataclass(frozen=True)
class Hier:
    """The hier select: its constexprs (``KP`` .. ``RSEL``, one compiled kernel per k bucket, block size and
    fusion), its warps, and the run-time part of one call (:meth:`with_rows`).

    ``KP`` k bucket; ``G1`` columns per level-1 group, ``G2`` level-1 groups per super group (``S = G1 * G2``);
    ``NT`` super groups per stage-A tile; ``SB`` stage B's tile of super groups (``FOLD``: several tiles folded,
    for rows wider than ``SB * S``); ``KC`` / ``KC2`` / ``KC3`` super groups per stage-C chunk of the main, wide
    and narrow chains; ``DT`` the direct top-k's tile; ``SC2`` the wide chain's super-group multiple (1: none);
    ``SC3`` the narrow chain (level-1 groups ``G1S``, ``G2S`` of them); ``L1P`` pairing threshold of the wide
    chain's level-1 keys (0: off); ``RSEL`` register radix stages instead of ``tl.topk``."""

    KP: int
    G1: int
    G2: int
    NT: int
    SB: int
    FOLD: bool
    KC: int
    DT: int
    SC2: int
    KC2: int
    SC3: bool
    G1S: int
    G2S: int
    KC3: int
    L1P: int
    RSEL: bool
    num_warps: int
    fused: bool = False
    block_size: int = 1
    # run-time: programs per row, the row workspace's layout, the smallest share, whole tiles unmasked, stage A done
    # by the scores launch
    P: int = 1
    nsg_max: int = 0
    wrow: int = 0
    min_sg: int = 1
    fast: bool = False
    a_done: bool = False

    algo = "hier"

    @property
    def S(self) -> int:
        return self.G1 * self.G2

    def constexprs(self) -> dict:
        names = ("KP", "G1", "G2", "NT", "SB", "KC", "DT", "SC2", "KC2", "SC3", "G1S", "G2S", "KC3", "L1P", "RSEL",
                 "FOLD")
        return {n: getattr(self, n) for n in names}

    def with_rows(self, n: int, rows: int, sm_count: int, programs: int | None = None) -> Hier:
        """The run-time part for ``rows`` rows of ``n`` columns: ``P`` programs per row (``programs``: forced, with
        no smallest share), the workspace layout."""
        S = self.S
        nsg = -(-n // S)
        min_sg = max(1, 1024 // S)
        r16 = lambda x: -(-x // 16) * 16  # noqa: E731  (workspace regions start 16-slot aligned: vector loads)
        if programs is None:
            P = max(1, (2 * int(sm_count)) // max(rows, 1))
            if self.fused:
                P = max(P, 4)
            P = max(1, min(P, -(-nsg // min_sg)))
        else:
            P, min_sg = max(1, int(programs)), 1
        wrow = r16(r16(nsg) + self.KP + self.KP * self.G2 * self.SC2 + (r16(nsg) * self.G2 if self.fused else 0))
        return dataclasses.replace(self, P=P, nsg_max=r16(nsg), wrow=wrow, min_sg=min_sg)


@dataclasses.dataclass(frozen=True)
class Radix:
    """The radix select: ``P`` programs per row (one launch when 1, else five), rows of at most ``short`` live
    columns whole in one program (parallel form)."""

    P: int
    short: int
    block_size: int = 1
    algo = "radix"


@dataclasses.dataclass(frozen=True)
class Bisect:
    """The bisect select: one program per row of ``num_warps`` warps, ``ws`` threads on a tile's first axis,
    ``model`` the fitted law's first step (32-lane warps only: on 64-lane targets its registers spill), ``mid_cap``
    the middle's capacity."""

    num_warps: int
    ws: int
    model: bool
    mid_cap: int = BISECT_MID_CAP
    block_size: int = 1
    algo = "bisect"


@dataclasses.dataclass(frozen=True)
class Longrow:
    """The long-row select: ``P`` programs per row stream it in tiles of ``TILE`` columns (``stream_warps``); per-row
    candidate buffers of ``CAP`` words above the threshold and ``CAP_EQ`` columns equal to it, which the finish
    (``fin_warps``) holds in register tiles of ``FT`` / ``FT_EQ``, and a histogram of ``NB`` buckets of the
    candidates (the k-th word's bucket ranked in pairs where it holds at most ``FB`` words); the threshold from a
    sample of ``NCH`` runs of ``CH`` columns, at the sample rank of the row's k-th word plus ``RZ`` standard
    deviations of it and ``RB`` words (:func:`longrow_rank`).  The tiles are constexprs (small in the CPU tests:
    every branch at interpreter sizes); the buffer sizes are not (one compiled kernel for both k buckets)."""

    P: int
    CAP: int
    CAP_EQ: int
    block_size: int = 1
    TILE: int = LONGROW_WORDS * 32 * LONGROW_WARPS
    FT: int = 4 * LONGROW_MAX_KP
    FT_EQ: int = 2 * LONGROW_MAX_KP
    FB: int = 64  # the words of the k-th word's bucket that the finish ranks in pairs, at most (2 FB <= CAP_EQ)
    STILE: int = 2048  # columns a step of a row scan (a wide tie, the exact fallback; the sample bounds its step below
    # a tie by four steps of 4 * STILE)
    NCH: int = 512  # runs of CH columns: short runs keep a sorted row's sample spread over its ranks
    CH: int = 8
    RZ: float = 5.0  # the threshold's margin in the sample: standard deviations of the k-th word's rank ...
    RB: float = 4.0  # ... and words (fewer than k above it about once in 3.6 million rows of independent values)
    num_warps: int = 8  # the sample's
    stream_warps: int = LONGROW_WARPS
    stream_regs: int = 0  # the stream's register cap (CUDA; 0: none): more of its programs share an SM
    fin_warps: int = 16
    NB: int = LONGROW_NB
    HS: int = LONGROW_HS
    warp_size: int = 32
    hip: bool = False  # an AMD target (gfx): the finish waits for its stores before the barrier after which it reads
    # them back (Triton's barrier there is a bare s_barrier)
    algo = "longrow"

    @property
    def lanes(self) -> int:
        """The stream's threads: a tile is ``[TILE // lanes, lanes]``, a column of it per thread."""
        return min(self.TILE, self.warp_size * self.stream_warps)

    @property
    def FL(self) -> int:
        """The finish's tiles' columns (a column per thread, the finish's threads at most): its compactions scan
        across the threads once, not once a row of the tile."""
        return min(self.FT, self.FT_EQ, self.warp_size * self.fin_warps)


def _f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def longrow_rank(L: int, k: int, plan: Longrow) -> int:
    """The sample's rank of the long-row threshold on a row of ``L > NCH * CH`` live columns (the sample kernel's
    float32 arithmetic): ``m = k * NCH * CH / L``, the rank of the row's k-th word scaled to the sample, plus
    ``RZ * sqrt(m) + RB``, rounded up; at most the rank that aims at ``CAP / 2`` words above the threshold (or at
    ``2k`` where that is more), at least 1."""
    s = plan.NCH * plan.CH
    m = _f32(_f32(float(k * s)) / _f32(float(L)))
    rf = _f32(_f32(m + _f32(_f32(plan.RZ) * _f32(math.sqrt(m)))) + _f32(plan.RB))
    r = math.ceil(rf)
    top = max((plan.CAP // 2) * s // L, -(-2 * k * s // L))
    return max(1, min(r, top, s))


def longrow(rows: int, n: int, k: int, facts: dict, *, block_size: int = 1, programs: int | None = None) -> Longrow:
    """The long-row select of ``k <= LONGROW_MAX_KP``: programs per row to fill the device (at most
    :data:`LONGROW_PROGRAMS` per SM in all, at least a tile each; ``programs``: forced).  The threshold is the
    sample's word of rank :func:`longrow_rank` (the sample: 4096 words); the buffer holds 8192 above it (either k
    bucket) and twice the k bucket equal to it.  On rows of independent values fewer than k lie above the threshold
    (the row read again) at most about once in 3.6 million rows for k of 257-2048 on rows of up to 262144 columns
    (the exact tail of the rank: :func:`dsa_lab.workbook.longrow.rank_rows`), where the threshold's expected
    candidates are half the buffer at most; more than the buffer holds about once in 7 billion at 262144 columns
    (rank 64).  Wider rows take a smaller rank (the buffer's half), and miss more often: rank 16 for k = 2048 at
    2^20 columns, one row in 120."""
    if k > LONGROW_MAX_KP:
        raise ValueError(f"the long-row select takes k of at most {LONGROW_MAX_KP}, got {k}")
    ws = int(facts.get("warp_size", 32))
    tile = LONGROW_WORDS * ws * LONGROW_WARPS
    P = programs or max(1, min(-(-n // tile), -(-LONGROW_PROGRAMS * int(facts["sm_count"]) // max(rows, 1))))
    kb = 512 if k <= 512 else LONGROW_MAX_KP
    fin = 16 if ws == 32 else 8  # 512 lanes either way (1024 spill on AMD targets)
    arch = str(facts.get("arch") or "")
    regs = 64 if arch.startswith("sm_") else 0  # 32 programs an SM (the most it holds); no spill under triton 3.6
    return Longrow(P=int(P), CAP=4 * LONGROW_MAX_KP, CAP_EQ=2 * kb, block_size=int(block_size), TILE=tile,
                   fin_warps=fin, stream_regs=regs, warp_size=ws, hip=arch.startswith("gfx"))


def _group(KP: int) -> int:
    return 8 if KP <= 64 else (4 if KP <= 128 else 2)


def hier(k: int, facts: dict, *, fused: bool = False, block_size: int = 1, rows: int = 1, group: int | None = None,
         direct: int | None = None, l1p: int | None = None) -> Hier:
    """The hier select's constexprs and warps for ``k`` (its bucket), the fusion and the block size; ``rows`` picks
    only the fused kernel's warps.  ``group`` / ``direct`` / ``l1p``: smaller groups, direct tile or pairing threshold
    (each compiles a kernel of its own; tests reach every path at interpreter sizes with them)."""
    KP = k_bucket(k)
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
    return Hier(KP=KP, G1=G1, G2=G2, NT=max(1, np2(max(1, (4096 if fused else 2048) // (S * bsp)))), SB=SB,
                FOLD=SB * S < DECODE_BLOCKS, KC=chunk(S), DT=max(KP, np2(direct)), SC2=SC2,
                KC2=chunk(S * SC2, 8192 if SC2 > 1 else 4096), SC3=SC3, G1S=G1S, G2S=G2, KC3=chunk(G1S * G2),
                L1P=0 if rsel else (1024 if l1p is None else int(l1p)), RSEL=rsel, num_warps=nw, fused=fused,
                block_size=int(block_size))


def hier_fits(pl: Hier, n: int) -> bool:
    """Does the hier plan serve rows of ``n`` columns?  Without ``FOLD`` stage B holds one tile of ``SB`` super
    groups (k <= 64: up to the 32768-block decode workspace); wider selects take the radix kernel."""
    return pl.FOLD or n <= pl.SB * pl.S


def main_chain_min(pl: Hier) -> int:
    """The longest row extent that the hier kernel selects without stage A (direct top-k or a short chain)."""
    m = max(pl.DT, pl.KP * pl.S * pl.SC2)
    return max(m, pl.KP * pl.G1S * pl.G2S) if pl.SC3 else m


def fusable(k: int, block_size: int) -> bool:
    """Can the fused kernel serve this shape?  Its last stage holds ``KP * G1 * next_pow2(block_size)`` logits in
    registers: at most 4096 (k <= 256 at block size 8)."""
    KP = k_bucket(k)
    return KP * _group(KP) * np2(block_size) <= 4096


def fused_blocks(k: int, block_size: int, facts: dict) -> int:
    """The most blocks per row the fused kernel serves at ``k``."""
    pl = hier(k, facts, fused=True, block_size=block_size)
    return pl.SB * pl.S if not pl.FOLD else 2**31 - 1


def bisect(facts: dict, *, block_size: int = 1, num_warps: int | None = None, mid_cap: int | None = None) -> Bisect:
    """The bisect select on a device of ``facts``: :data:`BISECT_THREADS` threads a program (``num_warps``: forced;
    ``mid_cap``: a smaller middle, reaching it at small sizes)."""
    warp = int(facts.get("warp_size", 32))
    nw = num_warps or BISECT_THREADS // warp
    return Bisect(num_warps=nw, ws=BISECT_THREADS // nw, model=warp == 32, mid_cap=mid_cap or BISECT_MID_CAP,
                  block_size=int(block_size))


def select(rows: int, n: int, k: int, facts: dict, *, block_size: int = 1, algo: str | None = None,
           programs: int | None = None, short: int | None = None, group: int | None = None,
           direct: int | None = None, l1p: int | None = None,
           fast: bool | None = None) -> Hier | Radix | Bisect | Longrow:
    """The select of ``k`` of ``n`` columns (block scores when ``block_size > 1``) over ``rows`` rows.  The keyword
    arguments force a choice the rules would make otherwise (``algo``, ``programs`` per row, radix ``short`` rows,
    hier ``group`` / ``direct`` / ``l1p``, whole tiles ``fast``): a kernel's every path at small sizes."""
    sm = int(facts["sm_count"])
    algo = algo or select_algo(rows, n, k, sm)
    if algo == "bisect":
        if n > BISECT_MAX_COLS:
            raise ValueError(f"the bisect select takes rows of at most {BISECT_MAX_COLS} columns, got {n}")
        return bisect(facts, block_size=block_size)
    if algo == "longrow":
        return longrow(rows, n, k, facts, block_size=block_size, programs=programs)
    pl = hier(k, facts, block_size=block_size, rows=rows, group=group, direct=direct, l1p=l1p)
    if algo == "radix" or not hier_fits(pl, n):
        if programs is not None and not 1 <= programs <= RADIX_MAXP:
            raise ValueError(f"the radix select takes 1 to {RADIX_MAXP} programs per row, got {programs}")
        P = programs or radix_programs(rows, n, sm)
        return Radix(P=P, short=RADIX_SHORT if short is None and P > 1 else (short or 0), block_size=int(block_size))
    pl = pl.with_rows(n, rows, sm, programs)
    return dataclasses.replace(pl, fast=rows > 2 * sm if fast is None else bool(fast))


# ---------------------------------------------------------------------------------------------- candidate blocks
@dataclasses.dataclass(frozen=True)
class CandidateBlocks:
    """A candidate-block call: the ``select`` over block scores; ``scores_programs`` per row of the block-scores
    launch before it (0: none -- the scores are given, or the select reads the logits itself: fused, or long-row at
    block size 1); ``pdl``: the select a programmatic dependent of that launch; ``flags_kernel``: the flags set by
    the flags kernel after the select (else by the select itself, or none asked)."""

    select: Hier | Radix | Bisect
    scores_programs: int
    pdl: bool
    flags_kernel: bool


def scores_tile(block_size: int) -> int:
    """Blocks per scores tile (``BJ``): :data:`SCORES_LANES` logit lanes whatever the width (a width-dependent tile
    would compile one kernel per width)."""
    return max(1, SCORES_LANES // np2(block_size))


def scores_tiles(nblocks: int, block_size: int) -> int:
    return max(1, -(-nblocks // scores_tile(block_size)))


def scores_programs(rows: int, nblocks: int, block_size: int, sm_count: int, mult: int | None = SCORES_MULT) -> int:
    """Programs per row of the block-scores launch: one per tile of the padded width (``mult`` None), else about
    ``mult * sm_count`` in all, at least one per row, at most one per tile."""
    ntiles = scores_tiles(nblocks, block_size)
    if mult is None:
        return ntiles
    return max(1, min(ntiles, -(-int(mult) * int(sm_count) // max(rows, 1))))


def _scores_mult(rows: int, sm: int, pdl: bool) -> int:
    """The unfused scores grid, about this many programs per SM in all: with the dependent launch, fewer programs
    from SM/5 rows (12 x SM to SM/3 rows, 16 x SM to 3 x SM rows)."""
    if pdl and sm < 5 * rows and 3 * rows < sm:
        return 12
    if pdl and sm <= 3 * rows <= 9 * sm:
        return 16
    return SCORES_MULT


def candidate_blocks(rows: int, width: int, k: int, facts: dict, *, block_size: int, fused: bool = False,
                     scored: bool = False, **force) -> CandidateBlocks:
    """The plan of :func:`dsa_lab.select_candidate_blocks` on the Triton arms: ``fused`` (the fused arm),
    ``scored`` (the block scores already written, by the producer).  ``force``: as :func:`select`, and ``a_done``
    (stage A in the scores launch or not)."""
    sm = int(facts["sm_count"])
    nblocks = -(-width // block_size)
    pdl = bool(facts.get("pdl"))
    a_done = force.pop("a_done", None)
    if fused:
        pl = hier(k, facts, fused=True, block_size=block_size, rows=rows, group=force.get("group"),
                  direct=force.get("direct"), l1p=force.get("l1p")).with_rows(nblocks, rows, sm, force.get("programs"))
        fast = force.get("fast", np2(block_size) == block_size or rows > 2 * sm)
        return CandidateBlocks(dataclasses.replace(pl, fast=fast), 0, False, rows > 2 * sm)
    sel = select(rows, nblocks, k, facts, block_size=block_size, **force)
    if sel.algo == "longrow":
        if block_size == 1:  # it reads the logits (or the producer's scores) itself; the flags kernel after it
            return CandidateBlocks(sel, 0, False, True)
        sel = select(rows, nblocks, k, facts, block_size=block_size, **dict(force, algo="radix"))
    if sel.algo != "hier":
        q = 0 if scored else scores_programs(rows, nblocks, block_size, sm, SCORES_MULT)
        return CandidateBlocks(sel, q, pdl, sel.algo == "radix")
    if a_done is None:
        a_done = rows * 4 <= sm and "programs" not in force and not sel.RSEL
    a_done = not scored and a_done and scores_tile(block_size) % sel.S == 0
    if a_done:
        sel = dataclasses.replace(sel.with_rows(nblocks, rows, sm, 1), fast=sel.fast, a_done=True)
    q = 0 if scored else (scores_tiles(nblocks, block_size) if a_done
                          else scores_programs(rows, nblocks, block_size, sm, _scores_mult(rows, sm, pdl)))
    return CandidateBlocks(sel, q, pdl, False)


def mask_programs(rows: int, width: int, sm_count: int) -> int:
    """Programs per row of the mask kernel: about :data:`MASK_PROGRAMS` x SMs in all, at least one per row, at most
    one per tile."""
    return max(1, min(-(-width // MASK_TILE), -(-MASK_PROGRAMS * int(sm_count) // max(rows, 1))))


# ---------------------------------------------------------------------------------------------------- producer
@dataclasses.dataclass(frozen=True)
class Producer:
    """The paged MQA-logits kernel: tile ``BLOCK_T`` tokens, ``num_warps``, pipeline ``NUM_STAGES``, q hoisted out of
    the tile loop (``HOIST_Q``), ``WAVES`` programs per SM, ``fp8_dot`` (e4m3fn operands into the MMA, else the fp32
    upcast); ``splits`` programs per sequence; ``fuse_scores``: the epilogue writes the block scores."""

    BLOCK_T: int
    num_warps: int
    NUM_STAGES: int
    HOIST_Q: bool
    WAVES: int
    fp8_dot: bool
    splits: int = 1
    fuse_scores: bool = False


def producer_config(fp8_dot: bool, arch=None) -> dict:
    """Launch defaults for an architecture: CUDA 128-token tiles triple-buffered; AMD (wave64) 64-token tiles, one
    stage, the largest that compile for gfx950 and gfx942 with no spill; the upcast path 32-token tiles."""
    if not fp8_dot:
        return {"BLOCK_T": 32, "num_warps": 4, "NUM_STAGES": 1, "HOIST_Q": True, "WAVES": 4}
    if arch and arch.startswith("gfx"):
        return {"BLOCK_T": 64, "num_warps": 4, "NUM_STAGES": 1, "HOIST_Q": True, "WAVES": 8}
    return {"BLOCK_T": 128, "num_warps": 4, "NUM_STAGES": 3, "HOIST_Q": True, "WAVES": 8}


def splits(groups: int, max_tiles: int, sm_count: int, waves: int = 4) -> int:
    """Programs per sequence/row: about ``waves`` programs per SM over ``groups``, at most one per tile."""
    return max(1, min(max_tiles, -(-(waves * int(sm_count)) // max(groups, 1))))


def producer(batch: int, width: int, cache_tokens: int, facts: dict, *, fp8_dot: bool, block_size: int = 8,
             scores: bool = False, config: dict | None = None) -> Producer:
    """The logits kernel's plan for ``batch`` sequences, ``width`` columns (max_model_len) and ``cache_tokens`` a
    block-table row can address; ``config`` overrides :func:`producer_config` keys; ``scores``: block scores asked
    (fused into the epilogue when a tile holds whole blocks: a power of two dividing ``BLOCK_T``)."""
    cfg = producer_config(fp8_dot, facts.get("arch"))
    unknown = set(config or {}) - set(cfg)
    if unknown:
        raise ValueError(f"config keys {sorted(unknown)} are not launch settings of the producer ({sorted(cfg)})")
    cfg.update(config or {})
    bs = int(block_size)
    fuse = scores and bs & (bs - 1) == 0 and bs <= cfg["BLOCK_T"]
    max_tiles = -(-min(width, cache_tokens) // cfg["BLOCK_T"])
    return Producer(**cfg, fp8_dot=bool(fp8_dot), splits=splits(batch, max_tiles, facts["sm_count"], cfg["WAVES"]),
                    fuse_scores=fuse)
