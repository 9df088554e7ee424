"""The environment fingerprint: hardware and software a record was measured on.

    fp = fingerprint()      # {'host': ..., 'cpu_model': ..., 'cpu_family': 6, 'boot_id': '3f2a...', ...}

Light by design (no framework import): versions come from package metadata, the CPU from ``/proc/cpuinfo``,
the GPU from NVML. What tells hosts and leases apart: the CPU's vendor, family, model and stepping
and the flags that matter (``cpu_flags``), ``boot_id`` (a hash of the kernel's boot id: one per boot, so one
per cloud lease), the GPUs' clocks, power limit and persistence mode (``gpu_state``) and the run's host
``calibration`` (``helpers.measure.calibration``). None of these enters a point id (``helpers.measure.machine``).
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.metadata as md
import os
import platform
import socket
import subprocess
from pathlib import Path

import psutil

from helpers.measure import calibration
from helpers.measure.boot import boot_id
from helpers.paths import PROJECT_ROOT

PACKAGES = ("keras", "tensorflow", "tensorflow-cpu", "jax", "jaxlib", "torch", "numpy", "papermill",
            "nvidia-ml-py")
CPUINFO = "/proc/cpuinfo"
# The CPU flags that change what a CPU measures (vector width, bfloat16, AMX tiles): which are present.
CPU_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")
# /proc/cpuinfo field -> fingerprint key, on x86 and (second) on ARM
_CPU_FIELDS = {"cpu_vendor": ("vendor_id", "CPU implementer"), "cpu_family": ("cpu family", "CPU architecture"),
               "cpu_model_number": ("model", "CPU part"), "cpu_stepping": ("stepping", "CPU revision")}


def package_version(pkg: str) -> str | None:
    """An installed package's version (package metadata, no import), None when it is not installed."""
    try:
        return md.version(pkg)
    except md.PackageNotFoundError:
        return None


def parse_cpuinfo(text: str) -> dict:
    """The fields of the first processor in ``/proc/cpuinfo`` text: ``{'vendor_id': 'GenuineIntel', ...}``."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_identity(fields: dict) -> dict:
    """Vendor, family, model number, stepping (integers where the CPU says a number) and which of
    ``CPU_FLAGS`` it has, from ``parse_cpuinfo``'s fields; a missing field is None."""
    out: dict = {}
    for key, names in _CPU_FIELDS.items():
        raw = next((fields[n] for n in names if fields.get(n)), None)
        if raw is not None and key != "cpu_vendor":
            try:
                raw = int(raw, 0)  # ARM writes 0x41, 0xd0c
            except ValueError:
                pass
        out[key] = raw
    flags = fields.get("flags") or fields.get("Features")
    have = set(flags.split()) if flags is not None else None
    out["cpu_flags"] = None if have is None else [f for f in CPU_FLAGS if f in have]
    return out


@functools.lru_cache(maxsize=1)
def cpuinfo_text() -> str:
    """This machine's ``/proc/cpuinfo`` ('' where there is none)."""
    try:
        with open(CPUINFO) as f:
            return f.read()
    except OSError:
        return ""


def first_field(text: str, prefixes: tuple[str, ...]) -> str | None:
    """The value of the first ``/proc/cpuinfo`` line starting with one of ``prefixes`` (what the machine
    key has always read: keep it so, or every point id changes)."""
    for line in text.splitlines():
        if line.startswith(prefixes):
            return line.split(":", 1)[1].strip() if ":" in line else ""
    return None


def cpu_fields() -> dict:
    """This machine's ``parse_cpuinfo`` (empty where there is no ``/proc/cpuinfo``)."""
    return parse_cpuinfo(cpuinfo_text())


def cpu_model() -> str:
    return first_field(cpuinfo_text(), ("model name",)) or platform.processor() or platform.machine()


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


def _nvml(call, *args):
    """One NVML call; None when it fails (not supported on this GPU, no permission, an old driver)."""
    try:
        return call(*args)
    except Exception:
        return None


def gpu_state() -> list[dict]:
    """Per GPU (NVML's order), now: SM and memory clocks (current and max, MHz), the enforced power limit
    (W) and persistence mode; a value NVML does not give is None. ``[]`` without NVML or a GPU."""
    try:
        import pynvml

        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
    except Exception:
        return []
    out = []
    for i in range(n):
        h = _nvml(pynvml.nvmlDeviceGetHandleByIndex, i)
        if h is None:
            out.append(dict.fromkeys(("sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz", "mem_clock_max_mhz",
                                      "power_limit_w", "persistence_mode")))
            continue
        sm, mem = getattr(pynvml, "NVML_CLOCK_SM", 1), getattr(pynvml, "NVML_CLOCK_MEM", 2)
        limit = _nvml(pynvml.nvmlDeviceGetEnforcedPowerLimit, h)  # mW
        persist = _nvml(pynvml.nvmlDeviceGetPersistenceMode, h)
        out.append({"sm_clock_mhz": _nvml(pynvml.nvmlDeviceGetClockInfo, h, sm),
                    "sm_clock_max_mhz": _nvml(pynvml.nvmlDeviceGetMaxClockInfo, h, sm),
                    "mem_clock_mhz": _nvml(pynvml.nvmlDeviceGetClockInfo, h, mem),
                    "mem_clock_max_mhz": _nvml(pynvml.nvmlDeviceGetMaxClockInfo, h, mem),
                    "power_limit_w": None if limit is None else round(limit / 1000, 1),
                    "persistence_mode": None if persist is None else bool(persist)})
    return out


@functools.lru_cache(maxsize=4)
def git_commit(root: str | Path | None = None) -> str | None:
    """The suite's own commit (``-dirty`` when tracked files changed), only when the suite's folder
    (``root``, default ``PROJECT_ROOT``) is itself the root of a git repository: a copy of the suite
    inside another repository records None, not that repository's commit."""
    try:
        root = Path(root or PROJECT_ROOT).resolve()

        def git(*args):
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=5).stdout.strip()

        top = git("rev-parse", "--show-toplevel")
        if not top or Path(top).resolve() != root:
            return None
        commit = git("rev-parse", "--short=12", "HEAD") or None
        if commit and git("status", "--porcelain", "--untracked-files=no"):
            commit += "-dirty"
        return commit
    except Exception:
        return None


def host_key() -> str:
    """This host and its hardware (host name, CPU model and logical CPUs, GPU models): the record's
    ``machine_key`` field, for the report's provenance and the runner's check that a resumed folder is this
    host's. Point ids and resume rest on ``helpers.measure.machine.machine_key`` (no host). Neither holds the boot
    id, the GPU state or the calibration: a new lease of the same machine keeps its ids."""
    g = gpus()
    return "|".join([socket.gethostname(), cpu_model(), str(psutil.cpu_count(logical=True)),
                     ",".join(g["gpu_names"])])


def fingerprint() -> dict:
    """The machine and software, taken **before** a point narrows its CPU affinity (``Point`` does).

    ``cpu_logical``: the machine's logical CPUs (what a user rents); ``cpu_available``: the CPUs this
    process may use when the fingerprint is taken (a container's limit); ``cpu_allowed``: the CPUs the
    point ran on (``Point`` overwrites it after ``threads`` narrowed the affinity). ``calibration``: the
    host calibration the runner measured at the start of this run (``helpers.measure.calibration``), else None.
    """
    vm = psutil.virtual_memory()
    allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    fp = {
        "host": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        **cpu_identity(cpu_fields()),
        "cpu_logical": psutil.cpu_count(logical=True),
        "cpu_physical": psutil.cpu_count(logical=False),
        "cpu_available": allowed,
        "cpu_allowed": allowed,
        "ram_gb": round(vm.total / 2**30, 1),
        "python": platform.python_version(),
        "versions": {p: v for p in PACKAGES if (v := package_version(p))},
        "git_commit": git_commit(),
        "boot_id": boot_id(),
        "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine_key": host_key(),
        "calibration": calibration.from_env(),
    }
    fp.update(gpus())
    fp["gpu_state"] = gpu_state()
    return fp
