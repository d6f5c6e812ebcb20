"""Triton selection kernels (dsa_lab.select_triton) against the exact reference (DESIGN §2).

CPU lane: the Triton interpreter at small sizes, with plan overrides (``config=``) that force every
path — the direct single-tile top-k, the hierarchical group-max stages, several programs per row
with the last-arriver merge, and the v1 ``fold`` kernel with its filtered merge and its fallback.
GPU lane (``-m gpu`` / a CUDA machine): GPU-sized shapes, k = 2048, and the CUDA-graph replay with new
lengths.  Every output is poisoned first and every slot is compared (rows as sets).
"""
import pytest
import torch

import dsa_lab
from dsa_lab import select_triton as st
from dsa_lab.scores import block_scores_torch
from dsa_lab.select import topk_select_reference

from _select_helpers import POISON, assert_same_sets, poisoned

INF, NAN = float("inf"), float("nan")

# (name, config) — every code path of the kernels, reachable at interpreter sizes
PATHS = [
    ("direct", None),
    ("hier_1prog", {"direct": 8, "group": 4, "short_chain": False}),
    ("hier_multi", {"direct": 8, "group": 2, "programs": 5, "short_chain": False}),
    # short chain: rows of at most KP super groups (here every row: 16 x 16 >= 200) skip stage A
    ("short_chain", {"direct": 8, "group": 4, "programs": 5}),
    # super groups of G1 x group2 with G2 != G1, through the short chain and through stage A
    ("group2", {"direct": 8, "group": 2, "group2": 8, "programs": 5}),
    ("group2_chain_a", {"direct": 8, "group": 2, "group2": 8, "programs": 5, "short_chain": False}),
    # the second short chain (super groups twice as wide): rows of 65-128 columns here, chain A beyond
    ("short_chain2", {"direct": 8, "group": 2, "programs": 5, "short_chain2": True}),
    ("rsel_short_chain2", {"direct": 8, "group": 2, "programs": 5, "short_chain2": True, "rsel": True}),
    # the third short chain (level-1 groups of G1 / 2): rows of at most 128 columns here, the first chain beyond
    ("short_chain3", {"direct": 8, "group": 4, "programs": 5, "short_chain3": True}),
    ("rsel_short_chain3", {"direct": 8, "group": 4, "programs": 5, "short_chain3": True, "rsel": True}),
    # stage-A tiles of one super group (nt 1): tiles wholly inside the row load unmasked (fast_a), the last masked
    ("fast_a_multi", {"direct": 8, "group": 2, "programs": 5, "short_chain": False, "fast_a": True, "nt": 1}),
    # stage A in a launch of its own, then B-D / direct / short-chain rows one program per row (two_phase)
    ("two_phase", {"direct": 8, "group": 2, "programs": 5, "two_phase": True}),
    ("two_phase_chain_a", {"direct": 8, "group": 2, "programs": 5, "short_chain": False, "two_phase": True,
                           "fast_a": True, "nt": 1}),
    # v2.2: the same stages with the register radix select in place of every tl.topk
    ("rsel_direct", {"rsel": True}),
    ("rsel_1prog", {"direct": 8, "group": 4, "rsel": True, "short_chain": False}),
    ("rsel_multi", {"direct": 8, "group": 2, "programs": 5, "rsel": True, "short_chain": False}),
    ("rsel_short_chain", {"direct": 8, "group": 4, "programs": 5, "rsel": True}),
    # tenth session: group maxima from strided loads (_group_keys) in stage C, an A/B option (off by default)
    ("strided_keys_chain", {"direct": 8, "group": 4, "programs": 5, "short_chain": False, "strided_keys": True}),
    ("strided_keys_short_chain3", {"direct": 8, "group": 4, "programs": 5, "short_chain3": True,
                                   "strided_keys": True}),
    # ... and kept as the reduced tile, passed through the row's workspace (c_workspace: the default since the
    # eleventh session, so every path above takes it); the previous form, straight into the top-k, stays reachable
    ("c_workspace_off_chain", {"direct": 8, "group": 4, "programs": 5, "short_chain": False, "c_workspace": False}),
    ("c_workspace_off_short_chain3", {"direct": 8, "group": 4, "programs": 5, "short_chain3": True,
                                      "c_workspace": False}),
    # tenth session: the unfused stage A keys super groups by their first column (one max, no argmin); by default
    # with one or two programs per row (the rule), so forced here at five, and the argmin form forced at one
    ("a_first_col_chain_a", {"direct": 8, "group": 2, "programs": 5, "short_chain": False, "a_first_col": True}),
    ("a_first_col_off_1prog", {"direct": 8, "group": 4, "short_chain": False, "a_first_col": False}),
    ("a_first_col_1prog", {"direct": 8, "group": 4, "short_chain": False, "a_first_col": True, "fast_a": True,
                           "nt": 1}),
    # eleventh session: stage C of rows without stage A ranks level-1 keys in pairs first (l1_pairs, the default
    # since the twelfth; on GPU from 1024 keys, here from 2): the short chain, the second short chain, the third,
    # and keys held only in registers (no workspace form; strided keys), which the pairs store to the workspace
    ("l1_pairs_short_chain", {"direct": 8, "group": 4, "programs": 5, "l1_pairs": True, "l1_pairs_min": 2}),
    ("l1_pairs_short_chain2", {"direct": 8, "group": 2, "programs": 5, "short_chain2": True, "l1_pairs": True,
                               "l1_pairs_min": 2}),
    ("l1_pairs_short_chain3", {"direct": 8, "group": 4, "programs": 5, "short_chain3": True, "l1_pairs": True,
                               "l1_pairs_min": 2}),
    ("l1_pairs_no_cws", {"direct": 8, "group": 4, "programs": 5, "l1_pairs": True, "l1_pairs_min": 2,
                         "c_workspace": False}),
    ("l1_pairs_strided_keys", {"direct": 8, "group": 4, "programs": 5, "l1_pairs": True, "l1_pairs_min": 2,
                               "strided_keys": True}),
    # eighteenth session (dev, off): the threshold filter in place of the chains' last stages -- rows without stage A
    # (the short and third chains; FQ 1 / 2 / 4, caps the normal rows may overflow, so the filter and its fallback
    # both run), the second short chain, and rows with stage A after B (every super group chosen here: T from the
    # groups' minima); test_filter_* below check which rows the filter answered
    ("filter_chains_q4", {"direct": 8, "group": 4, "programs": 5, "filter_cap": 32, "filter_q": 4}),
    ("filter_chains_q1", {"direct": 8, "group": 4, "programs": 5, "filter_cap": 64, "filter_q": 1}),
    ("filter_short_chain2_q2", {"direct": 8, "group": 2, "programs": 5, "short_chain2": True, "filter_cap": 16,
                                "filter_q": 2}),
    ("filter_main_multi", {"direct": 8, "group": 4, "programs": 5, "short_chain": False, "filter_cap_main": 32}),
    # twentieth session (dev, off): the unfused stage A with two tiles in flight -- one program (first-column
    # keys), five programs (argmin keys; chunks end mid-row), two-super-group tiles cut by the chunk's end, and the
    # first of two launches
    ("a_prefetch_1prog", {"direct": 8, "group": 2, "short_chain": False, "a_prefetch": True, "nt": 1,
                          "a_first_col": True}),
    ("a_prefetch_multi", {"direct": 8, "group": 2, "programs": 5, "short_chain": False, "a_prefetch": True, "nt": 1}),
    ("a_prefetch_nt2", {"direct": 8, "group": 2, "programs": 3, "short_chain": False, "a_prefetch": True, "nt": 2,
                        "a_first_col": True}),
    ("a_prefetch_two_phase", {"direct": 8, "group": 2, "programs": 5, "short_chain": False, "two_phase": True,
                              "a_prefetch": True, "nt": 1}),
    ("fold_1prog", {"algo": "fold", "tile": 64}),
    ("fold_multi", {"algo": "fold", "tile": 32, "programs": 6}),
    ("fold_fallback", {"algo": "fold", "tile": 32, "programs": 6, "cap": 8}),
]


def _values(kind, rows, n, gen):
    if kind == "normal":
        return torch.randn(rows, n, generator=gen)
    if kind == "ramp":
        return torch.arange(n, dtype=torch.float32).expand(rows, n).clone()
    if kind == "equal":
        return torch.full((rows, n), 0.5)
    if kind == "specials":
        pool = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 1e-45, -1e-45, 1.0, -1.0])
        x = pool[torch.randint(0, len(pool), (rows, n), generator=gen)]
        # NaNs with other payloads and the sign bit set
        nan_bits = torch.tensor([0x7F800001, 0xFFC00000 - 2**32, 0x7FFFFFFF], dtype=torch.int64)
        m = torch.rand(rows, n, generator=gen) < 0.05
        x[m] = nan_bits[torch.randint(0, 3, (int(m.sum()),), generator=gen)].to(torch.int32).view(torch.float32)
        return x
    raise ValueError(kind)


@pytest.mark.parametrize("path,cfg", PATHS, ids=[p[0] for p in PATHS])
@pytest.mark.parametrize("kind", ["normal", "ramp", "equal", "specials"])
def test_paths_match_reference(path, cfg, kind, fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, n, k = 3, 200, 16
    x = _values(kind, rows, n, gen)
    lengths = torch.tensor([n, 0, int(torch.randint(1, n, (1,), generator=gen))])
    x[2, int(lengths[2]):] = NAN  # garbage past the end must be ignored
    out = poisoned(rows, k, "cpu")
    st.topk_select_triton(x, k, lengths, 1, out, config=cfg)
    assert_same_sets(out, topk_select_reference(x, k, lengths, 1), f"{path}/{kind} seed={fresh_seed}")


@pytest.mark.parametrize("k", [1, 3, 100, 250, 700])
def test_k_values_incl_k_above_live_and_width(k, fresh_seed):
    # k not a power of two, k > live length, k > width (-1 tail); hierarchical multi-program path
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, n = 2, 240
    x = torch.randn(rows, n, generator=gen)
    lengths = torch.tensor([n, 37])
    out = poisoned(rows, k, "cpu")
    cfg = {"algo": "hier", "direct": 2, "group": 2, "programs": 3}
    st.topk_select_triton(x, k, lengths, 1, out, config=cfg)
    ref = topk_select_reference(x, k, lengths, 1)
    assert_same_sets(out, ref, f"k={k} seed={fresh_seed}")
    assert (out[1] == -1).sum() == max(0, k - 37)


@pytest.mark.parametrize("kind", ["normal", "equal"])
@pytest.mark.parametrize("pairs", [False, True], ids=["c_one_topk", "l1_pairs"])
def test_second_short_chain_k64_chunked(kind, pairs, fresh_seed):
    # k = 64 rows of 4097-8192 columns at group 8 take the second short chain with its C stage in chunks through the
    # workspace (KC2 = 32 < KP = 64), the GPU's 64K path; with l1_pairs at its default 1024 level-1 keys
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, n, k = 2, 6000, 64
    x = _values(kind, rows, n, gen)
    lengths = torch.tensor([n, int(torch.randint(4200, n, (1,), generator=gen))])
    cfg = {"direct": 8, "group": 8, "programs": 1, "short_chain2": True, "l1_pairs": pairs}
    facts = {"sm_count": 132, "warp_size": 32, "name": "x"}
    p = st.plan(rows, n, k, facts, **cfg)
    assert (p["SC2"], p["KC2"], p["KP"], p["l1p"]) == (2, 32, 64, 1024 if pairs else 0)
    out = poisoned(rows, k, "cpu")
    st.topk_select_triton(x, k, lengths, 1, out, config=cfg)
    assert_same_sets(out, topk_select_reference(x, k, lengths, 1), f"{kind} pairs={pairs} seed={fresh_seed}")


def test_l1_pairs_plan():
    facts = {"sm_count": 132, "warp_size": 32, "name": "x"}
    assert st.plan(8, 8192, 64, facts)["l1p"] == 1024  # on by default since the twelfth session
    assert st.plan(8, 8192, 64, facts, l1_pairs=False)["l1p"] == 0
    assert st.plan(8, 8192, 64, facts, l1_pairs=True)["l1p"] == 1024
    assert st.plan(8, 8192, 64, facts, l1_pairs=True, l1_pairs_min=512)["l1p"] == 512
    assert st.plan(8, 8192, 64, facts, l1_pairs=True, rsel=True)["l1p"] == 0  # rsel's stages are not top-k
    with pytest.raises(ValueError, match="l1_pairs_min"):
        st.plan(8, 8192, 64, facts, l1_pairs=True, l1_pairs_min=1)
    # scope at the default minimum: only the second short chain at k = 33-64 ranks >= 1024 level-1 keys
    for k in (1, 16, 32, 33, 64, 65, 128, 256):
        for rows in (1, 640):
            p = st.plan(rows, 32768, k, facts)
            counts = {p["KP"] * p["G2"], p["KP"] * p["G2S"], p["KP"] * p["G2"] * p["SC2"]}
            assert (max(counts) >= p["l1p"]) == (33 <= k <= 64), (k, rows, counts)


def test_tl_topk_never_given_fewer_than_k():
    # DESIGN §6: tl.topk with k above its input size returned wrong results on the GPU; the plans
    # always hand it at least next_pow2(k) keys
    facts = {"sm_count": 132, "warp_size": 32, "name": "x"}
    for k in (1, 2, 3, 64, 100, 512, 1000, 2048):
        for n in (1, 7, 300, 32768):
            for rows in (1, 640):
                p = st.plan(rows, n, k, facts, algo="hier")  # (k > 512 defaults to radix: no tl.topk)
                kp = p["KP"]
                assert kp >= k and kp & (kp - 1) == 0
                assert p["DT"] >= kp and p["SB"] >= kp and p["KP"] * p["G2"] >= 2 * kp and p["KP"] * p["G1"] >= kp
                f = st.plan(rows, n, k, facts, algo="fold")
                assert f["TILE"] >= f["KP"] and f["CAP"] >= f["KP"] and f["PP"] * f["M"] >= f["KP"]


def test_grid_depends_only_on_shapes():
    facts = {"sm_count": 132, "warp_size": 32, "name": "x"}
    a = st.plan(8, 32768, 64, facts)
    b = st.plan(8, 32768, 64, facts)
    assert a == b and a["P"] > 1  # few rows: the row is split across programs
    assert st.plan(640, 32768, 64, facts)["P"] == 1
    assert st.plan(640, 32768, 64, facts, fused=True, block_size=8)["P"] == 4  # fused: at least 4 (tune_dev_K)
    assert st.plan(640, 32768, 64, facts, group2=16)["G2"] == 16
    # with_flags: the kernel writes them except fused beyond 2 x SM rows (the flags kernel after it)
    assert st.plan(264, 32768, 64, facts, fused=True, block_size=8)["kernel_flags"] is True
    assert st.plan(265, 32768, 64, facts, fused=True, block_size=8)["kernel_flags"] is False
    assert st.plan(640, 32768, 64, facts)["kernel_flags"] is True
    assert st.plan(1, 32768, 64, {**facts, "sm_count": 304})["P"] >= a["P"]  # more SMs, more programs
    # unmasked whole stage-A tiles beyond 2 x SM rows (tune_dev_M / check_N); fused with a power-of-two block size:
    # always (the contiguous whole-tile load, tune_dev_O); two launches never
    assert st.plan(264, 32768, 64, facts)["fast_a"] is False
    assert st.plan(265, 32768, 64, facts)["fast_a"] is True
    assert st.plan(1, 32768, 64, facts, fused=True, block_size=8)["fast_a"] is True
    assert st.plan(264, 32768, 64, facts, fused=True, block_size=3)["fast_a"] is False
    assert st.plan(265, 32768, 64, facts, fused=True, block_size=3)["fast_a"] is True
    for fused in (False, True):
        assert st.plan(640, 32768, 64, facts, fused=fused, block_size=8)["two_phase"] is False
    assert st.plan(8, 32768, 64, facts, fast_a=True)["fast_a"] is True
    # fused warps: 8 up to one row per SM, 4 beyond (tune_dev_O); the select kernel 8 at k = 64
    assert st.plan(132, 32768, 64, facts, fused=True, block_size=8)["num_warps"] == 8
    assert st.plan(133, 32768, 64, facts, fused=True, block_size=8)["num_warps"] == 4
    assert st.plan(640, 32768, 64, facts)["num_warps"] == 8
    # tenth session's options: c_workspace and the a_first_col rule on (eleventh session), the strided forms off
    d = st.plan(640, 32768, 64, facts)
    assert (d["skeys"], d["sdir"], d["afirst"], d["phase_only"]) == (2, False, True, None)
    assert st.plan(32, 32768, 64, facts)["afirst"] is False
    assert st.plan(640, 32768, 64, facts, strided_keys=True)["skeys"] == 1
    assert st.plan(640, 32768, 64, facts, c_workspace=True)["skeys"] == 2
    with pytest.raises(ValueError, match="strided_keys and c_workspace"):
        st.plan(640, 32768, 64, facts, strided_keys=True, c_workspace=True)


def test_a_first_col_rule(monkeypatch):
    """HIER_A_FIRST_COL = None takes the measured rule: unfused stage A with one or two programs per row (the rows
    counts where tune_dev_W / X measured the gain), not at 32 / 64 rows (P = 8 / 4: measured slower), never fused;
    an explicit a_first_col wins over the rule."""
    facts = {"sm_count": 132, "warp_size": 32, "name": "x"}
    monkeypatch.setattr(st, "HIER_A_FIRST_COL", None)
    assert st.plan(640, 32768, 64, facts)["afirst"] is True  # P = 1
    assert st.plan(128, 32768, 64, facts)["afirst"] is True  # P = 2
    assert st.plan(64, 32768, 64, facts)["afirst"] is False  # P = 4
    assert st.plan(32, 32768, 64, facts)["afirst"] is False  # P = 8
    assert st.plan(640, 32768, 64, facts, fused=True, block_size=8)["afirst"] is False
    assert st.plan(32, 32768, 64, facts, a_first_col=True)["afirst"] is True
    assert st.plan(640, 32768, 64, facts, a_first_col=False)["afirst"] is False


def test_a_prefetch_plan():
    """a_prefetch (dev): off by default (HIER_A_PREFETCH), on where asked for unfused plans, never fused (the fused
    stage A keeps its own whole-tile load)."""
    facts = {"sm_count": 132, "warp_size": 32, "name": "x"}
    assert st.plan(640, 32768, 64, facts)["apf"] is st.HIER_A_PREFETCH is False
    assert st.plan(640, 32768, 64, facts, a_prefetch=True)["apf"] is True
    assert st.plan(640, 32768, 64, facts, fused=True, block_size=8, a_prefetch=True)["apf"] is False


def test_maxnreg_plan():
    """maxnreg (dev): a register bound for the hier kernel's launch, None by default; anything but an int in
    [16, 255] is a ValueError naming it."""
    facts = {"sm_count": 132, "warp_size": 32, "name": "x"}
    assert st.plan(640, 32768, 64, facts)["maxnreg"] is None
    assert st.plan(640, 32768, 64, facts, maxnreg=80)["maxnreg"] == 80
    for bad in (8, 300, True, "80"):
        with pytest.raises(ValueError, match="maxnreg"):
            st.plan(640, 32768, 64, facts, maxnreg=bad)
    x, e = torch.randn(2, 256), torch.tensor([256, 100])
    for cfg in ({"tail": True, "maxnreg": 80}, {"tail": True, "scores_maxnreg": 64}):  # not silently dropped
        with pytest.raises(ValueError, match="maxnreg"):
            st.select_candidate_blocks_triton(x, e, 4, None, 8, 1, config=cfg)


@pytest.mark.parametrize("bad", [{"phase_only": 1}, {"phase_only": 2, "two_phase": True}])
def test_phase_only_needs_two_phase_stage_a(bad):
    """phase_only (dev timing of stage A alone) exists only as 1 with two_phase: a second launch alone would read a
    workspace nobody wrote, so it is refused, naming the argument."""
    with pytest.raises(ValueError, match="phase_only"):
        st.plan(640, 32768, 64, {"sm_count": 132, "warp_size": 32, "name": "x"}, **bad)


def test_phase_only_writes_no_ids(fresh_seed):
    """Stage A alone (two_phase + phase_only=1) leaves the output as it was: a timing aid, never a result."""
    gen = torch.Generator().manual_seed(fresh_seed)
    x = torch.randn(3, 300, generator=gen)
    out = poisoned(3, 8, "cpu")
    st.topk_select_triton(x, 8, None, 1, out, config={"direct": 8, "group": 2, "programs": 2, "short_chain": False,
                                                      "two_phase": True, "phase_only": 1})
    assert (out == POISON).all()


def test_row_repeat_and_public_api(fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, n, k, rr = 6, 300, 20, 3
    x = torch.randn(rows, n, generator=gen)
    lengths = torch.tensor([300, 150], dtype=torch.int32)
    out = poisoned(rows, k, "cpu")
    res = dsa_lab.topk_select(x, k, lengths=lengths, row_repeat=rr, impl="triton", out=out)
    assert res.data_ptr() == out.data_ptr()
    assert_same_sets(out, topk_select_reference(x, k, lengths, rr), f"seed={fresh_seed}")
    res2 = dsa_lab.topk_select(x, k, impl="triton")
    assert_same_sets(res2, topk_select_reference(x, k, None, 1), f"no lengths seed={fresh_seed}")


def test_counters_reset_after_merge():
    x = torch.randn(2, 256)
    cfg = {"direct": 2, "group": 2, "programs": 4}
    for _ in range(2):  # a second call must see zeroed counters
        out = poisoned(2, 8, "cpu")
        st.topk_select_triton(x, 8, None, 1, out, config=cfg)
        assert_same_sets(out, topk_select_reference(x, 8), "repeat call")
    assert int(st._counters(x.device, 2)[:2].abs().sum()) == 0


def test_row_strided_view_and_lengths_past_width():
    big = torch.randn(3, 400)
    x = big[:, :250]  # row stride 400
    lengths = torch.tensor([1000, 250, 3])
    out = poisoned(3, 30, "cpu")
    st.topk_select_triton(x, 30, lengths, 1, out, config={"direct": 4, "group": 2, "programs": 2})
    assert_same_sets(out, topk_select_reference(x, 30, lengths, 1), "strided")


@pytest.mark.parametrize("k", [2, 9, 64])
def test_rsel_wide_rows_and_split_ties(k, fresh_seed):
    """The register radix select (v2.2) where stage B has more super groups than one tile (bitonic fold,
    then back to column order) and where the threshold bin is split among tied values (the prefix-sum
    tie break), 4 digits deep: values drawn from a handful of floats sharing their top bits."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n = 4500  # group 2: 1125 super groups > the 1024-key stage-B tile
    pool = torch.tensor([1.0, 1.0000001, 1.0000002, -2.0, float("-inf"), NAN])
    x = pool[torch.randint(0, len(pool), (2, n), generator=gen)]
    lengths = torch.tensor([n, 3001])
    plan = st.plan_hier(2, n, k, {"sm_count": 1, "name": "triton-interpreter"}, group=2, rsel=True, programs=1)
    assert plan["NSG"] > plan["SB"]
    out = poisoned(2, k, "cpu")
    st.topk_select_triton(x, k, lengths, 1, out, config={"group": 2, "programs": 1, "rsel": True})
    assert_same_sets(out, topk_select_reference(x, k, lengths, 1), f"k={k} seed={fresh_seed}")
    x2 = torch.full((1, 300), 0.25)  # all tied: the first k columns
    out2 = poisoned(1, k, "cpu")
    st.topk_select_triton(x2, k, None, 1, out2, config={"rsel": True})
    assert_same_sets(out2, topk_select_reference(x2, k), f"equal k={k}")


# ---------------------------------------------------------------- the threshold filter (eighteenth session, dev)

WS_POISON = -0x5A5A5A5A5A5A5A5A


def _captured_workspace(monkeypatch):
    """Poison every hier workspace a call allocates and keep it, to read what the kernel left there."""
    seen = []
    real = st._workspace

    def poisoned_ws(slots, device):
        t = real(slots, device).fill_(WS_POISON)
        seen.append(t)
        return t

    monkeypatch.setattr(st, "_workspace", poisoned_ws)
    return seen


def _filter_rows(n, gen):
    """Rows that take each branch: equal values and a ramp (T from the tile rows' minima: M = KP or a little more,
    the filter answers), normal values (either), few distinct values, a mostly -inf row, and a row whose every fourth
    column is -inf (every interleaved group of the filter without stage A, and every tile row, then holds a -inf key:
    T falls to the -inf keys, M past the cap, the chain answers)."""
    holes = torch.randn(n, generator=gen)
    holes[0::4] = -INF
    return torch.stack([torch.full((n,), 0.5), torch.arange(n, dtype=torch.float32), torch.randn(n, generator=gen),
                        torch.randint(0, 3, (n,), generator=gen).float(),
                        torch.where(torch.rand(n, generator=gen) < 0.9, -INF, torch.randn(n, generator=gen)),
                        holes, torch.randn(n, generator=gen)])


def _check_filter_rows(x, lengths, k, cfg, seen, threshold):
    """Every row: rows whose M (keys >= the torch reference's T) fits the cap hold exactly those keys in their
    candidate slots and never ran C-D (stage C's level-1 slots still poisoned: C stores its keys there with
    ``c_workspace``, the default); rows past the cap ran it.  Returns (rows the filter answered, rows the chain
    answered)."""
    from dsa_lab import _impl
    from dsa_lab.keys import pack_keys

    rows, n = x.shape
    p = st.plan(rows, n, k, _impl.facts_for(x), **cfg)
    cap = p["fcap"] or p["fcapm"]
    assert cap, p
    wrow = st._hier_wrow(p, False)
    ws = seen[-1].view(rows, wrow)
    chain = ws[:, p["NSG"] + p["KP"]:p["NSG"] + p["KP"] + p["KP"] * p["G2"] * p["SC2"]]  # C's level-1 keys
    cand = ws[:, wrow - p["fcap"] - p["fcapm"]:]
    taken = fell = 0
    for r in range(rows):
        L = int(lengths[r])
        keys = pack_keys(x[r], torch.arange(n))
        T, pool = threshold(keys, L, p)
        want = pool[pool >= T]
        if want.numel() <= cap:
            taken += 1
            got = cand[r, :want.numel()]
            assert torch.equal(torch.sort(got).values, torch.sort(want).values), f"row {r}: candidates != keys >= T"
            assert bool((chain[r] == WS_POISON).all()), f"row {r}: M = {want.numel()} <= {cap} but C-D ran"
        else:
            fell += 1
            assert bool((chain[r] != WS_POISON).any()), f"row {r}: M = {want.numel()} > {cap} but C-D did not run"
    return taken, fell


@pytest.mark.parametrize("fq", [1, 2, 4])
def test_filter_without_stage_a_answers_the_rows_the_reference_says(fq, monkeypatch, fresh_seed):
    """Rows without stage A (the short chain: 250 columns; the third chain: 100): T and M as
    :func:`dsa_lab.select_triton.filter_threshold_noa` computes them, the answer from the filter where M fits the cap
    and from the chain where it does not, both kinds of rows present."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n, k = 250, 16
    x = _filter_rows(n, gen)
    lengths = torch.tensor([n, n - 10, n, n, n, n - 2, 100])
    cfg = {"direct": 8, "group": 4, "programs": 5, "filter_cap": 32, "filter_q": fq}
    seen = _captured_workspace(monkeypatch)
    out = poisoned(x.shape[0], k, "cpu")
    st.topk_select_triton(x, k, lengths, 1, out, config=cfg)
    assert_same_sets(out, topk_select_reference(x, k, lengths, 1), f"fq={fq} seed={fresh_seed}")
    taken, fell = _check_filter_rows(x, lengths, k, cfg, seen,
                                     lambda keys, L, p: (st.filter_threshold_noa(keys, L, p["KP"], p["fq"]), keys[:L]))
    assert taken >= 2 and fell >= 1, (taken, fell)


@pytest.mark.parametrize("programs", [1, 5])
def test_filter_after_stage_b_answers_the_rows_the_reference_says(programs, monkeypatch, fresh_seed):
    """Rows with stage A (600 columns: 38 super groups of 16 > KP = 16; 200 columns: 13, every one chosen), one
    program per row and five (the last to arrive runs B and the filter): T and M as
    :func:`dsa_lab.select_triton.filter_threshold_main` computes them."""
    gen = torch.Generator().manual_seed(fresh_seed)
    n, k = 600, 16
    x = _filter_rows(n, gen)
    lengths = torch.tensor([n, n - 3, n, n, n, n, 200])
    cfg = {"direct": 8, "group": 4, "programs": programs, "short_chain": False, "filter_cap_main": 32}
    seen = _captured_workspace(monkeypatch)
    out = poisoned(x.shape[0], k, "cpu")
    st.topk_select_triton(x, k, lengths, 1, out, config=cfg)
    assert_same_sets(out, topk_select_reference(x, k, lengths, 1), f"programs={programs} seed={fresh_seed}")

    def main(keys, L, p):
        T, cols = st.filter_threshold_main(keys, L, p["KP"], p["G1"] * p["G2"])
        return T, keys[cols]

    taken, fell = _check_filter_rows(x, lengths, k, cfg, seen, main)
    assert taken >= 2 and fell >= 1, (taken, fell)


def test_filter_threshold_references_bound_the_kth_key(fresh_seed):
    """The torch references' T never exceeds the row's KP-th best key (so the compacted keys hold the top KP), for
    every FQ, on the rows above and random lengths."""
    from dsa_lab.keys import pack_keys

    gen = torch.Generator().manual_seed(fresh_seed)
    for n in (300, 1000):
        for row in _filter_rows(n, gen):
            keys = pack_keys(row, torch.arange(n))
            for KP in (2, 16, 64):
                L = int(torch.randint(KP, n + 1, (1,), generator=gen))
                kth = torch.topk(keys[:L], KP).values[-1]
                for fq in (1, 2, 4):
                    if fq <= KP:
                        assert st.filter_threshold_noa(keys, L, KP, fq) <= kth, (n, KP, fq, L)
                T, cols = st.filter_threshold_main(keys, L, KP, KP)
                assert T <= kth and bool(torch.isin(torch.topk(keys[:L], KP).indices, cols).all()), (n, KP, L)


def test_filter_plan():
    """The filter's plan: off by default; caps raised to KP and FQ lowered to it; off with rsel or with KP x the
    padded block size past 2048, and the main chain's off where stage C's tile does not fit or super groups hold
    fewer than KP columns; bad values named."""
    facts = {"sm_count": 132, "name": "NVIDIA H200"}
    p = st.plan(1, 32768, 64, facts)
    assert (p["fcap"], p["fcapm"]) == (st.HIER_FILTER_CAP, st.HIER_FILTER_CAP_MAIN) == (0, 0)
    p = st.plan(1, 32768, 64, facts, filter_cap=256, filter_cap_main=128, filter_q=4)
    assert (p["fcap"], p["fcapm"], p["fq"]) == (256, 128, 4)
    assert st._hier_wrow(p, False) == st._hier_wrow({**p, "fcap": 0, "fcapm": 0}, False) + 384
    p = st.plan(1, 32768, 100, facts, filter_cap=32, filter_cap_main=64, filter_q=4)  # KP 128, group 4: S 16
    assert (p["fcap"], p["fcapm"]) == (128, 0)
    assert st.plan(1, 4096, 1, facts, filter_cap=8, filter_q=4)["fq"] == 2
    assert st.plan(1, 32768, 64, facts, filter_cap=256, rsel=True)["fcap"] == 0
    for bad in ({"filter_cap": 48}, {"filter_cap": -4}, {"filter_cap_main": 16384}, {"filter_q": 3}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            st.plan(1, 32768, 64, facts, **bad)
    assert st.plan(1, 32768, 512, facts, fused=True, block_size=8, filter_cap=1024, rsel=False)["fcap"] == 0


# ---------------------------------------------------------------- candidate blocks (fused / unfused)

BLOCK_PATHS = [
    ("direct", None),
    ("hier_multi", {"direct": 4, "group": 2, "programs": 3, "short_chain": False}),
    # short chain (every row here: at most 88 blocks <= KP x S): C-D in one program, level-1 maxima formed from
    # the columns (fused: the logits) in one tile (group 2) or KC-chunks through the workspace (group 8, fused)
    ("short_chain", {"direct": 4, "group": 2, "programs": 3}),
    ("short_chain_g8", {"direct": 4, "group": 8, "programs": 3}),
    ("group2_chain_a", {"direct": 4, "group": 2, "group2": 8, "programs": 3, "short_chain": False}),
    ("rsel_direct", {"rsel": True}),
    ("rsel_multi", {"direct": 4, "group": 2, "programs": 3, "rsel": True, "short_chain": False}),
    ("rsel_short_chain", {"direct": 4, "group": 8, "programs": 3, "rsel": True}),
    ("fold_multi", {"algo": "fold", "tile": 16, "programs": 4}),
    # stage A with unmasked whole tiles (nt 1: one super group per tile) and the scores kernel's whole tiles
    ("fast_a_multi", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "fast_a": True, "nt": 1,
                      "scores_whole": True}),
    # stage A in its own launch (fused: the level-1 keys through the workspace), then one program per row
    ("two_phase", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "two_phase": True}),
    ("two_phase_short", {"direct": 4, "group": 2, "programs": 3, "two_phase": True, "fast_a": True}),
    # eighth session: flags zeroed as 8-byte words (rows of n + 1 bytes: every row's alignment differs; several
    # programs' slices), the fused direct path as one 1-D load, the scores kernel striding with 2 programs per row
    ("direct1d_flags_wide", {"direct1d": True, "flags_wide": True}),
    # the third short chain: level-1 groups of 2 (group 4; C in registers) and of 4 (group 8; fused: C in chunks)
    ("short_chain3", {"direct": 4, "group": 4, "programs": 3, "short_chain3": True}),
    ("short_chain3_g8", {"direct": 4, "group": 8, "programs": 3, "short_chain3": True, "flags_wide": True}),
    # tenth session: block scores / group maxima from strided loads (_group_keys), A/B options (off by default),
    # and the previous stage-C keys (c_workspace=False; the workspace form is the default since the eleventh):
    # the fused direct path, and stage C (fused short chain: from the logits) with the fused stage D
    ("strided_direct", {"strided_direct": True}),
    ("a_first_col_chain_a", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "a_first_col": True}),
    ("strided_keys_chains", {"direct": 4, "group": 4, "programs": 3, "strided_keys": True}),
    ("c_workspace_off_chains", {"direct": 4, "group": 4, "programs": 3, "c_workspace": False}),
    ("strided_keys_chain_a", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "strided_keys": True}),
    # twentieth session (dev, off; unfused only, the fused kernel's plan turns it off): stage A, two tiles in flight
    ("a_prefetch_chain_a", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "a_prefetch": True,
                            "nt": 1}),
    # ... register bounds for both launches (CUDA launch options; the interpreter runs the same code)
    ("maxnreg", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "maxnreg": 80, "scores_maxnreg": 64,
                 "scores_a": True}),
    ("multi_flags_wide", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "flags_wide": True,
                          "scores_programs": 2}),
    # unfused: the scores launch zeroes the flags (its programs one slice of each row each), the kernel sets them
    ("flags_in_scores", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "flags_in_scores": True,
                         "scores_programs": 3}),
    ("flags_in_scores_direct", {"flags_in_scores": True}),
    # ninth session's dev knobs: the scores launch's tile (8 blocks: several per row) and warps, striding programs
    ("scores_tile_warps", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "scores_tile": 8,
                           "scores_warps": 2, "scores_mult": 1}),
    # fourteenth session (unfused; the fused kernel ignores the scores launch's knobs): the scores launch stores
    # stage A's keys, the select runs B-D alone -- super groups of 4 in 128-block tiles, one super group per
    # 16-block tile with two striding programs, and B-D with the register radix select
    ("scores_a_chain_a", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "scores_a": True}),
    ("scores_a_tiles", {"direct": 4, "group": 4, "programs": 3, "short_chain": False, "scores_a": True,
                        "scores_tile": 16, "scores_programs": 2}),
    ("scores_a_rsel", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "rsel": True, "scores_a": True}),
    # ... with every chain on (group 4): at k = 1 (KP 2) the rows' extents (88 / 71 / 36 blocks) fall on both sides of
    # main_chain_min (64), so the launch stores keys for some rows and skips others
    ("scores_a_chains", {"direct": 4, "group": 4, "programs": 3, "scores_a": True}),
    # sixteenth session (unfused): the scores launch on the live schedule (programs taking every row's live tiles,
    # the flags zeroed as one flat slice each), with and without stage A's keys, 8-block tiles so a row spans several
    ("scores_live", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "scores_sched": "live",
                     "scores_tile": 8, "scores_programs": 5, "flags_in_scores": True}),
    ("scores_live_a", {"direct": 4, "group": 4, "programs": 3, "scores_a": True, "scores_sched": "live",
                       "scores_tile": 16, "scores_programs": 3}),
    # seventeenth session (unfused, dev option): one launch, each row's last scores program selects the row
    # (dsa_lab.tail_triton) -- the direct top-k, every chain (k = 1: rows on both sides of main_chain_min), the main
    # chain from stage A's keys the scores programs stored, the narrow chain with several striding programs per row,
    # and B-D by the register radix select
    ("tail_direct", {"tail": True}),
    ("tail_chains", {"direct": 4, "group": 4, "programs": 3, "tail": True}),
    ("tail_chain_a", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "tail": True}),
    ("tail_chain3_tiles", {"direct": 4, "group": 4, "programs": 3, "short_chain3": True, "tail": True,
                           "scores_tile": 16, "scores_programs": 2}),
    ("tail_rsel", {"direct": 4, "group": 2, "programs": 3, "short_chain": False, "rsel": True, "tail": True}),
    # eighteenth session (dev, off): the threshold filter -- rows without stage A (fused: the block scores formed from
    # the logits in both passes), rows with stage A after B (group 8: S = 64 >= KP at k = 1 / 24; off where a plan
    # cannot take it), from stage A's keys the scores launch stored, and in the one-launch tail
    ("filter_chains", {"direct": 4, "group": 4, "programs": 3, "filter_cap": 32, "filter_q": 4}),
    ("filter_chain3_q1", {"direct": 4, "group": 8, "programs": 3, "short_chain3": True, "filter_cap": 64,
                          "filter_q": 1}),
    ("filter_main", {"direct": 4, "group": 8, "programs": 3, "short_chain": False, "filter_cap_main": 32}),
    ("filter_scores_a", {"direct": 4, "group": 8, "programs": 3, "short_chain": False, "scores_a": True,
                         "filter_cap_main": 32, "filter_cap": 32}),
    ("filter_tail", {"direct": 4, "group": 4, "programs": 3, "tail": True, "filter_cap": 32, "filter_q": 2}),
]


@pytest.mark.parametrize("path,cfg", BLOCK_PATHS, ids=[p[0] for p in BLOCK_PATHS])
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_candidate_blocks_match_reference(path, cfg, fused, fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs, rr, k = 6, 700, 8, 2, 24
    x = torch.randn(rows, width, generator=gen)
    x[torch.rand(rows, width, generator=gen) < 0.03] = NAN  # NaN inside blocks propagates
    ends = torch.tensor([700, 1500, 333])  # one past the width
    starts = torch.tensor([0, 130, 50])
    ref = topk_select_reference(block_scores_torch(x, ends, starts, bs, rr), k)
    out = poisoned(rows, k, "cpu")
    st.select_candidate_blocks_triton(x, ends, k, starts, bs, rr, out, fused=fused, config=cfg)
    assert_same_sets(out, ref, f"{path} fused={fused} seed={fresh_seed}")


# (name, config, fused): the block paths fused and unfused, and the radix paths (unfused only: no fused form)
FLAG_PATHS = [(n, c, f) for n, c in BLOCK_PATHS for f in (True, False)] + [
    ("radix_parallel_short", {"algo": "radix", "parallel": True, "split": 2, "short": 30}, False),
    ("radix_full_pass", {"algo": "radix"}, False)]


@pytest.mark.parametrize("path,cfg,fused", FLAG_PATHS, ids=[f"{p[0]}-{'fused' if p[2] else 'unfused'}" for p in FLAG_PATHS])
@pytest.mark.parametrize("k", [1, 24, 100])
def test_candidate_blocks_with_flags(path, cfg, fused, k, fresh_seed):
    """with_flags=True: ids and flags in one call (the hier kernel zeroes and writes the flags in its own launch;
    radix / fold run the flags kernel after).  Flags poisoned first; every byte must equal the flags contract
    (sentinel slot included: ends past the width and non-zero starts) of the reference ids."""
    from dsa_lab.flags import candidate_flags_torch

    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs, rr = 6, 700, 8, 2
    x = torch.randn(rows, width, generator=gen)
    x[torch.rand(rows, width, generator=gen) < 0.03] = NAN
    ends = torch.tensor([700, 1500, 333])
    starts = torch.tensor([0, 130, 50])
    ref = topk_select_reference(block_scores_torch(x, ends, starts, bs, rr), k)
    out = poisoned(rows, k, "cpu")
    fl = torch.full((rows, -(-width // bs) + 1), 0xAB, dtype=torch.uint8)
    ids, got = st.select_candidate_blocks_triton(x, ends, k, starts, bs, rr, out, fused=fused, config=cfg,
                                                 with_flags=True, flags_out=fl)
    assert_same_sets(ids, ref, f"{path} fused={fused} k={k} seed={fresh_seed}")
    want = candidate_flags_torch(ref, width, starts, bs, rr)
    bad = (got != want).nonzero()
    assert got is fl and not len(bad), f"{path} fused={fused} k={k}: first bad (row, slot) {bad[:3].tolist()}"


@pytest.mark.parametrize("nt", [1, 2])
def test_fused_whole_tiles_newest_block(nt, fresh_seed):
    """Fused stage A's whole tiles (``_l1_keys_whole``: one contiguous load, keys in the ordered-integer domain)
    on rows whose live extent ends on a tile boundary, so the newest block (pinned to +inf) and NaN blocks lie
    inside whole tiles; non-zero starts; the rows' last tiles whole or partial.  Ids and flags must equal the
    exact reference's."""
    from dsa_lab.flags import candidate_flags_torch

    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs, k = 4, 800, 8, 5
    x = torch.randn(rows, width, generator=gen)
    x[:, 3::8] = -x[:, 3::8].abs() - 50.0  # one lane of every block far below: the block max must skip it
    x[:, [141, 277]] = NAN  # two NaN blocks per row (they rank above the pinned +inf; k leaves room for it)
    # extents of 320 / 640 / 256 / 300 logits: multiples of the 32- and 64-logit tiles except the last
    ends = torch.tensor([320, 640, 386, 300])
    starts = torch.tensor([0, 0, 130, 0])
    cfg = {"direct": 4, "group": 2, "programs": 2, "short_chain": False, "fast_a": True, "nt": nt}
    ref = topk_select_reference(block_scores_torch(x, ends, starts, bs, 1), k)
    out = poisoned(rows, k, "cpu")
    fl = torch.full((rows, width // bs + 1), 0xAB, dtype=torch.uint8)
    ids, got = st.select_candidate_blocks_triton(x, ends, k, starts, bs, 1, out, fused=True, config=cfg,
                                                 with_flags=True, flags_out=fl)
    assert_same_sets(ids, ref, f"whole tiles nt={nt} seed={fresh_seed}")
    newest = ((ends - starts - 1) // bs).tolist()
    for r in range(rows):  # the pinned block is always chosen
        assert newest[r] in ids[r].tolist(), f"row {r}: newest block {newest[r]} not selected"
    want = candidate_flags_torch(ref, width, starts, bs, 1)
    bad = (got != want).nonzero()
    assert not len(bad), f"whole tiles nt={nt}: first bad (row, slot) {bad[:3].tolist()}"


def test_candidate_blocks_with_flags_public_api(fresh_seed):
    """dsa_lab.select_candidate_blocks(with_flags=True) on every arm equals candidate_flags of its own ids;
    a non-bool with_flags is a TypeError naming it."""
    gen = torch.Generator().manual_seed(fresh_seed)
    x = torch.randn(3, 900, generator=gen)
    ends = torch.tensor([900, 400, 0])
    for impl in ("triton", "triton_fused", "torch", "reference"):
        ids, fl = dsa_lab.select_candidate_blocks(x, ends, 16, block_size=8, impl=impl, with_flags=True)
        assert torch.equal(fl, dsa_lab.candidate_flags(ids, 900, block_size=8, impl="torch")), impl
        assert fl[2].sum() == 0
    with pytest.raises(TypeError, match="with_flags"):
        dsa_lab.select_candidate_blocks(x, ends, 16, with_flags=1)


def test_candidate_blocks_fused_flags_by_the_flags_kernel_at_many_rows(fresh_seed):
    """Fused, more rows than twice the SM count (4 under the interpreter): the flags come from the flags kernel after
    the select launch; poisoned first, every byte must equal the contract of the reference ids (starts, ends past
    the width, row_repeat)."""
    from dsa_lab.flags import candidate_flags_torch

    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs, rr, k = 12, 300, 8, 3, 10
    x = torch.randn(rows, width, generator=gen)
    ends = torch.tensor([300, 500, 17, 0])
    starts = torch.tensor([0, 40, 9, 0])
    ref = topk_select_reference(block_scores_torch(x, ends, starts, bs, rr), k)
    nb = -(-width // bs)
    flags = torch.full((rows, nb + 1), 0xAB, dtype=torch.uint8)
    out = poisoned(rows, k, "cpu")
    _, fl = st.select_candidate_blocks_triton(x, ends, k, starts, bs, rr, out, fused=True, with_flags=True,
                                              flags_out=flags)
    assert_same_sets(out, ref, f"seed={fresh_seed}")
    assert torch.equal(fl, candidate_flags_torch(ref, width, starts, bs, rr))


@pytest.mark.parametrize("bs", [1, 3, 64])
def test_candidate_blocks_block_sizes(bs, fresh_seed):
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, k = 2, 640, 10
    x = torch.randn(rows, width, generator=gen)
    ends = torch.tensor([640, 0])  # a zero-length row: all -1
    ref = topk_select_reference(block_scores_torch(x, ends, None, bs, 1), k)
    strided = {"strided_keys": True, "strided_direct": True, "direct": 16, "group": 2}  # _group_keys' logit loop
    for fused, cfg in ((True, None), (False, None), (True, strided), (False, strided)):
        out = poisoned(rows, k, "cpu")
        st.select_candidate_blocks_triton(x, ends, k, None, bs, 1, out, fused=fused, config=cfg)
        assert_same_sets(out, ref, f"bs={bs} fused={fused} config={cfg}")
        assert (out[1] == -1).all()


def test_candidate_blocks_impls_fused_unfused_and_default(fresh_seed):
    """impl="triton" (the measured default: unfused), "triton_unfused" and "triton_fused" all give the
    contract's blocks; "triton_fused" refuses shapes the fused kernel does not serve, naming the argument."""
    gen = torch.Generator().manual_seed(fresh_seed)
    x = torch.randn(3, 2000, generator=gen)
    x[torch.rand(3, 2000, generator=gen) < 0.02] = NAN
    ends = torch.tensor([2000, 900, 17])
    ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), 20)
    for impl in ("triton", "triton_unfused", "triton_fused"):
        out = poisoned(3, 20, "cpu")
        dsa_lab.select_candidate_blocks(x, ends, 20, block_size=8, impl=impl, out=out)
        assert_same_sets(out, ref, f"impl={impl} seed={fresh_seed}")
    assert st.fusable(64, 8) and st.fusable(256, 8) and not st.fusable(257, 8) and not st.fusable(2048, 8) and not st.fusable(10, 64)
    with pytest.raises(ValueError, match="topk_blocks=2048"):
        dsa_lab.select_candidate_blocks(x, ends, 2048, block_size=8, impl="triton_fused")


def test_candidate_blocks_unfused_leaves_dead_score_slots_unread(monkeypatch):
    """The unfused composition asks the scores kernel not to write slots past each row's extent
    (fill_dead=False) and still selects exactly: the select kernel never reads them."""
    from dsa_lab import scores_triton

    seen = []
    real = scores_triton.block_scores_triton

    def spy(*a, **kw):
        sc = real(*a, **kw)
        seen.append(kw.get("fill_dead", True))
        return sc
    monkeypatch.setattr(scores_triton, "block_scores_triton", spy)
    x = torch.randn(2, 40000)
    ends = torch.tensor([40000, 100])
    out = poisoned(2, 16, "cpu")
    dsa_lab.select_candidate_blocks(x, ends, 16, block_size=8, impl="triton", out=out)
    assert seen == [False]
    assert_same_sets(out, topk_select_reference(block_scores_torch(x, ends, None, 8, 1), 16), "unfused")


def test_candidate_blocks_garbage_past_end_ignored():
    x = torch.randn(2, 512)
    ends = torch.tensor([100, 37])
    x[0, 100:] = INF
    x[1, 37:] = NAN
    ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), 8)
    for fused in (True, False):
        out = poisoned(2, 8, "cpu")
        st.select_candidate_blocks_triton(x, ends, 8, None, 8, 1, out, fused=fused,
                                          config={"direct": 2, "group": 2, "programs": 2})
        assert_same_sets(out, ref, f"fused={fused}")


# ---------------------------------------------------------------- GPU lane

def _capture_replay(call, bounds, cases, ref, out):
    """Capture ``call()`` in a CUDA graph, then for each entry of ``cases`` write it into the device tensor
    ``bounds``, poison ``out``, replay and compare with ``ref()``: the bounds are read on the device only."""
    call()  # compile, counters
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        call()
    for vals in cases:
        bounds.copy_(torch.tensor(vals, dtype=torch.int32))
        out.fill_(POISON)
        g.replay()
        torch.cuda.synchronize()
        assert_same_sets(out, ref(), f"replay {vals}")


@pytest.mark.gpu
def test_gpu_graph_capture_replay_with_new_lengths():
    rows, n, k = 4, 32768, 64
    x = torch.randn(rows, n, device="cuda")
    lengths = torch.full((rows,), 100, dtype=torch.int32, device="cuda")
    out = torch.empty((rows, k), dtype=torch.int32, device="cuda")
    _capture_replay(lambda: dsa_lab.topk_select(x, k, lengths=lengths, impl="triton", out=out), lengths,
                    ([100, 5000, 32768, 0], [32768, 1, 64, 20000], [7, 7, 7, 7]),
                    lambda: topk_select_reference(x, k, lengths, 1), out)


@pytest.mark.gpu
@pytest.mark.parametrize("impl", ["triton", "triton_fused"])  # the default (unfused) dispatch and the fused kernel
def test_gpu_candidate_blocks_graph_capture_replay_with_new_ends(impl):
    rows, width, k = 8, 262144, 64
    x = torch.randn(rows, width, device="cuda")
    ends = torch.full((rows,), 4096, dtype=torch.int32, device="cuda")
    out = torch.empty((rows, k), dtype=torch.int32, device="cuda")
    _capture_replay(lambda: dsa_lab.select_candidate_blocks(x, ends, k, impl=impl, out=out), ends,
                    ([4096] * 8, [262144, 1, 0, 65536, 16384, 300000, 9, 100000]),
                    lambda: topk_select_reference(block_scores_torch(x, ends, None, 8, 1), k), out)


PDL = {"pdl": True, "pdl_early": True}
FILTER = {"filter_cap": 256, "filter_q": 4, "filter_cap_main": 128}


@pytest.mark.gpu
@pytest.mark.parametrize("impl,k,rows,cfg", [
    ("triton", 64, 8, None), ("triton_fused", 64, 8, None), ("triton", 64, 300, None), ("triton", 512, 8, None),
    ("triton", 512, 300, None),
    # sixteenth session (dev options, off): the select launch a programmatic dependent of the scores launch, which
    # signals launch_dependents as its programs start (sm_90+; elsewhere the plain launches run) -- with stage A's keys
    # (1 / 8 rows), without (64 rows), with the scores grid at 8 x SM programs, and many rows
    ("triton", 64, 1, PDL), ("triton", 64, 8, PDL), ("triton", 64, 64, {**PDL, "scores_mult": 8}),
    ("triton", 64, 300, PDL),
    # seventeenth session (dev option, off): one launch, each row's last scores program selects the row
    ("triton", 64, 1, {"tail": True}), ("triton", 64, 8, {"tail": True}), ("triton", 64, 64, {"tail": True}),
    # eighteenth session (dev option, off): the threshold filter, rows without stage A and after B
    ("triton", 64, 1, FILTER), ("triton", 64, 8, FILTER), ("triton", 64, 300, FILTER),
    # nineteenth session (dev option, off): the select waits per row for the scores launch (300 rows: one program
    # per row, the early-signalled dependent launch by the rule)
    ("triton", 64, 300, {"rowsync": True}), ("triton", 64, 160, {"rowsync": True, "scores_mult": 8})])
def test_gpu_candidate_blocks_with_flags_graph_replay(impl, k, rows, cfg):
    """ids + flags in one captured call (hier: flags zeroed and written by the select kernel; k = 512 at 8 rows:
    the parallel radix, then the flags kernel), replayed with new ends; ids and every flags byte poisoned first.
    ``cfg``: the unfused composition with those dev options (``select_candidate_blocks_triton``)."""
    from dsa_lab.flags import candidate_flags_torch

    width = 262144
    x = torch.randn(rows, width, device="cuda")
    ends = torch.full((rows,), 4096, dtype=torch.int32, device="cuda")
    out = torch.empty((rows, k), dtype=torch.int32, device="cuda")
    res = {}

    def call():
        if cfg is not None:
            res["r"] = st.select_candidate_blocks_triton(x, ends, k, None, 8, 1, out, fused=False, config=dict(cfg),
                                                         with_flags=True)
        else:
            res["r"] = dsa_lab.select_candidate_blocks(x, ends, k, impl=impl, out=out, with_flags=True)

    call()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        call()
    flags = res["r"][1]
    gen = torch.Generator().manual_seed(5)
    for rep in range(3):
        vals = torch.randint(0, width + 5000, (rows,), generator=gen, dtype=torch.int32)
        vals[0] = 0 if rep == 0 else vals[0]
        ends.copy_(vals)
        out.fill_(POISON)
        flags.fill_(0xAB)
        g.replay()
        torch.cuda.synchronize()
        ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), k)
        assert_same_sets(out, ref, f"replay {rep}")
        bad = (flags != candidate_flags_torch(ref, width, None, 8, 1)).nonzero()
        assert not len(bad), f"replay {rep}: first bad (row, slot) {bad[:3].tolist()}"


@pytest.mark.gpu
@pytest.mark.parametrize("rows,live,k,kind", [
    (1, 32768, 64, "normal"), (1, 32768, 64, "ramp"), (8, 8192, 64, "equal"), (640, 32768, 64, "normal"),
    (128, 2048, 100, "specials"), (3, 32768, 2048, "normal"), (32, 32768, 2048, "equal"), (4, 1000, 2048, "normal"),
])
@pytest.mark.parametrize("algo", ["hier", "fold"])
def test_gpu_sizes(rows, live, k, kind, algo):
    gen = torch.Generator().manual_seed(rows * 7 + k)
    n = max(live, 1000)
    x = _values(kind, rows, n, gen).cuda()
    lengths = torch.randint(0, live + 1, (rows,), generator=gen).cuda()
    lengths[0] = live
    out = poisoned(rows, k, "cuda")
    st.topk_select_triton(x, k, lengths, 1, out, config={"algo": algo})
    assert_same_sets(out, topk_select_reference(x, k, lengths, 1), f"{algo} {rows}x{live} k={k} {kind}")


@pytest.mark.gpu
@pytest.mark.parametrize("rows,live,kind", [
    (1, 8192, "normal"), (1, 2048, "normal"), (1, 32768, "normal"), (1, 8192, "ramp"), (8, 8192, "equal"),
    (640, 8192, "normal"), (640, 32768, "specials"), (32, 32768, "equal"), (128, 2048, "ramp")])
def test_gpu_filter_sizes(rows, live, kind):
    """The threshold filter at GPU sizes (k = 64: the 16K / 64K chains and the 256K main chain), ids checked."""
    gen = torch.Generator().manual_seed(rows * 11 + live)
    x = _values(kind, rows, 32768, gen).cuda()
    lengths = torch.randint(live // 2, live + 1, (rows,), generator=gen).cuda()
    lengths[0] = live
    out = poisoned(rows, 64, "cuda")
    st.topk_select_triton(x, 64, lengths, 1, out, config=dict(FILTER))
    assert_same_sets(out, topk_select_reference(x, 64, lengths, 1), f"filter {rows}x{live} {kind}")


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_candidate_blocks_flags_out_misaligned(fused, fresh_seed):
    """A ``flags_out`` that starts at an odd address (a view into a larger buffer): the word-wise zeroing
    (``flags_wide``, 16-byte aligned tensors only) falls back to byte stores; every byte still equals the contract."""
    from dsa_lab.flags import candidate_flags_torch

    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, bs, k = 3, 700, 8, 24
    x = torch.randn(rows, width, generator=gen)
    ends = torch.tensor([700, 333, 1500])
    nb = -(-width // bs)
    buf = torch.full((rows * (nb + 1) + 1,), 0xAB, dtype=torch.uint8)
    fl = buf[1:].view(rows, nb + 1)
    assert fl.data_ptr() % 2 == 1
    ref = topk_select_reference(block_scores_torch(x, ends, None, bs, 1), k)
    cfg = {"flags_wide": True, "direct": 4, "group": 2, "programs": 3, "short_chain": False}
    ids, got = st.select_candidate_blocks_triton(x, ends, k, None, bs, 1, poisoned(rows, k, "cpu"), fused=fused,
                                                 config=cfg, with_flags=True, flags_out=fl)
    assert_same_sets(ids, ref, f"fused={fused} seed={fresh_seed}")
    assert torch.equal(got, candidate_flags_torch(ref, width, None, bs, 1)) and int(buf[0]) == 0xAB


@pytest.mark.parametrize("cfg", [{"algo": "radix", "tail": True}, {"two_phase": True, "tail": True},
                                 {"group": 8, "scores_tile": 4, "tail": True}])
def test_tail_needs_the_one_launch_hier_select(cfg):
    """``tail`` (one launch: each row's last scores program selects it) takes the hier select's one-launch plan and
    stage A's keys from the scores tiles: a radix or two-launch plan, or super groups wider than the scores tile,
    is a ValueError naming it."""
    x = torch.randn(2, 400)
    with pytest.raises(ValueError, match="tail"):
        st.select_candidate_blocks_triton(x, torch.tensor([400, 200]), 8, None, 8, 1, None, fused=False, config=cfg)


@pytest.mark.parametrize("cfg", [{"algo": "radix", "scores_a": True}, {"two_phase": True, "scores_a": True},
                                 {"group": 8, "scores_tile": 4, "scores_a": True}])
def test_scores_a_needs_the_one_launch_hier_select(cfg):
    """``scores_a`` (the scores launch stores stage A's keys) is a form of the unfused hier select in one launch:
    asked for with the radix select, with ``two_phase``, or with super groups that do not divide the scores tile,
    it is a ValueError naming it, never a silent fallback."""
    x = torch.randn(2, 700)
    with pytest.raises(ValueError, match="scores_a"):
        st.select_candidate_blocks_triton(x, torch.tensor([700, 500]), 4, None, 8, 1, fused=False, config=cfg)


@pytest.fixture
def scores_launches(monkeypatch):
    """A list that gets the keyword arguments of every scores launch of the unfused composition, in order."""
    from dsa_lab import scores_triton

    calls = []
    real = scores_triton.block_scores_triton
    monkeypatch.setattr(scores_triton, "block_scores_triton", lambda *a, **kw: calls.append(kw) or real(*a, **kw))
    return calls


def test_scores_a_default_rule(monkeypatch, scores_launches):
    """With :data:`UNFUSED_STAGE_A_IN_SCORES` on, the unfused hier select takes the scores launch's stage-A keys
    where its super groups divide the scores tile, and the default composition (stage A in the select) otherwise;
    both give the reference ids."""
    monkeypatch.setattr(st, "UNFUSED_STAGE_A_IN_SCORES", True)
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(4, 2000, generator=gen)
    ends, k = torch.tensor([2000, 900, 1, 1500]), 3
    ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), k)
    for cfg, want in (({"direct": 4, "group": 2, "short_chain": False}, True),
                      ({"direct": 4, "group": 8, "short_chain": False, "scores_tile": 32}, False)):
        out = poisoned(4, k, "cpu")
        st.select_candidate_blocks_triton(x, ends, k, None, 8, 1, out, fused=False, config=cfg)
        assert_same_sets(out, ref, f"{cfg}")
        assert (scores_launches[-1].get("stage_a") is not None) is want, cfg


def test_pdl_rule_by_rows():
    """:func:`_pdl_rule` at 132 SMs, the device it was measured on (tune_dev_AJ / AK / AL): the early-signalled
    dependent launch at 1-26 rows and from 44 rows on, the plain launches at 27-43, the ~16 x SM scores grid at
    44-396 rows only; it scales with the SM count."""
    assert [st._pdl_rule(r, 132) for r in (1, 26, 27, 43, 44, 396, 397, 640)] == [
        (True, None), (True, None), (False, None), (False, None), (True, 16), (True, 16), (True, None), (True, None)]
    assert st._pdl_rule(2, 8) == (False, None) and st._pdl_rule(1, 8) == (True, None)


@pytest.mark.parametrize("setting", [None, True])
def test_pdl_needs_the_device(monkeypatch, setting, scores_launches, fresh_seed):
    """With :data:`UNFUSED_PDL` on or by its rule, a device whose facts say no ``pdl`` (the interpreter; ROCm) runs the
    plain launches: the scores launch gets no ``launch_dependents`` and the rule's smaller grid is not taken; the ids
    and flags equal the reference."""
    from dsa_lab.flags import candidate_flags_torch

    monkeypatch.setattr(st, "UNFUSED_PDL", setting)
    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, k = 3, 2000, 5
    x = torch.randn(rows, width, generator=gen)
    ends = torch.tensor([2000, 900, 1])
    ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), k)
    ids, fl = st.select_candidate_blocks_triton(x, ends, k, None, 8, 1, poisoned(rows, k, "cpu"), fused=False,
                                                with_flags=True)
    assert_same_sets(ids, ref, f"UNFUSED_PDL={setting} seed={fresh_seed}")
    assert torch.equal(fl, candidate_flags_torch(ref, width, None, 8, 1))
    seen = [(kw.get("launch_dependents"), kw.get("mult")) for kw in scores_launches]
    assert seen == [(False, None)], seen


def test_scores_a_keys_for_every_main_chain_row(monkeypatch, fresh_seed):
    """With ``scores_a`` the select reads stage A's keys that only the scores launch wrote: the workspace is
    poisoned with keys that would outrank every real one, so a main-chain row whose keys the launch skipped
    (``main_chain_min`` too high) or misplaced selects the wrong super groups.  Rows on both sides of the bound,
    k = 1 (KP 2: the direct top-k, the narrow / short / second short chains and the main chain all reachable)."""
    from dsa_lab.keys import pack_keys

    poison = int(pack_keys(torch.tensor([float("nan")]), torch.tensor([0]))[0])  # NaN at column 0: the top key
    monkeypatch.setattr(st, "_workspace", lambda n, dev: torch.full((n,), poison, dtype=torch.int64, device=dev))
    gen = torch.Generator().manual_seed(fresh_seed)
    cfg = {"direct": 4, "group": 4, "programs": 3, "scores_a": True}
    p = st.plan(8, 250, 1, {"sm_count": 4, "name": "triton-interpreter"}, fused=False, block_size=8,
                **{k: v for k, v in cfg.items() if k != "scores_a"})
    m = st.main_chain_min(p)
    assert m == 64, p  # the second short chain's bound at KP 2, super groups of 16
    x = torch.randn(8, 2000, generator=gen)
    lens = [m - 1, m, m + 1, 250, 3, 200, 17, m + 9]  # extents in blocks around the bound
    ends = torch.tensor([8 * n for n in lens])
    ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), 1)
    out = poisoned(8, 1, "cpu")
    st.select_candidate_blocks_triton(x, ends, 1, None, 8, 1, out, fused=False, config=cfg)
    assert_same_sets(out, ref, f"seed={fresh_seed}")


def test_scores_a_rule(monkeypatch, scores_launches):
    """``UNFUSED_STAGE_A_IN_SCORES = None`` takes the measured rule (rows * 4 <= SMs); ``False`` never, ``True``
    wherever it applies; an explicit ``scores_a`` in the config wins over all three."""
    from dsa_lab import _impl

    assert st._scores_a_rule(33, 132) and not st._scores_a_rule(34, 132) and st._scores_a_rule(1, 4)
    monkeypatch.setattr(_impl, "facts_for", lambda t: {"sm_count": 8, "name": "triton-interpreter"})
    x = torch.randn(4, 2000)
    ends = torch.tensor([2000, 900, 1, 1500])
    cfg = {"direct": 4, "group": 2, "short_chain": False}
    for const, rows, extra, want in ((None, 2, {}, True), (None, 3, {}, False), (False, 2, {}, False),
                                     (True, 3, {}, True), (None, 3, {"scores_a": True}, True),
                                     (True, 2, {"scores_a": False}, False)):
        monkeypatch.setattr(st, "UNFUSED_STAGE_A_IN_SCORES", const)
        st.select_candidate_blocks_triton(x[:rows], ends[:rows], 3, None, 8, 1, fused=False, config={**cfg, **extra})
        assert (scores_launches[-1].get("stage_a") is not None) is want, (const, rows, extra)


@pytest.mark.parametrize("sprog,with_flags", [(1, True), (3, True), (2, False)])
def test_rowsync_matches_reference_and_lowers_every_flag(sprog, with_flags, scores_launches, fresh_seed):
    """``rowsync`` (the select waits per row for the scores launch, dev): one program per row, the scores launch at
    1-3 programs per row on its ``(Q, rows)`` grid.  Ids (and every flags byte) equal the reference; afterwards every
    arrival counter and done flag is back at 0, so a second call (new ends) runs as the first.  Rows of every extent
    kind: whole, partial, one block, none."""
    from dsa_lab.flags import candidate_flags_torch

    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width, k = 5, 3000, 6
    x = torch.randn(rows, width, generator=gen)
    cfg = {"rowsync": True, "programs": 1, "scores_programs": sprog, "direct": 4, "group": 2}
    for ends in (torch.tensor([3000, 1234, 5, 0, 2999]), torch.randint(0, width + 40, (rows,), generator=gen)):
        ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), k)
        got = st.select_candidate_blocks_triton(x, ends, k, None, 8, 1, poisoned(rows, k, "cpu"), fused=False,
                                                config=dict(cfg), with_flags=with_flags)
        ids = got[0] if with_flags else got
        assert_same_sets(ids, ref, f"ends={ends.tolist()} seed={fresh_seed}")
        if with_flags:
            assert torch.equal(got[1], candidate_flags_torch(ref, width, None, 8, 1))
        rc = scores_launches[-1].get("row_counters")
        assert rc is not None and rc.numel() >= 2 * rows, "rowsync did not reach the scores launch"
        assert int(rc[: 2 * rows].abs().sum()) == 0, rc[: 2 * rows]


def test_row_done_raises_each_rows_flag_once(fresh_seed):
    """The scores launch with ``row_counters``: every row's arrival counter ends at 0 and its done flag at 1 (the row's
    programs all arrived, the last one raised it); the live scores equal the reference's, rows past 2 untouched."""
    from dsa_lab.scores_triton import block_scores_triton

    gen = torch.Generator().manual_seed(fresh_seed)
    rows, width = 4, 5000
    x = torch.randn(rows, width, generator=gen)
    ends = torch.tensor([5000, 17, 0, 4321])
    rc = torch.full((2 * rows + 3,), 0, dtype=torch.int32)
    rc[2 * rows:] = 77
    sc = block_scores_triton(x, ends, None, 8, 1, fill_dead=False, programs=3, row_counters=rc)
    assert rc[:rows].tolist() == [0] * rows and rc[rows: 2 * rows].tolist() == [1] * rows
    assert rc[2 * rows:].tolist() == [77] * 3
    want = block_scores_torch(x, ends, None, 8, 1)
    for r, e in enumerate(ends.tolist()):
        n = -(-e // 8)
        assert torch.equal(sc[r, :n], want[r, :n]), r


def test_rowsync_only_where_one_program_per_row(scores_launches):
    """``rowsync`` applies to a hier plan of one program per row in one launch, without ``scores_a``; elsewhere the
    call runs as without it (no counters given to the scores launch) and is still exact."""
    x = torch.randn(3, 2000)
    ends = torch.tensor([2000, 900, 1])
    ref = topk_select_reference(block_scores_torch(x, ends, None, 8, 1), 4)
    base = {"rowsync": True, "direct": 4, "group": 2}
    for extra, engaged in (({"programs": 1}, True), ({"programs": 2}, False), ({"programs": 1, "scores_a": True}, False),
                           ({"programs": 1, "two_phase": True}, False), ({"programs": 1, "rowsync": False}, False)):
        out = poisoned(3, 4, "cpu")
        st.select_candidate_blocks_triton(x, ends, 4, None, 8, 1, out, fused=False, config={**base, **extra})
        assert_same_sets(out, ref, f"{extra}")
        assert (scores_launches[-1].get("row_counters") is not None) is engaged, extra


@pytest.mark.parametrize("kw,match", [
    ({"padded": True}, "row_counters applies"), ({"fill_dead": True}, "row_counters applies"),
    ({"schedule": "live"}, "row_counters applies"),
    ({"rc": torch.zeros(6, dtype=torch.int64)}, "row_counters must be"),
    ({"rc": torch.zeros(5, dtype=torch.int32)}, "row_counters must be")])
def test_row_counters_bad_arguments(kw, match):
    """``row_counters`` outside its kernel (padded, every slot written, the live schedule), of the wrong dtype or too
    small: a ValueError naming it."""
    from dsa_lab.scores_triton import block_scores_triton

    kw = dict(kw)
    rc = kw.pop("rc", torch.zeros(6, dtype=torch.int32))
    kw.setdefault("fill_dead", False)
    with pytest.raises(ValueError, match=match):
        block_scores_triton(torch.randn(3, 100), torch.tensor([100, 50, 1]), None, 8, 1, row_counters=rc, **kw)


def test_row_sync_needs_one_program_per_row():
    """``_launch``'s ``row_sync`` with a plan of several programs per row: a ValueError, not a select that waits on
    counters no launch raises."""
    sc = torch.randn(2, 300)
    with pytest.raises(ValueError, match="row_sync"):
        st._launch(sc, torch.tensor([300, 200], dtype=torch.int32), None, None, 2, 300, 300, 4, 1, 2, False, 8,
                   {"programs": 2, "direct": 4, "group": 2}, row_sync=torch.zeros(6, dtype=torch.int32))
