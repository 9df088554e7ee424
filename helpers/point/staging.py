"""``data_placement: staged``: batches copied to the devices ahead of the step by a thread of their own.

The input path the scaling grid recommends (docs/multi_gpu.md). Keras' own path for arrays slices every batch on
the host in the training thread, between steps; with a distribution set (several GPUs, several processes) it copies
it to the devices there too, with no look-ahead, and each epoch starts with an empty pipeline. Here a background
thread does both ahead of time: it takes the next batch of this process's shard (a contiguous slice of the arrays,
shuffled once into batches: no gather a step), puts it on this process's devices, and holds up to ``depth`` such
batches ready, across epoch boundaries. The training thread only takes the next one: Keras' ``device_put`` of an
array already where it must be is a no-op, and its ``make_array_from_process_local_data`` (several processes) finds
its per-device slice already on the device. With ``input_dtype: uint8`` the copy is a quarter of float32's and the
cast and normalisation run inside the compiled step (the model's first layer).

Where each batch goes:

- one process, one device (no distribution): the default device (``jax.device_put``; torch: ``.to(device)``);
- one process, ``gpus`` > 1: sharded over its devices as Keras shards a data batch (the distribution's layout);
- several processes: this process's first device in the mesh (its part of the global batch; with ``gpus`` > 1
  a process's other devices get their slices from there, a device-to-device copy).

Same model, same samples, same batch count per epoch as the host path; one difference, said in the record:
the samples are shuffled once into batches and each epoch visits the batches in a new order (seeded).

    ds = staged_dataset(x, y, batch_size, "jax", depth=3, seed=0)   # a keras.utils.PyDataset
    model.fit(ds, ...)
    ds.close()                                                      # the thread stopped, its batches freed
"""

from __future__ import annotations

import queue
import threading
import time

import numpy as np

DEPTH = 3  # batches held ready on the devices (per process): one in the step, the next ones landing
WAIT_S = 600.0  # the training thread waits this long at most for a batch before the point fails


def _put_fn(backend: str):
    """One numpy array -> where this process trains it (the module docstring's three cases), and a wait."""
    from helpers.point.batches import to_device

    if backend == "jax":
        import jax
        import keras

        dist = keras.distribution.distribution()
        if dist is not None and jax.process_count() > 1:  # this process's part of the global batch, on its device
            mesh = dist.device_mesh.backend_mesh
            mine = [d for d in mesh.devices.flat if d.process_index == jax.process_index()]
            first = mine[0] if mine else jax.local_devices()[0]
            return (lambda a: jax.device_put(a, first)), jax.block_until_ready
    return to_device(backend)  # one process: where Keras puts a batch (sharded over its devices with gpus > 1)


class _Stager:
    """The thread that keeps ``depth`` batches on the devices, epoch after epoch (a new batch order each)."""

    def __init__(self, x, y, batch_size: int, put, wait, depth: int, seed: int):
        import keras

        self.tree = keras.tree
        self.x, self.y, self.bs = x, y, batch_size
        self.n = len(self.tree.flatten(x)[0])
        self.batches = -(-self.n // batch_size)
        self.put, self.wait = put, wait
        self.rng = np.random.default_rng(seed + 1)
        self.ready: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.served = 0
        self.waited_s = 0.0  # the training thread's time spent waiting for a batch (the stager behind)
        self.thread = threading.Thread(target=self._run, name="cgb-stager", daemon=True)

    def _batch(self, b: int):
        i, j = b * self.bs, min(self.n, (b + 1) * self.bs)
        xb = self.tree.map_structure(lambda a: self.put(a[i:j]), self.x)
        if self.y is None:
            return (xb,)
        return xb, self.put(self.y[i:j])

    def _run(self):
        try:
            while not self.stop.is_set():
                for b in self.rng.permutation(self.batches):
                    item = self._batch(int(b))
                    self.wait(item)  # landed before it is offered: the step never waits on a copy in flight
                    while not self.stop.is_set():
                        try:
                            self.ready.put(item, timeout=0.2)
                            break
                        except queue.Full:
                            continue
                    if self.stop.is_set():
                        return
        except BaseException as exc:  # handed to the training thread, which fails the point with it
            self.error = exc
            self.stop.set()

    def next(self):
        if not self.thread.is_alive() and not self.stop.is_set():
            self.thread.start()
        t0 = time.perf_counter()
        deadline = t0 + WAIT_S
        while True:
            try:
                item = self.ready.get(timeout=0.2)
                break
            except queue.Empty:
                if self.error is not None:
                    raise RuntimeError(f"data_placement 'staged': the staging thread failed: "
                                       f"{type(self.error).__name__}: {self.error}") from self.error
                if self.stop.is_set():
                    raise RuntimeError("data_placement 'staged': the staging thread was stopped")
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"data_placement 'staged': no batch ready after {WAIT_S:g} s")
        self.waited_s += time.perf_counter() - t0
        self.served += 1
        return item

    def close(self):
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=10)
        while True:  # the batches held on the devices are freed
            try:
                self.ready.get_nowait()
            except queue.Empty:
                break


def staged_dataset(x, y, batch_size: int, backend: str, depth: int = DEPTH, seed: int = 0):
    """This process's training arrays as a ``keras.utils.PyDataset`` whose batches a thread of their own puts on
    the devices ahead of the step (``depth`` ready). ``close()`` stops the thread; ``stats()`` says what it did."""
    import keras

    from helpers.point.batches import batch_nbytes, shuffled

    tree = keras.tree
    x, y, n = shuffled(x, y, seed)  # contiguous copies: each batch a slice of them, no gather a step
    if n == 0:
        raise ValueError("data_placement 'staged': no training samples")
    put, wait = _put_fn(backend)
    stager = _Stager(x, y, batch_size, put, wait, depth, seed)
    first = tree.flatten(x)[0]
    per_batch = int(sum(a[:batch_size].nbytes for a in tree.flatten(x)))
    per_batch += y[:batch_size].nbytes if y is not None else 0

    class StagedBatches(keras.utils.PyDataset):
        """Batches a thread puts on the devices ahead of the step (``helpers.point.staging``)."""

        def __init__(self):
            super().__init__(workers=1, use_multiprocessing=False)  # served in the training thread, no queue

        def __len__(self):
            return stager.batches

        def __getitem__(self, i):  # the order is the stager's (a new one each epoch), not Keras' index
            return stager.next()

        def close(self):
            stager.close()

        def stats(self) -> dict:
            return {"batches": stager.batches, "depth": stager.ready.maxsize, "bytes_per_batch": per_batch,
                    "input_dtype": str(first.dtype), "served": stager.served,
                    "wait_s": round(stager.waited_s, 4),
                    "shuffle": "once into batches; the batch order every epoch"}

    ds = StagedBatches()
    ds.bytes = batch_nbytes(x) + (batch_nbytes(y) if y is not None else 0)
    return ds
