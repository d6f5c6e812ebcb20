"""dsa_lab: the DeepSeek Sparse Attention indexer's decode path, as Triton and PyTorch kernels.

Pipeline (``docs/design.md``): paged FP8 MQA logits → block scores → candidate select → flags.
The public API is re-exported here; each function's docstring states its contract.

Compiled kernels are cached on disk by Triton, under ``~/.cache/dsa_lab/triton`` unless ``TRITON_CACHE_DIR`` is set
(:mod:`dsa_lab._env`), where ``dsa-lab warmup`` compiles every variant ahead of use.
"""
from . import _env

_env.use_cache_dir()
_env.log_compiles()  # only where DSA_LAB_COMPILE_LOG names a file

from .flags import candidate_flags
from .keys import ordered_bits, pack_keys, unpack_keys
from .producer import decode_row_ends, paged_mqa_logits, sanitize_decode_logits
from .scores import block_scores
from .select import select_candidate_blocks, topk_select

__version__ = "0.1.0"

__all__ = [
    "ordered_bits",
    "pack_keys",
    "unpack_keys",
    "topk_select",
    "block_scores",
    "select_candidate_blocks",
    "candidate_flags",
    "decode_row_ends",
    "paged_mqa_logits",
    "sanitize_decode_logits",
]
