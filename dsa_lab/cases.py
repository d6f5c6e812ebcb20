"""The named correctness configurations and the fuzz's compile-relevant menu: shapes only, no values.

``dsa-lab verify`` runs them (:mod:`dsa_lab.bench.verify`, inputs from :mod:`dsa_lab.bench.shapes`) and ``dsa-lab
warmup --verify`` compiles the variants they reach (:func:`dsa_lab.warmup.verify_calls`): one list for both.
"""
from __future__ import annotations

import dataclasses

__all__ = ["Case", "MATRIX", "MATRIX_BY_NAME", "FUZZ_MENU", "MML", "NB"]

MML = 262144  # max_model_len of the decode sweep
NB = MML // 8  # 32768 blocks per row


@dataclasses.dataclass(frozen=True)
class Case:
    """One named correctness configuration.

    ``op="select"``: :func:`dsa_lab.topk_select` on scores ``[rows, width]`` with ``lengths``.
    ``op="blocks"``: :func:`dsa_lab.select_candidate_blocks` on logits ``[rows, width]`` with
    ``row_ends``/``row_starts`` and ``block_size``; ``k`` is ``topk_blocks``.
    ``ends``: ``full`` (= width), ``ctx`` (= ``context``), ``ragged`` (random in [0, context]),
    ``zero`` (all 0), ``some_zero`` (ragged with zeros), ``past_width`` (> width).
    """

    name: str
    op: str
    rows: int
    width: int
    k: int
    context: int | None = None
    ends: str = "ctx"
    starts: bool = False
    row_repeat: int = 1
    dist: str = "normal"
    garbage_tail: bool = False
    block_size: int = 8
    cpu_rows: int | None = None
    cpu_width: int | None = None
    cpu_context: int | None = None
    cpu_k: int | None = None

    def sized(self, scale: str) -> "Case":
        if scale == "gpu":
            return self
        if scale != "cpu":
            raise ValueError(f"scale must be 'cpu' or 'gpu', got {scale!r}")
        rows = self.cpu_rows or min(self.rows, 4)
        rows = max(self.row_repeat, rows - rows % self.row_repeat)
        width = self.cpu_width or min(self.width, 1024 if self.op == "select" else 2048)
        if self.cpu_context is not None:
            context = self.cpu_context
        else:
            context = None if self.context is None else min(self.context, width)
        return dataclasses.replace(
            self,
            rows=rows,
            width=width,
            context=context,
            k=self.cpu_k or self.k,
        )



MATRIX: tuple[Case, ...] = (
    # --- topk_select over block scores (the seed's kernel), contexts 512 .. 262144 in blocks
    Case("sel_1row_ctx4k", "select", 1, NB, 64, context=512),
    Case("sel_1row_ctx256k", "select", 1, NB, 64, context=NB, cpu_context=1024),
    Case("sel_32rows_ctx16k", "select", 32, NB, 64, context=2048, cpu_rows=4, cpu_context=300),
    Case("sel_640rows_ctx64k", "select", 640, NB, 64, context=8192, cpu_rows=5, cpu_context=700),
    Case("sel_640rows_ctx256k", "select", 640, NB, 64, context=NB, cpu_rows=3),
    Case("sel_ragged", "select", 128, NB, 64, ends="ragged", cpu_rows=6),
    Case("sel_ragged_zeros", "select", 64, NB, 64, ends="some_zero", cpu_rows=6),
    Case("sel_zero_len", "select", 8, NB, 64, ends="zero", cpu_rows=2),
    Case("sel_row_repeat5", "select", 160, NB, 64, ends="ragged", row_repeat=5, cpu_rows=10),
    Case("sel_garbage_tail", "select", 16, NB, 64, context=3000, garbage_tail=True, cpu_context=200),
    Case("sel_k1", "select", 16, 4096, 1, ends="ragged", cpu_width=512),
    Case("sel_k100", "select", 16, 8192, 100, ends="ragged", cpu_width=700),
    Case("sel_k512", "select", 64, NB, 512, context=4096, cpu_context=900),
    Case("sel_k2048", "select", 64, NB, 2048, context=16384, cpu_rows=2, cpu_context=1000, cpu_width=1024),
    Case("sel_k2048_ctx256k", "select", 8, NB, 2048, context=NB, cpu_rows=1, cpu_width=1024),
    Case("sel_k_gt_live", "select", 32, NB, 512, context=300, cpu_context=200),
    Case("sel_k_gt_width", "select", 4, 300, 512, ends="full", cpu_width=300),
    Case("sel_k2048_gt_width", "select", 4, 1000, 2048, ends="full", cpu_width=1000),
    Case("sel_nan_payloads", "select", 32, 8192, 64, ends="ragged", dist="nan_payloads", cpu_width=600),
    Case("sel_nan1pct", "select", 32, NB, 64, context=4096, dist="nan1pct", cpu_context=600),
    Case("sel_all_nan", "select", 8, 4096, 64, ends="ragged", dist="all_nan", cpu_width=300),
    Case("sel_all_neginf", "select", 8, 4096, 64, ends="ragged", dist="all_neginf", cpu_width=300),
    Case("sel_constant", "select", 32, NB, 64, context=8192, dist="equal", cpu_context=800),
    Case("sel_constant_k2048", "select", 8, NB, 2048, context=8192, dist="equal", cpu_rows=2, cpu_context=1000),
    Case("sel_few_values", "select", 32, 16384, 100, ends="ragged", dist="few_values", cpu_width=800),
    Case("sel_signed_zero", "select", 16, 4096, 64, ends="ragged", dist="signed_zero", cpu_width=400),
    Case("sel_denormal", "select", 16, 4096, 64, ends="ragged", dist="denormal", cpu_width=400),
    Case("sel_specials", "select", 16, 8192, 64, ends="ragged", dist="specials", cpu_width=500),
    Case("sel_ramp", "select", 32, NB, 64, context=16384, dist="ramp", cpu_context=900),
    Case("sel_shifted", "select", 32, NB, 64, context=16384, dist="shifted", cpu_context=900),
    # --- large k from SM/6 rows: the bisect select (k = 257, 512, 1000, 2048)
    Case("sel_k257_ragged_many", "select", 160, NB, 257, ends="ragged", cpu_rows=4),
    Case("sel_k512_equal_many", "select", 132, NB, 512, context=NB, dist="equal", cpu_rows=2, cpu_width=1024),
    Case("sel_k1000_nan_payloads_many", "select", 128, NB, 1000, ends="ragged", dist="nan_payloads", cpu_rows=3,
         cpu_width=2048),
    Case("sel_k2048_short_rows_many", "select", 200, NB, 2048, ends="some_zero", cpu_rows=3, cpu_width=2048),
    Case("sel_k2048_row_repeat5_many", "select", 320, NB, 2048, ends="ragged", row_repeat=5, dist="few_values",
         cpu_rows=10, cpu_width=1024),
    # --- token-level top-k on long rows (the long-row select at GPU scale): widths past one register tile, every
    # value law, ragged and zero lengths, k above the live length, row repeats, the candidate path at block size 1
    Case("long_w32769_ragged", "select", 32, 32769, 2048, ends="ragged"),
    Case("long_w65536_shifted_narrow", "select", 64, 65536, 2048, ends="full", dist="shifted_narrow"),
    Case("long_w131072_equal", "select", 8, 131072, 2048, ends="full", dist="equal"),
    Case("long_w163840_three", "select", 16, 163840, 512, ends="ragged", dist="three"),
    Case("long_w262144_ramp", "select", 8, 262144, 2048, ends="full", dist="ramp"),
    Case("long_w262144_nan1pct", "select", 8, 262144, 2048, ends="ragged", dist="nan1pct"),
    Case("long_w131072_band", "select", 16, 131072, 2048, ends="full", dist="band"),
    Case("long_w65536_zeros", "select", 32, 65536, 2048, ends="some_zero"),
    Case("long_w65536_k_gt_live", "select", 16, 65536, 2048, context=1500, cpu_context=300),
    Case("long_w262144_row_repeat2", "select", 16, 262144, 512, ends="ragged", row_repeat=2),
    Case("long_blk_block_size_1", "blocks", 16, 65536, 2048, ends="ragged", starts=True, block_size=1,
         cpu_width=1500, cpu_k=300),
    # --- select_candidate_blocks: logits → block scores → select (the full candidate path)
    Case("blk_1row_ctx512", "blocks", 1, MML, 64, context=512, cpu_width=2048),
    Case("blk_1row_ctx256k", "blocks", 1, MML, 64, context=MML, cpu_width=4096, cpu_context=4096),
    Case("blk_64rows_ctx16k", "blocks", 64, MML, 64, context=16384, cpu_rows=3, cpu_context=1500),
    Case("blk_640rows_ctx4k", "blocks", 640, MML, 64, context=4096, cpu_rows=5, cpu_context=900),
    Case("blk_ragged", "blocks", 128, MML, 64, ends="ragged", cpu_rows=5),
    Case("blk_starts", "blocks", 64, MML, 64, ends="ragged", starts=True, cpu_rows=5),
    Case("blk_starts_row_repeat3", "blocks", 96, 65536, 64, ends="ragged", starts=True, row_repeat=3, cpu_rows=6),
    Case("blk_row_repeat5", "blocks", 640, MML, 64, ends="ragged", row_repeat=5, cpu_rows=10),
    Case("blk_k_gt_nblocks", "blocks", 8, 1024, 512, ends="ragged", cpu_width=1024),
    Case("blk_k2048", "blocks", 16, MML, 2048, context=65536, cpu_rows=2, cpu_width=4096, cpu_context=4000),
    Case("blk_k2048_starts_many", "blocks", 132, MML, 2048, ends="ragged", starts=True, cpu_rows=4, cpu_width=4096),
    Case("blk_k1000_nan_many", "blocks", 128, MML, 1000, context=MML, dist="nan1pct", cpu_rows=2, cpu_width=4096,
         cpu_k=300),
    Case("blk_nan_in_block", "blocks", 32, 65536, 64, ends="ragged", dist="nan1pct", cpu_rows=4),
    Case("blk_ends_past_width", "blocks", 16, 8192, 64, ends="past_width", starts=True, cpu_width=1024),
    Case("blk_zero_len", "blocks", 8, 8192, 64, ends="zero", cpu_rows=2, cpu_width=512),
    Case("blk_garbage_tail", "blocks", 16, MML, 64, context=10000, garbage_tail=True, cpu_context=700),
    Case("blk_constant", "blocks", 16, MML, 64, context=20000, dist="equal", cpu_context=1200),
    Case("blk_block_size_1", "blocks", 8, 16384, 64, ends="ragged", block_size=1, cpu_width=700),
    Case("blk_block_size_64", "blocks", 8, MML, 64, ends="ragged", block_size=64, cpu_width=4096),
)

MATRIX_BY_NAME = {c.name: c for c in MATRIX}


# Compile-relevant settings the fuzz draws from: (op, width, k bucket = next_pow2(k), row_repeat, block_size).  The
# kernels specialise on these, so a menu keeps a GPU fuzz from spending its time compiling.
FUZZ_MENU = (
    ("select", 300, 8, 1, 8), ("select", 4096, 64, 1, 8), ("select", 8192, 128, 5, 8),
    ("select", 32768, 64, 1, 8), ("select", 2048, 512, 2, 8), ("select", 32768, 2048, 1, 8),
    ("blocks", 65536, 64, 1, 8), ("blocks", 16384, 128, 3, 1), ("blocks", 8192, 512, 1, 16),
    ("blocks", 32768, 64, 5, 8), ("select", 32768, 1024, 5, 8),
    # long rows (the long-row select): k buckets 512 and 2048, the candidate path at block size 1
    ("select", 262144, 2048, 1, 8), ("select", 131072, 512, 2, 8), ("select", 40000, 2048, 3, 8),
    ("blocks", 65536, 2048, 1, 1),
)
