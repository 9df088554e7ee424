"""The NVIDIA libraries that pip installs for TensorFlow (``tensorflow[and-cuda]``), found and loaded by the suite.

pip's CUDA wheels put each library in ``<site>/nvidia/<name>/lib``. TensorFlow finds most of them through its own
search path, not all: seen on an H100 lease (TF 2.21 in a ``--target`` folder), ``libcusolver.so.11`` is not on it
("Could not load dynamic library 'libcusolver.so.11'"), so TF registers no GPU. ``preload()`` loads them into this
process (``ctypes``, ``RTLD_GLOBAL``) before ``import tensorflow``: TensorFlow then finds each one already loaded,
by its name. That works wherever the process was started, where ``LD_LIBRARY_PATH`` is read by glibc only at a
process's start; and it takes only the folders beside the ``tensorflow`` package, so a torch or JAX point never sees
TensorFlow's CUDA 12 libraries (cuDNN's ``libcudnn.so.9`` is one name for CUDA 12 and 13 builds alike).

    tensorflow_lib_dirs()        # [<site>/nvidia/cublas/lib, ...] beside the importable tensorflow
    preload()                    # {"dirs": [...], "loaded": [...], "failed": {name: error}}
    reason_from_tf_log(log)      # why TF registers no GPU, from its own log: the library it could not load
    no_gpu_reason(build_info)    # else probed with ctypes: no driver, a CPU build, a CUDA library that cannot load
    tf_no_gpu_reason()           # after ``import tensorflow``: both, in a fresh process

``helpers.point.device.force`` preloads for a TensorFlow GPU point; ``helpers.point.device.verify`` adds
``tf_no_gpu_reason()`` to a TensorFlow GPU point's skip reason. Seen on an H100 lease (CUDA 13 driver, TF 2.21 in a
``--target`` folder): without the preload TF registered no GPU ("Cannot dlopen some GPU libraries"); with it,
``/device:GPU:0``.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

# The library files loaded by preload(): lib<name>.so.<major>, the names TF asks for (and a few more of the same
# wheels); not cuDNN's sub-libraries (libcudnn_*: cuDNN loads its own), nor the interposers of other libraries'
# symbols (NVBLAS for BLAS, cuFFTW for FFTW), which RTLD_GLOBAL would put in front of NumPy's.
SONAME = re.compile(r"^lib[A-Za-z0-9]+\.so\.\d+$")
NOT_PRELOADED = ("libnvblas.", "libcufftw.")

# The libraries TF's CUDA build opens at start-up (tsl's dso_loader), by CUDA major version; cuDNN's major comes
# from the build info. TF registers no GPU when one of them cannot be loaded.
CUDA_LIBS = {
    11: ("libcudart.so.11.0", "libcublasLt.so.11", "libcublas.so.11", "libcufft.so.10", "libcusolver.so.11",
         "libcusparse.so.11"),
    12: ("libcudart.so.12", "libcublasLt.so.12", "libcublas.so.12", "libcufft.so.11", "libcusolver.so.11",
         "libcusparse.so.12"),
}
FIX = "pip install 'tensorflow[and-cuda]' or put its nvidia/*/lib folders on LD_LIBRARY_PATH"


def lib_dirs(paths) -> list[Path]:
    """Every ``<entry>/nvidia/*/lib`` folder of the ``paths`` entries (site-packages of a venv, a ``--target``
    folder), in order, each once."""
    out: dict[Path, None] = {}
    for entry in paths:
        if not entry:
            continue
        root = Path(entry) / "nvidia"
        if root.is_dir():
            for d in sorted(root.glob("*/lib")):
                if d.is_dir():
                    out.setdefault(d, None)
    return list(out)


def tensorflow_site(paths=None) -> Path | None:
    """The ``paths`` entry (default ``sys.path``) holding the ``tensorflow`` package that ``import tensorflow``
    would take (the first), found without importing it."""
    if paths is None:
        spec = importlib.util.find_spec("tensorflow") if "tensorflow" not in sys.modules else \
            sys.modules["tensorflow"].__spec__
        locs = list(getattr(spec, "submodule_search_locations", None) or []) if spec else []
        return Path(locs[0]).parent if locs else None
    for entry in paths:
        if entry and (Path(entry) / "tensorflow" / "__init__.py").is_file():
            return Path(entry)
    return None


def tensorflow_lib_dirs(paths=None) -> list[Path]:
    """The ``nvidia/*/lib`` folders beside the importable ``tensorflow`` (none if it is not installed)."""
    site = tensorflow_site(paths)
    return lib_dirs([site]) if site else []


def preload(dirs=None, loader=None) -> dict:
    """Load the libraries of ``dirs`` (default: ``tensorflow_lib_dirs()``) into this process, globally, each
    after those it needs (tried again while any new one loads). Returns ``{"dirs", "loaded", "failed"}``;
    ``failed``: the libraries that still would not load, with the loader's error."""
    dirs = tensorflow_lib_dirs() if dirs is None else [Path(d) for d in dirs]
    load = loader or (lambda path: ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL))
    todo = [d / f for d in dirs for f in sorted(os.listdir(d))
            if SONAME.match(f) and not f.startswith(NOT_PRELOADED)]
    loaded: list[str] = []
    failed: dict[str, str] = {}
    while todo:
        left = []
        for path in todo:
            try:
                load(str(path))
                loaded.append(path.name)
            except OSError as exc:
                left.append(path)
                failed[path.name] = str(exc)
        if len(left) == len(todo):
            break
        todo = left
    failed = {p.name: failed[p.name] for p in todo}
    return {"dirs": [str(d) for d in dirs], "loaded": loaded, "failed": failed}


def expected_libs(build_info: dict) -> list[str]:
    """The CUDA libraries a TF build opens at start-up, from its build info (``tf.sysconfig.get_build_info()``)."""
    major = int(str(build_info.get("cuda_version") or "12").split(".")[0])
    names = list(CUDA_LIBS.get(major) or (f"libcudart.so.{major}", f"libcublasLt.so.{major}",
                                          f"libcublas.so.{major}"))
    cudnn = str(build_info.get("cudnn_version") or "").split(".")[0]
    if cudnn:
        names.append(f"libcudnn.so.{cudnn}")
    return names


def _first_line(text: str) -> str:
    lines = str(text).strip().splitlines()
    return lines[0][:300] if lines else ""


def no_gpu_reason(build_info: dict, dirs=None, loader=None, driver: str | None = "libcuda.so.1") -> str:
    """Why a TF build registers no GPU: a CPU-only build, no NVIDIA driver (``driver`` cannot be loaded: a machine
    without a GPU), or the first of its CUDA libraries that cannot be loaded (by its name, as TF opens it, else
    from the ``nvidia/*/lib`` folders beside tensorflow: that error names what it lacks), and how to fix it."""
    if not build_info.get("is_cuda_build"):
        return "tensorflow registers no GPU: this tensorflow is a CPU-only build; pip install 'tensorflow[and-cuda]'"
    dirs = tensorflow_lib_dirs() if dirs is None else [Path(d) for d in dirs]
    load = loader or (lambda path: ctypes.CDLL(path))
    if driver:
        try:
            load(driver)
        except OSError as exc:
            return (f"tensorflow registers no GPU: the NVIDIA driver's {driver} cannot be loaded "
                    f"({_first_line(exc)}): no usable NVIDIA GPU on this machine")
    for name in expected_libs(build_info):
        try:
            load(name)
            continue
        except OSError as exc:
            why = _first_line(exc)
        where = next((d / name for d in dirs if (d / name).is_file()), None)
        if where is None:
            return (f"tensorflow registers no GPU: {name} cannot be loaded ({why}; no nvidia/*/lib folder beside "
                    f"tensorflow holds it); {FIX}")
        try:
            load(str(where))
            continue  # TF's own search path finds it there
        except OSError as exc:
            return f"tensorflow registers no GPU: {name} cannot be loaded ({_first_line(exc)}); {FIX}"
    return ("tensorflow registers no GPU, though its CUDA libraries load: check the driver (nvidia-smi) and "
            "CUDA_VISIBLE_DEVICES")


TF_LOG = re.compile(r"Could not load dynamic library '([^']+)'; dlerror: ([^;\n]+)")


def reason_from_tf_log(log: str, dirs=None) -> str | None:
    """Why TF registers no GPU, from its own start-up log (``dso_loader``: "Could not load dynamic library 'X';
    dlerror: ..."): the first library it could not load, where it is if a ``nvidia/*/lib`` folder beside tensorflow
    holds it, and the fix; None when the log names none."""
    m = TF_LOG.search(log or "")
    if not m:
        return None
    name, err = m.group(1), m.group(2).strip()
    dirs = tensorflow_lib_dirs() if dirs is None else [Path(d) for d in dirs]
    where = next((d for d in dirs if (d / name).is_file()), None)
    if where is not None:
        return (f"tensorflow registers no GPU: it could not load {name} ({err}), which is in {where}, a folder its "
                "own search path does not reach; the suite preloads it (helpers.point.nvidia_libs), elsewhere put "
                "that folder on LD_LIBRARY_PATH")
    return f"tensorflow registers no GPU: it could not load {name} ({err}); {FIX}"


def probe_in_child(build_info: dict, dirs=None, driver: str | None = "libcuda.so.1", timeout_s: float = 120.0) -> str:
    """Why TF registers no GPU, asked in fresh processes (by the time TF has given up, this one holds what TF loaded
    on its way): TF's own log first (``reason_from_tf_log``, its loader's messages on), else ``no_gpu_reason``."""
    dirs = tensorflow_lib_dirs() if dirs is None else dirs
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0", "TF_CPP_MAX_VLOG_LEVEL": "1"}
    try:
        tf = subprocess.run([sys.executable, "-c", "import tensorflow as tf; tf.config.list_physical_devices('GPU')"],
                            capture_output=True, text=True, timeout=timeout_s, env=env)
        why = reason_from_tf_log(tf.stderr + tf.stdout, dirs)
    except (OSError, subprocess.SubprocessError):
        why = None
    if why:
        return why
    arg = json.dumps({"build_info": build_info, "dirs": [str(d) for d in dirs], "driver": driver}, default=str)
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), arg], capture_output=True, text=True,
                         timeout=timeout_s)
    return out.stdout.strip() or f"tensorflow registers no GPU (the probe said: {_first_line(out.stderr)})"


def tf_no_gpu_reason() -> str | None:
    """After ``import tensorflow``: why this TF lists no GPU (``probe_in_child``), else None."""
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return None
    try:
        if tf.config.list_physical_devices("GPU"):
            return None
        return probe_in_child(dict(tf.sysconfig.get_build_info()))
    except Exception as exc:  # a diagnosis must never turn a skip into a failure
        return f"tensorflow registers no GPU ({type(exc).__name__} while asking why: {_first_line(exc)})"


if __name__ == "__main__":  # probe_in_child's fresh process: stdlib only, nothing loaded before
    _args = json.loads(sys.argv[1])
    print(no_gpu_reason(_args["build_info"], dirs=_args["dirs"], driver=_args["driver"]))
