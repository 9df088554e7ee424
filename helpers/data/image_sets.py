"""Image datasets beyond CIFAR-10: MNIST (Keras cache, download or synthetic) and ImageNet-shaped data.

    load_mnist(n_train, n_val, source="auto", seed=0, flat=False, dtype="float32")   -> helpers.data.loaders.Dataset
    load_imagenet_shaped(n_train, n_val, source="auto", seed=0, image_size=224, n_classes=1000, dtype="float32")

The input path: ``input_dtype`` (``INPUT_DTYPE``, a knob of every image workload) is
``float32`` (images in [0, 1], 4 bytes a pixel copied to the device every step: what the suite always
fed) or ``uint8`` (the pixels as stored, one byte each, normalised inside the model by
``input_layers``: a ``Rescaling(1/255)`` as the model's first op, so the network and its parameter
count are the same). Synthetic images are then made as uint8 directly.

MNIST comes from the file ``keras.datasets.mnist`` caches (``<KERAS_HOME>/datasets/mnist.npz``, an npz
with ``x_train, y_train, x_test, y_test``), else is downloaded through ``keras.datasets.mnist`` when
its host is reachable, else is synthetic data of the same shape (28 x 28 grey, 10 classes). ImageNet
has no Keras loader: it is always synthetic, and ``source='real'`` is an error that says so.

No framework is imported at module level (Keras only inside the download path).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from helpers.data.loaders import DataError, Dataset, keras_home, reachable, synthetic_images
from helpers.params import Param

_SOURCES = ("auto", "real", "synthetic")
INPUT_DTYPES = ("float32", "uint8")
INPUT_DTYPE = Param("input_dtype", str, "what the model is fed: float32 in [0, 1] (4 bytes a pixel through the "
                    "host every step) or uint8 (1 byte, rescaled by the model's first layer; same network)",
                    choices=INPUT_DTYPES,
        note="float32 in [0, 1], or uint8 rescaled inside the model (same network)")
RESCALE_LAYER = "rescale_uint8"  # the name of the model's first layer with uint8 inputs


def input_dtype(params: dict) -> str:
    return params.get("input_dtype") or "float32"


def model_input(params: dict, shape: tuple):
    """``keras.Input`` of the model: uint8 or float32 as ``input_dtype`` says (imports Keras)."""
    import keras

    return keras.Input(tuple(shape), dtype=input_dtype(params))


def input_layers(params: dict) -> list:
    """The layers that normalise the inputs inside the model: ``[Rescaling(1/255)]`` with uint8 inputs
    (its output in the compute dtype: float32, or bfloat16/float16 under mixed precision), else none."""
    if input_dtype(params) != "uint8":
        return []
    from keras import layers

    return [layers.Rescaling(1.0 / 255.0, name=RESCALE_LAYER)]


def as_input(ds: Dataset, params: dict) -> Dataset:
    """Say in the record (``data_info.input_dtype``) what the model is fed."""
    ds.extra["input_dtype"] = input_dtype(params)
    ds.extra["normalised"] = "in the model (Rescaling 1/255)" if input_dtype(params) == "uint8" else "on the host"
    return ds


def _check_source(source: str) -> None:
    if source not in _SOURCES:
        raise ValueError(f"data_source must be auto, real or synthetic, not {source!r}")


def _subset(x_train, y_train, x_val, y_val, n_train, n_val, seed, dtype="float32"):
    """A random (sorted, reproducible) subset of the training set, the first ``n_val`` test images,
    as float32 in [0, 1] (or uint8 as stored) and int64 labels."""
    def scale(a):
        return a.astype(np.uint8) if dtype == "uint8" else a.astype(np.float32) / 255.0

    n = len(x_train) if n_train is None else min(n_train, len(x_train))
    idx = np.sort(np.random.default_rng(seed).permutation(len(x_train))[:n])
    xt = scale(x_train[idx])
    yt = np.asarray(y_train[idx], dtype=np.int64).reshape(-1)
    xv = yv = None
    if n_val:
        xv = scale(x_val[:n_val])
        yv = np.asarray(y_val[:n_val], dtype=np.int64).reshape(-1)
    return xt, yt, xv, yv


# ---------------------------------------------------------------- MNIST

MNIST_HOST = "storage.googleapis.com"  # host of keras.datasets.mnist's origin
MNIST_FILE = "mnist.npz"
MNIST_SHAPE = (28, 28, 1)
MNIST_TRAIN = 60000


def mnist_cache_file() -> Path:
    """Where ``keras.datasets.mnist.load_data()`` caches the dataset."""
    return keras_home() / "datasets" / MNIST_FILE


def read_mnist_npz(path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``x_train, y_train, x_test, y_test`` (uint8 N x 28 x 28, labels) from Keras' npz format."""
    with np.load(path, allow_pickle=False) as f:
        return f["x_train"], f["y_train"], f["x_test"], f["y_test"]


def load_mnist(n_train: int | None, n_val: int, source: str = "auto", seed: int = 0,
               flat: bool = False, dtype: str = "float32") -> Dataset:
    """MNIST as float32 in [0, 1] (``dtype='uint8'``: 0-255): N x 28 x 28 x 1, or N x 784 with ``flat``.

    ``source``: ``real`` (the Keras cache, else download; error if neither works), ``synthetic``, or
    ``auto`` (real when cached or reachable, else synthetic). The Dataset says which, and why.
    """
    _check_source(source)
    raw = None
    detail = ""
    if source in ("auto", "real"):
        cached = mnist_cache_file()
        if cached.is_file():
            raw = read_mnist_npz(cached)
            detail = f"MNIST from the Keras cache ({cached})"
        elif reachable(MNIST_HOST):
            import keras

            (xt, yt), (xv, yv) = keras.datasets.mnist.load_data()
            raw = (xt, yt, xv, yv)
            detail = f"MNIST downloaded by keras.datasets.mnist (cached in {cached})"
        elif source == "real":
            raise DataError(
                f"data_source='real' but MNIST is not in the Keras cache ({cached}) and {MNIST_HOST} "
                "is not reachable; use data_source='auto' or 'synthetic'"
            )
        else:
            detail = (f"MNIST neither cached ({cached}) nor reachable ({MNIST_HOST}): "
                      "synthetic images of the same shape")
    if raw is not None:
        xt, yt, xv, yv = _subset(*raw, n_train, n_val, seed, dtype)
        xt = xt.reshape(len(xt), *MNIST_SHAPE)
        xv = None if xv is None else xv.reshape(len(xv), *MNIST_SHAPE)
        src = "real"
    else:
        if source == "synthetic":
            detail = "synthetic images of MNIST's shape (requested)"
        xt, yt = synthetic_images(MNIST_TRAIN if n_train is None else n_train, MNIST_SHAPE, 10, seed, dtype=dtype)
        xv = yv = None
        if n_val:
            xv, yv = synthetic_images(n_val, MNIST_SHAPE, 10, seed + 1, dtype=dtype)
        src = "synthetic"
    if flat:
        xt = xt.reshape(len(xt), -1)
        xv = None if xv is None else xv.reshape(len(xv), -1)
    return Dataset(xt, yt, xv, yv, src, detail, 10,
                   extra={"dataset": "mnist", "input_shape": list(xt.shape[1:])})


# ---------------------------------------------------------------- ImageNet-shaped

IMAGENET_TRAIN = 1281167  # images in the ImageNet-1k training set


def load_imagenet_shaped(n_train: int | None, n_val: int, source: str = "auto", seed: int = 0,
                         image_size: int = 224, n_classes: int = 1000, dtype: str = "float32") -> Dataset:
    """Synthetic ImageNet-shaped data: ``image_size`` x ``image_size`` x 3 float32 (or uint8), ``n_classes``
    labels.

    ImageNet has no Keras loader (and is 150 GB): ``source='real'`` raises ``DataError``; ``auto`` and
    ``synthetic`` give synthetic data, the detail says why. ``n_train`` must be given (the whole
    ImageNet would not fit in memory: 0.6 MB per 224 x 224 image).
    """
    _check_source(source)
    if source == "real":
        raise DataError(
            "data_source='real' is not available for ImageNet-shaped workloads: ImageNet has no Keras "
            "loader and is not downloaded by this suite; use data_source='auto' or 'synthetic'"
        )
    if n_train is None:
        raise ValueError(f"n_train is required for synthetic ImageNet-shaped data (ImageNet has "
                         f"{IMAGENET_TRAIN:,} images, {0.6 * IMAGENET_TRAIN / 1e3:,.0f} GB as float32)")
    detail = ("synthetic images of ImageNet's shape (requested)" if source == "synthetic" else
              "ImageNet has no Keras loader and is not downloaded: synthetic images of its shape")
    shape = (image_size, image_size, 3)
    xt, yt = synthetic_images(n_train, shape, n_classes, seed, dtype=dtype)
    xv = yv = None
    if n_val:
        xv, yv = synthetic_images(n_val, shape, n_classes, seed + 1, dtype=dtype)
    return Dataset(xt, yt, xv, yv, "synthetic", detail, n_classes,
                   extra={"dataset": "imagenet-shaped", "input_shape": list(shape)})
