"""The grid runner: validate every grid, then run each point in a fresh kernel through papermill.

Usage::

    python -m helpers.runner [GRID.yaml ...] [--timeout S] [--rerun] [--no-report] [--validate-only]
    python -m helpers.runner --report-only

One process drives every point through the papermill API (no papermill start-up per point); each
point gets a fresh Jupyter kernel (a backend or a device cannot be switched inside a process). A
watchdog kills a point's kernel at its time limit. A point that fails gets a ``failed`` record
with the error and the executed notebook is kept; the grid goes on. Points already done on this
machine (same point id, status ok) are not run again unless ``--rerun``; failed and
skipped points are run again.

Exit status: 0 all points ok or skipped; 1 a point failed; 2 a bad grid (nothing run);
3 another run holds outputs/; 130 interrupted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

from . import grid as _grid
from . import params as _params
from . import record as _record
from .fingerprint import fingerprint, machine_key
from .paths import NOTEBOOKS, PARAMS, PROJECT_ROOT, outputs_dir

KERNEL_NAME = "cgb-python"
DEFAULT_TIMEOUT_S = 3600


# ------------------------------------------------------------------ kernel and engine

def install_kernelspec(root: Path) -> str:
    """A kernelspec running *this* Python (whatever kernels the user has installed)."""
    kdir = root / "kernels" / KERNEL_NAME
    kdir.mkdir(parents=True, exist_ok=True)
    spec = {"argv": [sys.executable, "-m", "helpers.kernel_launcher", "-f", "{connection_file}"],
            "display_name": f"Python ({sys.executable})", "language": "python",
            "metadata": {"debugger": False}}
    (kdir / "kernel.json").write_text(json.dumps(spec, indent=1))
    paths = [str(root)] + [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]
    # nbconvert's templates live in <prefix>/share/jupyter; with `pip install --target DIR` (images
    # whose Python is used as it is) that prefix is DIR, which Jupyter does not search by itself
    try:
        import nbconvert

        share = Path(nbconvert.__file__).resolve().parents[1] / "share" / "jupyter"
        if share.is_dir():
            paths.append(str(share))
    except ImportError:
        pass
    os.environ["JUPYTER_PATH"] = os.pathsep.join(paths)
    # the kernel imports `helpers` from this checkout, installed or not
    pp = [str(PROJECT_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(pp))
    return KERNEL_NAME


def _register_engine():
    from papermill.clientwrap import PapermillNotebookClient
    from papermill.engines import NBClientEngine, papermill_engines
    from papermill.log import logger
    from papermill.utils import merge_kwargs, remove_args

    class WatchedEngine(NBClientEngine):
        """papermill's nbclient engine, exposing the running client so a watchdog can kill it."""

        current = None

        @classmethod
        def execute_managed_notebook(cls, nb_man, kernel_name, log_output=False, stdout_file=None,
                                     stderr_file=None, start_timeout=60, execution_timeout=None,
                                     **kwargs):
            kwargs = remove_args(["input_path"], **kwargs)
            safe_kwargs = remove_args(["timeout", "startup_timeout"], **kwargs)
            final_kwargs = merge_kwargs(safe_kwargs, timeout=execution_timeout, startup_timeout=start_timeout,
                                        kernel_name=kernel_name, log=logger, log_output=log_output,
                                        stdout_file=stdout_file, stderr_file=stderr_file)
            client = PapermillNotebookClient(nb_man, **final_kwargs)
            cls.current = client  # kept after it returns: an interrupt handler may still need it
            return client.execute()

    papermill_engines.register("cgb", WatchedEngine)
    return WatchedEngine


def kill_kernel(engine) -> bool:
    """Kill the running point's kernel and its children (its own process group)."""
    client = getattr(engine, "current", None)
    km = getattr(client, "km", None) if client is not None else None
    prov = getattr(km, "provisioner", None) if km is not None else None
    pid = getattr(prov, "pid", None) if prov is not None else None
    if not pid:
        return False
    try:
        os.killpg(os.getpgid(pid), signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            return False
    return True


# ------------------------------------------------------------------ points

def describe(p: dict) -> str:
    extra = []
    for k in ("batch_size", "precision", "threads", "jit_compile", "n_train"):
        extra.append(f"{k}={p[k]}")
    return f"{p['workload']} {p['backend']}/{p['device']} " + " ".join(extra)


def done_point_ids(folder: Path, statuses: tuple[str, ...] = ("ok",)) -> set[str]:
    """Ids of the points with a record of one of ``statuses`` under ``folder`` (resume skips them)."""
    records, _ = _record.read_records([folder]) if folder.exists() else ([], [])
    return {r["point_id"] for r in records if r.get("status") in statuses}


def notebook_params(p: dict) -> dict:
    """A grid point's notebook parameters (without the runner's own keys)."""
    return {k: v for k, v in p.items() if k not in _params.RUNNER_KEYS and not k.startswith("_")}


def run_point(engine, p: dict, run_dir: Path, kernel: str, timeout_s: float, log,
              price_profile: str | None = None) -> dict:
    """Execute one point's notebook; return its record (written by the notebook or, on a crash, here)."""
    import papermill as pm

    params = notebook_params(p)
    pid = p["point_id"]
    params["point_id"] = pid
    params["output_dir"] = str(run_dir / "records")
    stem = _record.record_name(params, pid)[:-5]
    nb_out = run_dir / "notebooks" / f"{stem}.ipynb"
    nb_out.parent.mkdir(parents=True, exist_ok=True)
    rec_path = run_dir / "records" / f"{stem}.json"
    os.environ["CGB_EXECUTED_NOTEBOOK"] = str(nb_out)
    os.environ["CGB_KERNEL_STDERR"] = str(nb_out.with_suffix(".stderr.log"))
    timed_out = threading.Event()

    def on_timeout():
        timed_out.set()
        kill_kernel(engine)

    watchdog = threading.Timer(timeout_s, on_timeout)
    watchdog.daemon = True
    t0 = time.perf_counter()
    error = None
    watchdog.start()
    try:
        pm.execute_notebook(str(NOTEBOOKS / f"{p['workload']}.ipynb"), str(nb_out), parameters=params,
                            engine_name="cgb", kernel_name=kernel, progress_bar=False,
                            cwd=str(NOTEBOOKS), start_timeout=120)
    except Exception as exc:  # PapermillExecutionError, DeadKernelError, timeouts ...
        error = exc
    except KeyboardInterrupt:  # Ctrl-C / SIGTERM: no orphan kernel, no record for this point
        kill_kernel(engine)
        raise
    finally:
        watchdog.cancel()
        engine.current = None
    wall = time.perf_counter() - t0
    rec = None
    if rec_path.exists():
        rec = json.loads(rec_path.read_text())
    ename = getattr(error, "ename", type(error).__name__ if error else None)
    if rec is None or (error is not None and rec.get("status") == "ok"):
        # the notebook died before writing its record (or after): record the failure here
        rec = _record.empty_record(params, pid)
        if timed_out.is_set():
            reason = f"timed out after {timeout_s:g} s (kernel killed)"
        elif error is not None:
            evalue = getattr(error, "evalue", str(error))
            reason = f"{ename}: {evalue}"[:2000]
        else:
            reason = "the notebook finished without writing a record"
        rec.update(status="failed", reason=reason, fingerprint=fingerprint(),
                   started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    elif timed_out.is_set() and rec.get("status") != "skipped":
        rec.update(status="failed", reason=f"timed out after {timeout_s:g} s (kernel killed)")
    rec["notebook"] = os.path.relpath(nb_out, rec_path.parent)  # relative: the folder can move
    if price_profile:
        rec["price_profile"] = price_profile
    rec["wall_s"] = round(wall, 3)
    if rec.get("duration_s") is None:
        rec["duration_s"] = round(wall, 3)
    _record.write_atomic(rec_path, rec)
    return {**rec, "_path": str(rec_path)}


def has_nvidia_gpu() -> bool:
    """Whether NVML or the device files show an NVIDIA GPU (the notebook still verifies the device)."""
    from .fingerprint import gpus

    return bool(gpus()["gpu_names"]) or any(Path("/dev").glob("nvidia[0-9]*"))


def skip_without_kernel(p: dict, run_dir: Path, reason: str) -> dict:
    """A ``skipped`` record for a point that cannot run here, written without starting a kernel."""
    params = notebook_params(p)
    params["output_dir"] = str(run_dir / "records")
    rec = _record.empty_record(params, p["point_id"])
    rec.update(status="skipped", reason=reason, fingerprint=fingerprint(), wall_s=0.0, duration_s=0.0,
               started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    _record.write_record(rec, run_dir / "records")
    return rec


def render_report(folders: list[Path], run_dir: Path, kernel: str, out_html: Path,
                  parameters: dict | None = None) -> Path:
    """Execute summary.ipynb over ``folders`` in a fresh kernel, render it to ``out_html``; write the index
    page (``index.html`` beside it) linking the report and every executed workload notebook as HTML."""
    import papermill as pm

    from .report import render_html, render_index

    executed = run_dir / "summary.ipynb"
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
        return 2
    grids = args.grids or [PARAMS / "quick.yaml"]
    points: list[dict] = []
    if not args.report_only:
        try:
            points = _grid.expand_all(grids)
        except _grid.GridError as exc:
            print(f"error: {exc}", file=sys.stderr)
            print("nothing was run.", file=sys.stderr)
            return 2
        if args.timeout is not None and args.timeout <= 0:
            print("error: --timeout must be > 0 seconds", file=sys.stderr)
            return 2
    if args.price_profile:
        from .report import PriceError, check_profile, load_prices

        try:
            check_profile(args.price_profile, load_prices(args.prices), "--price-profile")
        except PriceError as exc:
            print(f"error: {exc}", file=sys.stderr)
            print("nothing was run.", file=sys.stderr)
            return 2
    if args.validate_only:
        for i, p in enumerate(points, 1):
            print(f"[{i}/{len(points)}] {describe(p)}")
        print(f"{len(points)} points valid")
        return 0

    out_root.mkdir(parents=True, exist_ok=True)
    lock = acquire_lock(out_root)
    if lock is None:
        return 3
    signal.signal(signal.SIGTERM, _terminate)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = out_root / "runs" / f"{stamp}-{uuid.uuid4().hex[:6]}"
    run_dir.mkdir(parents=True, exist_ok=True)
    kernel = install_kernelspec(out_root / ".jupyter")
    engine = _register_engine()
    log_path = run_dir / "run.log"
    log_file = log_path.open("a", buffering=1)

    def log(msg: str) -> None:
        print(msg, flush=True)
        log_file.write(msg + "\n")

    counts = {"ok": 0, "failed": 0, "skipped": 0, "done before": 0, "not run (budget)": 0}
    budget_s = args.budget
    t_grid = time.perf_counter()
    if points:
        mkey = machine_key()
        done = set() if args.rerun else done_point_ids(
            out_root / "runs", ("ok", "failed") if args.skip_failed else ("ok",))
        log(f"run {run_dir} : {len(points)} points from {', '.join(str(g) for g in grids)}")
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
            log("interrupted: the running point was stopped and left no record; run again to resume")
            return 130
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
        except Exception as exc:
            log(f"report failed: {type(exc).__name__}: {exc}")
            return 1
    log(f"log: {log_path}")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
