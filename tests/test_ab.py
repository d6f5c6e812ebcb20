"""`dsa-lab ab`: every stage and kind of arm through the interpreter at tiny shapes (plumbing, not timing), and the
check that a wrong arm is caught before anything is timed."""
import shutil
from pathlib import Path

import pytest
import torch

from dsa_lab import cli
from dsa_lab.bench import data
from dsa_lab.bench.ab import arms as ab_arms

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def old_dir(tmp_path_factory):
    """A folder holding ``dsa_lab_old/``: a copy of this tree's package under another name."""
    d = tmp_path_factory.mktemp("ab")
    shutil.copytree(ROOT / "dsa_lab", d / "dsa_lab_old", ignore=shutil.ignore_patterns("__pycache__"))
    return d


def test_rows_are_concurrency_by_next_n():
    assert ab_arms.parse_rows("1,32,128x5") == [(1, 1), (32, 1), (128, 5)]


def test_profile_summary_timeline():
    """Each kernel's mean time, the call's median span and its launches' median start and end from the call's first
    kernel start, from two replays given out of order (a dependent launch starting before the one before ends)."""
    from types import SimpleNamespace as NS

    def ev(name, start, end):
        return NS(name=f"{name}(int, float)", time_range=NS(start=start, end=end))

    replays = [[ev("a", 0, 10), ev("b", 8, 30), ev("c", 28, 40)],
               [ev("a", 100, 112), ev("b", 110, 134), ev("c", 131, 146)]]
    by, span, line = ab_arms.profile_summary([e for r in replays for e in r][::-1], reps=2)
    assert by == {"a": 11, "b": 23, "c": 13.5}
    assert span == 43  # median of 40 and 46
    assert line == [("a", 0, 11), ("b", 9, 32), ("c", 29.5, 43)]


def _ab(tmp_path, *argv):
    out = tmp_path / "ab.csv"
    assert cli.main(["ab", str(out), *argv]) == 0
    return data.load_rows(out), data.load_meta(data.meta_path(out))


def test_select_stage_every_kind_of_arm(tmp_path, old_dir):
    rows, meta = _ab(tmp_path, "--old", str(old_dir), "--stage", "select", "--mml", "1024", "--widths", "256",
                     "--rows", "1x2", "--k", "8", "--arms", "new,old,torch,torch_live,radix,bisect8",
                     "--dist", "normal,ramp", "--reps", "1", "--seed", "3")
    assert [r["arm"] for r in rows] == ["new", "old", "torch", "torch_live", "radix", "bisect8"] * 2
    assert {r["dist"] for r in rows} == {"normal", "ramp"} and all(r["rows"] == 2 and r["next_n"] == 2 for r in rows)
    assert all(r["check"] == "ok" for r in rows if r["arm"] not in ("torch", "torch_live")), rows  # CPU ties aside
    assert all(r["ratio_vs_first"] == 1 for r in rows if r["arm"] == "new")
    assert meta["stage"] == "select" and set(meta["trees"]) == {"new", "old"}


def test_full_stage_checks_ids_and_flags(tmp_path, old_dir):
    rows, _ = _ab(tmp_path, "--old", str(old_dir), "--stage", "full", "--mml", "1024", "--widths", "512",
                  "--rows", "2", "--k", "8", "--arms", "old,new,hier", "--reps", "0")
    assert [r["arm"] for r in rows] == ["old", "new", "hier"] and all(r["bad"] == 0 for r in rows), rows
    assert all(r["median_us"] is None for r in rows)  # --reps 0: checked, not timed


def test_a_wrong_arm_is_caught(monkeypatch):
    inp = ab_arms.inputs("topk", 3, 1, 64, 8, "normal", 1, "cpu", mml=1024, ragged=True)
    ref_ids, _ = ab_arms.reference("topk", inp, 8)
    good = ab_arms.arm_fn("new", "topk", inp, 8, None)
    assert ab_arms.check(good, ref_ids, None) == 0
    lazy = torch.full((3, 8), -7, dtype=torch.int32)
    assert ab_arms.check(lambda: lazy, ref_ids, None) == 3  # writes nothing: every row differs
    off = ref_ids.clone()
    off[1, 0] = (off[1, 0] + 1) % 64
    assert ab_arms.check(lambda: off.clone(), ref_ids, None) == 1


def test_producer_stage(tmp_path, old_dir):
    rows, meta = _ab(tmp_path, "--old", str(old_dir), "--stage", "producer", "--mml", "512", "--widths", "200",
                     "--rows", "1x2", "--arms", "new,old+f,new:BLOCK_T=32", "--reps", "1")
    assert [r["arm"] for r in rows] == ["new", "old+f", "new:BLOCK_T=32"]
    assert all(r["check"] == "ok" and r["next_n"] == 2 for r in rows), rows
    assert "ceilings" in meta and set(meta["trees"]) == {"new", "old"}


def test_topk_stage_ragged_rows(tmp_path, old_dir):
    rows, _ = _ab(tmp_path, "--old", str(old_dir), "--stage", "topk", "--widths", "300", "--rows", "3", "--k", "16",
                  "--ragged", "--arms", "old,triton,bisect16", "--reps", "1")
    assert [(r["arm"], r["width"], r["check"]) for r in rows] == [(a, 300, "ok") for a in ("old", "triton", "bisect16")]


def test_topk_stage_plan_variant(tmp_path, old_dir):
    """``TREE:FIELD=V``: the tree's own plan for the point with a field replaced, checked like every arm; a field the
    plan does not have is named in the error."""
    rows, _ = _ab(tmp_path, "--old", str(old_dir), "--stage", "topk", "--widths", "300", "--rows", "3", "--k", "16",
                  "--arms", "new,old:num_warps=4", "--reps", "1")
    assert [(r["arm"], r["check"]) for r in rows] == [("new", "ok"), ("old:num_warps=4", "ok")]
    from dsa_lab import _impl, plans

    facts = _impl.facts_for(torch.empty(0))
    base = plans.select(3, 300, 16, facts)
    _, pl = ab_arms.plan_variant("new:num_warps=2", 3, 300, 16, facts, None)
    assert pl.num_warps == 2 and pl.num_warps != base.num_warps and type(pl) is type(base)
    with pytest.raises(ValueError, match="no field NCH"):
        ab_arms.plan_variant("new:NCH=8", 3, 300, 16, facts, None)
    with pytest.raises(ValueError, match="TREE:FIELD=V"):
        ab_arms.plan_variant("new:NCH", 3, 300, 16, facts, None)
