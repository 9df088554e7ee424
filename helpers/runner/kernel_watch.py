"""Why a point's kernel died: the signal that ended it and the peak memory it reached, watched from outside.

    watch = KernelWatch(engine).start()    # engine: the registered papermill engine (``execute``)
    ...                                    # papermill runs the notebook
    watch.stop()
    watch.death_reason()                   # "the kernel was killed (SIGKILL) by the out-of-memory killer: ..."

nbclient reports a kernel that vanished as ``DeadKernelError: Kernel died``; the Linux OOM killer ends a
process with SIGKILL and says nothing to it. A thread reads the kernel's peak resident memory (``VmHWM`` in
``/proc/<pid>/status``, the kernel's own high-water mark, so a sample between two reads is not missed) every
half second and keeps the kernel's process handle, whose exit status names the signal. A SIGKILL is told apart
from one sent by someone else (``kill -9``, a scheduler) by the OOM killer's own counters (``oom_kill`` in
``/proc/vmstat`` and the cgroup's memory events), read when the watch starts and when the kernel died: the reason
says out of memory only when one of them rose, "from outside" when none did, and that it cannot tell when none
can be read.
"""

from __future__ import annotations

import logging
import signal
import threading

from helpers.measure.oom import killed_by_oom, oom_kills

EVERY_S = 0.5


def _peak_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _ram_gb() -> float | None:
    try:
        import psutil

        return psutil.virtual_memory().total / 2**30
    except Exception:  # noqa: BLE001 - a figure for a message only
        return None


class KernelWatch:
    """Peak RSS and exit signal of the kernel that ``engine.current`` (papermill's client) runs."""

    def __init__(self, engine, every_s: float = EVERY_S):
        self.engine, self.every_s = engine, every_s
        self.peak_kb = 0
        self.process = None  # the kernel's Popen (jupyter_client's local provisioner)
        self.oom_before = oom_kills()  # the OOM killer's counters now: a SIGKILL later is its or someone else's
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kernel-watch", daemon=True)

    def start(self) -> KernelWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                client = getattr(self.engine, "current", None)
                prov = getattr(getattr(client, "km", None), "provisioner", None)
                proc = getattr(prov, "process", None)
                if proc is not None:
                    self.process = proc
                if self.process is not None and self.process.poll() is None:
                    self.peak_kb = max(self.peak_kb, _peak_kb(self.process.pid) or 0)
            except Exception:  # noqa: BLE001 - a watcher must never break the run it watches
                continue

    def death_reason(self, oom_after: dict[str, int] | None = None) -> str | None:
        """Why the kernel ended, when a signal ended it; None when it exited by itself or was never seen.
        ``oom_after``: the OOM counters now (default: read them)."""
        proc = self.process
        rc = proc.poll() if proc is not None else None
        if rc is None or rc >= 0:
            return None
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        peak = f"peak RSS seen {self.peak_kb / 2**20:.2f} GB" if self.peak_kb else "no RSS reading"
        ram = _ram_gb()
        peak += f" of {ram:.0f} GB RAM" if ram and self.peak_kb else ""
        if -rc == signal.SIGKILL:
            oom = killed_by_oom(self.oom_before, oom_kills() if oom_after is None else oom_after)
            if oom:
                return (f"the kernel was killed ({name}) by the out-of-memory killer ({peak}): try a smaller "
                        "batch_size or n_train")
            if oom is False:
                return (f"the kernel was killed ({name}) from outside, not for memory: the out-of-memory killer's "
                        f"count did not change ({peak})")
            return (f"the kernel was killed ({name}): by the out-of-memory killer or from outside, which cannot be "
                    f"told here ({peak}); if for memory, try a smaller batch_size or n_train")
        return f"the kernel was killed ({name}; {peak})"


class _DeadKernelTasks(logging.Filter):
    """Drops asyncio's "Task exception was never retrieved" for a ``DeadKernelError``: nbclient's task that polls
    the kernel raises it when a stopped point's kernel is killed (Ctrl-C, SIGTERM, a timeout), and, when the task
    is collected after the run moved on, asyncio logs it with a traceback after our own "interrupted" line. The
    point's outcome is already said by the runner (its reason names the death); any other never-retrieved
    exception is still logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (str(record.msg).startswith("Task exception was never retrieved")
                    and type(exc).__name__ == "DeadKernelError")


_QUIET = _DeadKernelTasks()


def quiet_dead_kernel_tasks() -> None:
    """Install the filter on asyncio's logger (once; a runner calls it before its first kernel)."""
    logger = logging.getLogger("asyncio")
    if _QUIET not in logger.filters:
        logger.addFilter(_QUIET)
