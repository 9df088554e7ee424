"""The OOM killer's own counters: whether a process killed with SIGKILL was killed for memory, told
apart from a ``kill -9`` sent by someone else (a scheduler, a user). Read by the runner's kernel watcher
(``helpers.runner.kernel_watch``) and the report's page workers (``helpers.report.publish.workers``)."""

from __future__ import annotations

from pathlib import Path


def _counter(path: Path, key: str = "oom_kill") -> int | None:
    try:
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                return int(parts[1])
    except (OSError, ValueError):
        return None
    return None


def oom_kills(proc: Path = Path("/proc"), cgroup_fs: Path = Path("/sys/fs/cgroup")) -> dict[str, int]:
    """The OOM killer's counters this process can read: {where: kills so far} (the system's, and its cgroup's
    under cgroup v2 or v1); empty when none can be read."""
    out = {}
    n = _counter(proc / "vmstat")
    if n is not None:
        out["vmstat"] = n
    try:
        groups = (proc / "self" / "cgroup").read_text().splitlines()
    except OSError:
        groups = []
    for line in groups:
        hid, ctrl, path = (line.split(":", 2) + ["", ""])[:3]
        rel = path.lstrip("/")
        if hid == "0" and not ctrl:  # cgroup v2
            n = _counter(cgroup_fs / rel / "memory.events")
        elif "memory" in ctrl.split(","):  # cgroup v1
            n = _counter(cgroup_fs / "memory" / rel / "memory.oom_control")
        else:
            continue
        if n is not None:
            out[f"cgroup:{ctrl or 'v2'}"] = n
    return out


def killed_by_oom(before: dict[str, int], after: dict[str, int]) -> bool | None:
    """True when an OOM-kill counter rose between ``before`` and ``after``, False when none did, None when no
    counter was read both times (it cannot be told)."""
    both = [k for k in before if k in after]
    if not both:
        return None
    return any(after[k] > before[k] for k in both)
