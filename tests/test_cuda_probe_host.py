"""scripts/gpu_cuda_select_probe.py, host side: which build holds a row, and the launcher's input checks.

The CUDA kernel itself (scripts/cuda/topk_row_cta.cu) runs only on the GPU, where the probe checks every arm against
the exact reference before timing it; here the parts that decide what it is launched on.
"""
import importlib.util
import os

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("gpu_cuda_select_probe",
                                                  os.path.join(ROOT, "scripts", "gpu_cuda_select_probe.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("width,want", [(0, (1024, 1)), (512, (1024, 1)), (1025, (1024, 2)), (8192, (1024, 8)),
                                        (32768, (1024, 32)), (65536, (1024, 64))])
def test_variant_for_smallest_build(probe, width, want):
    assert probe.variant_for(width) == want


def test_variant_for_limits(probe):
    assert probe.variant_for(32768, threads=512, per_thread=64) == (512, 64)
    with pytest.raises(ValueError, match="width"):
        probe.variant_for(65537)
    with pytest.raises(ValueError, match="width"):
        probe.variant_for(32768, threads=512, per_thread=32)
    with pytest.raises(ValueError, match="threads"):
        probe.variant_for(100, threads=100)


def _args(rows=2, width=1024, k=64):
    return (torch.zeros(rows, width), k, torch.full((rows,), width, dtype=torch.int32),
            torch.empty(rows, k, dtype=torch.int32))


def test_check_args_accepts_and_rejects(probe):
    sc, k, L, out = _args()
    probe.check_args(sc, k, L, out, 1024, 1)  # width 1024 fits 1024 x 1
    with pytest.raises(ValueError, match="k must"):
        probe.check_args(sc, 65, L, torch.empty(2, 65, dtype=torch.int32), 1024, 1)
    with pytest.raises(TypeError, match="scores"):
        probe.check_args(sc.double(), k, L, out, 1024, 1)
    with pytest.raises(ValueError, match="lengths"):
        probe.check_args(sc, k, L.long(), out, 1024, 1)
    with pytest.raises(ValueError, match="out"):
        probe.check_args(sc, k, L, out[:, :32], 1024, 1)
    wide = torch.zeros(2, 4096)
    with pytest.raises(ValueError, match="exceeds"):  # a padded row wider than the build ...
        probe.check_args(wide, k, L, out, 1024, 1)
    probe.check_args(wide, k, L, out, 1024, 1, max_len=1024)  # ... whose live rows fit it (host-known bound)
    with pytest.raises(ValueError, match="exceeds"):
        probe.check_args(wide, k, L, out, 1024, 1, max_len=1025)


def test_source_constants_match_launcher(probe):
    # the launcher's KMAX must be the kernel's (k beyond it would overrun the kernel's candidate slots)
    src = open(probe.SRC).read()
    assert f"#define KMAX {probe.KMAX} " in src


@pytest.mark.parametrize("width,want", [(2048, 1), (2049, 2), (8192, 4), (32768, 16)])
def test_cluster_per_thread(probe, width, want):
    # 8 CTAs x 256 threads x want columns hold the row, and half as many would not
    assert probe.cluster_per_thread(width) == want
    assert 8 * 256 * want >= width and (want == 1 or 8 * 256 * want // 2 < width)


def test_cluster_per_thread_limit(probe):
    with pytest.raises(ValueError, match="width"):
        probe.cluster_per_thread(8 * 256 * 64 + 1)


def test_check_status(probe):
    assert probe.check_status(0, 0, 4) == "ok"
    assert probe.check_status(2, 2, 4) == "refused 2/4"
    # a refused row beside a wrong one is a mismatch, not a refusal
    assert probe.check_status(2, 1, 4, "row 3: slot 0").startswith("mismatch 2/4: row 3")


def test_cluster_threshold_model():
    # the rules of scripts/cuda/cluster_floor.cu on the CPU: every accepted row's kk best keys reach its threshold,
    # the per-CTA rule (CTA_Q) lets fewer keys through on normal rows, and rows outside the common case are refused
    spec = importlib.util.spec_from_file_location("cluster_threshold_model",
                                                  os.path.join(ROOT, "scripts", "cuda", "cluster_threshold_model.py"))
    model = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(model)
    plain, tight = model.run(6, 1, cta_q=False), model.run(6, 1, cta_q=True)
    for res in (plain, tight):
        assert all(r["wrong"] == 0 for r in res.values())
        assert res["equal"]["refused"] == 6 and res["short"]["refused"] == 6
    assert tight["normal"]["median_M"] < plain["normal"]["median_M"]
    assert tight["normal"]["median_M"] >= 64  # at least kk keys, always
    # "spread" puts q of the k best in each CTA, one per thread: the per-CTA rule is exactly tight there (k best +
    # the row's pinned +inf), so taking the (q-1)-th instead of the q-th value would lose keys and fail the check
    assert tight["spread"]["median_M"] <= 65
