"""One process other than 0 of a point the runner runs as N processes (``processes.run`` starts it):

    python -m helpers.runner.process_worker SPEC.json

It executes the point's notebook in a fresh kernel (its process id and the coordinator in the environment),
writes its outcome (``status``) and the kernel's pid (for the runner to stop the kernel even if this process is
killed), and exits ``Exit.OK``, ``process_outcome.EXIT_SKIPPED`` or ``Exit.FAILED``.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

from helpers.exits import Exit
from helpers.paths import NOTEBOOKS
from helpers.record import writer
from helpers.runner.process_outcome import EXIT_SKIPPED, KILLED, exit_text


def worker(spec_path: str) -> int:
    """Execute the point's notebook in a fresh kernel as one process of the point (its id and coordinator in the
    environment), write its outcome (``status``); exit Exit.OK ok, EXIT_SKIPPED skipped, Exit.FAILED failed."""
    import papermill as pm

    from helpers.runner.engine import kill_kernel, register_engine
    from helpers.runner.kernel_watch import quiet_dead_kernel_tasks

    quiet_dead_kernel_tasks()
    spec = json.loads(Path(spec_path).read_text())
    engine = register_engine()
    out = Path(spec["executed"])
    out.parent.mkdir(parents=True, exist_ok=True)

    def on_term(signum, frame):
        kill_kernel(engine)
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    stop = threading.Event()
    kernel_proc = []  # the kernel's Popen (its exit status read after a failure)

    def pidfile():  # the kernel's pid, for the runner to stop it even if this process is killed
        while not stop.is_set():
            prov = getattr(getattr(getattr(engine, "current", None), "km", None), "provisioner", None)
            pid = getattr(prov, "pid", None)
            if pid:
                kernel_proc.append(getattr(prov, "process", None))
                Path(spec["pidfile"]).write_text(str(pid))
                return
            stop.wait(0.2)

    threading.Thread(target=pidfile, daemon=True).start()
    status, reason, code = "ok", None, Exit.OK
    try:
        pm.execute_notebook(spec["notebook"], str(out), parameters=spec["params"], engine_name="cgb",
                            kernel_name=spec["kernel"], progress_bar=False, cwd=str(NOTEBOOKS), start_timeout=120,
                            execution_timeout=spec.get("timeout_s"), kernel_env={"CGB_EXECUTED_NOTEBOOK": str(out)})
    except Exception as exc:
        ename = getattr(exc, "ename", type(exc).__name__)
        evalue = getattr(exc, "evalue", str(exc))
        status, code = ("skipped", EXIT_SKIPPED) if ename == "PointSkipped" else ("failed", Exit.FAILED)
        reason = f"{ename}: {evalue}"[:2000]
        kproc = kernel_proc[0] if kernel_proc else None
        rc = kproc.poll() if kproc is not None else None
        if rc is not None and rc < 0:  # its kernel was killed (out of memory, a signal): say which signal
            reason = f"{KILLED} ({exit_text(rc)}) during the run ({reason})"
    finally:
        stop.set()
    writer.write_atomic(Path(spec["status"]), {"status": status, "reason": reason})
    return code


if __name__ == "__main__":
    sys.exit(worker(sys.argv[1]))
