"""nbval setup for the workbook: `pytest --nbval --nbval-current-env notebooks/`.

* The kernel nbval starts inherits this process's environment: the repository root is put on
  PYTHONPATH (so `import dsa_lab` works without an install), and the Triton interpreter is turned on
  when there is no CUDA GPU (`dsa_lab._env`; the notebooks' first cell does the same).
* Cells tagged `gpu` are skipped without a GPU (they must be leaves: later cells read committed
  data instead).  nbval exposes the notebook cell as `item.cell`.
* `text/html` outputs are not compared (widgets and HTML tables are display-only here; every
  deterministic result is printed as text and compared strictly).
"""
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
)

import torch  # noqa: E402

from dsa_lab import _env  # noqa: E402

HAS_CUDA = torch.cuda.is_available()
_env.interpret_without_gpu()


def pytest_collectstart(collector):
    if getattr(collector, "path", None) is not None and collector.path.suffix == ".ipynb":
        skip = getattr(collector, "skip_compare", None)
        if skip is not None and "text/html" not in skip:
            collector.skip_compare = tuple(skip) + ("text/html",)


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    mark = pytest.mark.skip(reason="cell tagged 'gpu': needs a CUDA GPU")
    for item in items:
        cell = getattr(item, "cell", None)
        if cell is not None and "gpu" in (cell.get("metadata", {}).get("tags") or []):
            item.add_marker(mark)
