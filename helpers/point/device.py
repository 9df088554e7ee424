"""Force the Keras backend and the device through environment variables, then verify them.

``force()`` must run before ``import keras`` (and before any framework import): a backend or a
device cannot be switched inside a process, which is why the runner gives every grid point a fresh
kernel. ``verify()`` runs after ``import keras`` and asks the framework which device a Keras
tensor really lives on; a GPU point where no GPU is usable is skipped, never timed on the CPU.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from helpers.point import nvidia_libs as _nvidia

# The module that must be importable for each Keras backend.
BACKEND_MODULES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}

THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
              "TF_NUM_INTRAOP_THREADS")


class DeviceError(RuntimeError):
    """The device or backend cannot be forced (e.g. keras already imported with another backend)."""


def backend_installed(backend: str) -> bool:
    return importlib.util.find_spec(BACKEND_MODULES[backend]) is not None


def allowed_cores() -> list[int]:
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def force(backend: str, device: str, threads: int = 0, environ: dict | None = None) -> dict:
    """Set the environment so that the next ``import keras`` uses ``backend`` on ``device``.

    ``threads`` > 0 pins this process to that many cores (CPU affinity, inherited by every
    framework thread pool) and sets the thread-count variables; 0 keeps all allowed cores.
    Returns the variables it set (for the record). ``environ`` is for tests (defaults to os.environ).
    """
    env = os.environ if environ is None else environ
    if environ is None and "keras" in sys.modules:
        current = sys.modules["keras"].backend.backend()
        if current != backend:
            raise DeviceError(
                f"keras is already imported with backend '{current}'; a backend cannot be switched "
                f"inside a process: restart the kernel, then run from the top with backend='{backend}'"
            )
    set_vars: dict[str, str] = {}

    def put(key: str, value: str) -> None:
        env[key] = value
        set_vars[key] = value

    put("KERAS_BACKEND", backend)
    put("TF_CPP_MIN_LOG_LEVEL", env.get("TF_CPP_MIN_LOG_LEVEL", "2"))
    if device == "cpu":
        put("CUDA_VISIBLE_DEVICES", "")  # hides NVIDIA GPUs from TensorFlow, PyTorch and JAX
        put("JAX_PLATFORMS", "cpu")
    elif device == "gpu":
        if env.get("CUDA_VISIBLE_DEVICES") == "":
            env.pop("CUDA_VISIBLE_DEVICES")  # an inherited CPU setting must not hide the GPU
        put("JAX_PLATFORMS", "cuda")  # fails loudly at first use when JAX has no usable GPU
        put("TF_FORCE_GPU_ALLOW_GROWTH", "true")  # TF: measure memory used, not grabbed
        if backend == "tensorflow" and environ is None and "tensorflow" not in sys.modules:
            # pip's CUDA libraries beside tensorflow (a venv or a --target install), loaded before TF looks
            loaded = _nvidia.preload()
            if loaded["dirs"]:
                put("CGB_NVIDIA_LIBS", f"{len(loaded['loaded'])} loaded from {os.pathsep.join(loaded['dirs'])}"
                    + (f"; failed: {', '.join(loaded['failed'])}" if loaded["failed"] else ""))
    else:
        raise DeviceError(f"device must be 'cpu' or 'gpu', not {device!r}")

    cores = allowed_cores()
    if threads and threads > 0:
        if threads > len(cores):
            raise DeviceError(f"threads={threads} but this process may use only {len(cores)} cores")
        if environ is None and hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, cores[:threads])
        n = str(threads)
        for key in THREAD_ENV:
            put(key, n)
        put("TF_NUM_INTEROP_THREADS", "1" if threads < 4 else "2")
    return set_vars


def apply_threads(backend: str, threads: int) -> None:
    """Thread settings that exist only after the framework is imported (call before its first op)."""
    if not threads:
        return
    if backend == "torch":
        import torch

        torch.set_num_threads(threads)
    elif backend == "tensorflow":
        import tensorflow as tf

        try:  # the same values TF would read from TF_NUM_*_THREADS, now also what TF reports
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(1 if threads < 4 else 2)
        except RuntimeError:  # TF's context already started: the variables from force() apply
            pass


# Variables that set thread counts (besides CPU affinity), recorded as they were in effect.
THREAD_ENV_RECORDED = (*THREAD_ENV, "TF_NUM_INTEROP_THREADS", "XLA_FLAGS")


def set_random_seed(seed: int) -> None:
    """``keras.utils.set_random_seed(seed)`` (Python's, NumPy's, torch's and Keras' own seeds), without importing
    TensorFlow on another backend. Keras' own imports TensorFlow whenever it is installed, to seed ``tf.data``:
    on a JAX or torch point that is 5-6 s and a few hundred MB of every kernel (measured: 5.9 s of a 15-s
    mlp_mnist point on a 2-core machine), and no JAX or torch point here feeds ``tf.data``. TensorFlow's seed is
    still set where TensorFlow is the backend or already imported."""
    import keras

    lazy = None
    if keras.backend.backend() != "tensorflow" and "tensorflow" not in sys.modules:
        try:
            from keras.src.utils import module_utils

            lazy = module_utils.tensorflow
            if getattr(lazy, "module", True) is not None or getattr(lazy, "_available", True) is not None:
                lazy = None  # another Keras, or TensorFlow already looked for: Keras' own function as it is
        except ImportError:
            lazy = None
    if lazy is None:
        keras.utils.set_random_seed(seed)
        return
    lazy._available = False  # "not installed", for this call only
    try:
        keras.utils.set_random_seed(seed)
    finally:
        lazy._available = None  # asked again, later, it imports TensorFlow as before


def threads_in_effect(backend: str, environ: dict | None = None) -> dict:
    """The thread settings ``backend`` runs with, as the framework reports them. Call after its import.

    ``intra_op``/``inter_op``: threads for one op / for ops in parallel; ``source`` says where each
    figure comes from. torch and TF report their own pools (TF's 0 means "its default": the variable
    ``TF_NUM_*_THREADS`` when set, else one thread per core the process may use). XLA's CPU client
    (JAX) has no API for it: it sizes its pool from the CPU affinity, which ``force()`` narrows.
    """
    env = os.environ if environ is None else environ
    cores = len(allowed_cores())
    out: dict = {"backend": backend, "cpu_affinity": cores, "intra_op": None, "inter_op": None,
                 "source": None, "env": {k: env[k] for k in THREAD_ENV_RECORDED if k in env}}
    try:
        if backend == "torch":
            import torch

            out.update(intra_op=torch.get_num_threads(), inter_op=torch.get_num_interop_threads(),
                       source="torch.get_num_threads() / get_num_interop_threads()")
        elif backend == "tensorflow":
            import tensorflow as tf

            intra = tf.config.threading.get_intra_op_parallelism_threads()
            inter = tf.config.threading.get_inter_op_parallelism_threads()
            out["tf_reports"] = {"intra_op": intra, "inter_op": inter}
            out.update(intra_op=intra or int(env.get("TF_NUM_INTRAOP_THREADS") or cores),
                       inter_op=inter or int(env.get("TF_NUM_INTEROP_THREADS") or cores),
                       source="tf.config.threading (0 resolved to TF_NUM_*_THREADS, else the cores allowed)")
        elif backend == "jax":
            out.update(intra_op=cores, source="XLA CPU sizes its thread pool from the CPU affinity")
    except Exception as exc:  # a framework that cannot say: the record says why
        out["error"] = f"{type(exc).__name__}: {exc}"[:200]
    return out


def tensor_placement(backend: str) -> tuple[str, str]:
    """``("cpu"|"gpu", detail)``: where a fresh Keras tensor (after a matmul) lives on ``backend``. Call
    after ``import keras``; raises what the framework raises when no tensor can be made there."""
    import keras

    x = keras.ops.ones((2, 2))
    x = keras.ops.matmul(x, x)
    if backend == "tensorflow":
        detail = x.device
    elif backend == "jax":
        dev = next(iter(x.devices()))
        detail = f"{dev.platform}:{dev.id} {getattr(dev, 'device_kind', '')}".strip()
    else:
        detail = str(x.device)
        if x.device.type == "cuda":
            import torch

            detail += " " + torch.cuda.get_device_name(x.device)
    low = detail.lower()
    return ("gpu" if ("gpu" in low or "cuda" in low) else "cpu"), detail


def verify(backend: str, device: str) -> dict:
    """Ask the framework where a Keras tensor lives. Call after ``import keras``.

    Returns ``{"device_used": "cpu"|"gpu"|None, "detail": str, "skip_reason": str|None}``.
    ``skip_reason`` is set when the requested device is not the one used (a GPU point on a
    machine without a usable GPU), so the caller records ``skipped`` instead of timing it.
    """
    import keras

    if keras.backend.backend() != backend:
        raise DeviceError(
            f"keras uses backend '{keras.backend.backend()}' but '{backend}' was requested; "
            "restart the kernel and run from the top"
        )
    try:
        used, detail = tensor_placement(backend)
    except Exception as exc:  # e.g. JAX_PLATFORMS=cuda on a machine without a CUDA JAX
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        why = _nvidia.tf_no_gpu_reason() if (backend, device) == ("tensorflow", "gpu") else None
        return {"device_used": None, "detail": "",
                "skip_reason": f"{device} not usable by {backend}: {first}" + (f"; {why}" if why else "")}
    reason = None
    if used != device:
        reason = (f"requested {device} but {backend} placed tensors on {used} ({detail})"
                  + ("; no usable GPU" if device == "gpu" else ""))
        why = _nvidia.tf_no_gpu_reason() if (backend, device) == ("tensorflow", "gpu") else None
        reason += f"; {why}" if why else ""
    return {"device_used": used, "detail": detail, "skip_reason": reason}
