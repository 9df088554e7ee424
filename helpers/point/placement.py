"""Where the training set lives, and what the host copy costs a step (the input path).

``data_placement: host`` (the default) is Keras' own path for arrays: every step slices a numpy batch on the
host and copies it to the device (JAX: one batch ahead; torch: in the step). ``data_placement: device`` puts
the training set on the device once, before the clock starts, cut into its batches (each sharded over the
mesh's devices when the point trains on several GPUs), and a ``keras.utils.PyDataset`` serves them from there:
JAX's ``device_put`` and torch's ``convert_to_tensor`` of an array already where it must be are no-ops, so no
step copies anything. Same model, same batches per epoch, same samples; one difference, said in the record:
the samples are shuffled once into batches on the host, and each epoch visits the batches in a new order
(Keras shuffles the samples of arrays across batches every epoch; on the device that would be a gather a step).

``host_copy`` measures what the host path pays: the median time to copy one training batch (the process's
batch: ``batch_size`` x ``gpus``) from numpy to the devices as Keras does it, synchronised, after training,
outside the timed window. Against the step time it says where the time goes (the report's scaling section):
an upper bound of the copy's share, since JAX's look-ahead overlaps part of it with the previous step.

    data = place(data, params)                     # 'device': the arrays become a PyDataset on the device
    rec.update(host_copy(x_train, y_train, batch, backend, step_s=rec["step_s"]))
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from helpers.point.batches import batch_nbytes, batch_slice, keras_tree, shuffled, to_device

COPY_REPEATS = 5  # timed copies of one batch (after one untimed: allocation, first-use costs)


def device_dataset(x, y, batch_size: int, backend: str, seed: int = 0):
    """The training arrays as a ``keras.utils.PyDataset`` whose batches live on the device: shuffled once into
    batches of ``batch_size`` (the last one may be smaller, as with arrays); fit's ``shuffle`` (Keras' adapter)
    visits them in a new order every epoch."""
    import keras

    x, y, n = shuffled(x, y, seed)
    put, wait = to_device(backend)
    tree = keras_tree()
    batches = []
    for i in range(0, n, batch_size):
        xb = tree.map_structure(put, batch_slice(x, i, i + batch_size))
        yb = put(y[i:i + batch_size]) if y is not None else None
        batches.append((xb, yb) if yb is not None else (xb,))
    wait(batches)

    class DeviceBatches(keras.utils.PyDataset):
        """Batches already on the device (``helpers.point.placement``)."""

        def __init__(self):
            super().__init__(workers=1, use_multiprocessing=False)  # served in the training thread, no queue

        def __len__(self):
            return len(batches)

        def __getitem__(self, i):
            return batches[i]

    ds = DeviceBatches()
    ds.bytes = batch_nbytes(x) + (batch_nbytes(y) if y is not None else 0)
    return ds


def host_copy(x, y, batch_size: int, backend: str, step_s: float | None = None,
              repeats: int = COPY_REPEATS) -> dict:
    """The median time to copy one training batch (x and y) from numpy to the device(s), synchronised, over
    ``repeats`` copies after an untimed one; with ``step_s``, its share of a training step."""
    put, wait = to_device(backend)
    tree = keras_tree()
    xb, yb = batch_slice(x, 0, batch_size), (np.asarray(y)[:batch_size] if y is not None else None)
    xb = tree.map_structure(np.ascontiguousarray, xb)

    def once() -> float:
        t0 = time.perf_counter()
        out = (tree.map_structure(put, xb), put(yb) if yb is not None else None)
        wait(out)
        return time.perf_counter() - t0

    once()
    times = [once() for _ in range(repeats)]
    med = statistics.median(times)
    nbytes = batch_nbytes(xb) + (batch_nbytes(yb) if yb is not None else 0)
    out = {"input_bytes_per_step": nbytes, "host_copy_s_per_step": med, "host_copy_repeats": repeats,
           "host_copy_gb_per_s": nbytes / med / 1e9 if med > 0 else None,
           "host_copy_share": (med / step_s) if step_s else None}
    return out


def place(point, data):
    """The point's training arrays as its ``data_placement`` asks, the record told what was done: ``device`` (the
    batches put on the device now, before the clock: ``device_dataset``), ``staged`` (a thread puts each batch on
    the devices ahead of the step: ``helpers.point.staging``); None on the host path or for a generator."""
    from helpers.point.distribution_params import per_process_batch

    how = point.params["data_placement"]
    if how not in ("device", "staged") or data.train is not None:
        return None
    batch, backend, seed = per_process_batch(point.params), point.params["backend"], point.params["seed"]
    if how == "staged":
        from helpers.point import staging

        placed = staging.staged_dataset(data.x_train, data.y_train, batch, backend, seed=seed)
        point.record["data_staged"] = {"bytes": placed.bytes, "batches": len(placed), "depth": staging.DEPTH,
                                       "shuffle": "once into batches; the batch order every epoch"}
        print(f"data staged on the devices by a thread: {len(placed)} batches a pass, {staging.DEPTH} ready ahead "
              "of the step")
        return placed
    t0 = time.perf_counter()
    placed = device_dataset(data.x_train, data.y_train, batch, backend, seed=seed)
    point.record["data_on_device"] = {"bytes": placed.bytes, "batches": len(placed),
                                      "put_s": round(time.perf_counter() - t0, 4),
                                      "shuffle": "once into batches; the batch order every epoch"}
    print(f"data on the device: {len(placed)} batches, {placed.bytes / 1e6:.1f} MB, put there in "
          f"{point.record['data_on_device']['put_s']:.2f} s (not timed)")
    return placed
