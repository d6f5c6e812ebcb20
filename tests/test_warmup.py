"""Compiled variants, counted from the launchers themselves (dsa_lab.warmup records the launches a call makes, on meta
tensors: no GPU).  Bounds: the decode grid (rows 1-640, contexts, k in {64, 512, 2048}, select and full stage, the
default arm) needs at most 30 compiled variants and 5 of the hier kernel; at fixed rows and k, any width from 1 to
262144 compiles at most 2 variants of each kernel; every decode variant is in the warmup's list."""
import collections

import pytest
import torch

from dsa_lab import cli, warmup

H200 = warmup.H200


@pytest.fixture(scope="module")
def decode():
    return warmup.variants(warmup.decode_calls(), H200)


def _kernel(key):
    return key.split(" ", 1)[0]


def test_decode_grid_variant_bounds(decode):
    per_kernel = collections.Counter(_kernel(k) for k in decode)
    assert len(decode) <= 30, sorted(decode)
    assert per_kernel["_hier_kernel"] <= 5, per_kernel
    # every call of the grid launched something, and the grid reaches both select algorithms and the scores launch
    assert {"_hier_kernel", "_radix_par_kernel", "_bisect_kernel", "_block_scores_kernel"} <= set(per_kernel)


def test_rows_never_select_a_hier_variant_of_the_default_arm(decode):
    """Row counts 1-640 at one k and stage share their hier kernel: the hier variants are one per (k bucket, stage)."""
    hier = [k for k in decode if _kernel(k) == "_hier_kernel"]
    buckets = collections.Counter((k.split("KP=")[1].split()[0], "BLOCK_SCORES=1" in k) for k in hier)
    assert all(n == 1 for n in buckets.values()), buckets


WIDTHS = sorted({1, 2, 3, 7, 15, 16, 17, 31, 100, 127, 128, 129, 500, 511, 512, 513, 1000, 1023, 1024, 1025, 2047,
                 2049, 4095, 4097, 8191, 8193, 16383, 16385, 32767, 32768, 32769, 65535, 65537, 131071, 131073,
                 262143, 262144} | set(range(3, 262144, 7919)))


@pytest.mark.parametrize("entry", ["select", "full"])
@pytest.mark.parametrize("k", [7, 64, 100, 512, 2048])
@pytest.mark.parametrize("rows", [1, 4, 640])
def test_any_width_at_most_two_variants_per_kernel(entry, k, rows):
    vs = warmup.variants([warmup.Call(entry, rows, w, k) for w in WIDTHS], H200)
    per_kernel = collections.Counter(_kernel(key) for key in vs)
    assert max(per_kernel.values()) <= 2, {key for key in vs}


def test_decode_variants_are_warmed(decode):
    warm = warmup.variants(warmup.warm_calls(max_rows=300), H200)
    assert set(decode) <= set(warm), set(decode) - set(warm)


def test_the_fused_step_adds_only_its_producer():
    """The fused decode step: its select from the producer's scores compiles no variant the decode grid's candidate
    path does not (any rows, width, k), its producer one per next_n and bound layout whatever the batch and width;
    the warm list holds them all."""
    sel = warmup.variants([warmup.Call("step", r, w, k) for r in (1, 20, 66, 640) for w in (1001, 262144)
                           for k in (64, 300, 2048)], H200)
    prod = warmup.variants([warmup.Call("producer_step", b, w, n, starts=two) for b in (1, 128) for w in (4096, 262144)
                            for n in (1, 5) for two in (False, True)], H200)
    assert len(prod) == 4, sorted(prod)
    full = warmup.variants([warmup.Call("full", r, w, k) for r in (1, 20, 66, 640) for w in (1001, 262144)
                            for k in (64, 300, 2048)], H200)
    assert set(sel) <= set(full), set(sel) - set(full)
    assert set(prod) <= set(warmup.variants(warmup.warm_calls(max_rows=2), H200))


def test_the_candidate_mask_is_one_warmed_variant():
    """The compat mask (flags, then the mask kernel) compiles one variant per block size whatever the rows, width,
    row starts, row_repeat and ids per row, and the warm list holds it."""
    calls = [warmup.Call("mask", r, w, k, 8, rr, st) for r in (2, 640) for w in (1, 1001, 262144)
             for k in (1, 2048) for rr in (1, 2) for st in (False, True)]
    vs = warmup.variants(calls, H200)
    assert sorted(warmup.parts(v[0])[0] for v in vs.values()) == ["_flags_kernel", "_mask_kernel"], sorted(vs)
    assert set(vs) <= set(warmup.variants(warmup.warm_calls(max_rows=2), H200))


def test_record_names_what_the_call_launches():
    """A recorded call: the scores launch then the hier select for k = 64 over 262144 logits; the parallel radix's
    five launches of one kernel for k = 2048 at 8 rows; every variant key spells the kernel, its constexprs and
    options."""
    full = warmup.record(warmup.Call("full", 8, 262144, 64), H200)
    assert [warmup.parts(x)[0] for x in full] == ["_block_scores_kernel", "_hier_kernel"]
    name, sig, cx, opts = warmup.parts(full[1])
    assert cx["KP"] == 64 and cx["BLOCK_SCORES"] and cx["FLAGS"] and opts["launch_pdl"] and sig["src_ptr"] == "*fp32"
    # stage A in the scores launch (at most SM/4 rows): one program per tile of the row (no loop); beyond, the grid
    # of the SM-count rule (12 x SM programs at 40 rows), the keys' slot unused
    for rows, grid, sg in ((32, (32, 64), 64), (33, (33, 64), 64), (40, (40, 40), 0)):
        sc = warmup.record(warmup.Call("full", rows, 262144, 64), H200)[0]
        assert sc.grid == grid and warmup.parts(sc)[2]["SG"] == sg, (rows, sc.grid, warmup.parts(sc)[2])
    par = warmup.record(warmup.Call("select", 8, 32768, 2048), H200)
    assert [warmup.parts(x)[0] for x in par] == ["_radix_par_kernel"] * 5
    assert len({warmup.variant_key(x) for x in par}) == 1  # the launch's step is a run-time argument


def test_warmup_dry_run_lists_one_variant_per_line(capsys):
    assert cli.main(["warmup", "--dry-run", "--decode-only"]) == 0
    out = capsys.readouterr()
    lines = [ln for ln in out.out.splitlines() if ln.strip()]
    assert len(lines) == len(set(lines)) == len(warmup.variants(warmup.decode_calls(), H200))
    assert "variants for 3840 calls" in out.err


def test_preload_without_a_gpu_computes_only_tritons_key(monkeypatch):
    """``preload`` pays Triton's per-process key; without a CUDA GPU it loads no kernel (and compiles none) and makes
    no first call."""
    monkeypatch.setattr(warmup, "warm", lambda *a, **k: pytest.fail("preload compiled on a machine without a GPU"))
    monkeypatch.setattr(warmup, "first_call", lambda *a, **k: pytest.fail("preload called on a machine without a GPU"))
    got = warmup.preload()
    assert got["variants"] == 0 and got["first_calls"] == 0 and got["seconds"] >= 0
    from triton.runtime.cache import triton_key

    assert triton_key.cache_info().currsize == 1  # computed once, kept for the process's first kernel lookup


def test_first_call_paths_cover_every_public_path(monkeypatch):
    """The paths :func:`preload` calls once (for torch's first launches of the operations around the kernels): one
    per entry, kernel set, row starts, flags and alignment bucket, each the smallest call of its path; every path runs
    through the public API with int32 and int64 bounds (the torch arm here: the shapes are the warm list's)."""
    paths: dict = {}
    calls = warmup.warm_calls(max_rows=24)
    got = warmup.variants(calls, H200, paths)
    assert {key: n for key, (_, n) in got.items()} == {key: n for key, (_, n) in warmup.variants(calls, H200).items()}
    assert {p[0] for p in paths} == {"select", "full", "scores", "flags"}
    for entry in ("select", "full"):
        assert {p[-1] for p in paths if p[0] == entry} == {True, False}  # both alignment buckets
    assert {p[2] for p in paths if p[0] == "full"} == {True, False}  # row starts given and not
    assert {p[3] for p in paths if p[0] == "full"} == {True, False}  # flags written and not
    kernels = {name for p in paths if p[0] == "select" for name in p[1]}
    assert {"_hier_kernel", "_radix_kernel", "_radix_par_kernel", "_bisect_kernel"} <= kernels
    for path, call in paths.items():
        same = [c for c in calls if c.entry == call.entry and c.starts == call.starts and c.flags == call.flags
                and (c.width % 16 == 0) == path[-1] and c.row_repeat == call.row_repeat]
        smaller = [c for c in same if (c.rows, c.width) < (call.rows, call.width)
                   and tuple(sorted({warmup.parts(la)[0] for la in warmup.record(c, H200)})) == path[1]]
        assert not smaller, (path, call, smaller[:1])
    monkeypatch.setenv("DSA_LAB_IMPL", "torch")
    for call in paths.values():
        for dt in (torch.int32, torch.int64):
            out = warmup.first_call(call, dt, device="cpu")
            if call.entry == "select":
                assert out.shape == (call.rows, call.k) and out.dtype == torch.int32
            elif call.entry == "full" and call.flags:
                assert out[0].shape == (call.rows, call.k) and out[1].dtype == torch.uint8
            elif call.entry == "full":
                assert out.shape == (call.rows, call.k)


def test_verify_calls_reach_the_correctness_runs_variants():
    """The correctness run's calls pass their block size, row starts and row repeat to the launchers, so ``dsa-lab
    warmup --verify`` compiles what ``dsa-lab verify`` will launch (block sizes 1 / 16 / 64, starts, k = 512 ...)."""
    got = warmup.variants([warmup.Call("full", 8, 16384, 64, block_size=1, starts=True)], H200)
    scores = [k for k in got if _kernel(k) == "_block_scores_kernel"]
    assert len(scores) == 1 and "BS=1 " in scores[0] and "HAS_START=1" in scores[0], scores
    calls = warmup.verify_calls()
    assert {c.block_size for c in calls} >= {1, 8, 16, 64} and any(c.starts for c in calls)
    assert {c.row_repeat for c in calls} >= {1, 3, 5} and {c.entry for c in calls} == {"select", "full", "fused"}
    extra = set(warmup.variants(calls, H200)) - set(warmup.variants(warmup.warm_calls(fused=True), H200))
    assert any("BS=64" in k for k in extra) and any("HAS_START=1" in k for k in extra), sorted(extra)


def test_warmup_verify_lists_every_variant_the_correctness_run_launches(monkeypatch):
    """``dsa-lab verify --scale gpu`` runs only warmed kernels after ``dsa-lab warmup --fused --verify``: its own code
    path (:func:`dsa_lab.bench.verify.run_arm`, every matrix case and a sample of fuzz draws, every default arm) is
    recorded on ``meta`` tensors with the H200's facts, and every launch must be in the warmup's list."""
    import torch

    from dsa_lab import _checks, _impl
    from dsa_lab.bench import verify
    from dsa_lab.bench.shapes import MATRIX
    from dsa_lab.launch import recording

    listed = set(warmup.variants(list(dict.fromkeys(warmup.warm_calls(fused=True) + warmup.verify_calls())), H200))
    monkeypatch.setattr(_impl, "facts_for", lambda t: H200)
    monkeypatch.setattr(_impl, "triton_usable", lambda device: True)
    monkeypatch.setattr(_checks, "capturing", lambda: True)  # no value checks: nothing to read on meta tensors
    gen = torch.Generator().manual_seed(0)
    cases = list(MATRIX) + [verify.random_case(gen, 8192, 64) for _ in range(200)]
    meta = torch.device("meta")
    missing = {}
    for case in cases:
        g = case.rows // case.row_repeat
        inp = {"x": torch.empty((case.rows, case.width), device=meta),
               "ends": torch.empty((g,), dtype=torch.int32, device=meta),
               "starts": torch.empty((g,), dtype=torch.int32, device=meta) if case.starts else None}
        for arm in ("triton", "triton_fused"):
            if verify.arm_serves(arm, case):
                with recording() as rec:
                    verify.run_arm(case, inp, arm)
                missing.update({warmup.variant_key(x): case for x in rec if warmup.variant_key(x) not in listed})
    assert not missing, [(c.name, k) for k, c in missing.items()][:3]
