"""Many runners, one outputs folder: who holds the folder, a shard, a run, through file locks (``locks.py``)
the OS drops when a runner dies.

    folder = FolderLock(out_root); folder.shared()       # shards share the folder (a whole grid holds it alone)
    shard_lock(out_root, gh, sh)                         # one runner per shard (None: another holds it)
    claim = try_claim(out_root, point_id, info)          # one runner per run (None: another holds it)
    complete_elsewhere(runs, name, statuses)             # another runner finished the run since it was planned
    hold_alive(run_dir); is_alive(run_dir)               # a run folder's runner alive (orphans.py sets aside the rest)

The shards' run folders are ``shard_folders.py``; the runners busy on this host ``host_runners.py``.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from helpers.record.reader import read_json_file
from helpers.runner.locks import Held, lock, me, no_locks, read_fd, take
from helpers.runner.notebook import is_complete

ALIVE = ".alive"  # held by a runner for the life of its run folder


class FolderLock:
    """``<outputs>/.run.lock``: a whole grid holds it exclusively (``outputs.acquire_lock``); shards share it,
    so a whole-grid run and shards refuse each other, and shards do not."""

    def __init__(self, out_root: Path):
        self.path, self.fd = Path(out_root) / ".run.lock", None
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)

    def shared(self) -> bool:
        try:
            return lock(self.fd, shared=True)
        except OSError as exc:
            raise no_locks(exc, self.path) from None

    def holder(self) -> str:
        return read_fd(self.fd) or "another process"

    def alone(self) -> bool:
        """Drop this runner's share, then try to hold the folder alone: True when no other runner is in it (the
        last shard out renders the report); the share is not taken back."""
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        return lock(self.fd)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    __del__ = close


def shard_lock(out_root: Path, gh: str, shard, info: dict) -> tuple[Held | None, str]:
    """One runner per shard of a grid: (held, '') or (None, who holds it)."""
    return take(Path(out_root) / ".shards" / f"{gh}-{shard.index}-of-{shard.count}.lock", info)


def try_claim(out_root: Path, point_id: str, info: dict) -> tuple[Held | None, str]:
    """This runner takes the run ``point_id``: (held, '') or (None, who holds it). Release it once the run's
    record is complete; the file stays (the next holder locks the same file)."""
    return take(Path(out_root) / ".claims" / f"{point_id}.claim", info)


def hold_alive(run_dir: Path) -> Held:
    held, _ = take(Path(run_dir) / ALIVE, me())
    if held is None:  # a fresh folder: cannot be held by anyone else
        raise OSError(errno.EBUSY, "run folder held by another runner", str(run_dir))
    return held


def is_alive(run_dir: Path) -> bool:
    """Whether a runner still holds ``run_dir`` (a folder of an older runner, without the file: no)."""
    try:
        fd = os.open(Path(run_dir) / ALIVE, os.O_RDONLY)
    except OSError:
        return False
    try:
        free = lock(fd, shared=True)
        return not free
    finally:
        os.close(fd)


def complete_elsewhere(runs: Path, name: str, statuses: tuple[str, ...]) -> str | None:
    """The path of a complete record named ``name`` (``record.record_name``) of one of ``statuses`` in any run
    folder: another runner finished the run after this one planned it."""
    for path in sorted(Path(runs).glob(f"*/records/{name}")):
        rec, why = read_json_file(path)
        if why is None and isinstance(rec, dict) and rec.get("status") in statuses:
            rec["_path"] = str(path)
            if is_complete(rec):
                return str(path)
    return None
