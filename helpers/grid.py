"""Grid files: load, validate every point before anything runs, expand into points and runs.

A grid is YAML::

    description: what this grid is for        # optional
    timeout_s: 1800                           # optional: per-point limit (seconds)
    repeats: 3                                # optional: separate runs of every point (fresh kernels)
    defaults: {epochs: 3}                     # optional: applied to every point
    points:                                   # blocks; a list value expands as a product
      - workload: cnn_cifar10
        backend: [tensorflow, jax, torch]
        device: [cpu, gpu]
        batch_size: [250, 1000]

A point's parameters are the common defaults, overridden by the workload's defaults, the grid's
``defaults`` and the block. ``timeout_s`` and ``repeats`` are the runner's (``params.RUNNER_KEYS``), not
notebook parameters: set at the top, in ``defaults`` or in a block (the block wins). Any problem raises
``GridError`` naming the file, the key and what is allowed.

Planning a run::

    blocks = sizes(paths)        # each block's size, counted before it is expanded (instant)
    points = expand_all(paths)   # validated points, each with its ``repeats``
    order = runs(points)         # interleaved: every point once, then again (round r: repeats > r)
    est = estimate(order, recs)  # seconds, from the wall times of earlier records on this machine
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from helpers import params as _params
from helpers import workloads as _workloads
from helpers.point import distribution_params as _distribution

TOP_KEYS = ("description", "timeout_s", "repeats", "defaults", "points")
MAX_BLOCK_RUNS = 100_000  # runs of one block refused outright, before expanding it (a list too many)


class GridError(ValueError):
    pass


@dataclass(frozen=True)
class Block:
    """One block of a grid file, counted before it is expanded."""

    file: str
    index: int  # 1-based, as in messages (``points[1]``)
    repeats: int
    lists: dict = field(default_factory=dict)  # key -> length, for the keys whose value is a list

    @property
    def points(self) -> int:
        return math.prod(self.lists.values())

    @property
    def runs(self) -> int:
        return self.points * self.repeats

    def describe(self) -> str:
        parts = [f"{k} {n}" for k, n in self.lists.items()] + ([f"repeats {self.repeats}"] if self.repeats > 1 else [])
        return f"{self.file}: points[{self.index}]: {self.runs:,} runs ({' x '.join(parts) or 'no lists'})"


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


def _check_repeats(value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise GridError(f"{where}: key 'repeats' has value {value!r}; allowed: an integer >= 1 (separate runs "
                        "of each point, each in a fresh kernel)")
    return value


def _blocks(path: Path):
    """``(where, block, merged parameters, timeout_s, repeats)`` per block, the checks that need no
    expansion done (structure, runner keys, required keys, workload names, empty lists)."""
    doc = load(path)
    timeout = _check_timeout(doc.get("timeout_s"), str(path))
    repeats = _check_repeats(doc["repeats"], str(path)) if "repeats" in doc else 1
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise GridError(f"{path}: key 'defaults' must be a mapping of parameters")
    if "repeats" in defaults:
        _check_repeats(defaults["repeats"], f"{path}: defaults")
    blocks = doc.get("points")
    if not blocks:
        raise GridError(f"{path}: key 'points' is missing or empty: the grid has no points")
    if not isinstance(blocks, list):
        raise GridError(f"{path}: key 'points' must be a list of mappings")
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
        block_repeats = _check_repeats(merged.pop("repeats"), where) if "repeats" in merged else repeats
        for k, v in merged.items():
            if isinstance(v, list) and not v:
                raise GridError(f"{where}: key '{k}' is an empty list")
        lists = {k: len(v) for k, v in merged.items() if isinstance(v, list)}
        yield where, Block(str(path), i, block_repeats, lists), merged, block_timeout


def sizes(paths) -> list[Block]:
    """Every block of the grid files, counted (product of its list lengths, times its repeats) without
    expanding it: a typo of 10^8 points is answered at once."""
    return [b for p in paths for _, b, _, _ in _blocks(Path(p))]


def expand(path) -> list[dict]:
    """Every point of the grid file as a full parameter dict (plus ``timeout_s`` and ``repeats``), validated.
    A point that two blocks give is one point (with the larger ``repeats``)."""
    path = Path(path)
    points: dict[tuple, dict] = {}
    for where, block, merged, block_timeout in _blocks(path):
        if block.runs > MAX_BLOCK_RUNS:
            raise GridError(f"{block.describe()}: more than {MAX_BLOCK_RUNS:,} runs in one block, refused before "
                            "expanding it (a list too many?)")
        keys = list(merged)
        values = [v if isinstance(v, list) else [v] for v in merged.values()]
        for combo in itertools.product(*values):
            p = dict(zip(keys, combo))
            spec = _workloads.knobs(p["workload"])
            try:
                _params.validate(p, where, spec=spec, workloads=_workloads.names())
            except _params.ParamError as exc:
                raise GridError(str(exc)) from None
            full = {**_workloads.defaults(p["workload"]), **p}
            full = {k: full[k] for k in spec if k in full}
            missing = [k for k in spec if k not in full]
            if missing:
                raise GridError(f"{where}: missing keys {missing}")
            try:  # keys against each other: several devices or hosts only where they can run
                _distribution.check(full, where)
                _params.check_combination(full, where)
            except _params.ParamError as exc:
                raise GridError(str(exc)) from None
            key = tuple(sorted((k, repr(v)) for k, v in full.items()))
            if key in points:
                points[key]["repeats"] = max(points[key]["repeats"], block.repeats)
                continue
            full["timeout_s"] = block_timeout
            full["repeats"] = block.repeats
            full["_grid"] = str(path)
            points[key] = full
    return list(points.values())


def expand_all(paths) -> list[dict]:
    points = []
    for p in paths:
        points.extend(expand(p))
    return points


def runs(points: list[dict]) -> list[dict]:
    """The runs of ``points``, interleaved: every point once, then every point with ``repeats`` > 1 again,
    and so on (round r holds every point with ``repeats`` > r), so that a drift of the host spreads over
    every configuration instead of landing on one. Each run is its point's dict plus ``_repeat`` (0-based)."""
    rounds = max((p.get("repeats", 1) for p in points), default=0)
    return [{**p, "_repeat": r} for r in range(rounds) for p in points if p.get("repeats", 1) > r]


@dataclass
class Estimate:
    """Seconds a list of runs should take here, and what that rests on."""

    seconds: float = 0.0
    same: int = 0  # runs estimated from records of the same workload, backend and device
    same_records: int = 0
    other: int = 0  # runs estimated from every record of this machine
    other_s: float | None = None  # their median wall time
    records: int = 0
    none: int = 0  # runs without an estimate (no record of this machine)

    @property
    def known(self) -> bool:
        return self.same + self.other > 0

    def describe(self) -> str:
        if not (self.same or self.other or self.none):
            return "no run to start a kernel for: no time to estimate"
        if not self.known:
            return "no time estimate (no complete record of this machine in the outputs folder's runs/)"
        parts = []
        if self.same:
            parts.append(f"{self.same} run(s) at the median wall time of earlier runs of the same workload, "
                         f"backend and device ({self.same_records} record(s))")
        if self.other:
            parts.append(f"{self.other} at the median of every earlier run ({self.other_s:.1f} s, "
                         f"{self.records} record(s))")
        if self.none:
            parts.append(f"{self.none} without an estimate")
        return f"estimated {fmt_duration(self.seconds)} on this machine: " + "; ".join(parts)


def estimate(order: list[dict], records: list[dict]) -> Estimate:
    """How long ``order`` (runs) should take: for each run, the median ``wall_s`` of ``records`` (complete
    records of this machine) of the same workload, backend and device, else of every record, else none."""
    walls: dict[tuple, list[float]] = {}
    every = []
    for r in records:
        w = r.get("wall_s")
        if isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and w >= 0:
            walls.setdefault((r.get("workload"), r.get("backend"), r.get("device")), []).append(float(w))
            every.append(float(w))
    est = Estimate(records=len(every), other_s=statistics.median(every) if every else None)
    used = set()
    for p in order:
        kind = (p["workload"], p["backend"], p["device"])
        if kind in walls:
            est.seconds += statistics.median(walls[kind])
            est.same += 1
            used.add(kind)
        elif every:
            est.seconds += est.other_s
            est.other += 1
        else:
            est.none += 1
    est.same_records = sum(len(walls[k]) for k in used)
    return est


def fmt_duration(seconds: float) -> str:
    """``42 s``, ``7.5 min``, ``3.2 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
