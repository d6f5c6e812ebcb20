"""Are two source trees' compiled kernels the same?  (No GPU: compiled for sm_90 on the CPU.)

    pip install --target /tmp/t36 --no-deps triton==3.6.0      # the device's triton
    PYTHONPATH=/tmp/t36 python3 scripts/ptx_identity.py OLD_TREE NEW_TREE [--producer-only] [--only REGEX]

Compiles, from both trees, every variant ``dsa-lab warmup`` lists (both trees must have ``dsa_lab.warmup``) and the
producer's logits kernel at its default configurations (next_n 1, 3, 5; trees before ``dsa_lab/kernels`` have it in
``dsa_lab.producer_triton``), and compares their SASS with addresses and encodings dropped: an edit that leaves the
instructions alone (a deleted option that was off, a docstring) then compares equal, so the records taken with the
other tree still describe the kernels.  ``--only``: the warmup variants whose key matches REGEX.  Prints one line per
kernel; exit status 1 when any differs.
"""
import argparse
import hashlib
import importlib
import re
import sys

PRODUCER_CASES = {"producer_n1": 1, "producer_n3": 3, "producer_n5": 5}


def load_tree(root, module):
    """``module`` of the tree at ``root`` (every ``dsa_lab`` module of another tree dropped first)."""
    for name in [m for m in sys.modules if m == "dsa_lab" or m.startswith("dsa_lab.")]:
        del sys.modules[name]
    sys.path.insert(0, root)
    try:
        return importlib.import_module(module)
    finally:
        sys.path.pop(0)


def sass(cubin: bytes) -> str:
    """The sm_90 instructions of a cubin (Triton's bundled ``cuobjdump -sass``), addresses and encodings dropped."""
    import os
    import subprocess
    import tempfile

    import triton

    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        out = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, check=True).stdout
    return "\n".join(re.sub(r"/\*[0-9a-f]+\*/", "", ln).split(";")[0].strip() for ln in out.splitlines()
                     if re.search(r"/\*[0-9a-f]{4,}\*/", ln))


def producer_sass(root, next_n):
    """The producer's logits kernel of the tree at ``root``, fp8 path, H = 64, D = 128, block_kv 64, (B,) bounds."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    try:
        pt = load_tree(root, "dsa_lab.kernels.producer")
    except ImportError:
        pt = load_tree(root, "dsa_lab.producer_triton")
    cfg = pt.default_config(64, next_n, 64, True)
    kern = pt._paged_mqa_logits_kernel
    cx = dict(H=64, D=128, NEXT_N=next_n, NEXT_N_PAD=1 << (next_n - 1).bit_length(), BLOCK_KV=64,
              BLOCK_T=cfg["BLOCK_T"], CTX_2D=False, FP8_DOT=True, HOIST_Q=True, NUM_STAGES=cfg["NUM_STAGES"])
    if "Q_IS_A" in kern.arg_names:
        cx["Q_IS_A"] = cfg.get("Q_IS_A", False)
    cx.update({c: v for c, v in (("SANITIZE", False), ("SBS", 0), ("ZF", 0)) if c in kern.arg_names})  # the plain form
    types = dict(q_ptr="*fp8e4nv", k_ptr="*fp8e4nv", s_ptr="*fp32", w_ptr="*fp32", ctx_ptr="*i32", bt_ptr="*i32",
                 out_ptr="*fp32", sco_ptr="*fp32", flags_ptr="*u8")
    sig = {a: types.get(a, "constexpr" if a in cx else "i32") for a in kern.arg_names}
    attrs = {(kern.arg_names.index(a),): [["tt.divisibility", 16]] for a in types}
    k = triton.compile(ASTSource(kern, sig, constexprs=cx, attrs=attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": cfg["num_warps"]})
    return sass(k.asm["cubin"])


def warm_sass(root, only=None):
    """``{variant key: SASS}`` of every variant the tree's warmup lists (decode grid and buckets, the fused arm)."""
    wu = load_tree(root, "dsa_lab.warmup")
    compile_for = getattr(wu, "compile_for", None)  # in warmup before compile-check existed
    if compile_for is None:
        cc = load_tree(root, "dsa_lab.compile_check")
        wu, compile_for = cc.warmup, cc.compile_for
    out = {}
    for key, (launch, _) in wu.variants(wu.warm_calls(fused=True), wu.H200).items():
        if only and not re.search(only, key):
            continue
        out[key] = sass(compile_for(launch, "sm_90").asm["cubin"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--producer-only", action="store_true")
    ap.add_argument("--only", default=None, help="compare only the warmup variants whose key matches this regex")
    a = ap.parse_args()
    import triton

    print(f"triton {triton.__version__}, sm_90")
    res = {}
    for label, root in (("old", a.old), ("new", a.new)):
        for case, nn in PRODUCER_CASES.items():
            res[(label, case)] = hashlib.sha1(producer_sass(root, nn).encode()).hexdigest()[:12]
        if not a.producer_only:
            for key, text in warm_sass(root, a.only).items():
                res[(label, key)] = hashlib.sha1(text.encode()).hexdigest()[:12]
    same = True
    for case in sorted({c for _, c in res}):
        x, y = res.get(("old", case), "-"), res.get(("new", case), "-")
        same &= x == y
        print(f"{'same' if x == y else 'DIFFERENT':<9} {x} {y}  {case}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
