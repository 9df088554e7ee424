"""Epoch timing: the first epoch (tracing, compilation, autotuning) apart from the steady state.

The callback hooks epochs (and the validation run inside ``fit``) only. In Keras 3 any
``on_train_batch_*`` hook turns off asynchronous dispatch and syncs the device every step, so there
is none here (and the timed ``fit`` runs with ``verbose=0``: the progress bar is a per-batch hook too).

A clock is read only after the device has finished the work before it (``device_sync``): JAX, and TF
and torch on a GPU, return from a step once it is *dispatched*. Keras calls ``evaluate()`` right after
the epoch's last training step was dispatched, so without a sync the unfinished training would run
inside the validation window (measured on a 2-core CPU with JAX: 338 samples/s without validation,
112,085 with it). The sync waits for the model's variables as the last step left them: JAX blocks on
the arrays (Keras' JAX trainer re-attaches them to the model, ``jax_state_sync()``, before it calls
``evaluate()`` and before ``on_epoch_end``), TF copies one trainable variable to the host, torch
synchronises CUDA.

Per epoch the timer keeps the whole epoch (``epoch_s``), its validation part (``val_s``) and the
training part (``train_s`` = whole - validation); with a ``probe`` (e.g. the GPUs' energy counters,
``helpers.measure.sampler.Sampler.energy_mj``) it also reads the probe at the same synchronised bounds
(``marks``). ``EpochClock`` holds that logic without Keras (unit-testable); ``make_epoch_timer`` wraps
it in a Keras callback.
"""

from __future__ import annotations

import math
import statistics
import time

from helpers.record import fields as F


def spread(values: list[float]) -> dict:
    """Median, quartiles, min, max, mean and standard deviation of ``values`` (None when empty)."""
    if not values:
        return {"median": None, "q1": None, "q3": None, "min": None, "max": None, "mean": None,
                "std": None, "n": 0}
    vals = sorted(values)
    if len(vals) >= 2:
        q1, _, q3 = statistics.quantiles(vals, n=4, method="inclusive")
    else:
        q1 = q3 = vals[0]
    return {"median": statistics.median(vals), "q1": q1, "q3": q3, "min": vals[0], "max": vals[-1],
            "mean": statistics.fmean(vals), "std": statistics.pstdev(vals), "n": len(vals)}


def steady_figures(steady: list[float], n: int, steps: int | None, first: float | None) -> dict:
    """A run's figures from its steady epochs (seconds each, ``n`` samples each, ``steps`` steps each): their
    spread and median, the step, samples/s with its spread, and the first epoch's excess over the median
    (compilation). Only the spread and median when there is no steady epoch."""
    st = spread(steady)
    out = {F.EPOCH_SPREAD: st, F.MEDIAN_EPOCH_S: st["median"]}
    if st["median"]:
        out.update(step_s=st["median"] / steps if steps else None, samples_per_s=n / st["median"] if n else None,
                   samples_per_s_spread={"min": n / st["max"], "max": n / st["min"], "q1": n / st["q3"],
                                         "q3": n / st["q1"]})
        if first is not None:
            out[F.COMPILE_OVERHEAD_S] = first - st["median"]
    return out


def device_sync(model, backend: str) -> None:
    """Wait until the device has finished every step dispatched so far for ``model``.

    Reads the model's state as the last dispatched step left it, so the wait is exactly "the work
    so far": no extra computation is queued.
    """
    if model is None:
        return
    if backend == "jax":
        import jax

        variables = list(model.trainable_variables) + list(model.non_trainable_variables)
        if getattr(model, "optimizer", None) is not None:
            variables += list(model.optimizer.variables)
        values = [v.value for v in variables if getattr(v, "_value", True) is not None]
        jax.block_until_ready(values)
    elif backend == "tensorflow":
        import keras

        weights = list(model.trainable_variables)
        if weights:  # the smallest trainable variable: a few bytes copied to the host, after every step
            smallest = min(weights, key=lambda v: math.prod(v.shape))
            keras.ops.convert_to_numpy(smallest.value)
    elif backend == "torch":
        import torch

        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.synchronize()


class EpochClock:
    """Epoch and validation bounds, each read after ``sync()``; ``probe()`` read at the same bounds.

    ``epoch_begin``/``test_begin``/``test_end``/``epoch_end`` are called by the Keras callback (or a
    test). ``marks[i]`` holds the probe's readings of epoch ``i`` at ``begin``, ``test_begin``,
    ``test_end`` and ``end`` (``test_*`` are None when the epoch had no validation).
    """

    def __init__(self, sync=None, probe=None, printer=print, clock=time.perf_counter, min_epochs=2,
                 min_steady_s=0.0, deadline=None):
        self.sync = sync or (lambda: None)
        self.min_epochs = min_epochs  # the first (compile) epoch and at least min_epochs - 1 steady ones
        self.min_steady_s = min_steady_s  # ... whose training parts add up to this many seconds
        self.deadline = deadline  # a clock() value: no epoch starts that would end after it
        self.stopped_by: str | None = None  # why training stopped when it did (``done``)
        self._last_print = -math.inf
        self.probe = probe
        self.printer = printer
        self.clock = clock
        self.epoch_s: list[float] = []  # whole epoch: training + validation
        self.val_s: list[float] = []  # validation part (0.0 without validation)
        self.train_s: list[float] = []  # training part: epoch_s - val_s
        self.bounds: list[tuple[float, float]] = []  # clock (start, end) per epoch
        self.marks: list[dict] = []  # probe readings per epoch (empty without a probe)
        self.history: dict[str, list[float]] = {}
        self._t_epoch = self._t_test = None
        self._val = 0.0
        self._mark: dict = {}

    def _read(self, key: str) -> None:
        if self.probe is not None:
            self._mark[key] = self.probe()

    def epoch_begin(self) -> None:
        # the previous epoch ended synchronised and nothing was dispatched since: no sync needed
        self._mark = {"begin": None, "test_begin": None, "test_end": None, "end": None}
        self._read("begin")
        self._t_epoch = self.clock()
        self._val = 0.0

    def test_begin(self) -> None:
        self.sync()  # the epoch's training steps finish inside the training window
        self._t_test = self.clock()
        self._read("test_begin")

    def test_end(self, logs=None) -> None:
        if self._t_test is None:
            return
        for v in (logs or {}).values():
            float(v)
        self.sync()
        self._val += self.clock() - self._t_test
        self._read("test_end")
        self._t_test = None

    def epoch_end(self, epoch: int, logs=None) -> None:
        values = {k: float(v) for k, v in (logs or {}).items()}  # the last loss waits for every step
        self.sync()
        t = self.clock()
        self._read("end")
        self.epoch_s.append(t - self._t_epoch)
        self.val_s.append(self._val)
        self.train_s.append(t - self._t_epoch - self._val)
        self.bounds.append((self._t_epoch, t))
        if self.probe is not None:
            self.marks.append(dict(self._mark))
        for k, v in values.items():
            self.history.setdefault(k, []).append(v)
        # every epoch up to ``min_epochs``, then at most one line a second (a 2-s window of 1-ms epochs
        # would otherwise print thousands of lines into the notebook)
        if epoch + 1 <= self.min_epochs or t - self._last_print >= 1.0:
            self._last_print = t
            shown = " ".join(f"{k}={v:.4g}" for k, v in values.items())
            val = f" (validation {self._val:.3f} s)" if self._val else ""
            steady = f"; steady window {self.steady_s:.2f} s" if len(self.train_s) > 1 else ""
            self.printer(f"epoch {epoch + 1}: {self.epoch_s[-1]:.3f} s{val}  {shown}{steady}")

    @property
    def steady_s(self) -> float:
        """Seconds of steady-state training so far (every epoch's training part but the first's)."""
        return math.fsum(self.train_s[1:])

    def done(self, agree=None) -> bool:
        """Whether training may stop now: ``min_epochs`` epochs and a steady window of ``min_steady_s``
        (or the ``deadline`` would be passed by one more epoch). Sets ``stopped_by``. ``agree(done) -> bool``
        (several processes of one point: ``helpers.point.process_group.agree_stop``) makes it the processes'
        common answer."""
        mine = self._done()
        if agree is None:
            return mine
        agreed = bool(agree(mine))
        if agreed and not mine:
            self.stopped_by = "another process"  # its window (or deadline) came first
        return agreed

    def _done(self) -> bool:
        if len(self.train_s) < self.min_epochs:
            return False
        if self.steady_s >= self.min_steady_s:
            self.stopped_by = "window" if len(self.train_s) > self.min_epochs else "epochs"
            return True
        if self.deadline is not None and self.epoch_s and self.clock() + self.epoch_s[-1] > self.deadline:
            self.stopped_by = "deadline"
            return True
        return False


def make_epoch_timer(printer=print, probe=None, min_epochs=2, min_steady_s=0.0, deadline=None, agree=None):
    """A Keras callback recording wall time per epoch, its validation part, and ``probe`` readings.

    ``agree``: with several processes of one point, ``agree(done) -> bool`` turns this process's decision to stop
    into the processes' one (``helpers.point.process_group.agree_stop``: all stop once any is done). Each process
    times its own epochs, so alone they would stop after different epochs, and the one that trains on waits in the
    step's collective for ever (seen on two H200s: the point hung until the runner's timeout).

    The returned callback has the ``EpochClock`` lists as attributes (``epoch_s``, ``val_s``,
    ``train_s``, ``bounds``, ``marks``, ``history``). Run ``fit`` with more epochs than ``min_epochs``:
    the callback stops training (``model.stop_training``, checked by Keras after each epoch: the same
    model goes on, nothing is recompiled) once ``EpochClock.done()``.
    """
    import keras

    backend = keras.backend.backend()

    class EpochTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.clock = EpochClock(sync=lambda: device_sync(self.model, backend), probe=probe,
                                    printer=printer, min_epochs=min_epochs, min_steady_s=min_steady_s,
                                    deadline=deadline)
            self._in_fit = False

        def __getattr__(self, name):  # epoch_s, val_s, train_s, bounds, marks, history
            clock = self.__dict__.get("clock")
            if clock is not None and hasattr(clock, name):
                return getattr(clock, name)
            raise AttributeError(name)

        def on_train_begin(self, logs=None):
            self._in_fit = True

        def on_train_end(self, logs=None):
            self._in_fit = False

        def on_epoch_begin(self, epoch, logs=None):
            self.clock.epoch_begin()

        def on_test_begin(self, logs=None):
            if self._in_fit:  # validation inside fit (a standalone evaluate() is not timed here)
                self.clock.test_begin()

        def on_test_end(self, logs=None):
            if self._in_fit:
                self.clock.test_end(logs)

        def on_epoch_end(self, epoch, logs=None):
            self.clock.epoch_end(epoch, logs)
            if self.clock.done(agree):
                self.model.stop_training = True

    return EpochTimer()


def deadline() -> float | None:
    """The point's deadline on ``time.perf_counter``'s scale: the runner exports ``CGB_POINT_DEADLINE``
    (epoch seconds, its timeout less a margin for the record and plots); no window extends past it."""
    import os

    try:
        wall = float(os.environ["CGB_POINT_DEADLINE"])
    except (KeyError, ValueError):
        return None
    return time.perf_counter() + (wall - time.time())
