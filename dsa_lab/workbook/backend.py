"""Which backend the workbook runs on: a CUDA GPU runs the kernels live; without one the Triton interpreter runs them
at tiny shapes (correct, not a performance measurement) and measured numbers come from ``data/`` records."""
from __future__ import annotations

import torch


def backend_info() -> dict:
    """Which backend the workbook runs on here: ``gpu`` (live kernels), ``interpreter`` (Triton on CPU,
    tiny shapes, not a performance measurement) or ``torch-cpu`` (torch arms only)."""
    from .._impl import interpreter_active

    if torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
        return {"mode": "gpu", "device": "cuda", "name": name, "live": True,
                "label": f"GPU live: {name} (kernels run here; timings are real)"}
    if interpreter_active():
        return {"mode": "interpreter", "device": "cpu", "name": "Triton interpreter", "live": False,
                "label": "No GPU: Triton interpreter on CPU at tiny shapes (correctness only, not performance); "
                "measured numbers come from recorded data/"}
    return {"mode": "torch-cpu", "device": "cpu", "name": "CPU", "live": False,
            "label": "No GPU and no interpreter: torch arms on CPU; measured numbers come from recorded data/"}


def backend_banner() -> str:
    """One line for a notebook's first output: ``Backend: `` and :func:`backend_info`'s label."""
    return "Backend: " + backend_info()["label"]
