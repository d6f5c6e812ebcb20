"""Compile every default kernel variant for a GPU target on the CPU and check its resources: ``dsa-lab compile-check``.

No GPU is needed: ``triton.compile`` with a ``GPUTarget`` builds the cubin (``sm_90``) or the AMD code object
(``gfx950``: MI355X, ``gfx942``: MI300X) from the same Triton source.  The variants are the warmup's
(:func:`dsa_lab.warmup.warm_calls`: the decode grid and every bucket of the default arms), recorded from the launchers
with the target device's facts, so the branches a device chooses (programmatic dependent launch on CUDA sm_90 only,
grids sized by the CU count) are the ones compiled.  For each variant it reports registers, shared memory / LDS,
spills / scratch and occupancy, and fails (exit status 1) when a variant spills vector registers or uses scratch /
local memory, or needs more shared memory per program than the target has (SGPRs parked in VGPR lanes are reported,
not failed: they touch no memory).  ``--subset ci`` compiles one variant per kernel and k bucket:
the gate CI runs for gfx950.  Compiled and checked is not run: these numbers say nothing about speed or
correctness on an AMD GPU.

``--dump-asm DIR`` writes each compiled variant's PTX and cubin (sm_90) or AMDGCN (gfx) and an ``index.json`` instead
of checking resources.  ``--compare REF`` compiles the same list at this tree and at the git revision REF, each with
its own code, for each ``--target`` (default: all three), and compares the instruction streams variant by variant,
names normalized (:mod:`dsa_lab.compile_compare`): one line per target, exit status 1 when any variant differs.
"""
from __future__ import annotations

import argparse
import atexit
import dataclasses
import os
import re
import shutil
import sys
import tempfile
import time

from . import warmup


@dataclasses.dataclass(frozen=True)
class Target:
    backend: tuple  # GPUTarget(*backend)
    facts: dict  # the device facts the launchers are recorded with
    shared_limit: int  # bytes of shared memory / LDS one program may use
    max_waves: int  # resident warps per SM (CUDA) or waves per SIMD (AMD)


# Limits from the vendors' architecture guides: H100/H200 227 KB of shared memory per block (opt-in), 64 warps and
# 64K registers per SM; CDNA3 (MI300X) 64 KB of LDS per workgroup, CDNA4 (MI355X) 160 KB; 8 waves per SIMD.
TARGETS = {
    "sm_90": Target(("cuda", 90, 32), warmup.H200, 232448, 64),
    "gfx950": Target(("hip", "gfx950", 64), {"sm_count": 256, "warp_size": 64, "name": "AMD Instinct MI355X (gfx950)",
                                             "pdl": False, "arch": "gfx950"}, 163840, 8),
    "gfx942": Target(("hip", "gfx942", 64), {"sm_count": 304, "warp_size": 64, "name": "AMD Instinct MI300X (gfx942)",
                                             "pdl": False, "arch": "gfx942"}, 65536, 8),
}
COLUMNS = ["kernel", "variant", "calls", "compile_s", "num_warps", "regs", "agpr", "sgpr", "spills", "sgpr_spills",
           "scratch", "shared", "shared_limit", "waves", "occupancy", "ok", "problem"]


def compile_for(launch, target: str):
    """Compile a recorded launch for ``target`` (a key of :data:`TARGETS`) on the CPU: the ``CompiledKernel``."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    _, sig, cx, opts = warmup.parts(launch)
    params = [n for n, _ in warmup._params(launch.kernel)]
    full_sig = {n: sig.get(n, "constexpr") for n in params}
    attrs = {(params.index(n),): [["tt.divisibility", 16]] for n, t in sig.items() if t.startswith("*")}
    # ints as a launch specializes them (unless do_not_specialize): 1 is a constant, a multiple of 16 is known
    # divisible by 16 -- what the compiler may assume of a stride decides, e.g., whether a gather becomes cp.async
    dns = set(getattr(launch.kernel, "do_not_specialize", None) or ())
    cx = dict(cx)
    for i, (n, v) in enumerate(zip(params, launch.args)):
        if n not in sig or sig[n].startswith("*") or isinstance(v, bool) or not isinstance(v, int):
            continue
        if i in dns or n in dns:
            continue
        if v == 1:
            full_sig[n] = "constexpr"
            cx[n] = 1
        elif v % 16 == 0:
            attrs[(i,)] = [["tt.divisibility", 16]]
    backend = TARGETS[target].backend
    options = {k: v for k, v in opts.items() if backend[0] == "cuda" or k not in ("launch_pdl", "maxnreg")}
    src = ASTSource(launch.kernel, full_sig, constexprs=cx, attrs=attrs)
    return triton.compile(src, target=GPUTarget(*backend), options=options)


def _amd(asm: str, pattern: str):
    m = re.search(pattern, asm)
    return int(m.group(1)) if m else None


def resources(kernel, target: str) -> dict:
    """Registers, shared memory, spills and scratch of a compiled kernel, from its metadata and binary.

    AMD: the code object's ``.vgpr_count`` / ``.agpr_count`` / ``.sgpr_count``, ``.vgpr_spill_count`` (``spills``:
    vector registers spilled to scratch), ``.sgpr_spill_count`` (``sgpr_spills``: scalars parked in VGPR lanes, no
    memory), ``.private_segment_fixed_size`` (``scratch``, bytes per lane) and LLVM's ``Occupancy`` (waves per SIMD).
    sm_90: ``cuobjdump --dump-resource-usage`` (``REG``; ``LOCAL``, bytes of local memory per thread, as ``scratch``;
    ``STACK``) when Triton ships the tool, else the registers from the metadata."""
    md = kernel.metadata
    out = {"num_warps": md.num_warps, "shared": getattr(md, "shared", None)}
    if target.startswith("gfx"):
        asm = kernel.asm.get("amdgcn", "")
        out.update(regs=_amd(asm, r"\.vgpr_count:\s+(\d+)"), agpr=_amd(asm, r"\.agpr_count:\s+(\d+)"),
                   sgpr=_amd(asm, r"\.sgpr_count:\s+(\d+)"), spills=_amd(asm, r"\.vgpr_spill_count:\s+(\d+)"),
                   sgpr_spills=_amd(asm, r"\.sgpr_spill_count:\s+(\d+)"),
                   scratch=_amd(asm, r"\.private_segment_fixed_size:\s+(\d+)"),
                   waves=_amd(asm, r";\s*Occupancy:\s+(\d+)"))
        return out
    import subprocess

    import triton

    out["regs"] = getattr(md, "n_regs", None)
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    if os.path.exists(tool):
        with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
            f.write(kernel.asm["cubin"])
            f.flush()
            txt = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True, text=True).stdout
        got = {k: int(v) for k, v in re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", txt)}
        out.update(regs=got.get("REG", out["regs"]), scratch=got.get("LOCAL"), stack=got.get("STACK"))
    out["waves"] = sm90_resident_warps(out["regs"], out["shared"] or 0, md.num_warps)
    return out


def sm90_resident_warps(regs, shared: int, num_warps: int):
    """Resident warps per SM of a kernel on sm_90: programs limited by the 64K registers (allocated per warp in
    256-register units), 228 KB of shared memory (1 KB reserved per program), 64 warps and 32 programs."""
    if regs is None:
        return None
    per_warp = -(-regs * 32 // 256) * 256
    by_regs = (65536 // per_warp) // num_warps if per_warp else 32
    by_shared = 233472 // (shared + 1024)
    return min(by_regs, by_shared, 64 // num_warps, 32) * num_warps


def check(row: dict, target: str) -> list[str]:
    """The gate's problems with one compiled variant (empty: it passes)."""
    t = TARGETS[target]
    problems = []
    if row.get("spills"):
        problems.append(f"{row['spills']} vector registers spilled")
    if row.get("scratch"):
        problems.append(f"{row['scratch']} B of {'scratch' if target.startswith('gfx') else 'local memory'} a lane")
    if row.get("stack"):  # sm_90: ptxas spills to the stack frame (a Triton kernel makes no calls)
        problems.append(f"{row['stack']} B of stack a thread (register spills)")
    if (row.get("shared") or 0) > t.shared_limit:
        problems.append(f"shared {row['shared']} B > {t.shared_limit} B")
    if row.get("waves") == 0:
        problems.append("no program fits on a CU/SM")
    return problems


def subset_ci(items):
    """One variant per kernel, k bucket (the hier kernel's ``KP``) and next_n (the producer's), in list order."""
    seen, out = set(), []
    for key, (launch, n) in items:
        name, _, cx, _ = warmup.parts(launch)
        tag = (name, cx.get("KP"), cx.get("NEXT_N"))
        if tag not in seen:
            seen.add(tag)
            out.append((key, (launch, n)))
    return out


_ITEMS: list = []  # (key, (launch, calls)) for the worker processes (inherited by fork)


def _compile_one(i: int, target: str) -> dict:
    key, (launch, n) = _ITEMS[i]
    t = time.perf_counter()
    kernel = compile_for(launch, target)
    dt = time.perf_counter() - t
    row = {"kernel": warmup.parts(launch)[0], "variant": key, "calls": n, "compile_s": round(dt, 3),
           **resources(kernel, target)}
    w = row.get("waves")
    row["occupancy"] = None if w is None else round(w / TARGETS[target].max_waves, 3)
    row["shared_limit"] = TARGETS[target].shared_limit
    problems = check(row, target)
    row["ok"], row["problem"] = int(not problems), "; ".join(problems)
    return row


def _dump_one(i: int, target: str, out: str) -> dict:
    key, (launch, _) = _ITEMS[i]
    kernel = compile_for(launch, target)
    files = {}
    for fmt in ("ttgir", "ptx", "cubin", "amdgcn"):
        if fmt in kernel.asm:
            files[fmt] = f"{i:04d}.{fmt}"
            text = kernel.asm[fmt]
            with open(os.path.join(out, files[fmt]), "wb" if isinstance(text, bytes) else "w") as f:
                f.write(text)
    return {"key": key, "name": kernel.metadata.name, "files": files}


def _targets(value: str) -> list[str]:
    names = value.split(",")
    bad = [t for t in names if t not in TARGETS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown target(s) {bad}; choose from {', '.join(sorted(TARGETS))}")
    return names


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", type=_targets, default=None,
                   help=f"one of {', '.join(sorted(TARGETS))} (required); with --compare a comma list, default all")
    p.add_argument("--subset", choices=("all", "ci"), default="all",
                   help="ci: one variant per kernel and k bucket (the CI gate)")
    p.add_argument("--only", default=None, metavar="REGEX", help="only the variants whose line matches REGEX")
    p.add_argument("--limit", type=int, default=0, metavar="N", help="only the first N variants of the list")
    p.add_argument("--decode-only", action="store_true", help="only the decode grid's variants")
    p.add_argument("--fused", action="store_true", help="also the triton_fused arm's variants")
    p.add_argument("--jobs", type=int, default=1,
                   help="parallel compile processes (compile_s is then measured under that load; 1: cold and alone)")
    p.add_argument("--csv", default=None, help="write one row per variant here (+ .meta.json), replacing the file")
    p.add_argument("--dump-asm", default=None, metavar="DIR",
                   help="write each variant's PTX / cubin / AMDGCN and index.json to DIR (no resource check)")
    p.add_argument("--compare", default=None, metavar="REF",
                   help="compare every variant's instructions, names normalized, with the tree at git revision REF")


def _map(fn, n: int, jobs: int, *args):
    """``fn(i, *args)`` for ``i < n`` in order, in ``jobs`` forked processes (they inherit :data:`_ITEMS`)."""
    if jobs <= 1:
        for i in range(n):
            yield fn(i, *args)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as ex:
        futs = [ex.submit(fn, i, *args) for i in range(n)]
        for f in futs:
            yield f.result()


def run(args) -> int:
    global _ITEMS
    t0 = time.perf_counter()
    if args.compare:
        from .compile_compare import run_compare

        opts = {k: getattr(args, k) for k in ("only", "subset", "limit", "decode_only", "fused", "jobs")}
        return run_compare(args.compare, args.target or sorted(TARGETS), opts)
    if not args.target or len(args.target) != 1:
        raise SystemExit("compile-check: give one --target (several only with --compare)")
    args.target = args.target[0]
    calls = warmup.decode_calls() if args.decode_only else warmup.warm_calls(fused=args.fused)
    items = list(warmup.variants(calls, TARGETS[args.target].facts).items())
    if args.only:
        items = [it for it in items if re.search(args.only, it[0])]
    _ITEMS = subset_ci(items) if args.subset == "ci" else items
    _ITEMS = _ITEMS[:args.limit] if args.limit else _ITEMS
    from .kernels import hier  # noqa: F401  (decorate the kernels before any timing)

    if not os.environ.get("TRITON_CACHE_DIR_KEEP"):  # every compile cold: a fresh cache, removed afterwards
        tmp = tempfile.mkdtemp(prefix="dsa_lab_compile_check_")
        os.environ["TRITON_CACHE_DIR"] = tmp
        atexit.register(shutil.rmtree, tmp, True)
    print(f"compiling {len(_ITEMS)} of {len(items)} variants for {args.target} "
          f"({TARGETS[args.target].facts['name']}) with {args.jobs} process(es)", file=sys.stderr)
    rows = []

    def done(i, row):
        rows.append(row)
        res = {k: row.get(k) for k in ("regs", "agpr", "shared", "spills", "sgpr_spills", "scratch", "waves")}
        print(f"[{len(rows)}/{len(_ITEMS)}] {row['compile_s']:6.1f} s {'ok  ' if row['ok'] else 'FAIL'} {res} "
              f"{row['variant']}{'  ' + row['problem'] if row['problem'] else ''}", flush=True)

    if args.dump_asm:
        import json

        os.makedirs(args.dump_asm, exist_ok=True)
        index = list(_map(_dump_one, len(_ITEMS), args.jobs, args.target, args.dump_asm))
        with open(os.path.join(args.dump_asm, "index.json"), "w") as f:
            json.dump({"target": args.target, "variants": index}, f, indent=1)
        print(f"{len(index)} variants compiled for {args.target} into {args.dump_asm}", file=sys.stderr)
        return 0
    for i, row in enumerate(_map(_compile_one, len(_ITEMS), args.jobs, args.target)):
        done(i, row)
    bad = [r for r in rows if not r["ok"]]
    print(f"{len(rows)} variants compiled for {args.target} in {time.perf_counter() - t0:.0f} s; "
          f"{len(bad)} over a limit", file=sys.stderr)
    if args.csv:
        from .bench import data

        os.makedirs(os.path.dirname(os.path.abspath(args.csv)), exist_ok=True)
        if os.path.exists(args.csv):
            os.remove(args.csv)
        cols = COLUMNS + (["stack"] if args.target == "sm_90" else [])
        for r in rows:
            data.append_row(args.csv, {c: r.get(c) for c in cols}, cols)
        data.save_meta(data.meta_path(args.csv), data.collect_metadata(
            "dsa-lab compile-check " + " ".join(sys.argv[2:] if sys.argv[1:2] == ["compile-check"] else sys.argv[1:]),
            {"target": args.target, "device_facts": TARGETS[args.target].facts, "subset": args.subset,
             "variants": len(rows), "variants_listed": len(items), "jobs": args.jobs, "over_limit": len(bad),
             "seconds": round(time.perf_counter() - t0, 1)}))
    return 1 if bad else 0
