"""The committed analytical counts (``data/flops.csv``), read at report time without importing Keras.

    lookup("cnn_cifar10", params)             # the committed count (a flops_analytic.Count), or None
    for_record(record)                        # (model FLOPs per sample, optimiser FLOPs per step, where from)

A point counts its model at the end (``helpers.point.record_figures.limit_figures``); records that predate the count
get it in the report from ``data/flops.csv`` (``for_record``; ``flops_source`` says so), which
``benchmarks/flops.py --table`` writes.
"""

from __future__ import annotations

import csv
import functools
import json
from pathlib import Path

from helpers import params as _params
from helpers.measure.flops_analytic import BACKWARD_FACTOR, Count
from helpers.paths import PROJECT_ROOT

TABLE = PROJECT_ROOT / "data" / "flops.csv"  # committed counts, written by benchmarks/flops.py
# parameters that do not shape the model (so they are not part of the table's model key): every common knob (a
# common knob added later is left out by itself), the runner's keys, and the workloads' knobs of the data, the
# input pipeline and the optimiser
NOT_MODEL = frozenset(_params.COMMON) | frozenset(_params.RUNNER_KEYS) | frozenset({
    "workers", "use_multiprocessing", "max_queue_size", "data_dir", "augment", "augment_impl", "lstm_impl",
    "input_dtype", "repeat", "learning_rate", "import_modules"})


def model_key(params: dict) -> str:
    """The parameters that shape a workload's model, as canonical JSON (the table's key)."""
    return json.dumps({k: params[k] for k in sorted(params) if k not in NOT_MODEL}, sort_keys=True, default=str)


@functools.lru_cache(maxsize=4)
def _table(path: str) -> dict:
    p = Path(path)
    if not p.is_file():
        return {}
    with p.open(newline="") as f:
        return {(r["workload"], r["model_key"]): r for r in csv.DictReader(f)}


def lookup(workload: str, params: dict, path: Path | None = None) -> Count | None:
    """The committed analytical count of ``workload`` with ``params`` (``data/flops.csv``), None if absent."""
    r = _table(str(path or TABLE)).get((workload, model_key(params)))
    if r is None:
        return None
    return Count(forward=float(r["forward_flops"]), input_grad=float(r["input_grad_flops"]),
                 trainable_params=int(r["trainable_params"]), update_per_param=float(r["update_per_param"]),
                 optimizer=r["optimizer"], notes=[n for n in r.get("notes", "").split(" | ") if n])


REPORT_SOURCE = "counted at report time (analytic, data/flops.csv)"


def _pos(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and 0 < v < float("inf")


def for_record(r: dict) -> tuple[float | None, float | None, str]:
    """(the model's FLOPs per sample, forward + backward: what MFU counts; the optimiser's FLOPs per step, shown
    apart; where they come from) of a record: its own ``model_flops_per_sample`` where it has one; else, a record
    that counted the whole step (``flops_per_sample``: the update divided by the batch) with its forward pass,
    3 x that forward and the rest times the batch; else the committed analytical count of its workload and model
    parameters (records that predate the count); else its whole step's count; else (None, None, why)."""
    own, src = r.get("model_flops_per_sample"), str(r.get("flops_source") or "the record's own count")
    if _pos(own):
        opt = r.get("optimizer_flops_per_step")
        return float(own), (float(opt) if _pos(opt) or opt == 0 else None), src
    name, p = r.get("workload"), r.get("params") or {}
    batch = p.get("batch_size") or r.get("batch_size")
    step, fwd = r.get("flops_per_sample"), r.get("flops_forward")
    if _pos(step) and _pos(fwd):
        model = (1 + BACKWARD_FACTOR) * float(fwd)
        opt = max(0.0, float(step) - model) * batch if _pos(batch) else None
        return model, opt, src
    try:
        from helpers import workloads as _workloads

        full = {**_workloads.defaults(name), **p}
    except KeyError:
        return None, None, f"unknown workload {name!r}"
    c = lookup(name, full)
    if c is not None and batch:
        return c.model(), c.update_per_step, REPORT_SOURCE
    if _pos(step):  # its own count of the whole step, nothing to take the update out of
        return float(step), None, f"{src} (the whole step: the optimiser's update divided by the batch included)"
    return None, None, "no count for this model in data/flops.csv (python benchmarks/flops.py --table adds it)"


# the model's shape beside its count (helpers.predict.shape: what a step launches, the GPU step-time model's inputs)
SHAPE_FIELDS = ["layers", "launches", "weights", "input_bytes"]
TABLE_FIELDS = ["workload", "model_key", "forward_flops", "input_grad_flops", "trainable_params", "update_per_param",
                "optimizer", *SHAPE_FIELDS, "notes"]


def table_row(workload: str, params: dict, c: Count, shape: dict | None = None) -> dict:
    return {"workload": workload, "model_key": model_key(params), "forward_flops": repr(c.forward),
            "input_grad_flops": repr(c.input_grad), "trainable_params": c.trainable_params,
            "update_per_param": repr(c.update_per_param), "optimizer": c.optimizer,
            **{k: (shape or {}).get(k, "") for k in SHAPE_FIELDS}, "notes": " | ".join(c.notes)}


def shape_of(workload: str, params: dict) -> dict | None:
    """The committed shape (``SHAPE_FIELDS``) of ``workload`` with ``params``, None if absent."""
    r = _table(str(TABLE)).get((workload, model_key(params)))
    if r is None or not all(r.get(k) for k in SHAPE_FIELDS):
        return None
    return {k: int(float(r[k])) for k in SHAPE_FIELDS}
