"""Numpy batches and where a backend trains them: the helpers the input paths share (``helpers.point.placement``:
the data on the device, the host copy's cost; ``helpers.point.staging``: batches put on the devices ahead of the
step).

    put, wait = to_device("jax")     # numpy -> the device(s), sharded as Keras shards a batch; wait for it to land
"""

from __future__ import annotations

import numpy as np


def keras_tree():
    import keras

    return keras.tree


def batch_slice(x, i: int, j: int):
    return keras_tree().map_structure(lambda a: a[i:j], x)


def batch_nbytes(x) -> int:
    return int(sum(np.asarray(a).nbytes for a in keras_tree().flatten(x)))


def to_device(backend: str):
    """A function putting one numpy array where the backend trains (and, with a distribution set, sharded as
    Keras shards a data batch over the mesh), and one that waits for the copies to land."""
    if backend == "jax":
        import jax
        import keras

        dist = keras.distribution.distribution()

        def put(a):
            if dist is not None:
                return jax.device_put(a, dist.get_data_layout(a.shape).backend_layout)
            return jax.device_put(a)

        return put, jax.block_until_ready
    if backend == "torch":
        import torch
        from keras.src.backend.torch.core import get_device

        dev = get_device()

        def wait(x):
            if torch.cuda.is_available() and str(dev).startswith("cuda"):
                torch.cuda.synchronize()
            return x

        return (lambda a: torch.as_tensor(a).to(dev)), wait
    raise ValueError(f"data_placement 'device': backend {backend!r} is not one of jax, torch")


def _as_fed(a, floatx: str):
    """An array as Keras' array adapter feeds it: floats other than ``floatx`` cast to it."""
    a = np.asarray(a)
    return a.astype(floatx) if np.issubdtype(a.dtype, np.floating) and a.dtype != np.dtype(floatx) else a


def shuffled(x, y, seed: int):
    """The training arrays shuffled once (seeded), as Keras' array adapter feeds them (``_as_fed``): ``(x, y, n)``,
    each a contiguous copy (the data on the device and the staged batches are cut from it)."""
    import keras

    n = len(keras_tree().flatten(x)[0])
    perm = np.random.default_rng(seed).permutation(n)
    fx = keras.config.floatx()
    return (keras_tree().map_structure(lambda a: _as_fed(a, fx)[perm], x),
            _as_fed(y, fx)[perm] if y is not None else None, n)
