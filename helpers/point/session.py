"""One grid point inside a workload notebook: validate, force, verify, train, record.

The notebook's cells call, in order::

    pt = begin(globals())        # first cell after `parameters`: validates, forces the device
    import keras
    pt.verify()                  # the device really used; a GPU point without a GPU -> skipped
    data = pt.load_data()
    model = pt.build_model()
    pt.fit(model, data)          # timed: first epoch apart, steady-state epochs, utilisation
    record = pt.finish()         # writes the record (atomically) and returns it

A skipped point writes its record and raises ``PointSkipped`` (the runner reads it as a skip); an
exception while training writes a ``failed`` record with the error, then propagates.

The parameters are read by ``helpers.point.notebook_params``, the devices and processes set up by
``helpers.point.process_group`` and ``helpers.point.mesh``; the record's figures are assembled by
``helpers.point.record_figures`` and, on several processes, merged by ``helpers.point.process_records``.
"""

from __future__ import annotations

import datetime as dt
import os
import time
import traceback
from pathlib import Path

from helpers import workloads as _workloads
from helpers.measure.fingerprint import fingerprint
from helpers.measure.machine import machine_key
from helpers.paths import outputs_dir
from helpers.point import device as _device
from helpers.point import mesh as _mesh
from helpers.point import process_group as _group
from helpers.point import record_figures as _figures
from helpers.point.distribution_params import data_params, per_process_batch
from helpers.point.notebook_params import collect
from helpers.point.process_records import PROCESS_FOLDER, finish_processes
from helpers.record import fields as F
from helpers.record import writer
from helpers.record.ids import point_id
from helpers.record.schema import empty_record

MAX_EPOCHS = 1_000_000  # fit's epoch count; the timer stops it (``min_steady_s``)


class PointSkipped(Exception):
    """The point cannot run as asked (no usable GPU, backend not installed); its record says why."""


def begin(namespace_or_params: dict) -> Point:
    """Validate the parameters, force backend and device (before ``import keras``), return the point."""
    return Point(collect(namespace_or_params))


class Point:
    def __init__(self, params: dict):
        self.params = _workloads.complete(params)  # every knob, its default where not given (one place)
        params = self.params
        self.workload = _workloads.get(params["workload"])
        self.started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.t_start = time.perf_counter()
        self.point_id = params.get("point_id") or point_id(params, machine_key(), _workloads.contents(params))
        self.folder = self._folder(params["output_dir"])
        self.record = empty_record(self.params, self.point_id)
        self.record.update(started_at=self.started_at, source=self.workload.source,
                           notebook=str(_record_notebook()))
        self.device_info: dict = {}
        self.dist = _group.Plan()  # devices and hosts of this point (``verify`` sets it up)
        self.data = None
        self.model = None
        self.timer = None
        self.sampler = None
        self.path: Path | None = None
        backend, dev = params["backend"], params["device"]
        # the machine as rented, before force() narrows the affinity (cpu_allowed is set after it)
        self.record["fingerprint"] = fingerprint()
        if not _device.backend_installed(backend):
            self.skip(f"backend not installed: the '{_device.BACKEND_MODULES[backend]}' package "
                      "is not importable in this Python")
        cores = len(_device.allowed_cores())
        if params["threads"] > cores:
            self.skip(f"threads={params['threads']} but this machine lets the process use {cores} cores")
        self.record["env_forced"] = _device.force(backend, dev, params["threads"])
        self.record["fingerprint"]["cpu_allowed"] = len(_device.allowed_cores())

    @staticmethod
    def _folder(output_dir: str) -> Path:
        if output_dir:
            return Path(output_dir)
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        return outputs_dir() / "adhoc" / f"{stamp}-{os.getpid()}"

    # ------------------------------------------------------------ lifecycle
    def _write(self, status: str, reason: str | None = None) -> dict:
        self.record.update(status=status, reason=reason,
                           duration_s=round(time.perf_counter() - self.t_start, 3))
        if self.record.get("fingerprint") is None:
            self.record["fingerprint"] = fingerprint()
        self.path = writer.keep(self.record, self.folder)
        return self.record

    def skip(self, reason: str):
        self._write("skipped", reason)
        raise PointSkipped(f"{self.params['backend']}/{self.params['device']}: {reason} "
                           f"(record: {self.path})")

    def fail(self, exc: BaseException) -> dict:
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]
        self.record["traceback"] = tb
        return self._write("failed", f"{type(exc).__name__}: {exc}"[:2000])

    def verify(self) -> dict:
        """After ``import keras``: check backend and device, set threads, precision and seed."""
        import keras

        backend, dev = self.params["backend"], self.params["device"]
        try:  # several hosts: JAX's distributed runtime first, before any computation
            # a process left waiting for the others writes its failed record before JAX's runtime ends it
            self.dist = _group.initialize(self.params, on_stuck=lambda why: self._write("failed", why))
        except Exception as exc:
            self.fail(exc)
            raise
        self.record["process_id"] = self.dist.process_id
        if self.dist.process_id:  # a process other than 0 writes its own record apart; process 0 the merged one
            self.folder = self.folder / PROCESS_FOLDER
        _device.apply_threads(backend, self.params["threads"])
        info = _device.verify(backend, dev)
        self.device_info = info
        self.record["device_used"] = info["device_used"]
        self.record["device_detail"] = info["detail"]
        if info["skip_reason"]:
            self.skip(info["skip_reason"])
        # several devices: DataParallel over the first `gpus` of each host, set before the model is built
        fields, why = _mesh.use_devices(self.dist, self.params)
        self.record.update(fields)
        if why:
            self.skip(why)
        keras.mixed_precision.set_global_policy(self.params["precision"])
        _device.set_random_seed(self.params["seed"])  # not TensorFlow's on another backend
        thr = self.record["threads_in_effect"] = _device.threads_in_effect(backend)
        print(f"backend={backend} device={dev} -> {info['device_used']} ({info['detail']}); "
              f"keras {keras.__version__}; threads intra-op {thr['intra_op']}, inter-op {thr['inter_op']} "
              f"on {thr['cpu_affinity']} cores")
        return info

    def _gpu_sampler(self):
        """The point's utilisation sampler (made once), on the GPUs it uses."""
        from helpers.measure.sampler import Sampler

        if self.sampler is None:
            self.sampler = Sampler(gpu_count=self.dist.gpus)
        return self.sampler

    def load_data(self):
        on_gpu = self.record.get("device_used") == "gpu"
        if on_gpu and not self._gpu_sampler().idle_from_run():
            self.sampler.idle_begin()  # the GPU idles while the host makes the data: its idle power meanwhile
        try:
            # a generator batches itself: it serves this process's batch (batch_size x gpus), and an epoch of
            # a multiple of the devices (the last batch, too, must split evenly over them)
            self.data = _workloads.load_data(self.workload.name, data_params(self.params))
            if self.dist.distributed:
                self._share_data()
        except PointSkipped:
            raise
        except Exception as exc:  # e.g. DataError: real data required but missing
            self.fail(exc)
            raise
        d = self.data
        placement = self.params["data_placement"]
        if placement in ("device", "staged") and d.train is not None:
            self.skip(f"data_placement '{placement}': this workload's data is a generator ({type(d.train).__name__}, "
                      "batched on the host as it reads); the data goes on the device only from arrays")
        self.record["data_placement"] = placement
        self.record.update(data_source=d.source, data_detail=d.detail, n_train=d.samples_per_epoch * self.dist.hosts,
                           n_train_process=d.samples_per_epoch, n_val=d.n_val_samples, data_info=d.extra,
                           # the report's learning check: chance is 1 / n_classes; data with nothing to learn says so
                           n_classes=int(d.n_classes) if d.n_classes else None, data_learnable=bool(d.learnable))
        if "input_dtype" in self.params:  # image workloads: float32 in [0, 1], or uint8 rescaled in the model
            self.record["input_dtype"] = self.params["input_dtype"]
        print(f"data: {d.source} ({d.detail}); {d.samples_per_epoch} training samples per epoch, "
              f"{d.n_val_samples} validation samples")
        return self.data

    def _share_data(self):
        """Several devices: arrays trimmed so every batch splits evenly over them; several hosts: this process's
        shard of them (a generator cannot be sharded yet: the point is skipped)."""
        d, plan = self.data, self.dist
        if d.train is not None:
            if plan.hosts > 1:
                self.skip(f"hosts={plan.hosts}: this workload's data is a generator ({type(d.train).__name__}); "
                          "several hosts feed shards of numpy arrays only")
            return
        d.x_train, d.y_train = _mesh.shard(d.x_train, d.y_train, plan)
        if d.x_val is not None:
            d.x_val, d.y_val = _mesh.shard(d.x_val, d.y_val, plan)
            if not len(d.x_val):
                d.x_val = d.y_val = None

    def build_model(self):
        try:
            self.model = _workloads.build_model(self.workload.name, self.params)
        except Exception as exc:
            self.fail(exc)
            raise
        if self.params["batchnorm_stats"] == "per_device":  # each device's own statistics
            from helpers.point import batchnorm

            self.record["batchnorm_per_device"] = {"layers": batchnorm.convert(self.model, batchnorm.mesh_devices()),
                                                   "groups": batchnorm.mesh_devices()}
        n = int(self.model.count_params())
        self.record["model_params"] = n
        self.record["expected_params"] = self.workload.expected_params
        return self.model

    def fit(self, model=None, data=None, **fit_kwargs):
        """Train for ``epochs`` epochs, timed per epoch, with the utilisation sampler running."""
        from helpers.measure.timing import deadline, make_epoch_timer

        model = model or self.model
        data = data or self.data
        # the GPUs this point uses (none on a CPU point: CUDA_VISIBLE_DEVICES is empty there)
        sampler = self._gpu_sampler()
        if sampler.has_gpu and self.record.get("device_used") == "gpu":
            # idle power, recorded apart: the runner's once-per-run figure, else the window opened while the
            # data was made
            sampler.idle_from_run() or sampler.idle_end(1.0)
        epochs = self.params["epochs"]
        placed = self._placed(data)  # data_placement 'device': the training set put there now, before the clock
        self.timer = make_epoch_timer(probe=sampler.energy_mj if sampler.energy_counter else None,
                                      min_epochs=epochs, min_steady_s=float(self.params.get("min_steady_s") or 0),
                                      deadline=deadline(),
                                      agree=_group.agree_stop if self.dist.hosts > 1 else None)
        kwargs = {**data.fit_kwargs, **fit_kwargs}
        if data.train is not None:  # a PyDataset / tf.data / generator: batching is its own
            args = (data.train,)
            kwargs.setdefault(F.STEPS_PER_EPOCH, data.steps_per_epoch)
            kwargs.setdefault("validation_data", data.val)
        else:
            args = (data.x_train, data.y_train) if placed is None else (placed,)
            if placed is None:  # on the device, the batches are made (helpers.point.placement)
                kwargs.setdefault("batch_size", per_process_batch(self.params))  # gpus > 1: global
            kwargs.setdefault("shuffle", True)
            kwargs.setdefault("validation_data",
                              (data.x_val, data.y_val) if data.x_val is not None else None)
        try:
            with sampler:
                self.sampler = sampler
                # as many epochs as the window needs: the timer stops training once `epochs` epochs ran and
                # the steady ones add up to `min_steady_s` (or the point's deadline is near)
                model.fit(*args, epochs=max(epochs, MAX_EPOCHS), verbose=0, callbacks=[self.timer], **kwargs)
        except Exception as exc:
            if placed is not None and hasattr(placed, "close"):
                placed.close()
            _figures.fit_figures(self)
            self.fail(exc)
            raise
        _figures.fit_figures(self)
        _figures.host_copy_figures(self, data)
        if self.params.get("profile"):  # after the timed window, its figures already taken (helpers.point.profiling)
            from helpers.point import profiling

            self.record.update(profiling.run(self, model, args, kwargs))
        if placed is not None and hasattr(placed, "stats"):  # 'staged': the thread stopped, what it did recorded
            placed.close()
            self.record["data_staged"] = {**self.record.get("data_staged", {}), **placed.stats()}
        return self.timer.history

    def _placed(self, data):
        """The training arrays as ``data_placement`` puts them (``helpers.point.placement.place``); None on the
        host path."""
        from helpers.point import placement

        try:
            return placement.place(self, data)
        except Exception as exc:  # e.g. the training set does not fit in the device's memory
            self.fail(exc)
            raise

    def finish(self) -> dict:
        """Write the ``ok`` record and return it."""
        if self.workload.describe is not None and self.model is not None:
            self.record["workload_info"] = self.workload.describe(self.model, self.params)
        self.record.update(_figures.limit_figures(self))
        if self.dist.hosts > 1:
            return finish_processes(self)
        rec = self._write("ok")
        print(f"record: {self.path}")
        if rec.get(F.SAMPLES_PER_S):
            print(f"first epoch {rec['first_epoch_s']:.3f} s; steady state "
                  f"{rec['median_epoch_s']:.3f} s/epoch (median of {len(rec['epoch_s'])}), "
                  f"{rec['samples_per_s']:.0f} samples/s")
        return rec


def _record_notebook() -> str:
    """Path of the executed notebook (set by the runner), else the source notebook's name."""
    return os.environ.get("CGB_EXECUTED_NOTEBOOK", "")
