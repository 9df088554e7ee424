"""The record: one JSON file per grid point, written atomically; ids; reading them back.

Keys (DESIGN.md): schema, point_id, workload, backend, device, device_used, status, reason, params,
data_source, n_train, batch_size, epochs, first_epoch_s, epoch_s, median_epoch_s, step_s,
samples_per_s, history, utilisation, energy_j_per_epoch, fingerprint, started_at, duration_s,
notebook. More keys may be added; renaming one needs a new ``SCHEMA``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from pathlib import Path

SCHEMA = 1
STATUSES = ("ok", "failed", "skipped")
REQUIRED_KEYS = ("schema", "point_id", "workload", "backend", "device", "device_used", "status",
                 "reason", "params", "data_source", "n_train", "batch_size", "epochs",
                 "first_epoch_s", "epoch_s", "median_epoch_s", "step_s", "samples_per_s", "history",
                 "utilisation", "energy_j_per_epoch", "fingerprint", "started_at", "duration_s",
                 "notebook")
# Parameters that do not change what is measured (where it is written, its id).
_ID_EXCLUDED = ("output_dir", "point_id")


def point_id(params: dict, machine_key: str) -> str:
    """Stable id of a grid point: same parameters on the same machine -> same id."""
    core = {k: v for k, v in sorted(params.items()) if k not in _ID_EXCLUDED}
    blob = json.dumps({"params": core, "machine": machine_key}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def notebook_path(rec: dict, record_file: str | Path | None = None) -> Path | None:
    """A record's executed notebook. Records store it relative to their own folder (an outputs folder can
    be moved, published or copied to another machine); records of older runs may hold an absolute path.
    ``record_file`` defaults to the ``_path`` that ``read_records`` and ``run_point`` set."""
    nb = rec.get("notebook")
    if not nb:
        return None
    p = Path(nb)
    base = record_file or rec.get("_path")
    if p.is_absolute() or base is None:
        return p
    return Path(os.path.normpath(Path(base).parent / p))


def record_name(params: dict, pid: str) -> str:
    return f"{params['workload']}-{params['backend']}-{params['device']}-{pid}.json"


def empty_record(params: dict, pid: str) -> dict:
    rec = {k: None for k in REQUIRED_KEYS}
    rec.update(schema=SCHEMA, point_id=pid, workload=params.get("workload"),
               backend=params.get("backend"), device=params.get("device"), params=dict(params),
               n_train=params.get("n_train"), batch_size=params.get("batch_size"),
               epochs=params.get("epochs"), epoch_s=[], history={}, utilisation={})
    return rec


def _clean(obj):
    """JSON-safe: numpy scalars to Python, NaN/inf to None."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        try:
            obj = obj.item()
        except Exception:
            return str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_atomic(path: Path, data: dict) -> Path:
    """Write JSON to ``path`` atomically (temp file in the same folder, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(_clean(data), f, indent=1, sort_keys=True, allow_nan=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def write_record(record: dict, folder: Path) -> Path:
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise KeyError(f"record lacks keys {missing}")
    if record["status"] not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, not {record['status']!r}")
    return write_atomic(Path(folder) / record_name(record["params"], record["point_id"]), record)


def is_record(obj) -> bool:
    return (isinstance(obj, dict) and obj.get("schema") == SCHEMA
            and all(k in obj for k in ("point_id", "workload", "backend", "device", "status")))


def read_records(folders) -> tuple[list[dict], list[tuple[str, str]]]:
    """Every record (schema ``SCHEMA``) under ``folders``; also the files skipped and why."""
    records, skipped = [], []
    seen = set()
    for folder in folders:
        for path in sorted(Path(folder).rglob("*.json")):
            rel = path.relative_to(folder).parts
            if any(part.startswith(".") for part in rel) or path.resolve() in seen:
                continue
            seen.add(path.resolve())
            try:
                obj = json.loads(path.read_text())
            except (OSError, ValueError) as exc:
                skipped.append((str(path), f"unreadable: {exc.__class__.__name__}"))
                continue
            if not is_record(obj):
                why = "older or newer schema" if isinstance(obj, dict) and "schema" in obj else "not a record"
                skipped.append((str(path), why))
                continue
            obj["_path"] = str(path)
            records.append(obj)
    return records, skipped
