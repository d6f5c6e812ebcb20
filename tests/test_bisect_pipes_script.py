"""scripts/gpu_bisect_pipes.py, host side: reading ``ncu --csv --page raw`` into one record row per case and counter.

The profile itself needs a GPU and Nsight Compute; what is checked here is which counters are kept and that the
profiled launches are matched to the cases in order (a count that does not match is refused)."""
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("gpu_bisect_pipes", os.path.join(ROOT, "scripts", "gpu_bisect_pipes.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_rows_from_ncu_keeps_counters_in_launch_order(probe):
    table = [["Kernel Name", "device__attribute_chip", "gpu__time_duration.sum", "launch__registers_per_thread",
              "smsp__inst_executed.sum"],
             ["", "", "ns", "register/thread", "inst"],
             ["_bisect_kernel", "384", "134,400", "128", "60,137,280"],
             ["_bisect_kernel", "384", "39,744", "128", "11,973,216"]]
    cases = probe.cases_of("640x2048xnormal,128x512xequal")
    assert cases == [(640, 2048, "normal"), (128, 512, "equal")]
    rows = probe.rows_from_ncu(table, cases, "abc1234")
    assert [(r["rows"], r["k"], r["dist"], r["metric"], r["unit"], r["value"]) for r in rows] == [
        (640, 2048, "normal", "gpu__time_duration.sum", "ns", "134400"),
        (640, 2048, "normal", "launch__registers_per_thread", "register/thread", "128"),
        (640, 2048, "normal", "smsp__inst_executed.sum", "inst", "60137280"),
        (128, 512, "equal", "gpu__time_duration.sum", "ns", "39744"),
        (128, 512, "equal", "launch__registers_per_thread", "register/thread", "128"),
        (128, 512, "equal", "smsp__inst_executed.sum", "inst", "11973216")]
    assert {r["commit"] for r in rows} == {"abc1234"} and {r["n"] for r in rows} == {32768}


def test_rows_from_ncu_refuses_a_launch_count_that_is_not_the_cases(probe):
    table = [["gpu__time_duration.sum"], ["ns"], ["1"]]
    with pytest.raises(ValueError, match="1 profiled launches for 2 cases"):
        probe.rows_from_ncu(table, probe.cases_of("640x2048xnormal,128x512xequal"), "x")
    with pytest.raises(ValueError, match="no profiled launch"):
        probe.rows_from_ncu(table[:2], [], "x")
