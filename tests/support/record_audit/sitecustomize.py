"""Every Python process of a run whose ``PYTHONPATH`` holds this folder loads this file at start (tests/test_record_
writes.py): with ``CGB_RECORD_AUDIT=<file>`` set, each file opened for writing and each rename whose file lies in a
``records`` folder (or its ``.processes``) is appended to that file as one JSON line: the process, the event, the path
and whether ``helpers.record.writer.write_record`` is on the stack (the one function that may write records).
Audit hooks (PEP 578) see every ``open`` and ``os.rename``/``os.replace`` of the process, whoever calls them."""

import json
import os
import sys

_LOG = os.environ.get("CGB_RECORD_AUDIT")
_WRITER = os.path.join("helpers", "record", "writer.py")


def _record_file(path) -> bool:
    try:
        parts = os.path.abspath(os.fsdecode(path)).split(os.sep)
    except (TypeError, ValueError):
        return False
    return len(parts) > 2 and (parts[-2] == "records" or parts[-3:-1] == ["records", ".processes"])


def _by_writer() -> bool:
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name == "write_record" and f.f_code.co_filename.endswith(_WRITER):
            return True
        f = f.f_back
    return False


def _hook(event, args, _busy=[False]):  # noqa: B006 - one flag for the process: the log's own open is not audited
    if _busy[0] or event not in ("open", "os.rename"):
        return
    if event == "open":
        path, mode, flags = args
        if path is None or isinstance(path, int):
            return
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            mode is None and isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        if not writes or not _record_file(path):
            return
    else:
        path = args[1]
        if not _record_file(path):
            return
    _busy[0] = True
    try:
        line = json.dumps({"pid": os.getpid(), "event": event, "path": os.path.abspath(os.fsdecode(path)),
                           "by_writer": _by_writer(), "argv": sys.argv[:3]})
        fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
    finally:
        _busy[0] = False


if _LOG:
    sys.addaudithook(_hook)
