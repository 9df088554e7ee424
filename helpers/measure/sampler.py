"""Utilisation and energy: a background thread sampling CPU (psutil) and the GPUs a point uses (NVML).

Sample keys (``Sampler.samples``, ``timeline()``; ``summary()`` gives ``<key>_mean`` / ``<key>_max``):

- ``cpu_pct``: system-wide CPU utilisation, ``psutil.cpu_percent``: 0-100 over *all* the machine's
  cores (a one-thread run on 2 cores reads about 50).
- ``proc_cpu_pct``: this process's own CPU use, ``psutil.Process().cpu_percent``: 100 per busy core
  (one thread reads about 100, 8 busy threads about 800), framework thread pools included.
- ``rss_mb``: the process's resident memory.
- ``gpu_pct`` (max over the used GPUs), ``gpu_mem_mb`` and ``power_w`` (sums over the used GPUs):
  NVML, only over the GPUs the point uses (``gpu_indices_used``), never every GPU of the machine.
  ``gpu_pct`` is NVML's busy time, not work done; ``power_w`` is NVML's power reading (averaged
  over about a second by the driver on recent GPUs), kept for the timeline.

With each sample the sampler keeps a reading of this process's CPU time and its allowed cores' busy time
(``cpu_readings``); ``host_load(start, end)`` sets them against each other over a window
(``helpers.measure.host_load``: another process eating the cores marks the run *host busy*).

The GPUs used: ``helpers.measure.nvml.visible_gpu_indices``; the energy figures made of the counter
readings: ``helpers.measure.energy``; the framework's own peak memory: ``helpers.measure.framework_memory``.
"""

from __future__ import annotations

import json
import os
import statistics
import threading
import time

import psutil

from helpers.measure import host_load as _host_load
from helpers.measure.energy import COUNTER, MEAN_POWER
from helpers.measure.nvml import load_nvml, visible_gpu_indices

IDLE_ENV = "CGB_GPU_IDLE"  # the runner's once-per-run idle power of every GPU (JSON), read by the points


def measure_gpus_idle(seconds: float = 1.0) -> dict | None:
    """Idle power of every GPU NVML sees, by UUID: the energy counter over ``seconds`` (the runner calls it
    once per run, before any point holds a GPU, and exports it as ``IDLE_ENV``). None without NVML or
    without an energy counter."""
    s = Sampler(gpu_count=None, environ={})
    if not s.has_gpu or not s.energy_counter:
        return None
    nv = s._nvml
    uuids = []
    for h in s._gpus:
        u = nv.nvmlDeviceGetUUID(h)
        uuids.append(u.decode() if isinstance(u, bytes) else str(u))
    t0 = time.perf_counter()
    e0 = [nv.nvmlDeviceGetTotalEnergyConsumption(h) for h in s._gpus]
    time.sleep(seconds)
    e1 = [nv.nvmlDeviceGetTotalEnergyConsumption(h) for h in s._gpus]
    dt = time.perf_counter() - t0
    return {"per_gpu_w": {u: (b - a) / 1000.0 / dt for u, a, b in zip(uuids, e0, e1)}, "window_s": dt,
            "method": COUNTER}


class Sampler:
    """``with Sampler(interval=0.5) as s: ...`` then ``s.samples`` and ``s.summary()``.

    ``gpu_count``: how many of the visible GPUs the point uses (the first ones; None = all visible).
    """

    def __init__(self, interval: float = 0.25, gpu_count: int | None = 1, environ=None):
        self.interval = interval
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._thread = None
        self._proc = psutil.Process()
        self.cores = _host_load.allowed_cores(self._proc)
        self.cpu_readings: list[dict] = []  # host_load.reading() with each sample (and one at the start)
        self._nvml = load_nvml()
        self.gpu_indices: list[int] = []
        if self._nvml is not None:
            try:
                visible = visible_gpu_indices(self._nvml, environ)
                self.gpu_indices = visible if gpu_count is None else visible[:gpu_count]
            except Exception:
                self.gpu_indices = []
        self._gpus = [self._nvml.nvmlDeviceGetHandleByIndex(i) for i in self.gpu_indices]
        self.energy_counter = self.has_gpu and self.energy_mj() is not None
        self.idle: dict = {}
        self.t0 = None

    @property
    def has_gpu(self) -> bool:
        return bool(self._gpus)

    # ------------------------------------------------------------ energy
    def energy_mj(self) -> float | None:
        """The used GPUs' energy counters summed (mJ since the driver loaded); None when unsupported."""
        if not self._gpus or getattr(self, "energy_counter", True) is False:
            return None
        try:
            return float(sum(self._nvml.nvmlDeviceGetTotalEnergyConsumption(h) for h in self._gpus))
        except Exception:
            return None

    def _power_w(self) -> float | None:
        try:
            return sum(self._nvml.nvmlDeviceGetPowerUsage(h) for h in self._gpus) / 1000.0
        except Exception:
            return None

    def idle_from_run(self) -> dict:
        """The idle power of the used GPUs from the runner's once-per-run measurement (``IDLE_ENV``), if it
        covers them: no waiting in the point. Sets and returns ``self.idle`` ({} when not available)."""
        try:
            run = json.loads(os.environ.get(IDLE_ENV) or "null")
            per = run["per_gpu_w"]
            uuids = []
            for h in self._gpus:
                u = self._nvml.nvmlDeviceGetUUID(h)
                uuids.append(u.decode() if isinstance(u, bytes) else str(u))
            if not uuids or any(u not in per for u in uuids):
                return {}
            self.idle = {"idle_power_w": float(sum(per[u] for u in uuids)), "idle_window_s": float(run["window_s"]),
                         "idle_method": f"{run.get('method', COUNTER)}, once per run before its first point"}
            return self.idle
        except Exception:
            return {}

    def idle_begin(self) -> None:
        """Start an idle window now (the GPU runs nothing until ``idle_end``: e.g. while the host makes the
        data), so that the idle power costs the point no waiting of its own."""
        self._idle_start = (time.perf_counter(), self.energy_mj()) if self._gpus and self.energy_counter else None

    def idle_end(self, min_seconds: float = 1.0) -> dict:
        """Close the window ``idle_begin`` opened, waiting out the rest of ``min_seconds`` if it was shorter;
        without an open window (or a counter), ``measure_idle(min_seconds)``. Sets ``self.idle``."""
        start, self._idle_start = getattr(self, "_idle_start", None), None
        if start is None or start[1] is None:
            return self.measure_idle(min_seconds)
        t0, e0 = start
        rest = min_seconds - (time.perf_counter() - t0)
        if rest > 0:
            time.sleep(rest)
        e1, t1 = self.energy_mj(), time.perf_counter()
        if e1 is None:
            return self.measure_idle(min_seconds)
        self.idle = {"idle_power_w": (e1 - e0) / 1000.0 / (t1 - t0), "idle_window_s": t1 - t0,
                     "idle_method": COUNTER}
        return self.idle

    def measure_idle(self, seconds: float = 1.0) -> dict:
        """Power of the used GPUs while the point runs nothing (call before training): ``self.idle``.

        The energy counter over ``seconds`` where supported, else the mean of power readings.
        """
        if not self._gpus:
            return {}
        t0 = time.perf_counter()
        if self.energy_counter:
            e0 = self.energy_mj()
            time.sleep(seconds)
            e1, t1 = self.energy_mj(), time.perf_counter()
            if e0 is not None and e1 is not None and t1 > t0:
                self.idle = {"idle_power_w": (e1 - e0) / 1000.0 / (t1 - t0), "idle_window_s": t1 - t0,
                             "idle_method": COUNTER}
                return self.idle
        readings = []
        while True:
            p = self._power_w()
            if p is not None:
                readings.append(p)
            if time.perf_counter() - t0 >= seconds:
                break
            time.sleep(min(0.1, seconds / 10))
        if readings:
            self.idle = {"idle_power_w": statistics.fmean(readings),
                         "idle_window_s": time.perf_counter() - t0, "idle_method": MEAN_POWER}
        return self.idle

    # ------------------------------------------------------------ sampling
    def _sample(self) -> dict:
        s = {"t": time.perf_counter() - self.t0, "cpu_pct": psutil.cpu_percent(None),
             "proc_cpu_pct": self._proc.cpu_percent(None), "rss_mb": self._proc.memory_info().rss / 2**20}
        if self._gpus:
            nv = self._nvml
            util = mem = power = 0.0
            for h in self._gpus:
                try:
                    util = max(util, float(nv.nvmlDeviceGetUtilizationRates(h).gpu))
                    mem += nv.nvmlDeviceGetMemoryInfo(h).used / 2**20
                    power += nv.nvmlDeviceGetPowerUsage(h) / 1000.0
                except Exception:
                    pass
            s.update(gpu_pct=util, gpu_mem_mb=mem, power_w=power)
        return s

    def _read_cpu(self) -> None:
        try:
            self.cpu_readings.append(_host_load.reading(self._proc, self.cores))
        except Exception:  # a counter that cannot be read: no host load, never a failed point
            pass

    def _loop(self):
        while not self._stop.wait(self.interval):
            self.samples.append(self._sample())
            self._read_cpu()

    def __enter__(self):
        self.t0 = time.perf_counter()
        psutil.cpu_percent(None)  # prime: the next calls report usage since now
        self._proc.cpu_percent(None)
        self._read_cpu()
        self._thread = threading.Thread(target=self._loop, name="utilisation-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.samples.append(self._sample())
        self._read_cpu()
        return False

    def host_load(self, start: float | None = None, end: float | None = None) -> dict | None:
        """``helpers.measure.host_load.host_load`` between the first and the last reading inside the window of two
        ``time.perf_counter()`` instants (every reading without one); None with fewer than two readings there."""
        rs = self.cpu_readings if start is None else [r for r in self.cpu_readings if start <= r["t"] <= end]
        return _host_load.host_load(rs[0], rs[-1]) if len(rs) >= 2 else None

    def window(self, start: float, end: float) -> list[dict]:
        """Samples between two ``time.perf_counter()`` instants."""
        a, b = start - self.t0, end - self.t0
        return [s for s in self.samples if a <= s["t"] <= b]

    def summary(self, start: float | None = None, end: float | None = None) -> dict:
        pts = self.samples if start is None else self.window(start, end)
        out: dict = {"n_samples": len(pts), "interval_s": self.interval, "gpu_sampled": self.has_gpu,
                     "gpu_indices": list(self.gpu_indices)}

        def agg(key):
            vals = [p[key] for p in pts if key in p]
            if vals:
                out[f"{key}_mean"] = sum(vals) / len(vals)
                out[f"{key}_max"] = max(vals)

        for key in ("cpu_pct", "proc_cpu_pct", "rss_mb", "gpu_pct", "gpu_mem_mb", "power_w"):
            agg(key)
        return out

    def timeline(self, max_points: int = 400) -> list[dict]:
        """The samples, thinned to at most ``max_points`` (for utilisation-over-time charts)."""
        step = max(1, -(-len(self.samples) // max_points))
        return [{k: round(v, 3) for k, v in s.items()} for s in self.samples[::step]]
