"""Calls on several streams, threads and graphs at once: each must return what the same call returns alone.

The GPU tests run every select path on 4 streams released together (40 calls each), on 2 Python threads with a
stream each, and as 4 graphs replayed at once (:mod:`dsa_lab.bench.streams`).  The CPU tests check the kept
buffers' rules (:mod:`dsa_lab.launch.scratch`: one per stream, per capture, bounded; taken before a call's first
launch) and the harness's cases at interpreter sizes.
"""
import os

import pytest
import torch
from _select_helpers import topk_triton

import dsa_lab
from dsa_lab.bench import streams
from dsa_lab.launch import scratch as _scratch
from dsa_lab.launch import select as launch

SEED = int.from_bytes(os.urandom(3), "little")
GPU_CASES = [c.name for c in streams.cases("gpu")]


@pytest.mark.gpu
@pytest.mark.parametrize("name", GPU_CASES)
@pytest.mark.parametrize("mode", ["streams", "threads", "graphs"])
def test_concurrent_calls_match_alone(name, mode):
    case = next(c for c in streams.cases("gpu") if c.name == name)
    r = streams.run_case(case, dsa_lab, streams=2 if mode == "threads" else 4, calls=40, mode=mode, seed=SEED)
    assert r["mismatched"] == 0, f"{r} (seed {SEED})"


@pytest.fixture
def scratch_tables(monkeypatch):
    monkeypatch.setattr(_scratch, "_EAGER", type(_scratch._EAGER)())
    monkeypatch.setattr(_scratch, "_CAPTURE", {})
    stream = {"now": 0}
    monkeypatch.setattr(_scratch, "_stream", lambda device: stream["now"])
    return stream


def test_scratch_one_buffer_per_stream(scratch_tables):
    dev = torch.device("cpu")
    a = _scratch.zeroed("c", dev, 10)
    assert a.numel() >= 10 and int(a.abs().sum()) == 0
    assert _scratch.zeroed("c", dev, 10) is a  # the same stream reuses it
    assert _scratch.zeroed("other", dev, 10) is not a  # another purpose has its own
    scratch_tables["now"] = 1
    b = _scratch.zeroed("c", dev, 10)
    assert b is not a and b.data_ptr() != a.data_ptr()
    scratch_tables["now"] = 0
    big = _scratch.zeroed("c", dev, 5000)  # grown: a new buffer for this stream only
    assert big.numel() >= 5000 and big is not a
    scratch_tables["now"] = 1
    assert _scratch.zeroed("c", dev, 10) is b


def test_scratch_table_is_bounded(scratch_tables, monkeypatch):
    monkeypatch.setattr(_scratch, "MAX_STREAMS", 3)
    dev = torch.device("cpu")
    bufs = []
    for s in range(5):
        scratch_tables["now"] = s
        bufs.append(_scratch.zeroed("c", dev, 4))
    assert len(_scratch._EAGER) == 3
    assert [k[-1] for k in _scratch._EAGER] == [2, 3, 4]  # least recently used dropped first
    scratch_tables["now"] = 2
    assert _scratch.zeroed("c", dev, 4) is bufs[2]
    scratch_tables["now"] = 0
    assert _scratch.zeroed("c", dev, 4) is not bufs[0]  # dropped: a fresh zeroed buffer


def test_scratch_capture_buffers(scratch_tables, monkeypatch):
    dev = torch.device("cpu")
    cid = {"id": 11}
    monkeypatch.setattr(_scratch, "_capture_id", lambda stream: cid["id"])
    eager = _scratch.zeroed("c", dev, 8)
    g1 = _scratch.zeroed("c", dev, 8, capturing=True)
    assert g1 is not eager  # a capture never takes the eager buffer
    assert _scratch.zeroed("c", dev, 8, capturing=True) is g1  # later calls of the same capture share one
    scratch_tables["now"] = 1
    assert _scratch.zeroed("c", dev, 8, capturing=True) is not g1  # another stream of the capture: its own
    scratch_tables["now"] = 0
    cid["id"] = 12
    g2 = _scratch.zeroed("c", dev, 8, capturing=True)
    assert g2 is not g1  # the next capture: its own
    assert _scratch.zeroed("c", dev, 8) is eager
    assert ("c", "cpu", None, 0) not in _scratch._CAPTURE  # an eager call drops the finished capture's entry
    cid["id"] = None  # capture not identifiable: a buffer per call
    assert _scratch.zeroed("c", dev, 8, capturing=True) is not _scratch.zeroed("c", dev, 8, capturing=True)


@pytest.mark.parametrize("case", streams.cases("cpu"), ids=lambda c: c.name)
def test_stream_cases_are_deterministic(case):
    """The harness's premise: a call made twice alone returns the same outputs (here under the interpreter)."""
    gen = torch.Generator().manual_seed(SEED)
    fn = case.build(dsa_lab, gen, torch.device("cpu"))
    a, b = fn(), fn()
    assert len(a) == len(b) and all(streams._same(x, y) for x, y in zip(a, b))
    assert not streams._same(a[0], torch.full_like(a[0], -7))


@pytest.mark.parametrize("k, width, kept, launches", [(16, 4096, "hier_counters", ["block_scores_into", "hier"]),
                                                       (3000, 40000, "radix_totals", ["block_scores_into", "radix"]),
                                                       (600, 4096, None, ["block_scores_into", "bisect"]),
                                                       (600, 65536, None, ["longrow"])])
def test_kept_buffer_taken_before_the_first_launch(monkeypatch, k, width, kept, launches):
    """In a capture the kept buffer's zeroing is a graph node: it must precede the scores launch, not sit between it
    and the select launched as its programmatic dependent."""
    order = []
    monkeypatch.setattr(_scratch, "zeroed", lambda name, dev, n, capturing=False: order.append(name) or torch.zeros(
        n, dtype=torch.int32))
    for name in ("hier", "bisect", "radix", "longrow", "block_scores_into"):
        monkeypatch.setattr(launch, name, lambda *a, _n=name, **kw: order.append(_n))
    rows = 64 if "longrow" in launches else 2  # (the long-row select from 2^18 columns in all)
    x = torch.empty(rows, width)
    launch.candidate_blocks(x, torch.full((rows,), width, dtype=torch.int32), k, block_size=1)
    assert order == ([kept] if kept else []) + launches, order


def test_radix_totals_between_calls():
    """Two parallel radix calls on one stream share its totals: both exact; after a call only slot 3 of a row may
    hold counts (the next call's first launch zeroes it before its fourth digit adds there)."""
    for rows, n in ((3, 2000), (2, 1500)):
        x = torch.randn(rows, n)
        lengths = torch.randint(n // 2, n + 1, (rows,), dtype=torch.int32)
        lengths[0] = 7
        ids = topk_triton(x, 40, lengths, 1, algo="radix", programs=2, short=0)
        assert streams._same(ids, dsa_lab.topk_select(x, 40, lengths=lengths, impl="reference"))
        tot = launch.totals(x.device, rows)[: rows * 1024].view(rows, 4, 256)
        assert int(tot[:, :3].abs().sum()) == 0


def test_stream_case_labels_name_the_served_path():
    """Each GPU-scale select case's label names the kernel the rules pick for its shape on an H200 or H100 (132 SMs):
    a record's path column says which kernel the check exercised."""
    import re

    from dsa_lab import plans

    names = {"longrow": "long-row", "radix": "radix", "bisect": "bisect", "hier": "hier"}
    checked = 0
    for case in streams.cases("gpu"):
        m = re.fullmatch(r"select_k(\d+)(?:_(\d+))?(?:_x(\d+))?", case.name)
        if not m:
            continue
        k, n, rows = int(m[1]), int(m[2] or 16384), int(m[3] or 2)
        assert case.path.startswith(names[plans.select_algo(rows, n, k, 132)]), (case.name, case.path)
        checked += 1
    assert checked >= 8
