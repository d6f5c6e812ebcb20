"""dsa_lab.workbook.dev_runs: the dev runs' tables (A/B per point, variants, counters, what we tried)."""
import csv

from dsa_lab.workbook import dev_runs


def test_radix_dev_rows():
    rows = [{"k": 2048, "dist": "normal", "context": 4096, "rows": 1, "arm": a, "median_us": v, "check": c}
            for a, v, c in (("torch", 60.0, ""), ("triton", 20.0, ""), ("radix_t2048", 5.0, "ok"),
                            ("radix_t4096", 10.0, "ok"))]
    rows += [{"k": 64, "dist": "normal", "context": 4096, "rows": 1, "arm": a, "median_us": v, "check": "ok"}
             for a, v in (("torch", 40.0), ("triton", 2.0), ("radix_t2048", 8.0))]
    t = dev_runs.radix_dev_rows(rows)
    assert [r["k"] for r in t] == [2048, 64]
    assert t[0]["radix_us"] == "5.0" and t[0]["radix_vs_hier"] == "4.00x" and t[0]["radix_vs_torch"] == "12.00x"
    assert t[1]["radix_vs_hier"] == "0.25x" and t[0]["check"] == "ok"


def test_variant_rows():
    rows = [{"stage": "select", "k": 2048, "dist": d, "context": 262144, "rows": 1, "arm": a, "median_us": v,
             "check": c}
            for d, a, v, c in (("normal", "torch", 60.0, ""), ("normal", "hier", 340.0, "ok"),
                               ("normal", "r30", 170.0, "ok"), ("normal", "r32", 103.0, "ok"),
                               ("equal", "torch", 61.0, ""), ("equal", "r30", 200.0, "ok"),
                               ("equal", "r32", 350.0, "mismatch 1/1"))]
    rows.append({"stage": "select", "k": 64, "dist": "normal", "context": 4096, "rows": 1, "arm": "r30",
                 "median_us": 9.0,
                 "check": "ok"})
    t = dev_runs.variant_rows(rows, ["torch", "hier", "r30", "r32"], k=2048)
    assert [(r["dist"], r["rows"]) for r in t] == [("normal", 1), ("equal", 1)]
    assert t[0]["fastest"] == "torch" and t[0]["r32"] == "103.0" and t[0]["checks"] == "ok"
    assert t[1]["hier"] == "—" and t[1]["checks"] == "FAILED"
    t = dev_runs.variant_rows(rows, ["hier", "r30", "r32"], k=2048, dist="normal")
    assert len(t) == 1 and t[0]["fastest"] == "r32"
    assert dev_runs.variant_rows(rows, ["r30"], stage="full") == []
    # timing-only arms (parts of a kernel, W's t_*) are not failures; a run without a dist column counts as normal
    part = [{"k": 64, "context": 4096, "rows": 32, "arm": a, "median_us": v, "check": c}
            for a, v, c in (("default", 5.0, "ok"), ("t_stage_a", 2.0, "timing only"))]
    t = dev_runs.variant_rows(part, ["default", "t_stage_a"], dist="normal")
    assert len(t) == 1 and t[0]["checks"] == "ok + timing only" and t[0]["fastest"] == "default"
    assert t[0]["t_stage_a"] == "2.0"  # shown, but a part of a kernel is never the fastest
    part.append({"k": 64, "context": 4096, "rows": 32, "arm": "bad", "median_us": 1.0, "check": "mismatch 1/32"})
    assert dev_runs.variant_rows(part, ["default"])[0]["checks"] == "FAILED"


def test_stagea_rows():
    def row(v, n, us, P=4, nw=4, check="ok"):
        return {"variant": v, "rows": n, "context": 262144, "P": P, "NT": 8, "num_warps": nw, "median_us": us,
                "gbps": n * 262144 * 4 / (us * 1e3), "check": check}
    rows = [row("read", 640, 150.0, check="timing-only"), row("read", 640, 160.0, P=8, check="timing-only"),
            row("cur", 640, 330.0), row("cur", 640, 300.0, nw=8), row("flat_hi", 640, 180.0, P=8, nw=8),
            row("flat_hi", 640, 170.0, check="MISMATCH l1 3"), row("cur", 32, 20.0)]
    t = dev_runs.stagea_rows(rows)
    assert [(r["rows"], r["variant"]) for r in t] == [(640, "cur"), (640, "flat_hi"), (640, "read"), (32, "cur")]
    cur, hi, rd, small = t
    assert cur["median_us"] == "300.0" and cur["config"] == "P 4 / NT 8 / nw 8" and cur["x read"] == "2.00"
    assert cur["check"] == "ok" and rd["check"] == "timing-only" and rd["x read"] == "1.00"
    assert hi["median_us"] == "170.0" and hi["check"] == "MISMATCH l1 3"  # a failing configuration is shown
    assert small["x read"] == "—"  # no load-only row for that shape


def test_old_new_rows_pair_by_point():
    """The older package's time beside this tree's at the same point, whatever the row order; a point without its
    ``old`` row, and an absent record, are left out."""
    def row(arm, rows, us, ratio=None):
        return {"k": 2048, "rows": rows, "context": 262144, "arm": arm, "median_us": us, "ratio_vs_old": ratio}
    rec = ([row("new", 640, 140.0, 0.85), row("new", 1, 16.0, 0.75), row("old", 1, 21.3), row("old", 640, 165.0),
            row("new", 5, 18.0, 0.79)], {}, "x.csv")
    got = dev_runs.old_new_rows([rec, (None, None, "absent.csv")])
    assert [(r["rows"], r["previous_us"], r["current_us"], r["ratio"]) for r in got] == [(640, 165.0, 140.0, 0.85),
                                                                                        (1, 21.3, 16.0, 0.75)]


def test_pipe_rows_one_line_per_case():
    """The counters record, one line per case in its order: time in µs, warp instructions per row, the ALU share,
    the pipe and issue percentages, eligible / resident warps, and the largest stalls without ``selected``."""
    st = "smsp__average_warps_issue_stalled_"
    def case(rows, k, us, inst, alu, stalls):
        m = {"gpu__time_duration.sum": us * 1000, "smsp__inst_executed.sum": inst,
             "smsp__inst_executed_pipe_alu.sum": alu,
             "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active": 57.8,
             "smsp__issue_active.avg.pct_of_peak_sustained_active": 45.9,
             "smsp__warps_eligible.avg.per_cycle_active": 1.19, "smsp__warps_active.avg.per_cycle_active": 4.0,
             "launch__registers_per_thread": 128}
        m.update({f"{st}{why}_per_issue_active.ratio": v for why, v in stalls.items()})
        return [{"rows": rows, "n": 32768, "k": k, "dist": "normal", "metric": name, "value": v}
                for name, v in m.items()]
    rec = (case(640, 2048, 134.4, 640 * 94000, 640 * 60000, {"selected": 1.0, "not_selected": 1.59, "wait": 1.37,
                                                             "barrier": 0.47, "math_pipe_throttle": 1.44})
           + case(128, 512, 39.7, 128 * 93000, 128 * 62000, {"no_instruction": 4.8, "selected": 1.0}))
    got = dev_runs.pipe_rows(rec, stalls=3)
    assert [r["case"] for r in got] == ["640 x 32768, k = 2048, normal", "128 x 32768, k = 512, normal"]
    assert got[0]["µs"] == 134.4 and got[0]["warp instr / row"] == 94000 and got[0]["ALU share"] == 0.64
    assert got[0]["eligible / resident warps"] == "1.19 / 4.00"
    assert got[0]["stalls (cycles / issue)"] == "not_selected 1.59, math_pipe_throttle 1.44, wait 1.37"
    assert got[1]["stalls (cycles / issue)"] == "no_instruction 4.80"


def test_ab_ratios_and_tried_rows(tmp_path):
    rows = [{"stage": "full", "k": 64, "dist": "normal", "context": c, "rows": n, "arm": a, "median_us": v,
             "check": "ok"}
            for c, n, a, v in ((4096, 1, "base", 10.0), (4096, 1, "c1", 12.0), (4096, 1, "c2", 11.0),
                               (4096, 32, "base", 20.0), (4096, 32, "c1", 10.0),
                               (65536, 1, "base", 10.0))]  # no candidate at this point: left out
    rows.append({"stage": "select", "k": 64, "dist": "normal", "context": 4096, "rows": 1, "arm": "c1",
                 "median_us": 1.0, "check": "ok"})
    assert dev_runs.ab_ratios(rows, "base", "c1", stage="full") == [1.2, 0.5]
    assert dev_runs.ab_ratios(rows, "base", ("c1", "c2"), stage="full") == [1.1, 0.5]  # the faster candidate per point
    assert dev_runs.ab_ratios(rows, "base", "c1", stage="full", rows=(32, 640)) == [0.5]
    assert dev_runs.ab_ratios(rows, "base", "c1", stage="select") == []
    d = tmp_path / "h200" / "tune_dev"
    d.mkdir(parents=True)
    with open(d / "run1.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    t = dev_runs.tried_rows([("opt", "what", "deleted", [("tune_dev/run1", "full", "base", "c1")]),
                        ("gone", "what", "deleted", [("tune_dev/absent", "full", "base", "c1")])], root=tmp_path)
    assert list(t[0]) == ["option", "what it was", "candidate / baseline time", "verdict", "records"]
    assert t[0]["candidate / baseline time"] == "full: median 0.85x, 0.50–1.20x, slower at 1 of 2"
    assert t[0]["records"].endswith("run1.csv") and t[0]["verdict"] == "deleted"
    assert t[1]["candidate / baseline time"].startswith("NO RECORD") and t[1]["records"] == "—"


def test_dist_spread_rows_per_draw_ratio():
    def row(seed, dist, us, arm="triton", check="ok", k=512, n=128):
        return {"k": k, "rows": n, "seed": seed, "dist": dist, "arm": arm, "median_us": us, "check": check}

    rows = [row(0, "normal", 20.0), row(0, "equal", 16.0), row(0, "nan1pct", 25.0),
            row(1, "normal", 19.0), row(1, "equal", 17.0), row(1, "nan1pct", 18.0),
            row(2, "normal", 18.0), row(2, "equal", 15.0), row(2, "nan1pct", 16.0),
            row(0, "normal", 99.0, arm="torch", check="baseline"),
            row(1, "ramp", 1.0, check="mismatch:1/128"),  # a wrong answer never counts as the fastest
            row(0, "normal", 30.0, k=2048), row(0, "equal", 30.0, k=2048)]
    by = {(r["k"], r["rows"]): r for r in dev_runs.dist_spread_rows(rows)}
    r = by[(512, 128)]
    assert r["draws"] == 3
    assert (r["ratio_min"], r["ratio_median"], r["ratio_max"]) == (round(19 / 17, 3), 1.2, round(25 / 16, 3))
    assert r["draws_over_1.2"] == 1  # 1.2 itself is within the target
    assert r["fastest_us"] == "15.00-17.00" and r["slowest_us"] == "18.00-25.00"
    assert r["slowest_dist"] == "normal 2, nan1pct 1"
    assert by[(2048, 128)]["ratio_max"] == 1.0
