"""One grid point's execution: the record and notebook kept consistent, resume's test.

    rec = run_point(engine, p, run_dir, kernel, timeout_s, log)     # CannotWrite: stop the run
    done = done_point_ids(out_root / "runs")                         # complete points only

The kernel and the engine (``engine = register_engine()``) are ``engine.py``.
The record is written once, last, by the runner (``writer.write_record``): the kernel stages the record it made
(``writer.keep``, a hidden file beside the executed notebook) and the runner adds its own facts (wall time,
notebook, repeat, configuration) before that one write. The notebook is executed to a hidden temporary file and
renamed once papermill has written it. An interrupt or a write failure leaves no record (the point runs again).
A point is *complete* when its record has the runner's own fields (``wall_s``: a folder of an older suite could
hold a record its notebook wrote before an interrupt) and, when ok, its executed notebook is there and whole.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from pathlib import Path

from helpers import params as _params
from helpers.measure.fingerprint import fingerprint
from helpers.paths import NOTEBOOKS, workload_notebook
from helpers.record import writer
from helpers.record.ids import notebook_path, record_name
from helpers.record.reader import read_json_file, read_records
from helpers.record.schema import empty_record
from helpers.runner.engine import kill_kernel
from helpers.runner.kernel import inherited, kept
from helpers.runner.kernel_watch import KernelWatch
from helpers.runner.outputs import CannotWrite, cannot_write

MAX_NOTEBOOK_BYTES = 500 * 2**20


def is_complete(rec: dict) -> bool:
    """Whether the runner finished this point: its own fields are in the record (``wall_s``: a record
    the notebook wrote just before an interrupt has none) and an ok point's executed notebook is there
    and whole JSON."""
    if rec.get("wall_s") is None:
        return False
    if rec.get("status") != "ok":
        return True
    nb = notebook_path(rec)
    if nb is None:
        return False
    obj, why = read_json_file(nb, MAX_NOTEBOOK_BYTES)
    return why is None and isinstance(obj, dict) and isinstance(obj.get("cells"), list)


def done_point_ids(folder: Path, statuses: tuple[str, ...] = ("ok",)) -> set[str]:
    """Ids of the points with a complete record (``is_complete``) of one of ``statuses`` under ``folder``
    (resume skips them)."""
    records, _ = read_records([folder]) if folder.exists() else ([], [])
    return {r["point_id"] for r in records if r.get("status") in statuses and is_complete(r)}


def set_aside(rec_path: Path) -> Path | None:
    """Move a record that is not complete out of the way (a hidden name: no reader, no resume reads it)."""
    if not rec_path.exists():
        return None
    aside = rec_path.with_name(f".{rec_path.name}.incomplete")
    try:
        os.replace(rec_path, aside)
        return aside
    except OSError:
        rec_path.unlink(missing_ok=True)
        return None


def notebook_params(p: dict) -> dict:
    """A grid point's notebook parameters (without the runner's own keys)."""
    return {k: v for k, v in p.items() if k not in _params.RUNNER_KEYS and not k.startswith("_")}


def run_point(engine, p: dict, run_dir: Path, kernel: str, timeout_s: float, log,
              price_profile: str | None = None, record_fields: dict | None = None, kernel_env: dict | None = None,
              write: bool = True) -> dict:
    """Execute one point's notebook; write its record (the kernel's, staged, or on a crash one made here) and
    return it.

    The notebook is executed to a hidden temporary file and renamed once papermill has written it whole;
    the record is written last, once, with the runner's fields. On an interrupt, or when nothing more can be
    written (``CannotWrite``), no record is written: record, notebook and resume stay consistent (the point
    runs again). ``record_fields`` go into the record as they are (the runner's ``repeat`` and ``config_id``);
    ``kernel_env``: more of the kernel's environment (never this process's); ``write=False``: the caller writes
    the record (``processes.run``: a point of several processes, its processes' parts added first)."""
    import papermill as pm

    params = notebook_params(p)
    pid = p["point_id"]
    params["point_id"] = pid
    params["output_dir"] = str(run_dir / "records")
    stem = record_name(params, pid)[:-5]
    nb_out = run_dir / "notebooks" / f"{stem}.ipynb"
    nb_tmp = nb_out.with_name(f".{nb_out.stem}.partial.ipynb")
    rec_path = run_dir / "records" / f"{stem}.json"
    staged = nb_out.with_name(f".{stem}.{os.getpid()}.record.json")  # the kernel's record, for the runner to write
    staged.unlink(missing_ok=True)
    facts = {**(kernel_env or {}), writer.STAGE_ENV: str(staged),
             "CGB_EXECUTED_NOTEBOOK": str(nb_out), "CGB_KERNEL_STDERR": str(nb_out.with_suffix(".stderr.log")),
             # no timing window (min_steady_s) extends past this: the timeout less a margin for the record and plots
             "CGB_POINT_DEADLINE": str(time.time() + timeout_s - min(60.0, 0.2 * timeout_s))}
    cleared, env_kept = inherited(), kept()  # what the kernel launcher removes / keeps
    timed_out = threading.Event()

    def on_timeout():
        timed_out.set()
        kill_kernel(engine)

    def abandon(why: str) -> None:
        nb_tmp.unlink(missing_ok=True)
        if staged.exists():
            staged.unlink(missing_ok=True)
            log(f"  {why}: the record its notebook had made is not written; the point runs again on resume")

    watchdog = threading.Timer(timeout_s, on_timeout)
    watchdog.daemon = True
    watch = KernelWatch(engine)  # the kernel's peak memory and the signal that ended it
    t0 = time.perf_counter()
    error = None
    finished = False
    try:
        nb_out.parent.mkdir(parents=True, exist_ok=True)
        watchdog.start()
        watch.start()
        try:
            pm.execute_notebook(str(workload_notebook(p["workload"])), str(nb_tmp), parameters=params,
                                engine_name="cgb", kernel_name=kernel, progress_bar=False,
                                cwd=str(NOTEBOOKS), start_timeout=120, kernel_env=facts)
        except Exception as exc:  # PapermillExecutionError, DeadKernelError, timeouts, a full disk ...
            error = exc
        finally:
            watchdog.cancel()
            watch.stop()
        wall = time.perf_counter() - t0
        if cannot_write(error):
            kill_kernel(engine)
            raise CannotWrite(cannot_write(error))
        if nb_tmp.exists():
            os.replace(nb_tmp, nb_out)  # papermill wrote it whole (also after a failed cell)
        rec, why = read_json_file(staged) if staged.exists() else (None, None)
        if why is not None or not isinstance(rec, dict):
            rec = None
        ename = getattr(error, "ename", type(error).__name__ if error else None)
        if rec is None or (error is not None and rec.get("status") == "ok"):
            # the notebook died before writing its record (or after): record the failure here
            rec = empty_record(params, pid)
            if timed_out.is_set():
                reason = f"timed out after {timeout_s:g} s (kernel killed)"
            elif error is not None:
                evalue = getattr(error, "evalue", str(error))
                died = watch.death_reason() if ename == "DeadKernelError" else None  # "Kernel died" says nothing
                reason = (died or f"{ename}: {evalue}")[:2000]
            else:
                reason = "the notebook finished without writing a record"
            rec.update(status="failed", reason=reason, fingerprint=fingerprint(),
                       started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
        elif timed_out.is_set() and rec.get("status") != "skipped":
            rec.update(status="failed", reason=f"timed out after {timeout_s:g} s (kernel killed)")
        # relative: the folder can move
        rec["notebook"] = os.path.relpath(nb_out, rec_path.parent) if nb_out.is_file() else None
        if price_profile:
            rec["price_profile"] = price_profile
        rec["env_cleared"] = cleared
        rec.update(record_fields or {})
        if env_kept:
            rec["env_kept"] = env_kept
        rec["wall_s"] = round(wall, 3)
        if rec.get("duration_s") is None:
            rec["duration_s"] = round(wall, 3)
        if write and not rec.get("shared_folder"):  # shared_folder: process 0 of its point writes the record
            writer.write_record(rec, rec_path.parent, name=rec_path.name)
        staged.unlink(missing_ok=True)
        finished = True
    except KeyboardInterrupt:  # Ctrl-C / SIGTERM: no orphan kernel, no record that looks complete
        if not finished:
            kill_kernel(engine)
            abandon("interrupted")
        raise
    except (CannotWrite, OSError) as exc:
        why = cannot_write(exc)
        if why is None:
            raise
        abandon("cannot write")
        raise CannotWrite(why) from None
    finally:
        watchdog.cancel()
        engine.current = None
    return {**rec, "_path": str(rec_path)}


def skip_without_kernel(p: dict, run_dir: Path, reason: str, record_fields: dict | None = None) -> dict:
    """A ``skipped`` record for a point that cannot run here, written without starting a kernel."""
    params = notebook_params(p)
    params["output_dir"] = str(run_dir / "records")
    rec = empty_record(params, p["point_id"])
    rec.update(status="skipped", reason=reason, fingerprint=fingerprint(), wall_s=0.0, duration_s=0.0,
               started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), **(record_fields or {}))
    writer.write_record(rec, run_dir / "records")
    return rec
