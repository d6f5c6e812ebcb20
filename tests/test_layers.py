"""Control flows one way: public API → plans → launchers → kernels, the lab (bench, workbook) above the library.

Every ``import`` in the package, at module level or inside a function, is an edge of the import graph.  The test
fails on an edge that climbs a layer and on any circle, naming them.
"""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "dsa_lab"

# lowest first; a module may import its own layer or a lower one
LAYERS = [
    ("foundation", {"dsa_lab._env", "dsa_lab._checks", "dsa_lab._impl", "dsa_lab.keys", "dsa_lab.paged"}),
    ("kernels", {"dsa_lab.kernels"}),
    ("plans", {"dsa_lab.plans"}),
    ("launch", {"dsa_lab.launch"}),
    ("api", {"dsa_lab", "dsa_lab.select", "dsa_lab.scores", "dsa_lab.flags", "dsa_lab.producer", "dsa_lab.compat",
             "dsa_lab.cases"}),
    ("tooling", {"dsa_lab.warmup"}),
    ("lab", {"dsa_lab.bench", "dsa_lab.compile_check", "dsa_lab.compile_compare"}),
    ("workbook", {"dsa_lab.workbook"}),
    ("cli", {"dsa_lab.cli"}),
]


def _modules() -> dict[str, Path]:
    out = {}
    for f in PKG.rglob("*.py"):
        parts = list(f.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def _layer(mod: str) -> int:
    for i, (_, names) in enumerate(LAYERS):
        if mod in names or any(mod.startswith(n + ".") for n in names if n != "dsa_lab"):
            return i
    raise AssertionError(f"{mod} is in no layer: add it to LAYERS")


def _edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the package modules it imports (relative imports resolved; ``from pkg import sub`` is an edge to
    the submodule when it is one)."""
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {id(n) for b in ast.walk(tree) if isinstance(b, ast.If) and "TYPE_CHECKING" in ast.unparse(b.test)
                       for st in b.body for n in ast.walk(st)}  # annotations only: not an import at run time
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = pkg.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for t in targets:
                while t and t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != mod:
                    edges[mod].add(t)
    return edges


def test_no_import_climbs_a_layer():
    mods = _modules()
    bad = sorted(f"{m} ({LAYERS[_layer(m)][0]}) imports {t} ({LAYERS[_layer(t)][0]})"
                 for m, ts in _edges(mods).items() for t in ts if _layer(t) > _layer(m))
    assert not bad, "imports that climb a layer:\n" + "\n".join(bad)


def test_no_import_circle():
    edges = _edges(_modules())
    state: dict[str, int] = {}
    circles = []

    def visit(m, path):
        state[m] = 1
        for t in sorted(edges[m]):
            if state.get(t) == 1:
                circles.append(" -> ".join(path[path.index(t):] + [t]))
            elif t not in state:
                visit(t, path + [t])
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    assert not circles, "import circles:\n" + "\n".join(circles)


def test_kernels_are_jit_code_only():
    """``dsa_lab/kernels`` holds ``@triton.jit`` code: no torch, no launcher, nothing of the package above it."""
    for f in (PKG / "kernels").glob("*.py"):
        tree = ast.parse(f.read_text())
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert "torch" not in names, f"{f.name} imports torch"
        for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
            assert any("jit" in ast.unparse(d) for d in fn.decorator_list), f"{f.name}: {fn.name} is not @triton.jit"
