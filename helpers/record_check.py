"""What a record read back must look like before the report uses it: field types, figures, nesting.

    why = problem(obj)      # None: usable; else why not, e.g. "'history' is a number, not a mapping"

Records merged from elsewhere are data from anyone (a colleague's folder, an archive): a field of the
wrong type, a timing that is not a finite number > 0, or JSON nested a thousand deep must cost that one
record (skipped, with this reason), never the report. Reasons name the field and what was expected, not
the value, so the report can group them. Only what the report reads is checked; other keys are free.
"""

from __future__ import annotations

import math

MAX_DEPTH = 32  # records nest about 4 deep (fingerprint.versions, utilisation_timeline items)

# top-level fields: kind
_FIELDS = {
    "point_id": "text", "workload": "text", "backend": "text", "device": "text", "status": "text",
    "device_used": "text?", "reason": "text?", "data_source": "text?", "notebook": "text?",
    "started_at": "text?", "price_profile": "text?", "traceback": "text?", "energy_method": "text?",
    "energy_reason": "text?",
    "params": "map?", "fingerprint": "map?", "utilisation": "map?", "data_info": "map?", "epoch_spread": "map?",
    "history": "map?",
    "batch_size": "count?", "n_train": "count?", "epochs": "count?", "steps_per_epoch": "count?",
    "first_epoch_s": "pos?", "median_epoch_s": "pos?", "step_s": "pos?", "samples_per_s": "pos?",
    "steady_s": "pos?",
    "duration_s": "nonneg?", "wall_s": "nonneg?", "energy_j_per_epoch": "nonneg?",
    "energy_above_idle_j_per_epoch": "num?", "idle_power_w": "nonneg?",
    "energy_window_s": "nonneg?",
    "epoch_s": "poslist?", "epoch_total_s": "poslist?", "val_s": "nonneglist?",
    "utilisation_timeline": "list?", "epoch_bounds_s": "list?", "fixture": "bool?",
}
_FINGERPRINT = {
    "host": "text?", "cpu_model": "text?", "python": "text?", "git_commit": "text?", "gpu_driver": "text?",
    "cuda_driver": "text?", "versions": "map?", "gpu_names": "textlist?",
    "cpu_logical": "count?", "cpu_allowed": "count?", "cpu_available": "count?", "ram_gb": "nonneg?",
}
_PARAMS = {"threads": "index?", "precision": "text?", "workers": "index?", "n_val": "index?"}
_UTILISATION = {k: "nonneg?" for k in ("cpu_pct_mean", "proc_cpu_pct_mean", "gpu_pct_mean", "gpu_pct_max",
                                       "gpu_mem_peak_mb", "gpu_mem_mb_max", "power_w_mean")}
_SPREAD = {k: "nonneg?" for k in ("q1", "q3", "min", "max", "median")} | {"n": "index?"}

_EXPECTED = {
    "text": "a non-empty string", "text?": "a string or null", "map?": "a mapping", "list?": "a list",
    "num?": "a finite number", "count?": "an integer > 0", "index?": "an integer >= 0", "pos?": "a finite number > 0",
    "nonneg?": "a finite number >= 0", "poslist?": "a list of finite numbers > 0",
    "nonneglist?": "a list of finite numbers >= 0", "bool?": "true or false", "textlist?": "a list of strings",
}


def _what(v) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    return {str: "a string", list: "a list", dict: "a mapping", type(None): "null"}.get(type(v), type(v).__name__)


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _ok(kind: str, v) -> bool:
    if v is None:
        return kind.endswith("?")
    if kind == "text":
        return isinstance(v, str) and bool(v.strip())
    if kind == "text?":
        return isinstance(v, str)
    if kind == "map?":
        return isinstance(v, dict)
    if kind == "list?":
        return isinstance(v, list)
    if kind == "bool?":
        return isinstance(v, bool)
    if kind == "textlist?":
        return isinstance(v, list) and all(isinstance(x, str) for x in v)
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


def too_deep_or_not_finite(obj, limit: int = MAX_DEPTH) -> str | None:
    """Nesting deeper than ``limit`` or a NaN/Infinity anywhere (walked without recursion)."""
    stack = [(obj, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return "a non-finite number (NaN or Infinity) in it"
        if isinstance(v, (dict, list)):
            if d > limit:
                return f"nested deeper than {limit} levels"
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
    return None


def problem(obj: dict) -> str | None:
    """Why the record ``obj`` (a dict that ``record.is_record`` accepts) cannot be used; None if it can."""
    why = too_deep_or_not_finite(obj)
    if why:
        return why
    if isinstance(obj.get("schema"), bool) or not isinstance(obj.get("schema"), int):
        return f"'schema' is {_what(obj.get('schema'))}, not an integer"
    why = _check(obj, _FIELDS)
    if why:
        return why
    for name, spec in (("fingerprint", _FINGERPRINT), ("params", _PARAMS), ("utilisation", _UTILISATION),
                       ("epoch_spread", _SPREAD)):
        why = _check(obj.get(name) or {}, spec, f"{name}.")
        if why:
            return why
    params = obj.get("params") or {}
    for key in ("batch_size", "n_train", "epochs"):
        if key in params and not _ok("count?", params[key]):
            return f"'params.{key}' is {_what(params[key])}, not {_EXPECTED['count?']}"
    versions = (obj.get("fingerprint") or {}).get("versions") or {}
    if not all(isinstance(v, str) or v is None for v in versions.values()):
        return "'fingerprint.versions' holds a value that is not a string"
    for key, curve in (obj.get("history") or {}).items():
        if not isinstance(curve, list) or not all(x is None or _is_num(x) for x in curve):
            return f"'history.{key}' is {_what(curve) if not isinstance(curve, list) else 'a list'}, " \
                   "not a list of numbers"
    for key in ("data_info", "epoch_spread"):
        sub = obj.get(key) or {}
        if any(isinstance(v, (dict, list)) for k, v in sub.items() if k in ("augment", "workers", "n")):
            return f"'{key}' holds a list or mapping where a value was expected"
    if any(isinstance(v, (dict, list)) for k, v in params.items() if k in ("jit_compile", "augment")):
        return "'params' holds a list or mapping where a value was expected"
    for s in obj.get("utilisation_timeline") or []:
        if not isinstance(s, dict) or not all(v is None or _is_num(v) for v in s.values()):
            return "'utilisation_timeline' holds an item that is not a mapping of numbers"
    for b in obj.get("epoch_bounds_s") or []:
        if not (isinstance(b, list) and len(b) == 2 and all(_is_num(x) for x in b)):
            return "'epoch_bounds_s' holds an item that is not a pair of numbers"
    return None
