"""Which arm runs: ``impl=`` argument, ``DSA_LAB_IMPL`` environment variable, device facts."""
from __future__ import annotations

import functools
import os

import torch

from ._env import interpreter_active

ENV = "DSA_LAB_IMPL"


def triton_usable(device: torch.device) -> bool:
    """Triton kernels can run on tensors of ``device``: a GPU, or any tensor under the interpreter."""
    if interpreter_active():
        return True
    return device.type == "cuda"


def resolve(impl, device: torch.device, allowed: tuple[str, ...], *, auto_gpu: str = "triton") -> str:
    """Map ``impl`` (and ``DSA_LAB_IMPL`` for ``"auto"``) to one arm name from ``allowed``.

    ``"auto"`` → the env override if set; else, for a CUDA tensor, ``auto_gpu`` (``"triton"``
    unless a stage asks for another arm); for a CPU tensor, ``"triton"`` under the interpreter,
    else ``"torch"``.  Unknown names raise ``ValueError``.
    """
    if not isinstance(impl, str):
        raise TypeError(f"impl must be a str, got {type(impl).__name__}")
    names = ("auto",) + allowed
    if impl not in names:
        raise ValueError(f"impl must be one of {names}, got {impl!r}")
    if impl == "auto":
        env = os.environ.get(ENV, "").strip()
        if env:
            if env not in allowed:
                raise ValueError(f"{ENV}={env!r} is not one of {allowed}")
            impl = env
        elif device.type == "cuda" and auto_gpu in allowed:
            impl = auto_gpu
        else:
            impl = "triton" if ("triton" in allowed and triton_usable(device)) else "torch"
    if impl.startswith("triton") and not triton_usable(device):
        raise ValueError(
            f"impl={impl!r} needs a CUDA tensor or the Triton interpreter (TRITON_INTERPRET=1); "
            f"got a tensor on {device}"
        )
    return impl


@functools.lru_cache(maxsize=None)
def device_facts(device_index: int | None) -> dict:
    """Multiprocessor count, warp size, architecture (``sm_90``, ``gfx950``, ...) and features of a GPU (or
    interpreter stand-ins): what the plans and the launchers may choose by."""
    if device_index is None or not torch.cuda.is_available():
        return {"sm_count": 4, "warp_size": 32, "name": "triton-interpreter", "arch": None}
    p = torch.cuda.get_device_properties(device_index)
    warp = getattr(p, "warp_size", 64 if torch.version.hip else 32)
    arch = getattr(p, "gcnArchName", "gfx").split(":")[0] if torch.version.hip else f"sm_{p.major}{p.minor}"
    # programmatic dependent launch (griddepcontrol): CUDA sm_90 and later only
    pdl = not torch.version.hip and p.major >= 9
    return {"sm_count": p.multi_processor_count, "warp_size": warp, "name": p.name, "pdl": pdl, "arch": arch}


def facts_for(t: torch.Tensor) -> dict:
    return device_facts(t.device.index if t.device.type == "cuda" else None)


def fp8_dot_for_arch(arch) -> bool:
    """Can Triton feed e4m3fn operands straight to ``tl.dot`` on ``arch`` (``sm_90``, ``gfx950``, ...)?  sm_89+;
    gfx950 (a native e4m3fn MFMA) and gfx942 (Triton converts to f16, exact)."""
    if not arch:
        return False
    if arch.startswith("gfx"):
        return arch in ("gfx942", "gfx950")
    return int(arch[3:]) >= 89
