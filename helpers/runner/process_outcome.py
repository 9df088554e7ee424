"""The record of a point run as N processes (``processes.run``): process 0's record, with every process's part,
and when one did not finish, the cause (which process ended first, and why) and no figure
(``process_records.strip_figures``: a figure needs every process's part).

    rec = outcome(rec, n, workers, ended, first_bad, t_done, slices, stopped)   # completed, then written (once)
    exit_text(code)                                                           # "signal SIGKILL", "exit status 1"
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from helpers.record import writer

KILLED = "its kernel was killed"
EXIT_SKIPPED = 3  # a process's own exit status when its point was skipped (not the runner's: helpers.exits)


def outcome(rec: dict, n: int, workers: dict, ended: dict, first_bad: list, t_done: float, slices,
            stopped: set) -> dict:
    """Process 0's record as the point's, with every process's part; failed (no figure) where one did not finish.
    ``t_done``: when process 0 was done (plus the watcher's poll): a process that ended badly by then came first."""
    from helpers.point.process_records import strip_figures

    parts = [{"process_id": 0, "cuda_visible_devices": slices[0], "exit": None, "status": rec.get("status")}]
    here = Path(rec["_path"]).parent
    for i, (_proc, _, spec) in workers.items():
        st = _read(spec["status"])
        log_file = Path(spec["status"]).with_name(Path(spec["status"]).name.replace(".status.json", ".log"))
        parts.append({"process_id": i, "cuda_visible_devices": slices[i], "exit": ended[i][1],
                      "status": ("stopped" if i in stopped else st.get("status")
                                 or ("killed" if ended[i][1] < 0 else "failed")),
                      "reason": st.get("reason"), "notebook": os.path.relpath(spec["executed"], here),
                      "log": os.path.relpath(log_file, here)})
    rec["launch_processes"] = parts  # each process the runner started: its GPUs, exit, notebook and log
    bad = [q for q in parts[1:] if q["exit"] != 0]
    if rec.get("status") == "ok" and not bad:
        return _write(rec)
    # the cause: a process whose kernel was killed (the others then fail on a closed connection), else the first
    # process that ended badly before process 0 was done, else process 0
    killed = [q for q in parts[1:] if q["exit"] and q["status"] != "stopped"
              and (q["exit"] < 0 or KILLED in (q.get("reason") or ""))]
    early = [parts[first_bad[0]]] if first_bad and ended[first_bad[0]][0] <= t_done else []
    if killed or early:
        q = (killed or early)[0]
        what = {"killed": f"was killed ({exit_text(q['exit'])})", "skipped": "was skipped"}.get(
            q["status"], f"failed ({exit_text(q['exit'])})")
        cause = f"process {q['process_id']} of {n} {what}: {q.get('reason') or 'no reason written (see its log)'}"
        status = "skipped" if q["status"] == "skipped" else "failed"
    elif rec.get("status") != "ok":
        cause, status = f"process 0 of {n}: {rec.get('reason')}", rec.get("status") or "failed"
    else:
        q = bad[0]
        cause = (f"process {q['process_id']} of {n} did not end its part after process 0 wrote the record "
                 f"({exit_text(q['exit'])}): {q.get('reason') or 'see its log'}")
        status = "failed"
    rec.update(status=status, reason=(cause + "; the other processes were stopped, and the point has no figure (it "
                                      "needs every process's)")[:2000])
    strip_figures(rec)
    return _write(rec)


def _write(rec: dict) -> dict:
    path = Path(rec["_path"])
    if not rec.get("shared_folder"):
        writer.write_record({k: v for k, v in rec.items() if k != "_path"}, path.parent, name=path.name)
    return rec


def _read(path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}" + (" (point skipped)" if code == EXIT_SKIPPED else "")
