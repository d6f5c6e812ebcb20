"""Are the hier kernel's default compiled kernels the same as those of another source tree?  (No GPU needed.)

    git worktree add /tmp/old <commit>
    pip install --target /tmp/t36 --no-deps triton==3.6.0      # the device's triton
    PYTHONPATH=/tmp/t36 python3 scripts/ptx_identity.py /tmp/old .

Compiles :func:`dsa_lab.select_triton._hier_kernel` of both trees for sm_90 (``GPUTarget("cuda", 90, 32)``) at five
default plans -- the select stage at 1 and 640 rows, the unfused candidate-block path at 32 rows (flags zeroed by the
scores launch), the fused kernel at 1 and 640 rows -- :func:`dsa_lab.scores_triton._block_scores_kernel` at five
(``SCORES_CASES``; its SASS, see :func:`scores_sass`) and ``_block_scores_sg_kernel`` at two (``SG_CASES``), and compares the PTX with source locations and debug sections
stripped (``.loc`` / ``.file`` lines, labels, ``.b8`` / ``.b32`` data): a kernel source edit that leaves the compiled
instructions alone (a new constexpr option that is off, a docstring) then compares equal, so the data recorded with
the other tree still stands for these kernels.  Exit status 1 when any plan differs.  A tree whose plan has options
the other lacks gets them from its own defaults.
"""
import hashlib
import importlib
import re
import sys

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

CASES = {  # name: (fused, rows, LEN_MODE, FLAGS, FZW)
    "select_1": (False, 1, 1, False, 0),
    "select_640": (False, 640, 1, False, 0),
    "candidates_32": (False, 32, 2, True, 2),
    "fused_1": (True, 1, 2, True, 1),
    "fused_640": (True, 640, 2, False, 0),
}
# plan keys -> kernel constexprs of options added after the recorded kernels (absent in older trees)
NEW_OPTIONS = {"skeys": "SKEYS", "sdir": "SDIR", "afirst": "AFIRST", "l1p": "L1P", "fcap": "FCAP", "fcapm": "FCAPM",
               "fq": "FQ", "apf": "APF"}
TYPES = dict(src_ptr="*fp32", src_stride="i64", len_ptr="*i32", start_ptr="*i32", out_ptr="*i32", ws_ptr="*i64",
             cnt_ptr="*i32", flags_ptr="*u8", n="i32", width="i32", k="i32", P="i32")


def load_tree(root, module="dsa_lab.select_triton"):
    """``module`` of the tree at ``root``, every ``dsa_lab`` module of another tree dropped first."""
    for name in [m for m in sys.modules if m == "dsa_lab" or m.startswith("dsa_lab.")]:
        del sys.modules[name]
    sys.path.insert(0, root)
    try:
        return importlib.import_module(module)
    finally:
        sys.path.pop(0)


def compile_hier(st, case, **over):
    """``_hier_kernel`` of module ``st`` compiled for sm_90 at plan ``case`` (``over``: plan overrides, e.g. a dev
    option)."""
    fused, rows, len_mode, flags, fzw = CASES[case]
    bs = 8 if fused else 1
    cfg = st.plan(rows, 32768, 64, {"sm_count": 132, "name": "NVIDIA H200"}, fused=fused, block_size=8, **over)
    kp = cfg["KP"]
    if hasattr(st, "_hier_wrow"):  # the tree's own workspace layout
        wrow = st._hier_wrow(cfg, fused)
    else:  # trees before 813a96c: the layout then
        wrow = cfg["NSG"] + kp + kp * cfg["G2"] * cfg["SC2"] + (cfg["NSG"] * cfg["G2"] if fused else 0)
    cx = dict(RR=1, KP=kp, G1=cfg["G1"], G2=cfg["G2"], NSG=cfg["NSG"], NT=cfg["NT"], SB=cfg["SB"], KC=cfg["KC"],
              DT=cfg["DT"], MIN_SG=cfg["MIN_SG"], WROW=wrow, LEN_MODE=len_mode, HAS_START=False, FUSED=fused,
              BS=bs, BSP=bs, RSEL=cfg["rsel"], SHORTC=cfg["short_chain"], SC2=cfg["SC2"], KC2=cfg["KC2"],
              FASTA=cfg["fast_a"], DIRECT1D=cfg["direct1d"], SC3=cfg["SC3"], G1S=cfg["G1S"], G2S=cfg["G2S"],
              KC3=cfg["KC3"], FZW=fzw, MULTI=cfg["P"] > 1, FLAGS=flags, PHASE=0)
    cx.update({c: cfg[key] for key, c in NEW_OPTIONS.items() if key in cfg})
    names = st._hier_kernel.arg_names
    sig = {a: TYPES.get(a, "constexpr") for a in names}
    # the launch's specialization: 16-byte aligned pointers and a stride divisible by 16 (the sweep's tensors); without
    # it the compile differs from what runs (the 640-row select: 108 registers here against 80 with it)
    hints = {(names.index(a),): [["tt.divisibility", 16]] for a, t in TYPES.items()
             if a in names and (t.startswith("*") or a == "src_stride")}
    opts = {"num_warps": cfg["num_warps"]}
    if cfg.get("maxnreg") is not None:  # a launch option (dev), not a constexpr
        opts["maxnreg"] = cfg["maxnreg"]
    return triton.compile(ASTSource(st._hier_kernel, sig, constexprs=cx, attrs=hints), target=GPUTarget("cuda", 90, 32),
                          options=opts)


def stripped_ptx(st, case):
    k = compile_hier(st, case)
    keep = [re.sub(r"\$L__\w+", "L", ln) for ln in k.asm["ptx"].splitlines()
            if not re.match(r"\s*(\.loc|\.file|//|\$L__|\.section|\.b8|\.b32|\.debug)", ln)]
    return "\n".join(keep)


# the block-scores kernel of the unfused composition (bounded, dead slots unwritten, flags zeroed; with starts) and
# of the public block_scores (every slot written; the padded "before" kernel): (BS, BJ, HAS_START, PADDED,
# FILL_DEAD, LOOP, ZF)
SCORES_CASES = {
    "scores_unfused": (8, 512, False, False, False, True, 2),
    "scores_starts": (8, 512, True, False, False, True, 0),
    "scores_fill": (8, 512, False, False, True, False, 0),
    "scores_padded": (8, 512, False, True, True, False, 0),
    "scores_bs3": (3, 1024, True, False, False, True, 1),
}
SCORES_TYPES = dict(x_ptr="*fp32", x_stride="i64", out_ptr="*fp32", end_ptr="*i32", start_ptr="*i32",
                    flags_ptr="*u8", width="i32", nblocks="i32", Q="i32", sg_ptr="*i64", sg_stride="i64", sg_min="i32")


def cuobjdump(cubin: bytes, *args: str) -> str:
    """``cuobjdump ARGS`` (Triton's NVIDIA backend's) run on a cubin; its stdout."""
    import os
    import subprocess
    import tempfile

    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([tool, *args, f.name], capture_output=True, text=True, check=True).stdout


def _sass(cubin: bytes) -> str:
    """The sm_90 instructions of a cubin (``cuobjdump -sass``), addresses and encodings dropped."""
    out = cuobjdump(cubin, "-sass")
    return "\n".join(re.sub(r"/\*[0-9a-f]+\*/", "", ln).split(";")[0].strip() for ln in out.splitlines()
                     if re.search(r"/\*[0-9a-f]{4}\*/", ln))


def scores_sass(root, case):
    """The SASS of the default ``_block_scores_kernel`` of the tree at ``root`` (its own signature).  SASS, not
    PTX: since the fourteenth session the kernel's body is a jit helper shared with the stage-A variant, and the
    inlined helper renumbers PTX registers and labels while ptxas emits the same instructions."""
    sc = load_tree(root, "dsa_lab.scores_triton")
    bs, bj, hs, pad, fd, loop, zf = SCORES_CASES[case]
    cx = dict(RR=1, BS=bs, BSP=1 << (bs - 1).bit_length(), BJ=bj, HAS_START=hs, PADDED=pad, FILL_DEAD=fd,
              WHOLE=False, LOOP=loop, ZF=zf)
    if "SG" in sc._block_scores_kernel.arg_names:  # a tree whose one kernel took the stage-A option
        cx["SG"] = 0
    sig = {a: SCORES_TYPES.get(a, "constexpr") for a in sc._block_scores_kernel.arg_names}
    k = triton.compile(ASTSource(sc._block_scores_kernel, sig, constexprs=cx), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4})
    return _sass(k.asm["cubin"])


# the scores launch of the unfused full stage at up to a quarter as many rows as SMs (``scores_a``: the stage-A keys
# of 64-block super groups; the kernel since the fourteenth session): (BS, BJ, HAS_START, LOOP, ZF, SG)
SG_CASES = {"scores_a": (8, 512, False, True, 2, 64), "scores_a_starts": (8, 512, True, True, 1, 64)}


def scores_sg_sass(root, case):
    """The SASS of ``_block_scores_sg_kernel`` of the tree at ``root`` (its own signature, new constexprs at their
    defaults)."""
    sc = load_tree(root, "dsa_lab.scores_triton")
    bs, bj, hs, loop, zf, sg = SG_CASES[case]
    cx = dict(RR=1, BS=bs, BSP=1 << (bs - 1).bit_length(), BJ=bj, HAS_START=hs, WHOLE=False, LOOP=loop, ZF=zf, SG=sg)
    sig = {a: SCORES_TYPES.get(a, "constexpr") for a in sc._block_scores_sg_kernel.arg_names}
    k = triton.compile(ASTSource(sc._block_scores_sg_kernel, sig, constexprs=cx), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 4})
    return _sass(k.asm["cubin"])


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    old_root, new_root = sys.argv[1], sys.argv[2]
    print(f"triton {triton.__version__}, sm_90")
    hashes = {}
    for label, root in (("old", old_root), ("new", new_root)):
        st = load_tree(root)
        for case in CASES:
            hashes[(label, case)] = hashlib.sha1(stripped_ptx(st, case).encode()).hexdigest()[:12]
        for case in SCORES_CASES:
            hashes[(label, case)] = hashlib.sha1(scores_sass(root, case).encode()).hexdigest()[:12]
        for case in SG_CASES:
            hashes[(label, case)] = hashlib.sha1(scores_sg_sass(root, case).encode()).hexdigest()[:12]
    same = True
    for case in (*CASES, *SCORES_CASES, *SG_CASES):
        a, b = hashes[("old", case)], hashes[("new", case)]
        same &= a == b
        print(f"{case:<14} {old_root}: {a}  {new_root}: {b}  {'same' if a == b else 'DIFFERENT'}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
