"""The environment fingerprint: hardware and software a record was measured on.

Light by design (no framework import): versions come from package metadata, the GPU from NVML.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.metadata as md
import os
import platform
import socket
import subprocess

import psutil

from .paths import PROJECT_ROOT

PACKAGES = ("keras", "tensorflow", "tensorflow-cpu", "jax", "jaxlib", "torch", "numpy", "papermill",
            "nvidia-ml-py")


def _version(pkg: str) -> str | None:
    try:
        return md.version(pkg)
    except md.PackageNotFoundError:
        return None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=1)
def gpus() -> dict:
    """NVIDIA GPUs seen by NVML (whatever CUDA_VISIBLE_DEVICES says): names, memory, driver, CUDA."""
    try:
        import pynvml

        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
        names, mem = [], []
        for i in range(n):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            names.append(name.decode() if isinstance(name, bytes) else name)
            mem.append(round(pynvml.nvmlDeviceGetMemoryInfo(h).total / 2**30, 1))
        driver = pynvml.nvmlSystemGetDriverVersion()
        cuda = pynvml.nvmlSystemGetCudaDriverVersion_v2()
        return {"gpu_names": names, "gpu_memory_gb": mem,
                "gpu_driver": driver.decode() if isinstance(driver, bytes) else driver,
                "cuda_driver": f"{cuda // 1000}.{cuda % 1000 // 10}"}
    except Exception:
        return {"gpu_names": [], "gpu_memory_gb": [], "gpu_driver": None, "cuda_driver": None}


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=PROJECT_ROOT,
                             capture_output=True, text=True, timeout=5)
        commit = out.stdout.strip() or None
        if commit:
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                   cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=5)
            if dirty.stdout.strip():
                commit += "-dirty"
        return commit
    except Exception:
        return None


def machine_key() -> str:
    """What makes 'the same machine' for point ids: host, CPU model and cores, GPU models."""
    g = gpus()
    return "|".join([socket.gethostname(), cpu_model(), str(psutil.cpu_count(logical=True)),
                     ",".join(g["gpu_names"])])


def fingerprint() -> dict:
    """The machine and software, taken **before** a point narrows its CPU affinity (``Point`` does).

    ``cpu_logical``: the machine's logical CPUs (what a user rents); ``cpu_available``: the CPUs this
    process may use when the fingerprint is taken (a container's limit); ``cpu_allowed``: the CPUs the
    point ran on (``Point`` overwrites it after ``threads`` narrowed the affinity).
    """
    vm = psutil.virtual_memory()
    allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    fp = {
        "host": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_logical": psutil.cpu_count(logical=True),
        "cpu_physical": psutil.cpu_count(logical=False),
        "cpu_available": allowed,
        "cpu_allowed": allowed,
        "ram_gb": round(vm.total / 2**30, 1),
        "python": platform.python_version(),
        "versions": {p: v for p in PACKAGES if (v := _version(p))},
        "git_commit": git_commit(),
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine_key": machine_key(),
    }
    fp.update(gpus())
    return fp
