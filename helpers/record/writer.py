"""Writing a record: JSON-safe values, written atomically (temp file, fsync, rename) with the process's file mode.

    write_record(record, folder)   # THE writer of records: checks keys and status, names the file (``ids.record_name``)
    write_atomic(path, data)       # any other JSON file the suite writes (never one under a ``records/`` folder)
    keep(record, folder)           # a kernel's record: staged for the runner that started it, else write_record

``write_record`` is the only code that writes a file under a ``records/`` folder (tests/test_record_writes.py follows
every process of a run and fails on any other writer, and on a record written twice). A point run by the runner is
written once, by the runner, after its kernel ended: the kernel *stages* its record (``stage``: a hidden file beside
the executed notebook, named in ``$CGB_RECORD_STAGE``) and the runner adds its own facts (wall time, notebook,
repeat, configuration) before the one write. A notebook run by hand (JupyterLab, papermill) writes its record itself.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

from helpers.record.ids import record_name
from helpers.record.schema import REQUIRED_KEYS, STATUSES, Record


def clean_json(obj):
    """JSON-safe: numpy scalars to Python, NaN/inf to None."""
    if isinstance(obj, dict):
        return {str(k): clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [clean_json(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        try:
            obj = obj.item()
        except Exception:
            return str(obj)
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def umask() -> int:
    """This process's umask, read without changing it (``/proc``), else by setting and restoring it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: dict) -> Path:
    """Write JSON to ``path`` atomically (``write_text_atomic``)."""
    return write_text_atomic(path, json.dumps(clean_json(data), indent=1, sort_keys=True, allow_nan=False))


def write_text_atomic(path: Path, text: str) -> Path:
    """The one atomic writer: ``text`` to a new temp file of its own in the same folder (``mkstemp``: created, never
    one already there, nor a link's target), fsync, rename over ``path``; the temp file removed when writing fails
    (a full disk leaves nothing behind). Its mode is any file of this process's (0666 less the umask: ``mkstemp``
    alone would make it 0600, unreadable to the others sharing a results folder)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~umask())
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
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


STAGE_ENV = "CGB_RECORD_STAGE"  # set by the runner in its kernel's environment: where the kernel stages its record


def keep(record: Record, folder: Path) -> Path:
    """A kernel's record: handed to the runner that started it (``$CGB_RECORD_STAGE``: the runner writes it, once,
    with its own facts), else, run by hand, written here (``write_record``)."""
    staged = os.environ.get(STAGE_ENV)
    if staged:
        return write_atomic(Path(staged), _checked(record))
    return write_record(record, folder)


def _checked(record: Record) -> Record:
    missing = [k for k in REQUIRED_KEYS if k not in record]
    if missing:
        raise KeyError(f"record lacks keys {missing}")
    if record["status"] not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, not {record['status']!r}")
    return record


def write_record(record: Record, folder: Path, name: str | None = None) -> Path:
    """Write ``record`` under ``folder`` (``name``: the file name, else ``ids.record_name``), atomically."""
    _checked(record)
    return write_atomic(Path(folder) / (name or record_name(record["params"], record["point_id"])), record)
