"""Recorded measurements: where they live, their metadata, and safe CSV appends.

Layout (see ``data/README.md``): one folder per GPU under the repository's
``data/`` (``data/h200/``, ...), each holding CSV files of measurements and a
``<name>.meta.json`` beside each CSV with the facts of the run that produced it
(:func:`collect_metadata`).  Transcribed numbers of others (the seed's MI355X
tables) live in ``data/mi355x_seed/`` and say so in their metadata.

CSV rows are appended with :func:`append_row`: one ``os.write`` of one complete
line on an ``O_APPEND`` descriptor, so an interrupted sweep leaves whole rows
only, and concurrent writers never interleave within a line.  The header is
written once, under an advisory lock, by whoever finds the file empty.
No pandas: the ``csv`` module only.
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import math
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

__all__ = [
    "data_root",
    "repo_root",
    "gpu_slug",
    "collect_metadata",
    "append_row",
    "load_rows",
    "read_header",
    "save_meta",
    "load_meta",
    "format_value",
]


def repo_root() -> Path:
    """The repository (the folder holding ``dsa_lab/``)."""
    return Path(__file__).resolve().parents[2]


def data_root() -> Path:
    """The repository's ``data/`` folder (recorded measurements)."""
    return repo_root() / "data"


_VENDOR_WORDS = {"nvidia", "amd", "instinct", "tesla", "geforce", "radeon", "intel", "graphics", "pro"}
_JOIN_WITH_NEXT = {"rtx", "gtx", "quadro", "titan", "rx", "arc"}


def gpu_slug(name: str | None) -> str:
    """A short folder name for a device name: ``'NVIDIA H200'`` → ``'h200'``.

    ``'NVIDIA H100 80GB HBM3'`` → ``'h100'``, ``'NVIDIA A100-SXM4-80GB'`` → ``'a100'``,
    ``'AMD Instinct MI355X'`` → ``'mi355x'``, ``'NVIDIA GeForce RTX 4090'`` → ``'rtx4090'``.
    ``None``/empty → ``'unknown'``.
    """
    if not name:
        return "unknown"
    words = [w for w in re.split(r"[\s_/]+", name.strip().lower()) if w]
    words = [w for w in words if w not in _VENDOR_WORDS]
    if not words:
        return re.sub(r"[^a-z0-9]+", "", name.lower()) or "unknown"
    first = words[0]
    if first in _JOIN_WITH_NEXT and len(words) > 1:
        first = first + words[1]
    first = first.split("-")[0]
    slug = re.sub(r"[^a-z0-9]+", "", first)
    return slug or "unknown"


def _run(cmd: list[str], cwd=None) -> str | None:
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    return r.stdout.strip()


def _git_facts() -> dict:
    if os.environ.get("DSA_LAB_COMMIT"):
        # a copied tree (the lent GPU machine): the launcher passes the commit it sent; a .git there
        # need not match the tree (seen 2026-11-29: it reported the previous HEAD), so the env wins
        return {"commit": os.environ["DSA_LAB_COMMIT"], "dirty": os.environ.get("DSA_LAB_DIRTY") == "1"}
    root = repo_root()
    commit = _run(["git", "rev-parse", "HEAD"], cwd=root)
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def _device_facts() -> dict:
    import torch

    out: dict = {
        "device": "cpu",
        "gpu_name": None,
        "sm_count": None,
        "driver": None,
        "cuda_runtime": getattr(torch.version, "cuda", None),
        "hip_runtime": getattr(torch.version, "hip", None),
    }
    if torch.cuda.is_available():
        idx = torch.cuda.current_device()
        p = torch.cuda.get_device_properties(idx)
        out.update(device="cuda", gpu_name=p.name, sm_count=p.multi_processor_count)
        out["compute_capability"] = f"{p.major}.{p.minor}"
        out["total_memory_gib"] = round(p.total_memory / 2**30, 1)
        drv = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        if drv:
            out["driver"] = drv.splitlines()[0].strip()
        else:
            try:
                out["driver"] = str(torch.cuda.driver_version()) if hasattr(torch.cuda, "driver_version") else None
            except Exception:  # noqa: BLE001 - best effort
                out["driver"] = None
            if out["driver"] is None:
                out["driver"] = f"torch cuda {out['cuda_runtime'] or out['hip_runtime']} (driver not queried)"
    return out


def collect_metadata(command: str, extra: dict | None = None) -> dict:
    """Facts of this run, as a JSON-ready dict (no host name, no user name).

    GPU name, SM/CU count, driver (``nvidia-smi``, else torch's runtime), torch,
    triton and Python versions, git commit and whether the work tree was dirty, the UTC
    date, the command line, whether the Triton interpreter was active; ``extra`` is merged
    last (e.g. measured ceilings, sweep parameters).
    """
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except Exception:  # noqa: BLE001
        triton_version = None
    meta = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        "command": command,
        **_device_facts(),
        "torch": torch.__version__,
        "triton": triton_version,
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        **_git_facts(),
        "triton_interpreter": os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"),
        "dsa_lab_impl_env": os.environ.get("DSA_LAB_IMPL") or None,
    }
    if extra:
        meta.update(extra)
    return meta


def format_value(v) -> str:
    """CSV text of one value: floats to 6 significant digits, None → empty."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == int(v) and abs(v) < 1e15:
            return str(int(v)) if abs(v) >= 1e6 else f"{v:.6g}"
        return f"{v:.6g}"
    return str(v)


def _line(values: list) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(values)
    return buf.getvalue()


def read_header(csv_path) -> list[str] | None:
    """Column names of an existing CSV (``None`` if absent or empty)."""
    p = Path(csv_path)
    if not p.exists() or p.stat().st_size == 0:
        return None
    with open(p, newline="") as f:
        first = f.readline()
    if not first.strip():
        return None
    return next(csv.reader([first]))


def append_row(csv_path, row: dict, columns: list[str] | None = None) -> None:
    """Append ``row`` as one CSV line, atomically.

    The line is built in memory and written with a single ``os.write`` on an
    ``O_APPEND`` descriptor (POSIX appends of one write land whole and never interleave
    with another appender's line).  If the file is empty the header (``columns`` or the
    row's keys, in order) is written first, under ``flock`` so two writers cannot both
    write one.  For an existing file the row is written in the file's column order; a key
    not in the header raises ``ValueError`` (schema drift), a missing key is left empty.
    """
    import fcntl

    p = Path(csv_path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.fstat(fd).st_size == 0:
                header = list(columns) if columns else list(row.keys())
                extra = [k for k in row if k not in header]
                if extra:
                    raise ValueError(f"row has keys {extra} not in columns {header}")
                data = _line(header) + _line([format_value(row.get(c)) for c in header])
            else:
                header = read_header(p) or list(row.keys())
                extra = [k for k in row if k not in header]
                if extra:
                    raise ValueError(
                        f"{p}: row has keys {extra} that the file's header lacks; "
                        f"write to a new file (the schema changed)"
                    )
                data = _line([format_value(row.get(c)) for c in header])
            b = data.encode()
            n = os.write(fd, b)
            if n != len(b):  # never seen for regular files; refuse to leave half a line silently
                raise OSError(f"short write to {p}: {n} of {len(b)} bytes")
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _convert(s: str):
    if s == "":
        return None
    if s in ("True", "False"):
        return s == "True"
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return s


# columns that name things and stay text even when they read as numbers: a short commit hash such as 3e42133 is
# float("3e42133") == inf, and 0123456 would lose its zero
TEXT_COLUMNS = frozenset({"commit"})


def load_rows(csv_path) -> list[dict]:
    """Rows of a CSV as dicts, numbers converted (int, then float), empty → None; the :data:`TEXT_COLUMNS` stay
    text.

    A missing file gives ``[]``.  A trailing partial line (no newline: a writer killed
    mid-write on a filesystem without atomic appends) is dropped.
    """
    p = Path(csv_path)
    if not p.exists():
        return []
    text = p.read_text()
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        rows.append({k: (v or None) if k in TEXT_COLUMNS else _convert(v) for k, v in r.items() if k is not None})
    return rows


def meta_path(csv_path) -> str:
    """The metadata file beside a record: ``x.csv`` → ``x.meta.json`` (any other name: + ``.meta.json``)."""
    p = str(csv_path)
    return (p[: -len(".csv")] if p.endswith(".csv") else p) + ".meta.json"


def save_meta(path, meta: dict) -> None:
    """Write ``meta`` as indented JSON, atomically (temp file + rename)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=False, default=str) + "\n")
    os.replace(tmp, p)


def load_meta(path) -> dict:
    """The JSON dict at ``path`` (``{}`` when absent)."""
    p = Path(path)
    if not p.exists():
        return {}
    return json.loads(p.read_text())


if __name__ == "__main__":  # pragma: no cover
    json.dump(collect_metadata(" ".join(sys.argv)), sys.stdout, indent=2)
