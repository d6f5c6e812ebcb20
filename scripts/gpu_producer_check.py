"""Producer check on a GPU (issue 5): correctness at full size, poison, launch-config sweep, CUDA-graph timing.

    PYTHONUNBUFFERED=1 python3 scripts/gpu_producer_check.py          # writes CSVs + env.json under $OUT

Sections (each guarded: a failure is printed and the run goes on; exit code 1 if any correctness check failed):

1. e4m3fn upcast exhaustive on the device; correctness of the Triton kernel (fp8 MMA path, and the upcast path on
   a smaller case) against the fp32 torch reference at full size (H=64, D=128, block_kv 64/16, B up to 128,
   next_n 1-5, contexts up to 131072, max_model_len 262144), bounded error ``|tri - ref| <= 2^-8 * M``
   (``M = scale * sum_h |w_h| sum_d |q_hd k_d|``), plus the poison check (tail bits unchanged) on every case.
2. Launch-config sweep of the fp8 kernel at B=128, context 131072, next_n 1/3/5 (BLOCK_T, warps, stages, which
   operand q is, hoisting) → ``producer_configs.csv``; the best per next_n is printed.
3. Timing (``triton.testing.do_bench_cudagraph``, median and 20/80 % quantiles) of the Triton kernel (default
   config) against the torch reference, with achieved bandwidth against a measured streaming ceiling →
   ``producer_timing.csv``; bounded vs full-width sanitize → ``sanitize_timing.csv``; one decode step split
   into stages (:class:`dsa_lab.producer.DecodeStep`) → ``step_stages.csv``.

Expectation (H200, fp8 dense ~1979 TFLOP/s, stream ~4.64 TB/s): a token costs 132 bytes and 16384 * next_n
flops (H = 64, D = 128), so even at the tensor-core peak the kernel cannot exceed ~0.69 of the streaming
ceiling at next_n = 5 (0.86 at next_n = 4); the >= 70 % target is a memory-bound target for next_n <= 3.

Budget: stays under ~170 s on an H200 (later items are skipped, with a note, past their deadline).
"""
import csv
import json
import math
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.testing import do_bench_cudagraph  # noqa: E402

from dsa_lab import paged, producer  # noqa: E402
from dsa_lab.kernels.producer import default_config, e4m3fn_decode_triton, paged_mqa_logits_triton  # noqa: E402

OUT = os.environ.get("OUT", os.path.join(ROOT, "build", "gpu_producer"))
os.makedirs(OUT, exist_ok=True)
T0 = time.time()
BUDGET_S = float(os.environ.get("PRODUCER_CHECK_BUDGET_S", "170"))
MML = 262144
TOL_FP8 = 2.0**-8  # see dsa_lab.producer's docstring; bounded_err records the measured value
FAILURES = []


def elapsed():
    return time.time() - T0


def left():
    return BUDGET_S - elapsed()


def log(*a):
    print(f"[{elapsed():6.1f}s]", *a, flush=True)


def section(name, fn):
    log(f"== {name}")
    t = time.time()
    try:
        fn()
        log(f"== {name}: done in {time.time() - t:.1f}s")
    except Exception:
        traceback.print_exc()
        FAILURES.append(f"{name}: exception")
        log(f"== {name}: FAILED after {time.time() - t:.1f}s")


def write_csv(name, rows):
    if not rows:
        return
    path = os.path.join(OUT, name)
    keys = list(rows[0].keys())
    for r in rows[1:]:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    log(f"wrote {path} ({len(rows)} rows)")


def bench_us(fn, rep=20):
    """Median and 20/80 % quantiles (µs) of ``fn`` replayed in a CUDA graph."""
    q = do_bench_cudagraph(fn, rep=rep, quantiles=[0.5, 0.2, 0.8])
    return [x * 1e3 for x in q]


# ------------------------------------------------------------------------------------------------ env
def env():
    p = torch.cuda.get_device_properties(0)
    info = {
        "gpu": p.name,
        "sm_count": p.multi_processor_count,
        "capability": list(torch.cuda.get_device_capability(0)),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "hip": torch.version.hip,
        "python": sys.version.split()[0],
        "fp8_dot": paged.fp8_dot_supported(torch.device("cuda")),
        "allow_tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": " ".join([sys.executable] + sys.argv),
    }
    try:
        import subprocess

        info["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True
        ).stdout.strip()
        info["commit"] = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                                        text=True).stdout.strip()
    except Exception:
        pass
    log(json.dumps(info))
    with open(os.path.join(OUT, "env.json"), "w") as f:
        json.dump(info, f, indent=1)
    if torch.backends.cuda.matmul.allow_tf32:
        log("WARNING: TF32 matmul is on: the torch reference would not be fp32")


# ------------------------------------------------------------------------------------------ correctness
def poisoned(rows, width):
    bits = torch.full((rows, width), 0x7FC0DEAD, dtype=torch.int32, device="cuda")
    bits[:, 1::3] = -0x21524111  # 0xDEADBEEF
    return bits.view(torch.float32)


def check_case(rows_out, name, B, next_n, ctx, block_kv=64, H=64, layout="1d", fp8_dot=None, config=None, seed=0):
    t = time.time()
    p = paged.random_decode_problem(B, next_n, ctx, num_heads=H, block_kv=block_kv, max_model_len=MML,
                                    layout=layout, device="cuda", seed=seed)
    args = (p["q_fp8"], p["kv_cache"], p["weights"], p["context_lens"], p["block_table"])
    out = poisoned(B * next_n, MML)
    before = out.clone()
    paged_mqa_logits_triton(*args, out, fp8_dot=fp8_dot, config=config)
    ref = producer.paged_mqa_logits(*args, MML, impl="reference")
    ends = producer.decode_row_ends(p["context_lens"], next_n).to(torch.int64)
    col = torch.arange(MML, device="cuda")
    tail_ok = True
    for r0 in range(0, B * next_n, 64):  # bounded memory for the mask
        r1 = min(B * next_n, r0 + 64)
        win = col[None, :] < ends[r0:r1, None]
        a = out[r0:r1].view(torch.int32)
        b = before[r0:r1].view(torch.int32)
        tail_ok &= bool(torch.equal(a[~win], b[~win]))
    del before
    bounded, rel = producer.logits_error(*args, out, ref)
    ok = tail_ok and bounded <= TOL_FP8
    if not ok:
        FAILURES.append(f"correctness {name}")
    row = {"case": name, "B": B, "next_n": next_n, "H": H, "block_kv": block_kv, "layout": layout,
           "max_ctx": max(p["seq_lens"]),
           "fp8_dot": paged.fp8_dot_supported(out.device) if fp8_dot is None else fp8_dot,
           "bounded_err": f"{bounded:.3e}", "rel_err_big": f"{rel:.3e}", "tail_unchanged": tail_ok,
           "tol": TOL_FP8, "ok": ok, "secs": round(time.time() - t, 1)}
    log(row)
    rows_out.append(row)
    del out, ref, p
    torch.cuda.empty_cache()


def correctness():
    codes = torch.arange(256, dtype=torch.uint8, device="cuda")
    got = e4m3fn_decode_triton(codes).cpu()
    ref = codes.cpu().view(torch.float8_e4m3fn).float()
    same = (got.view(torch.int32) == ref.view(torch.int32)) | (got.isnan() & ref.isnan())
    log("e4m3fn upcast exhaustive on device:", bool(same.all()))
    if not bool(same.all()):
        FAILURES.append("e4m3fn upcast")
    rows = []
    g = torch.Generator().manual_seed(5)
    ragged = lambda B, hi: [int(x) for x in torch.randint(1, hi + 1, (B,), generator=g)]  # noqa: E731
    cases = [
        ("full_B128_n5_ctx131072_2d", dict(B=128, next_n=5, ctx=131072, layout="2d")),
        ("B32_n3_ragged", dict(B=32, next_n=3, ctx=ragged(32, 131072))),
        ("B16_n1_ragged_bkv16", dict(B=16, next_n=1, ctx=ragged(16, 131072), block_kv=16)),
        ("B8_n2_ragged_bkv16_2d", dict(B=8, next_n=2, ctx=ragged(8, 65536), block_kv=16, layout="2d")),
        ("B8_n4_ragged", dict(B=8, next_n=4, ctx=ragged(8, 65536))),
        ("B4_n5_H32_ragged", dict(B=4, next_n=5, ctx=ragged(4, 65536), H=32)),
        ("B4_n3_short_ctx", dict(B=4, next_n=3, ctx=[0, 1, 2, 63])),
        ("B4_n3_upcast_path", dict(B=4, next_n=3, ctx=ragged(4, 8192), fp8_dot=False)),
        ("B4_n5_no_hoist", dict(B=4, next_n=5, ctx=ragged(4, 65536), config={"HOIST_Q": False})),
    ]
    for i, (name, kw) in enumerate(cases):
        if left() < 95:
            log(f"skip {name}: budget")
            continue
        try:
            check_case(rows, name, seed=i, **kw)
        except Exception:
            traceback.print_exc()
            FAILURES.append(f"correctness {name}: exception")
    write_csv("producer_correctness.csv", rows)


# ------------------------------------------------------------------------------------------- ceilings
@triton.jit
def _read_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(pid * BLOCK, n, tl.num_programs(0) * BLOCK):
        acc += tl.load(x_ptr + i + tl.arange(0, BLOCK), mask=i + tl.arange(0, BLOCK) < n, other=0.0)
    tl.store(out_ptr + pid, tl.sum(acc))


STREAM = {}


def ceiling():
    n = 1 << 29  # 2 GiB of fp32, far above L2
    x = torch.ones(n, device="cuda")
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    best = 0.0
    for waves in (4, 8, 16):
        nprog = sm * waves
        o = torch.empty(nprog, device="cuda")
        med = bench_us(lambda: _read_kernel[(nprog,)](x, o, n, BLOCK=4096, num_warps=8))[0]
        best = max(best, n * 4 / (med * 1e-6) / 1e12)
    STREAM["tbps"] = best
    log(f"streaming read ceiling: {best:.3f} TB/s")
    del x
    torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------- config sweep
_D = {"BLOCK_T": 128, "num_warps": 4, "NUM_STAGES": 3, "HOIST_Q": True, "WAVES": 8}
CONFIGS = [
    dict(_D),  # the default (H=64, fp8)
    {**_D, "num_warps": 8},
    {**_D, "WAVES": 2},
    {**_D, "WAVES": 16},
    {**_D, "NUM_STAGES": 2},
    {**_D, "NUM_STAGES": 4},
    {**_D, "BLOCK_T": 64},
    {**_D, "BLOCK_T": 256, "num_warps": 8},
    {**_D, "HOIST_Q": False, "num_warps": 8},
]
BIG = {}


def big_problem(B=128, ctx=131072, block_kv=64):
    key = (B, ctx, block_kv)
    if key not in BIG:
        BIG.clear()
        torch.cuda.empty_cache()
        BIG[key] = paged.random_decode_problem(B, 1, ctx, num_heads=64, block_kv=block_kv, max_model_len=MML,
                                               device="cuda", seed=11)
    return BIG[key]


def qw(B, next_n, H=64, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn((B, next_n, H, 128), generator=g, device="cuda").to(torch.float8_e4m3fn)
    w = torch.randn((B * next_n, H), generator=g, device="cuda") * H**-0.5
    return q, w


def config_sweep():
    """Configs outer, next_n inner: if the budget runs out, the later (less likely) configs are the ones lost."""
    rows = []
    B, ctx = 128, 131072
    p = big_problem(B, ctx)
    cl = torch.full((B,), ctx, dtype=torch.int32, device="cuda")
    sets = {}
    for next_n in (5, 1, 3):  # the tensor-core-bound case first
        q, w = qw(B, next_n)
        sets[next_n] = (q, w, torch.empty((B * next_n, MML), device="cuda"),
                        producer.producer_bytes([ctx] * B, next_n, 64, 128))
    for cfg in CONFIGS:
        for next_n, (q, w, out, nbytes) in sets.items():
            if left() < 60:
                log("skip rest of config sweep: budget")
                break
            try:
                fn = lambda: paged_mqa_logits_triton(q, p["kv_cache"], w, cl, p["block_table"], out, config=cfg)  # noqa
                fn()
                med, lo, hi = bench_us(fn, rep=20)
                r = {"B": B, "next_n": next_n, "ctx": ctx, **cfg, "median_us": round(med, 2), "p20_us": round(lo, 2),
                     "p80_us": round(hi, 2), "read_tbps": round(nbytes["read"] / med / 1e6, 3),
                     "total_tbps": round(nbytes["total"] / med / 1e6, 3)}
                if STREAM:
                    r["frac_of_stream"] = round(nbytes["read"] / med / 1e6 / STREAM["tbps"], 3)
            except Exception as e:  # a config may not compile (shared memory) on some GPU
                r = {"B": B, "next_n": next_n, "ctx": ctx, **cfg, "error": repr(e)[:200]}
            log(r)
            rows.append(r)
    del sets
    write_csv("producer_configs.csv", rows)
    for n in (1, 3, 5):
        ok = [r for r in rows if r["next_n"] == n and "median_us" in r]
        if ok:
            b = min(ok, key=lambda r: r["median_us"])
            log(f"best next_n={n}: {b}")
    log("default config (H=64, fp8):", default_config(64, 1, 64, True))


# ------------------------------------------------------------------------------------------------ timing
def timing():
    rows = []
    for B in (1, 8, 32, 128):
        for ctx in (4096, 16384, 65536, 131072):
            p = big_problem(B, 131072)
            need = -(-ctx // 64)
            bt = p["block_table"][:, :need]  # sized to the context: the torch arm's work follows it
            cl = torch.full((B,), ctx, dtype=torch.int32, device="cuda")
            for next_n in (1, 3, 5):
                if left() < 35:
                    log("skip rest of timing: budget")
                    write_csv("producer_timing.csv", rows)
                    return
                q, w = qw(B, next_n)
                out = torch.empty((B * next_n, MML), device="cuda")
                nb = producer.producer_bytes([ctx] * B, next_n, 64, 128)
                fn_t = lambda: producer.paged_mqa_logits(q, p["kv_cache"], w, cl, bt, MML, impl="triton", out=out)  # noqa
                fn_t()
                med, lo, hi = bench_us(fn_t)
                r = {"B": B, "next_n": next_n, "ctx": ctx, "rows": B * next_n, "triton_us": round(med, 2),
                     "triton_p20": round(lo, 2), "triton_p80": round(hi, 2), "bytes_read": nb["read"],
                     "bytes_total": nb["total"], "read_tbps": round(nb["read"] / med / 1e6, 3),
                     "total_tbps": round(nb["total"] / med / 1e6, 3),
                     "l2_resident": nb["total"] < 40e6}
                if STREAM:
                    r["frac_of_stream"] = round(nb["read"] / med / 1e6 / STREAM["tbps"], 3)
                # torch reference: only where it is cheap enough for this budget
                if B * ctx * next_n <= 32 * 65536 * 5 and left() > 50:
                    ref = torch.empty_like(out)
                    fn_r = lambda: producer.paged_mqa_logits(q, p["kv_cache"], w, cl, bt, MML, impl="torch", out=ref)  # noqa
                    try:
                        fn_r()
                        rmed, rlo, rhi = bench_us(fn_r, rep=10)
                        r.update({"torch_us": round(rmed, 2), "torch_p20": round(rlo, 2), "torch_p80": round(rhi, 2),
                                  "speedup": round(rmed / med, 1)})
                    except Exception as e:
                        r["torch_error"] = repr(e)[:120]
                    del ref
                log(r)
                rows.append(r)
                del out
    write_csv("producer_timing.csv", rows)


def sanitize_timing():
    rows = []
    for B, next_n in ((1, 1), (32, 3), (128, 5)):
        for ctx in (4096, 131072):
            if left() < 22:
                log("skip rest of sanitize timing: budget")
                write_csv("sanitize_timing.csv", rows)
                return
            R = B * next_n
            x = torch.randn((R, MML), device="cuda")
            ends = producer.decode_row_ends(torch.full((B,), ctx, dtype=torch.int32, device="cuda"), next_n)
            bmed, blo, bhi = bench_us(lambda: producer.sanitize_decode_logits(x, ends))
            fmed, flo, fhi = bench_us(lambda: producer.sanitize_decode_logits_full(x))
            win = int(ends.clamp(max=MML).sum()) * 4
            r = {"B": B, "next_n": next_n, "ctx": ctx, "rows": R, "bounded_us": round(bmed, 2),
                 "bounded_p20": round(blo, 2), "bounded_p80": round(bhi, 2), "full_us": round(fmed, 2),
                 "full_p20": round(flo, 2), "full_p80": round(fhi, 2), "speedup": round(fmed / bmed, 1),
                 "bounded_bytes": 2 * win, "full_bytes": 2 * R * MML * 4}
            log(r)
            rows.append(r)
            del x
    write_csv("sanitize_timing.csv", rows)


def step_stages():
    """One decode step split into stages with :class:`dsa_lab.producer.DecodeStep` (the sweep helper records
    the full breakdown; this shows the API works in graphs on the GPU)."""
    rows = []
    for B, next_n, ctx in ((32, 3, 65536),):
        if left() < 20:
            log("skip step stages: budget")
            break
        p = paged.random_decode_problem(B, next_n, ctx, num_heads=64, block_kv=64, max_model_len=MML,
                                        device="cuda", seed=3)
        st = producer.DecodeStep(p["q_fp8"], p["kv_cache"], p["weights"], p["context_lens"], p["block_table"],
                                 MML, topk_blocks=64, block_size=8, impl="triton").run()
        for name, fn in list(st.stages().items()) + list(st.stages(split=True).items())[3:5]:
            med, lo, hi = bench_us(fn, rep=10)
            r = {"B": B, "next_n": next_n, "ctx": ctx, "stage": name, "median_us": round(med, 2),
                 "p20_us": round(lo, 2), "p80_us": round(hi, 2)}
            log(r)
            rows.append(r)
        med, lo, hi = bench_us(st.run, rep=10)
        rows.append({"B": B, "next_n": next_n, "ctx": ctx, "stage": "whole_step", "median_us": round(med, 2),
                     "p20_us": round(lo, 2), "p80_us": round(hi, 2)})
        log(rows[-1])
    write_csv("step_stages.csv", rows)


def main():
    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    section("env", env)
    section("correctness (full size, poison)", correctness)
    section("streaming ceiling", ceiling)
    section("config sweep", config_sweep)
    section("timing triton vs torch", timing)
    section("sanitize bounded vs full", sanitize_timing)
    section("decode step stages (DecodeStep)", step_stages)
    with open(os.path.join(OUT, "summary.json"), "w") as f:
        json.dump({"failures": FAILURES, "stream_tbps": STREAM.get("tbps"), "secs": round(elapsed(), 1)}, f, indent=1)
    log("FAILURES:" if FAILURES else "all checks passed", FAILURES or "")
    return 1 if any(f.startswith(("correctness", "e4m3fn")) for f in FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())
