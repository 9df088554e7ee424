"""What the test modules share (no test module imports another): the installed backends, a fresh interpreter,
papermill on a workload notebook, data files in the Keras cache's formats, Chromium.

The per-backend run of every workload is ``every_workload.py``; its points are ``workload_points.py``; the
fixtures that start them once a session are in ``tests/conftest.py``.
"""

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from helpers.data import loaders as data
from helpers.paths import NOTEBOOKS, PROJECT_ROOT
from helpers.point import device

INSTALLED = [b for b in ("tensorflow", "jax", "torch") if device.backend_installed(b)]
ONE = "jax" if "jax" in INSTALLED else INSTALLED[0]
FAST_COMPILE = "tensorflow" if "tensorflow" in INSTALLED else INSTALLED[0]  # shortest first epochs on a CPU


# XLA's CPU code generation at its cheapest, for JAX runs that check behaviour only (every workload on JAX,
# tests/conftest.py: _run_chunk; in_fresh_python on JAX unless timed): the same HLO and cost analysis, steps
# compiled in about 3/4 of the time and run slower (JAX's small chunk: 70 s -> 53 s alone on the 2-core machine,
# 78 s -> 57 s in the suite; XLA's cost-analysis test's set-up 52 s -> 29 s). Not on TensorFlow: its runs here train
# longer than they compile, and got slower (ResNet-50's chunk 50 s -> 58 s). Never for a test that times something
FAST_XLA = {"XLA_FLAGS": "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"}


def _xla_cache_dir() -> str:
    """One folder per test run, shared by its xdist workers (``PYTEST_XDIST_TESTRUNUID``; without xdist, this
    pytest's pid); those of runs over 12 hours old are removed."""
    import tempfile
    import time

    base = Path(tempfile.gettempdir()) / f"cgb-test-xla-cache-{os.getuid()}"
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid{os.getpid()}"
    if base.is_dir():
        for old in base.iterdir():
            try:
                if old.name != run and time.time() - old.stat().st_mtime > 12 * 3600:
                    shutil.rmtree(old, ignore_errors=True)
            except OSError:
                pass
    return str(base / run)


# JAX's persistent compilation cache for the same behaviour-only runs (beside FAST_XLA wherever it is set, never
# for a run that times something): what one process compiled, the next loads instead of compiling it again. The
# suite's JAX processes (every workload's chunks, the fresh interpreters, the shared run's kernels, the 2-process
# points of test_launch and test_distribution) build the same layers, so the same weight initialisers (one XLA
# compile per weight shape: 80 for test_flops' models) and, where a point's model and batch are the same, the same
# train step. Every compile is cached (XLA's default skips those under 1 s, nearly all of them here); the cache's
# size limit turns on its file lock, so that the two workers never read an entry the other is writing. Keyed by the
# HLO, XLA's flags and JAX's version: a hit is the executable the compile would have made.
XLA_CACHE = {"JAX_COMPILATION_CACHE_DIR": _xla_cache_dir(), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
             "JAX_COMPILATION_CACHE_MAX_SIZE": str(4 * 2**30)}


def fast_xla(backend: str) -> dict:
    """``FAST_XLA`` and ``XLA_CACHE`` on JAX, nothing on another backend: the environment a behaviour-only run
    adds."""
    return {**FAST_XLA, **XLA_CACHE} if backend == "jax" else {}


# what a runner exports for the point its kernel runs: never inherited by another test's process
POINT_ENV = ("CGB_POINT_DEADLINE", "CGB_EXECUTED_NOTEBOOK", "CGB_KERNEL_STDERR")


def fresh_env(backend: str, **extra) -> dict:
    """This process's environment for a fresh interpreter on ``backend``, on the CPU."""
    return {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "",
            "TF_CPP_MIN_LOG_LEVEL": "3", **extra}


def in_fresh_python(code: str, backend: str = ONE, timed: bool = False) -> str:
    """Run ``code`` in a fresh interpreter on ``backend`` on the CPU (Keras is never imported in pytest); on JAX,
    XLA's cheapest code generation (``FAST_XLA``) unless the code times something (``timed``)."""
    env = fresh_env(backend, **({} if timed else fast_xla(backend)))
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


def run_nb(kernel, tmp_path: Path, name: str, **prm) -> Path:
    """A workload notebook through papermill on a real kernel, its record into ``tmp_path/records``."""
    import papermill as pm

    out = tmp_path / f"{name}-{prm.get('backend', '')}-{prm.get('device', '')}.ipynb"
    prm.setdefault("output_dir", str(tmp_path / "records"))
    prm.setdefault("min_steady_s", 1e-6)  # behaviour, not timing: `epochs` epochs, however short
    pm.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(out), parameters=prm, kernel_name=kernel,
                        progress_bar=False, cwd=str(NOTEBOOKS))
    return out


def only_record(folder: Path) -> dict:
    files = list(folder.glob("*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


# ---------------------------------------------------------------- files in the Keras cache's formats


def write_mnist_cache(keras_home: Path, n_train=300, n_test=100, learnable=False) -> dict:
    """A small mnist.npz in the Keras cache format: uint8 N x 28 x 28 images, uint8 labels."""
    d = keras_home / "datasets"
    d.mkdir(parents=True, exist_ok=True)
    if learnable:
        x, y = data.synthetic_images(n_train + n_test, (28, 28, 1), 10, seed=5)
        x = (x[..., 0] * 255).astype(np.uint8)
        y = y.astype(np.uint8)
    else:
        rng = np.random.default_rng(0)
        x = rng.integers(0, 256, size=(n_train + n_test, 28, 28), dtype=np.uint8)
        y = rng.integers(0, 10, size=n_train + n_test).astype(np.uint8)
    arrays = {"x_train": x[:n_train], "y_train": y[:n_train], "x_test": x[n_train:], "y_test": y[n_train:]}
    np.savez(d / "mnist.npz", **arrays)
    return arrays


def write_cifar_cache(keras_home: Path, n_per_batch=60):
    d = keras_home / "datasets" / "cifar-10-batches-py-target" / "cifar-10-batches-py"
    d.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        x = rng.integers(0, 256, size=(n_per_batch, 3072), dtype=np.uint8)
        with open(d / name, "wb") as f:
            pickle.dump({b"data": x, b"labels": rng.integers(0, 10, size=n_per_batch).tolist()}, f)


def write_imdb_npz(folder: Path, n_train=160, n_test=40, seed=0) -> Path:
    """A small ``imdb.npz`` as Keras stores it: object arrays of raw word ranks (0-based), 0/1 labels."""
    rng = np.random.default_rng(seed)

    def reviews(n):
        arr = np.empty(n, dtype=object)
        for i in range(n):
            arr[i] = [int(w) for w in rng.zipf(1.3, size=int(rng.integers(5, 120))) % 30000]
        return arr

    path = folder / "datasets" / "imdb.npz"
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, x_train=reviews(n_train), y_train=rng.integers(0, 2, n_train),
             x_test=reviews(n_test), y_test=rng.integers(0, 2, n_test))
    return path


NIETZSCHE_SAMPLE = ("PREFACE\n\n\nSUPPOSING that Truth is a woman--what then? Is there not ground for suspecting "
                    "that all philosophers, in so far as they have been dogmatists, have failed to understand "
                    "women--that the terrible seriousness and clumsy importunity with which they have usually "
                    "paid their addresses to Truth, have been unskilled and unseemly methods for winning a woman? ")


def write_nietzsche(folder: Path, repeat=6) -> Path:
    path = folder / "datasets" / "nietzsche.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(NIETZSCHE_SAMPLE * repeat, encoding="utf-8")
    return path


def write_archive(root: Path, per_class: int = 12, test_per_class: int = 4, nest: bool = True) -> Path:
    """The public cats-and-dogs archive's layout (Kaggle's copy nests each split twice), JPEG and PNG."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for split, n in (("training_set", per_class), ("test_set", test_per_class)):
        for k, cls in enumerate(("cats", "dogs")):
            d = root / split / (split if nest else "") / cls
            d.mkdir(parents=True)
            for i in range(n):
                base = np.full((48 + 8 * (i % 3), 40, 3), 60 + 120 * k, dtype=np.uint8)  # sizes differ
                img = np.clip(base + rng.integers(0, 40, base.shape), 0, 255).astype(np.uint8)
                ext = "png" if i % 4 == 3 else "jpg"
                Image.fromarray(img).save(d / f"{cls[:-1]}.{i + 1}.{ext}")
            (d / "_DS_Store").write_text("not an image")
    return root


# ---------------------------------------------------------------- Chromium

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--mute-audio"]


def chromium() -> str | None:
    for name in (os.environ.get("CGB_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None

