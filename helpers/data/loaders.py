"""Datasets: the real one through the Keras loaders when cached or reachable, else synthetic.

Synthetic data has the real data's shapes and dtype, so the step cost is the real one, and an
*easy* class structure (each class is a smooth random prototype plus noise): accuracy rises above
chance, and quickly: a nearest-class-mean classifier already separates the classes, and the small
CNNs reach 100% training accuracy within two epochs. It shows that training works, not how hard the
real task is: accuracy on synthetic data is no figure of merit. Every loader returns a ``Dataset``
that says which source it used; the record and the report show it.
"""

from __future__ import annotations

import os
import pickle
import socket
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


class DataError(RuntimeError):
    """Real data was required (``data_source='real'``) but is neither cached nor reachable."""


@dataclass
class Dataset:
    """Training (and validation) data for ``model.fit``, and where it came from.

    Either arrays (``x_train``/``y_train``, batched by ``fit`` with the point's ``batch_size``) or
    ``train``: anything ``fit`` accepts that batches itself (a ``keras.utils.PyDataset``, a
    ``tf.data.Dataset``, a generator) with ``steps_per_epoch`` and ``samples_per_epoch`` given.
    """

    x_train: np.ndarray | None
    y_train: np.ndarray | None
    x_val: np.ndarray | None
    y_val: np.ndarray | None
    source: str  # "real" | "synthetic"
    detail: str = ""  # where it came from, or why synthetic
    n_classes: int = 0
    extra: dict = field(default_factory=dict)  # recorded as data_info (e.g. augmentation, workers)
    train: object = None
    val: object = None
    steps_per_epoch: int | None = None
    n_train: int | None = None  # samples per epoch when ``train`` is given
    n_val: int | None = None
    fit_kwargs: dict = field(default_factory=dict)
    learnable: bool = True  # False: targets with nothing to learn (random): the report checks the loss is finite only

    @property
    def samples_per_epoch(self) -> int:
        if self.train is not None:
            if self.n_train is None:
                raise ValueError("Dataset with `train` needs `n_train` (samples per epoch)")
            return int(self.n_train)
        return len(self.x_train)

    @property
    def n_val_samples(self) -> int:
        if self.val is not None:
            return int(self.n_val or 0)
        return 0 if self.x_val is None else len(self.x_val)


def keras_home() -> Path:
    """The Keras cache root, as Keras computes it (``$KERAS_HOME`` or ``~/.keras``)."""
    return Path(os.path.expanduser(os.environ.get("KERAS_HOME", os.path.join("~", ".keras"))))


def reachable(host: str, port: int = 443, timeout: float = 3.0) -> bool:
    """Whether a TCP connection to ``host`` opens within ``timeout`` seconds."""
    if os.environ.get("CGB_OFFLINE") == "1":
        return False
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


# ---------------------------------------------------------------- synthetic

NOISE_BANK_BYTES = 64 * 2**20  # distinct noise fields of the synthetic images


def synthetic_images(n: int, shape: tuple[int, int, int], n_classes: int, seed: int,
                     noise: float = 0.35, cells: int = 4, dtype: str = "float32") -> tuple[np.ndarray, np.ndarray]:
    """``n`` float32 images in [0, 1] of ``shape`` (H, W, C), labels in [0, n_classes); with
    ``dtype='uint8'`` the same images as uint8 in [0, 255] (as decoded files are; made a chunk at a time, so
    no float32 copy of the whole set is ever held).

    Class k's images are a smooth random prototype (a ``cells`` x ``cells`` pattern upsampled to
    H x W), randomly shifted in brightness, plus Gaussian noise. Easy by design: the prototypes are
    far apart next to the noise, so a nearest-class-mean classifier is about 100% accurate and the
    suite's CNNs reach 100% training accuracy in an epoch or two. Same shapes and dtype as the real
    data (the step cost is the real one); accuracy on it says only that training works.
    """
    h, w, c = shape
    rng = np.random.default_rng(seed)
    proto_rng = np.random.default_rng(1234567 + n_classes)  # same classes for train and val
    small = proto_rng.uniform(0.0, 1.0, size=(n_classes, cells, cells, c)).astype(np.float32)
    rep_h, rep_w = -(-h // cells), -(-w // cells)
    y = rng.integers(0, n_classes, size=n).astype(np.int64)
    bright = rng.uniform(0.6, 1.0, size=n).astype(np.float32)
    # the noise: a bank of distinct fields (up to NOISE_BANK_BYTES), each image drawing one at random.
    # A fresh field per image cost seconds per point (50,000 CIFAR images: ~7 s on 2 cores); brightness
    # and class still make the images differ, and the step cost is the same
    per_image = h * w * c * 4
    bank_n = int(max(1, min(n, max(16, NOISE_BANK_BYTES // per_image))))
    bank = rng.standard_normal((bank_n, h, w, c), dtype=np.float32)
    bank *= np.float32(noise)
    pick = rng.integers(0, bank_n, size=n) if bank_n < n else rng.permutation(n)
    x = np.empty((n, h, w, c), dtype=np.dtype(dtype))
    chunk = max(1, 2**24 // per_image)  # 16 MB at a time; prototypes upsampled per chunk (1000 classes
    buf = None if x.dtype == np.float32 else np.empty((min(n, chunk), h, w, c), dtype=np.float32)
    for start in range(0, n, chunk):    # of 224 x 224 x 3 would take 600 MB as full-size prototypes)
        stop = min(n, start + chunk)
        img = x[start:stop] if buf is None else buf[:stop - start]
        img[...] = np.repeat(np.repeat(small[y[start:stop]], rep_h, axis=1), rep_w, axis=2)[:, :h, :w, :]
        img *= bright[start:stop, None, None, None]
        img += bank[pick[start:stop]]
        np.clip(img, 0.0, 1.0, out=img)
        if buf is not None:
            img *= np.float32(255.0)
            np.rint(img, out=img)
            x[start:stop] = img
    return x, y


# ---------------------------------------------------------------- CIFAR-10

CIFAR10_HOST = "www.cs.toronto.edu"
CIFAR10_SHAPE = (32, 32, 3)
# The folders Keras 3 (and older Keras) extract the CIFAR-10 archive to, under <keras home>/datasets.
CIFAR10_DIRS = ("cifar-10-batches-py-target/cifar-10-batches-py", "cifar-10-batches-py")
CIFAR10_FILES = tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch",)


def cifar10_cache_dir() -> Path | None:
    """The folder holding the extracted CIFAR-10 batches in the Keras cache, if complete."""
    base = keras_home() / "datasets"
    for rel in CIFAR10_DIRS:
        d = base / rel
        if all((d / f).is_file() for f in CIFAR10_FILES):
            return d
    return None


def _load_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR batch file, parsed by Keras' own (restricted-unpickler) loader when available."""
    try:
        from keras.src.datasets.cifar import load_batch  # the parser keras.datasets.cifar10 uses
    except ImportError:  # private module moved: same format, parsed here
        load_batch = None
    if load_batch is not None:
        data, labels = load_batch(str(path))
    else:
        with open(path, "rb") as f:
            d = pickle.load(f, encoding="bytes")
        data = d[b"data"].reshape(-1, 3, 32, 32)
        labels = d[b"labels"]
    return np.asarray(data, dtype=np.uint8), np.asarray(labels, dtype=np.int64)


def _read_cifar10_cache(d: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    xs, ys = zip(*(_load_cifar_batch(d / f"data_batch_{i}") for i in range(1, 6)))
    x_test, y_test = _load_cifar_batch(d / "test_batch")
    x_train = np.concatenate(xs).transpose(0, 2, 3, 1)  # NCHW -> NHWC (channels_last)
    return x_train, np.concatenate(ys), x_test.transpose(0, 2, 3, 1), y_test


def load_cifar10(n_train: int | None, n_val: int, source: str = "auto", seed: int = 0,
                 dtype: str = "float32") -> Dataset:
    """CIFAR-10 as float32 NHWC in [0, 1] (``dtype='uint8'``: the pixels as stored, 0-255) and integer labels.

    ``source``: ``real`` (the Keras cache, else download through ``keras.datasets.cifar10``; error
    if neither works), ``synthetic``, or ``auto`` (real when cached or reachable, else synthetic).
    """
    if source not in ("auto", "real", "synthetic"):
        raise ValueError(f"data_source must be auto, real or synthetic, not {source!r}")
    raw = None
    detail = ""
    if source in ("auto", "real"):
        cached = cifar10_cache_dir()
        if cached is not None:
            raw = _read_cifar10_cache(cached)
            detail = "CIFAR-10 from the Keras cache"
        elif reachable(CIFAR10_HOST):
            import keras

            (xt, yt), (xv, yv) = keras.datasets.cifar10.load_data()
            raw = (xt, yt.reshape(-1), xv, yv.reshape(-1))
            detail = "CIFAR-10 downloaded by keras.datasets.cifar10"
        elif source == "real":
            raise DataError(
                f"data_source='real' but CIFAR-10 is not in the Keras cache ({keras_home() / 'datasets'}) "
                f"and {CIFAR10_HOST} is not reachable; use data_source='auto' or 'synthetic'"
            )
        else:
            detail = "CIFAR-10 neither cached nor reachable: synthetic images of the same shape"
    if raw is not None:
        x_train, y_train, x_val, y_val = raw
        n = len(x_train) if n_train is None else min(n_train, len(x_train))
        rng = np.random.default_rng(seed)
        idx = np.sort(rng.permutation(len(x_train))[:n])
        scale = (lambda a: a.astype(np.uint8)) if dtype == "uint8" else (lambda a: a.astype(np.float32) / 255.0)
        xt = scale(x_train[idx])
        yt = y_train[idx].astype(np.int64)
        xv = scale(x_val[:n_val]) if n_val else None
        yv = y_val[:n_val].astype(np.int64) if n_val else None
        return Dataset(xt, yt, xv, yv, "real", detail, 10)
    if source == "synthetic":
        detail = "synthetic images of CIFAR-10's shape (requested)"
    n = 50000 if n_train is None else n_train
    xt, yt = synthetic_images(n, CIFAR10_SHAPE, 10, seed, dtype=dtype)
    xv = yv = None
    if n_val:
        xv, yv = synthetic_images(n_val, CIFAR10_SHAPE, 10, seed + 1, dtype=dtype)
    return Dataset(xt, yt, xv, yv, "synthetic", detail, 10)
