"""The file locks that runners sharing an outputs folder hold: ``flock(2)``, dropped by the OS when a runner dies.

    held, who = take(path, me())     # an exclusive lock (None and who holds it when another runner does)
    held.release()

Every lock is ``flock(2)`` on a file that is never removed while in use (claims stay as files: no
unlink/re-create race), held through a file descriptor opened once (never reopened by its holder: on NFS,
Linux emulates ``flock`` with POSIX locks, which a process drops on the close of *any* descriptor of the file).
A runner killed with SIGKILL loses its locks at once on a local filesystem; its claims are free again and its
half-written records are set aside by the next runner. The locks hold across hosts on filesystems whose locks
are coherent across clients (see docs/cluster.md): NFSv4 (a dead client's locks lapse after its lease, 90 s by
default), NFSv3 with lockd (not mounted ``nolock`` or ``local_lock=all|flock``), Lustre mounted ``-o flock``,
GPFS/Spectrum Scale, CephFS, BeeGFS with global locks. The split itself is fixed with a hard link (atomic and
exclusive over NFS as well), never with O_EXCL alone (not exclusive on NFSv2).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fcntl
import json
import os
import socket
from pathlib import Path


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def me() -> dict:
    """Who this runner is, for the messages of those it refuses."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "since": now()}


def lock(fd: int, shared: bool = False, block: bool = False) -> bool:
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if block else fcntl.LOCK_NB))
        return True
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise


def no_locks(exc: OSError, path: Path) -> OSError:
    """A filesystem that refuses ``flock`` (Lustre mounted without ``flock``, some FUSE mounts): named plainly."""
    return OSError(exc.errno, f"file locks do not work on this filesystem ({exc.strerror}): shards cannot share "
                   "it (docs/cluster.md lists where they hold)", str(path))


def read_fd(fd: int) -> str:
    try:
        return os.pread(fd, 4096, 0).decode(errors="replace").strip()
    except OSError:
        return ""


def write_fd(fd: int, text: str) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, text.encode(), 0)


def holder_of(text: str) -> str:
    try:
        d = json.loads(text)
        return f"pid {d.get('pid')} on {d.get('host')} since {d.get('since')}" + (
            f", shard {d['shard']}" if d.get("shard") else "")
    except (ValueError, AttributeError):
        return text or "another runner"


class Held:
    """A lock held through one descriptor until ``release`` (or the process's death)."""

    def __init__(self, path: Path, fd: int):
        self.path, self.fd = path, fd

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    __del__ = release  # dropped with its holder (a runner's main() called in a test process returns)


def take(path: Path, info: dict | None) -> tuple[Held | None, str]:
    """An exclusive lock on ``path`` (created if needed), its holder's description when another has it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        got = lock(fd)
    except OSError as exc:
        os.close(fd)
        raise no_locks(exc, path) from None
    if not got:
        text = read_fd(fd)
        os.close(fd)
        return None, holder_of(text)
    if info is not None:
        write_fd(fd, json.dumps(info))
    return Held(path, fd), ""
