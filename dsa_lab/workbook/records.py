"""The workbook's records: where ``data/`` is, loading a record, labelling it (GPU, file, whether measured) and
summarizing verification records as deterministic text."""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..bench import data as _data


def data_dir() -> Path:
    """The repository's ``data/`` folder (``DSA_LAB_DATA`` overrides)."""
    env = os.environ.get("DSA_LAB_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "data"


def load_records(name: str, gpu: str = "h200", *, root: Path | None = None):
    """``(rows, meta, path)`` of ``data/<gpu>/<name>.csv`` (:func:`dsa_lab.bench.data.load_rows`: numbers converted, the
    commit column kept as text) and its ``.meta.json``; ``(None, None, path)`` when the record is absent."""
    root = Path(root) if root is not None else data_dir()
    path = root / gpu / f"{name}.csv"
    if not path.exists():
        return None, None, path
    rows = _data.load_rows(path)
    return rows, _data.load_meta(path.with_suffix(".meta.json")), path


def rel_path(path) -> str:
    """``path`` relative to the repository root where it lies under it (as titles and notes name records)."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(data_dir().resolve().parent))
    except ValueError:
        return str(p)


def gpu_name(meta: dict | None) -> str | None:
    """The card a record's metadata names (``gpu`` or ``gpu_name``), or None."""
    meta = meta or {}
    gpu = meta.get("gpu") or meta.get("gpu_name")
    if isinstance(gpu, dict):
        gpu = gpu.get("name")
    return gpu or None


def record_label(meta: dict | None, path) -> str:
    """``"<GPU> · <record file>"`` for titles.  Transcribed numbers (the seed PR's, or a record whose metadata says
    ``transcribed``) are labelled as such."""
    meta = meta or {}
    gpu = gpu_name(meta)
    if not gpu:
        gpu = "Triton interpreter on CPU" if meta.get("triton_interpreter") else (meta.get("device") or "unknown GPU")
    label = f"{gpu} · {rel_path(path)}"
    if meta.get("performance_measurement") is False or meta.get("triton_interpreter"):
        label += " (interpreter: not a performance measurement)"
    if "mi355x_seed" in str(path):
        label += " (seed PR numbers, transcribed, not measured here)"
    elif meta.get("transcribed"):
        label += " (transcribed, not measured here)"
    return label


def select_rows(rows, **where) -> list[dict]:
    """Rows whose fields equal every ``where`` item (``None`` values are ignored)."""
    out = []
    for r in rows or ():
        if all(v is None or r.get(k) == v for k, v in where.items()):
            out.append(r)
    return out


def record_status(rec) -> str:
    """``"record: <GPU> · <file>"`` or ``"NO RECORD: <file> is absent"`` for a :func:`load_records` triple."""
    rows, meta, path = rec
    return f"record: {record_label(meta, path)}" if rows else f"NO RECORD: {rel_path(path)} is absent"


_MISMATCH_FIELDS = ("mismatches", "mismatch_rows", "mismatch", "bad_rows", "disagree", "failures", "errors")


def _summarize_fuzz(rec: dict, rel: str, path) -> str:
    """A ``dsa-lab verify --fuzz`` record: cases and mismatching cases per arm, shards, failures."""
    meta = rec.get("meta", {})
    commits = [c[:7] for c in meta.get("commits") or [str(meta.get("commit") or "?")]]
    dates = sorted({str(d)[:10] for d in [meta.get("date_utc")] + [s.get("date_utc") for s in rec.get("shards", [])]
                    if d})
    lines = [f"{rel} — {record_label(meta, path)} · commit{'s' * (len(commits) > 1)} {', '.join(commits)} · "
             f"{'?' if not dates else dates[0] if dates[0] == dates[-1] else f'{dates[0]} to {dates[-1]}'}",
             f"  random cases: {rec['n']:,}" + (f" in {len(rec['shards'])} shards" if rec.get("shards") else "")]
    for arm, c in sorted(rec["arms"].items()):
        lines.append(f"  arm {arm}: {c['cases']:,} cases, {c['mismatched_cases']} with a mismatch")
    for f in rec.get("failures", [])[:10]:
        lines.append(f"  MISMATCH {f.get('case')} [{f.get('arm')}] seed {f.get('seed')}: "
                     f"{f.get('error') or f.get('first_mismatch')}")
    return "\n".join(lines)


def _summarize_streams(rec: dict, rel: str, path) -> str:
    """A ``dsa-lab verify --streams`` record: calls and mismatched calls per case and mode."""
    meta = rec.get("meta", {})
    cases = rec["cases"]
    lines = [f"{rel} — {record_label(meta, path)} · commit {str(meta.get('commit') or '?')[:7]} · "
             f"{str(meta.get('date_utc') or '?')[:10]}",
             f"  {len(cases)} case-modes, {sum(int(c['calls']) for c in cases):,} calls, "
             f"{sum(int(c['mismatched']) for c in cases)} mismatched"]
    for c in cases:
        lines.append(f"  {c['case']} ({c['path']}), {c['mode']}: {c['mismatched']} of {c['calls']} calls differ")
    return "\n".join(lines)


def float_max_table(path) -> str:
    """The recorded float-max check (made by ``scripts/gpu_float_max_check.py``, in git at 02e8f29): per block, the
    contract's max and what ``torch.amax`` and a Triton ``tl.max`` returned on that GPU (``!`` marks a departure)."""
    path = Path(path)
    rel = rel_path(path)
    if not path.exists():
        return f"NO RECORD: {rel} is absent (scripts/gpu_float_max_check.py wrote it; in git at 02e8f29)."
    rec = json.loads(path.read_text())
    meta = rec.get("meta", {})
    lines = [f"{rel} — {record_label(meta, path)} · commit {str(meta.get('commit') or '?')[:7]}",
             f"{'block (bit patterns; s = subnormal)':<36}{'contract':<12}{'torch.amax':<14}tl.max"]
    for r in rec["rows"]:
        lines.append(f"{r['block']:<36}{r['contract']:<12}{r['torch_amax'] + ('' if r['torch_amax_ok'] else ' !'):<14}"
                     f"{r['triton_tl_max'] + ('' if r['triton_tl_max_ok'] else ' !'):<14}".rstrip())
    return "\n".join(lines)


def summarize_verification(path) -> str:
    """Deterministic text summary of a verification record (CSV of per-configuration results, or JSON).

    Counts configurations per arm and lists every configuration with a non-zero mismatch field
    (``mismatches``/``mismatch_rows``/... or a false ``match``/``agree``/``ok`` column).
    """
    path = Path(path)
    rel = rel_path(path)
    if not path.exists():
        return f"NO RECORD: {rel} is absent (recorded by the verification run on the GPU)."
    meta_path = path.with_suffix(".meta.json")
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    if path.suffix == ".json":
        rec = json.loads(path.read_text())
        if isinstance(rec.get("arms"), dict) and "n" in rec:
            return _summarize_fuzz(rec, rel, path)
        if isinstance(rec.get("cases"), list) and all({"case", "mode", "calls", "mismatched"} <= set(c)
                                                       for c in rec["cases"]):
            return _summarize_streams(rec, rel, path)
        meta = {**meta, **{k: rec[k] for k in ("gpu", "gpu_name", "device") if k in rec}}
        lines = [f"{rel} — {record_label(meta, path)}"]
        for k in sorted(rec):
            v = rec[k]
            if isinstance(v, (int, float, str, bool)) or v is None:
                if k not in ("date", "command", "commit", "seconds", "driver"):
                    lines.append(f"  {k}: {v}")
            elif isinstance(v, dict) and all(isinstance(x, (int, float, str, bool)) or x is None for x in v.values()):
                lines.append(f"  {k}: {json.dumps(v, sort_keys=True)}")
            elif isinstance(v, list):
                lines.append(f"  {k}: {len(v)} entries"
                             + (f", first: {json.dumps(v[0], sort_keys=True)[:200]}" if v else ""))
        return "\n".join(lines)
    rows = _data.load_rows(path)
    lines = [f"{rel} — {record_label(meta, path)}: {len(rows)} rows"]
    if not rows:
        return lines[0]
    cols = list(rows[0])
    mm = next((c for c in _MISMATCH_FIELDS if c in cols), None)
    okc = next((c for c in ("match", "agree", "ok", "equal", "passed") if c in cols), None)
    name_col = next((c for c in ("case", "name", "config", "configuration") if c in cols), None)
    arm_col = "arm" if "arm" in cols else None
    groups: dict = {}
    for r in rows:
        groups.setdefault(r.get(arm_col) if arm_col else "all", []).append(r)

    def bad(r):
        if mm is not None:
            return bool(r.get(mm))
        if okc is not None:
            return str(r.get(okc)).lower() in ("false", "0", "no")
        return False

    for arm, rs in sorted(groups.items(), key=lambda t: str(t[0])):
        b = [r for r in rs if bad(r)]
        total = sum(int(r.get(mm) or 0) for r in rs) if mm else len(b)
        lines.append(f"  arm {arm}: {len(rs)} configurations, {len(b)} with a mismatch"
                     + (f" ({total} mismatching rows in all)" if mm else ""))
        for r in b[:20]:
            lines.append(f"    MISMATCH {r.get(name_col) if name_col else r}: {mm or okc}={r.get(mm or okc)}")
    if mm is None and okc is None:
        lines.append(f"  (no mismatch column among {cols})")
    return "\n".join(lines)
