"""A prepared run (``prepare.py``) carried out: the outputs folder held, a run folder, then each run in order in
a fresh kernel (claimed first, ``fleet.claim``), one line each, and at the end the report (``summary.py``).

    status = run_grid(args, prep)    # the exit status (helpers.exits.Exit)
    status = report_only(args, prep) # the verb report: the report alone, into --out (default: the outputs folder)

Points left by ``--budget`` make the status ``Exit.BUDGET`` (run again to resume), even where a point failed.
Ctrl-C and SIGTERM stop the running point (its kernel killed, no complete record left: ``Exit.INTERRUPTED``); a
full disk or a read-only folder stops the run cleanly (``Exit.CANNOT_WRITE``); the points done are kept.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from helpers.exits import Exit
from helpers.runner import plan as _plan
from helpers.runner import processes as _local_launch
from helpers.runner import progress as _progress
from helpers.runner.engine import RUN_FACTS, install_kernelspec, register_engine
from helpers.runner.kernel_watch import quiet_dead_kernel_tasks
from helpers.runner.notebook import skip_without_kernel
from helpers.runner.orphans import set_aside_orphans
from helpers.runner.outputs import CannotWrite, acquire_locks, cannot_write, cannot_write_message
from helpers.runner.partial import PartialPage, banner_text
from helpers.runner.plan import label, run_setup
from helpers.runner.prepare import Prepared
from helpers.runner.progress import LiveEpochs, progress, streaming_engine
from helpers.runner.summary import report_after_run, report_dir, report_inputs, report_parameters

DEFAULT_TIMEOUT_S = 3600


RESEND_S = 0.05  # a stop signal that landed where an exception is dropped comes again this much later


def _terminate(signum, frame):
    """SIGTERM and SIGINT as ``KeyboardInterrupt`` (the run stops as on Ctrl-C), except where Python would print the
    exception and drop it (``_drops_exceptions``: a traceback on the terminal and the run going on): there the signal
    is sent again ``RESEND_S`` later, from a daemon thread, until it lands where it stops the run."""
    if _drops_exceptions(frame):
        _resend(signum)
        return
    raise KeyboardInterrupt(f"signal {signum}")


def _resend(signum: int) -> None:
    t = threading.Timer(RESEND_S, os.kill, (os.getpid(), signum))
    t.daemon = True  # never keeps a finished run alive
    t.start()


def _drops_exceptions(frame) -> bool:
    """Whether a frame on ``frame``'s stack is the import system's (its module locks' weakref callbacks print an
    exception raised in them as "Exception ignored in ..." with its traceback, and go on) or a ``__del__``."""
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith("<frozen importlib") or code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


def block_over(order: list[dict], i: int) -> bool:
    """Whether run ``i`` ends a block of the grid as the page sees it: the next run is of another workload, grid
    file or round of repeats (or there is none)."""
    if i + 1 >= len(order):
        return True
    a, b = order[i], order[i + 1]
    return any(a.get(k) != b.get(k) for k in ("workload", "_grid", "_repeat"))


def run_grid(args, prep: Prepared) -> Exit:
    """Run ``prep``'s runs as the runner's command line (``args``) asks, then render the report; the exit status."""
    out_root, fleet, order, todo, kernels = prep.out_root, prep.fleet, prep.order, prep.todo, prep.kernels
    try:
        out_root.mkdir(parents=True, exist_ok=True)
        # the outputs folder (shards share it: fleet.enter) and --out, held as the outputs folder is
        out_dir = report_dir(args, out_root)
        lock = acquire_locks(([out_root] if prep.shard is None else [])
                             + ([out_dir] if out_dir.resolve() != out_root.resolve() else []))
        if lock is None:
            return Exit.BUSY
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        run_dir = out_root / "runs" / f"{stamp}-{uuid.uuid4().hex[:6]}"
        run_dir.mkdir(parents=True, exist_ok=True)
        fleet.start(run_dir, len(order))
        kernel = install_kernelspec(out_root / ".jupyter")
        log_path = run_dir / "run.log"
        log_file = log_path.open("a", buffering=1)
    except OSError as exc:
        print(f"error: {cannot_write_message(out_root, cannot_write(exc) or str(exc))}", file=sys.stderr)
        print("nothing was run.", file=sys.stderr)
        return Exit.CANNOT_WRITE
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)  # also where the parent left SIGINT ignored (a background job)
    quiet_dead_kernel_tasks()  # no asyncio traceback of a stopped kernel's poll task after "interrupted"
    RUN_FACTS["CGB_KERNEL_IPYTHONDIR"] = str(run_dir / ".ipython")  # kernels: an empty IPython profile
    engine = streaming_engine(register_engine())

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
        log(f"run {run_dir} : {len(order)} runs of {len(prep.points)} points from "
            f"{', '.join(str(g) for g in prep.grids)}")
        for line in prep.lines:
            log(line)
        if sum(kernels):
            gpu_points = any(p["device"] == "gpu" for p, k in zip(order, kernels) if k)
            run_setup(log, gpu=gpu_points and _plan.has_nvidia_gpu())
        try:
            orphans = set_aside_orphans(out_root / "runs")  # of dead runners only: shards share the folder
        except OSError as exc:
            log(f"stopped: {cannot_write_message(out_root, cannot_write(exc) or str(exc))}")
            return Exit.CANNOT_WRITE
        if orphans:
            log(f"{len(orphans)} record(s) of points stopped in an earlier run before the runner finished them "
                "(killed), or whose executed notebook is gone, set aside: those points run again")
        spent: list[float] = []  # wall times of the runs that started a kernel in this run
        left, kernels_left = sum(todo), sum(kernels)  # after the run at hand
        page = None  # report.html as the grid goes (one runner writing the report: no shard, a report asked for)
        if not args.no_report and prep.shard is None and len(order) > 1:
            page = PartialPage(report_dir(args, out_root) / "report.html", report_inputs(args, out_root),
                               report_parameters(args), len(order), log)

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
                    from helpers.report.load.visible import visible

                    log(f"{head}  not run here: {visible(str(why), line=True)}  {after()}")
                    continue
                fields = {"repeat": p["_repeat"], "config_id": p["_config_id"], **fleet.fields()}
                if prep.reasons[i]:
                    rec = skip_without_kernel(p, run_dir, prep.reasons[i], fields)
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
                log(f"{head}  {st}  {rec.get('wall_s', 0):.1f}s{_progress.outcome(rec)}  {after()}")
                if page is not None:
                    page.after_run(i + 1, block_over(order, i))
        except KeyboardInterrupt:
            log("interrupted: the running point was stopped and left no complete record; run again to resume")
            if page is not None:
                page.final(sum(counts[k] for k in ("ok", "failed", "skipped", "done before")), "interrupted")
            return Exit.INTERRUPTED
        except (CannotWrite, OSError) as exc:
            why = cannot_write(exc)
            if why is None:
                raise
            log(f"stopped: {cannot_write_message(out_root, why)}")
            return Exit.CANNOT_WRITE
    log(f"grid: {counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped, "
        f"{counts['done before']} done before, {counts['not run (budget)']} not run (budget)"
        + (f", {counts['taken']} taken by other runners" if counts["taken"] else "")
        + f"; {time.perf_counter() - t_grid:.1f}s")
    last = fleet.leave(complete=not (counts["not run (budget)"] or counts["taken"]))
    if prep.shard is not None and not last and not args.no_report:
        log(f"shard {prep.shard}: the merged report is rendered by the last shard to finish (or run_all.sh report)")
    if not args.no_report and last:
        ran = sum(counts[k] for k in ("ok", "failed", "skipped", "done before"))
        banner = banner_text(ran, len(order), "the --budget is spent") if counts["not run (budget)"] else ""
        failed = report_after_run(args, out_root, run_dir, kernel, engine, log, banner=banner)
        if failed is not None:
            return failed
    log(f"log: {log_path}")
    if counts["not run (budget)"]:
        log(f"{counts['not run (budget)']} run(s) left by the --budget (exit {int(Exit.BUDGET)}): run the same "
            "command again to resume")
        return Exit.BUDGET
    return Exit.FAILED if counts["failed"] else Exit.OK


def report_only(args, prep: Prepared) -> Exit:
    """The verb ``report``: the report over ``--inputs`` (default: the outputs folder) into ``--out`` (default: the
    outputs folder, held as a run holds it). No run folder: the executed summary notebook and the kernel's files
    live in a temporary folder, removed after."""
    out_root = prep.out_root
    out_dir = report_dir(args, out_root)
    try:
        # the folder it writes to (the outputs folder or --out), held as a run holds it (till this process ends):
        # two reports into one folder at once would mix one's index with the other's report
        lock = acquire_locks([out_dir])
        if lock is None:
            return Exit.BUSY
    except OSError as exc:
        print(f"error: {cannot_write_message(out_dir, cannot_write(exc) or str(exc))}", file=sys.stderr)
        return Exit.CANNOT_WRITE
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    quiet_dead_kernel_tasks()
    with tempfile.TemporaryDirectory(prefix="cgb-report-") as tmp:
        work = Path(tmp)
        kernel = install_kernelspec(work / ".jupyter")
        RUN_FACTS["CGB_KERNEL_IPYTHONDIR"] = str(work / ".ipython")  # the kernel: an empty IPython profile
        failed = report_after_run(args, out_root, work, kernel, register_engine(), lambda msg: print(msg, flush=True))
    return Exit.OK if failed is None else failed
