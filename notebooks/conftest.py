"""nbval setup for the workbook: `pytest --nbval --nbval-current-env notebooks/`.

* The kernel nbval starts inherits this process's environment: the repository root is put on
  PYTHONPATH (so `import dsa_lab` works without an install), and the Triton interpreter is turned on
  when there is no CUDA GPU (`dsa_lab._env`; the notebooks' first cell does the same).
* Cells tagged `gpu` are skipped without a GPU (they must be leaves: later cells read committed
  data instead).  nbval exposes the notebook cell as `item.cell`.
* `text/html` outputs are not compared (widgets and HTML tables are display-only here; every
  deterministic result is printed as text and compared strictly).
* `DSA_LAB_WORKBOOK_RECORD=FILE.json`: write what ran, per notebook (cells, wall time, failures, every
  kernel a cell compiled or loaded: `dsa_lab.workbook.live.NotebookRecorder`); the kernels log their
  compiles to FILE.json's `.compiles.jsonl` sibling (`DSA_LAB_COMPILE_LOG`, inherited by nbval's kernels).
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

RECORD = os.environ.get("DSA_LAB_WORKBOOK_RECORD")
if RECORD:
    from dsa_lab.workbook.live import NotebookRecorder

    _recorder = NotebookRecorder()
    _compile_log = os.environ.setdefault(_env.COMPILE_LOG, str(Path(RECORD).with_suffix(".compiles.jsonl")))
    Path(_compile_log).unlink(missing_ok=True)

    def pytest_runtest_logreport(report):
        msg = str(report.longrepr) if report.outcome != "passed" and report.longrepr is not None else ""
        _recorder.add(report.nodeid, report.when, report.outcome, report.start, report.stop, msg)

    def pytest_sessionfinish(session, exitstatus):
        import json
        import sys

        from dsa_lab.bench import data
        from dsa_lab.workbook.live import read_compile_log

        nbs = _recorder.summary(read_compile_log(_compile_log))
        cells = [v for k, v in nbs.items() if "cells" in v]
        rec = {"meta": data.collect_metadata(" ".join(["pytest"] + sys.argv[1:]), {
                   "note": "every cell nbval executed, per notebook; compiles: kernels a cell waited for (none "
                           "expected after `dsa-lab warmup`); cache_loads: kernels loaded from the disk cache",
                   "exit_status": int(exitstatus)}),
               "totals": {k: sum(v[k] for v in cells) for k in ("cells", "passed", "failed", "skipped")}
               | {"compiles": sum(len(v["compiles"]) for v in nbs.values())},
               "notebooks": nbs}
        Path(RECORD).parent.mkdir(parents=True, exist_ok=True)
        Path(RECORD).write_text(json.dumps(rec, indent=1, default=str) + "\n")


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
