"""Reading records back: every usable record under some folders, and the files skipped with why.

    records, skipped = read_records([folder, ...])
    files, duplicates = split_duplicates(skipped)

Records merged from elsewhere are data from anyone: a file that is not a regular file, too large, not JSON, not a
record (``helpers.record.schema.why_not_record``) costs that file only. Copies of one run are told apart from
different runs by ``run_key``.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path

from helpers.record.schema import Record, why_not_record
from helpers.record.upgrade import upgrade

# a record is a few kB (the largest published: 68 kB, its GPU timeline capped at 400 samples); parsing costs ~30x
# the file in memory, so the cap bounds what one file can cost before any check has seen it
MAX_RECORD_BYTES = 2 * 2**20
DUPLICATE = "duplicate of "  # how ``read_records`` names a dropped copy of a run it already read
CONFLICT = "conflicting copies of one run"  # same run, different content: each kept apart (read_records)
COPY = "copy"  # the parameter naming a conflicting copy's file: each copy a configuration of its own
OUTSIDE = "a symlink to outside the folders given, not read"


def read_json_file(path: Path, limit: int = MAX_RECORD_BYTES):
    """``(object, None)`` from a JSON file, or ``(None, why)``. Regular files only (a symlink is followed
    only to one): a FIFO would block forever and ``/dev/zero`` never ends; at most ``limit`` bytes."""
    data, why = read_bytes(path, limit)
    if why is not None:
        return None, why
    try:
        return json.loads(data), None
    except RecursionError:
        return None, "nested too deeply"
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, an integer of 5,000 digits
        return None, f"not valid JSON ({type(exc).__name__})"


def read_bytes(path: Path, limit: int = MAX_RECORD_BYTES):
    """``(bytes, None)`` of a file, or ``(None, why)``: the bounds of ``read_json_file`` (a regular file, a
    symlink followed only to one, at most ``limit`` bytes, never a blocking open) for any file merged."""
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
    return b"".join(chunks), None


def run_key(rec: Record) -> str:
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


def resolved_roots(folders) -> list[Path]:
    """The folders given, resolved (those that cannot be: left out): what a file read from them must lie in."""
    roots = []
    for folder in folders:
        try:
            roots.append(Path(folder).resolve())
        except (OSError, RuntimeError):
            continue
    return roots


def inside(path: Path, roots) -> tuple[Path | None, str | None]:
    """``path`` resolved when it lies inside one of ``roots``; else None and why not (a symlink loop, ``OUTSIDE``)."""
    try:
        real = path.resolve()
    except (OSError, RuntimeError):
        return None, "unreadable: a symlink loop"
    if not any(real.is_relative_to(root) for root in roots):
        return None, OUTSIDE
    return real, None


def read_records(folders, knobs_of=None) -> tuple[list[Record], list[tuple[str, str]]]:
    """Every record (a schema in ``READABLE_SCHEMAS``) under ``folders``, in the current shape (``upgrade.upgrade``;
    ``knobs_of``: a workload's knobs, for its own knobs added later); also the files skipped and why.

    A file is skipped, with its reason, when it is not a regular file, is a symlink to outside the folders
    given, is larger than ``MAX_RECORD_BYTES``, is not JSON, is not a record, or has a field the report cannot
    use (``record_check.problem``; an error while checking costs that file only). A second copy of a run
    already read (same ``run_key`` and the same content: a copied folder) is dropped and listed with the
    reason ``'duplicate of <first file>'`` (``DUPLICATE``). Copies of one run that say different things (a
    figure edited in one) are all kept, apart: each gets the parameter ``copy`` (``COPY``: its folder and file,
    so it is a configuration of its own, never pooled with the other copy) and ``_conflict`` (``CONFLICT``, the
    fields they differ in and the other copies): which one is true is not for the reader to guess, and dropping
    both would let anyone delete anyone's run by writing a forged copy of it. Files and folders whose name starts
    with a dot are not read.
    """
    records = []
    runs, conflicted, labels = {}, {}, {}
    found, skipped = found_files(folders, "*.json")
    for folder, path in found:
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
                labels[id(obj)] = _label(folder, path)
            continue
        runs[key] = (str(path), content, obj)
        obj["_path"] = str(path)
        labels[id(obj)] = _label(folder, path)
        records.append(obj)
    for copies in conflicted.values():
        fields = sorted(set().union(*(_differing(copies[0][1], o) for _, o in copies[1:])))
        differ = f"they differ in {', '.join(fields[:6])}{', ...' if len(fields) > 6 else ''}"
        names = [labels.get(id(o)) or Path(p).name for p, o in copies]
        names = [n if names.index(n) == k else f"{n}#{k + 1}" for k, n in enumerate(names)]  # each its own
        for (p, o), name in zip(copies, names):
            others = ", ".join(n for n in names if n != name)
            o["params"] = {**(o.get("params") if isinstance(o.get("params"), dict) else {}), COPY: name}
            o["_conflict"] = f"{CONFLICT} ({differ}; other copy: {others}), kept apart as {COPY}={name}"
            if o.get("_path") is None:
                o["_path"] = p
                records.append(o)
    return [upgrade(r, knobs_of) for r in records], skipped


def found_files(folders, pattern: str) -> tuple[list[tuple[Path, Path]], list[tuple[str, str]]]:
    """The files named ``pattern`` under ``folders`` (a folder is searched, its dot-folders and dot-files left out;
    a file of that name is taken as it is), each once, inside the folders given: ([(folder, file)], [(file, why)]
    for those that are not (a symlink to outside them, a loop)). Every reader of an inputs folder finds its files
    here."""
    out, bad, seen = [], [], set()
    folders = [Path(f) for f in folders]
    roots = resolved_roots(folders)
    for folder in folders:
        is_dir = folder.is_dir()
        paths = sorted(folder.rglob(pattern)) if is_dir else ([folder] if folder.match(pattern) else [])
        for path in paths:
            if is_dir and any(part.startswith(".") for part in path.relative_to(folder).parts):
                continue
            real, why = inside(path, roots)
            if why is not None:
                bad.append((str(path), why))
                continue
            if real not in seen:
                seen.add(real)
                out.append((folder, path))
    return out, bad


def _label(folder: Path, path: Path) -> str:
    """A copy's name: its folder's name and its path inside it."""
    try:
        return (Path(folder.name) / path.relative_to(folder)).as_posix()
    except ValueError:
        return path.name


def split_duplicates(skipped) -> tuple[list, list]:
    """``read_records``' skipped list as (files skipped, copies of runs already read)."""
    dup = [s for s in skipped if str(s[1]).startswith(DUPLICATE)]
    return [s for s in skipped if not str(s[1]).startswith(DUPLICATE)], dup
