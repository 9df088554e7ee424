"""The figures a point's record carries, assembled once it has trained (``Point.fit`` and ``Point.finish``).

    fit_figures(point)                 # the fit's epochs, steady-state figures, utilisation, host load, energy, memory
    host_copy_figures(point, data)     # a GPU point fed from arrays: the measured copy of one batch from the host
    rec.update(limit_figures(point))   # FLOPs per sample, achieved TFLOP/s, MFU
"""

from __future__ import annotations

import math

from helpers.point.distribution_params import global_batch, per_process_batch
from helpers.point.mesh import device_memory
from helpers.record import fields as F


def fit_figures(point) -> None:
    """The fit's figures into the point's record: its epochs (the first apart, the steady ones, their validation), the
    steady-state figures, utilisation and energy over the steady epochs, the framework's and each mesh device's peak
    memory."""
    from helpers.measure.energy import energy_figures
    from helpers.measure.framework_memory import framework_peak_memory
    from helpers.measure.timing import spread, steady_figures

    t, s, rec = point.timer, point.sampler, point.record
    if t is None:
        return
    train_s = list(t.train_s)  # each epoch's training part (its validation timed apart)
    n = rec.get("n_train") or 0  # global samples per epoch (every process's shard)
    bs = global_batch(point.params)
    steps = (point.data.steps_per_epoch if point.data is not None and point.data.steps_per_epoch
             else (math.ceil(n / bs) if n else None))
    rec[F.HISTORY] = t.history
    rec[F.EPOCH_TOTAL_S] = list(t.epoch_s)  # every epoch, validation included
    rec[F.VAL_S] = list(t.val_s)  # every epoch's validation part (0.0 without validation)
    if train_s:
        rec[F.FIRST_EPOCH_S] = train_s[0]
    steady = train_s[1:]
    rec[F.EPOCH_S] = steady  # steady-state epochs, training only
    rec["epochs_run"] = len(train_s)
    rec[F.STEADY_S] = round(math.fsum(steady), 6)  # the timing window: what the figure rests on
    rec["window_stopped_by"] = t.stopped_by  # epochs, window (extended past `epochs`), deadline, another process
    rec["epoch_with_val_s"] = list(t.epoch_s[1:])  # the same epochs with their validation
    rec["median_epoch_with_val_s"] = spread(rec["epoch_with_val_s"])["median"]
    rec["timing"] = "epoch bounds read after a device sync; validation timed apart"
    rec[F.STEPS_PER_EPOCH] = steps
    rec.update(steady_figures(steady, n, steps, rec.get(F.FIRST_EPOCH_S)))
    if s is not None:
        if len(t.bounds) > 1 and s.window(t.bounds[1][0], t.bounds[-1][1]):
            rec["utilisation"] = s.summary(t.bounds[1][0], t.bounds[-1][1])
            rec["utilisation"]["window"] = "steady-state epochs"
        else:  # epochs shorter than the sampling interval
            rec["utilisation"] = s.summary()
            rec["utilisation"]["window"] = "whole fit"
        rec["gpu_indices_used"] = list(s.gpu_indices)
        host_figures(rec, s, t.bounds, processes=int(point.params.get("processes") or 1))
        # energy: GPU points only (on a CPU point no GPU is used), from the energy counter at the
        # synchronised epoch bounds, else mean sampled power x time (energy_method says which)
        if s.has_gpu and rec.get("device_used") == "gpu":
            rec.update(s.idle)
            rec.update(energy_figures(t.marks, train_s, s.idle.get("idle_power_w"),
                                      rec["utilisation"].get("power_w_mean")))
        rec["utilisation_timeline"] = s.timeline()
        rec["epoch_bounds_s"] = [(a - s.t0, b - s.t0) for a, b in t.bounds]
    rec["utilisation"].update(framework_peak_memory(point.params["backend"],
                                                    rec.get("device_used") or "cpu"))
    rec["utilisation"].update(device_memory(getattr(point, "dist", None)))  # each mesh device's
    if rec.get("device") == "gpu" and "gpu_peak_mb" in rec["utilisation"]:
        rec["utilisation"]["gpu_mem_peak_mb"] = rec["utilisation"]["gpu_peak_mb"]


def host_figures(rec: dict, s, bounds, processes: int = 1) -> None:
    """The host's load over the steady epochs (the whole fit where they hold fewer than two samples): this process's
    CPU time against its allowed cores' busy time (``helpers.measure.host_load``); ``host_busy`` when another
    process used more than a quarter of those cores, said in the notebook's output too. A point of several processes
    on this host (``processes`` > 1) records the load but is never marked: its other processes are its own work."""
    from helpers.measure.host_load import busy_text

    load = s.host_load(bounds[1][0], bounds[-1][1]) if len(bounds) > 1 else None
    window = "steady-state epochs"
    if load is None:
        load, window = s.host_load(), "whole fit"
    if load is None:
        return
    if processes > 1:
        load = {**load, "host_busy": False, "note": f"{processes} processes of this point share the host: the others' "
                "CPU time is this point's, not told apart"}
    rec["host_load"] = {**load, "window": window}
    rec["host_busy"] = load["host_busy"]
    if load["host_busy"]:
        print(busy_text(load) + ": the report leaves this run out of headline figures where an unmarked run of "
              "its configuration exists")


def host_copy_figures(point, data) -> None:
    """A GPU point fed from arrays: the measured copy of one batch from the host, after training (outside the
    timed window), and its share of a step; where it is not measured, why."""
    rec = point.record
    if rec.get("device_used") != "gpu":
        rec["host_copy_reason"] = "not measured: a CPU point trains where its data is"
        return
    if data.train is not None:
        rec["host_copy_reason"] = "not measured: the data is a generator (it batches and copies on its own)"
        return
    from helpers.point import placement

    try:
        rec.update(placement.host_copy(data.x_train, data.y_train, per_process_batch(point.params),
                                       point.params["backend"], step_s=rec.get(F.STEP_S)))
    except Exception as exc:  # a measurement beside the point's figures: never fails the point
        rec["host_copy_reason"] = f"not measured: {type(exc).__name__}: {exc}"[:500]


def limit_figures(point) -> dict:
    """The model's FLOPs per sample, forward + backward (``model_flops_per_sample``, analytical:
    ``helpers.measure.flops_analytic``), achieved TFLOP/s and MFU from them against this device's peak; the optimiser's
    FLOPs per step apart (``optimizer_flops_per_step``); ``flops_per_sample``: the whole training step per sample
    (the optimiser's update divided by the batch), as before. A failure to count is recorded, never fails the point."""
    from helpers.measure import flops_analytic as _flops
    from helpers.measure import peaks as _peaks

    rec, p = point.record, point.params
    out = {"steps_per_execution": p.get("steps_per_execution", 1)}
    if point.model is None:  # nothing to count: no framework imported to find that out (Keras alone is seconds)
        why = "no model: the point set none (Point.model)"
        return {**out, "flops_per_sample": None, "mfu": None, "mfu_reason": f"FLOPs not counted: {why}",
                "model_shape_reason": f"not read: {why}", "model_layers_reason": f"not read: {why}"}
    try:
        c = _flops.analytic(point.model)
        fp = rec.get("fingerprint") or {}
        names = fp.get("gpu_names") or []
        out.update(_peaks.limit_fields(
            c.model(), rec.get(F.SAMPLES_PER_S), rec.get("device_used"),
            gpu_name=names[0] if names else None, precision=p.get("precision", "float32"),
            calibration=fp.get("calibration"), threads=p.get("threads") or None,
            gpus=point.dist.gpus * point.dist.hosts))
        out.update(model_flops_per_sample=out.pop("flops_per_sample"), flops_per_sample=c.train(p["batch_size"]),
                   optimizer_flops_per_step=c.update_per_step, optimizer=c.optimizer,
                   flops_source="analytic, counted on the trained model", flops_forward=c.forward, flops_notes=c.notes)
    except Exception as exc:  # a layer the count does not know how to walk
        out.update(flops_per_sample=None, mfu=None, mfu_reason=f"FLOPs not counted: {type(exc).__name__}: {exc}")
    try:  # what a step launches: the GPU step model's input (the report's predicted figures); never fails the point
        from helpers.predict.shape import shape

        out["model_shape"] = shape(point.model)
    except Exception as exc:
        out["model_shape_reason"] = f"not read: {type(exc).__name__}: {exc}"[:300]
    try:  # each layer's features: the layer-by-layer step model's input (every GPU kind profiled)
        from helpers.predict.layers import layer_rows

        out["model_layers"] = [{k: v for k, v in r.items() if k != "name"}
                               for r in layer_rows(point.model, int(p["batch_size"]))]
    except Exception as exc:
        out["model_layers_reason"] = f"not read: {type(exc).__name__}: {exc}"[:300]
    return out
