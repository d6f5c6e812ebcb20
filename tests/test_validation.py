"""Bad-input table: every bad input tried, the error it gets, and the argument the message names.

Each row: (id, call, exception type, regex the message must match).  The table is printed
in docs/validation.md by `python tests/test_validation.py` (kept in sync by a test).
"""
import os
import sys

import pytest
import torch

import dsa_lab

S = torch.randn(4, 64)
L = torch.tensor([64, 10, 0, 5])
LG = torch.randn(4, 256)
E = torch.tensor([256, 100, 0, 7])
C = torch.tensor([[0, 3, -1]] * 4, dtype=torch.int32)

TABLE = [
    # topk_select
    ("select: scores not a tensor", lambda: dsa_lab.topk_select([[1.0]], 1), TypeError, "scores must be a torch.Tensor"),
    ("select: scores float64", lambda: dsa_lab.topk_select(S.double(), 4), TypeError, "scores must have dtype float32"),
    ("select: scores bf16", lambda: dsa_lab.topk_select(S.bfloat16(), 4), TypeError, "scores must have dtype float32"),
    ("select: scores 1-D", lambda: dsa_lab.topk_select(S[0], 4), ValueError, "scores must be 2-D"),
    ("select: scores 3-D", lambda: dsa_lab.topk_select(S[None], 4), ValueError, "scores must be 2-D"),
    ("select: scores column-strided (transposed)", lambda: dsa_lab.topk_select(torch.randn(64, 4).t(), 4), ValueError, "scores must have unit stride"),
    ("select: scores every other column", lambda: dsa_lab.topk_select(S[:, ::2], 4), ValueError, "scores must have unit stride"),
    ("select: k = 0", lambda: dsa_lab.topk_select(S, 0), ValueError, "k must be >= 1"),
    ("select: k negative", lambda: dsa_lab.topk_select(S, -3), ValueError, "k must be >= 1"),
    ("select: k float", lambda: dsa_lab.topk_select(S, 4.0), TypeError, "k must be an int"),
    ("select: k bool", lambda: dsa_lab.topk_select(S, True), TypeError, "k must be an int"),
    ("select: lengths float", lambda: dsa_lab.topk_select(S, 4, lengths=L.float()), TypeError, "lengths must have dtype int32 or int64"),
    ("select: lengths wrong size", lambda: dsa_lab.topk_select(S, 4, lengths=L[:3]), ValueError, "lengths must have 4 entries"),
    ("select: lengths 2-D", lambda: dsa_lab.topk_select(S, 4, lengths=L[None]), ValueError, "lengths must be 1-D"),
    ("select: lengths negative", lambda: dsa_lab.topk_select(S, 4, lengths=torch.tensor([1, -2, 0, 0])), ValueError, "lengths must be >= 0"),
    ("select: row_repeat not dividing rows", lambda: dsa_lab.topk_select(S, 4, row_repeat=3), ValueError, "row_repeat=3 does not divide rows=4"),
    ("select: row_repeat 0", lambda: dsa_lab.topk_select(S, 4, row_repeat=0), ValueError, "row_repeat must be >= 1"),
    ("select: lengths size vs row_repeat", lambda: dsa_lab.topk_select(S, 4, lengths=L, row_repeat=2), ValueError, "lengths must have 2 entries"),
    ("select: unknown impl", lambda: dsa_lab.topk_select(S, 4, impl="cuda"), ValueError, "impl must be one of"),
    ("select: impl not a str", lambda: dsa_lab.topk_select(S, 4, impl=1), TypeError, "impl must be a str"),
    ("select: out wrong dtype", lambda: dsa_lab.topk_select(S, 4, out=torch.empty(4, 4, dtype=torch.int64)), TypeError, "out must have dtype int32"),
    ("select: out wrong shape", lambda: dsa_lab.topk_select(S, 4, out=torch.empty(4, 5, dtype=torch.int32)), ValueError, "out must have shape"),
    ("select: out non-contiguous", lambda: dsa_lab.topk_select(S, 4, out=torch.empty(4, 8, dtype=torch.int32)[:, ::2]), ValueError, "out must be contiguous"),
    ("select: lengths on another device", lambda: dsa_lab.topk_select(S, 4, lengths=L.to("meta")), ValueError, "lengths is on meta"),
    # block_scores / select_candidate_blocks
    ("scores: logits int", lambda: dsa_lab.block_scores(LG.int(), E), TypeError, "logits must have dtype float32"),
    ("scores: logits 1-D", lambda: dsa_lab.block_scores(LG[0], E), ValueError, "logits must be 2-D"),
    ("scores: logits transposed", lambda: dsa_lab.block_scores(torch.randn(256, 4).t(), E), ValueError, "logits must have unit stride"),
    ("scores: row_ends missing", lambda: dsa_lab.block_scores(LG, None), TypeError, "row_ends must be a tensor"),
    ("scores: row_ends negative", lambda: dsa_lab.block_scores(LG, torch.tensor([1, 2, -1, 0])), ValueError, "row_ends must be >= 0"),
    ("scores: row_ends wrong size", lambda: dsa_lab.block_scores(LG, E[:2]), ValueError, "row_ends must have 4 entries"),
    ("scores: row_starts > row_ends", lambda: dsa_lab.block_scores(LG, E, row_starts=torch.tensor([0, 101, 0, 0])), ValueError, r"row_starts\[1\]=101 > row_ends\[1\]=100"),
    ("scores: row_starts float", lambda: dsa_lab.block_scores(LG, E, row_starts=E.float()), TypeError, "row_starts must have dtype"),
    ("scores: block_size 0", lambda: dsa_lab.block_scores(LG, E, block_size=0), ValueError, "block_size must be >= 1"),
    ("scores: row_repeat not dividing", lambda: dsa_lab.block_scores(LG, E[:1], row_repeat=3), ValueError, "row_repeat=3 does not divide rows=4"),
    ("candidates: topk_blocks 0", lambda: dsa_lab.select_candidate_blocks(LG, E, 0), ValueError, "topk_blocks must be >= 1"),
    ("candidates: out wrong shape", lambda: dsa_lab.select_candidate_blocks(LG, E, 8, out=torch.empty(4, 4, dtype=torch.int32)), ValueError, "out must have shape"),
    ("candidates: with_flags not a bool", lambda: dsa_lab.select_candidate_blocks(LG, E, 8, with_flags=1), TypeError, "with_flags must be a bool"),
    ("candidates: impl triton_fused past the fused kernel's shapes", lambda: dsa_lab.select_candidate_blocks(LG, E, 2048, impl="triton_fused"), ValueError, "topk_blocks=2048, block_size=8"),
    # candidate_flags
    ("flags: candidates float", lambda: dsa_lab.candidate_flags(C.float(), 256), TypeError, "candidates must have dtype"),
    ("flags: width 0", lambda: dsa_lab.candidate_flags(C, 0), ValueError, "width must be >= 1"),
    ("flags: block id >= nblocks", lambda: dsa_lab.candidate_flags(C, 16), ValueError, r"candidates must hold -1 or block ids in \[0, 2\)"),
    ("flags: id below -1", lambda: dsa_lab.candidate_flags(C - 2, 256), ValueError, "candidates must hold -1"),
    ("flags: row_starts wrong size", lambda: dsa_lab.candidate_flags(C, 256, row_starts=E[:3]), ValueError, "row_starts must have 4 entries"),
    # keys
    ("keys: index beyond the layout", lambda: dsa_lab.pack_keys(torch.zeros(1), torch.tensor([2**32])), ValueError, "MAX_INDEX=4294967295"),
    ("keys: negative index", lambda: dsa_lab.pack_keys(torch.zeros(1), torch.tensor([-1])), ValueError, "MAX_INDEX"),
    ("keys: scores float16", lambda: dsa_lab.ordered_bits(torch.zeros(1, dtype=torch.float16)), TypeError, "x must be float32"),
]


def test_env_override_unknown_name(monkeypatch):
    monkeypatch.setenv("DSA_LAB_IMPL", "fast")
    with pytest.raises(ValueError, match="DSA_LAB_IMPL='fast'"):
        dsa_lab.topk_select(S, 4)


def test_env_override_selects_arm(monkeypatch):
    monkeypatch.setenv("DSA_LAB_IMPL", "reference")
    s = torch.full((1, 10), 1.0)
    assert dsa_lab.topk_select(s, 3).tolist() == [[0, 1, 2]]  # contract order: torch.topk on CPU differs


def test_triton_without_gpu_or_interpreter_is_refused(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="needs a CUDA tensor or the Triton interpreter"):
        dsa_lab.topk_select(S, 4, impl="triton")


def test_row_strided_views_are_accepted():
    big = torch.randn(4, 100)
    view = big[:, 10:74]  # row stride 100, unit column stride
    ref = dsa_lab.topk_select(view.contiguous(), 8, lengths=L, impl="reference")
    assert torch.equal(dsa_lab.topk_select(view, 8, lengths=L, impl="reference"), ref)


@pytest.mark.parametrize("name,call,exc,match", TABLE, ids=[t[0] for t in TABLE])
def test_bad_input(name, call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def render_table() -> str:
    lines = ["# Bad inputs and the errors they get", "",
             "Generated from `tests/test_validation.py` (`python tests/test_validation.py > docs/validation.md`); "
             "the test suite checks every row.", "",
             "| input | error | message (regex) |", "| --- | --- | --- |"]
    for name, _, exc, match in TABLE:
        lines.append(f"| {name} | `{exc.__name__}` | `{match.replace('|', '/')}` |")
    lines += ["", "Value checks that read device tensors (negative lengths/ends, starts past ends, flag ids) are "
              "skipped while a CUDA graph is being captured (a host read is illegal there); the kernels then clamp "
              "lengths to [0, width]."]
    return "\n".join(lines) + "\n"


def test_docs_table_is_current():
    path = os.path.join(os.path.dirname(__file__), "..", "docs", "validation.md")
    with open(path) as f:
        assert f.read() == render_table(), "regenerate: python tests/test_validation.py > docs/validation.md"


if __name__ == "__main__":
    sys.stdout.write(render_table())


def test_auto_resolution_per_device(monkeypatch):
    """'auto' on a CUDA tensor takes the stage's auto_gpu arm (triton unless a stage asks otherwise); the
    environment override still wins; CPU tensors are unaffected."""
    import torch as _t

    from dsa_lab import _impl

    cuda, cpu = _t.device("cuda"), _t.device("cpu")
    arms = ("reference", "torch", "triton", "triton_unfused")
    monkeypatch.delenv("DSA_LAB_IMPL", raising=False)
    assert _impl.resolve("auto", cuda, arms) == "triton"
    assert _impl.resolve("auto", cuda, arms, auto_gpu="torch") == "torch"
    assert _impl.resolve("triton", cuda, arms, auto_gpu="torch") == "triton"
    monkeypatch.setenv("DSA_LAB_IMPL", "triton_unfused")
    assert _impl.resolve("auto", cuda, arms, auto_gpu="torch") == "triton_unfused"
    monkeypatch.delenv("DSA_LAB_IMPL")
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert _impl.resolve("auto", cpu, arms, auto_gpu="torch") == "torch"
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert _impl.resolve("auto", cpu, arms, auto_gpu="torch") == "triton"
