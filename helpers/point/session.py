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
"""

from __future__ import annotations

import datetime as dt
import math
import os
import time
import traceback
from pathlib import Path
from types import ModuleType

from helpers import params as _params
from helpers import workloads as _workloads
from helpers.measure.fingerprint import fingerprint
from helpers.measure.machine import machine_key
from helpers.paths import outputs_dir
from helpers.point import device as _device
from helpers.point import distribution as _distribution
from helpers.record import store as _record

MAX_EPOCHS = 1_000_000  # fit's epoch count; the timer stops it (``min_steady_s``)

# Names IPython puts in a notebook's namespace: not parameters.
_IPYTHON_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


class PointSkipped(Exception):
    """The point cannot run as asked (no usable GPU, backend not installed); its record says why."""


def param_spec(workload: str) -> dict:
    w = _workloads.get(workload)
    return {**_params.COMMON, **w.extra_params}


def collect(namespace: dict) -> dict:
    """The parameters from a notebook namespace; an unknown injected name is an error.

    papermill injects parameters as assignments: a typo'd name would otherwise be silently ignored.
    """
    workload = namespace.get("workload")
    if workload not in _workloads.REGISTRY:
        _params.validate({"workload": workload}, "notebook parameters",
                         workloads=_workloads.names())
    spec = param_spec(workload)
    unknown = {k: v for k, v in namespace.items()
               if not k.startswith("_") and k not in _IPYTHON_NAMES and k not in spec
               and not isinstance(v, ModuleType) and not callable(v)}
    params = {k: namespace[k] for k in spec if k in namespace}
    _params.validate({**params, **unknown}, "notebook parameters", spec=spec,
                     workloads=_workloads.names())
    missing = [k for k in spec if k not in params]
    if missing:
        raise _params.ParamError(f"notebook parameters: missing keys {missing}")
    _distribution.check(params, "notebook parameters", host_devices=_distribution.host_devices_allowed())
    _params.check_combination(params, "notebook parameters")
    return params


def begin(namespace_or_params: dict) -> Point:
    """Validate the parameters, force backend and device (before ``import keras``), return the point."""
    return Point(collect(namespace_or_params))


class Point:
    def __init__(self, params: dict):
        self.params = dict(params)
        self.workload = _workloads.get(params["workload"])
        self.started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.t_start = time.perf_counter()
        self.point_id = params.get("point_id") or _record.point_id(params, machine_key())
        self.folder = self._folder(params.get("output_dir", ""))
        self.record = _record.empty_record(self.params, self.point_id)
        self.record.update(started_at=self.started_at, source=self.workload.source,
                           notebook=str(_record_notebook()))
        self.device_info: dict = {}
        self.dist = _distribution.Plan()  # devices and hosts of this point (``verify`` sets it up)
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
        if params.get("threads", 0) > cores:
            self.skip(f"threads={params['threads']} but this machine lets the process use {cores} cores")
        self.record["env_forced"] = _device.force(backend, dev, params.get("threads", 0))
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
        self.path = _record.write_record(self.record, self.folder)
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
            self.dist = _distribution.initialize(self.params, on_stuck=lambda why: self._write("failed", why))
        except Exception as exc:
            self.fail(exc)
            raise
        self.record["process_id"] = self.dist.process_id
        if self.dist.process_id:  # a process other than 0 writes its own record apart; process 0 the merged one
            self.folder = self.folder / _distribution.PROCESS_FOLDER
        _device.apply_threads(backend, self.params.get("threads", 0))
        info = _device.verify(backend, dev)
        self.device_info = info
        self.record["device_used"] = info["device_used"]
        self.record["device_detail"] = info["detail"]
        if info["skip_reason"]:
            self.skip(info["skip_reason"])
        # several devices: DataParallel over the first `gpus` of each host, set before the model is built
        fields, why = _distribution.use_devices(self.dist, self.params)
        self.record.update(fields)
        if why:
            self.skip(why)
        keras.mixed_precision.set_global_policy(self.params.get("precision", "float32"))
        _device.set_random_seed(self.params.get("seed", 0))  # not TensorFlow's on another backend
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
            self.data = _workloads.load_data(self.workload.name, _distribution.data_params(self.params))
            if self.dist.distributed:
                self._share_data()
        except PointSkipped:
            raise
        except Exception as exc:  # e.g. DataError: real data required but missing
            self.fail(exc)
            raise
        d = self.data
        placement = self.params.get("data_placement", "host")
        if placement == "device" and d.train is not None:
            self.skip(f"data_placement 'device': this workload's data is a generator ({type(d.train).__name__}, "
                      "batched on the host as it reads); the data goes on the device only from arrays")
        self.record["data_placement"] = placement
        self.record.update(data_source=d.source, data_detail=d.detail, n_train=d.samples_per_epoch * self.dist.hosts,
                           n_train_process=d.samples_per_epoch, n_val=d.n_val_samples, data_info=d.extra)
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
        d.x_train, d.y_train = _distribution.shard(d.x_train, d.y_train, plan)
        if d.x_val is not None:
            d.x_val, d.y_val = _distribution.shard(d.x_val, d.y_val, plan)
            if not len(d.x_val):
                d.x_val = d.y_val = None

    def build_model(self):
        try:
            self.model = _workloads.build_model(self.workload.name, self.params)
        except Exception as exc:
            self.fail(exc)
            raise
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
                                      agree=_distribution.agree_stop if self.dist.hosts > 1 else None)
        kwargs = {**data.fit_kwargs, **fit_kwargs}
        if data.train is not None:  # a PyDataset / tf.data / generator: batching is its own
            args = (data.train,)
            kwargs.setdefault("steps_per_epoch", data.steps_per_epoch)
            kwargs.setdefault("validation_data", data.val)
        else:
            args = (data.x_train, data.y_train) if placed is None else (placed,)
            if placed is None:  # on the device, the batches are made (helpers.point.placement)
                kwargs.setdefault("batch_size", _distribution.per_process_batch(self.params))  # gpus > 1: global
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
            self._collect()
            self.fail(exc)
            raise
        self._collect()
        self._host_copy(data)
        if self.params.get("profile"):  # after the timed window, its figures already taken (helpers.point.profiling)
            from helpers.point import profiling

            self.record.update(profiling.run(self, model, args, kwargs))
        return self.timer.history

    def _placed(self, data):
        """``data_placement: device``: the training arrays as batches on the device (``helpers.point.placement``);
        None on the host path."""
        if self.params.get("data_placement", "host") != "device" or data.train is not None:
            return None
        from helpers.point import placement

        t0 = time.perf_counter()
        try:
            placed = placement.device_dataset(data.x_train, data.y_train, _distribution.per_process_batch(self.params),
                                              self.params["backend"], seed=self.params.get("seed", 0))
        except Exception as exc:  # e.g. the training set does not fit in the device's memory
            self.fail(exc)
            raise
        self.record["data_on_device"] = {"bytes": placed.bytes, "batches": len(placed),
                                         "put_s": round(time.perf_counter() - t0, 4),
                                         "shuffle": "once into batches; the batch order every epoch"}
        print(f"data on the device: {len(placed)} batches, {placed.bytes / 1e6:.1f} MB, put there in "
              f"{self.record['data_on_device']['put_s']:.2f} s (not timed)")
        return placed

    def _host_copy(self, data):
        """A GPU point fed from arrays: the measured copy of one batch from the host, after training (outside the
        timed window), and its share of a step; where it is not measured, why."""
        rec = self.record
        if rec.get("device_used") != "gpu":
            rec["host_copy_reason"] = "not measured: a CPU point trains where its data is"
            return
        if data.train is not None:
            rec["host_copy_reason"] = "not measured: the data is a generator (it batches and copies on its own)"
            return
        from helpers.point import placement

        try:
            rec.update(placement.host_copy(data.x_train, data.y_train, _distribution.per_process_batch(self.params),
                                           self.params["backend"], step_s=rec.get("step_s")))
        except Exception as exc:  # a measurement beside the point's figures: never fails the point
            rec["host_copy_reason"] = f"not measured: {type(exc).__name__}: {exc}"[:500]

    def _collect(self):
        from helpers.measure.sampler import energy_figures, framework_peak_memory
        from helpers.measure.timing import spread, steady_figures

        t, s, rec = self.timer, self.sampler, self.record
        if t is None:
            return
        train_s = list(t.train_s)  # each epoch's training part (its validation timed apart)
        n = rec.get("n_train") or 0  # global samples per epoch (every process's shard)
        bs = _distribution.global_batch(self.params)
        steps = (self.data.steps_per_epoch if self.data is not None and self.data.steps_per_epoch
                 else (math.ceil(n / bs) if n else None))
        rec["history"] = t.history
        rec["epoch_total_s"] = list(t.epoch_s)  # every epoch, validation included
        rec["val_s"] = list(t.val_s)  # every epoch's validation part (0.0 without validation)
        if train_s:
            rec["first_epoch_s"] = train_s[0]
        steady = train_s[1:]
        rec["epoch_s"] = steady  # steady-state epochs, training only
        rec["epochs_run"] = len(train_s)
        rec["steady_s"] = round(math.fsum(steady), 6)  # the timing window: what the figure rests on
        rec["window_stopped_by"] = t.stopped_by  # epochs, window (extended past `epochs`), deadline, another process
        rec["epoch_with_val_s"] = list(t.epoch_s[1:])  # the same epochs with their validation
        rec["median_epoch_with_val_s"] = spread(rec["epoch_with_val_s"])["median"]
        rec["timing"] = "epoch bounds read after a device sync; validation timed apart"
        rec["steps_per_epoch"] = steps
        rec.update(steady_figures(steady, n, steps, rec.get("first_epoch_s")))
        if s is not None:
            if len(t.bounds) > 1 and s.window(t.bounds[1][0], t.bounds[-1][1]):
                rec["utilisation"] = s.summary(t.bounds[1][0], t.bounds[-1][1])
                rec["utilisation"]["window"] = "steady-state epochs"
            else:  # epochs shorter than the sampling interval
                rec["utilisation"] = s.summary()
                rec["utilisation"]["window"] = "whole fit"
            rec["gpu_indices_used"] = list(s.gpu_indices)
            # energy: GPU points only (on a CPU point no GPU is used), from the energy counter at the
            # synchronised epoch bounds, else mean sampled power x time (energy_method says which)
            if s.has_gpu and rec.get("device_used") == "gpu":
                rec.update(s.idle)
                rec.update(energy_figures(t.marks, train_s, s.idle.get("idle_power_w"),
                                          rec["utilisation"].get("power_w_mean")))
            rec["utilisation_timeline"] = s.timeline()
            rec["epoch_bounds_s"] = [(a - s.t0, b - s.t0) for a, b in t.bounds]
        rec["utilisation"].update(framework_peak_memory(self.params["backend"],
                                                        rec.get("device_used") or "cpu"))
        rec["utilisation"].update(_distribution.device_memory(getattr(self, "dist", None)))  # each mesh device's
        if rec.get("device") == "gpu" and "gpu_peak_mb" in rec["utilisation"]:
            rec["utilisation"]["gpu_mem_peak_mb"] = rec["utilisation"]["gpu_peak_mb"]

    def finish(self) -> dict:
        """Write the ``ok`` record and return it."""
        if self.workload.describe is not None and self.model is not None:
            self.record["workload_info"] = self.workload.describe(self.model, self.params)
        self.record.update(self._limit())
        if self.dist.hosts > 1:
            return self._finish_hosts()
        rec = self._write("ok")
        print(f"record: {self.path}")
        if rec.get("samples_per_s"):
            print(f"first epoch {rec['first_epoch_s']:.3f} s; steady state "
                  f"{rec['median_epoch_s']:.3f} s/epoch (median of {len(rec['epoch_s'])}), "
                  f"{rec['samples_per_s']:.0f} samples/s")
        return rec

    def _finish_hosts(self) -> dict:
        """Several hosts: each process writes its own record (under ``.processes``), then process 0 gathers
        them all through JAX's runtime and writes the point's record, merged (``distribution.merge``)."""
        pid = self.dist.process_id
        own = self.folder if pid else self.folder / _distribution.PROCESS_FOLDER
        rec = self.record
        rec.update(status="ok", reason=None, duration_s=round(time.perf_counter() - self.t_start, 3))
        name = _process_record_name(rec, pid)
        self.path = _record.write_atomic(own / name, rec)
        print(f"process {pid} record: {self.path}")
        if pid:  # where the point's record goes, a pointer (written before the gather, so on a folder the
            # processes share process 0's merged record, written after it, replaces it)
            stub = _record.empty_record(self.params, self.point_id)
            stub.update(status="skipped", process_id=pid, fingerprint=rec.get("fingerprint"),
                        started_at=self.started_at, duration_s=rec["duration_s"],
                        reason=f"process {pid} of {self.dist.hosts}: its figures are in process 0's merged record "
                               f"(its own record: {_distribution.PROCESS_FOLDER}/{name})")
            _record.write_record(stub, own.parent)
        records = _distribution.gather(rec)
        # every process leaves JAX's runtime here, together: a coordinator whose kernel ended first (the notebook's
        # later cells are quicker on one process) would take the runtime down under the others (SIGABRT)
        _distribution.leave()
        if pid:
            return rec
        merged = _distribution.merge(records)
        merged["duration_s"] = round(time.perf_counter() - self.t_start, 3)
        merged["process_records"] = [  # on each process's host, beside its point's record
            f"{_distribution.PROCESS_FOLDER}/{_process_record_name(r, i)}" for i, r in enumerate(records)]
        self.record = merged
        self.path = _record.write_record(merged, self.folder)
        print(f"record (merged from {len(records)} processes): {self.path}; "
              f"{merged.get('samples_per_s') or 0:.0f} samples/s over every process")
        return merged

    def _limit(self) -> dict:
        """FLOPs per sample of this model's training step (analytical, ``helpers.measure.flops``), achieved TFLOP/s and
        MFU against this device's peak; a failure to count is recorded, never fails the point."""
        from helpers.measure import flops as _flops
        from helpers.measure import peaks as _peaks

        rec, p = self.record, self.params
        out = {"steps_per_execution": p.get("steps_per_execution", 1)}
        try:
            c = _flops.analytic(self.model)
            fp = rec.get("fingerprint") or {}
            names = fp.get("gpu_names") or []
            out.update(_peaks.limit_fields(
                c.train(p["batch_size"]), rec.get("samples_per_s"), rec.get("device_used"),
                gpu_name=names[0] if names else None, precision=p.get("precision", "float32"),
                calibration=fp.get("calibration"), threads=p.get("threads") or None,
                gpus=self.dist.gpus * self.dist.hosts))
            out.update(flops_source="analytic, counted on the trained model", flops_forward=c.forward,
                       flops_notes=c.notes)
        except Exception as exc:  # a layer the count does not know how to walk
            out.update(flops_per_sample=None, mfu=None, mfu_reason=f"FLOPs not counted: {type(exc).__name__}: {exc}")
        return out


def _process_record_name(rec: dict, process_id: int) -> str:
    """The file name of one process's record of a point run on several hosts: the point's, ``-p<id>`` added."""
    return _record.record_name(rec["params"], rec["point_id"])[:-len(".json")] + f"-p{process_id}.json"


def _record_notebook() -> str:
    """Path of the executed notebook (set by the runner), else the source notebook's name."""
    return os.environ.get("CGB_EXECUTED_NOTEBOOK", "")
