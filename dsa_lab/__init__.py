"""dsa_lab: the DeepSeek Sparse Attention indexer's decode path, as Triton and PyTorch kernels.

Pipeline (DESIGN §1): paged FP8 MQA logits → block scores → candidate select → flags.
Public API (DESIGN §3) is re-exported here; see each function's docstring for its contract.
"""
from .keys import ordered_bits, pack_keys, unpack_keys
from .scores import block_scores
from .select import topk_select, select_candidate_blocks
from .flags import candidate_flags
from .producer import decode_row_ends, paged_mqa_logits, sanitize_decode_logits

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
