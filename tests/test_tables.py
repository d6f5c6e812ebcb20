"""dsa_lab.workbook.tables: the rows the notebooks print (deterministic) and their text format."""
import pytest
import torch

from dsa_lab import keys
from dsa_lab.workbook import tables


def test_format_table():
    s = tables.format_table([{"a": 1, "bb": "x"}, {"a": 22, "bb": "yyy"}])
    assert s.splitlines() == ["a   bb", "--  ---", "1   x", "22  yyy"]
    assert tables.format_table([]) == "(no rows)"


@pytest.mark.parametrize("text,bits", [("-0.0", 0x80000000), ("nan", 0x7FC00000), ("0x7f800001", 0x7F800001),
                                       ("-inf", 0xFF800000), ("1.5", 0x3FC00000), ("0xFFFFFFFF", 0xFFFFFFFF)])
def test_key_fields(text, bits):
    f = tables.key_fields(text, 7)
    assert f["bits"] == f"0x{bits:08X}"
    x = tables._score_tensor(text)
    k = int(keys.pack_keys(x, torch.tensor([7]))[0])
    assert f["key_signed"] == k
    assert f["key"] == f"0x{k & (2**64 - 1):016X}"
    assert f["key_lo"] == f"0x{0xFFFFFFFF - 7:08X}"
    assert f["ordered"] == f"0x{int(keys.ordered_bits(x)[0]):08X}"
    assert f["unpacked_index"] == 7
    assert len(f["key_bits"]) == 64
    assert f["candidate"] == (text != "-inf")


def test_key_fields_errors():
    with pytest.raises(ValueError):
        tables.key_fields("banana", 0)
    with pytest.raises(ValueError, match="MAX_INDEX"):
        tables.key_fields("1.0", keys.MAX_INDEX + 1)


def test_skip_fraction():
    assert tables.skip_fraction(4096) == pytest.approx(1 - 512 / 32768)
    assert tables.skip_fraction(262144) == 0
    assert tables.skip_fraction(10**7) == 0
    r = tables.skip_rows((4096,))
    assert r[0]["skipped"] == "98.44%" and r[0]["live_blocks"] == 512


def test_speedup_rows(tmp_path):
    from _workbook_helpers import synthetic_sweep

    from dsa_lab.workbook import records

    rows, _, _ = records.load_records("select_sweep", root=synthetic_sweep(tmp_path))
    sp = tables.speedup_rows(rows)
    assert [s["context"] for s in sp] == [4096, 16384, 65536]
    assert sp[0]["points"] == 3 and float(sp[0]["median_x"]) > 1


def test_itl_and_sanitize_rows():
    wide = [{"arm": "triton", "context": 4096, "concurrency": 8, "next_n": 1, "logits_us": 10.0, "scores_us": 0,
             "select_us": 4.0, "flags_us": 1.0, "sanitize_us": 1.0}]
    r = tables.itl_share_rows(wide, itl_ms=16.0)
    assert r[0]["step_us"] == 16.0 and r[0]["itl_share"] == "0.10%"
    assert not tables.long_format(wide)
    # long format, as `dsa-lab sweep --suite step` records it
    long = [{"arm": a, "stage": s, "context": 4096, "concurrency": 8, "next_n": 1, "median_us": v}
            for a in ("triton", "torch") for s, v in (("logits", 10.0), ("sanitize", 1.0), ("scores", 2.0),
                                                     ("select", 3.0), ("flags", 1.0), ("candidates", 5.0),
                                                     ("step", 18.0))]
    assert tables.long_format(long)
    r = tables.itl_share_rows(long, itl_ms=18.0, layers=10)
    assert len(r) == 1 and r[0]["step_us"] == 180.0 and r[0]["itl_share"] == "1.00%"
    cmp = tables.itl_compare_rows(long, itl_ms=18.0, layers=10)
    assert cmp == [{"context": 4096, "concurrency": 8, "next_n": 1, "torch_us": 18.0, "triton_us": 18.0,
                    "saving_us x10 layers": 0.0, "torch_share": "1.0%", "triton_share": "1.0%"}]
    prod = [{"arm": a, "stage": "sanitize", "context": 4096, "concurrency": 8, "next_n": 1, "median_us": v}
            for a, v in (("bounded", 2.0), ("full_width", 50.0))] + [
           {"arm": "triton", "stage": "logits", "context": 4096, "concurrency": 8, "next_n": 1, "median_us": 9.0}]
    sr = tables.sanitize_rows(prod)
    assert sr == [{"context": 4096, "concurrency": 8, "next_n": 1, "bounded_us": 2.0, "full_width_us": 50.0,
                   "full/bounded": "25.0x"}]


def test_split_rule_rows():
    """The select's launches at 1 and 640 rows on a 132-SM GPU, from the dispatch recorded on meta tensors: k = 64
    splits one row over programs and runs 640 rows one program each; k = 2048 runs the parallel radix select at 1 row
    and the bisect select, one program per row, at 640."""
    t = tables.split_rule_rows(132, rows_list=(1, 640))
    assert [(r["rows"], r["kernel"]) for r in t] == [(1, "hier_kernel"), (640, "hier_kernel")]
    assert t[0]["P"] > t[1]["P"] == 1 and t[0]["grid"] == f"1x{t[0]['P']}" and t[1]["grid"] == "640x1"
    assert all(r["KP"] == 64 for r in t)
    r = tables.split_rule_rows(132, rows_list=(1, 640), k=2048)
    one, many = [x for x in r if x["rows"] == 1], [x for x in r if x["rows"] == 640]
    assert one and all(x["kernel"] == "radix_par_kernel" and x["P"] > 1 for x in one)
    assert [(x["kernel"], x["grid"], x["P"]) for x in many] == [("bisect_kernel", "640", 1)]


def test_producer_roofline_rows():
    """The producer's points at 128K x 128 per next_n against the record's roofline: fractions carried from the
    record, the binding ceiling named, the 70% target judged."""
    from _workbook_helpers import producer_rows

    meta, rows = producer_rows()
    t = tables.producer_roofline_rows(rows, meta)
    assert [r["next_n"] for r in t] == [1, 5]
    assert t[0]["bound"] == "stream" and t[0][">= 70%"] == "met" and t[0]["of_roofline"] == 0.714
    assert t[1]["bound"] == "fp8 MMA" and t[1][">= 70%"] == "met" and t[1]["peak_tflops"] == 1000.0
    assert tables.producer_roofline_rows([dict(rows[1], roofline_frac=0.69)], meta)[0][">= 70%"] == "not met"
