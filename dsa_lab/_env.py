"""Where Triton compiles to, and whether it interprets: one policy for the package, the CLI, the tests and the
notebooks.

* **Cache.**  Unless ``TRITON_CACHE_DIR`` is set, compiled kernels go to ``~/.cache/dsa_lab/triton`` (under
  ``XDG_CACHE_HOME`` when set), where ``dsa-lab warmup`` compiles every variant ahead of use.  Applied when
  ``dsa_lab`` is imported.
* **Interpreter.**  Without a CUDA GPU the Triton arms run through the Triton interpreter (``TRITON_INTERPRET=1``),
  at small sizes.  Triton reads the variable when a kernel is *decorated*, so :func:`interpret_without_gpu` must
  run before any ``dsa_lab.kernels`` module is imported; importing ``dsa_lab`` imports none, so calling it right
  after ``import dsa_lab`` works, and it raises if a kernel module was imported first.
"""
from __future__ import annotations

import os
import sys

__all__ = ["cache_dir", "use_cache_dir", "interpret_without_gpu", "interpreter_active"]


def cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dsa_lab", "triton")


def use_cache_dir() -> str:
    """Point Triton at :func:`cache_dir` unless ``TRITON_CACHE_DIR`` is set; returns the directory in use."""
    return os.environ.setdefault("TRITON_CACHE_DIR", cache_dir())


def interpreter_active() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def interpret_without_gpu() -> bool:
    """Turn the Triton interpreter on when no CUDA GPU is visible (unless ``TRITON_INTERPRET`` is already set);
    returns whether it is active.  Raises ``RuntimeError`` when it would change the mode after a kernel module
    was imported (those kernels would keep the other one)."""
    import torch

    if torch.cuda.is_available() or "TRITON_INTERPRET" in os.environ:
        return interpreter_active()
    loaded = sorted(m for m in sys.modules if m.startswith("dsa_lab.kernels."))
    if loaded:
        raise RuntimeError(f"set the interpreter before importing a kernel module; already imported: {loaded}")
    os.environ["TRITON_INTERPRET"] = "1"
    return True
