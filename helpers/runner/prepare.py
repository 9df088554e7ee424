"""Everything the runner decides before it writes anything: the shard, the grids (valid, under the size guard), the
prices, the runs of this shard in order, which of them are done before and which are skipped without a kernel.

    prep = prepare(args)     # a Prepared, or the exit status (Exit.BAD_GRID, Exit.BUSY, ...) with the error printed

A bad shard, grid, price or ``--inputs`` folder, or a grid over the size guard without ``--yes``, is refused with
``Exit.BAD_GRID`` (a grid: every problem of every file, each ``file:line: message``): nothing is run (only a
shard's lock files may be written, ``fleet.enter``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from helpers import grid as _grid
from helpers.exits import Exit
from helpers.measure.machine import machine_key
from helpers.paths import PARAMS, outputs_dir
from helpers.record.ids import point_id
from helpers.runner import shard as _shard
from helpers.runner.fleet import Fleet
from helpers.runner.notebook import notebook_params
from helpers.runner.outputs import cannot_write, cannot_write_message
from helpers.runner.plan import complete_records, guard, of_this_machine, skip_reason
from helpers.workloads import contents


@dataclass
class Prepared:
    """A run decided: its runs in order (``order``, interleaved repeats) and, run by run, whether it is to do
    (``todo``), why it is skipped without a kernel (``reasons``) and whether it starts one (``kernels``)."""

    out_root: Path
    shard: _shard.Shard | None
    fleet: Fleet
    grids: list[Path]
    points: list[dict] = field(default_factory=list)
    order: list[dict] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # the grid's size and estimate (and the guard's warning)
    todo: list[bool] = field(default_factory=list)
    kernels: list[bool] = field(default_factory=list)
    reasons: list[str | None] = field(default_factory=list)


def refuse(lines: list[str]) -> Exit:
    print(f"error: {lines[0]}", *lines[1:], sep="\n", file=sys.stderr)
    print("nothing was run.", file=sys.stderr)
    return Exit.BAD_GRID


def _every_problem(grids, found: _grid.GridError) -> _grid.GridError:
    """``found`` (the problems seen without expanding) with those the sound blocks show once expanded (their keys
    against each other): every problem of the grids in one message."""
    try:
        _grid.expand_all(grids)
    except _grid.GridError as every:
        return every
    return found


def prepare(args) -> Prepared | Exit:
    """The run that ``args`` (the runner's command line) asks for, or why not (printed) as an exit status."""
    out_root = outputs_dir()
    try:  # the shard first: a bad one is refused before anything else
        shard = None if args.report_only else _shard.resolve(args.shard, args.shard_count)
    except _shard.ShardError as exc:
        return refuse([str(exc)])
    from helpers.report.publish.index import page_limit_s
    from helpers.report.publish.index_folder import check_pages_dir, index_limit_s
    from helpers.runner.summary import report_dir

    try:  # the index's time bounds from the environment, the folder of its pages: refused now, not after the run
        page_limit_s()
        index_limit_s()
        check_pages_dir(report_dir(args, out_root))
    except ValueError as exc:
        return refuse([str(exc)])
    fleet = Fleet(out_root, shard, grids=args.grids or [PARAMS / "quick.yaml"])
    missing = [str(f) for f in args.inputs or [] if not Path(f).is_dir()]
    if missing:
        return refuse([f"--inputs: no such folder: {', '.join(missing)}"])
    prep = Prepared(out_root, shard, fleet, args.grids or [PARAMS / "quick.yaml"])
    if not args.report_only:
        try:
            blocks = _grid.sizes(prep.grids)
        except _grid.GridError as exc:
            return refuse(_every_problem(prep.grids, exc).lines())
        over, prep.lines = guard(blocks, None)
        if over and not (args.yes or args.validate_only):  # refused before expanding anything
            return refuse(prep.lines)
        try:
            prep.points = _grid.expand_all(prep.grids)
        except _grid.GridError as exc:
            return refuse(exc.lines())
        if args.timeout is not None and not 0 < args.timeout <= _grid.MAX_TIMEOUT_S:
            print(f"error: --timeout must be > 0 and <= {_grid.MAX_TIMEOUT_S:,} seconds", file=sys.stderr)
            return Exit.BAD_GRID
    if args.price_profile or args.price_set:
        from helpers.report import PriceError, check_profile, load_prices

        try:
            prices = load_prices(args.prices, price_set=args.price_set)
            if args.price_profile:
                check_profile(args.price_profile, prices, "--price-profile")
        except PriceError as exc:
            return refuse([str(exc)])
    if prep.points:
        refused = _plan_runs(args, prep, blocks)
        if refused is not None:
            return refused
    return prep


def _plan_runs(args, prep: Prepared, blocks) -> Exit | None:
    """Fill ``prep``'s runs (this shard's, in order, each with its point id) and what each needs; None, or the exit
    status of a refusal (printed)."""
    mkey = machine_key()
    order = _grid.runs(prep.points)
    for run in order:  # the id holds the content of the files a point reads (a custom model): re-saved, run again
        run["_config_id"] = point_id(notebook_params(run), mkey, contents(run))
        run["point_id"] = run["_config_id"] + (f"-r{run['_repeat']}" if run["_repeat"] else "")
    history = complete_records(prep.out_root / "runs")
    try:
        refused = None if args.validate_only else prep.fleet.enter(order)
    except OSError as exc:
        print(f"error: {cannot_write_message(prep.out_root, cannot_write(exc) or str(exc))}", file=sys.stderr)
        return Exit.CANNOT_WRITE
    if refused:
        print(f"error: {refused[1][0]}", *refused[1][1:], sep="\n", file=sys.stderr)
        print("nothing was run.", file=sys.stderr)
        return refused[0]
    n_grid = len(order)
    order = prep.fleet.select(order, of_this_machine(history, mkey), write=not args.validate_only)  # this shard's
    lines_shard = prep.fleet.describe(len(order), n_grid)
    done: set[str] = set()
    if not args.rerun:
        statuses = ("ok", "failed") if args.skip_failed else ("ok",)
        done = {r["point_id"] for r in history if r.get("status") in statuses}
    todo = [r["point_id"] not in done for r in order]
    reasons, why_not = [], {}  # skip_reason, asked once per (backend, device, threads)
    for r, t in zip(order, todo):
        key = (r["backend"], r["device"], r.get("threads", 0))
        if t and key not in why_not:
            why_not[key] = skip_reason(r)
        reasons.append(why_not[key] if t else None)
    kernels = [t and not why for t, why in zip(todo, reasons)]
    est = _grid.estimate([r for r, k in zip(order, kernels) if k], of_this_machine(history, mkey))
    over, lines = guard(blocks, est, yes_hint=not (args.yes or args.validate_only))
    n_todo, n_kernel = sum(todo), sum(kernels)
    lines[-2] += (f"; {n_todo:,} of its {len(order):,} distinct runs to do ({len(order) - n_todo:,} done before, "
                  f"{n_todo - n_kernel:,} to be skipped here without a kernel)")
    lines += lines_shard
    prep.order, prep.lines, prep.todo, prep.kernels, prep.reasons = order, lines, todo, kernels, reasons
    if over and not (args.yes or args.validate_only):
        return refuse(lines)
    return None
