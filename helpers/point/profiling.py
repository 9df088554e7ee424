"""The ``profile`` knob: a few steady-state steps under the framework's own profiler, after the timed
window, and one step's breakdown read from the trace.

    fields = run(point, model, fit_args, fit_kwargs)    # in Point.fit, after the timed figures are collected
    record.update(fields)                               # step_breakdown (or None and step_breakdown_reason)

The same model trains on (its compiled step reused: nothing is recompiled) for four short epochs of ``steps`` steps
each, every bound read after a device sync: a warm-up epoch (a new iterator over the data), one without the
profiler, one under it, one without again. The profiled epoch runs inside the annotation
``trace_breakdown.WINDOW``; the profiler is JAX's (``jax.profiler``: a Perfetto trace and the XSpace TensorBoard
reads), torch's (``torch.profiler``: a Chrome trace) or TensorFlow's (``tf.profiler``: the XSpace, and a Chrome
trace made from it here). The files stay beside the record in ``<record name>.trace/``, at most
``TRACE_MAX_BYTES`` (more: deleted, the breakdown kept, the record says so). The profiler's own overhead is the
profiled epoch's step over the unprofiled ones'. Anything that fails here leaves the timed figures as they are:
``step_breakdown`` is None and ``step_breakdown_reason`` says why.
"""

from __future__ import annotations

import gzip
import math
import os
import shutil
import statistics
import time
from pathlib import Path

from helpers.measure import trace_breakdown as tb
from helpers.measure import trace_events as te

WINDOW_S = 0.5  # seconds of profiled steps aimed at (a trace of a few MB at most)
MIN_STEPS, MAX_STEPS = 3, 20
# a trace kept beside the record: at most this (an outputs folder stays portable); CGB_TRACE_MAX_MB sets another
TRACE_MAX_BYTES = int(float(os.environ.get("CGB_TRACE_MAX_MB") or 48) * 2**20)
WARM, OFF, ON, OFF2 = range(4)  # the four epochs of the profiling fit
OPEN_HOW = {
    "jax": "Perfetto: open perfetto_trace.json.gz at https://ui.perfetto.dev; TensorBoard: tensorboard --logdir "
           "<this folder> (Profile tab, from the tensorboard-plugin-profile package)",
    "torch": "Perfetto: open the .pt.trace.json.gz at https://ui.perfetto.dev (or chrome://tracing)",
    "tensorflow": "TensorBoard: tensorboard --logdir <this folder> (Profile tab); Perfetto: open trace.json.gz at "
                  "https://ui.perfetto.dev",
}


def plan_steps(step_s: float | None, batches: int | None, steps_per_execution: int = 1) -> int:
    """Steps per profiling epoch: about ``WINDOW_S`` of them, between ``MIN_STEPS`` and ``MAX_STEPS``, a multiple of
    ``steps_per_execution``, no more than one pass over the data holds."""
    n = MAX_STEPS if not step_s or step_s <= 0 else math.ceil(WINDOW_S / step_s)
    n = min(MAX_STEPS, max(MIN_STEPS, n))
    spe = max(1, steps_per_execution)
    n = spe * max(1, math.ceil(n / spe))
    if batches:
        n = min(n, max(spe, spe * (batches // spe)) if batches >= spe else batches)
    return max(1, n)


def trace_folder(folder: Path, record_name: str) -> Path:
    return Path(folder) / (record_name[: -len(".json")] + ".trace")


# ------------------------------------------------------------------ the profilers
class _Profiler:
    source = ""
    name = ""

    def __init__(self, folder: Path, device: str):
        self.folder, self.device = folder, device
        self.annotation = None

    def start(self):  # pragma: no cover - per backend
        raise NotImplementedError

    def begin(self):
        self.annotation.__enter__()

    def end(self):
        self.annotation.__exit__(None, None, None)

    def stop(self) -> list[te.Ev]:  # pragma: no cover - per backend
        raise NotImplementedError


class _Jax(_Profiler):
    source, name = "xla", "jax.profiler trace (create_perfetto_trace: perfetto_trace.json.gz)"

    def start(self):
        import jax

        opts = jax.profiler.ProfileOptions()
        opts.python_tracer_level = 0  # Python's own calls are not traced: less overhead; their time is host_only
        jax.profiler.start_trace(str(self.folder), create_perfetto_trace=True, profiler_options=opts)
        self.annotation = jax.profiler.TraceAnnotation(tb.WINDOW)

    def stop(self):
        import jax

        jax.profiler.stop_trace()
        found = sorted(self.folder.rglob("perfetto_trace.json.gz"))
        if not found:
            raise tb.TraceError("jax.profiler wrote no perfetto_trace.json.gz")
        for dup in self.folder.rglob("*.trace.json.gz"):  # the same trace again (TensorBoard reads the .xplane.pb)
            dup.unlink()
        return te.read_chrome(found[-1])


class _Torch(_Profiler):
    source, name = "torch", "torch.profiler (export_chrome_trace, gzipped)"

    def start(self):
        import torch
        from torch.profiler import ProfilerActivity, profile, record_function

        acts = [ProfilerActivity.CPU]
        if self.device == "gpu" and torch.cuda.is_available():
            acts.append(ProfilerActivity.CUDA)
        self.prof = profile(activities=acts)
        self.prof.start()
        self.annotation = record_function(tb.WINDOW)

    def stop(self):
        import socket

        self.prof.stop()
        raw = self.folder / "trace.json"
        self.prof.export_chrome_trace(str(raw))
        out = self.folder / f"{socket.gethostname()}.pt.trace.json.gz"
        with open(raw, "rb") as src, gzip.open(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
        raw.unlink()  # no bare .json beside the records (the report reads every *.json as a record)
        return te.read_chrome(out)


class _TensorFlow(_Profiler):
    source, name = "tensorflow", "tf.profiler (XSpace .xplane.pb; trace.json.gz made from it)"

    def start(self):
        import tensorflow as tf

        opts = tf.profiler.experimental.ProfilerOptions(host_tracer_level=2, python_tracer_level=0,
                                                        device_tracer_level=1)
        tf.profiler.experimental.start(str(self.folder), options=opts)
        self.annotation = tf.profiler.experimental.Trace(tb.WINDOW)

    def stop(self):
        import tensorflow as tf

        tf.profiler.experimental.stop()
        found = sorted(self.folder.rglob("*.xplane.pb"))
        if not found:
            raise tb.TraceError("tf.profiler wrote no .xplane.pb")
        events = te.read_xplane(found[-1])
        te.write_chrome(events, found[-1].parent / "trace.json.gz")
        return events


PROFILERS = {"jax": _Jax, "torch": _Torch, "tensorflow": _TensorFlow}


# ------------------------------------------------------------------ the profiling fit
def _window_callback(prof: _Profiler, sync, clock=time.perf_counter):
    import keras

    class ProfileWindow(keras.callbacks.Callback):
        """Epoch bounds after a device sync; the profiler around epoch ``ON``. No batch hook (each would sync)."""

        def __init__(self):
            super().__init__()
            self.seconds: dict[int, float] = {}
            self.events: list | None = None
            self._t0 = 0.0
            self._open = False

        def on_epoch_begin(self, epoch, logs=None):
            sync()
            if epoch == ON:
                prof.start()
                self._open = True
            self._t0 = clock()
            if epoch == ON:
                prof.begin()

        def on_epoch_end(self, epoch, logs=None):
            sync()
            self.seconds[epoch] = clock() - self._t0
            if epoch == ON:
                prof.end()
                self._open = False
                self.events = prof.stop()

        def close(self):
            """After a failure inside the window: the profiler stopped, so the process does not go on tracing."""
            if self._open:
                self._open = False
                try:
                    prof.stop()
                except Exception:
                    pass

    return ProfileWindow()


def _folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def run(point, model, fit_args: tuple, fit_kwargs: dict) -> dict:
    """Profile a few steps of ``point``'s model (after its timed window); the record's fields. Never raises."""
    from helpers.record.ids import record_name

    rec, p = point.record, point.params
    backend = p["backend"]
    device = rec.get("device_used") or p["device"]
    try:
        if getattr(point.dist, "hosts", 1) > 1:
            return _none("not profiled: a point of several hosts (each process would trace its own shard)")
        if backend not in PROFILERS:
            return _none(f"no profiler for backend {backend!r}")
        spe = int(p.get("steps_per_execution", 1) or 1)
        batches = rec.get("steps_per_epoch")
        if point.data is not None and point.data.train is None and rec.get("n_train_process"):
            batches = math.ceil(rec["n_train_process"] / max(1, _batch(point)))
        steps = plan_steps(rec.get("step_s"), batches, spe)
        if not _time_left(point, steps, rec.get("step_s")):
            return _none("not profiled: the point's deadline is too near for the profiling epochs")
        folder = trace_folder(point.folder, record_name(p, point.point_id))
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        return _profile(point, model, fit_args, fit_kwargs, backend, device, steps, folder)
    except Exception as exc:  # the timed figures stand; the breakdown says why it is missing
        return _none(f"profiling failed: {type(exc).__name__}: {exc}"[:600])


def _batch(point) -> int:
    from helpers.point.distribution_params import per_process_batch

    return per_process_batch(point.params)


def _time_left(point, steps: int, step_s: float | None) -> bool:
    from helpers.measure.timing import deadline as point_deadline

    deadline = point_deadline()
    if deadline is None:
        return True
    need = 4 * steps * (step_s or 1.0) * 2 + 30.0  # four epochs, the profiler's own cost, its start and parse
    return time.perf_counter() + need < deadline


def _profile(point, model, fit_args, fit_kwargs, backend, device, steps, folder) -> dict:
    from helpers.measure.timing import device_sync

    prof = PROFILERS[backend](folder, device)
    try:
        cb = _window_callback(prof, lambda: device_sync(model, backend))
    except ImportError as exc:
        return _none(f"profiler not available: {exc}")
    kwargs = {k: v for k, v in fit_kwargs.items() if k not in ("validation_data", "epochs", "callbacks", "verbose")}
    kwargs["steps_per_epoch"] = steps
    t0 = time.perf_counter()
    try:
        model.fit(*fit_args, epochs=OFF2 + 1, verbose=0, callbacks=[cb], **kwargs)
    finally:
        cb.close()
    if cb.events is None or ON not in cb.seconds:
        return _none("the profiled epoch did not run (the data ran out?)")
    off = [cb.seconds[e] / steps for e in (OFF, OFF2) if e in cb.seconds]
    on = cb.seconds[ON] / steps
    b = tb.breakdown(cb.events, steps, device, source=prof.source)
    b.update(
        profiler=prof.name,
        clock_step_ms=on * 1000,  # the profiled epoch on the clock (synced bounds) over its steps
        unprofiled_step_ms=statistics.median(off) * 1000 if off else None,
        unprofiled_steps_ms=[x * 1000 for x in off],
        profiler_overhead=(on / statistics.median(off)) if off and statistics.median(off) > 0 else None,
        timed_step_ms=(point.record.get("step_s") or 0) * 1000 or None,  # the record's figure (timed window)
        profiling_s=round(time.perf_counter() - t0, 3),
    )
    b["trace"] = _keep(folder, backend)
    return {"step_breakdown": b, "step_breakdown_reason": None}


def _keep(folder: Path, backend: str) -> dict:
    """What stays of the trace: the folder (beside the record) when it is small enough, else nothing, and why."""
    size = _folder_bytes(folder)
    files = sorted(str(f.relative_to(folder)) for f in folder.rglob("*") if f.is_file())
    if size > TRACE_MAX_BYTES:
        shutil.rmtree(folder, ignore_errors=True)
        return {"path": None, "bytes": size,
                "reason": f"{size / 2**20:.0f} MB, over the {TRACE_MAX_BYTES // 2**20} MB kept beside a record: "
                          "deleted (the breakdown was read from it first)"}
    return {"path": folder.name, "relative_to": "the record's folder", "files": files, "bytes": size,
            "open": OPEN_HOW[backend]}


def _none(reason: str) -> dict:
    return {"step_breakdown": None, "step_breakdown_reason": reason}
