"""The packing the key-order proof compares with :func:`dsa_lab.pack_keys`: the kernels' own ``tl_pack_key`` over a
flat array.  Import it only when it is about to run: ``TRITON_INTERPRET`` is read when a kernel is decorated."""
import triton
import triton.language as tl

from ..kernels.common import tl_pack_key


@triton.jit
def pack_kernel(x_ptr, i_ptr, o_ptr, n, BLOCK: tl.constexpr):
    """``o[j] = tl_pack_key(x[j], i[j])`` for ``j < n``: float32 scores, int64 indices, int64 keys."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    xv = tl.load(x_ptr + offs, mask=m, other=0.0)
    iv = tl.load(i_ptr + offs, mask=m, other=0)
    tl.store(o_ptr + offs, tl_pack_key(xv, iv), mask=m)
