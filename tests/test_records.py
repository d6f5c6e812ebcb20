"""dsa_lab.workbook.records: loading, labelling and summarizing records (absent ones say so)."""
import json

from dsa_lab.workbook import records


def test_absent_records(tmp_path):
    rows, meta, path = records.load_records("select_sweep", root=tmp_path)
    assert rows is None and path == tmp_path / "h200" / "select_sweep.csv"
    assert records.record_status((rows, meta, path)).startswith("NO RECORD")
    assert "NO RECORD" in records.summarize_verification(tmp_path / "h200" / "fuzz.json")


def test_summarize_verification(tmp_path):
    p = tmp_path / "verify_matrix.csv"
    p.write_text("case,arm,mismatches\na,torch,0\nb,torch,2\na,triton,0\n")
    s = records.summarize_verification(p)
    assert "arm torch: 2 configurations, 1 with a mismatch" in s
    assert "MISMATCH b" in s and "arm triton: 1 configurations, 0 with a mismatch" in s
    j = tmp_path / "fuzz.json"
    j.write_text(json.dumps({"cases": 100000, "mismatches": 0, "gpu_name": "NVIDIA H200"}))
    s = records.summarize_verification(j)
    assert "cases: 100000" in s and "NVIDIA H200" in s
    # the `dsa-lab verify --fuzz` record format
    j.write_text(json.dumps({
        "n": 300, "meta": {"gpu_name": "NVIDIA H200", "commit": "abcdef123", "date_utc": "2026-11-29T09:00"},
        "arms": {"triton": {"cases": 300, "mismatched_cases": 1}, "torch": {"cases": 300, "mismatched_cases": 0}},
        "failures": [{"case": "fuzz_blocks", "arm": "triton", "seed": 7, "error": "", "first_mismatch": "row 3"}]}))
    s = records.summarize_verification(j)
    assert "random cases: 300" in s and "arm triton: 300 cases, 1 with a mismatch" in s and "commit abcdef1" in s
    assert "MISMATCH fuzz_blocks [triton] seed 7: row 3" in s and "NVIDIA H200" in s


def test_float_max_table(tmp_path):
    p = tmp_path / "h200" / "float_max_check.json"
    assert "NO RECORD" in records.float_max_table(p)
    p.parent.mkdir()
    p.write_text(json.dumps({"meta": {"gpu_name": "NVIDIA H200", "commit": "0123456789"}, "rows": [
        {"block": "-0,+0", "contract": "0x00000000", "torch_amax": "0x80000000", "triton_tl_max": "0x00000000",
         "torch_amax_ok": False, "triton_tl_max_ok": True}]}))
    s = records.float_max_table(p)
    assert "NVIDIA H200" in s and "commit 0123456" in s
    assert "0x80000000 !" in s and "0x00000000 !" not in s
