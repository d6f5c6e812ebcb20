"""Do two trees compile every default variant to the same instructions, names aside?  ``dsa-lab compile-check
--compare REF``.

REF (a git revision) is extracted with ``git archive REF dsa_lab`` into a temporary folder.  Each tree then compiles
its own variant list for each target with its own code, in a process of its own and a fresh Triton cache:
``dsa-lab compile-check --dump-asm DIR`` where the tree has that option, else (a tree from before it) a short driver
over the tree's ``compile_check.compile_for`` and ``warmup`` variant list.  The variants of the two trees are matched
by position in their lists, never by name, and each compiled kernel is reduced to its instruction stream
(:func:`instructions`: SASS for sm_90 where Triton ships ``cuobjdump``, else PTX; AMDGCN for gfx targets) with every
name normalized: the kernel's symbol, labels (numbered in order of first appearance), line and debug information,
comments, addresses and encodings.  Equal streams mean the same instructions; the resources follow from them.

A variant whose streams differ is compiled once more from this tree, alone and from a fresh cache, and the two
compiles of the same code are compared: where they differ too, the compiler's output is not deterministic for that
variant (seen on gfx950 with the CPU's triton 3.9: a hier variant's register allocation moved between two compiles
of one tree), and the report says the comparison cannot decide it.
"""
from __future__ import annotations

import difflib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A tree whose compile-check has no --dump-asm: its own compile_for and variant list, driven from here.
_LEGACY_DRIVER = r"""
import json, os, re, sys
from dsa_lab import compile_check as cc, warmup
target, out, o = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
calls = warmup.decode_calls() if o["decode_only"] else warmup.warm_calls(fused=o["fused"])
items = list(warmup.variants(calls, cc.TARGETS[target].facts).items())
if o["only"]:
    items = [it for it in items if re.search(o["only"], it[0])]
if o["subset"] == "ci":
    items = cc.subset_ci(items)
items = items[:o["limit"]] if o["limit"] else items
index = []
for i, (key, (launch, _)) in enumerate(items):
    k = cc.compile_for(launch, target)
    files = {}
    for fmt in ("ptx", "cubin", "amdgcn"):
        if fmt in k.asm:
            files[fmt] = f"{i:04d}.{fmt}"
            data = k.asm[fmt]
            with open(os.path.join(out, files[fmt]), "wb" if isinstance(data, bytes) else "w") as f:
                f.write(data)
    index.append({"key": key, "name": k.metadata.name, "files": files})
with open(os.path.join(out, "index.json"), "w") as f:
    json.dump({"target": target, "variants": index}, f, indent=1)
"""


def _collapse(line: str) -> str:
    return " ".join(line.split())


def _sass_lines(text: str):
    for ln in text.splitlines():  # "/*0090*/  @!P0 BRA 0x2b0 ;  /* 0x0000... */": the instruction, no address
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s*(.*?)\s*;", ln)
        if m:
            yield m.group(1)


def _ptx_lines(text: str):
    in_debug = False
    for ln in text.splitlines():
        s = ln.split("//")[0].strip()
        if in_debug:
            in_debug = s != "}"
            continue
        if s.startswith(".section") and ".debug" in s:
            in_debug = True
            continue
        if not s or s.startswith((".loc", ".file")) or re.fullmatch(r"\$L__(tmp|func_begin|func_end)\w*:", s):
            continue
        yield s


def _amdgcn_lines(text: str):
    skip = False
    for ln in text.splitlines():
        s = ln.split(";")[0].strip()
        if s.startswith(".amdgpu_metadata"):  # the YAML note: argument names, the symbol (resources: .amdhsa_*)
            skip = True
        elif s.startswith(".end_amdgpu_metadata"):
            skip = False
        elif s.startswith(".section"):
            skip = ".debug" in s
        elif s == ".text":
            skip = False
        if skip or not s or s.startswith((".loc", ".file", ".cfi_", ".end_amdgpu_metadata")):
            continue
        if s.endswith(":") and not s.startswith(".LBB") and not re.fullmatch(r"[A-Za-z_]\w*:", s):
            continue  # .Ltmp / .Lfunc_begin / debug labels: where line information starts, not code
        yield s


_LINES = {"sass": _sass_lines, "ptx": _ptx_lines, "amdgcn": _amdgcn_lines}
_LABEL = re.compile(r"(?:\$L__|\.L)[\w.]*")


def instructions(text: str, fmt: str, name: str | None = None) -> list[str]:
    """The instruction stream of a compiled kernel's ``fmt`` text (``sass``: ``cuobjdump -sass`` output, ``ptx``,
    ``amdgcn``), one normalized line per instruction or directive, with every name replaced: the kernel symbol
    ``name`` by ``KERNEL``, each label by ``L<n>`` (``n``: order of first appearance); comments, addresses,
    encodings, line and debug information dropped, white space collapsed.  Two kernels that differ only in names
    give equal lists."""
    out, labels = [], {}
    for line in _LINES[fmt](text):
        if name:
            line = line.replace(name, "KERNEL")
        line = _LABEL.sub(lambda m: labels.setdefault(m.group(0), f"L{len(labels)}"), line)
        out.append(_collapse(line))
    return out


def _cuobjdump() -> str | None:
    import triton

    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    return tool if os.path.exists(tool) else None


def sass(cubin: bytes) -> str:
    """``cuobjdump -sass`` of a cubin, with the tool Triton ships."""
    tool = _cuobjdump()
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        return subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, check=True).stdout


def extract(ref: str, dest: Path, repo: Path = ROOT) -> str:
    """``git archive REF dsa_lab`` of ``repo`` unpacked under ``dest``; returns REF's short commit."""
    rev = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "--verify", f"{ref}^{{commit}}"],
                         capture_output=True, text=True)
    if rev.returncode:
        raise SystemExit(f"compile-check --compare: {ref!r} is not a commit of {repo}: {rev.stderr.strip()}")
    tar = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", ref, "dsa_lab"], capture_output=True,
                         check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        if hasattr(tarfile, "data_filter"):
            t.extractall(dest, filter="data")
        else:
            t.extractall(dest)
    return rev.stdout.strip()


def _env(root: Path, cache: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRITON_CACHE_DIR_KEEP")}
    env["PYTHONPATH"] = os.pathsep.join([str(root)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["TRITON_CACHE_DIR"] = cache  # every compile cold, the two trees apart
    return env


def _has_dump(root: Path, env: dict) -> bool:
    r = subprocess.run([sys.executable, "-m", "dsa_lab.cli", "compile-check", "--help"], cwd=root, env=env,
                       capture_output=True, text=True)
    return "--dump-asm" in r.stdout


def dump_tree(root: Path, target: str, out: Path, opts: dict) -> list[dict]:
    """Compile the variants of the tree at ``root`` for ``target`` with that tree's own code, in a process of its
    own; their text and binaries go under ``out``.  Returns the tree's index: ``[{key, name, files}]`` in list order."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="dsa_lab_compare_cache_") as cache:
        env = _env(root, cache)
        if _has_dump(root, env):
            cmd = [sys.executable, "-m", "dsa_lab.cli", "compile-check", "--target", target, "--dump-asm", str(out),
                   "--subset", opts["subset"], "--jobs", str(opts["jobs"])]
            cmd += ["--only", opts["only"]] if opts["only"] else []
            cmd += ["--limit", str(opts["limit"])] if opts["limit"] else []
            cmd += ["--decode-only"] if opts["decode_only"] else []
            cmd += ["--fused"] if opts["fused"] else []
        else:
            cmd = [sys.executable, "-c", _LEGACY_DRIVER, target, str(out), json.dumps(opts)]
        r = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    if r.returncode or not (out / "index.json").exists():
        raise SystemExit(f"compile-check --compare: compiling {root} for {target} failed:\n{r.stderr[-3000:]}")
    return json.loads((out / "index.json").read_text())["variants"]


def _stream(entry: dict, folder: Path, fmt: str) -> list[str]:
    if fmt == "sass":
        return instructions(sass((folder / entry["files"]["cubin"]).read_bytes()), "sass", entry["name"])
    return instructions((folder / entry["files"][fmt]).read_text(), fmt, entry["name"])


def _format(target: str, a: list[dict], b: list[dict]) -> str:
    if target.startswith("gfx"):
        return "amdgcn"
    return "sass" if _cuobjdump() and all("cubin" in e["files"] for e in a + b) else "ptx"


def first_differences(a: list[str], b: list[str], n: int = 4) -> tuple[int, list[str]]:
    """``(instructions that differ, the first n lines of the diff)`` of two instruction streams: ``-`` REF's, ``+``
    this tree's, ``@@`` where."""
    lines = [ln for ln in difflib.unified_diff(a, b, "REF", "this", n=0, lineterm="")
             if ln[:1] in "-+@" and not ln.startswith(("---", "+++"))]
    return sum(ln[:1] in "-+" for ln in lines), lines[:n + 1]


def compare_target(target: str, ref_dir: Path, work: Path, opts: dict) -> tuple[bool, list[str]]:
    """Compile both trees for ``target`` and compare them variant by variant: (all identical, printed lines)."""
    a = dump_tree(ref_dir, target, work / "ref" / target, opts)
    b = dump_tree(ROOT, target, work / "this" / target, opts)
    fmt = _format(target, a, b)
    same, differ = 0, []
    for i, (ea, eb) in enumerate(zip(a, b)):
        sa, sb = _stream(ea, work / "ref" / target, fmt), _stream(eb, work / "this" / target, fmt)
        if sa == sb:
            same += 1
        else:
            differ.append((i, ea["key"], eb["key"], first_differences(sa, sb)))
    extra = abs(len(a) - len(b))
    head = (f"{target} ({fmt}): {min(len(a), len(b))} variants compared, {same} identical, "
            f"{len(differ) + extra} differing")
    if extra:
        head += f" (REF lists {len(a)} variants, this tree {len(b)})"
    lines = [head]
    for i, ka, kb, (count, diff) in differ:
        lines.append(f"  #{i}: REF {ka}")
        lines.append(f"  #{i}: this {kb} ({count} lines differ; the first:)")
        lines += [f"      {d}" for d in diff]
        again = _recompile(target, b[i], work / "again" / f"{target}_{i:04d}", opts, fmt)
        if again is not None:
            first = _stream(b[i], work / "this" / target, fmt)
            n = first_differences(first, again)[0]
            lines.append(f"  #{i}: this tree compiled again: " + (
                "the same stream (the difference is the code's)" if not n else
                f"{n} lines differ from its own first compile: the compiler's output for this variant is not "
                f"deterministic, so this comparison cannot decide it"))
    return not differ and not extra, lines


def _recompile(target: str, entry: dict, out: Path, opts: dict, fmt: str) -> list[str] | None:
    """This tree's variant ``entry`` compiled once more, alone, from a fresh cache: its instruction stream (``None``
    where it could not be compiled alone)."""
    try:
        again = dump_tree(ROOT, target, out, {**opts, "only": "^" + re.escape(entry["key"]) + "$", "subset": "all",
                                             "limit": 0})
    except SystemExit:
        return None
    return _stream(again[0], out, fmt) if len(again) == 1 else None


def run_compare(ref: str, targets: list[str], opts: dict) -> int:
    """``dsa-lab compile-check --compare REF``: one line per target, details under it; 1 when any variant differs."""
    with tempfile.TemporaryDirectory(prefix="dsa_lab_compare_") as tmp:
        work = Path(tmp)
        commit = extract(ref, work / "ref_tree")
        print(f"comparing {ref} ({commit}) with this tree ({ROOT}): {', '.join(targets)}", file=sys.stderr, flush=True)
        ok = True
        for target in targets:
            same, lines = compare_target(target, work / "ref_tree", work, opts)
            ok &= same
            print("\n".join(lines), flush=True)
    return 0 if ok else 1
