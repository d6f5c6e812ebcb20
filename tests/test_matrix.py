"""The named correctness matrix (dsa_lab.shapes.MATRIX) through the Triton arm: interpreter-sized on the CPU,
full-sized under the `gpu` marker.  Fresh inputs each run (the seed is printed on failure); outputs are
poisoned before the call and every slot of every row is compared with the exact reference."""
import pytest
import torch

from dsa_lab import verify
from dsa_lab.shapes import MATRIX

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
