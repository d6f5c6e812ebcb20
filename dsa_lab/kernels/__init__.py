"""The Triton kernels of the indexer's decode path, one algorithm per module.

* :mod:`.common` -- ``@triton.jit`` helpers every kernel shares: packed keys, a row's live extent, writing ids,
  flags.
* :mod:`.scores` -- block scores (the NaN-propagating max of each block's live logits).
* :mod:`.hier` -- top-k by nested group maxima (``k <= 256``; ``k <= 512`` at many rows).
* :mod:`.bisect` -- top-k by bisecting the k-th key over a register-resident row (``k > 256``, many rows).
* :mod:`.radix` -- top-k by digit histograms (larger ``k`` at few rows, and rows wider than 32768 columns).
* :mod:`.flags` -- candidate flags from selected ids.
* :mod:`.mask` -- the candidate mask of packed logits (the serving drop-in's ``apply_candidate_mask``).
* :mod:`.producer` -- paged FP8 MQA logits and the bounded sanitize.

Each module's ``launch`` takes checked inputs and a plan; which kernel serves which call, and with what plan, is
decided in :mod:`dsa_lab.dispatch`.  Every launch goes through :func:`run`, so the dispatch can also be *recorded*
(:func:`recording`) instead of run: that is how ``dsa-lab warmup`` lists and compiles exactly the kernels a call
would launch.  Import this package only when a Triton kernel is about to run (``TRITON_INTERPRET`` is read when a
kernel is decorated).
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
