"""Where Triton compiles to, and whether it interprets: one policy for the package, the CLI, the tests and the
notebooks.

* **Cache.**  Unless ``TRITON_CACHE_DIR`` is set, compiled kernels go to ``~/.cache/dsa_lab/triton`` (under
  ``XDG_CACHE_HOME`` when set), where ``dsa-lab warmup`` compiles every variant ahead of use.  Applied when
  ``dsa_lab`` is imported.
* **Interpreter.**  Without a CUDA GPU the Triton arms run through the Triton interpreter (``TRITON_INTERPRET=1``),
  at small sizes.  Triton reads the variable when a kernel is *decorated*, so :func:`interpret_without_gpu` must
  run before any ``dsa_lab.kernels`` module is imported; importing ``dsa_lab`` imports none, so calling it right
  after ``import dsa_lab`` works, and it raises if a kernel module was imported first.
* **Compile log.**  With ``DSA_LAB_COMPILE_LOG`` naming a file, every Triton kernel this process loads is appended
  to it as a JSON line (:func:`log_compiles`): a cell or a call that waited for the compiler shows there.  Applied
  when ``dsa_lab`` is imported.
"""
from __future__ import annotations

import os
import sys

__all__ = ["cache_dir", "use_cache_dir", "interpret_without_gpu", "interpreter_active", "log_compiles"]

COMPILE_LOG = "DSA_LAB_COMPILE_LOG"


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


def log_compiles(path: str | None = None) -> bool:
    """Append one JSON line per Triton kernel this process loads to ``path`` (default ``$DSA_LAB_COMPILE_LOG``):
    ``t`` (epoch seconds), ``pid``, ``kernel``, ``cache_hit`` (loaded from the disk cache: no compile),
    ``compile_us`` (Triton's own timing) and ``variant`` (argument types and constexprs: what chose the variant).
    Chains a listener already installed.  Returns False where there is no path or this Triton has no compilation
    listener (``triton.knobs.compilation.listener``)."""
    path = path or os.environ.get(COMPILE_LOG)
    if not path:
        return False
    try:
        from triton import knobs
    except ImportError:
        return False
    comp = getattr(knobs, "compilation", None)
    if comp is None or not hasattr(comp, "listener"):
        return False
    before = comp.listener
    if getattr(before, "_dsa_lab_path", None) == path:
        return True

    def listener(*, src, metadata, metadata_group, times, cache_hit):
        import json
        import time

        line = {"t": time.time(), "pid": os.getpid(), "kernel": metadata.get("name"), "cache_hit": bool(cache_hit),
                "compile_us": int(getattr(times, "total", 0) or 0), "variant": _variant(src)}
        with open(path, "a") as f:
            f.write(json.dumps(line) + "\n")
        if before is not None:
            before(src=src, metadata=metadata, metadata_group=metadata_group, times=times, cache_hit=cache_hit)

    listener._dsa_lab_path = path
    comp.listener = listener
    return True


def _variant(src) -> str:
    """A kernel source's argument types and constexpr values, e.g. ``*fp32,*i64,i32 | KP=64 BS=8``."""
    try:
        sig = getattr(src, "signature", None) or {}
        names = list(sig)
        consts = {names[k[0]] if isinstance(k, tuple) and k and k[0] < len(names) else k: v
                  for k, v in (getattr(src, "constants", None) or {}).items()}
        types = ",".join(str(t) for n, t in sig.items() if t != "constexpr" and n not in consts)
        return types + " | " + " ".join(f"{k}={v}" for k, v in consts.items())
    except Exception:  # a Triton whose sources look otherwise: the log keeps the rest
        return ""
