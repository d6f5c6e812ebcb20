"""Which tile loops Triton's automatic warp specialization accepts on sm_90, compiled on the CPU (no GPU).

    PYTHONPATH=<a triton 3.6 install>:. python3 scripts/ws_probe.py

Evidence for the producer's schedule (``notes/producer.md``), not product: each loop below is compiled for
``GPUTarget("cuda", 90, 32)`` with ``tl.range(..., warp_specialize=True)``, and the TTGIR is searched for the
``ttg.warp_specialize`` region (a producer and consumer partition) and for the wgmma waits' ``pendings``.

* the canonical matmul: TMA-fed ``acc += tl.dot(a, b)``, one store after the loop (4 and 8 warps);
* a dot whose result is used in the same iteration (ReLU, a row sum, a store): TMA-fed, and pointer-fed;
* the producer's own tile loop (``dsa_lab.kernels.producer``, next_n = 5, the warm list's variant), the loop
  annotated the same way.
"""
import dataclasses
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

TARGET = GPUTarget("cuda", 90, 32)


@triton.jit
def _matmul(a_desc, b_desc, o_ptr, n_tiles, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    acc = tl.zeros([BM, BN], tl.float32)
    for t in tl.range(0, n_tiles, num_stages=3, warp_specialize=True):
        acc += tl.dot(a_desc.load([0, t * BK]), b_desc.load([t * BK, 0]))
    m = tl.arange(0, BM)
    nn = tl.arange(0, BN)
    tl.store(o_ptr + m[:, None] * BN + nn[None, :], acc)


@triton.jit
def _epilogue(a_src, b_ptr, o_ptr, n_tiles, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, TMA: tl.constexpr):
    m = tl.arange(0, BM)
    kk = tl.arange(0, BK)
    b = tl.load(b_ptr + kk[:, None] * BN + tl.arange(0, BN)[None, :])
    for t in tl.range(0, n_tiles, num_stages=3, warp_specialize=True):
        if TMA:
            a = a_src.load([t * BM, 0])
        else:
            a = tl.load(a_src + (t * BM + m)[:, None] * BK + kk[None, :])
        s = tl.dot(a, b)
        tl.store(o_ptr + t * BM + m, tl.sum(tl.maximum(s, 0.0), 1))


def report(name, compile_fn):
    try:
        ttgir = compile_fn().asm["ttgir"]
    except Exception as e:  # the pass pipeline's failure is the finding
        lines = [ln for ln in str(e).splitlines() if ln.strip()]
        return print(f"{name}: FAILED ({lines[-1][:200] if lines else type(e).__name__})")
    pend = sorted(set(re.findall(r"pendings = (\d+)", ttgir)))
    print(f"{name}: compiled; ttg.warp_specialize regions: {ttgir.count('ttg.warp_specialize')}; "
          f"wgmma wait pendings: {pend}")


def main():
    print(f"triton {triton.__version__}, target {TARGET}")
    cx = {"BM": 128, "BN": 64, "BK": 128}
    mm_sig = {"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": "tensordesc<fp16[64, 128]>", "o_ptr": "*fp32",
              "n_tiles": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    for nw in (4, 8):
        report(f"canonical matmul, {nw} warps", lambda: triton.compile(
            ASTSource(_matmul, mm_sig, constexprs={"BM": 128, "BN": 128, "BK": 64}), target=TARGET,
            options={"num_warps": nw}))
    tail = {"b_ptr": "*fp8e4nv", "o_ptr": "*fp32", "n_tiles": "i32", "BM": "constexpr", "BN": "constexpr",
            "BK": "constexpr", "TMA": "constexpr"}
    for tma, a_sig in ((True, "tensordesc<fp8e4nv[128, 128]>"), (False, "*fp8e4nv")):
        report(f"dot + in-loop epilogue, {'TMA' if tma else 'pointer'} loads", lambda: triton.compile(
            ASTSource(_epilogue, {"a_src": a_sig, **tail}, constexprs=dict(cx, TMA=tma)), target=TARGET,
            options={"num_warps": 4}))

    from dsa_lab import compile_check, warmup
    from dsa_lab.kernels import producer

    src = open(producer.__file__).read()
    loop = "for tile in tl.range(sp, n_tiles, splits, num_stages=NUM_STAGES):"
    assert loop in src, "the producer's tile loop changed: update the probe"
    code = src.replace(loop, loop[:-2] + ", warp_specialize=True):")
    code = re.sub(r"^from \.(\w*) import", lambda m: f"from dsa_lab.kernels{'.' + m.group(1) if m.group(1) else ''} import",
                  code, flags=re.M).replace("from .. import", "from dsa_lab import")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".ws_probe_producer.py")
    with open(path, "w") as f:  # the decorator reads the source file, so the copy lives on disk while compiled
        f.write(code)
    try:
        import importlib.util

        spec = importlib.util.spec_from_file_location("ws_probe_producer", path)
        ns = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ns)
        items = warmup.variants(warmup.warm_calls(), compile_check.TARGETS["sm_90"].facts).items()
        key, (launch, _) = next((k, v) for k, v in items if "_paged_mqa_logits_kernel" in k and "NEXT_N=5" in k)
        report("producer tile loop as shipped", lambda: compile_check.compile_for(launch, "sm_90"))
        report("producer tile loop, warp_specialize=True", lambda: compile_check.compile_for(
            dataclasses.replace(launch, kernel=ns._paged_mqa_logits_kernel), "sm_90"))
    finally:
        os.remove(path)


if __name__ == "__main__":
    main()
