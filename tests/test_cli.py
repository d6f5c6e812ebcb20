"""The `dsa-lab` command: help, subcommand wiring, and verify's exit status and table."""
import subprocess
import sys

import pytest

from dsa_lab import cli
from dsa_lab.bench import verify
from dsa_lab.bench.shapes import MATRIX, make_inputs


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
    rc = cli.main(["verify", "--arms", "reference,torch", "--cases", "sel_constant,blk_starts", "--seed", "3",
                   "--no-progress"])
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


def test_matrix_shards_merge_to_the_whole_matrix(tmp_path, capsys):
    """Shards with one seed cover the selected cases once each; merge-matrix restores matrix order."""
    sel = "sel_k1,blk_zero_len,sel_zero_len"
    for i in range(2):
        rc = cli.main(["verify", "--arms", "reference", "--cases", sel, "--seed", "5", "--matrix-shard", f"{i}/2",
                       "--matrix-name", f"m{i}.csv", "--record", str(tmp_path), "--no-progress"])
        assert rc == 0
    out = tmp_path / "verify_matrix.csv"
    n = verify.merge_matrix_records([str(tmp_path / "m0.csv"), str(tmp_path / "m1.csv")], str(out))
    import csv

    rows = list(csv.DictReader(open(out)))
    names = [r["case"] for r in rows]
    want = [c.name for c in MATRIX if any(s in c.name for s in sel.split(","))]
    assert n == len(want) and names == want  # every case once, in matrix order
    assert (tmp_path / "verify_matrix.meta.json").exists()


@pytest.mark.parametrize("argv,msg", [(["--matrix-shard", "3"], "--matrix-shard must be I/N"),
                                      (["--matrix-shard", "2/2"], "0 <= I < N"),
                                      (["--fuzz", "1", "--fuzz-menu", "0,99"], "--fuzz-menu indices"),
                                      (["--fuzz", "1", "--fuzz-menu", "a"], "comma list of integers")])
def test_verify_rejects_bad_shard_and_menu(argv, msg, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["verify", "--no-progress"] + argv)
    assert e.value.code == 2 and msg in capsys.readouterr().err


def test_fuzz_menu_subset_and_dump(tmp_path, monkeypatch):
    """A fuzz restricted to menu entries draws only from them; a failing case is dumped for replay."""
    import torch

    real = verify.run_arm

    def broken(case, inp, arm):
        out = real(case, inp, arm)
        out[0, 0] = -7  # never a valid id: every case fails
        return out

    monkeypatch.setattr(verify, "run_arm", broken)
    fz = verify.fuzz(3, arms=("reference",), seed=2, device="cpu", max_width=64, max_rows=2, progress=False,
                     dump_dir=str(tmp_path), max_dumps=1, menu=[0])
    assert fz["menu"] == [0] and fz["arms"]["reference"]["mismatched_cases"] == 3
    assert all(f["case_spec"]["op"] == verify.FUZZ_MENU[0][0] for f in fz["failures"])
    d = torch.load(tmp_path / "fuzz_fail_1_reference.pt")
    assert d["got"][0, 0] == -7 and d["case_spec"]["op"] == "select" and "x" in d["inputs"]


def test_fuzz_merge_flattens_an_earlier_merge(tmp_path):
    """Shards added to a merged record join its shard list (not nested); counts, failures and commits add up."""
    import json

    def shard(name, n, bad, commit, seed):
        rec = {"meta": {"commit": commit, "command": f"verify --seed {seed}"}, "n": n, "seed": seed, "menu": [4],
               "arms": {"triton": {"cases": n, "mismatched_cases": bad}}, "failures": [{"seed": seed}] * bad}
        (tmp_path / name).write_text(json.dumps(rec))
        return str(tmp_path / name)

    first = verify.merge_fuzz_records([shard("a.json", 5, 0, "c0", 1), shard("b.json", 7, 1, "c0", 2)],
                                      str(tmp_path / "m.json"))
    assert first["n"] == 12 and len(first["shards"]) == 2
    rec = verify.merge_fuzz_records([str(tmp_path / "m.json"), shard("c.json", 4, 0, "c1", 3)],
                                    str(tmp_path / "m2.json"))
    assert rec["n"] == 16 and [s["seed"] for s in rec["shards"]] == [1, 2, 3]
    assert rec["arms"]["triton"] == {"cases": 16, "mismatched_cases": 1} and rec["failures"] == [{"seed": 2}]
    assert rec["meta"]["commit"] == "c0" and rec["meta"]["commits"] == ["c0", "c1"]
    assert [s["commit"] for s in rec["shards"]] == ["c0", "c0", "c1"]
    assert rec["shards"][2]["command"] == "verify --seed 3"
