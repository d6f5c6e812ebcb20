"""`dsa-lab compile-check`: the resource gate's rules, and the gfx950 gate itself (CI runs it: no GPU needed)."""
import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dsa_lab import compile_check as cc
from dsa_lab import warmup


def test_sm90_resident_warps():
    # 32 registers, no shared memory, 4 warps: 16 programs x 4 warps = 64 warps (the SM's limit)
    assert cc.sm90_resident_warps(32, 0, 4) == 64
    # 80 registers -> 2560 per warp -> 25 warps by registers -> 3 programs of 8 warps
    assert cc.sm90_resident_warps(80, 8192, 8) == 24
    # shared memory: 100 KB a program -> 2 programs
    assert cc.sm90_resident_warps(32, 100 * 1024, 4) == 8
    # 255 registers at 8 warps: 8192 registers a warp -> 8 warps -> one program
    assert cc.sm90_resident_warps(255, 0, 8) == 8


@pytest.mark.parametrize("target", sorted(cc.TARGETS))
def test_gate_fails_on_spills_scratch_and_shared(target):
    ok = {"spills": 0, "sgpr_spills": 12, "scratch": 0, "shared": 1024, "waves": 8}
    assert cc.check(ok, target) == []  # SGPRs parked in VGPR lanes touch no memory
    lim = cc.TARGETS[target].shared_limit
    for bad, word in (({"spills": 3}, "spilled"), ({"scratch": 16}, "B of"), ({"shared": lim + 1}, "shared"),
                      ({"waves": 0}, "fits"), ({"stack": 64}, "stack")):
        problems = cc.check({**ok, **bad}, target)
        assert len(problems) == 1 and word in problems[0], (bad, problems)


def test_amd_targets_record_the_rocm_branch():
    """Recorded with an AMD device's facts: no programmatic dependent launch (CUDA only), grids from its CUs."""
    for target in ("gfx950", "gfx942"):
        vs = warmup.variants([warmup.Call("full", 8, 262144, 64)], cc.TARGETS[target].facts)
        assert vs and all("GDC=1" not in k and "launch_pdl" not in k for k in vs), sorted(vs)
    vs = warmup.variants([warmup.Call("full", 8, 262144, 64)], cc.TARGETS["sm_90"].facts)
    assert any("launch_pdl=1" in k for k in vs), sorted(vs)


def _tag(launch):
    name, _, cx, _ = warmup.parts(launch)
    return name, cx.get("KP"), cx.get("NEXT_N")


def test_ci_subset_is_one_variant_per_kernel_k_bucket_and_next_n():
    items = list(warmup.variants(warmup.warm_calls(max_rows=4), cc.TARGETS["gfx950"].facts).items())
    tags = [_tag(launch) for _, (launch, _) in cc.subset_ci(items)]
    assert len(tags) == len(set(tags)) and set(tags) == {_tag(launch) for _, (launch, _) in items}
    assert {kp for name, kp, _ in tags if name == "_hier_kernel"} == {64, 128, 256, 512}
    assert {nn for name, _, nn in tags if name == "_paged_mqa_logits_kernel"} == {1, 2, 3, 4, 5}


def test_producer_tiles_per_target():
    """The producer's launch per architecture: 128-token triple-buffered tiles on sm_90, 64-token single-stage tiles
    on gfx950 / gfx942 (the AMD register budget), the fp8 dot on all three."""
    for target, bt, stages in (("sm_90", 128, 3), ("gfx950", 64, 1), ("gfx942", 64, 1)):
        vs = warmup.variants([warmup.Call("producer", 8, 4096, 5)], cc.TARGETS[target].facts)
        (launch, _), = vs.values()
        cx = warmup.parts(launch)[2]
        assert (cx["BLOCK_T"], cx["NUM_STAGES"], cx["FP8_DOT"], cx["NEXT_N"]) == (bt, stages, True, 5), (target, cx)


def compile_check(tmp_path, target, *args):
    out = tmp_path / f"{target}.csv"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-m", "dsa_lab.cli", "compile-check", "--target", target, *args,
                        "--csv", str(out)], env=env, capture_output=True, text=True, timeout=1800)
    print(p.stdout[-4000:], p.stderr[-4000:])
    rows = list(csv.DictReader(out.open())) if out.exists() else []
    bad = [(r["variant"], r["problem"]) for r in rows if r["ok"] != "1"]
    assert p.returncode == 0 and not bad, bad or p.stderr[-2000:]
    return rows


def test_gfx942_producer_compiles_without_spills(tmp_path):
    """MI300X: the producer's default launch at next_n 1-5, e4m3fn operands through Triton's conversion to f16 MFMA
    (gfx942's native fp8 is fnuz), with no spill, no scratch and LDS within 64 KB."""
    rows = compile_check(tmp_path, "gfx942", "--subset", "ci", "--only", "_paged_mqa_logits_kernel")
    assert sorted(int(r["variant"].split("NEXT_N=")[1].split()[0]) for r in rows) == [1, 2, 3, 4, 5]
    assert all(r["scratch"] == "0" and r["spills"] == "0" and int(r["shared"]) <= 65536 for r in rows), rows


@pytest.mark.slow
def test_gfx950_gate(tmp_path):
    """The CI gate: every kernel, k bucket and producer next_n (1-5) of the default path compiled for gfx950 (MI355X)
    on this CPU, with no vector-register spill, no scratch and LDS within 160 KB.  Compiled, not run."""
    rows = compile_check(tmp_path, "gfx950", "--subset", "ci")
    kernels = {r["kernel"] for r in rows}
    assert kernels >= {"_hier_kernel", "_block_scores_kernel", "_radix_kernel", "_radix_par_kernel", "_flags_kernel",
                       "_mask_kernel", "_paged_mqa_logits_kernel"}, kernels
    assert all(int(r["waves"]) >= 1 and int(r["shared"]) <= 163840 for r in rows)
    meta = json.loads((tmp_path / "gfx950.meta.json").read_text())
    assert meta["target"] == "gfx950" and meta["variants"] == len(rows) and meta["over_limit"] == 0


def test_compiled_as_a_launch_specializes_it():
    """Ints reach the compiler as a launch passes them (a multiple of 16 known divisible by 16, not do_not_specialize):
    the producer's cache stride then lets its key gather become asynchronous copies, as on the GPU, and a compiled
    variant's registers are the ones the GPU runs."""
    code = ("from dsa_lab import warmup, compile_check as cc\n"
            "k = cc.compile_for(warmup.record(warmup.Call('producer', 4, 8192, 1))[0], 'sm_90')\n"
            "print(k.asm['ttgir'])\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # compile, not interpret
    ir = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600).stdout
    assert "warp_group_dot" in ir
    assert not re.search(r"= tt\.load [^\n]*tensor<128x128x!tt\.ptr<f8E4M3FN>", ir), "key tile loaded synchronously"
    assert re.search(r"async_copy_global_to_local [^\n]*tensor<128x128x!tt\.ptr<f8E4M3FN>", ir)


# ----------------------------------------------------------------------------- --compare: names aside

SASS = """\t\tFunction : {name}
        /*0000*/                   LDC R1, c[0x0][0x28] ;                         /* 0x00000a00ff017b82 */
                                                                                  /* 0x000ff00000000800 */
        /*0010*/              @!P0 BRA `(.L_x_{l}) ;                               /* 0x0000000000848947 */
        /*0020*/                   {op} R4, R2, R3 ;                             /* 0x0000000800057213 */
.L_x_{l}:
        /*0030*/                   EXIT ;                                         /* 0x000000000000794d */
"""
PTX = """.visible .entry {name}(
\t.param .u64 .ptr .global .align 1 {name}_param_0
)
{{
\t.loc\t1 {line} 0                          // {file}:{line}:0
$L__func_begin0:
\tld.param.b64 \t%rd1, [{name}_param_0];
$L__tmp{l}:
\t@%p1 bra \t$L__BB0_{l};
\t{op} \t%r3, %r1, %r2;
$L__BB0_{l}:
\tret;
}}
\t.file\t1 "/some/{file}"
\t.section\t.debug_str
\t{{
\t.b8 {line}
\t}}
"""
AMDGCN = """\t.globl\t{name}                   ; -- Begin function {name}
{name}:                          ; @{name}
.Lfunc_begin0:
\t.file\t1 "/some" "{file}"
\t.loc\t1 {line} 0 prologue_end             ; {file}:{line}:0
\ts_load_dwordx2 s[2:3], s[0:1], 0x0
\ts_cbranch_scc1 .LBB0_{l}
.Ltmp{l}:
\t{op} v1, v2, v3
.LBB0_{l}:
\ts_endpgm
\t.amdhsa_kernel {name}
\t\t.amdhsa_next_free_vgpr 16
\t.end_amdhsa_kernel
\t.set .L{name}.num_vgpr, 16
\t.section\t.debug_str,"MS",@progbits,1
\t.asciz\t"{name}"                 ; string offset=55 ; {name}
\t.amdgpu_metadata
    .name:           {name}
\t.end_amdgpu_metadata
"""


@pytest.mark.parametrize("fmt, text, ops", [("sass", SASS, ("IADD3", "IMAD")), ("ptx", PTX, ("add.s32", "mul.lo.s32")),
                                            ("amdgcn", AMDGCN, ("v_add_u32_e32", "v_mul_lo_u32"))])
def test_instructions_equal_with_names_aside_and_differ_on_an_instruction(fmt, text, ops):
    from dsa_lab.compile_compare import instructions

    a = instructions(text.format(name="_hier_kernel", l=3, line=120, file="hier.py", op=ops[0]), fmt, "_hier_kernel")
    b = instructions(text.format(name="_select_kernel_KP64", l=7, line=15, file="select.py", op=ops[0]), fmt,
                     "_select_kernel_KP64")
    c = instructions(text.format(name="_hier_kernel", l=3, line=120, file="hier.py", op=ops[1]), fmt, "_hier_kernel")
    assert a and a == b, (a, b)  # kernel symbol, labels, line and debug information differ: the same stream
    assert a != c  # one instruction differs
    assert not any("hier" in ln or "select" in ln for ln in a + b), a


_KERNELS = '''
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2.0, mask=i < n)


# another name, other argument and constexpr names, other source lines: the same instructions
@triton.jit
def renamed_twice_kernel(src, dst, count,
                         TILE: tl.constexpr):
    offs = tl.program_id(0) * TILE + tl.arange(0, TILE)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < count) * 2.0, mask=offs < count)


@triton.jit
def _scale3_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n) + 3.0, mask=i < n)
'''

_COMPILE = '''
import json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import kernels_under_test as m
from dsa_lab import compile_check as cc
out = {}
for target in ("sm_90", "gfx950"):
    for fn, c in ((m._scale_kernel, "BLOCK"), (m.renamed_twice_kernel, "TILE"), (m._scale3_kernel, "BLOCK")):
        args = fn.arg_names
        sig = {args[0]: "*fp32", args[1]: "*fp32", args[2]: "i32", args[3]: "constexpr"}
        k = triton.compile(ASTSource(fn, sig, constexprs={c: 256}), target=GPUTarget(*cc.TARGETS[target].backend))
        asm = {f: (v.hex() if isinstance(v, bytes) else v) for f, v in k.asm.items() if f in ("ptx", "cubin", "amdgcn")}
        out[f"{target}:{fn.__name__}"] = {"name": k.metadata.name, "asm": asm}
print(json.dumps(out))
'''


def test_renamed_kernel_compiles_to_the_same_instructions(tmp_path):
    """Real compiles for sm_90 and gfx950: a kernel renamed (its arguments, constexprs and lines too) gives the same
    normalized SASS, PTX and AMDGCN; one changed operation does not."""
    from dsa_lab import compile_compare as cmp

    (tmp_path / "kernels_under_test.py").write_text(_KERNELS)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), os.getcwd(), env.get("PYTHONPATH", "")])
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    p = subprocess.run([sys.executable, "-c", _COMPILE], env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    fmts = [("sm_90", "ptx"), ("gfx950", "amdgcn")] + ([("sm_90", "sass")] if cmp._cuobjdump() else [])
    for target, fmt in fmts:
        streams = []
        for fn in ("_scale_kernel", "renamed_twice_kernel", "_scale3_kernel"):
            e = got[f"{target}:{fn}"]
            text = cmp.sass(bytes.fromhex(e["asm"]["cubin"])) if fmt == "sass" else e["asm"][fmt]
            streams.append(cmp.instructions(text, fmt, e["name"]))
        assert streams[0] == streams[1], (fmt, cmp.first_differences(streams[0], streams[1])[1])
        assert streams[0] != streams[2], fmt


def test_compare_head_with_itself_is_identical():
    """``compile-check --compare HEAD``: this tree against its own last commit, a few variants per target, each
    tree compiled by its own code in its own process: every variant identical, exit status 0."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-m", "dsa_lab.cli", "compile-check", "--compare", "HEAD",
                        "--only", "_flags_kernel|_radix_kernel", "--limit", "2"], env=env, cwd=root,
                       capture_output=True, text=True, timeout=1800)
    lines = p.stdout.strip().splitlines()
    assert p.returncode == 0, (p.stdout[-3000:], p.stderr[-3000:])
    assert [ln.split(" ")[0] for ln in lines] == sorted(cc.TARGETS), lines
    assert all("2 variants compared, 2 identical, 0 differing" in ln for ln in lines), lines


def test_compare_recompiles_a_differing_variant(monkeypatch, tmp_path):
    """A variant whose streams differ is compiled again from this tree: the report says whether its own two compiles
    agree (the difference is the code's) or not (the compiler's output is not deterministic)."""
    from dsa_lab import compile_compare as cmp

    streams = {"ref": ["a", "b"], "this": ["a", "c"], "again": None}
    entry = {"key": "k[X=1]", "name": "k", "files": {"amdgcn": "0000.amdgcn"}}

    def dump_tree(root, target, out, opts):
        if Path(out).relative_to(tmp_path).parts[0] == "again":
            assert opts["only"] == "^" + re.escape(entry["key"]) + "$"
        return [entry]

    def stream(e, folder, fmt):
        return streams[Path(folder).relative_to(tmp_path).parts[0]]  # ref / this / again

    monkeypatch.setattr(cmp, "dump_tree", dump_tree)
    monkeypatch.setattr(cmp, "_stream", stream)
    for again, says in ((["a", "c"], "the same stream"), (["a", "d"], "not deterministic")):
        streams["again"] = again
        same, lines = cmp.compare_target("gfx950", tmp_path / "ref_tree", tmp_path, {"jobs": 1})
        assert not same and lines[0].endswith("1 differing") and says in lines[-1], lines


def test_gfx942_longrow_finish_waits_for_its_stores_before_the_barrier(tmp_path):
    """The long-row finish stores the k-th word's bucket to memory, and after a barrier every thread reads it back.
    On AMD a barrier does not wait for a wave's stores, so the finish waits for them first (`HIP`): in the gfx942
    code the last store before the bucket's barrier is followed by `s_waitcnt vmcnt(0)` ahead of `s_barrier`. The
    CUDA plan has no such wait (there the barrier orders the block's memory)."""
    from dsa_lab import plans
    from dsa_lab.kernels import longrow

    assert plans.longrow(1, 262144, 2048, {"sm_count": 256, "arch": "gfx942", "warp_size": 64}).hip
    assert not plans.longrow(1, 262144, 2048, {"sm_count": 132, "arch": "sm_90"}).hip
    compile_check(tmp_path, "gfx942", "--only", "_longrow_finish", "--limit", "1", "--dump-asm", str(tmp_path))
    src = Path(longrow.__file__).read_text().splitlines()
    line = next(i + 1 for i, s in enumerate(src) if "# the bucket's words stored before any thread loads them" in s)
    asm = (tmp_path / "0000.amdgcn").read_text().splitlines()
    at = next(i for i, s in enumerate(asm) if re.search(rf"longrow\.py:{line}:", s))
    before = [s.strip() for s in asm[:at] if not s.strip().startswith((".loc", ".L", ";"))]
    last_store = max(i for i, s in enumerate(before) if "store_dword" in s)
    assert any(s == "s_waitcnt vmcnt(0)" for s in before[last_store:]), before[last_store:]
    after = [s.strip() for s in asm[at:at + 40]]
    assert "s_barrier" in after, after
