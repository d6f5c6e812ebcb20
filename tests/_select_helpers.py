"""Shared helpers for the Triton selection tests: poisoned outputs and set comparison with a
message naming the first mismatching row and slot."""
import torch

POISON = 0x7EADBEEF


def poisoned(rows, k, device):
    return torch.full((rows, k), POISON, dtype=torch.int32, device=device)


def first_mismatch(got: torch.Tensor, ref: torch.Tensor):
    """None when every row of ``got`` holds the same ids as ``ref`` (order free, all slots);
    else a message with the first mismatching row and sorted slot."""
    assert got.shape == ref.shape, f"shape {tuple(got.shape)} != {tuple(ref.shape)}"
    g = torch.sort(got.cpu().to(torch.int64), dim=1).values
    r = torch.sort(ref.cpu().to(torch.int64), dim=1).values
    bad = (g != r).any(dim=1)
    if not bool(bad.any()):
        return None
    row = int(bad.nonzero()[0, 0])
    col = int((g[row] != r[row]).nonzero()[0, 0])
    gs, rs = set(got[row].tolist()), set(ref[row].tolist())
    return (f"{int(bad.sum())} bad rows; first row {row}, sorted slot {col}: got {int(g[row, col])}, "
            f"want {int(r[row, col])}; missing {sorted(rs - gs)[:8]}, extra {sorted(gs - rs)[:8]}")


def assert_same_sets(got, ref, what=""):
    m = first_mismatch(got, ref)
    assert m is None, f"{what}: {m}"


def topk_triton(x, k, lengths=None, rr=1, out=None, **force):
    """The Triton select on the plan the rules make, or with choices forced (``force``: the keywords of
    :func:`dsa_lab.plans.select`: a path at interpreter sizes)."""
    from dsa_lab import _impl, plans
    from dsa_lab.launch import select as launch

    facts = _impl.facts_for(x)
    plan = plans.select(x.shape[0], x.shape[1], k, facts, **force)
    return launch.topk_select(x, k, lengths, rr, out, plan=plan, facts=facts)


def blocks_triton(x, ends, k, starts=None, bs=8, rr=1, out=None, *, fused=False, with_flags=False, flags_out=None,
                  scores=None, **force):
    """The Triton candidate-block path on the plan the rules make, or with choices forced (``force``: the keywords
    of :func:`dsa_lab.plans.candidate_blocks`)."""
    from dsa_lab import _impl, plans
    from dsa_lab.launch import select as launch

    facts = _impl.facts_for(x)
    plan = plans.candidate_blocks(x.shape[0], x.shape[1], k, facts, block_size=bs, fused=fused,
                                  scored=scores is not None, **force)
    return launch.candidate_blocks(x, ends, k, starts, bs, rr, out, fused=fused, with_flags=with_flags,
                                   flags_out=flags_out, plan=plan, facts=facts, scores=scores)
