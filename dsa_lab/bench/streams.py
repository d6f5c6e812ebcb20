"""Concurrency check: every select path called on several CUDA streams (or threads) at once, each call compared with
the same call made alone.

The calls of one round are made ready together: each stream waits on one event recorded after a sleep on a gate
stream, so the host has queued every stream's calls before the GPU starts any of them, and calls are queued round
robin over the streams.  Each stream has inputs of its own (fresh random values each run); every output of every
call is compared with the output of the same call made alone on the default stream (ids as sorted rows, flags and
masks exactly).  ``mode="graphs"`` captures each stream's calls in a CUDA graph of its own and replays the graphs
at once; ``mode="threads"``: one Python thread per stream, released together by a barrier and the gate event.

:func:`cases` names each path and the call that reaches it (by the rules of :mod:`dsa_lab.plans`); ``pkg`` is a
package with dsa_lab's API (this one, or an older tree imported under another name, for a before/after comparison in
one process).
"""
from __future__ import annotations

import dataclasses
import importlib
import threading
from typing import Callable

import torch

__all__ = ["Case", "cases", "run_case", "run_all", "format_table"]

GATE_CYCLES = 100_000_000  # about 50 ms at 2 GHz: longer than the host takes to queue every call


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    path: str  # the kernels it reaches
    build: Callable  # (pkg, gen, device) -> call() returning a tuple of output tensors


def _lengths(gen, rows, n, device, lo=0.5):
    return torch.randint(int(n * lo), n + 1, (rows,), generator=gen, dtype=torch.int32).to(device)


def _select(rows, n, k):
    def build(pkg, gen, device):
        x = torch.randn(rows, n, generator=gen).to(device)
        lengths = _lengths(gen, rows, n, device)
        return lambda: (pkg.topk_select(x, k, lengths=lengths, impl="triton"),)
    return build


def _blocks(rows, width, k, bs, *, flags, impl="triton"):
    def build(pkg, gen, device):
        x = torch.randn(rows, width, generator=gen).to(device)
        ends = _lengths(gen, rows, width, device)
        if flags:
            return lambda: pkg.select_candidate_blocks(x, ends, k, block_size=bs, impl=impl, with_flags=True)
        return lambda: (pkg.select_candidate_blocks(x, ends, k, block_size=bs, impl=impl),)
    return build


def _compat(rows, width, k, bs):
    def build(pkg, gen, device):
        compat = importlib.import_module(pkg.__name__ + ".compat")
        x = torch.randn(rows, width, generator=gen).to(device)
        ke = _lengths(gen, rows, width, device)
        ks = (ke // 4).to(torch.int32)

        def call():
            out = torch.empty((rows, k), dtype=torch.int32, device=device)
            compat.vllm_select_candidate_blocks(x, ks, ke, k, bs, out)
            masked = x.clone()
            compat.vllm_apply_candidate_mask(masked, ks, ke, out, bs)
            ref = compat.reference_candidate_mask(x, ke, k, bs)
            return out, masked, ref
        return call
    return build


def cases(scale: str = "gpu") -> list[Case]:
    """The paths, at GPU sizes (``"gpu"``: rows of 16K-256K columns) or at interpreter sizes (``"cpu"``: the
    harness's own wiring, not the paths)."""
    if scale == "cpu":
        return [Case("select_k64_small", "hier", _select(2, 512, 64)),
                Case("blocks_flags_small", "scores + hier + flags", _blocks(2, 1024, 16, 8, flags=True)),
                Case("compat_small", "compat drop-ins", _compat(2, 1024, 16, 8))]
    out = []
    for n in (131072, 262144):
        for k in (64, 128, 256):
            out.append(Case(f"select_k{k}_{n}", "hier, split rows", _select(2, n, k)))
    out += [
        Case("select_k2048_49152", "radix, split rows", _select(2, 49152, 2048)),
        Case("select_k512_49152", "radix, split rows", _select(2, 49152, 512)),
        Case("select_k2048_262144_x16", "long-row", _select(16, 262144, 2048)),
        Case("select_k512_65536_x64", "long-row", _select(64, 65536, 512)),
        Case("select_k512_32768_x32", "bisect", _select(32, 32768, 512)),
        Case("select_k64_x640", "hier, one program per row", _select(640, 16384, 64)),
        Case("blocks_k64_262144", "scores + hier (stage A in scores)", _blocks(2, 262144, 64, 8, flags=False)),
        Case("blocks_k64_262144_flags", "scores + hier + flags", _blocks(2, 262144, 64, 8, flags=True)),
        Case("blocks_k256_262144_x32_flags", "scores + hier split + flags", _blocks(32, 262144, 256, 8, flags=True)),
        Case("blocks_k2048_262144_flags", "scores + radix + flags kernel", _blocks(2, 262144, 2048, 8, flags=True)),
        Case("fused_k64_131072_flags", "fused hier + flags", _blocks(2, 131072, 64, 8, flags=True,
                                                                      impl="triton_fused")),
        Case("compat_k64_262144", "compat drop-ins (select, mask, reference)", _compat(2, 262144, 64, 8)),
    ]
    return out


def _poison(t: torch.Tensor) -> None:
    if t.dtype == torch.bool:
        t.fill_(True)
    elif t.is_floating_point():
        t.fill_(float("nan"))
    else:
        t.fill_(-7)


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """ids (int32 rows): the same set per row; anything else: the same bytes."""
    if a.dtype == torch.int32:
        return torch.equal(torch.sort(a, dim=-1).values, torch.sort(b, dim=-1).values)
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def run_case(case: Case, pkg, *, streams: int = 4, calls: int = 40, mode: str = "streams", seed: int = 0,
             device="cuda") -> dict:
    """Run ``case`` on ``streams`` streams at once, ``calls`` calls each; returns counts of the calls whose outputs
    differ from the same call made alone."""
    device = torch.device(device)
    gen = torch.Generator().manual_seed(seed)
    fns = [case.build(pkg, gen, device) for _ in range(streams)]
    alone = [fn() for fn in fns]  # the same calls, one at a time, on the current stream
    torch.cuda.synchronize(device)
    main = torch.cuda.current_stream(device)
    ss = [torch.cuda.Stream(device) for _ in range(streams)]
    gate = torch.cuda.Stream(device)
    outs: list[list] = [[] for _ in range(streams)]
    for s in ss:
        s.wait_stream(main)
    if mode == "graphs":
        graphs = []
        for i, s in enumerate(ss):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=s):
                outs[i] = [fns[i]() for _ in range(calls)]
            graphs.append(g)
        for o in outs:  # poison: the capture ran nothing, so each replay must write every output
            for out in o:
                for t in out:
                    _poison(t)
        torch.cuda.synchronize(device)
    ev = torch.cuda.Event()
    gate.wait_stream(main)
    with torch.cuda.stream(gate):
        torch.cuda._sleep(GATE_CYCLES)
    ev.record(gate)
    for s in ss:
        s.wait_event(ev)
    if mode == "graphs":
        for g, s in zip(graphs, ss):
            with torch.cuda.stream(s):
                g.replay()
    elif mode == "threads":
        barrier = threading.Barrier(streams)
        errors: list = []

        def worker(i):
            try:
                with torch.cuda.stream(ss[i]):
                    barrier.wait()
                    outs[i] = [fns[i]() for _ in range(calls)]
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(streams)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    else:
        for _ in range(calls):
            for i, s in enumerate(ss):
                with torch.cuda.stream(s):
                    outs[i].append(fns[i]())
    for s in ss:
        main.wait_stream(s)
    torch.cuda.synchronize(device)
    bad = sum(not all(_same(o, r) for o, r in zip(out, alone[i])) for i in range(streams) for out in outs[i])
    return {"case": case.name, "path": case.path, "mode": mode, "streams": streams, "calls": streams * calls,
            "mismatched": int(bad)}


def run_all(pkg, *, modes=("streams", "threads", "graphs"), streams: int = 4, calls: int = 40, seed: int = 0,
            names=None, progress=None) -> list[dict]:
    """:func:`run_case` for every GPU case (``names``: substrings selecting some) in every mode (threads: two)."""
    rows = []
    for mode in modes:
        for i, case in enumerate(cases("gpu")):
            if names and not any(n in case.name for n in names):
                continue
            r = run_case(case, pkg, streams=2 if mode == "threads" else streams, calls=calls, mode=mode,
                         seed=seed + i)
            rows.append(r)
            if progress:
                progress(r)
    return rows


def format_table(rows: list[dict]) -> str:
    lines = ["| case | path | mode | calls | mismatched |", "|---|---|---|---|---|"]
    lines += [f"| {r['case']} | {r['path']} | {r['mode']} x {r['streams']} | {r['calls']} | {r['mismatched']} |"
              for r in rows]
    return "\n".join(lines)
