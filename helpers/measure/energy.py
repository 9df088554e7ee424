"""GPU energy figures of a point's epochs, from the board's energy counter (or mean sampled power).

Energy (``energy_figures``): the board's energy counter (``nvmlDeviceGetTotalEnergyConsumption``, mJ)
read by the epoch timer at synchronised epoch bounds and differenced; idle power measured apart before
training (``helpers.measure.sampler.Sampler.measure_idle``). The counter moves in steps (about every 0.1 s on an
H100: an epoch of 27 ms read 0 J in most epochs and a whole step in a few), so the figure per epoch is the steady
window's energy over its epochs (a mean, unbiased whatever the step), never a median of epochs, and a window
shorter than ``ENERGY_MIN_WINDOW_S`` gives no figure (``energy_reason`` says why). Where the counter is
unsupported (GPUs before Volta) the record falls back to mean sampled power x epoch time and says so
(``energy_method``).
"""

from __future__ import annotations

import math
import statistics

from helpers.record.upgrade import COUNTER  # the record's word for the board's energy counter

MEAN_POWER = "mean_power"
# The shortest steady window (training seconds) the energy counter is read over: the counter moves in steps of
# about 0.1 s of power (seen on an H100), so one step is at most 10% of a 1-s window and the two ends' steps
# (the only error left when the epochs' parts are summed) at most 5% of a 2-s one, the default window.
ENERGY_MIN_WINDOW_S = 1.0


def energy_figures(marks: list[dict], train_s: list[float], idle_power_w: float | None = None,
                   mean_power_w: float | None = None, min_window_s: float | None = None) -> dict:
    """Record keys for the energy of the training part of each epoch (the first epoch apart).

    ``marks``: the energy counter (mJ) per epoch at ``begin``, ``test_begin``, ``test_end``, ``end``
    (``EpochClock.marks``); ``train_s``: the training part of each epoch in seconds. An epoch's
    training energy is its counter difference less its validation's; the figure per epoch is their sum
    over the steady epochs divided by their number (the counter's steps make single short epochs read 0
    or a whole step: a median of them is biased, their mean is not). A steady window shorter than
    ``min_window_s`` (default ``ENERGY_MIN_WINDOW_S``) gives no figure and says why. Without usable marks,
    and given ``mean_power_w`` (mean sampled power over the steady epochs), the fallback is mean power x
    time.
    """
    steady_t = train_s[1:]
    window = math.fsum(steady_t)
    min_window_s = ENERGY_MIN_WINDOW_S if min_window_s is None else min_window_s
    out: dict = {}
    if idle_power_w is not None:
        out["idle_power_w"] = idle_power_w
    usable = (len(marks) == len(train_s) >= 2
              and all(m.get("begin") is not None and m.get("end") is not None for m in marks))
    if (usable or mean_power_w is not None) and steady_t and window < min_window_s:
        out["energy_window_s"] = window
        out["energy_reason"] = (f"no energy figure: the steady window ({window:.3f} s of training) is shorter than "
                                f"{min_window_s:g} s; the board's energy counter moves in steps of about 0.1 s, "
                                f"so it would be off by more than 10% (raise min_steady_s)")
        return out
    if usable:
        total = [(m["end"] - m["begin"]) / 1000.0 for m in marks]
        val = [((m["test_end"] - m["test_begin"]) / 1000.0
                if m.get("test_begin") is not None and m.get("test_end") is not None else 0.0) for m in marks]
        train = [t - v for t, v in zip(total, val)]
        k = len(train) - 1
        out.update(energy_method=COUNTER, first_epoch_energy_j=train[0], energy_j_epochs=train[1:],
                   energy_with_val_j_epochs=total[1:], energy_window_s=window,
                   energy_j_per_epoch=math.fsum(train[1:]) / k)
        if idle_power_w is not None:
            above = [e - idle_power_w * t for e, t in zip(train[1:], steady_t)]
            out["energy_above_idle_j_epochs"] = above
            out["energy_above_idle_j_per_epoch"] = math.fsum(above) / k
    elif mean_power_w is not None and steady_t:
        med = statistics.median(steady_t)
        out.update(energy_method=MEAN_POWER, energy_j_per_epoch=mean_power_w * med, energy_window_s=window,
                   energy_j_epochs=[mean_power_w * t for t in steady_t])
        if idle_power_w is not None:
            out["energy_above_idle_j_per_epoch"] = (mean_power_w - idle_power_w) * med
    return out
