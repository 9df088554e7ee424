"""The runners busy on this host: each marks itself busy (a lock on its own file) while a point runs, and a point's
record says how many others were (``concurrent_runners``).

    host = HostRunners(); n = host.busy_others(); host.busy(True); host.close()
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import tempfile
import time
from pathlib import Path

from helpers.runner.locks import lock, me, write_fd

RUNNERS_ENV = "CGB_RUNNERS_DIR"  # host-local folder of the runners' busy marks (shared by the host's runners)
STALE_MARK_S = 86400.0


def runners_dir() -> Path:
    """The host-local folder where runners mark themselves busy: ``CGB_RUNNERS_DIR``, else /dev/shm (or the
    temporary folder)/cgb-runners. Runners in containers of one host see each other when they share it."""
    if os.environ.get(RUNNERS_ENV):
        return Path(os.environ[RUNNERS_ENV])
    base = Path("/dev/shm")
    if not (base.is_dir() and os.access(base, os.W_OK)):
        base = Path(tempfile.gettempdir())
    return base / "cgb-runners"


class HostRunners:
    """This runner's mark in ``runners_dir()``: held (exclusive flock) while a point runs. ``busy_others`` counts
    the marks another runner holds: the runners of this host busy at that moment."""

    def __init__(self, folder: Path | None = None):
        self.dir = Path(folder) if folder else runners_dir()
        self.path, self.fd = None, None
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                os.chmod(self.dir, 0o1777)
            self._sweep()
            self.path = self.dir / f"{socket.gethostname()}-{os.getpid()}-{os.urandom(3).hex()}.runner"
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
            write_fd(self.fd, json.dumps(me()))
        except OSError:  # no host-local folder: no count (None in the records)
            self.path, self.fd = None, None

    def _sweep(self) -> None:
        """Marks of runners long gone (killed: never removed), unlocked and a day old."""
        now = time.time()
        for p in self.dir.glob("*.runner"):
            try:
                if now - p.stat().st_mtime < STALE_MARK_S:
                    continue
                fd = os.open(p, os.O_RDONLY)
                try:
                    if lock(fd):
                        p.unlink(missing_ok=True)
                finally:
                    os.close(fd)
            except OSError:
                continue

    def busy_others(self) -> int | None:
        if self.fd is None:
            return None
        n = 0
        for p in self.dir.glob("*.runner"):
            if p == self.path:
                continue
            try:
                fd = os.open(p, os.O_RDONLY)
            except OSError:
                continue
            try:
                if not lock(fd, shared=True):
                    n += 1
            finally:
                os.close(fd)  # an unlocked test lock goes with it
        return n

    def busy(self, on: bool) -> None:
        if self.fd is None:
            return
        if on:
            lock(self.fd, block=True)  # waits only for a counter's instant test
        else:
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            os.close(self.fd)
            self.fd = None

    __del__ = close
