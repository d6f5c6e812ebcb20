"""The sweep's runner: builds a point's inputs, checks each arm's ids against the baseline once, times it, and
appends one row per arm (and stage) through the recorders."""
from __future__ import annotations

import os
import time
import zlib
from pathlib import Path

import torch

from .. import roofline
from .. import timing as bench
from .arms import _flags_fn, full_arm_fn, mismatched_rows, padded_scores, reference_ids, select_arm_fn, torch_topk_store
from .inputs import full_stage_inputs, select_stage_inputs
from .plan import (
    BLOCK_SIZE,
    COLUMNS,
    CPU_HEADS,
    CPU_MML,
    CSV_NAME,
    HEAD_DIM,
    HEADS,
    MML,
    Point,
    arms_for,
    csv_list,
    on_gpu,
)
from .record import Recorder


class Deadline:
    """``passed()`` once ``seconds`` have gone by since it was made (never for None)."""

    def __init__(self, seconds):
        self.t0 = time.monotonic()
        self.seconds = seconds

    def passed(self) -> bool:
        return self.seconds is not None and time.monotonic() - self.t0 > self.seconds


def _timed_call(fn):
    """(result, Timing|None): on the CPU the check call itself is the (wall-clock) timing."""
    if on_gpu():
        res = fn()
        torch.cuda.synchronize()
        return res, None
    t0 = time.perf_counter()
    res = fn()
    dt = (time.perf_counter() - t0) * 1e6
    return res, bench.Timing(dt, dt, dt, dt, dt, 1, 1, bench.timing_method())


def _time(fn, pre: bench.Timing | None, timer: str) -> bench.Timing:
    """``pre`` where the check call was the timing, else ``timer``'s: ``graph`` (:func:`dsa_lab.bench.timing.time_fn`)
    or ``triton`` (``triton.testing.do_bench_cudagraph``, on a GPU)."""
    if pre is not None:
        return pre
    if timer == "triton" and on_gpu():
        return bench.time_do_bench_cudagraph(fn)
    return bench.time_fn(fn)


class Sweep:
    """One run of the sweep: its recorders (one per CSV), seeds, flags function and timer; runs a point's pending
    arms and appends a row per arm (stage), collecting errors and mismatches instead of raising."""

    def __init__(self, args, ceilings: dict, out_dir: Path, commit: str | None):
        self.args = args
        self.timer = getattr(args, "timer", "graph")
        self.ceilings = ceilings
        self.out_dir = out_dir
        self.commit = (commit or "")[:12] + ("+dirty" if args._dirty else "") if commit else ""
        self.device = torch.device("cuda" if on_gpu() else "cpu")
        self.mml = args.max_model_len or (MML if on_gpu() else CPU_MML)
        self.recorders: dict[str, Recorder] = {}
        self.wanted_arms = csv_list(args.arms)
        self.errors: list[str] = []
        self.mismatches: list[str] = []
        self.flags_name, self.flags_fn = _flags_fn()
        self.base_seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "little")

    def recorder(self, suite: str) -> Recorder:
        name = CSV_NAME[suite]
        if name not in self.recorders:
            self.recorders[name] = Recorder(self.out_dir / f"{name}.csv", COLUMNS[name])
        return self.recorders[name]

    def seed_for(self, p: Point) -> int:
        h = zlib.crc32(repr((p.stage, p.context, p.concurrency, p.next_n, p.k, p.dist)).encode())
        return (self.base_seed * 1000003 + h) % (2**31)

    def pending_arms(self, p: Point) -> list[str]:
        rec = self.recorder(p.suite)
        if p.suite in ("select", "full"):
            arms = arms_for(p.stage, self.wanted_arms)
            if p.stage == "full" and "triton_fused" in arms:
                from ...plans import fusable

                if not fusable(p.k, BLOCK_SIZE):  # the fused kernel does not serve this k (k > 256)
                    arms.remove("triton_fused")
            return [a for a in arms if not rec.has(arm=a, stage=p.stage, context=p.context, concurrency=p.concurrency,
                                                   next_n=p.next_n, k=p.k, dist=p.dist, block_size=BLOCK_SIZE)]
        stages = STEP_STAGES if p.suite == "step" else PRODUCER_STAGES
        todo = []
        for arm, stage in stages:
            if self.wanted_arms and arm not in self.wanted_arms:
                continue
            if not rec.has(arm=arm, stage=stage, context=p.context, concurrency=p.concurrency, next_n=p.next_n,
                           k=p.k, dist=p.dist, block_size=p.block_size):
                todo.append(f"{arm}:{stage}")
        return todo

    def base_row(self, p: Point, arm: str, stage: str, t: bench.Timing, nbytes: int, seed: int, check: str,
                 launches: int = 1, flops: float = 0.0) -> dict:
        rf = roofline.roofline(nbytes, t.median_us, self.ceilings, launches=launches, flops=flops)
        row = {
            "arm": arm, "stage": stage, "context": p.context, "concurrency": p.concurrency, "next_n": p.next_n,
            "rows": p.rows, "k": p.k, "dist": p.dist,
            **{k: v for k, v in t.as_row().items()},
            "bytes": int(nbytes), "gbps": rf["gbps"], "floor_us": rf["floor_us"], "roofline_frac": rf["roofline_frac"],
            "max_model_len": self.mml, "check": check, "seed": seed, "commit": self.commit,
        }
        return row

    # ---- select / full
    def run_select_full(self, p: Point, arms: list[str], deadline: Deadline) -> None:
        seed = self.seed_for(p)
        rec = self.recorder(p.suite)
        if p.stage == "select":
            inp = select_stage_inputs(p, self.mml, seed, self.device)
            make = lambda a: select_arm_fn(a, inp, p.k)  # noqa: E731
            ids_of = lambda r: r  # noqa: E731
        else:
            inp = full_stage_inputs(p, self.mml, seed, self.device)
            make = lambda a: full_arm_fn(a, inp, p.k, self.flags_fn)  # noqa: E731
            ids_of = lambda r: r[0]  # noqa: E731
        need_check = any(a != "torch" for a in arms)
        baseline = None
        if need_check:
            if on_gpu():
                baseline = ids_of(make("torch")()).clone()
                torch.cuda.synchronize()
            else:
                baseline = reference_ids(p, inp)
        nb = -(-self.mml // BLOCK_SIZE)
        for arm in arms:
            if deadline.passed():
                return
            try:
                fn = make(arm)
                res, pre = _timed_call(fn)
                check = "baseline" if arm == "torch" and on_gpu() else ""
                if baseline is not None and check != "baseline":
                    bad = mismatched_rows(ids_of(res), baseline)
                    check = "ok" if bad == 0 else f"mismatch:{bad}/{p.rows}"
                    if bad and arm.startswith("torch") and not on_gpu():
                        # CPU torch.topk's tie order is not the contract's (ties to the smaller index):
                        # reported, not a failure
                        check = f"cpu-topk-ties:{bad}/{p.rows}"
                    elif bad:
                        self.mismatches.append(f"{arm} {p}: {bad} rows differ")
                t = _time(fn, pre, self.timer)
            except torch.cuda.OutOfMemoryError as e:  # pragma: no cover - GPU only
                torch.cuda.empty_cache()
                self.errors.append(f"{arm} {p}: out of memory ({e})")
                continue
            except Exception as e:  # noqa: BLE001 - record and continue with the next arm
                self.errors.append(f"{arm} {p}: {type(e).__name__}: {e}")
                continue
            if p.stage == "select":
                nbytes = roofline.select_bytes(arm, inp["live"], nb, p.k)
                extra = {"live_blocks": max(inp["live"])}
            else:
                nbytes = roofline.full_bytes(arm, inp["ends_list"], self.mml, BLOCK_SIZE, p.k)
                extra = {"live_blocks": -(-max(inp["ends_list"]) // BLOCK_SIZE)}
            row = self.base_row(p, arm, p.stage, t, nbytes, seed, check)
            row.update(extra, block_size=BLOCK_SIZE)
            rec.add(row)
        inp = None  # the inputs go with the point

    # ---- step / producer
    def run_step_producer(self, p: Point, todo: list[str], deadline: Deadline) -> None:
        from ... import producer
        from ...paged import random_decode_problem
        from ..step import DecodeStep

        seed = self.seed_for(p)
        bs = p.block_size or BLOCK_SIZE  # (the producer suite selects nothing: its rows carry no block size)
        rec = self.recorder(p.suite)
        heads = self.args.heads or (HEADS if on_gpu() else CPU_HEADS)
        prob = random_decode_problem(p.concurrency, p.next_n, p.context, num_heads=heads, head_dim=HEAD_DIM,
                                     block_kv=self.args.block_kv, max_model_len=self.mml, device=self.device,
                                     seed=seed)
        q, kv, w, ctx, bt = prob["q_fp8"], prob["kv_cache"], prob["weights"], prob["context_lens"], prob["block_table"]
        ends = producer.decode_row_ends(ctx, p.next_n)
        ends_list = [int(e) for e in ends.tolist()]
        logits = torch.full((p.rows, self.mml), float("nan"), device=self.device)

        def logits_triton():
            return producer.paged_mqa_logits(q, kv, w, ctx, bt, self.mml, impl="triton", out=logits)

        common = {"heads": heads, "head_dim": HEAD_DIM, "block_kv": self.args.block_kv}
        pbd = roofline.producer_bytes(prob["seq_lens"], p.next_n, heads, HEAD_DIM, block_kv=self.args.block_kv,
                                      max_model_len=self.mml)  # keys + scales once per sequence, q, weights, table
        pb = {"read": pbd["read"], "write": pbd["out"]}
        # the fp8 MMA work of the Triton producer: every key of a sequence against each of its rows' H heads
        mma_flops = roofline.producer_flops(prob["seq_lens"], p.next_n, heads, HEAD_DIM, max_model_len=self.mml)
        logits_triton()
        if on_gpu():
            torch.cuda.synchronize()
        k = p.k
        from ...scores import block_scores
        from ...select import select_candidate_blocks, topk_select

        live = [-(-e // bs) for e in ends_list]
        nb = -(-self.mml // bs)
        live_t = torch.tensor(live, dtype=torch.int32, device=self.device)
        flags_fn = self.flags_fn
        sel_out = torch.empty((p.rows, k), dtype=torch.int32, device=self.device)
        scores_b = block_scores(logits, ends, block_size=bs, impl="triton")
        scores_p = padded_scores(logits, ends, bs)
        ids_t = topk_select(scores_b, k, lengths=live_t, impl="triton")
        ids_u = torch_topk_store(scores_p, k)
        mm = mismatched_rows(ids_t, ids_u) if on_gpu() else mismatched_rows(
            ids_t, reference_ids(Point("full", "full", 0, 0, 0, k, "", bs), {"logits": logits, "ends": ends}))
        check = "ok" if mm == 0 else f"mismatch:{mm}/{p.rows}"
        if mm:
            self.mismatches.append(f"step {p}: {mm} rows differ")
        logits_bytes = pb["read"] + pb["write"]
        sel_bytes = lambda arm: roofline.select_bytes(arm, live, nb, k)  # noqa: E731
        flag_bytes = p.rows * k * 4 + p.rows * (nb + 1)
        win = sum(min(e, self.mml) for e in ends_list) * 4

        def step_triton():
            logits_triton()
            producer.sanitize_decode_logits(logits, ends)
            return select_candidate_blocks(logits, ends, k, block_size=bs, impl="triton", out=sel_out,
                                           with_flags=True)[1]

        # the fused composition (the default DecodeStep): the producer also writes sanitized logits, the block
        # scores and zeroed flags; the select reads the scores.  Its own buffers: nothing to restore.
        fstep, f_check = None, ""
        if p.suite == "step":
            fstep = DecodeStep(q, kv, w, ctx, bt, self.mml, topk_blocks=k, block_size=bs,
                                        impl="triton")
            fstep.run()
            f_ids = fstep.candidates.clone()
            f_ref = torch_topk_store(padded_scores(fstep.logits, ends, bs), k) if on_gpu() else reference_ids(
                Point("full", "full", 0, 0, 0, k, "", bs), {"logits": fstep.logits, "ends": ends})
            fm = mismatched_rows(f_ids, f_ref)
            f_flags_ok = torch.equal(fstep.flags, flags_fn(f_ids, self.mml, bs))
            f_check = "ok" if fm == 0 and f_flags_ok else f"mismatch:{fm}/{p.rows}" + ("" if f_flags_ok else ",flags")
            if f_check != "ok":
                self.mismatches.append(f"fused step {p}: {f_check}")

        def fused_step():
            fstep.stage_logits()
            fstep.stage_candidates()

        def step_torch():
            logits_triton()
            torch.nan_to_num_(logits, nan=float("-inf"))
            ids = torch_topk_store(padded_scores(logits, ends, bs), k)
            return flags_fn(ids, self.mml, bs)

        if p.suite == "step":
            fns = {
                ("triton", "logits"): (logits_triton, logits_bytes),
                ("triton", "sanitize"): (lambda: producer.sanitize_decode_logits(logits, ends), 2 * win),
                ("triton", "scores"): (lambda: block_scores(logits, ends, block_size=bs, impl="triton"),
                                       win + p.rows * nb * 4),  # every slot written (-inf past the extent)
                ("triton", "select"): (lambda: topk_select(scores_b, k, lengths=live_t, impl="triton", out=sel_out),
                                       sel_bytes("triton")),
                ("triton", "flags"): (lambda: flags_fn(ids_t, self.mml, bs), flag_bytes),
                ("triton", "candidates"): (lambda: select_candidate_blocks(
                    logits, ends, k, block_size=bs, impl="triton", out=sel_out, with_flags=True)[1],
                    roofline.full_bytes("triton", ends_list, self.mml, bs, k)),
                ("triton", "step"): (step_triton, logits_bytes + 2 * win
                                     + roofline.full_bytes("triton", ends_list, self.mml, bs, k)),
                ("fused", "logits"): (fstep.stage_logits, logits_bytes + win // bs + p.rows * (nb + 1)),
                ("fused", "candidates"): (fstep.stage_candidates, sel_bytes("triton") + p.rows * k),
                ("fused", "step"): (fused_step, logits_bytes + win // bs + p.rows * (nb + 1)
                                    + sel_bytes("triton") + p.rows * k),
                ("torch", "sanitize"): (lambda: torch.nan_to_num_(logits, nan=float("-inf")),
                                        2 * p.rows * self.mml * 4),
                ("torch", "scores"): (lambda: padded_scores(logits, ends, bs),
                                      p.rows * self.mml * 4 + p.rows * nb * 4),
                ("torch", "select"): (lambda: torch_topk_store(scores_p, k), sel_bytes("torch")),
                ("torch", "flags"): (lambda: flags_fn(ids_u, self.mml, bs), flag_bytes),
                ("torch", "step"): (step_torch, logits_bytes + 2 * p.rows * self.mml * 4
                                    + roofline.full_bytes("torch", ends_list, self.mml, bs, k)),
            }
        else:
            fns = {
                ("triton", "logits"): (logits_triton, pb["read"]),
                ("bounded", "sanitize"): (lambda: producer.sanitize_decode_logits(logits, ends), 2 * win),
                ("full_width", "sanitize"): (lambda: torch.nan_to_num_(logits, nan=float("-inf")),
                                             2 * p.rows * self.mml * 4),
            }
            if _torch_producer_fits(p, heads, self.device):
                ref_out = torch.empty_like(logits)
                fns[("torch", "logits")] = (
                    lambda: producer.paged_mqa_logits(q, kv, w, ctx, bt, self.mml, impl="torch", out=ref_out),
                    pb["read"])
        for (arm, stage), (fn, nbytes) in fns.items():
            if f"{arm}:{stage}" not in todo:
                continue
            if deadline.passed():
                return
            row_check = (f_check if arm == "fused" else check) if p.suite == "step" else ""
            try:
                if p.suite == "producer" and arm == "torch":
                    res, pre = _timed_call(fn)
                    row_check = _rel_err(res, logits, ends_list)
                    t = pre if pre is not None else _time_eager(fn)
                else:
                    res, pre = _timed_call(fn)
                    t = _time(fn, pre, self.timer)
            except torch.cuda.OutOfMemoryError as e:  # pragma: no cover - GPU only
                torch.cuda.empty_cache()
                self.errors.append(f"{arm}:{stage} {p}: out of memory ({e})")
                continue
            except Exception as e:  # noqa: BLE001
                self.errors.append(f"{arm}:{stage} {p}: {type(e).__name__}: {e}")
                continue
            launches = 2 if stage == "step" else 1
            flops = mma_flops if (p.suite == "producer" and stage == "logits" and arm == "triton") else 0
            row = self.base_row(p, arm, stage, t, nbytes, seed, row_check, launches=launches, flops=flops)
            row.update(common)
            if p.suite == "step":
                row["block_size"] = bs
            else:
                row["write_bytes"] = pb["write"] if stage == "logits" else 0
                row["flops"] = flops
                peak = float(self.ceilings.get("fp8_tflops") or 0)
                row["tflops"] = flops / (t.median_us * 1e6) if flops and t.median_us > 0 else None
                row["mma_frac"] = row["tflops"] / peak if row["tflops"] and peak else None
                bw = float(self.ceilings.get("stream_gbps") or 0)
                row["stream_frac"] = row["gbps"] / bw if bw else None
            rec.add(row)
            # the step functions sanitize in place; restore real logits for the next stage
            if stage in ("sanitize", "step"):
                logits_triton()


STEP_STAGES = [
    ("triton", "logits"), ("triton", "sanitize"), ("triton", "scores"), ("triton", "select"), ("triton", "flags"),
    ("triton", "candidates"), ("triton", "step"), ("fused", "logits"), ("fused", "candidates"), ("fused", "step"),
    ("torch", "sanitize"), ("torch", "scores"), ("torch", "select"), ("torch", "flags"), ("torch", "step"),
]
PRODUCER_STAGES = [("triton", "logits"), ("torch", "logits"), ("bounded", "sanitize"), ("full_width", "sanitize")]


def _torch_producer_fits(p: Point, heads: int, device) -> bool:
    """The torch reference is chunked over tokens (bounded temporaries); on the CPU keep it small."""
    if device.type == "cuda":
        return True
    return p.concurrency * p.next_n * heads * p.context < 2**24


def _time_eager(fn, reps: int = 5) -> bench.Timing:
    """CUDA events around eager calls (for the torch producer reference: too big to capture usefully)."""
    fn()
    torch.cuda.synchronize()
    xs = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        xs.append(s.elapsed_time(e) * 1e3)
    t = bench._summarize(xs, 1, "cuda events (eager)")
    return t


def _rel_err(ref_out, tri_out, ends_list) -> str:
    """max |tri - ref| / max |ref| over every row's window (the producer's accuracy, recorded)."""
    worst, scale = 0.0, 0.0
    for r, e in enumerate(ends_list):
        if e <= 0:
            continue
        a, b = ref_out[r, :e], tri_out[r, :e]
        worst = max(worst, float((a - b).abs().max()))
        scale = max(scale, float(a.abs().max()))
    return f"rel_err={worst / scale:.2e}" if scale else "rel_err=0"


