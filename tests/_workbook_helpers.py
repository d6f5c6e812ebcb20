"""Shared helpers for the workbook tests: small synthetic records (a select sweep, producer points)."""
import csv
import json


def synthetic_sweep(tmp_path):
    """A small synthetic select_sweep record in tmp_path/h200 (same columns as the real one)."""
    d = tmp_path / "h200"
    d.mkdir()
    cols = ["arm", "stage", "context", "concurrency", "next_n", "rows", "k", "dist", "median_us", "p10_us", "p90_us",
            "bytes", "gbps", "floor_us", "roofline_frac", "max_model_len", "block_size"]
    rows = []
    for arm, base in (("torch", 50.0), ("torch_live", 20.0), ("triton", 4.0)):
        for stage in ("select", "full"):
            for ctx in (4096, 16384, 65536):
                for conc in (1, 8, 128):
                    t = (base * (1 + conc / 64) * (1 if arm == "torch" else ctx / 4096) ** 0.5
                         * (2 if stage == "full" else 1))
                    b = conc * ctx // 2
                    rows.append(dict(arm=arm, stage=stage, context=ctx, concurrency=conc, next_n=1, rows=conc, k=64,
                                     dist="normal", median_us=t, p10_us=0.9 * t, p90_us=1.1 * t, bytes=b,
                                     gbps=b / t / 1e3, floor_us=max(1.2, b / 4.64e6),
                                     roofline_frac=max(1.2, b / 4.64e6) / t,
                                     max_model_len=262144, block_size=8))
    with open(d / "select_sweep.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    (d / "select_sweep.meta.json").write_text(json.dumps(
        {"gpu_name": "NVIDIA H200", "sm_count": 132,
         "ceilings": {"stream_gbps": 4640.0, "launch_us": 1.21, "two_launch_us": 1.78}}))
    seed = tmp_path / "mi355x_seed"
    seed.mkdir()
    (seed / "speedup_by_context.csv").write_text("context,points,median_x,min_x,max_x\n4096,40,4.16,3.97,5.08\n")
    (seed / "speedup_by_context.meta.json").write_text(
        json.dumps({"gpu_name": "AMD Instinct MI355X", "transcribed": True}))
    return tmp_path


def producer_rows():
    """(meta, rows) of a producer record: two next_n at 128K x 128 (one stream-bound, one fp8-MMA-bound) and one
    point at another context."""
    meta = {"ceilings": {"stream_gbps": 4000.0, "fp8_tflops": 1000.0}}
    rows = [dict(arm="triton", stage="logits", context=131072, concurrency=128, next_n=n, median_us=t, bytes=2e9,
                 flops=f, tflops=f / t / 1e6, stream_frac=sf, mma_frac=mf, roofline_frac=max(sf, mf))
            for n, t, f, sf, mf in ((1, 700.0, 3e11, 0.714, 0.43), (5, 2000.0, 1.4e12, 0.25, 0.7))]
    rows.append(dict(rows[0], context=4096))  # another context: not in the table
    return meta, rows
