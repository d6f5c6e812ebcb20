"""dsa_lab.workbook.proofs: the key-order checks find nothing on the real keys and catch a broken layout."""
import json

import pytest
import torch

from dsa_lab import keys
from dsa_lab.workbook import proofs


def test_enumeration_counts():
    assert proofs.NON_NAN_COUNT + proofs.NAN_COUNT == 2**32
    pos = torch.tensor([0, proofs.NEG_COUNT - 1, proofs.NEG_COUNT, proofs.NON_NAN_COUNT - 1])
    assert [hex(v) for v in proofs._enum_bits(pos).tolist()] == ["0xff800000", "0x80000000", "0x0", "0x7f800000"]


def test_structured_check_clean():
    r = proofs.structured_key_order_check(samples_per_exponent=8, random_samples=4096)
    assert r["pairs_checked"] == r["non_nan_checked"] - 1 > 512 * 8
    assert r["nan_checked"] > 0
    assert all(not v for v in r["violations"].values()), r
    assert r["violations"]["triton_helpers"] == 0  # the kernels' tl_pack_key compared (a GPU or the interpreter)


def test_structured_check_deterministic():
    a = proofs.structured_key_order_check(samples_per_exponent=4, random_samples=1000)
    b = proofs.structured_key_order_check(samples_per_exponent=4, random_samples=1000)
    fields = ("patterns_checked", "violations")
    assert {k: a[k] for k in fields} == {k: b[k] for k in fields}


def test_exhaustive_prefix_and_record(tmp_path):
    r = proofs.exhaustive_key_order_check("cpu", 1 << 16, time_budget_s=0.5, check_triton=False)
    assert r["complete"] is False and r["patterns_checked"] > 0
    assert all(not v for v in r["violations"].values() if v is not None)
    for key in ("gpu", "torch", "triton", "commit", "date", "command", "device", "chunk", "schema"):
        assert key in r
    p = tmp_path / "h" / "key_order_exhaustive.json"
    proofs.save_record(r, p)
    assert json.loads(p.read_text())["patterns_checked"] == r["patterns_checked"]
    assert proofs.load_record(p) == json.loads(p.read_text())
    assert proofs.load_record(tmp_path / "absent.json") is None
    assert "NO RECORD" in proofs.summarize_record(None, "x.json")
    assert "complete: False" in proofs.summarize_record(r, "x.json")


def test_exhaustive_nan_tail_chunks():
    """The NaN phase runs and is checked (start from the end of the enumeration)."""
    bits = torch.arange(0x7F800001, 0x7F800001 + 5000, dtype=torch.int64)
    v = proofs.single_violations(bits)
    assert all(int(m.sum()) == 0 for m in v.values())


@pytest.mark.parametrize("mutation", ["no_sign_flip", "index_not_inverted", "nan_not_top"])
def test_checks_catch_a_broken_layout(monkeypatch, mutation):
    """A deliberately wrong key layout is reported by the same checks."""
    real_hi = keys.ordered_hi
    real_pack = keys.pack_keys
    if mutation == "no_sign_flip":  # negative floats ordered by magnitude: wrong
        monkeypatch.setattr(keys, "ordered_hi", lambda x: x.contiguous().view(torch.int32).to(torch.int64))
    elif mutation == "index_not_inverted":  # ties to the larger index: wrong
        def pack(s, i):
            return (real_hi(s) << 32) | torch.broadcast_to(i.to(torch.int64), s.shape)
        monkeypatch.setattr(keys, "pack_keys", pack)
    else:  # NaN keeps its bits: -NaN would rank at the bottom
        def hi(x):
            s = x.contiguous().view(torch.int32).to(torch.int64)
            return torch.where(s >= 0, s, s ^ 0x7FFFFFFF)
        monkeypatch.setattr(keys, "ordered_hi", hi)
    r = proofs.structured_key_order_check(samples_per_exponent=4, random_samples=2000)
    assert any(v for v in r["violations"].values()), (mutation, r["violations"])
    assert r["first_violations"]
    del real_pack


def test_special_key_table():
    t = proofs.special_key_table(index=5)
    assert len(t) == len(proofs.SPECIAL_VALUES)
    assert t[0]["rank"] == 0 and "NaN" in t[0]["value"]
    assert t[-1]["value"].startswith("-inf") and t[-1]["candidate"] is False
    assert all(r["index_back"] == 5 for r in t)
    nan_rows = [r for r in t if "NaN" in r["value"]]
    assert {r["key"] for r in nan_rows} == {"0x7FFFFFFFFFFFFFFA"}
    ranks = [r["rank"] for r in t]
    assert ranks == sorted(ranks)
    keys_signed = [r["key_signed"] for r in t]
    assert keys_signed == sorted(keys_signed, reverse=True)
    zero = {r["value"]: r["key_signed"] for r in t}
    assert zero["+0.0"] > zero["-0.0"]


@pytest.mark.gpu
def test_exhaustive_full_on_gpu():
    r = proofs.exhaustive_key_order_check("cuda")
    assert r["complete"] and r["patterns_checked"] == 2**32
    assert all(not v for v in r["violations"].values()), r["violations"]
