"""What a record read back must look like before the report uses it: field types, figures, nesting.

    why = problem(obj)      # None: usable; else why not, e.g. "'history' is a number, not a mapping"

Records merged from elsewhere are data from anyone (a colleague's folder, an archive): a field of the
wrong type, a timing that is not a finite number > 0, or JSON nested a thousand deep must cost that one
record (skipped, with this reason), never the report. Reasons name the field and what was expected, not
the value, so the report can group them. Only what the report reads is checked; other keys are free, within
the bounds every record keeps (``record_limits``: size, nesting, numbers that are floats, string lengths).
Names and labels the report draws (workload, backend, host, GPU names, versions, a params value) are at most
``MAX_LABEL`` characters; ``params`` holds at most ``MAX_PARAMS`` keys of plain values, ``history`` at most
``MAX_CURVES`` curves.
"""

from __future__ import annotations

import math

from helpers import params as _params
from helpers.record import fields as F
from helpers.record.limits import MAX_DEPTH, out_of_bounds

MAX_LABEL = 256  # characters of a name or label the report shows (workload, host, GPU name, a knob's value)
MAX_PATH = 4096  # characters of a path (notebook, params.output_dir, a custom model's path)
MAX_PARAMS = 128  # keys of params (a notebook has about 25)
MAX_KNOBS_TEXT = 1024  # characters of a workload's own knobs written out (they label a configuration)
MAX_CURVES = 64  # curves in history (loss, accuracy, val_*)

# top-level fields: kind (declared with each field: helpers.record.fields)
_FIELDS = F.CHECKED
_FINGERPRINT = {
    "host": "label?", "cpu_model": "label?", "python": "label?", "git_commit": "label?", "gpu_driver": "label?",
    "cuda_driver": "label?", "versions": "map?", "gpu_names": "textlist?", "boot_id": "label?",
    "calibration": "map?", "gpu_state": "list?", "cpu_flags": "textlist?",
    "cpu_logical": "count?", "cpu_allowed": "count?", "cpu_available": "count?", "ram_gb": "nonneg?",
}
_PARAMS = {"threads": "index?", "precision": "label?", "workers": "index?", "n_val": "index?", "gpus": "count?",
           "hosts": "count?", "repeat": "index?", "steps_per_execution": "count?", "min_steady_s": "pos?",
           "batch_size": "count?", "n_train": "count?", "epochs": "count?", "workload": "label?",
           "backend": "label?", "device": "label?", "data_source": "label?", "data_placement": "label?"}
_UTILISATION = {k: "nonneg?" for k in ("cpu_pct_mean", "proc_cpu_pct_mean", "gpu_pct_mean", "gpu_pct_max",
                                       "gpu_mem_peak_mb", "gpu_mem_mb_max", "power_w_mean")}
_SPREAD = {k: "nonneg?" for k in ("q1", "q3", "min", "max", "median")} | {"n": "index?"}
# what a training step launches (helpers.predict.shape): the GPU step model's features, each a count
_MODEL_SHAPE = {k: "index?" for k in ("layers", "launches", "weights", "input_bytes")}
# each computing layer's features (helpers.predict.layers.layer_rows): the layer-by-layer step model's input
_MODEL_LAYER = {"kind": "text", "units": "count?", "flops": "nonneg?", "bytes": "nonneg?", "name": "label?",
                "computes_like": "label?"}
MAX_MODEL_LAYERS = 10_000  # twice the custom model's bound on layers (helpers/workloads/custom_size.py)

_EXPECTED = {
    "text": f"a non-empty string of at most {MAX_LABEL} characters", "text?": "a string or null",
    "label?": f"a string of at most {MAX_LABEL} characters or null",
    "path?": f"a string of at most {MAX_PATH} characters or null", "map?": "a mapping", "list?": "a list",
    "num?": "a finite number", "count?": "an integer > 0", "index?": "an integer >= 0", "pos?": "a finite number > 0",
    "nonneg?": "a finite number >= 0", "poslist?": "a list of finite numbers > 0",
    "nonneglist?": "a list of finite numbers >= 0", "bool?": "true or false",
    "textlist?": f"a list of strings of at most {MAX_LABEL} characters",
}


def _what(v) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    return {str: "a string", list: "a list", dict: "a mapping", type(None): "null"}.get(type(v), type(v).__name__)


def _is_num(v) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return isinstance(v, int) or math.isfinite(v)  # an int is finite (math.isfinite(10**400) raises)


def _ok(kind: str, v) -> bool:
    if v is None:
        return kind.endswith("?")
    if kind == "text":
        return isinstance(v, str) and bool(v.strip()) and len(v) <= MAX_LABEL
    if kind == "text?":
        return isinstance(v, str)
    if kind == "label?":
        return isinstance(v, str) and len(v) <= MAX_LABEL
    if kind == "path?":
        return isinstance(v, str) and len(v) <= MAX_PATH
    if kind == "map?":
        return isinstance(v, dict)
    if kind == "list?":
        return isinstance(v, list)
    if kind == "bool?":
        return isinstance(v, bool)
    if kind == "textlist?":
        return isinstance(v, list) and all(isinstance(x, str) and len(x) <= MAX_LABEL for x in v)
    if kind == "count?":
        return isinstance(v, int) and not isinstance(v, bool) and v > 0
    if kind == "index?":
        return isinstance(v, int) and not isinstance(v, bool) and v >= 0
    if kind == "num?":
        return _is_num(v)
    if kind == "pos?":
        return _is_num(v) and v > 0
    if kind == "nonneg?":
        return _is_num(v) and v >= 0
    if kind == "poslist?":
        return isinstance(v, list) and all(_is_num(x) and x > 0 for x in v)
    if kind == "nonneglist?":
        return isinstance(v, list) and all(_is_num(x) and x >= 0 for x in v)
    raise ValueError(kind)


def _check(obj: dict, spec: dict, prefix: str = "") -> str | None:
    for key, kind in spec.items():
        if key not in obj:
            continue
        v = obj[key]
        if not _ok(kind, v):
            return f"'{prefix}{key}' is {_what(v)}, not {_EXPECTED[kind]}"
    return None


def _params_problem(params: dict) -> str | None:
    """params: at most ``MAX_PARAMS`` keys of plain values (a string, a number, true/false, null), strings at
    most ``MAX_PATH`` characters, a workload's own knobs (they label a configuration) ``MAX_KNOBS_TEXT``."""
    if len(params) > MAX_PARAMS:
        return f"'params' has more than {MAX_PARAMS} keys"
    knobs = 0
    for key, v in params.items():
        if isinstance(v, (dict, list)):
            return f"'params.{key}' is {_what(v)}, not a plain value"
        if isinstance(v, str) and len(v) > MAX_PATH:
            return f"'params.{key}' is a string longer than {MAX_PATH} characters"
        if key not in _params.COMMON:
            knobs += len(key) + len(str(v)) + 3
    if knobs > MAX_KNOBS_TEXT:
        return f"'params' holds a workload's knobs longer than {MAX_KNOBS_TEXT} characters written out"
    return None


def _contradiction(obj: dict) -> str | None:
    """A record that ran says where (``device_used``) and on what (``fingerprint.gpu_names``): an ok record whose
    claimed ``device`` is not the one it used, or a GPU record whose machine's GPU query answered (a driver
    version) and listed no GPU, contradicts itself (a figure divided by 100 under a GPU label is then "the
    fastest of all"). A machine whose query did not answer (no NVML: no names, no driver) says nothing either
    way: its GPU records are kept."""
    if obj.get("status") != "ok":
        return None  # a skipped or failed point used no device (a GPU point on a machine without one is skipped)
    device, used = obj.get("device"), obj.get("device_used")
    if used is not None and device != used:
        return f"'device' is {_label(device)} but 'device_used' is {_label(used)}: the record contradicts itself"
    if "gpu" in (device, used):
        fp = obj.get("fingerprint")
        if isinstance(fp, dict) and not fp.get("gpu_names") and (fp.get("gpu_driver") or fp.get("cuda_driver")):
            return "'device' is gpu but 'fingerprint.gpu_names' names no GPU: the record contradicts itself"
    return None


def _label(v) -> str:
    return v if isinstance(v, str) and v in _params.DEVICES else _what(v)


# What no measurement gives, finite or not: a figure past these is refused at read, with the bound named, so that no
# figure derived from it (samples/s from a 1e-307-s epoch, a median of two 1.5e308 runs) can overflow into inf or NaN
TIME_S = (1e-9, 1e9)  # an epoch, a step, a window: a nanosecond to 30 years
RATE_MAX = 1e12  # samples/s
ENERGY_MAX = 1e15  # J an epoch
SHAPE_MAX = 10**12  # a model_shape count (layers, launches, weights, input bytes): 1e12 launches is ~2 months a step
_SECONDS = (F.FIRST_EPOCH_S, F.MEDIAN_EPOCH_S, F.STEP_S, F.STEADY_S, F.DURATION_S, F.WALL_S)


def _magnitude(obj: dict) -> str | None:
    for key in (*_SECONDS, F.EPOCH_S):
        values = obj.get(key) if isinstance(obj.get(key), list) else [obj.get(key)]
        if any(_is_num(v) and v and not TIME_S[0] <= abs(v) <= TIME_S[1] for v in values):
            return f"'{key}' holds a time outside {TIME_S[0]:g} to {TIME_S[1]:g} s (no measurement gives it)"
    if _is_num(obj.get(F.SAMPLES_PER_S)) and abs(obj[F.SAMPLES_PER_S]) > RATE_MAX:
        return f"'samples_per_s' is over {RATE_MAX:g} (no measurement gives it)"
    for key in ("energy_j_per_epoch", "energy_above_idle_j_per_epoch", "first_epoch_energy_j"):
        if _is_num(obj.get(key)) and abs(obj[key]) > ENERGY_MAX:
            return f"'{key}' is over {ENERGY_MAX:g} J (no measurement gives it)"
    shape = obj.get("model_shape") or {}
    for key in _MODEL_SHAPE:
        if _is_num(shape.get(key)) and shape[key] > SHAPE_MAX:
            return f"'model_shape.{key}' is over {SHAPE_MAX:g} (no model has it)"
    return None


def _layers_problem(rows: list) -> str | None:
    if len(rows) > MAX_MODEL_LAYERS:
        return f"'model_layers' has more than {MAX_MODEL_LAYERS:,} layers"
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            return f"'model_layers[{i}]' is {_what(row)}, not a mapping"
        why = _check(row, _MODEL_LAYER, f"model_layers[{i}].")
        if why:
            return why
        if any(_is_num(row.get(k)) and row[k] > SHAPE_MAX ** 1.5 for k in ("units", "flops", "bytes")):
            return f"'model_layers[{i}]' holds a figure over {SHAPE_MAX ** 1.5:g} (no layer has it)"
    return None


def problem(obj: dict) -> str | None:
    """Why the record ``obj`` (a dict that ``record.is_record`` accepts) cannot be used; None if it can."""
    why = out_of_bounds(obj, MAX_DEPTH)
    if why:
        return why
    if isinstance(obj.get("schema"), bool) or not isinstance(obj.get("schema"), int):
        return f"'schema' is {_what(obj.get('schema'))}, not an integer"
    why = _check(obj, _FIELDS)
    if why:
        return why
    for name, spec in (("fingerprint", _FINGERPRINT), ("params", _PARAMS), ("utilisation", _UTILISATION),
                       ("epoch_spread", _SPREAD), ("model_shape", _MODEL_SHAPE)):
        why = _check(obj.get(name) or {}, spec, f"{name}.")
        if why:
            return why
    why = _magnitude(obj)
    if why:
        return why
    why = _layers_problem(obj.get("model_layers") or [])
    if why:
        return why
    params = obj.get("params") or {}
    why = _params_problem(params)
    if why:
        return why
    versions = (obj.get("fingerprint") or {}).get("versions") or {}
    if not all((isinstance(v, str) and len(v) <= MAX_LABEL) or v is None for v in versions.values()):
        return f"'fingerprint.versions' holds a value that is not a string of at most {MAX_LABEL} characters"
    history = obj.get("history") or {}
    if len(history) > MAX_CURVES:
        return f"'history' has more than {MAX_CURVES} curves"
    for key, curve in history.items():
        if not isinstance(curve, list) or not all(x is None or _is_num(x) for x in curve):
            return f"'history.{key}' is {_what(curve) if not isinstance(curve, list) else 'a list'}, " \
                   "not a list of numbers"
    for key in ("data_info", "epoch_spread"):
        sub = obj.get(key) or {}
        if any(isinstance(v, (dict, list)) for k, v in sub.items() if k in ("augment", "workers", "n")):
            return f"'{key}' holds a list or mapping where a value was expected"
    why = _contradiction(obj)
    if why:
        return why
    for s in obj.get("utilisation_timeline") or []:
        if not isinstance(s, dict) or not all(v is None or _is_num(v) for v in s.values()):
            return "'utilisation_timeline' holds an item that is not a mapping of numbers"
    for b in obj.get("epoch_bounds_s") or []:
        if not (isinstance(b, list) and len(b) == 2 and all(_is_num(x) for x in b)):
            return "'epoch_bounds_s' holds an item that is not a pair of numbers"
    return None
