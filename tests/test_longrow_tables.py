"""dsa_lab.workbook.longrow: the token-level top-k tables, on synthetic rows and on the committed H100 records."""
import json

from dsa_lab import plans
from dsa_lab.workbook import longrow, records


def _row(shape, rows, width, k, arm, us, lengths="full", dist="normal", bad="", x_floor=2.0):
    return {"shape": shape, "rows": rows, "width": width, "k": k, "lengths": lengths, "dist": dist, "arm": arm,
            "median_us": us, "bad": bad, "x_floor": x_floor}


def test_speedups_points_and_versions():
    rows = [_row("grid", 1, 65536, 2048, "torch", 60.0), _row("grid", 1, 65536, 2048, "triton", 30.0, bad=0),
            _row("grid", 8, 65536, 2048, "torch", 90.0), _row("grid", 8, 65536, 2048, "triton", 90.0, bad=2),
            _row("laws", 64, 262144, 2048, "torch", 300.0, dist="band"),
            _row("laws", 64, 262144, 2048, "triton", 400.0, dist="band", x_floor=14.0)]
    assert longrow.bad_rows(rows) == 2
    (s,) = longrow.speedup_summary(rows)
    assert (s["k"], s["width"], s["points"], s["median_x"], s["min_x"], s["max_x"]) == (2048, 65536, 2, "1.50",
                                                                                         "1.00", "2.00")
    (p,) = longrow.point_rows(rows, "laws")
    assert p["dist"] == "band" and p["speedup"] == "0.75x" and p["x_floor"] == "14.0" and "x_normal" not in p
    laws = rows + [_row("laws", 64, 262144, 2048, a, us) for a, us in (("torch", 290.0), ("triton", 80.0))]
    laws += [_row("laws", 640, 65536, 2048, a, us, dist="equal") for a, us in (("torch", 600.0), ("triton", 99.0))]
    got = {(p["rows"], p["dist"]): p["x_normal"] for p in longrow.point_rows(laws, "laws")}
    assert got == {(64, "band"): "5.00", (64, "normal"): "1.00", (640, "equal"): "—"}
    assert all("x_normal" not in p for p in longrow.point_rows(laws[-4:-2], "laws"))  # normal values alone
    old = [dict(r, median_us=r["median_us"] / 2) if r["arm"] == "triton" else r for r in rows]
    v = longrow.versions_rows(old, rows, shape="grid", where={"rows": 8})
    assert len(v) == 1 and (v[0]["old_us"], v[0]["old_x"], v[0]["new_us"], v[0]["new_x"]) == ("45.0", "2.00",
                                                                                                 "90.0", "1.00")


def test_crossover_rows_name_the_rule():
    rows = [_row("crossover", 1, 40000, 2048, a, us) for a, us in (("torch", 66.0), ("radix", 26.0),
                                                                     ("longrow", 78.0))]
    rows += [_row("crossover", 64, 262144, 2048, a, us) for a, us in (("torch", 288.0), ("radix", 663.0),
                                                                        ("longrow", 249.0))]
    out = longrow.crossover_rows(rows, sm_count=132)
    assert [(r["rows"], r["faster"], r["rule"]) for r in out] == [(1, "radix", "radix"), (64, "longrow", "longrow")]


def test_stage_rows_split_a_profiled_call():
    rows = [{"arm": "new", "rows": 64, "width": 262144, "k": 2048, "median_us": 101.8,
             "kernels": "void at::native::x=1.0;_longrow_sample_kernel=12.0;_longrow_stream_kernel=83.9;"
                        "_longrow_finish_kernel=11.5"},
            {"arm": "new", "rows": 1, "width": 65536, "k": 2048, "median_us": 21.8, "kernels": "_radix_par_kernel=7.8"},
            {"arm": "torch", "rows": 64, "width": 262144, "k": 2048, "median_us": 290.0, "kernels": "x=1"}]
    (r,) = longrow.stage_rows(rows)
    assert (r["sample_us"], r["stream_us"], r["finish_us"], r["stream_GB/s"]) == ("12.0", "83.9", "11.5", "800")


def test_timeline_rows_place_the_launches():
    rows = [{"arm": "old", "rows": 640, "width": 262144, "k": 2048, "dist": "normal", "median_us": 389.2,
             "timeline": "_longrow_sample_kernel@0.0-33.7;_longrow_stream_kernel@24.3-348.6;"
                         "_longrow_finish_kernel@328.5-386.9"},
            {"arm": "old", "rows": 64, "width": 262144, "k": 2048, "dist": "band", "median_us": 71.9,
             "timeline": "_longrow_sample_kernel@0.0-12.6;_longrow_stream_kernel@1.2-56.1;"
                         "_longrow_finish_kernel@47.8-70.8"},
            {"arm": "new", "rows": 640, "width": 262144, "k": 2048, "dist": "normal", "median_us": 354.5,
             "timeline": "_longrow_sample_kernel@0.0-33.6;_longrow_stream_kernel@24.3-313.8;"
                         "_longrow_finish_kernel@271.9-352.2"},
            {"arm": "old", "rows": 1, "width": 65536, "k": 2048, "median_us": 21.8,
             "timeline": "_radix_par_kernel@0-7"}]
    (r,) = longrow.timeline_rows(rows)
    assert (r["stream"], r["finish"], r["before_us"], r["after_us"], r["stream_GB/s"]) == (
        "24.3-348.6", "328.5-386.9", "24.3", "38.3", "2069")
    assert [x["call_us"] for x in longrow.timeline_rows(rows, dist="band")] == ["71.9"]


def test_recorded_timeline_places_every_launch():
    """The committed H100 record of the current kernels: at every point the stream starts after the sample and the
    finish after the stream, the finish ends last, and the call's median lies within 10 % of the last launch's end."""
    rows, _, _ = records.load_records("longrow/ab/ab_v8_float", gpu="h100")
    out = longrow.timeline_rows(rows)
    assert len(out) == 16
    for r in out:
        (a0, a1), (s0, s1), (f0, f1) = (tuple(map(float, r[p].split("-"))) for p in ("sample", "stream", "finish"))
        assert a0 == 0 <= s0 <= f0 and a1 <= f1 and s1 <= f1, r
        assert 0.9 * float(r["call_us"]) <= f1 <= 1.1 * float(r["call_us"]), r


def test_recorded_stages_account_for_the_call():
    """The committed H100 profile: the three launches of each long-row point add up to about its call (they
    overlap a little under programmatic dependent launch)."""
    rows, _, _ = records.load_records("longrow/ab/ab_v3_regs", gpu="h100")
    out = longrow.stage_rows(rows)
    assert len(out) >= 6
    for r in out:
        parts = sum(float(r[f"{s}_us"]) for s in ("sample", "stream", "finish"))
        assert 0.8 * float(r["call_us"]) <= parts <= 1.5 * float(r["call_us"]), r


def test_peers_rows_ratios_each_against_its_own_torch():
    peers = [{"rows": 64, "width": 262144, "k": 2048, "peer": "P", "peer_us": 100.0, "torch_us": 300.0},
             {"rows": 4, "width": 163840, "k": 2048, "peer": "Q", "peer_us": 20.0, "torch_us": ""}]
    rows = [_row("grid", 64, 262144, 2048, "torch", 280.0), _row("grid", 64, 262144, 2048, "triton", 200.0)]
    a, b = longrow.peers_rows(peers, rows)
    assert (a["peer_x"], a["triton_us"], a["triton_x"], a["triton_vs_peer"]) == ("3.00", "200.0", "1.40", "0.50")
    assert (b["peer_x"], b["triton_us"]) == ("—", "—")
    # a record of another card: no time against the peer's, the speedups' ratio instead (none without the peer's)
    a, b = longrow.peers_rows(peers, rows + [_row("grid", 4, 163840, 2048, "torch", 90.0),
                                             _row("grid", 4, 163840, 2048, "triton", 30.0)], same_card=False)
    assert "triton_vs_peer" not in a and (a["triton_x"], a["triton_x_over_peer_x"]) == ("1.40", "0.47")
    assert (b["triton_x"], b["triton_x_over_peer_x"]) == ("3.00", "—")


def test_gpu_name_from_either_key():
    assert records.gpu_name({"gpu_name": "NVIDIA H200"}) == "NVIDIA H200"
    assert records.gpu_name({"gpu": {"name": "NVIDIA H100 80GB HBM3"}}) == "NVIDIA H100 80GB HBM3"
    assert records.gpu_name({"device": "cuda"}) is None and records.gpu_name(None) is None


def test_recorded_crossover_agrees_with_the_rule():
    """The committed H100 crossover (four widths, 1-64 rows, k = 512 / 2048; at 8741fed): the rule's 2^16 bound picks
    the faster kernel at every point but where the two are within 3 %; the 2^17 bound before it would pick the radix
    select at 64K, 1-8 rows, where the long-row one is up to 26 % faster."""
    rows, meta, _ = records.load_records("longrow/crossover", gpu="h100")
    out = longrow.crossover_rows(rows, sm_count=meta["sm_count"])
    assert len(out) == 56
    for r in out:
        if r["faster"] != r["rule"]:
            slow, fast = sorted((float(r["longrow_us"]), float(r["radix_us"])))
            assert fast <= 1.03 * slow, r
    old = [r for r in out if r["width"] < 2 * plans.LONGROW_MIN_WIDTH and r["faster"] == "longrow"
           and r["rows"] * r["width"] < plans.LONGROW_MIN_COLUMNS]
    assert max(float(r["radix_us"]) / float(r["longrow_us"]) for r in old) > 1.2


def test_streams_record_summary(tmp_path):
    p = tmp_path / "streams.json"
    p.write_text(json.dumps({"meta": {"gpu_name": "NVIDIA H100 80GB HBM3", "commit": "abcdef123",
                                      "date_utc": "2026-12-06T04:47"},
                             "cases": [{"case": "a", "path": "hier", "mode": "streams", "calls": 160, "mismatched": 3},
                                       {"case": "a", "path": "hier", "mode": "graphs", "calls": 160,
                                        "mismatched": 0}]}))
    s = records.summarize_verification(p)
    assert "2 case-modes, 320 calls, 3 mismatched" in s and "a (hier), streams: 3 of 160 calls differ" in s
    assert "NVIDIA H100 80GB HBM3" in s and "commit abcdef1" in s


def test_transcribed_label():
    assert records.record_label({"gpu_name": "G", "transcribed": True}, "x.csv").endswith(
        "(transcribed, not measured here)")
    assert "seed PR numbers" in records.record_label({"gpu_name": "G"}, "data/mi355x_seed/x.csv")


def _prof(arm, rows, stream):
    return {"arm": arm, "rows": rows, "width": 262144, "k": 2048, "median_us": stream + 20.0,
            "kernels": f"_longrow_sample_kernel=10.0;_longrow_stream_kernel={stream};_longrow_finish_kernel=10.0"}


def test_stream_parts_rows_one_column_per_tree():
    a = [_prof("old", 64, 84.9), _prof("old", 640, 678.1), _prof("pkg_x", 640, 457.2)]
    b = [_prof("pkg_y", 640, 272.9)]
    out = longrow.stream_parts_rows({"full": (a, "old"), "x": (a, "pkg_x"), "y": (b, "pkg_y")})
    assert [(r["rows"], r["full"], r["x"], r["y"]) for r in out] == [(64, "84.9", "—", "—"),
                                                                      (640, "678.1", "457.2", "272.9")]
    assert longrow.stream_parts_rows({"full": (a, "old")}, where={"rows": 640})[0]["full"] == "678.1"


def test_recorded_stream_parts_cost_more_than_the_count_alone():
    """The committed ablations (H100): every part taken out of the stream makes it faster, and the count alone is the
    fastest of them, so the table the notebook prints reads as what each part costs."""
    parts = records.load_records("longrow/ab/ab_v3_parts", gpu="h100")[0]
    vec = records.load_records("longrow/ab/ab_v3_vec", gpu="h100")[0]
    (r,) = longrow.stream_parts_rows({"full": (parts, "old"), "nohist": (parts, "pkg_nohist"),
                                      "nostore": (parts, "pkg_nostore"), "count": (vec, "pkg_nocold")},
                                     where={"rows": 640, "width": 262144})
    t = {k: float(r[k]) for k in ("full", "nohist", "nostore", "count")}
    assert t["count"] < t["nostore"] < t["nohist"] < t["full"]


def test_step_rows_pair_the_fused_step_with_torch():
    def row(arm, stage, us, bs=1, check="ok"):
        return {"arm": arm, "stage": stage, "context": 131072, "concurrency": 32, "next_n": 1, "k": 2048,
                "median_us": us, "block_size": bs, "check": check}
    rows = [row("fused", "logits", 200.0), row("fused", "candidates", 50.0), row("fused", "step", 250.0),
            row("torch", "select", 170.0), row("torch", "step", 500.0), row("fused", "step", 1.0, bs=8)]
    (r,) = longrow.step_rows(rows)
    assert (r["producer_us"], r["select_us"], r["step_us"], r["torch_step_us"], r["speedup"], r["check"]) == (
        "200.0", "50.0", "250.0", "500.0", "2.00x", "ok")
    (r8,) = longrow.step_rows(rows, block_size=8)
    assert r8["step_us"] == "1.0" and r8["torch_step_us"] == "—" and r8["speedup"] == "—"


def test_recorded_v32_step_checks_every_point():
    rows = records.load_records("step_breakdown", gpu="h100")[0]
    out = longrow.step_rows(rows)
    assert {(r["concurrency"], r["next_n"]) for r in out} == {(c, n) for c in (1, 32, 128) for n in (1, 3)}
    assert all(r["check"] == "ok" and r["speedup"] != "—" for r in out)


def test_first_call_summary():
    rows = [{"first_call_ms": 0.5, "warmed": "True", "ok": True}, {"first_call_ms": 0.7, "warmed": True, "ok": "True"}]
    assert longrow.first_call_summary(rows) == {"calls": 2, "worst_ms": "0.70", "median_ms": "0.60",
                                                "all_warmed": True, "all_ok": True}
    assert not longrow.first_call_summary(rows + [{"first_call_ms": 60.0, "warmed": "False", "ok": "True"}])[
        "all_warmed"]
    rec = records.load_records("longrow/coldstart_long", gpu="h100")[0]
    s = longrow.first_call_summary(rec)
    assert s["calls"] == 24 and s["all_warmed"] and s["all_ok"] and float(s["worst_ms"]) <= 50


def test_probe_rows_one_column_per_arm_marks_wrong_ids():
    rec = [{"rows": 1, "width": 262144, "k": 2048, "arm": "old", "median_us": 24.71, "bad": 0},
           {"rows": 1, "width": 262144, "k": 2048, "arm": "new", "median_us": 18.34, "bad": 0},
           {"rows": 64, "width": 262144, "k": 512, "arm": "new", "median_us": 1274.6, "bad": 2},
           {"rows": 0, "width": 0, "k": 0, "arm": "null3", "median_us": 3.2, "bad": 0}]
    out = longrow.probe_rows(rec, {"old": "8192 words", "new": "4096 words"})
    assert out == [{"rows": 1, "width": 262144, "k": 2048, "8192 words": "24.7", "4096 words": "18.3"},
                   {"rows": 64, "width": 262144, "k": 512, "8192 words": "—", "4096 words": "1274.6!"}]
    assert [r["rows"] for r in longrow.probe_rows(rec, {"new": "n"}, where={"k": 512})] == [64]


def test_probe_rows_name_the_law_where_a_record_holds_several():
    rec = [{"rows": 64, "width": 262144, "k": 2048, "dist": d, "arm": a, "median_us": us, "bad": 0}
           for d, a, us in (("equal", "old", 66.5), ("equal", "new", 49.1), ("band", "old", 223.6),
                            ("band", "new", 217.4))]
    out = longrow.probe_rows(rec, {"old": "before", "new": "after"})
    assert out == [{"rows": 64, "width": 262144, "k": 2048, "dist": "equal", "before": "66.5", "after": "49.1"},
                   {"rows": 64, "width": 262144, "k": 2048, "dist": "band", "before": "223.6", "after": "217.4"}]
    assert "dist" not in longrow.probe_rows(rec[:2], {"new": "n"})[0]
    assert longrow.probe_rows(rec, {"new": "n"}, where={"dist": "band", "rows": 64}) == [
        {"rows": 64, "width": 262144, "k": 2048, "n": "217.4"}]
    assert longrow.probe_rows(rec, {"new": "n"}, where={"dist": "normal"}) == []


def test_recorded_sample_step_below_a_wide_tie():
    """The committed A/B at 4535d98 (H100): with the sample's threshold below a wide tie where the finish's scan for
    it would be long, `band` at 256K takes at most 0.7x the time before (64 x 256K within 1.5x normal values), and
    no point takes more than 3 % longer; ids right.  The first form (4915d68, the step wherever the tie fills half
    its buffer) cost `band` at 640 x 64K more than 30 %."""
    rec = records.load_records("longrow/ab/ab_v3_tiestep_laws", gpu="h100")[0]
    rows = longrow.probe_rows(rec, {"old": "old", "new": "new"})
    assert len(rows) == 42 and all("!" not in v for r in rows for v in r.values() if isinstance(v, str))
    assert all(float(r["new"]) <= 1.03 * float(r["old"]) for r in rows)
    at = {(r["rows"], r["width"], r["dist"]): float(r["new"]) for r in rows}
    assert all(float(r["new"]) < 0.7 * float(r["old"]) for r in rows if (r["dist"], r["width"]) == ("band", 262144))
    assert at[(64, 262144, "band")] < 1.5 * at[(64, 262144, "normal")]
    first = records.load_records("longrow/ab/ab_v3_tiestep_all_laws", gpu="h100")[0]
    (b,) = longrow.probe_rows(first, {"old": "old", "new": "new"}, where={"dist": "band", "rows": 640, "width": 65536})
    assert float(b["new"]) > 1.3 * float(b["old"])


def test_recorded_ties_past_a_full_buffer():
    """The committed A/B at 8741fed (H100): with the stream counting ties apart once their buffer is full, the
    tie-heavy laws take less time at 256K columns (`equal`, `three`), none more than 3 % longer; ids right."""
    rec = records.load_records("longrow/ab/ab_v3_ties_laws", gpu="h100")[0]
    rows = longrow.probe_rows(rec, {"old": "old", "new": "new"})
    assert len(rows) == 16 and all("!" not in v for r in rows for v in r.values() if isinstance(v, str))
    assert all(float(r["new"]) <= 1.03 * float(r["old"]) for r in rows)
    for r in rows:
        if r["dist"] in ("equal", "three") and r["width"] == 262144:
            assert float(r["new"]) < 0.85 * float(r["old"]), r


def test_recorded_sample_probe_smaller_sample_faster_until_it_misses():
    """The committed probe at 8fd5dca (H100): the 4096-word sample is faster than 8192 words at every point, and
    2048 words miss at k = 512 over 256K columns (rows read again: many times slower), the reason for the floor."""
    rec = records.load_records("longrow/ab/probe_8fd5dca", gpu="h100")[0]
    rows = longrow.probe_rows(rec, {"new:nch1024": "8192", "new": "4096", "new:nch256": "2048"})
    assert len(rows) == 12 and all("!" not in v for r in rows for v in r.values() if isinstance(v, str))
    assert all(float(r["4096"]) < float(r["8192"]) for r in rows)
    (miss,) = [r for r in rows if (r["rows"], r["k"]) == (64, 512)]
    assert float(miss["2048"]) > 5 * float(miss["4096"])


def test_miss_probability_is_the_exact_rank_law():
    """The odds behind the long-row threshold: against every sample of 5 of 14 distinct values, counted (the
    sample's r-th largest has fewer than k of the row at or above it); and the default plan's rank table."""
    import itertools

    n, s = 14, 5
    for r, k in ((1, 3), (2, 5), (3, 9), (5, 12)):
        subsets = list(itertools.combinations(range(n), s))  # value i ranks i + 1 in the row
        miss = sum(1 for c in subsets if sorted(c)[r - 1] + 1 < k)
        assert abs(longrow.miss_probability(n, k, r, s) - miss / len(subsets)) < 1e-12, (r, k)
    got = {(t["width"], t["k"]): t for t in longrow.rank_rows([65536, 262144], [512, 2048])}
    assert (got[262144, 2048]["rank"], got[262144, 2048]["aims_at"]) == (64, 4096)
    assert got[65536, 2048]["rank"] == plans.longrow_rank(65536, 2048, plans.longrow(1, 65536, 2048, {"sm_count": 1}))
    assert all(float(t["one_miss_in"]) > 3.5e6 for t in got.values())


def test_recorded_threshold_rank():
    """The committed A/B at ee46a1f (H100): the threshold at the margin rank against the aim at 2k takes 640 x 64K at
    k = 2048 and 640 x 256K at k = 512 (fewer words aimed at) under 0.98x the time, no 640-row point over 1.01x, the
    256K k = 2048 points (the same rank) within 1 %; ids right."""
    rec = records.load_records("longrow/ab/ab_v3_rank", gpu="h100")[0]
    rows = longrow.probe_rows(rec, {"old": "old", "new": "new"})
    assert len(rows) == 32 and all("!" not in v for r in rows for v in r.values() if isinstance(v, str))
    at = {(r["rows"], r["width"], r["k"]): float(r["new"]) / float(r["old"]) for r in rows}
    assert at[640, 65536, 2048] < 0.95 and at[640, 262144, 512] < 0.98
    assert all(x <= 1.01 for (n, _, _), x in at.items() if n == 640)
    assert all(abs(x - 1) < 0.01 for (n, w, k), x in at.items() if (w, k) == (262144, 2048) and n >= 8)


def test_recorded_bucket_pairs():
    """The committed A/B at 0c5657f (H100): the finish ranking a small bucket in pairs takes every 4- and 8-row call
    under 0.99x the time of the counting steps, no 640-row call (normal values and the laws) over 1.03x; ids
    right."""
    rec = records.load_records("longrow/ab/ab_v3_pairs_rank", gpu="h100")[0]
    laws = records.load_records("longrow/ab/ab_v3_pairs_rank_laws", gpu="h100")[0]
    rows = longrow.probe_rows(rec, {"old": "old", "new": "new"})
    law_rows = longrow.probe_rows(laws, {"old": "old", "new": "new"})
    assert len(rows) == 40 and len(law_rows) == 42
    assert all("!" not in v for r in rows + law_rows for v in r.values() if isinstance(v, str))
    assert all(float(r["new"]) < 0.99 * float(r["old"]) for r in rows if r["rows"] in (4, 8))
    assert all(float(r["new"]) <= 1.03 * float(r["old"]) for r in rows + law_rows if r["rows"] == 640)
