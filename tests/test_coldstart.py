"""`dsa-lab coldstart`: its shapes (the GPU run itself is a record: data/h200/coldstart.csv)."""
from dsa_lab import warmup
from dsa_lab.bench import coldstart


def test_shapes_are_seeded_and_none_is_a_warm_list_call():
    a, b = coldstart.shapes(48, 3), coldstart.shapes(48, 3)
    assert a == b and a != coldstart.shapes(48, 4)
    assert [s["entry"] for s in a[:4]] == ["select", "full", "select", "full"]
    assert all(s["k"] in coldstart.KS and 1 <= s["rows"] <= 640 for s in a)
    assert all(not s["flags"] for s in a if s["entry"] == "select") and any(s["flags"] for s in a)
    warm = {(c.entry, c.rows, c.width, c.k) for c in warmup.warm_calls(max_rows=640)}
    assert not any((s["entry"], s["rows"], s["width"], s["k"]) in warm for s in a)


def test_long_shapes_take_the_long_row_select():
    from dsa_lab import plans

    a = coldstart.shapes(32, 5, long=True)
    assert a == coldstart.shapes(32, 5, long=True)
    for s in a:
        assert s["entry"] == "select" and 32768 < s["width"] < 262144 and 256 < s["k"] <= 2048
        assert plans.select_algo(s["rows"], s["width"], s["k"], 132) == "longrow"
