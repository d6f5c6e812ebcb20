"""The upstream store kernel (the shape of upstream's ``_store_candidates_kernel``), the sweep's torch arms' second
launch.  Import it only when it is about to run: ``TRITON_INTERPRET`` is read when a kernel is decorated."""
import triton
import triton.language as tl


@triton.jit
def store_candidates(v_ptr, i_ptr, out_ptr, kk, k, KP: tl.constexpr):
    """``torch.topk``'s (values, int64 indices) ``[rows, kk]`` -> int32 ids ``[rows, k]``: ``-1`` where the value is
    ``-inf`` and in the slots past ``kk``.  One program per row; ``KP`` >= k, a power of two."""
    row = tl.program_id(0).to(tl.int64)
    j = tl.arange(0, KP)
    m = j < kk
    v = tl.load(v_ptr + row * kk + j, mask=m, other=float("-inf"))
    i = tl.load(i_ptr + row * kk + j, mask=m, other=-1)
    ids = tl.where(v != float("-inf"), i, -1).to(tl.int32)
    tl.store(out_ptr + row * k + j, ids, mask=j < k)
