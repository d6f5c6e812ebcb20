"""Launchers: a plan (:mod:`dsa_lab.plans`) and checked inputs in, buffers allocated and kernels launched.

* :mod:`.select` -- the selects (hier, bisect, radix) and the candidate-block pipeline;
* :mod:`.scores` -- block scores, candidate flags and the candidate mask;
* :mod:`.producer` -- paged FP8 MQA logits and the bounded sanitize;
* :mod:`.scratch` -- the buffers a kernel keeps between calls, private to a stream or a capture.

Every launch goes through :func:`run`, so a call can also be *recorded* (:func:`recording`) instead of run: that
is how ``dsa-lab warmup`` lists and compiles exactly the kernels a call would launch.  Import the submodules only
when a Triton kernel is about to run (``TRITON_INTERPRET`` is read when a kernel is decorated).
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses

__all__ = ["Launch", "run", "recording"]


@dataclasses.dataclass(frozen=True)
class Launch:
    """One kernel launch: the ``@triton.jit`` function, its grid, its positional arguments and its keyword
    arguments (constexprs and launch options such as ``num_warps`` and ``launch_pdl``)."""

    kernel: object
    grid: tuple
    args: tuple
    meta: dict

    def __call__(self):
        self.kernel[self.grid](*self.args, **self.meta)


_RECORD: contextvars.ContextVar = contextvars.ContextVar("dsa_lab_kernel_record", default=None)


def run(kernel, grid, *args, **meta) -> None:
    """Launch ``kernel[grid](*args, **meta)``, or append the launch to the active :func:`recording`."""
    rec = _RECORD.get()
    launch = Launch(kernel, tuple(grid), args, meta)
    if rec is None:
        launch()
    else:
        rec.append(launch)


@contextlib.contextmanager
def recording():
    """Within the block, kernel launches are recorded into the yielded list instead of run (tensors may then live
    on the ``meta`` device: nothing reads them)."""
    rec: list[Launch] = []
    token = _RECORD.set(rec)
    try:
        yield rec
    finally:
        _RECORD.reset(token)
