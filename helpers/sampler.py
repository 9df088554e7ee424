"""Utilisation sampler: a background thread sampling CPU (psutil) and NVIDIA GPUs (NVML).

NVML memory includes what a framework *reserved* (JAX preallocates 75% of the card), so peak
memory in the record also comes from the framework's own counters (``framework_peak_memory``).
"""

from __future__ import annotations

import threading
import time

import psutil


def _nvml_handles():
    try:
        import pynvml  # from nvidia-ml-py

        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
        return pynvml, [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(n)]
    except Exception:
        return None, []


class Sampler:
    """``with Sampler(interval=0.5) as s: ...`` then ``s.samples`` and ``s.summary()``."""

    def __init__(self, interval: float = 0.25):
        self.interval = interval
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._thread = None
        self._proc = psutil.Process()
        self._nvml, self._gpus = _nvml_handles()
        self.t0 = None

    @property
    def has_gpu(self) -> bool:
        return bool(self._gpus)

    def _sample(self) -> dict:
        s = {"t": time.perf_counter() - self.t0, "cpu_pct": psutil.cpu_percent(None),
             "rss_mb": self._proc.memory_info().rss / 2**20}
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
        psutil.cpu_percent(None)  # prime: the next call reports usage since now
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
        out: dict = {"n_samples": len(pts), "interval_s": self.interval, "gpu_sampled": self.has_gpu}

        def agg(key):
            vals = [p[key] for p in pts if key in p]
            if vals:
                out[f"{key}_mean"] = sum(vals) / len(vals)
                out[f"{key}_max"] = max(vals)

        for key in ("cpu_pct", "rss_mb", "gpu_pct", "gpu_mem_mb", "power_w"):
            agg(key)
        return out

    def timeline(self, max_points: int = 400) -> list[dict]:
        """The samples, thinned to at most ``max_points`` (for utilisation-over-time charts)."""
        step = max(1, -(-len(self.samples) // max_points))
        return [{k: round(v, 3) for k, v in s.items()} for s in self.samples[::step]]


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
