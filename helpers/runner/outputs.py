"""The outputs folder: one run at a time (a lock), and what stops a run when nothing more can be written there.

    lock = acquire_lock(out_root)        # None: another run holds it (Exit.BUSY)
    locks = acquire_locks([a, b])        # each folder's, held together (the outputs folder and --out)
    why = cannot_write(exc)              # a full disk, a read-only folder ...: the run stops cleanly (CannotWrite)
    cannot_write_message(out_root, why)  # what to do about it
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import sys
from pathlib import Path

from helpers.point import launcher as _launch

# errno of a write that cannot succeed by trying again: a full disk or quota, a read-only or forbidden folder
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG}


class CannotWrite(Exception):
    """The outputs folder cannot be written (full disk, read-only, permissions): the run stops cleanly."""


def cannot_write(exc) -> str | None:
    """Why ``exc`` means nothing more can be written (an OSError of ``_WRITE_ERRNOS``, or a notebook that
    failed on a full disk); None for any other error."""
    if isinstance(exc, CannotWrite):
        return str(exc)
    if isinstance(exc, OSError) and exc.errno in _WRITE_ERRNOS:
        return f"{exc.strerror or os.strerror(exc.errno)}" + (f": {exc.filename}" if exc.filename else "")
    evalue = str(getattr(exc, "evalue", "") or "")
    for code in (errno.ENOSPC, errno.EDQUOT):
        if f"[Errno {code}]" in evalue:
            return f"{os.strerror(code)} (in the notebook: {evalue[:300]})"
    return None


def cannot_write_message(out_root: Path, why: str) -> str:
    return (f"cannot write under {out_root}: {why}. Free space or make the folder writable (or set CGB_OUTPUTS "
            "to another folder), then run again: the points done so far are kept and not run again.")


def acquire_lock(out_root: Path):
    """An exclusive lock on ``out_root`` for this process (released by the OS when it dies).

    Two grids at once on one machine would also spoil each other's timings, so the second waits
    for nothing: it says who holds the lock and exits with ``Exit.BUSY``.
    """
    import fcntl
    import stat

    path = out_root / _launch.lock_name()  # the processes of one mpirun/srun launch are one run
    try:  # never through a symlink, never a FIFO (an --out folder may be anyone's)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise CannotWrite(f"{path} is a symlink; the run's lock is never taken through one: remove it") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CannotWrite(f"{path} is not a regular file (a FIFO, a device or a folder): remove it")
    f = os.fdopen(fd, "a+")  # held for the life of the process
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        holder = f.read().strip() or "another process"
        print(f"error: {out_root} is in use by a run in progress ({holder}); timings of two grids at once "
              "would spoil each other. Wait for it, or set CGB_OUTPUTS to another folder.", file=sys.stderr)
        f.close()
        return None
    f.seek(0)
    f.truncate()
    f.write(f"pid {os.getpid()} since {dt.datetime.now().isoformat(timespec='seconds')}\n")
    f.flush()
    return f


def acquire_locks(folders):
    """``acquire_lock`` on each distinct folder of ``folders`` (made if missing), held together: a list of them, or
    None when another run holds one (those taken already released)."""
    held = []
    for folder in dict.fromkeys(Path(f).resolve() for f in folders):
        folder.mkdir(parents=True, exist_ok=True)
        lock = acquire_lock(folder)
        if lock is None:
            for h in held:
                h.close()
            return None
        held.append(lock)
    return held
