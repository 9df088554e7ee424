"""Grid files: load, validate every point before anything runs, expand into points.

A grid is YAML::

    description: what this grid is for        # optional
    timeout_s: 1800                           # optional: per-point limit (seconds)
    defaults: {epochs: 3}                     # optional: applied to every point
    points:                                   # blocks; a list value expands as a product
      - workload: cnn_cifar10
        backend: [tensorflow, jax, torch]
        device: [cpu, gpu]
        batch_size: [250, 1000]

A point's parameters are the common defaults, overridden by the workload's defaults, the grid's
``defaults`` and the block. Any problem raises ``GridError`` naming the file, the key and what is
allowed.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import yaml

from . import params as _params
from . import workloads as _workloads

TOP_KEYS = ("description", "timeout_s", "defaults", "points")


class GridError(ValueError):
    pass


def _spec_for(workload: str) -> dict:
    return {**_params.COMMON, **_workloads.get(workload).extra_params}


def load(path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise GridError(f"{path}: grid file does not exist")
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise GridError(f"{path}: invalid YAML: {exc}") from None
    except UnicodeDecodeError:
        raise GridError(f"{path}: not a text file") from None
    if not isinstance(doc, dict):
        raise GridError(f"{path}: a grid is a mapping with the keys {', '.join(TOP_KEYS)}; "
                        f"found {type(doc).__name__}")
    for key in doc:
        if key not in TOP_KEYS:
            raise GridError(f"{path}: unknown top-level key '{key}'; allowed: {', '.join(TOP_KEYS)}")
    return doc


def _check_timeout(value, where: str):
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
        raise GridError(f"{where}: key 'timeout_s' has value {value!r}; allowed: a number of seconds > 0")
    return value


def expand(path) -> list[dict]:
    """Every point of the grid file as a full parameter dict (plus ``timeout_s``), validated."""
    path = Path(path)
    doc = load(path)
    timeout = _check_timeout(doc.get("timeout_s"), str(path))
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise GridError(f"{path}: key 'defaults' must be a mapping of parameters")
    blocks = doc.get("points")
    if not blocks:
        raise GridError(f"{path}: key 'points' is missing or empty: the grid has no points")
    if not isinstance(blocks, list):
        raise GridError(f"{path}: key 'points' must be a list of mappings")
    points: list[dict] = []
    seen = set()
    for i, block in enumerate(blocks, 1):
        where = f"{path}: points[{i}]"
        if not isinstance(block, dict):
            raise GridError(f"{where}: each point block is a mapping, found {block!r}")
        merged = {**defaults, **block}
        for key in _params.RUNNER_SET:
            if key in merged:
                raise GridError(f"{where}: key '{key}' is set by the runner for every point (records go under "
                                "outputs/runs/<time>/records, ids come from the parameters and the machine); "
                                "remove it from the grid")
        for key in ("workload", "backend", "device"):
            if key not in merged:
                raise GridError(f"{where}: key '{key}' is required")
        workloads = merged["workload"] if isinstance(merged["workload"], list) else [merged["workload"]]
        for wl in workloads:
            try:
                _params.validate({"workload": wl}, where, workloads=_workloads.names())
            except _params.ParamError as exc:
                raise GridError(str(exc)) from None
        block_timeout = _check_timeout(merged.pop("timeout_s", timeout), where)
        keys = list(merged)
        values = []
        for k in keys:
            v = merged[k]
            if isinstance(v, list):
                if not v:
                    raise GridError(f"{where}: key '{k}' is an empty list")
                values.append(v)
            else:
                values.append([v])
        for combo in itertools.product(*values):
            p = dict(zip(keys, combo))
            spec = _spec_for(p["workload"])
            try:
                _params.validate(p, where, spec=spec, workloads=_workloads.names())
            except _params.ParamError as exc:
                raise GridError(str(exc)) from None
            full = {**_params.COMMON_DEFAULTS, **_workloads.get(p["workload"]).defaults, **p}
            full = {k: full[k] for k in spec if k in full}
            missing = [k for k in spec if k not in full]
            if missing:
                raise GridError(f"{where}: missing keys {missing}")
            key = tuple(sorted((k, repr(v)) for k, v in full.items()))
            if key in seen:
                continue
            seen.add(key)
            full["timeout_s"] = block_timeout
            full["_grid"] = str(path)
            points.append(full)
    return points


def expand_all(paths) -> list[dict]:
    points = []
    for p in paths:
        points.extend(expand(p))
    return points
