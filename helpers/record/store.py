"""The record: one JSON file per grid point, written atomically; ids; reading them back.

Keys (DESIGN.md): schema, point_id, workload, backend, device, device_used, status, reason, params,
data_source, n_train, batch_size, epochs, first_epoch_s, epoch_s, median_epoch_s, step_s,
samples_per_s, history, utilisation, energy_j_per_epoch, fingerprint, started_at, duration_s,
notebook. More keys may be added; renaming one, or changing its meaning, needs a new ``SCHEMA``.

Schema 2 (issue 20) changed meanings: ``epoch_s``/``first_epoch_s``/``samples_per_s`` are the training
part of an epoch with every clock read after a device sync (schema 1 on async backends, JAX and GPU
TF/torch, let training run inside the validation window when ``n_val`` > 0); ``energy_j_per_epoch`` is
the GPU energy counter differenced at synchronised epoch bounds on the GPUs the point used (schema 1:
mean 1-s averaged power x median epoch, summed over every GPU NVML saw); ``utilisation`` is over the
GPUs used only and adds ``proc_cpu_pct``; ``threads_in_effect`` replaces ``threads_used``; the
fingerprint is taken before the CPU affinity is narrowed (``cpu_available`` added). New keys:
``epoch_with_val_s``, ``median_epoch_with_val_s``, ``timing``, ``energy_method``, ``energy_j_epochs``,
``energy_with_val_j_epochs``, ``first_epoch_energy_j``, ``energy_above_idle_j_per_epoch``,
``energy_above_idle_j_epochs``, ``idle_power_w``, ``idle_window_s``, ``idle_method``,
``gpu_indices_used``. ``read_records`` reads every schema in ``READABLE_SCHEMAS``.

Schema 3: ``energy_j_per_epoch`` (and ``energy_above_idle_j_per_epoch``) is the steady window's counter energy
over its epochs, a mean (schema 2: the median epoch's, which the counter's 0.1-s steps biased: an H100 epoch of
27 ms read 0 J); a steady window under ``sampler.ENERGY_MIN_WINDOW_S`` has none and says why
(``energy_reason``). ``mfu`` / ``peak_tflops`` of a float32 point on a GPU with TF32 tensor cores are against
the TF32 peak (schema 2: plain FP32, which a JAX ResNet-50 on an H100 read as 99%). New key: ``energy_window_s``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
import tempfile
from pathlib import Path

from helpers.params import LATER_DEFAULTS
from helpers.record.check import problem as _problem

SCHEMA = 3
READABLE_SCHEMAS = (1, 2, 3)  # older records stay readable; ``schema`` says which meanings they carry
STATUSES = ("ok", "failed", "skipped")
REQUIRED_KEYS = ("schema", "point_id", "workload", "backend", "device", "device_used", "status",
                 "reason", "params", "data_source", "n_train", "batch_size", "epochs",
                 "first_epoch_s", "epoch_s", "median_epoch_s", "step_s", "samples_per_s", "history",
                 "utilisation", "energy_j_per_epoch", "fingerprint", "started_at", "duration_s",
                 "notebook")
# Parameters that do not change what is measured (where it is written, its id).
_ID_EXCLUDED = ("output_dir", "point_id")
# a record is a few kB (the largest published: 68 kB, its GPU timeline capped at 400 samples); parsing costs ~30x
# the file in memory, so the cap bounds what one file can cost before any check has seen it
MAX_RECORD_BYTES = 2 * 2**20
DUPLICATE = "duplicate of "  # how ``read_records`` names a dropped copy of a run it already read
CONFLICT = "conflicting copies of one run, none used"  # same run, different content (read_records)
OUTSIDE = "a symlink to outside the folders given, not read"


def point_id(params: dict, machine_key: str) -> str:
    """Stable id of a grid point: same parameters on the same machine -> same id."""
    core = {k: v for k, v in sorted(params.items())
            if k not in _ID_EXCLUDED and not (k in LATER_DEFAULTS and v == LATER_DEFAULTS[k])}
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
    """Write JSON to ``path`` atomically (temp file in the same folder, fsync, rename), with the mode any
    file of this process gets (0666 less the umask: ``mkstemp`` alone would make it 0600, unreadable to
    the others sharing a results folder)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~umask())
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
    return (isinstance(obj, dict) and obj.get("schema") in READABLE_SCHEMAS
            and all(k in obj for k in ("point_id", "workload", "backend", "device", "status")))


def read_json_file(path: Path, limit: int = MAX_RECORD_BYTES):
    """``(object, None)`` from a JSON file, or ``(None, why)``. Regular files only (a symlink is followed
    only to one): a FIFO would block forever and ``/dev/zero`` never ends; at most ``limit`` bytes."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or type(exc).__name__}"
    if not stat.S_ISREG(st.st_mode):
        return None, "not a regular file (a FIFO, a device or a folder)"
    if st.st_size > limit:
        return None, f"larger than {limit // 2**20} MB"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or type(exc).__name__}"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between stat and open
            return None, "not a regular file (a FIFO, a device or a folder)"
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        return None, f"unreadable: {exc.strerror or type(exc).__name__}"
    finally:
        os.close(fd)
    if size > limit:
        return None, f"larger than {limit // 2**20} MB"
    try:
        return json.loads(b"".join(chunks)), None
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of 5,000 digits
        return None, f"not valid JSON ({type(exc).__name__})"


def why_not_record(obj) -> str | None:
    """Why ``obj`` (parsed JSON) is not a usable record; None if it is one."""
    if not isinstance(obj, dict):
        return "not a record (not a JSON object)"
    if "schema" not in obj:
        return "missing key 'schema'" if "point_id" in obj else "not a record"
    schema = obj["schema"]
    if isinstance(schema, bool) or not isinstance(schema, int):
        return "'schema' is not an integer"
    for key in ("point_id", "workload", "backend", "device", "status"):
        if key not in obj:
            return f"missing key '{key}'"
    if not is_record(obj):
        return (f"record schema {schema}: newer than this suite reads (up to {SCHEMA})" if schema > SCHEMA
                else f"record schema {schema}: not readable (this suite reads {', '.join(map(str, READABLE_SCHEMAS))})")
    why = _problem(obj)
    if why:
        return why
    if obj["status"] not in STATUSES:
        return f"'status' is not one of {', '.join(STATUSES)}"
    return None


def run_key(rec: dict) -> str:
    """What tells one run of a point from another (not its figures): a record read twice (a copied folder)
    has the same key. Records that name no start time fall back on their figures to tell runs apart."""
    fp = rec.get("fingerprint") or {}
    key = [rec.get("point_id"), rec.get("started_at"), fp.get("host"), fp.get("time"), fp.get("boot_id"),
           (rec.get("params") or {}).get("repeat")]
    if rec.get("started_at") is None and fp.get("time") is None:
        key += [rec.get("status"), rec.get("first_epoch_s"), rec.get("epoch_s"), rec.get("duration_s")]
    return json.dumps(key, sort_keys=True, default=str)


_NOT_CONTENT = ("_path", "notebook")  # where a copy lies, and its notebook relative to it


def _content(rec: dict) -> str:
    """A digest of what a record says (not where it lies): two copies of one run must say the same."""
    blob = json.dumps({k: v for k, v in rec.items() if k not in _NOT_CONTENT}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _differing(a: dict, b: dict) -> set:
    return {k for k in a.keys() | b.keys() if k not in _NOT_CONTENT and a.get(k) != b.get(k)}


def _checked(obj) -> str | None:
    """``why_not_record``, where an unexpected error while checking costs this record only."""
    try:
        return why_not_record(obj)
    except Exception as exc:  # noqa: BLE001 - whatever a crafted record trips, it is that record's problem
        return f"could not be checked ({type(exc).__name__})"


def read_records(folders) -> tuple[list[dict], list[tuple[str, str]]]:
    """Every record (a schema in ``READABLE_SCHEMAS``) under ``folders``; also the files skipped and why.

    A file is skipped, with its reason, when it is not a regular file, is a symlink to outside the folders
    given, is larger than ``MAX_RECORD_BYTES``, is not JSON, is not a record, or has a field the report cannot
    use (``record_check.problem``; an error while checking costs that file only). A second copy of a run
    already read (same ``run_key`` and the same content: a copied folder) is dropped and listed with the
    reason ``'duplicate of <first file>'`` (``DUPLICATE``). Copies of one run that say different things (a
    figure edited in one) are all left out and listed as conflicting (``CONFLICT``): which one is true is
    not for the reader to guess. Files and folders whose name starts with a dot are not read.
    """
    records, skipped = [], []
    seen, runs, conflicted = set(), {}, {}
    folders = [Path(f) for f in folders]
    roots = []
    for folder in folders:
        try:
            roots.append(folder.resolve())
        except (OSError, RuntimeError):
            continue
    for folder in folders:
        for path in sorted(folder.rglob("*.json")):
            rel = path.relative_to(folder).parts
            if any(part.startswith(".") for part in rel):
                continue
            try:
                real = path.resolve()
            except (OSError, RuntimeError):  # a symlink loop
                skipped.append((str(path), "unreadable: a symlink loop"))
                continue
            if not any(real.is_relative_to(root) for root in roots):
                skipped.append((str(path), OUTSIDE))
                continue
            if real in seen:
                continue
            seen.add(real)
            obj, why = read_json_file(path)
            if why is None:
                why = _checked(obj)
            if why is not None:
                skipped.append((str(path), why))
                continue
            key, content = run_key(obj), _content(obj)
            if key in runs:
                first, first_content, first_obj = runs[key]
                if content == first_content:
                    skipped.append((str(path), f"{DUPLICATE}{first}"))
                else:
                    conflicted.setdefault(key, [(first, first_obj)]).append((str(path), obj))
                continue
            runs[key] = (str(path), content, obj)
            obj["_path"] = str(path)
            records.append(obj)
    if conflicted:
        out = set()
        for copies in conflicted.values():
            fields = sorted(set().union(*(_differing(copies[0][1], o) for _, o in copies[1:])))
            why = f"{CONFLICT} (they differ in {', '.join(fields[:6])}{', ...' if len(fields) > 6 else ''})"
            for p, o in copies:
                skipped.append((p, why))
                out.add(id(o))
        records = [r for r in records if id(r) not in out]
    return records, skipped


def split_duplicates(skipped) -> tuple[list, list]:
    """``read_records``' skipped list as (files skipped, copies of runs already read)."""
    dup = [s for s in skipped if str(s[1]).startswith(DUPLICATE)]
    return [s for s in skipped if not str(s[1]).startswith(DUPLICATE)], dup
