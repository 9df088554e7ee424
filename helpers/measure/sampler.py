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

The GPUs used: ``CUDA_VISIBLE_DEVICES`` (indices or ``GPU-`` UUIDs, as CUDA reads them; unset = all)
mapped to NVML indices, of which a one-device point uses the first (the frameworks' default device).
CUDA's index order equals NVML's when ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` or the GPUs are alike.

Energy (``energy_figures``): the board's energy counter (``nvmlDeviceGetTotalEnergyConsumption``, mJ)
read by the epoch timer at synchronised epoch bounds and differenced; idle power measured apart before
training (``measure_idle``). The counter moves in steps (about every 0.1 s on an H100: an epoch of 27 ms
read 0 J in most epochs and a whole step in a few), so the figure per epoch is the steady window's energy
over its epochs (a mean, unbiased whatever the step), never a median of epochs, and a window shorter than
``ENERGY_MIN_WINDOW_S`` gives no figure (``energy_reason`` says why). Where the counter is unsupported
(GPUs before Volta) the record falls back to mean sampled power x epoch time and says so
(``energy_method``).

NVML memory includes what a framework *reserved* (JAX preallocates 75% of the card), so peak
memory in the record also comes from the framework's own counters (``framework_peak_memory``).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import threading
import time

import psutil

COUNTER = "nvml_energy_counter"
MEAN_POWER = "mean_power"
# The shortest steady window (training seconds) the energy counter is read over: the counter moves in steps of
# about 0.1 s of power (seen on an H100), so one step is at most 10% of a 1-s window and the two ends' steps
# (the only error left when the epochs' parts are summed) at most 5% of a 2-s one, the default window.
ENERGY_MIN_WINDOW_S = 1.0


def _nvml():
    try:
        import pynvml  # from nvidia-ml-py

        pynvml.nvmlInit()
        return pynvml
    except Exception:
        return None


def visible_gpu_indices(nv, environ=None) -> list[int]:
    """NVML indices of the GPUs that ``CUDA_VISIBLE_DEVICES`` lets CUDA see, in CUDA's order.

    Like CUDA, an entry that matches no GPU (or is empty) hides it and every entry after it.
    """
    env = os.environ if environ is None else environ
    n = nv.nvmlDeviceGetCount()
    spec = env.get("CUDA_VISIBLE_DEVICES")
    if spec is None:
        return list(range(n))
    uuids = None
    out: list[int] = []
    for token in (t.strip() for t in spec.split(",")):
        if token.isdigit() or (token.startswith("-") and token[1:].isdigit()):
            idx = int(token)
            if not 0 <= idx < n:
                break
        elif token:
            if uuids is None:
                uuids = []
                for i in range(n):
                    u = nv.nvmlDeviceGetUUID(nv.nvmlDeviceGetHandleByIndex(i))
                    uuids.append(u.decode() if isinstance(u, bytes) else str(u))
            tok = token if token.startswith("GPU-") else "GPU-" + token
            match = [i for i, u in enumerate(uuids) if u.startswith(tok)]  # CUDA accepts a unique prefix
            if len(match) != 1:
                break
            idx = match[0]
        else:
            break
        if idx in out:
            break
        out.append(idx)
    return out


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
        self._nvml = _nvml()
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

    def _loop(self):
        while not self._stop.wait(self.interval):
            self.samples.append(self._sample())

    def __enter__(self):
        self.t0 = time.perf_counter()
        psutil.cpu_percent(None)  # prime: the next calls report usage since now
        self._proc.cpu_percent(None)
        self._thread = threading.Thread(target=self._loop, name="utilisation-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.samples.append(self._sample())
        return False

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


def energy_figures(marks: list[dict], train_s: list[float], idle_power_w: float | None = None,
                   mean_power_w: float | None = None, min_window_s: float | None = None) -> dict:
    """Record keys for the energy of the training part of each epoch (the first epoch apart).

    ``marks``: the energy counter (mJ) per epoch at ``begin``, ``test_begin``, ``test_end``, ``end``
    (``EpochClock.marks``); ``train_s``: the training part of each epoch in seconds. An epoch's
    training energy is its counter difference less its validation's; the figure per epoch is their sum
    over the steady epochs divided by their number (the counter's steps make single short epochs read 0
    or a whole step: a median of them is biased, their mean is not). A steady window shorter than
    ``min_window_s`` (default ``ENERGY_MIN_WINDOW_S``) gives no figure and says why. Without usable marks,
    and given ``mean_power_w`` (mean sampled power over the steady epochs), the fallback is mean power x
    time.
    """
    steady_t = train_s[1:]
    window = math.fsum(steady_t)
    min_window_s = ENERGY_MIN_WINDOW_S if min_window_s is None else min_window_s
    out: dict = {}
    if idle_power_w is not None:
        out["idle_power_w"] = idle_power_w
    usable = (len(marks) == len(train_s) >= 2
              and all(m.get("begin") is not None and m.get("end") is not None for m in marks))
    if (usable or mean_power_w is not None) and steady_t and window < min_window_s:
        out["energy_window_s"] = window
        out["energy_reason"] = (f"no energy figure: the steady window ({window:.3f} s of training) is shorter than "
                                f"{min_window_s:g} s; the board's energy counter moves in steps of about 0.1 s, "
                                f"so it would be off by more than 10% (raise min_steady_s)")
        return out
    if usable:
        total = [(m["end"] - m["begin"]) / 1000.0 for m in marks]
        val = [((m["test_end"] - m["test_begin"]) / 1000.0
                if m.get("test_begin") is not None and m.get("test_end") is not None else 0.0) for m in marks]
        train = [t - v for t, v in zip(total, val)]
        k = len(train) - 1
        out.update(energy_method=COUNTER, first_epoch_energy_j=train[0], energy_j_epochs=train[1:],
                   energy_with_val_j_epochs=total[1:], energy_window_s=window,
                   energy_j_per_epoch=math.fsum(train[1:]) / k)
        if idle_power_w is not None:
            above = [e - idle_power_w * t for e, t in zip(train[1:], steady_t)]
            out["energy_above_idle_j_epochs"] = above
            out["energy_above_idle_j_per_epoch"] = math.fsum(above) / k
    elif mean_power_w is not None and steady_t:
        med = statistics.median(steady_t)
        out.update(energy_method=MEAN_POWER, energy_j_per_epoch=mean_power_w * med, energy_window_s=window,
                   energy_j_epochs=[mean_power_w * t for t in steady_t])
        if idle_power_w is not None:
            out["energy_above_idle_j_per_epoch"] = (mean_power_w - idle_power_w) * med
    return out


def framework_peak_memory(backend: str, device_used: str) -> dict:
    """Peak memory as the framework counts it: device bytes on GPU, process peak RSS on CPU."""
    out: dict = {}
    try:
        import resource

        out["process_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    except Exception:
        pass
    if device_used != "gpu":
        return out
    try:
        if backend == "torch":
            import torch

            out["gpu_peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
        elif backend == "jax":
            import jax

            stats = jax.devices()[0].memory_stats() or {}
            if "peak_bytes_in_use" in stats:
                out["gpu_peak_mb"] = stats["peak_bytes_in_use"] / 2**20
        elif backend == "tensorflow":
            import tensorflow as tf

            out["gpu_peak_mb"] = tf.config.experimental.get_memory_info("GPU:0")["peak"] / 2**20
    except Exception as exc:  # counters missing on some builds: say so
        out["gpu_peak_error"] = str(exc)[:200]
    return out
