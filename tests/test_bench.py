"""dsa_lab.bench.timing and .roofline: timing summaries, the bytes model, roofline placement, ceilings (labelled without
a GPU)."""
import pytest
import torch

from dsa_lab.bench import roofline
from dsa_lab.bench import timing as bench


def test_summarize_quantiles():
    t = bench._summarize([float(x) for x in range(1, 12)], 3, "m")
    assert t.median_us == 6 and t.min_us == 1 and t.max_us == 11
    assert t.p10_us == pytest.approx(2.0) and t.p90_us == pytest.approx(10.0)
    assert t.n == 11 and t.inner == 3
    row = t.as_row()
    assert set(row) >= {"median_us", "p10_us", "p90_us", "timing"}


def test_wallclock_timing_is_labelled_without_gpu():
    if torch.cuda.is_available():
        pytest.skip("labels differ on a GPU")
    t = bench.time_fn(lambda: sum(range(100)))
    assert t.method == bench.INTERPRETER_LABEL  # conftest turns the interpreter on without a GPU
    assert "not a performance measurement" in t.method
    assert t.median_us > 0


def test_select_bytes_model():
    nb, k = 32768, 64
    live = [512, 512, 100]
    assert roofline.select_bytes("triton", live, nb, k) == sum(live) * 4 + 3 * k * 4
    torch_b = roofline.select_bytes("torch", live, nb, k)
    assert torch_b == 3 * nb * 4 + 3 * k * (4 + 8) * 2 + 3 * k * 4
    live_b = roofline.select_bytes("torch_live", live, nb, k)
    assert live_b == 3 * 512 * 4 + 3 * k * (4 + 8) * 2 + 3 * k * 4
    assert roofline.select_bytes("triton", [nb + 5], nb, k) == nb * 4 + k * 4  # clamped to the width


def test_full_bytes_model():
    width, bs, k = 2048, 8, 16
    ends = [512, 2048, 3000]  # the last one is past the width: clamped
    nb = width // bs
    common = (512 + 2048 + 2048) * 4 + 3 * (nb + 1)
    assert roofline.full_bytes("triton_fused", ends, width, bs, k) == common + 3 * k * 4
    unfused = common + 2 * (64 + 256 + 256) * 4 + 3 * k * 4
    fb = roofline.full_bytes
    assert fb("triton", ends, width, bs, k) == fb("triton_unfused", ends, width, bs, k) == unfused
    topk = 3 * k * (4 + 8) * 2 + 3 * k * 4
    assert roofline.full_bytes("torch", ends, width, bs, k) == 3 * width * 4 + 3 * (nb + 1) + 2 * 3 * nb * 4 + topk
    assert fb("torch_live", [512] * 3, width, bs, k) == 3 * 512 * 4 + 3 * (nb + 1) + 2 * 3 * 64 * 4 + topk


def test_roofline_placement():
    ceil = {"stream_gbps": 4000.0, "launch_us": 1.2, "two_launch_us": 1.8}
    r = roofline.roofline(8_000_000, 4.0, ceil)  # 8 MB at 4 TB/s = 2 µs floor
    assert r["floor_us"] == pytest.approx(2.0) and r["roofline_frac"] == pytest.approx(0.5)
    assert r["gbps"] == pytest.approx(2000.0)
    small = roofline.roofline(1000, 3.0, ceil)  # latency bound: the launch floor wins
    assert small["floor_us"] == pytest.approx(1.2)
    assert roofline.roofline(1000, 3.0, ceil, launches=2)["floor_us"] == pytest.approx(1.8)
    # the compute term: 2e12 flops at 1000 Tflop/s = 2000 µs, above the 2 µs of bytes; absent without a peak
    mma = {**ceil, "fp8_tflops": 1000.0}
    assert roofline.roofline(8_000_000, 4000.0, mma, flops=2e12)["floor_us"] == pytest.approx(2000.0)
    assert roofline.roofline(8_000_000, 4000.0, mma, flops=2e12)["roofline_frac"] == pytest.approx(0.5)
    assert roofline.roofline(8_000_000, 4000.0, ceil, flops=2e12)["floor_us"] == pytest.approx(2.0)


def test_fp8_mma_peak_needs_a_gpu_with_fp8_dot():
    if not torch.cuda.is_available():
        assert bench.measure_fp8_mma_peak() == {}
        return
    peak = bench.measure_fp8_mma_peak()
    if peak:  # sane bounds for any fp8 tensor-core GPU: between 50 and 20,000 Tflop/s
        assert 50 < peak["fp8_tflops"] < 20000 and peak["fp8_method"] in ("torch._scaled_mm", "triton tl.dot GEMM")


def test_measure_ceilings_keys():
    c = bench.measure_ceilings(stream_bytes=1 << 20)
    assert set(c) >= {"stream_gbps", "launch_us", "two_launch_us", "timing", "stream_method"}
    assert c["stream_gbps"] > 0 and c["launch_us"] > 0 and c["two_launch_us"] > 0
    if not torch.cuda.is_available():
        assert c["timing"] == bench.INTERPRETER_LABEL


@pytest.mark.gpu
def test_cuda_graph_timing_and_ceilings_on_gpu():
    x = torch.randn(1 << 20, device="cuda")
    t = bench.time_cuda_graph(lambda: x.sum())
    assert 0 < t.p10_us <= t.median_us <= t.p90_us and t.method == bench.CUDA_GRAPH_LABEL
    c = bench.measure_ceilings(stream_bytes=1 << 30)
    assert 500 < c["stream_gbps"] < 20000 and 0.1 < c["launch_us"] < 20
    assert c["two_launch_us"] > c["launch_us"] * 0.9


@pytest.mark.gpu
def test_sweep_smoke_on_gpu(tmp_path):
    """A handful of real points through `dsa-lab sweep` on the GPU: graph timing, checks, roofline columns."""
    from dsa_lab import cli
    from dsa_lab.bench import data

    rc = cli.main(["sweep", "--suite", "select,full", "--contexts", "4096", "--concurrency", "1,32", "--next-n", "1",
                   "--k", "64", "--dists", "normal", "--out", str(tmp_path), "--no-progress", "--seed", "1"])
    rows = data.load_rows(tmp_path / "select_sweep.csv")
    assert rc == 0, rows
    assert {r["timing"] for r in rows} == {bench.CUDA_GRAPH_LABEL}
    assert {r["check"] for r in rows if r["arm"] != "torch"} == {"ok"}
    assert all(0 < r["median_us"] < 5000 and r["roofline_frac"] > 0 for r in rows)
    meta = data.load_meta(tmp_path / "select_sweep.meta.json")
    assert meta["gpu_name"] and meta["sm_count"] and meta["ceilings"]["stream_gbps"] > 500
