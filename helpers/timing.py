"""Epoch timing: the first epoch (tracing, compilation, autotuning) apart from the steady state.

The callback hooks epochs only. In Keras 3 any ``on_train_batch_*`` hook turns off asynchronous
dispatch and syncs the device every step, so there is none here (and the timed ``fit`` runs with
``verbose=0``: the progress bar is a per-batch hook too). At the end of an epoch the callback turns
the epoch's logs into Python floats before reading the clock: the last loss depends on every step
of the epoch, so the clock is read only after the device has finished the epoch's work.
"""

from __future__ import annotations

import statistics
import time


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


def make_epoch_timer(printer=print):
    """A Keras callback recording wall time per epoch (and validation time within it)."""
    import keras

    class EpochTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.epoch_s: list[float] = []
            self.val_s: list[float] = []
            self.bounds: list[tuple[float, float]] = []  # perf_counter (start, end) per epoch
            self.history: dict[str, list[float]] = {}
            self._t_epoch = self._t_test = None
            self._in_fit = False

        def on_train_begin(self, logs=None):
            self._in_fit = True

        def on_train_end(self, logs=None):
            self._in_fit = False

        def on_epoch_begin(self, epoch, logs=None):
            self._t_epoch = time.perf_counter()
            self._val = 0.0

        def on_test_begin(self, logs=None):
            if self._in_fit:
                self._t_test = time.perf_counter()

        def on_test_end(self, logs=None):
            if self._in_fit and self._t_test is not None:
                for v in (logs or {}).values():
                    float(v)
                self._val += time.perf_counter() - self._t_test
                self._t_test = None

        def on_epoch_end(self, epoch, logs=None):
            values = {k: float(v) for k, v in (logs or {}).items()}  # waits for the device
            t = time.perf_counter()
            self.epoch_s.append(t - self._t_epoch)
            self.val_s.append(self._val)
            self.bounds.append((self._t_epoch, t))
            for k, v in values.items():
                self.history.setdefault(k, []).append(v)
            shown = " ".join(f"{k}={v:.4g}" for k, v in values.items())
            printer(f"epoch {epoch + 1}: {self.epoch_s[-1]:.3f} s  {shown}")

    return EpochTimer()
