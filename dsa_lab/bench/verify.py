"""Run the named correctness matrix (and a random fuzz) on the present backend.

Every arm is compared with the exact reference (a sort of packed keys; docs/design.md §2):
outputs are poisoned before each call, every one of the ``k`` slots of every row
is checked, and rows are compared as sets (the contract leaves the order free).
The Triton arm must match everywhere.  The ``torch`` arm (``torch.topk``) is
expected to match on CUDA — a claim this command measures — while on the CPU its
tie order is not the contract's, so CPU mismatches of that arm are reported as
expected and do not fail the run.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time

import torch

from .. import _impl
from ..cases import FUZZ_MENU
from ..paged import FP8_DTYPE, split_cache
from ..producer import decode_row_ends, paged_mqa_logits_torch
from ..select import select_candidate_blocks, topk_select, topk_select_reference
from ..warmup import VERIFY_FUZZ_WIDTH
from .shapes import DISTS, MATRIX, SPECIAL_DISTS, Case, make_inputs

POISON = -0x21524111  # 0xDEADBEEF as int32: never a valid id or -1


def logits_error(q_fp8, kv_cache, weights, context_lens, block_table, got, ref):
    """The producer's error: max of ``|got - ref| / M`` over every in-window entry, with the magnitude
    ``M(r, p) = scale(p) * sum_h |w_h| * sum_d |q_hd k_d|`` (the head sum has both signs and may cancel to ~0, so
    ``|logit|`` bounds nothing; :mod:`dsa_lab.producer` states the tolerances), and the max plain relative error
    ``|got - ref| / |ref|`` over entries with ``|ref| >= 1e-2 * M``.

    Returns ``(bounded_err, rel_err)`` as floats (0.0 when nothing is in a window).  Host-side.
    """
    B, N, H, D = q_fp8.shape
    width = ref.shape[1]
    mag = torch.zeros_like(ref)
    absw = weights.abs().contiguous()
    # M is the reference computation on |q|, |k|, |w| (scales are positive)
    paged_mqa_logits_torch(
        _abs_fp8(q_fp8), _abs_cache(kv_cache, D), absw, context_lens, block_table, mag
    )
    ends = decode_row_ends(context_lens, N).to(torch.int64).clamp(max=width)
    live = torch.arange(width, device=ref.device)[None, :] < ends[:, None]
    if not bool(live.any()):
        return 0.0, 0.0
    diff = (got - ref).abs()[live].double()
    m = mag[live].double()
    bounded = float((diff / m.clamp_min(1e-30)).max())
    big = ref[live].abs().double() >= 1e-2 * m
    rel = float((diff[big] / ref[live].abs().double()[big]).max()) if bool(big.any()) else 0.0
    return bounded, rel


def _abs_fp8(x):
    return (x.view(torch.uint8) & 0x7F).view(FP8_DTYPE)


def _abs_cache(kv_cache, D):
    c = kv_cache.clone()
    keys, _ = split_cache(c, D)
    keys &= 0x7F  # clear the sign bit of every key byte; scales are positive already
    return c


def reference_ids(case: Case, inp: dict) -> torch.Tensor:
    if case.op == "select":
        return topk_select_reference(inp["x"], case.k, inp["ends"], case.row_repeat)
    return select_candidate_blocks(inp["x"], inp["ends"], case.k, row_starts=inp["starts"],
                                   block_size=case.block_size, row_repeat=case.row_repeat, impl="reference")


def run_arm(case: Case, inp: dict, arm: str) -> torch.Tensor:
    out = torch.full((case.rows, case.k), POISON, dtype=torch.int32, device=inp["x"].device)
    if case.op == "select":
        topk_select(inp["x"], case.k, lengths=inp["ends"], row_repeat=case.row_repeat, impl=arm, out=out)
    else:
        select_candidate_blocks(
            inp["x"], inp["ends"], case.k, row_starts=inp["starts"], block_size=case.block_size,
            row_repeat=case.row_repeat, impl=arm, out=out,
        )
    return out


def compare(got: torch.Tensor, ref: torch.Tensor) -> tuple[int, str]:
    """(number of mismatching rows, description of the first) — rows compared as sorted sets, all slots."""
    g = torch.sort(got.cpu(), dim=1).values
    r = torch.sort(ref.cpu(), dim=1).values
    bad = (g != r).any(dim=1)
    n = int(bad.sum())
    if not n:
        return 0, ""
    row = int(bad.nonzero()[0, 0])
    gs, rs = set(got[row].tolist()), set(ref[row].tolist())
    col = int((g[row] != r[row]).nonzero()[0, 0])
    msg = (
        f"row {row}: first differing sorted slot {col} (got {int(g[row, col])}, want {int(r[row, col])}); "
        f"missing {sorted(rs - gs)[:8]} extra {sorted(gs - rs)[:8]}"
    )
    return n, msg


def strict(arm: str, device: torch.device) -> bool:
    """Does a mismatch of this arm fail the run?  torch.topk is held to the contract on CUDA only."""
    return arm != "torch" or device.type == "cuda"


def run_case(case: Case, arms, *, seed: int, device) -> list[dict]:
    inp = make_inputs(case, seed=seed, device=device)
    ref = reference_ids(case, inp)
    rows = []
    for arm in arms:
        if not arm_serves(arm, case):
            continue  # an arm of the candidate-block pipeline only (fused: the shapes it serves)
        t0 = time.perf_counter()
        try:
            got = run_arm(case, inp, arm)
            n_bad, first = compare(got, ref)
            err = ""
        except Exception as e:  # a crash is a failure, reported like a mismatch
            n_bad, first, err = case.rows, "", f"{type(e).__name__}: {e}"
        rows.append(
            {
                "case": case.name, "op": case.op, "rows": case.rows, "width": case.width, "k": case.k,
                "dist": case.dist, "arm": arm, "seed": seed, "bad_rows": n_bad,
                "strict": strict(arm, torch.device(device)), "first_mismatch": first, "error": err,
                "seconds": round(time.perf_counter() - t0, 4),
            }
        )
    return rows


def arm_serves(arm: str, case) -> bool:
    """``triton_unfused`` / ``triton_fused`` are arms of the candidate-block pipeline only; the fused kernel
    serves the shapes the public API accepts for it (k <= 256 at block_size 8, up to its blocks per row)."""
    if arm in ("triton_unfused", "triton_fused") and case.op != "blocks":
        return False
    if arm == "triton_fused":
        from .._impl import device_facts
        from ..select import _check_fused

        try:  # (its bounds do not depend on the device)
            _check_fused(case.k, case.block_size, case.width, device_facts(None))
        except ValueError:
            return False
    return True


def default_arms(device) -> tuple[str, ...]:
    """``triton`` (the default path: for candidate blocks the unfused composition), ``triton_fused``
    (the fused kernel, where it serves the shape) and ``torch``.  ``triton_unfused`` can be asked for by
    name (``--arms``); it runs the same code as ``triton`` on candidate blocks."""
    if not _impl.triton_usable(torch.device(device)):
        return ("torch",)
    return ("triton", "triton_fused", "torch")


def run_matrix(*, scale: str, arms, seed: int, device, names=None, progress: bool = True,
               shard: tuple[int, int] = (0, 1)) -> list[dict]:
    """The named matrix (cases whose name contains one of ``names``; shard ``(i, n)`` takes every
    n-th case from the i-th, so parallel processes compile different kernels).  Without a progress
    bar each case prints one line as it finishes (a log that shows how far a cut-off run got)."""
    cases = [c for c in MATRIX if not names or any(n in c.name for n in names)]
    si, sn = shard
    idx = [i for i in range(len(cases)) if i % sn == si]
    results = []
    it = idx
    if progress:
        from tqdm import tqdm

        it = tqdm(idx, desc=f"verify ({scale}, {','.join(arms)})", unit="case")
    for i in it:
        t0 = time.perf_counter()
        rs = run_case(cases[i].sized(scale), arms, seed=seed + i, device=device)
        results += rs
        if not progress:
            cells = " ".join(f"{r['arm']}={'ERR' if r['error'] else r['bad_rows']}" for r in rs)
            print(f"  {cases[i].name:<26} {cells}  ({time.perf_counter() - t0:.1f} s)", flush=True)
    return results


def random_case(gen: torch.Generator, max_width: int, max_rows: int, menu=None) -> Case:
    """One random case: compile-relevant settings from :data:`dsa_lab.cases.FUZZ_MENU` (or the entries ``menu``
    indexes), everything else random (rows, per-row ends and starts, k inside its bucket, the distribution, garbage
    past the ends); widths capped by ``max_width``."""

    def ri(lo, hi):
        return int(torch.randint(lo, hi + 1, (1,), generator=gen))

    entries = FUZZ_MENU if menu is None else [FUZZ_MENU[i] for i in menu]
    op, width, kp, rr, bs = entries[ri(0, len(entries) - 1)]
    width = min(width, max_width)
    rows = rr * ri(1, max(1, max_rows // rr))
    k = ri(max(1, kp // 2 + 1), kp) if kp > 2 else ri(1, kp)
    dist = (DISTS + SPECIAL_DISTS)[ri(0, len(DISTS) + len(SPECIAL_DISTS) - 1)]
    ends = ("ctx", "ragged", "some_zero", "full", "zero", "past_width")[ri(0, 5)]
    return Case(
        f"fuzz_{op}", op, rows, width, k, context=ri(0, width), ends=ends, starts=bool(ri(0, 1)) and op == "blocks",
        row_repeat=rr, dist=dist, garbage_tail=bool(ri(0, 3) == 0), block_size=bs,
    )


def _bad_rows_device(got: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """Number of mismatching rows (sorted-set comparison of all slots), left on the device."""
    return (torch.sort(got, dim=1).values != torch.sort(ref, dim=1).values).any(dim=1).sum()


def fuzz(n: int, *, arms, seed: int, device, max_width: int, max_rows: int, progress=True, sync_every: int = 256,
         max_seconds: float | None = None, dump_dir: str | None = None, max_dumps: int = 4, menu=None) -> dict:
    """``n`` random cases (:func:`random_case`) through every arm, each against the exact reference.

    Mismatch counts stay on the device and are read every ``sync_every`` cases (a host read per
    case would dominate); a failing case is re-run from its seed for the detailed message.
    ``max_seconds`` stops early; the record's ``n`` is then the number of cases actually run.
    ``dump_dir``: the first ``max_dumps`` failing cases are saved there (``torch.save``: spec, seed,
    inputs, reference and arm output, on the CPU) so a GPU finding can be replayed anywhere.
    ``menu``: indices into :data:`FUZZ_MENU` to draw from (shards split the menu so that parallel
    processes compile different kernels); None = all of it.
    """
    t0 = time.perf_counter()
    done = 0
    gen = torch.Generator().manual_seed(seed)
    counts = {a: {"cases": 0, "mismatched_cases": 0} for a in arms}
    failures = []
    pending = []  # (case, case_seed, arm, bad-rows tensor)
    it = range(n)
    if progress:
        from tqdm import tqdm

        it = tqdm(it, desc="fuzz", unit="case", mininterval=2.0)

    def drain():
        if not pending:
            return
        vals = torch.stack([b for *_, b in pending]).cpu().tolist()
        for (c, cs, arm, _), nb in zip(pending, vals):
            counts[arm]["cases"] += 1
            if nb:
                counts[arm]["mismatched_cases"] += 1
                if len(failures) < 50:
                    detail = next(r for r in run_case(c, (arm,), seed=cs, device=device))
                    failures.append({**detail, "case_spec": dataclasses.asdict(c)})
                    if dump_dir and len(failures) <= max_dumps:
                        _dump_case(dump_dir, len(failures), c, cs, arm, device)
        pending.clear()

    for i in it:
        if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
            break
        done = i + 1
        c = random_case(gen, max_width, max_rows, menu)
        cs = seed * 1_000_003 + i
        inp = make_inputs(c, seed=cs, device=device)
        ref = reference_ids(c, inp)
        for arm in arms:
            if not arm_serves(arm, c):
                continue
            try:
                bad = _bad_rows_device(run_arm(c, inp, arm), ref)
            except Exception:  # counted as a mismatch; run_case reports the error
                bad = torch.tensor(c.rows, device=ref.device)
            pending.append((c, cs, arm, bad))
        if len(pending) >= sync_every * len(arms):
            drain()
    drain()
    return {"n": done, "requested": n, "seconds": round(time.perf_counter() - t0, 1), "seed": seed,
            "max_width": max_width, "max_rows": max_rows,
            "menu": list(range(len(FUZZ_MENU))) if menu is None else list(menu), "arms": counts, "failures": failures}


def _dump_case(folder: str, i: int, case: Case, case_seed: int, arm: str, device) -> None:
    os.makedirs(folder, exist_ok=True)
    inp = make_inputs(case, seed=case_seed, device=device)
    ref = reference_ids(case, inp)
    got = run_arm(case, inp, arm)
    cpu = {k: (v.cpu() if isinstance(v, torch.Tensor) else v) for k, v in inp.items()}
    torch.save({"case_spec": dataclasses.asdict(case), "seed": case_seed, "arm": arm, "inputs": cpu,
                "reference": ref.cpu(), "got": got.cpu()}, os.path.join(folder, f"fuzz_fail_{i}_{arm}.pt"))


def format_table(results: list[dict]) -> str:
    arms = list(dict.fromkeys(r["arm"] for r in results))
    by = {}
    for r in results:
        by.setdefault(r["case"], {})[r["arm"]] = r
    head = f"{'case':<26} {'rows':>5} {'width':>7} {'k':>5}  " + "  ".join(f"{a:>16}" for a in arms)
    lines = [head, "-" * len(head)]
    for name, d in by.items():
        any_r = next(iter(d.values()))
        cells = []
        for a in arms:
            r = d.get(a)
            if r is None:
                cells.append(f"{'-':>16}")
                continue
            if r["error"]:
                s = "ERROR"
            elif r["bad_rows"]:
                s = f"{r['bad_rows']} bad" + ("" if r["strict"] else " (cpu)")
            else:
                s = "ok"
            cells.append(f"{s:>16}")
        lines.append(f"{name:<26} {any_r['rows']:>5} {any_r['width']:>7} {any_r['k']:>5}  " + "  ".join(cells))
    return "\n".join(lines)


def failures(results: list[dict]) -> list[dict]:
    return [r for r in results if (r["bad_rows"] or r["error"]) and r["strict"]]


def _shard_arg(s: str) -> tuple[int, int]:
    """``--matrix-shard I/N`` → (I, N) with 0 <= I < N."""
    import argparse

    try:
        i, n = (int(v) for v in s.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--matrix-shard must be I/N (e.g. 0/4), got {s!r}") from None
    if not (n >= 1 and 0 <= i < n):
        raise argparse.ArgumentTypeError(f"--matrix-shard I/N needs 0 <= I < N, got {s!r}")
    return i, n


def _menu_arg(s: str) -> list[int]:
    """``--fuzz-menu 0,6`` → indices into :data:`FUZZ_MENU`."""
    import argparse

    try:
        idx = [int(v) for v in s.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--fuzz-menu must be a comma list of integers, got {s!r}") from None
    bad = [i for i in idx if not 0 <= i < len(FUZZ_MENU)]
    if bad or not idx:
        raise argparse.ArgumentTypeError(f"--fuzz-menu indices must lie in [0, {len(FUZZ_MENU) - 1}], got {s!r}")
    return idx


def add_arguments(p) -> None:
    p.add_argument("--scale", choices=("auto", "cpu", "gpu"), default="auto",
                   help="case sizes: gpu (full) or cpu (interpreter-sized); auto = gpu when CUDA is present")
    p.add_argument("--arms", default=None,
                   help="comma list of arms (default: triton,triton_fused,torch where Triton runs, "
                   "else torch; triton_unfused also accepted)")
    p.add_argument("--cases", default=None, help="comma list of substrings selecting case names")
    p.add_argument("--seed", type=int, default=None, help="input seed (default: fresh each run)")
    p.add_argument("--fuzz", type=int, default=0, help="also run N random cases")
    p.add_argument("--fuzz-max-width", type=int, default=None)
    p.add_argument("--fuzz-max-rows", type=int, default=None)
    p.add_argument("--fuzz-max-seconds", type=float, default=None, help="stop the fuzz early (records the count run)")
    p.add_argument("--fuzz-name", default="fuzz.json", help="file name of the fuzz record inside --record")
    p.add_argument("--fuzz-menu", default=None, type=_menu_arg,
                   help="comma list of FUZZ_MENU indices to draw from (default: all)")
    p.add_argument("--fuzz-dump", default=None, help="folder to save the first failing fuzz cases' inputs into")
    p.add_argument("--record", default=None, help="folder to write verify_matrix.csv / fuzz.json (+ metadata) into")
    p.add_argument("--no-matrix", action="store_true", help="skip the named matrix (e.g. a fuzz-only run)")
    p.add_argument("--matrix-shard", default=(0, 1), type=_shard_arg,
                   help="I/N: run every N-th matrix case from the I-th (parallel shards)")
    p.add_argument("--matrix-name", default="verify_matrix.csv", help="file name of the matrix record inside --record")
    p.add_argument("--streams", action="store_true",
                   help="also the concurrency check (dsa_lab.bench.streams): every select path on 4 streams at once, "
                   "on 2 threads and as 4 graphs replayed at once, each call against the same call alone (GPU only)")
    p.add_argument("--streams-old", default=None, metavar="DIR",
                   help="run the concurrency check on DIR/dsa_lab_old (another tree) instead of this package")
    p.add_argument("--no-progress", action="store_true")


def run(args) -> int:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    scale = args.scale if args.scale != "auto" else ("gpu" if device == "cuda" else "cpu")
    arms = tuple(args.arms.split(",")) if args.arms else default_arms(device)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "little")
    names = args.cases.split(",") if args.cases else None
    backend = "cuda: " + torch.cuda.get_device_name() if device == "cuda" else (
        "cpu (Triton interpreter)" if _impl.interpreter_active() else "cpu (torch only)"
    )
    print(f"dsa-lab verify: backend {backend}; scale {scale}; arms {','.join(arms)}; seed {seed}")
    results = []
    if not args.no_matrix:
        results = run_matrix(scale=scale, arms=arms, seed=seed, device=device, names=names,
                             progress=not args.no_progress, shard=args.matrix_shard)
        print(format_table(results))
    bad = failures(results)
    fz = None
    if args.fuzz:
        mw = args.fuzz_max_width or (VERIFY_FUZZ_WIDTH if device == "cuda" else 300)
        mr = args.fuzz_max_rows or (64 if device == "cuda" else 4)
        fz = fuzz(args.fuzz, arms=arms, seed=seed, device=device, max_width=mw, max_rows=mr,
                  progress=not args.no_progress, max_seconds=args.fuzz_max_seconds, dump_dir=args.fuzz_dump,
                  menu=args.fuzz_menu)
        for a, c in fz["arms"].items():
            print(f"fuzz {a}: {c['mismatched_cases']} mismatched of {c['cases']} cases ({fz['seconds']} s)")
        bad += [f for f in fz["failures"] if f["strict"]]
    conc = None
    if args.streams or args.streams_old:
        conc = _streams(args, seed, device)
        bad += [dict(case=r["case"], arm=r["mode"], error=f"{r['mismatched']} of {r['calls']} calls differ "
                     "from the same call alone", first_mismatch="") for r in conc if r["mismatched"]]
    if args.record:
        _record(args.record, results, fz, seed=seed, scale=scale, fuzz_name=args.fuzz_name,
                matrix_name=args.matrix_name, streams=conc,
                streams_name="streams_old.json" if args.streams_old else "streams.json")
    for r in bad[:10]:
        print(f"FAIL {r['case']} [{r['arm']}]: {r['error'] or r['first_mismatch']}")
    n_cases = len({r["case"] for r in results})
    print(f"{n_cases} matrix cases x {len(arms)} arms, {fz['n'] if fz else 0} fuzz cases: {len(bad)} strict failures")
    return 1 if bad else 0


def _streams(args, seed: int, device) -> list[dict]:
    from . import streams

    if device != "cuda":
        raise SystemExit("--streams needs a CUDA GPU (calls on several streams at once)")
    if args.streams_old:
        from .trees import package

        pkg = package("old", args.streams_old)
    else:
        import dsa_lab as pkg
    rows = streams.run_all(pkg, seed=seed, names=args.cases.split(",") if args.cases else None,
                           progress=None if args.no_progress else lambda r: print(
                               f"  streams {r['case']} [{r['mode']} x {r['streams']}]: {r['mismatched']} of "
                               f"{r['calls']} calls differ", flush=True))
    print(streams.format_table(rows))
    return rows


def _record(folder: str, results, fz, *, seed: int, scale: str, fuzz_name: str = "fuzz.json",
            matrix_name: str = "verify_matrix.csv", streams=None, streams_name: str = "streams.json") -> None:
    import csv
    import sys

    from . import data
    os.makedirs(folder, exist_ok=True)
    meta = data.collect_metadata(" ".join(["dsa-lab"] + sys.argv[1:]), {"seed": seed, "scale": scale})
    if streams is not None:
        with open(os.path.join(folder, streams_name), "w") as f:
            json.dump({"meta": meta, "cases": streams}, f, indent=1, default=str)
    if fz is not None:
        with open(os.path.join(folder, fuzz_name), "w") as f:
            json.dump({"meta": meta, **fz}, f, indent=1, default=str)
    if not results:
        return
    path = os.path.join(folder, matrix_name)
    cols = ["case", "op", "rows", "width", "k", "dist", "arm", "seed", "bad_rows", "strict", "first_mismatch", "error",
            "seconds"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in results:
            w.writerow({c: r[c] for c in cols})
    data.save_meta(data.meta_path(path), meta)


def merge_matrix_records(paths, out_path) -> int:
    """Concatenate matrix shards (same seed, disjoint cases) into one CSV in matrix order; the first
    shard's metadata, with every shard's command, goes beside it.  Returns the number of rows."""
    import csv

    from . import data
    rows, cmds, meta = [], [], None
    for p in paths:
        with open(p, newline="") as f:
            rows += list(csv.DictReader(f))
        m = data.load_meta(data.meta_path(p))
        meta = meta or m
        cmds.append(m.get("command", ""))
    order = {c.name: i for i, c in enumerate(MATRIX)}
    rows.sort(key=lambda r: order.get(r["case"], len(order)))
    with open(out_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["case"])
        w.writeheader()
        w.writerows(rows)
    data.save_meta(data.meta_path(out_path), {**(meta or {}), "shard_commands": cmds})
    return len(rows)


def merge_fuzz_records(paths, out_path) -> dict:
    """Combine fuzz shards (run in parallel processes with different seeds) into one record.

    An input that is itself a merged record contributes its shards, so a later run adds to a record
    without nesting.  Each shard entry keeps its commit and date (and its command where known); the
    record's ``meta`` is the first input's, with ``commits`` listing every commit in shard order."""
    keys = ("n", "requested", "seconds", "seed", "max_width", "max_rows", "menu", "arms")
    recs = []
    for p in paths:
        with open(p) as f:
            recs.append(json.load(f))
    shards = []
    for r in recs:
        meta = r.get("meta", {})
        if "shards" in r:  # an earlier merge: its shards carry their own fields
            shards += [{"commit": meta.get("commit"), "date_utc": meta.get("date_utc"), **sh} for sh in r["shards"]]
        else:
            shards.append({**{k: r[k] for k in keys if k in r}, "commit": meta.get("commit"),
                           "date_utc": meta.get("date_utc"), "command": meta.get("command")})
    arms = {}
    for sh in shards:
        for a, c in sh["arms"].items():
            t = arms.setdefault(a, {"cases": 0, "mismatched_cases": 0})
            t["cases"] += c["cases"]
            t["mismatched_cases"] += c["mismatched_cases"]
    rec = {
        "meta": {**(recs[0].get("meta", {}) if recs else {}),
                 "commits": list(dict.fromkeys(sh["commit"] for sh in shards if sh.get("commit")))},
        "n": sum(sh["n"] for sh in shards),
        "shards": shards,
        "arms": arms,
        "failures": [f for r in recs for f in r.get("failures", [])][:50],
        "menu": [list(m) for m in FUZZ_MENU],
    }
    with open(out_path, "w") as f:
        json.dump(rec, f, indent=1, default=str)
    return rec


if __name__ == "__main__":  # python -m dsa_lab.verify merge OUT SHARD...
    import sys

    if len(sys.argv) >= 3 and sys.argv[1] == "merge-matrix":
        print(merge_matrix_records(sys.argv[3:], sys.argv[2]), "rows")
    elif len(sys.argv) >= 3 and sys.argv[1] == "merge":
        r = merge_fuzz_records(sys.argv[3:], sys.argv[2])
        print(json.dumps({"n": r["n"], "arms": r["arms"]}))
