"""The `dsa-lab` command: help, subcommand wiring, and verify's exit status and table."""
import subprocess
import sys

import pytest

from dsa_lab import cli, verify
from dsa_lab.shapes import MATRIX, make_inputs


def test_help_lists_subcommands(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for name in cli.SUBCOMMANDS:
        assert name in out


def test_console_script_runs():
    r = subprocess.run([sys.executable, "-m", "dsa_lab.cli", "verify", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--fuzz" in r.stdout


def test_verify_reference_arm_passes_and_prints_table(capsys):
    rc = cli.main(["verify", "--arms", "reference,torch", "--cases", "sel_constant,blk_starts", "--seed", "3", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "sel_constant" in out and "blk_starts" in out
    assert "(cpu)" in out  # CPU torch.topk departs from the contract on tied rows: reported, not failed


def test_verify_fails_on_a_wrong_arm(monkeypatch, capsys):
    real = verify.run_arm

    def broken(case, inp, arm):
        out = real(case, inp, arm)
        if arm == "reference":
            out[0, 0] = -1  # drop one selected id
        return out

    monkeypatch.setattr(verify, "run_arm", broken)
    rc = cli.main(["verify", "--arms", "reference", "--cases", "sel_k100", "--seed", "1", "--no-progress"])
    assert rc == 1
    assert "FAIL sel_k100 [reference]" in capsys.readouterr().out


def test_compare_reports_first_mismatch():
    import torch

    got = torch.tensor([[1, 2, -1], [5, 6, 7]], dtype=torch.int32)
    ref = torch.tensor([[2, 1, -1], [5, 6, 8]], dtype=torch.int32)
    n, msg = verify.compare(got, ref)
    assert n == 1 and msg.startswith("row 1") and "missing [8]" in msg and "extra [7]" in msg


@pytest.mark.parametrize("case", MATRIX, ids=[c.name for c in MATRIX])
def test_matrix_cases_build_at_cpu_size(case):
    c = case.sized("cpu")
    inp = make_inputs(c, seed=0)
    assert inp["x"].shape == (c.rows, c.width)
    assert inp["ends"].shape == (c.rows // c.row_repeat,)
    assert c.width <= 4096 and c.rows <= 10
