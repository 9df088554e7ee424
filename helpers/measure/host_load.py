"""A busy host caught: this process's CPU time over a timed window against the busy time of the cores it was allowed.

    a = reading()                  # at the window's start (the sampler keeps one with each sample)
    b = reading()                  # at its end
    load = host_load(a, b)         # {'window_s', 'process_cpu_s', 'cores_busy_s', 'allowed_cores', 'others_cores',
                                   #  'host_busy', ...}
    line = loaded_line(a, b)       # the runner's start-line warning, or None

A run's own process (every thread of it, and its children) spends ``process_cpu_s`` of CPU time in the window; the
cores it was allowed (its CPU affinity) were busy ``cores_busy_s`` (``/proc/stat``: every state but idle and iowait,
steal included: time the hypervisor gave to another guest is time this run did not get). What is left was another
process's: ``others_cores`` = (busy - own) ÷ window, in cores. A run whose host was busier than itself by more than
``BUSY_SHARE`` of its allowed cores is *host busy*: its figure is not this machine's, it is this machine's with
someone else on it (two mlp_mnist runs on 2 cores: 1,744 and 3,525 samples/s while another process held them).
"""

from __future__ import annotations

import os
import time

import psutil

BUSY_SHARE = 0.25  # of the allowed cores: another process's use above it marks a run host busy
_IDLE = ("idle", "iowait")
_IN_USER = ("guest", "guest_nice")  # already counted in user / nice


def allowed_cores(proc: psutil.Process | None = None) -> list[int]:
    """The cores this process may run on (its CPU affinity), else every core."""
    try:
        return sorted((proc or psutil.Process()).cpu_affinity())
    except (AttributeError, psutil.Error, OSError):
        return list(range(os.cpu_count() or 1))


def _busy(t) -> float:
    d = t._asdict()
    return sum(v for k, v in d.items() if k not in _IDLE and k not in _IN_USER)


def cores_busy_s(cores: list[int]) -> float:
    """Seconds the ``cores`` have been busy since boot (summed over them); every core's where the per-core counters
    do not line up with the core numbers (an offline core)."""
    per = psutil.cpu_times(percpu=True)
    if len(per) == (os.cpu_count() or 0) and cores and max(cores) < len(per):
        return sum(_busy(per[c]) for c in cores)
    return _busy(psutil.cpu_times())


def _children(pid: int, depth: int = 3) -> list[int]:
    """The processes ``pid`` started (and theirs, ``depth`` levels), from ``/proc/PID/task/*/children``: no scan of
    every process of the machine (the sampler asks four times a second, inside the timed window). Empty where the
    kernel does not offer the file."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(c) for c in f.read().split()]
        except (OSError, ValueError):
            pass
    if depth > 1:
        out += [g for c in list(out) for g in _children(c, depth - 1)]
    return out


def process_cpu_s(proc: psutil.Process | None = None) -> float:
    """CPU seconds this process has spent (every thread), with its children's: those running (a loader's worker
    processes) and those waited for."""
    proc = proc or psutil.Process()
    total = _spent(proc.cpu_times())
    for c in _children(proc.pid):
        try:
            total += _spent(psutil.Process(c).cpu_times())
        except psutil.Error:
            pass
    return total


def _spent(t) -> float:
    return t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)


def reading(proc: psutil.Process | None = None, cores: list[int] | None = None) -> dict:
    """One reading of the clock, this process's CPU time and the allowed cores' busy time (``host_load`` takes two)."""
    cores = cores if cores is not None else allowed_cores(proc)
    return {"t": time.perf_counter(), "proc_s": process_cpu_s(proc), "busy_s": cores_busy_s(cores),
            "cores": len(cores)}


def host_load(a: dict | None, b: dict | None) -> dict | None:
    """What the allowed cores did between two readings: the window, this process's CPU time, the cores' busy time,
    the cores another process used on average (``others_cores``) and ``host_busy`` (more than ``BUSY_SHARE`` of
    the allowed cores). None without two readings a positive time apart."""
    if not a or not b or b["t"] <= a["t"]:
        return None
    window = b["t"] - a["t"]
    own = max(0.0, b["proc_s"] - a["proc_s"])
    busy = max(0.0, b["busy_s"] - a["busy_s"])
    cores = int(b.get("cores") or a.get("cores") or 1)
    others = max(0.0, busy - own) / window
    return {"window_s": round(window, 4), "process_cpu_s": round(own, 4), "cores_busy_s": round(busy, 4),
            "allowed_cores": cores, "process_cores": round(own / window, 3), "others_cores": round(others, 3),
            "threshold_cores": BUSY_SHARE * cores, "host_busy": bool(others > BUSY_SHARE * cores)}


def busy_text(load: dict | None) -> str:
    """'host busy: other processes used 1.0 of its 2 allowed cores over the timed window' (empty when not busy)."""
    if not isinstance(load, dict) or not load.get("host_busy"):
        return ""
    return (f"host busy: other processes used {load['others_cores']:.1f} of its {load['allowed_cores']} allowed "
            f"cores over the timed window (this run {load['process_cores']:.1f})")


def loaded_line(a: dict | None, b: dict | None) -> str | None:
    """The runner's start-line warning when the machine is already loaded before any point runs, else None."""
    load = host_load(a, b)
    if not load or not load["host_busy"]:
        return None
    return (f"warning: the machine is already loaded: other processes use {load['others_cores']:.1f} of the "
            f"{load['allowed_cores']} cores this run may use; runs measured while they do are marked host busy and "
            "left out of the report's headline figures where an unmarked run of the configuration exists")
