"""Many runners, one outputs folder: who holds what, through file locks the OS drops when a runner dies.

    folder = FolderLock(out_root); folder.shared()       # shards share the folder (a whole grid holds it alone)
    shard_lock(out_root, gh, sh)                         # one runner per shard (None: another holds it)
    claim = try_claim(out_root, point_id, info)          # one runner per run (None: another holds it)
    hold_alive(run_dir); set_aside_orphans(runs)         # records left by dead runners only are set aside
    host = HostRunners(); n = host.busy_others(); host.busy(True)   # runners busy on this host

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
import tempfile
import time
from pathlib import Path

from helpers.record import store as _record

ALIVE = ".alive"  # held by a runner for the life of its run folder
SHARD_INFO = ".shard.json"  # a shard's run folder: grid hash, shard, state (hidden: no record reader reads it)
RUNNERS_ENV = "CGB_RUNNERS_DIR"  # host-local folder of the runners' busy marks (shared by the host's runners)
STALE_MARK_S = 86400.0


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def me() -> dict:
    """Who this runner is, for the messages of those it refuses."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "since": _now()}


def _lock(fd: int, shared: bool = False, block: bool = False) -> bool:
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


def _read_fd(fd: int) -> str:
    try:
        return os.pread(fd, 4096, 0).decode(errors="replace").strip()
    except OSError:
        return ""


def _write_fd(fd: int, text: str) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, text.encode(), 0)


def _holder(text: str) -> str:
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


def _take(path: Path, info: dict | None) -> tuple[Held | None, str]:
    """An exclusive lock on ``path`` (created if needed), its holder's description when another has it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        got = _lock(fd)
    except OSError as exc:
        os.close(fd)
        raise no_locks(exc, path) from None
    if not got:
        text = _read_fd(fd)
        os.close(fd)
        return None, _holder(text)
    if info is not None:
        _write_fd(fd, json.dumps(info))
    return Held(path, fd), ""


# ------------------------------------------------------------------ the folder, the shard, the run

class FolderLock:
    """``<outputs>/.run.lock``: a whole grid holds it exclusively (``runner.acquire_lock``); shards share it,
    so a whole-grid run and shards refuse each other, and shards do not."""

    def __init__(self, out_root: Path):
        self.path, self.fd = Path(out_root) / ".run.lock", None
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)

    def shared(self) -> bool:
        try:
            return _lock(self.fd, shared=True)
        except OSError as exc:
            raise no_locks(exc, self.path) from None

    def holder(self) -> str:
        return _read_fd(self.fd) or "another process"

    def alone(self) -> bool:
        """Drop this runner's share, then try to hold the folder alone: True when no other runner is in it (the
        last shard out renders the report); the share is not taken back."""
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        return _lock(self.fd)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    __del__ = close


def shard_lock(out_root: Path, gh: str, shard, info: dict) -> tuple[Held | None, str]:
    """One runner per shard of a grid: (held, '') or (None, who holds it)."""
    return _take(Path(out_root) / ".shards" / f"{gh}-{shard.index}-of-{shard.count}.lock", info)


def try_claim(out_root: Path, point_id: str, info: dict) -> tuple[Held | None, str]:
    """This runner takes the run ``point_id``: (held, '') or (None, who holds it). Release it once the run's
    record is complete; the file stays (the next holder locks the same file)."""
    return _take(Path(out_root) / ".claims" / f"{point_id}.claim", info)


def hold_alive(run_dir: Path) -> Held:
    held, _ = _take(Path(run_dir) / ALIVE, me())
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
        free = _lock(fd, shared=True)
        return not free
    finally:
        os.close(fd)


def set_aside_orphans(runs: Path) -> list[Path]:
    """``execute.set_aside_interrupted`` for a shared folder: the records that a notebook wrote but the runner
    never finished (no ``wall_s``), and ok records whose executed notebook is gone (resume runs the point again:
    the old record must not count beside the new one), in run folders whose runner is dead; a live runner's
    point in progress is left alone. The hidden ``.*.partial.ipynb`` a killed runner left are removed."""
    from helpers.runner.notebook import is_complete, set_aside

    if not runs.is_dir():
        return []
    out = []
    for run_dir in sorted(p for p in runs.iterdir() if p.is_dir()):
        if is_alive(run_dir):
            continue
        for partial in (run_dir / "notebooks").glob(".*.partial.ipynb"):  # papermill's output, never renamed
            partial.unlink(missing_ok=True)
        if not (run_dir / "records").is_dir():
            continue
        records, _ = _record.read_records([run_dir / "records"])
        for r in records:
            if r.get("wall_s") is None or not is_complete(r):
                aside = set_aside(Path(r["_path"]))
                if aside is not None:
                    out.append(aside)
    return out


def complete_elsewhere(runs: Path, name: str, statuses: tuple[str, ...]) -> str | None:
    """The path of a complete record named ``name`` (``record.record_name``) of one of ``statuses`` in any run
    folder: another runner finished the run after this one planned it."""
    from helpers.runner.notebook import is_complete

    for path in sorted(Path(runs).glob(f"*/records/{name}")):
        rec, why = _record.read_json_file(path)
        if why is None and isinstance(rec, dict) and rec.get("status") in statuses:
            rec["_path"] = str(path)
            if is_complete(rec):
                return str(path)
    return None


# ------------------------------------------------------------------ a shard's run folder

def write_shard_info(run_dir: Path, info: dict) -> None:
    _record.write_atomic(Path(run_dir) / SHARD_INFO, info)


def mark_finished(run_dir: Path) -> None:
    path = Path(run_dir) / SHARD_INFO
    info, why = _record.read_json_file(path)
    if why is None and isinstance(info, dict):
        info.update(finished=True, finished_at=_now())
        _record.write_atomic(path, info)


def shard_infos(runs: Path) -> list[dict]:
    """Every shard's run folder record under ``runs`` (with ``_dir``)."""
    out = []
    for path in sorted(Path(runs).glob(f"*/{SHARD_INFO}")):
        info, why = _record.read_json_file(path)
        if why is None and isinstance(info, dict):
            out.append({**info, "_dir": str(path.parent)})
    return out


def open_campaigns(infos: list[dict]) -> dict[tuple, list[dict]]:
    """The grids split in N (grid hash, N) of which a shard started and not every shard finished: their run
    folders' records, by (grid hash, N)."""
    by: dict[tuple, list[dict]] = {}
    for i in infos:
        by.setdefault((i.get("grid_hash"), i.get("count")), []).append(i)
    out = {}
    for (gh, n), group in by.items():
        done = {i.get("index") for i in group if i.get("finished")}
        if not isinstance(n, int) or done != set(range(n)):
            out[(gh, n)] = group
    return out


def conflicts(runs: Path, gh: str, count: int) -> list[str]:
    """Why a shard of grid ``gh`` split in ``count`` must not write here: another grid's shards (or this grid's
    split in another number) are under way, started and not all finished (their runs and this grid's would mix)."""
    lines = []
    for (other, n), group in open_campaigns(shard_infos(runs)).items():
        if (other, n) == (gh, count):
            continue
        what = "another grid" if other != gh else "this grid"
        done = sorted({i.get("index") for i in group if i.get("finished")})
        lines.append(f"  {what} (hash {other}, {', '.join(group[0].get('grids') or [])}) split in {n}: shards "
                     f"started {', '.join(sorted({str(i.get('shard')) for i in group}))}, finished "
                     f"{', '.join(f'{d}/{n}' for d in done) or 'none'}; run folders: "
                     f"{', '.join(Path(i['_dir']).name for i in group)}")
    return lines


def finished_shards(runs: Path, gh: str, count: int) -> set[int]:
    out = set()
    for i in shard_infos(runs):
        if i.get("grid_hash") == gh and i.get("count") == count and i.get("finished"):
            out.add(int(i.get("index", -1)))
    return out


# ------------------------------------------------------------------ runners busy on this host

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
            _write_fd(self.fd, json.dumps(me()))
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
                    if _lock(fd):
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
                if not _lock(fd, shared=True):
                    n += 1
            finally:
                os.close(fd)  # an unlocked test lock goes with it
        return n

    def busy(self, on: bool) -> None:
        if self.fd is None:
            return
        if on:
            _lock(self.fd, block=True)  # waits only for a counter's instant test
        else:
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            os.close(self.fd)
            self.fd = None

    __del__ = close
