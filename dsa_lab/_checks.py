"""Input validation shared by every public entry point.

Every error names the argument.  Checks of *values* held in device tensors
(negative lengths, starts past ends) need a host read; they are done unless the
current CUDA stream is capturing a graph, where a read is illegal.  Inside a
capture the kernels clamp instead (documented on each function).
"""
from __future__ import annotations

import numbers

import torch

INT_DTYPES = (torch.int32, torch.int64)
MAX_WIDTH = 2**31 - 1  # selection outputs are int32 column ids


def capturing() -> bool:
    """True while the current CUDA stream is capturing a graph (no host reads allowed)."""
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def tensor(x, name: str, *, dtypes=None, ndim=None, device=None) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if dtypes is not None and x.dtype not in dtypes:
        names = " or ".join(str(d).replace("torch.", "") for d in dtypes)
        raise TypeError(f"{name} must have dtype {names}, got {str(x.dtype).replace('torch.', '')}")
    if ndim is not None and x.dim() != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {tuple(x.shape)}")
    if device is not None and x.device != device:
        raise ValueError(f"{name} is on {x.device} but the scores/logits are on {device}")
    return x


def row_strided(x: torch.Tensor, name: str) -> torch.Tensor:
    """Accept a 2-D tensor whose last dim is dense (stride 1) and rows do not overlap."""
    if x.dim() != 2:
        raise ValueError(f"{name} must be 2-D [rows, n], got shape {tuple(x.shape)}")
    rows, n = x.shape
    if n > 1 and x.stride(1) != 1:
        raise ValueError(
            f"{name} must have unit stride along its last dim (row-strided views are fine), "
            f"got strides {tuple(x.stride())}; pass {name}.contiguous()"
        )
    if rows > 1 and x.stride(0) < n:
        raise ValueError(f"{name} rows overlap (stride {x.stride(0)} < width {n})")
    return x


def positive_int(v, name: str, *, minimum: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    v = int(v)
    if v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def row_repeat(v, rows: int) -> int:
    v = positive_int(v, "row_repeat")
    if rows % v:
        raise ValueError(f"row_repeat={v} does not divide rows={rows}")
    return v


def bounds(x, name: str, groups: int, device, *, optional: bool = False):
    """A 1-D int32/int64 per-group bound tensor of length ``groups`` (or None)."""
    if x is None:
        if optional:
            return None
        raise TypeError(f"{name} must be a tensor, got None")
    tensor(x, name, dtypes=INT_DTYPES, ndim=1, device=device)
    if x.shape[0] != groups:
        raise ValueError(f"{name} must have {groups} entries (rows // row_repeat), got {x.shape[0]}")
    if x.numel() and not capturing() and int(x.min()) < 0:
        raise ValueError(f"{name} must be >= 0, got min {int(x.min())}")
    return x


def starts_le_ends(starts, ends, names=("row_starts", "row_ends")) -> None:
    if starts is None or not starts.numel() or capturing():
        return
    bad = starts.to(torch.int64) > ends.to(torch.int64)
    if bool(bad.any()):
        i = int(bad.nonzero()[0, 0])
        raise ValueError(f"{names[0]}[{i}]={int(starts[i])} > {names[1]}[{i}]={int(ends[i])}")


def out_tensor(out, shape, dtype, device, name: str = "out"):
    if out is None:
        return None
    tensor(out, name, dtypes=(dtype,), device=device)
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(out.shape)}")
    if not out.is_contiguous():
        raise ValueError(f"{name} must be contiguous")
    return out
