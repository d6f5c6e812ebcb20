"""The sweep's records: CSV rows appended one at a time (a re-run skips recorded keys) and each CSV's meta."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .. import data as _data
from .. import timing as bench
from .plan import BLOCK_SIZE, CSV_NAME, KEY, arms_for, on_gpu

if TYPE_CHECKING:
    from .runner import Sweep


class Recorder:
    """Appends rows of one CSV and knows which keys it already holds."""

    def __init__(self, path: Path, columns: list[str]):
        self.path = path
        self.columns = columns
        self.keys = {self.key(r) for r in _data.load_rows(path)}
        self.added = 0
        header = _data.read_header(path)
        self.keep = None
        if header and header != columns:
            missing = [c for c in columns if c not in header]
            if missing:
                print(f"note: {path} has an older header; columns {missing} are not written to it")
            self.keep = set(header)

    def add(self, row: dict) -> None:
        if self.keep is not None:
            row = {k: v for k, v in row.items() if k in self.keep}
        _data.append_row(self.path, row, self.columns)
        self.keys.add(self.key(row))
        self.added += 1

    @staticmethod
    def key(r: dict) -> tuple:
        return tuple(str(r.get(c)) for c in KEY)

    def has(self, **kv) -> bool:
        return self.key(kv) in self.keys


def write_meta(out_dir: Path, name: str, command: str, sw: Sweep, plan, *, status: str, added: int = 0) -> None:
    """Rewrite ``<out_dir>/<name>.meta.json``: the run's metadata and ceilings, its ``status``, and a short history of
    earlier runs (the CSV may hold rows of several runs)."""
    path = out_dir / f"{name}.meta.json"
    old = _data.load_meta(path)
    history = list(old.get("runs", []))
    meta = _data.collect_metadata(command, {
        "ceilings": sw.ceilings,
        "timing": bench.timing_method(),
        "performance_measurement": on_gpu(),
        "max_model_len": sw.mml,
        # this run's (the rows carry their own: a step CSV may hold both)
        "block_size": (getattr(sw.args, "block_size", None) or BLOCK_SIZE) if name == "step_breakdown" else BLOCK_SIZE,
        "flags_impl": sw.flags_name,
        "arms_available": {s: arms_for(s) for s in ("select", "full")},
        "base_seed": sw.base_seed,
        "planned_points": sum(1 for p in plan if CSV_NAME[p.suite] == name),
        "status": status,
        "rows_added_this_run": added,
    })
    if not on_gpu():
        meta["label"] = bench.INTERPRETER_LABEL
    if status != "running":
        # a short history of runs: the CSV may hold rows of several runs (and commits: see its commit column)
        history.append({k: meta.get(k) for k in ("date_utc", "commit", "dirty", "command", "status",
                                                  "rows_added_this_run")})
    meta["runs"] = history[-50:]
    _data.save_meta(path, meta)
