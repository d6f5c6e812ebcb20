"""The named correctness matrix (dsa_lab.bench.shapes.MATRIX) through the Triton arm: interpreter-sized on the CPU,
full-sized under the `gpu` marker.  Fresh inputs each run (the seed is printed on failure); outputs are
poisoned before the call and every slot of every row is compared with the exact reference."""
import pytest
import torch

from dsa_lab.bench import verify
from dsa_lab.bench.shapes import MATRIX

SCALE = "gpu" if torch.cuda.is_available() else "cpu"


@pytest.mark.parametrize("case", MATRIX, ids=[c.name for c in MATRIX])
def test_matrix_triton_arm(case, fresh_seed, device):
    (r,) = verify.run_case(case.sized("cpu"), ("triton",), seed=fresh_seed, device=device)
    assert not r["error"], r["error"]
    assert r["bad_rows"] == 0, f"seed {fresh_seed}: {r['first_mismatch']}"


@pytest.mark.gpu
@pytest.mark.parametrize("case", MATRIX, ids=[c.name for c in MATRIX])
def test_matrix_gpu_size_both_arms(case, fresh_seed):
    for r in verify.run_case(case.sized("gpu"), ("triton", "torch"), seed=fresh_seed, device="cuda"):
        assert not r["error"], r["error"]
        assert r["bad_rows"] == 0, f"[{r['arm']}] seed {fresh_seed}: {r['first_mismatch']}"


FUSED_CASES = [c for c in MATRIX if verify.arm_serves("triton_fused", c)]


def test_fused_arm_serves_the_candidate_block_cases_it_can():
    assert FUSED_CASES and all(c.op == "blocks" for c in FUSED_CASES)
    assert not any(verify.arm_serves(a, c) for a in ("triton_unfused", "triton_fused")
                   for c in MATRIX if c.op != "blocks")
    assert all(not verify.arm_serves("triton_fused", c)
               for c in MATRIX if c.op == "blocks" and (c.k > 256 or c.block_size > 8))


@pytest.mark.parametrize("case", FUSED_CASES, ids=[c.name for c in FUSED_CASES])
def test_matrix_fused_arm(case, fresh_seed, device):
    (r,) = verify.run_case(case.sized("cpu"), ("triton_fused",), seed=fresh_seed, device=device)
    assert not r["error"], r["error"]
    assert r["bad_rows"] == 0, f"seed {fresh_seed}: {r['first_mismatch']}"
