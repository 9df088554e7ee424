"""The machine key that point ids (and so resume) rest on: hardware and software, never the host name.

    key = machine_key()     # 'cpu=...|flags=3f2a...|logical=16|gpus=NVIDIA H100 80GB HBM3|keras=3.15.1|...'

A container restart or a renamed host is the same machine and must not run every point again; a new CPU
or GPU, or another Keras / backend version, measures something else and gets new ids. (The fingerprint's
own ``machine_key`` keeps the host for the report's provenance; the runner keys points on this one.)
"""

from __future__ import annotations

import functools
import hashlib
import platform

import psutil

from helpers.measure.fingerprint import cpu_model, cpuinfo_text, first_field, gpus, package_version

# The software whose version changes a measurement (the frameworks and their array library).
SOFTWARE = ("keras", "tensorflow", "tensorflow-cpu", "jax", "jaxlib", "torch", "numpy")


def cpu_flags() -> str:
    """A short hash of the CPU's feature flags (``/proc/cpuinfo``): AVX-512 or not is another machine."""
    line = first_field(cpuinfo_text(), ("flags", "Features"))
    if line is None:
        return platform.machine()
    return hashlib.sha256(" ".join(sorted(set(line.split()))).encode()).hexdigest()[:12]


@functools.lru_cache(maxsize=1)
def machine_key() -> str:
    """What makes 'the same machine' for point ids: CPU model and flags, logical CPUs, GPU models,
    Python and the framework versions. No host name, no boot id, no GPU clocks, no calibration, no time:
    a resumed run on a new lease of the same machine type keeps its point ids."""
    parts = [f"cpu={cpu_model()}", f"flags={cpu_flags()}", f"logical={psutil.cpu_count(logical=True)}",
             f"gpus={','.join(gpus()['gpu_names'])}", f"python={platform.python_version()}"]
    parts += [f"{p}={v}" for p in SOFTWARE if (v := package_version(p))]
    return "|".join(parts)
