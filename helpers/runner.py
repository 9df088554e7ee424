"""The grid runner: validate every grid, then run each point in a fresh kernel through papermill.

Usage::

    python -m helpers.runner [GRID.yaml ...] [--timeout S] [--rerun] [--no-report] [--validate-only]
    python -m helpers.runner --report-only

One process drives every point through the papermill API (no papermill start-up per point); each
point gets a fresh Jupyter kernel (a backend or a device cannot be switched inside a process). A
watchdog kills a point's kernel at its time limit. A point that fails gets a ``failed`` record
with the error and the executed notebook is kept; the grid goes on. Points already done on this
machine (same point id, status ok) are not run again unless ``--rerun``; failed and
skipped points are run again. A point counts as done only when complete: its record has the runner's
own fields (``wall_s``) and, when ok, its executed notebook is there and whole (notebooks are executed
to a temporary file and renamed, so a half-written one never takes the final name).

One point's execution (kernel, notebook, record, resume's test) is ``execute.py``.
Kernels start with the shell's thread and XLA variables removed (``kernel_launcher``; the record's
``env_cleared`` lists them) and an empty IPython profile (no ``~/.ipython`` startup files).

Exit status: 0 all points ok or skipped; 1 a point failed (or the report could not be rendered);
2 a bad grid (nothing run); 3 another run holds outputs/; 4 outputs/ cannot be written (a read-only
folder, a full disk: the run stops cleanly, the points done are kept, run again to resume);
130 interrupted (Ctrl-C, SIGTERM).
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

from . import grid as _grid
from . import record as _record
from .execute import (  # noqa: F401 - also this module's interface (benchmarks/, tests)
    KERNEL_NAME,
    CannotWrite,
    _register_engine,
    cannot_write,
    done_point_ids,
    install_kernelspec,
    is_complete,
    kill_kernel,
    notebook_params,
    run_point,
    set_aside,
    set_aside_interrupted,
    skip_without_kernel,
)
from .machine import machine_key
from .paths import NOTEBOOKS, PARAMS, outputs_dir

DEFAULT_TIMEOUT_S = 3600
EXIT_FAILED, EXIT_BAD_GRID, EXIT_BUSY, EXIT_CANNOT_WRITE, EXIT_INTERRUPTED = 1, 2, 3, 4, 130


# ------------------------------------------------------------------ points

def describe(p: dict) -> str:
    extra = []
    for k in ("batch_size", "precision", "threads", "jit_compile", "n_train"):
        extra.append(f"{k}={p[k]}")
    return f"{p['workload']} {p['backend']}/{p['device']} " + " ".join(extra)


def has_nvidia_gpu() -> bool:
    """Whether NVML or the device files show an NVIDIA GPU (the notebook still verifies the device)."""
    from .fingerprint import gpus

    return bool(gpus()["gpu_names"]) or any(Path("/dev").glob("nvidia[0-9]*"))


def render_report(folders: list[Path], run_dir: Path, kernel: str, out_html: Path,
                  parameters: dict | None = None) -> Path:
    """Execute summary.ipynb over ``folders`` in a fresh kernel, render it to ``out_html``; write the index
    page (``index.html`` beside it) linking the report and every executed workload notebook as HTML."""
    import papermill as pm

    from .report import render_html, render_index

    executed = run_dir / "summary.ipynb"
    os.environ["CGB_KERNEL_STDERR"] = str(run_dir / "summary.stderr.log")  # the kernel's own chatter: a file
    params = {**(parameters or {}), "inputs": [str(f) for f in folders]}
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

    path = out_root / ".run.lock"
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
    ap = argparse.ArgumentParser(prog="run_all.sh", description=__doc__.split("\n\n")[0])
    ap.add_argument("grids", nargs="*", type=Path, help="grid files (default: params/quick.yaml)")
    ap.add_argument("--timeout", type=float, default=None,
                    help=f"per-point limit in seconds (default: the grid's timeout_s, else {DEFAULT_TIMEOUT_S})")
    ap.add_argument("--budget", type=float, default=None,
                    help="start no new point after this many seconds (the rest: run again to resume)")
    ap.add_argument("--price-profile", default=None,
                    help="this machine's profile in the prices file (its cost in the report)")
    ap.add_argument("--prices", type=Path, default=None, help="prices file (default params/prices.yaml)")
    ap.add_argument("--rerun", action="store_true", help="run points already done on this machine again")
    ap.add_argument("--skip-failed", action="store_true",
                    help="on resume, do not run again the points that failed before (an out-of-memory at a "
                         "batch size fails again; default: failed and skipped points are retried)")
    ap.add_argument("--no-report", action="store_true", help="do not render the report")
    ap.add_argument("--report-only", action="store_true", help="only render the report from outputs/")
    ap.add_argument("--validate-only", action="store_true", help="validate the grids, print the points, exit")
    ap.add_argument("--inputs", nargs="+", type=Path, default=None, metavar="DIR",
                    help="record folders the report reads (default: outputs/): runs of several machines, "
                         "a published reference, records copied from elsewhere")
    args = ap.parse_args(argv)
    logging.getLogger("papermill").setLevel(logging.WARNING)
    logging.getLogger("traitlets").setLevel(logging.ERROR)

    out_root = outputs_dir()
    missing = [str(f) for f in args.inputs or [] if not Path(f).is_dir()]
    if missing:
        print(f"error: --inputs: no such folder: {', '.join(missing)}", file=sys.stderr)
        print("nothing was run.", file=sys.stderr)
        return EXIT_BAD_GRID
    grids = args.grids or [PARAMS / "quick.yaml"]
    points: list[dict] = []
    if not args.report_only:
        try:
            points = _grid.expand_all(grids)
        except _grid.GridError as exc:
            print(f"error: {exc}", file=sys.stderr)
            print("nothing was run.", file=sys.stderr)
            return EXIT_BAD_GRID
        if args.timeout is not None and args.timeout <= 0:
            print("error: --timeout must be > 0 seconds", file=sys.stderr)
            return EXIT_BAD_GRID
    if args.price_profile:
        from .report import PriceError, check_profile, load_prices

        try:
            check_profile(args.price_profile, load_prices(args.prices), "--price-profile")
        except PriceError as exc:
            print(f"error: {exc}", file=sys.stderr)
            print("nothing was run.", file=sys.stderr)
            return EXIT_BAD_GRID
    if args.validate_only:
        for i, p in enumerate(points, 1):
            print(f"[{i}/{len(points)}] {describe(p)}")
        print(f"{len(points)} points valid")
        return 0

    try:
        out_root.mkdir(parents=True, exist_ok=True)
        lock = acquire_lock(out_root)
        if lock is None:
            return EXIT_BUSY
        stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
        run_dir = out_root / "runs" / f"{stamp}-{uuid.uuid4().hex[:6]}"
        run_dir.mkdir(parents=True, exist_ok=True)
        kernel = install_kernelspec(out_root / ".jupyter")
        log_path = run_dir / "run.log"
        log_file = log_path.open("a", buffering=1)
    except OSError as exc:
        print(f"error: {_cannot_write_message(out_root, cannot_write(exc) or str(exc))}", file=sys.stderr)
        print("nothing was run.", file=sys.stderr)
        return EXIT_CANNOT_WRITE
    signal.signal(signal.SIGTERM, _terminate)
    os.environ["CGB_KERNEL_IPYTHONDIR"] = str(run_dir / ".ipython")  # kernels: an empty IPython profile
    engine = _register_engine()

    def log(msg: str) -> None:
        print(msg, flush=True)
        try:
            log_file.write(msg + "\n")
        except OSError:  # a full disk: the terminal still has it
            pass

    counts = {"ok": 0, "failed": 0, "skipped": 0, "done before": 0, "not run (budget)": 0}
    budget_s = args.budget
    t_grid = time.perf_counter()
    if points:
        mkey = machine_key()
        log(f"run {run_dir} : {len(points)} points from {', '.join(str(g) for g in grids)}")
        try:
            orphans = set_aside_interrupted(out_root / "runs")
        except OSError as exc:
            log(f"stopped: {_cannot_write_message(out_root, cannot_write(exc) or str(exc))}")
            return EXIT_CANNOT_WRITE
        if orphans:
            log(f"{len(orphans)} record(s) of points stopped in an earlier run before the runner finished them "
                "(killed) set aside: those points run again")
        done = set() if args.rerun else done_point_ids(
            out_root / "runs", ("ok", "failed") if args.skip_failed else ("ok",))
        try:
            for i, p in enumerate(points, 1):
                params = notebook_params(p)
                p["point_id"] = _record.point_id(params, mkey)
                head = f"[{i}/{len(points)}] {describe(p)}"
                if p["point_id"] in done:
                    counts["done before"] += 1
                    log(f"{head}  done before ({p['point_id']}): not run again (--rerun to force)")
                    continue
                timeout_s = args.timeout or p.get("timeout_s") or DEFAULT_TIMEOUT_S
                from .device import BACKEND_MODULES, allowed_cores, backend_installed

                if budget_s is not None and time.perf_counter() - t_grid > budget_s:
                    counts["not run (budget)"] += 1
                    log(f"{head}  not run: the --budget of {budget_s:g} s is spent (run again to resume)")
                    continue
                if not backend_installed(p["backend"]):
                    rec = skip_without_kernel(p, run_dir, f"backend not installed: the "
                                              f"'{BACKEND_MODULES[p['backend']]}' package is not importable "
                                              "in this Python")
                elif p.get("threads", 0) > len(allowed_cores()):
                    rec = skip_without_kernel(p, run_dir, f"threads={p['threads']} but this machine lets the "
                                              f"process use {len(allowed_cores())} cores")
                elif p["device"] == "gpu" and not has_nvidia_gpu():
                    rec = skip_without_kernel(p, run_dir, "no NVIDIA GPU on this machine (NVML and "
                                              "/dev/nvidia* find none): a GPU point is not timed on the CPU")
                else:
                    rec = run_point(engine, p, run_dir, kernel, timeout_s, log, args.price_profile)
                st = rec.get("status", "failed")
                counts[st] = counts.get(st, 0) + 1
                tail = ""
                if st == "ok" and rec.get("samples_per_s"):
                    tail = (f"  first epoch {rec['first_epoch_s']:.2f}s, {rec['median_epoch_s']:.3f} s/epoch, "
                            f"{rec['samples_per_s']:.0f} samples/s ({rec.get('data_source')})")
                elif rec.get("reason"):
                    tail = "  " + rec["reason"].splitlines()[0][:200]
                log(f"{head}  {st}  {rec.get('wall_s', 0):.1f}s{tail}")
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
        f"{counts['done before']} done before, {counts['not run (budget)']} not run (budget); "
        f"{time.perf_counter() - t_grid:.1f}s")
    if not args.no_report:
        t0 = time.perf_counter()
        try:
            inputs = [Path(f).resolve() for f in args.inputs] if args.inputs else [out_root]
            html = render_report(inputs, run_dir, kernel, out_root / "report.html",
                                 parameters={"prices_file": str(args.prices.resolve())} if args.prices else None)
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
            log(f"report failed: {type(exc).__name__}: {exc}")
            return EXIT_FAILED
    log(f"log: {log_path}")
    return EXIT_FAILED if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
