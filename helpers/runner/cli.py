"""The grid runner: validate every grid, then run each point in a fresh kernel through papermill.

Usage::

    python -m helpers.runner [GRID.yaml ...] [--timeout S] [--rerun] [--no-report] [--validate-only] [--yes]
    python -m helpers.runner --report-only

One process drives every point through the papermill API (no papermill start-up per point); each
point gets a fresh Jupyter kernel (a backend or a device cannot be switched inside a process). A
watchdog kills a point's kernel at its time limit. A point that fails gets a ``failed`` record
with the error and the executed notebook is kept; the grid goes on. Points already done on this
machine (same point id, status ok) are not run again unless ``--rerun``; failed and
skipped points are run again. A point counts as done only when complete: its record has the runner's
own fields (``wall_s``) and, when ok, its executed notebook is there and whole (notebooks are executed
to a temporary file and renamed, so a half-written one never takes the final name).

Repeats: a grid's ``repeats: N`` runs every point N times, each run in its own fresh kernel, interleaved
(every point once, then every point again: a drift of the host does not land on one configuration).
The first run of a point keeps the point's id (``record.point_id``: records of earlier runs count as
that first run); run k >= 1 (the line says ``repeat k+1/N``) has the id ``<id>-r<k>``, so its record
and notebook have their own names. Every record the runner completes carries ``repeat`` (0-based) and
``config_id`` (the point's id); resume counts the repeats done, ``--rerun`` runs them all again.

The size guard: each block is counted before it is expanded (product of its list lengths, times its
repeats). A grid of more than ``plan.GUARD_RUNS`` runs, or whose estimated time exceeds ``plan.GUARD_S``, is
listed (the count, the biggest blocks) and refused with status 2 unless ``--yes``: nothing is run or
written. The estimate takes, for each run still to do, the median wall time of complete records on
this machine of the same workload, backend and device, else of any run on this machine.
``--validate-only`` prints the same count, estimate and warning, lists every run and exits 0.

Progress: each point's line says how many runs are left and, once a point has run here, the time left
(their mean wall time so far in this run; points done before or skipped without a kernel cost nothing).
A point running longer than ``progress.LIVE_AFTER_S`` prints its epoch lines (the kernel's stdout) as they come.

One point's execution (kernel, notebook, record, resume's test) is ``execute.py``.
Kernels start with the shell's thread and XLA variables removed (``kernel_launcher``; the record's
``env_cleared`` lists them) and an empty IPython profile (no ``~/.ipython`` startup files).

Exit status: 0 all points ok or skipped; 1 a point failed (or the report could not be rendered);
2 a bad grid, or one over the size guard without ``--yes`` (nothing run); 3 another run holds outputs/;
4 outputs/ cannot be written (a read-only folder, a full disk: the run stops cleanly, the points done are
kept, run again to resume); 130 interrupted (Ctrl-C, SIGTERM).

Shards (issue 37, docs/cluster.md): ``--shard I/N`` (else Slurm's array variables, or Kubernetes'
``JOB_COMPLETION_INDEX`` with ``--shard-count``/``CGB_SHARD_COUNT``) runs shard I (from 0) of N of the grid's
runs, split by estimated time (``shard.py``); shards share the outputs folder (``fleet.py``: each run is
claimed, a second runner of one shard gets status 3, a shard of another grid status 2) and the last one to
finish renders the merged report.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import signal
import sys
import time
import uuid
from pathlib import Path

from helpers import grid as _grid
from helpers.measure.machine import machine_key
from helpers.paths import NOTEBOOKS, PARAMS, outputs_dir
from helpers.point import launcher as _launch
from helpers.record import store as _record
from helpers.runner import plan as _plan
from helpers.runner import processes as _local_launch
from helpers.runner import progress as _progress
from helpers.runner import shard as _shard
from helpers.runner.claims import set_aside_orphans
from helpers.runner.fleet import Fleet
from helpers.runner.notebook import (
    CannotWrite,
    _register_engine,
    cannot_write,
    install_kernelspec,
    kill_kernel,
    notebook_params,
    skip_without_kernel,
)
from helpers.runner.plan import complete_records, guard, label, of_this_machine, run_setup, skip_reason
from helpers.runner.progress import LiveEpochs, progress, streaming_engine  # noqa: F401 - also this module's interface

DEFAULT_TIMEOUT_S = 3600
EXIT_FAILED, EXIT_BAD_GRID, EXIT_BUSY, EXIT_CANNOT_WRITE, EXIT_INTERRUPTED = 1, 2, 3, 4, 130


def render_report(folders: list[Path], run_dir: Path, kernel: str, out_html: Path,
                  parameters: dict | None = None) -> Path:
    """Execute summary.ipynb over ``folders`` in a fresh kernel, render it to ``out_html``; write the index
    page (``index.html`` beside it) linking the report and every executed workload notebook as HTML."""
    import papermill as pm

    from helpers.report import render_html, render_index

    executed = run_dir / "summary.ipynb"
    os.environ["CGB_KERNEL_STDERR"] = str(run_dir / "summary.stderr.log")  # the kernel's own chatter: a file
    # results.csv and configurations.csv beside the report (the notebook writes them from its context)
    params = {**(parameters or {}), "inputs": [str(f) for f in folders], "csv_dir": str(Path(out_html).parent)}
    pm.execute_notebook(str(NOTEBOOKS / "summary.ipynb"), str(executed), parameters=params, engine_name="cgb",
                        kernel_name=kernel, progress_bar=False, cwd=str(NOTEBOOKS))
    out = render_html(executed, out_html)
    render_index(folders, Path(out_html).parent / "index.html", report_html=out)
    return out


# ------------------------------------------------------------------ one run at a time

def acquire_lock(out_root: Path):
    """An exclusive lock on ``out_root`` for this process (released by the OS when it dies).

    Two grids at once on one machine would also spoil each other's timings, so the second waits
    for nothing: it says who holds the lock and exits with status 3.
    """
    import fcntl

    path = out_root / _launch.lock_name()  # the processes of one mpirun/srun launch are one run
    f = open(path, "a+")  # noqa: SIM115 - held for the life of the process
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        holder = f.read().strip() or "another process"
        print(f"error: {out_root} is in use by a run in progress ({holder}); timings of two grids at once "
              "would spoil each other. Wait for it, or set CGB_OUTPUTS to another folder.", file=sys.stderr)
        f.close()
        return None
    f.seek(0)
    f.truncate()
    f.write(f"pid {os.getpid()} since {dt.datetime.now().isoformat(timespec='seconds')}\n")
    f.flush()
    return f


def _terminate(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def _cannot_write_message(out_root: Path, why: str) -> str:
    return (f"cannot write under {out_root}: {why}. Free space or make the folder writable (or set CGB_OUTPUTS "
            "to another folder), then run again: the points done so far are kept and not run again.")


# ------------------------------------------------------------------ main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="run_all.sh", description=__doc__.split("\n\n")[0],
        epilog="A grid's 'repeats: N' (top level, defaults or a block) runs each point N times, each in a fresh "
               "kernel, interleaved: every point once, then again. Each line says the runs left and the time left; "
               f"a point running over {_progress.LIVE_AFTER_S:g} s prints its epochs as they come. Exit status: "
               "0 ok or "
               "skipped, 1 a point failed, 2 a bad grid or one over the size guard (nothing run), 3 outputs/ "
               "busy, 4 outputs/ not writable, 130 interrupted.")
    ap.add_argument("grids", nargs="*", type=Path, help="grid files (default: params/quick.yaml)")
    ap.add_argument("--timeout", type=float, default=None,
                    help=f"per-point limit in seconds (default: the grid's timeout_s, else {DEFAULT_TIMEOUT_S})")
    ap.add_argument("--budget", type=float, default=None,
                    help="start no new point after this many seconds (the rest: run again to resume)")
    ap.add_argument("--price-profile", default=None,
                    help="this machine's profile in the prices file (its cost in the report)")
    ap.add_argument("--prices", type=Path, default=None, help="prices file (default params/prices.yaml)")
    ap.add_argument("--price-set", default=None,
                    help="the prices the report uses: 'current' (today's, the default) or '2017' (seed 002's table)")
    ap.add_argument("--rerun", action="store_true",
                    help="run points already done on this machine again (every repeat)")
    ap.add_argument("--skip-failed", action="store_true",
                    help="on resume, do not run again the points that failed before (an out-of-memory at a "
                         "batch size fails again; default: failed and skipped points are retried)")
    ap.add_argument("--yes", action="store_true",
                    help=f"run a grid over the size guard: more than {_plan.GUARD_RUNS} runs, or an estimated time "
                         "over "
                         f"{_grid.fmt_duration(_plan.GUARD_S)} from earlier runs on this machine (default: such a grid "
                         "is listed and refused, status 2, nothing run)")
    ap.add_argument("--no-report", action="store_true", help="do not render the report")
    ap.add_argument("--no-reference", action="store_true",
                    help="a report whose records have no GPU run does not compare with the bundled reference GPU")
    ap.add_argument("--report-only", action="store_true", help="only render the report from outputs/")
    ap.add_argument("--validate-only", action="store_true",
                    help="validate the grids, print their size and estimated time, list every run (with its "
                         "repeat), exit; writes nothing")
    ap.add_argument("--inputs", nargs="+", type=Path, default=None, metavar="DIR",
                    help="record folders the report reads (default: outputs/): runs of several machines, "
                         "a published reference, records copied from elsewhere")
    ap.add_argument("--shard", default=None, metavar="I/N",
                    help="run shard I (0 to N-1) of N of the grid's runs, balanced by estimated time; default: "
                         "from SLURM_ARRAY_TASK_ID/COUNT, or JOB_COMPLETION_INDEX with --shard-count (docs/cluster.md)")
    ap.add_argument("--shard-count", type=int, default=None, metavar="N",
                    help=f"the number of shards when the index comes from the environment (a Kubernetes "
                         f"Indexed Job's completions; or {_shard.COUNT_ENV})")
    args = ap.parse_args(argv)
    logging.getLogger("papermill").setLevel(logging.WARNING)
    logging.getLogger("traitlets").setLevel(logging.ERROR)

    def refuse(lines: list[str]) -> int:
        print(f"error: {lines[0]}", *lines[1:], sep="\n", file=sys.stderr)
        print("nothing was run.", file=sys.stderr)
        return EXIT_BAD_GRID

    out_root = outputs_dir()
    try:  # the shard first: a bad one is refused before anything else
        shard = None if args.report_only else _shard.resolve(args.shard, args.shard_count)
    except _shard.ShardError as exc:
        return refuse([str(exc)])
    fleet = Fleet(out_root, shard, grids=args.grids or [PARAMS / "quick.yaml"])
    missing = [str(f) for f in args.inputs or [] if not Path(f).is_dir()]
    if missing:
        return refuse([f"--inputs: no such folder: {', '.join(missing)}"])
    grids = args.grids or [PARAMS / "quick.yaml"]
    points: list[dict] = []
    order: list[dict] = []  # the runs, interleaved
    lines: list[str] = []  # the grid's size and estimate (and the guard's warning)
    if not args.report_only:
        try:
            blocks = _grid.sizes(grids)
            over, lines = guard(blocks, None)
            if over and not (args.yes or args.validate_only):  # refused before expanding anything
                return refuse(lines)
            points = _grid.expand_all(grids)
        except _grid.GridError as exc:
            return refuse([str(exc)])
        if args.timeout is not None and args.timeout <= 0:
            print("error: --timeout must be > 0 seconds", file=sys.stderr)
            return EXIT_BAD_GRID
    if args.price_profile or args.price_set:
        from helpers.report import PriceError, check_profile, load_prices

        try:
            prices = load_prices(args.prices, price_set=args.price_set)
            if args.price_profile:
                check_profile(args.price_profile, prices, "--price-profile")
        except PriceError as exc:
            return refuse([str(exc)])
    done: set[str] = set()
    todo = kernels = []
    if points:
        mkey = machine_key()
        order = _grid.runs(points)
        for run in order:
            run["_config_id"] = _record.point_id(notebook_params(run), mkey)
            run["point_id"] = run["_config_id"] + (f"-r{run['_repeat']}" if run["_repeat"] else "")
        history = complete_records(out_root / "runs")
        try:
            refused = None if args.validate_only else fleet.enter(order)
        except OSError as exc:
            print(f"error: {_cannot_write_message(out_root, cannot_write(exc) or str(exc))}", file=sys.stderr)
            return EXIT_CANNOT_WRITE
        if refused:
            print(f"error: {refused[1][0]}", *refused[1][1:], sep="\n", file=sys.stderr)
            print("nothing was run.", file=sys.stderr)
            return refused[0]
        n_grid = len(order)
        order = fleet.select(order, of_this_machine(history, mkey), write=not args.validate_only)  # this shard's
        lines_shard = fleet.describe(len(order), n_grid)
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
        if over and not (args.yes or args.validate_only):
            return refuse(lines)
    if args.validate_only:
        if lines:
            print("\n".join(lines))
        for i, run in enumerate(order, 1):
            print(f"[{i}/{len(order)}] {label(run, always=True)}")
        print(f"{len(points)} points valid, {len(order)} runs")
        return 0

    try:
        out_root.mkdir(parents=True, exist_ok=True)
        lock = acquire_lock(out_root) if shard is None else True  # shards share the folder (fleet.enter)
        if lock is None:
            return EXIT_BUSY
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        run_dir = out_root / "runs" / f"{stamp}-{uuid.uuid4().hex[:6]}"
        run_dir.mkdir(parents=True, exist_ok=True)
        fleet.start(run_dir, len(order))
        kernel = install_kernelspec(out_root / ".jupyter")
        log_path = run_dir / "run.log"
        log_file = log_path.open("a", buffering=1)
    except OSError as exc:
        print(f"error: {_cannot_write_message(out_root, cannot_write(exc) or str(exc))}", file=sys.stderr)
        print("nothing was run.", file=sys.stderr)
        return EXIT_CANNOT_WRITE
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)  # also where the parent left SIGINT ignored (a background job)
    os.environ["CGB_KERNEL_IPYTHONDIR"] = str(run_dir / ".ipython")  # kernels: an empty IPython profile
    engine = streaming_engine(_register_engine())

    def log(msg: str) -> None:
        print(msg, flush=True)
        try:
            log_file.write(msg + "\n")
        except OSError:  # a full disk: the terminal still has it
            pass

    counts = {"ok": 0, "failed": 0, "skipped": 0, "done before": 0, "not run (budget)": 0, "taken": 0}
    done_statuses = None if args.rerun else (("ok", "failed") if args.skip_failed else ("ok",))
    budget_s = args.budget
    t_grid = time.perf_counter()
    if order:
        log(f"run {run_dir} : {len(order)} runs of {len(points)} points from {', '.join(str(g) for g in grids)}")
        for line in lines:
            log(line)
        if sum(kernels):
            gpu_points = any(p["device"] == "gpu" for p, k in zip(order, kernels) if k)
            run_setup(log, gpu=gpu_points and _plan.has_nvidia_gpu())
        try:
            orphans = set_aside_orphans(out_root / "runs")  # of dead runners only: shards share the folder
        except OSError as exc:
            log(f"stopped: {_cannot_write_message(out_root, cannot_write(exc) or str(exc))}")
            return EXIT_CANNOT_WRITE
        if orphans:
            log(f"{len(orphans)} record(s) of points stopped in an earlier run before the runner finished them "
                "(killed), or whose executed notebook is gone, set aside: those points run again")
        spent: list[float] = []  # wall times of the runs that started a kernel in this run
        left, kernels_left = sum(todo), sum(kernels)  # after the run at hand

        def after() -> str:  # the progress of the runs after this one
            return progress(left, kernels_left, spent)

        try:
            for i, p in enumerate(order):
                head = f"[{i + 1}/{len(order)}] {label(p)}"
                left, kernels_left = left - todo[i], kernels_left - kernels[i]
                if not todo[i]:
                    counts["done before"] += 1
                    log(f"{head}  done before ({p['point_id']}): not run again (--rerun to force)  {after()}")
                    continue
                timeout_s = args.timeout or p.get("timeout_s") or DEFAULT_TIMEOUT_S
                if budget_s is not None and time.perf_counter() - t_grid > budget_s:
                    counts["not run (budget)"] += 1
                    log(f"{head}  not run: the --budget of {budget_s:g} s is spent (run again to resume)")
                    continue
                claim, why = fleet.claim(p, done_statuses)
                if claim is None:
                    counts["taken"] += 1
                    log(f"{head}  not run here: {why}  {after()}")
                    continue
                fields = {"repeat": p["_repeat"], "config_id": p["_config_id"], **fleet.fields()}
                if reasons[i]:
                    rec = {**skip_without_kernel(p, run_dir, reasons[i]), **fields}
                    _record.write_record(rec, run_dir / "records")
                else:
                    title = f"{head}  running for over {_progress.LIVE_AFTER_S:g} s:"
                    engine.sink = LiveEpochs(log, title=title).start()
                    fleet.busy(True)
                    try:
                        # processes: N, the N processes started here (local_launch); else run_point
                        rec = _local_launch.run(engine, p, run_dir, kernel, timeout_s, log, args.price_profile,
                                                record_fields=fields)
                    finally:
                        fleet.busy(False)
                        engine.sink.close()
                        engine.sink = None
                    spent.append(rec.get("wall_s") or 0.0)
                claim.release()
                st = rec.get("status", "failed")
                counts[st] = counts.get(st, 0) + 1
                tail = ""
                if st == "ok" and rec.get("samples_per_s"):
                    tail = (f"  first epoch {rec['first_epoch_s']:.2f}s, {rec['median_epoch_s']:.3f} s/epoch, "
                            f"{rec['samples_per_s']:.0f} samples/s ({rec.get('data_source')})")
                elif rec.get("reason"):
                    tail = "  " + rec["reason"].splitlines()[0][:200]
                log(f"{head}  {st}  {rec.get('wall_s', 0):.1f}s{tail}  {after()}")
        except KeyboardInterrupt:
            log("interrupted: the running point was stopped and left no complete record; run again to resume")
            return EXIT_INTERRUPTED
        except (CannotWrite, OSError) as exc:
            why = cannot_write(exc)
            if why is None:
                raise
            log(f"stopped: {_cannot_write_message(out_root, why)}")
            return EXIT_CANNOT_WRITE
    log(f"grid: {counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped, "
        f"{counts['done before']} done before, {counts['not run (budget)']} not run (budget)"
        + (f", {counts['taken']} taken by other runners" if counts["taken"] else "")
        + f"; {time.perf_counter() - t_grid:.1f}s")
    last = fleet.leave(complete=not (counts["not run (budget)"] or counts["taken"]))
    if shard is not None and not last and not args.no_report:
        log(f"shard {shard}: the merged report is rendered by the last shard to finish (or run --report-only)")
    if not args.no_report and last:
        t0 = time.perf_counter()
        try:
            inputs = [Path(f).resolve() for f in args.inputs] if args.inputs else [out_root]
            html = render_report(inputs, run_dir, kernel, out_root / "report.html",
                                 parameters={**({"prices_file": str(args.prices.resolve())} if args.prices else {}),
                                             **({"price_set": args.price_set} if args.price_set else {}),
                                             "use_reference": not args.no_reference})
            log(f"report: {html} ({time.perf_counter() - t0:.1f}s)")
        except KeyboardInterrupt:
            kill_kernel(engine)
            log("interrupted while rendering the report: the records are complete; render it again with "
                "--report-only")
            return EXIT_INTERRUPTED
        except Exception as exc:
            if cannot_write(exc):
                log(f"report not written: {_cannot_write_message(out_root, cannot_write(exc))}")
                return EXIT_CANNOT_WRITE
            from helpers.report.failed import failure_text, mark_failed

            why = failure_text(exc, run_dir / "summary.ipynb")
            log(f"report failed: {why}")
            if mark_failed(out_root / "report.html", why):  # an older report must not look current
                log(f"report.html now says so; the last good one: {out_root / 'report.previous.html'}")
            return EXIT_FAILED
    log(f"log: {log_path}")
    return EXIT_FAILED if counts["failed"] else 0


def run(argv=None) -> int:
    """``main`` for the command line: SIGTERM or Ctrl-C while setting up is a message and exit 130, not a
    traceback (the grid handles its own)."""
    try:
        return main(argv)
    except KeyboardInterrupt as exc:  # SIGTERM / Ctrl-C while setting up, outside the grid's own handling
        print(f"interrupted ({exc or 'Ctrl-C'}) while setting up: records written so far are complete; run "
              "again to resume", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(run())
