"""Grid files into points (``helpers.grid``, 2 of 3): every block checked without expanding it (its structure, the
runner's keys, each value of each key against the workload's knobs), counted, then expanded into validated points
(the keys of each point against each other), every problem of every file collected.

    blocks = sizes(paths)        # each block's size, counted before it is expanded (instant)
    points = expand_all(paths)   # validated points, each with its ``repeats``; GridError: every problem
    order = runs(points)         # interleaved: every point once, then again (round r: repeats > r)
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from helpers import params as _params
from helpers import workloads as _workloads
from helpers.point import distribution_params as _distribution

from .files import TOP_KEYS, Block, GridError, Problems, check_repeats, check_timeout, read

MAX_BLOCK_RUNS = 100_000  # runs of one block refused outright, before expanding it (a list too many)


def _blocks(path: Path, problems: Problems) -> list:
    """``(where, block, merged parameters, timeout_s, ok, key_at)`` per block of ``path``, every check that needs no
    expansion done (structure, runner keys, required keys, each value of each key against the workload's knobs);
    ``ok``: the block had no problem (it may be expanded); ``key_at(key)``: where a key of the block is (its line, and
    ``points[i]`` or ``defaults``). Problems go to ``problems``."""
    try:
        doc, line = read(path)
    except GridError as exc:
        problems.add(str(exc))
        return []

    def at(*keys) -> str:
        return f"{path}:{line(*keys)}"

    for key in doc:
        if key not in TOP_KEYS:
            problems.add(f"{at(key)}: unknown top-level key '{key}'; allowed: {', '.join(TOP_KEYS)}")
    timeout = problems.check(check_timeout, doc.get("timeout_s"), at("timeout_s"))
    repeats = problems.check(check_repeats, doc["repeats"], at("repeats"), default=1) if "repeats" in doc else 1
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, dict):
        problems.add(f"{at('defaults')}: key 'defaults' must be a mapping of parameters")
        defaults = {}
    if "repeats" in defaults:
        problems.check(check_repeats, defaults["repeats"], f"{at('defaults', 'repeats')}: defaults")
    blocks = doc.get("points")
    if not blocks:
        problems.add(f"{at('points')}: key 'points' is missing or empty: the grid has no points")
        return []
    if not isinstance(blocks, list):
        problems.add(f"{at('points')}: key 'points' must be a list of mappings")
        return []
    out = []
    for i, block in enumerate(blocks, 1):
        where = f"{at('points', i - 1)}: points[{i}]"
        if not isinstance(block, dict):
            problems.add(f"{where}: each point block is a mapping, found {block!r}")
            continue

        def key_at(key, item=None, block=block, i=i):  # the line of a key (or of one item of its list)
            if key in block:
                return f"{at('points', i - 1, key, *([] if item is None else [item]))}: points[{i}]"
            if key in defaults:
                return f"{at('defaults', key, *([] if item is None else [item]))}: defaults"
            return f"{at('points', i - 1)}: points[{i}]"

        n_before = problems.count
        merged = {**defaults, **block}
        for key in _params.RUNNER_SET:
            if key in merged:
                problems.add(f"{key_at(key)}: key '{key}' is set by the runner for every point (records go under "
                             "outputs/runs/<time>/records, ids come from the parameters and the machine); "
                             "remove it from the grid")
        for key in ("workload", "backend", "device"):
            if key not in merged:
                problems.add(f"{where}: key '{key}' is required")
        block_timeout = problems.check(check_timeout, merged.pop("timeout_s", timeout), key_at("timeout_s"))
        block_repeats = (problems.check(check_repeats, merged.pop("repeats"), key_at("repeats"), default=1)
                         if "repeats" in merged else repeats)
        for k, v in merged.items():
            if isinstance(v, list) and not v:
                problems.add(f"{key_at(k)}: key '{k}' is an empty list")
        wls = merged.get("workload", [])
        wls = wls if isinstance(wls, list) else [wls]
        known = []
        for j, wl in enumerate(wls):
            item = j if isinstance(merged["workload"], list) else None
            if problems.check(_params.validate, {"workload": wl}, key_at("workload", item),
                              None, _workloads.names(), default=False) is None:
                known.append(wl)
        for wl in known:  # each value of each key against the knobs of each workload (the lists not multiplied)
            spec = _workloads.knobs(wl)
            for k, v in merged.items():
                if k == "workload" or k in _params.RUNNER_SET:
                    continue
                for j, x in enumerate(v if isinstance(v, list) else [v]):
                    problems.check(_params.validate, {k: x}, key_at(k, j if isinstance(v, list) else None), spec,
                                   _workloads.names())
        lists = {k: len(v) for k, v in merged.items() if isinstance(v, list)}
        out.append((where, Block(str(path), i, block_repeats, lists, line("points", i - 1)), merged, block_timeout,
                    problems.count == n_before, key_at))
    return out


def unique_files(paths) -> list[Path]:
    """``paths`` without a file given again (the same file, however named: resolved), in their order."""
    out: dict = {}
    for p in paths:
        try:
            key = Path(p).resolve()
        except (OSError, RuntimeError):
            key = Path(p)
        out.setdefault(key, Path(p))
    return list(out.values())


def _point_key(p: dict) -> tuple:
    """What makes two points one (their parameters), whichever grid file or block gives them."""
    return tuple(sorted((k, repr(v)) for k, v in p.items() if k not in ("timeout_s", "repeats", "_grid")))


def sizes(paths) -> list[Block]:
    """Every block of the grid files, counted (product of its list lengths, times its repeats) without
    expanding it: a typo of 10^8 points is answered at once. ``GridError``: every problem found without
    expanding (``problems`` adds those that need the points). A file given twice counts once."""
    blocks, problems = [], []
    for p in unique_files(paths):
        found = Problems()
        blocks += [b[1] for b in _blocks(Path(p), found)]
        problems += found.sorted()
    if problems:
        raise GridError(problems)
    return blocks


def _at_key(message: str, where: str, key_at) -> str:
    """``message`` (from ``where``, a block) at the line of the key it names first (``key 'x'``, ``x=2``)."""
    m = re.search(r"key '(\w+)'|: (\w+)=", message[len(where):]) if message.startswith(where) else None
    return key_at(m.group(1) or m.group(2)) + message[len(where):] if m else message


def _expand(path: Path, problems: Problems) -> list[dict]:
    """The points of ``path``; its problems (every block's, and the points' keys against each other in the blocks
    that passed their own checks) go to ``problems``. A block over ``MAX_BLOCK_RUNS`` is refused and then no block
    of the file is expanded."""
    blocks = _blocks(path, problems)
    for _, block, *_ in blocks:
        if block.runs > MAX_BLOCK_RUNS:
            problems.add(f"{block.describe(at_line=True)}: more than {MAX_BLOCK_RUNS:,} runs in one block, refused "
                         "before expanding it (a list too many?)")
    if any(b.runs > MAX_BLOCK_RUNS for _, b, *_ in blocks):
        return []
    points: dict[tuple, dict] = {}
    for where, block, merged, block_timeout, ok, key_at in blocks:
        if not ok:
            continue
        keys = list(merged)
        values = [v if isinstance(v, list) else [v] for v in merged.values()]
        for combo in itertools.product(*values):
            p = dict(zip(keys, combo))
            spec = _workloads.knobs(p["workload"])
            if problems.check(_params.validate, p, where, spec, _workloads.names(), default=False) is False:
                continue
            full = {**_workloads.defaults(p["workload"]), **p}
            full = {k: full[k] for k in spec if k in full}
            missing = [k for k in spec if k not in full]
            if missing:
                problems.add(f"{where}: missing keys {missing}")
                continue
            try:  # keys against each other: several devices or hosts only where they can run
                _distribution.check(full, where)
            except _params.ParamError as exc:
                problems.add(_at_key(str(exc), where, key_at))
                continue
            key = tuple(sorted((k, repr(v)) for k, v in full.items()))
            if key in points:
                points[key]["repeats"] = max(points[key]["repeats"], block.repeats)
                continue
            full["timeout_s"] = block_timeout
            full["repeats"] = block.repeats
            full["_grid"] = str(path)
            points[key] = full
    return list(points.values())


def expand(path) -> list[dict]:
    """Every point of the grid file as a full parameter dict (plus ``timeout_s`` and ``repeats``), validated.
    A point that two blocks give is one point (with the larger ``repeats``). ``GridError``: every problem."""
    return expand_all([path])


def expand_all(paths) -> list[dict]:
    """``expand`` of each file; ``GridError`` with the problems of every file. A file given twice is read once,
    and a point that two files give is one point (with the larger ``repeats``, the first file's ``timeout_s``):
    never a run of this runner that finds its own record and takes it for another runner's."""
    points: dict[tuple, dict] = {}
    problems = []
    for p in unique_files(paths):
        found = Problems()
        for point in _expand(Path(p), found):
            key = _point_key(point)
            if key in points:
                points[key]["repeats"] = max(points[key]["repeats"], point["repeats"])
            else:
                points[key] = point
        problems += found.sorted()
    if problems:
        raise GridError(problems)
    return list(points.values())


def runs(points: list[dict]) -> list[dict]:
    """The runs of ``points``, interleaved: every point once, then every point with ``repeats`` > 1 again,
    and so on (round r holds every point with ``repeats`` > r), so that a drift of the host spreads over
    every configuration instead of landing on one. Each run is its point's dict plus ``_repeat`` (0-based)."""
    rounds = max((p.get("repeats", 1) for p in points), default=0)
    return [{**p, "_repeat": r} for r in range(rounds) for p in points if p.get("repeats", 1) > r]
