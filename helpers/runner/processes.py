"""One point as N processes on this host, started by the runner itself (``processes: N``, ``hosts: 1``).

    rec = run(engine, p, run_dir, kernel, timeout_s, log, ...)   # the runner's call for every point
    python -m helpers.runner.processes SPEC.json                     # one process other than 0 (started by run)

The runner picks a free port on 127.0.0.1 and starts processes 1 .. N-1, each ``python -m helpers.runner.processes``
executing the point's notebook in its own fresh kernel, with Keras' variables (``KERAS_DISTRIBUTION_*``, the
coordinator 127.0.0.1:port, its id, N) and, on a GPU point, its own GPUs (``CUDA_VISIBLE_DEVICES``: process i
takes the visible GPUs i*gpus .. i*gpus+gpus-1). Process 0 is the runner's usual kernel (``execute.run_point``):
its record is the point's, merged from every process's through JAX's runtime (``distribution.merge``).

A watchdog follows the processes: when one ends badly (failed, skipped, killed) before process 0 is done, the
others are stopped at once (not left waiting in a collective until a timeout), and the point's record says
which process ended first and why, with no figure (``distribution.strip_figures``). Each process's notebook,
log and record stay in the run folder (``notebooks/.processes``, ``launch/``, ``records/.processes``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from helpers.paths import NOTEBOOKS, PROJECT_ROOT, workload_notebook
from helpers.point import launcher as _launch
from helpers.record import store as _record

POLL_S = 0.2
GRACE_S = 5.0  # a process asked to stop (SIGTERM: its kernel killed) gets this long before SIGKILL
AFTER_S = 60.0  # process 0 done: the others finish their part (the record's gather) within this
PEER_S = 15.0  # process 0 failed: the others get this long to end and say why (one killed: the cause)
KILLED = "its kernel was killed"
EXIT_SKIPPED = 3


def processes_of(p: dict) -> int:
    return int(p.get("processes", 1) or 1)


def gpu_slices(p: dict, environ=None) -> tuple[list[str | None], str | None]:
    """Each process's CUDA_VISIBLE_DEVICES (None on a CPU point), or why the point cannot run here."""
    env = os.environ if environ is None else environ
    n, g = processes_of(p), int(p.get("gpus", 1) or 1)
    if p.get("device") != "gpu":
        return [None] * n, None
    spec = env.get("CUDA_VISIBLE_DEVICES")
    if spec is not None and spec.strip():
        visible = [s.strip() for s in spec.split(",") if s.strip()]
    else:
        from helpers.measure.fingerprint import gpus as _gpus

        visible = [str(i) for i in range(len(_gpus()["gpu_names"]))]
    if n * g > len(visible):
        return [], (f"processes={n} x gpus={g} needs {n * g} GPUs, one set per process, but this host shows "
                    f"{len(visible)}" + (f" (CUDA_VISIBLE_DEVICES={spec})" if spec else "")
                    + ": lower processes or gpus")
    return [",".join(visible[i * g:(i + 1) * g]) for i in range(n)], None


def run(engine, p: dict, run_dir: Path, kernel: str, timeout_s: float, log, price_profile: str | None = None,
        record_fields: dict | None = None) -> dict:
    """The runner's call for one point: ``execute.run_point`` as it is for one process; for ``processes`` > 1,
    every process started, followed and stopped here, and the point's record (process 0's, merged) returned."""
    from helpers.runner.notebook import kill_kernel, notebook_params, run_point, skip_without_kernel

    n = processes_of(p)
    if n <= 1:
        return run_point(engine, p, run_dir, kernel, timeout_s, log, price_profile, record_fields=record_fields)
    slices, why = gpu_slices(p)
    if why:
        rec = {**skip_without_kernel(p, run_dir, why), **(record_fields or {})}
        _record.write_record(rec, run_dir / "records")
        return rec
    params = notebook_params(p)
    params.update(point_id=p["point_id"], output_dir=str(run_dir / "records"))
    stem = _record.record_name(params, p["point_id"])[:-5]
    folder = run_dir / "launch"
    folder.mkdir(parents=True, exist_ok=True)
    port = _launch.free_port()
    deadline = time.time() + timeout_s - min(60.0, 0.2 * timeout_s)

    def env_of(i: int) -> dict:
        e = {_launch.COORDINATOR_ENV[0]: f"127.0.0.1:{port}", _launch.PROCESS_ID_ENV[0]: str(i),
             _launch.NUM_PROCESSES_ENV: str(n), _launch.LOCAL_ENV: "local"}
        if slices[i] is not None:
            e["CUDA_VISIBLE_DEVICES"] = slices[i]
        return e

    workers = {}
    for i in range(1, n):
        spec = {"params": params, "kernel": kernel, "notebook": str(workload_notebook(p["workload"])),
                "executed": str(run_dir / "notebooks" / ".processes" / f"{stem}-p{i}.ipynb"),
                "status": str(folder / f"{stem}-p{i}.status.json"), "pidfile": str(folder / f"{stem}-p{i}.kernel.pid"),
                "timeout_s": timeout_s}
        (folder / f"{stem}-p{i}.spec.json").write_text(json.dumps(spec, indent=1))
        env = {**os.environ, **env_of(i), "CGB_POINT_DEADLINE": str(deadline),
               "CGB_KERNEL_STDERR": str(folder / f"{stem}-p{i}.kernel.log")}
        out = open(folder / f"{stem}-p{i}.log", "w")  # noqa: SIM115 - closed below
        workers[i] = (subprocess.Popen([sys.executable, "-m", "helpers.runner.processes", str(folder / f"{stem}-p{i}"
                                        ".spec.json")], cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True), out, spec)
    ended: dict[int, tuple[float, int]] = {}  # process -> (time, exit code)
    stopped: set[int] = set()  # the processes stopped here (their exit is ours, not a cause)
    first_bad: list[int] = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            for i, (proc, _, _) in workers.items():
                if i not in ended and proc.poll() is not None:
                    ended[i] = (time.time(), proc.returncode)
                    if proc.returncode != 0 and not first_bad:
                        first_bad.append(i)
                        log(f"  process {i} of {n} ended ({_exit_text(proc.returncode)}): stopping the others")
                        for j in workers:
                            if j != i and j not in ended:
                                stopped.add(j)
                                _stop(workers[j])
            if first_bad:
                kill_kernel(engine)  # process 0's kernel (again, until it has started and is gone)
            done.wait(POLL_S)

    watcher = threading.Thread(target=watch, daemon=True)
    saved = {k: os.environ.get(k) for k in env_of(0)}
    os.environ.update(env_of(0))
    watcher.start()
    rec = None
    try:
        rec = run_point(engine, p, run_dir, kernel, timeout_s, log, price_profile, record_fields=record_fields)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        t_end = time.time()
        if rec is not None and not first_bad:  # the others end their part themselves (ok), or say why they failed
            wait_s = AFTER_S if rec.get("status") == "ok" else PEER_S
            for proc, _, _ in workers.values():
                try:
                    proc.wait(timeout=max(0.1, wait_s - (time.time() - t_end)))
                except subprocess.TimeoutExpired:
                    break
        done.set()
        watcher.join()
        for i, w in workers.items():
            if w[0].poll() is None:
                stopped.add(i)
                _stop(w)
            if i not in ended:
                ended[i] = (time.time(), w[0].wait())
            w[1].close()
    return _outcome(rec, n, workers, ended, first_bad, t_end, slices, stopped)


def _outcome(rec: dict, n: int, workers: dict, ended: dict, first_bad: list, t_end: float, slices,
             stopped: set) -> dict:
    """Process 0's record as the point's, with every process's part; failed (no figure) where one did not finish."""
    from helpers.point.distribution import strip_figures

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
        return _rewrite(rec)
    # the cause: a process whose kernel was killed (the others then fail on a closed connection), else the first
    # process that ended badly before process 0 was done, else process 0
    killed = [q for q in parts[1:] if q["exit"] and q["status"] != "stopped"
              and (q["exit"] < 0 or KILLED in (q.get("reason") or ""))]
    early = [parts[first_bad[0]]] if first_bad and ended[first_bad[0]][0] <= t_end + POLL_S else []
    if killed or early:
        q = (killed or early)[0]
        what = {"killed": f"was killed ({_exit_text(q['exit'])})", "skipped": "was skipped"}.get(
            q["status"], f"failed ({_exit_text(q['exit'])})")
        cause = f"process {q['process_id']} of {n} {what}: {q.get('reason') or 'no reason written (see its log)'}"
        status = "skipped" if q["status"] == "skipped" else "failed"
    elif rec.get("status") != "ok":
        cause, status = f"process 0 of {n}: {rec.get('reason')}", rec.get("status") or "failed"
    else:
        q = bad[0]
        cause = (f"process {q['process_id']} of {n} did not end its part after process 0 wrote the record "
                 f"({_exit_text(q['exit'])}): {q.get('reason') or 'see its log'}")
        status = "failed"
    rec.update(status=status, reason=(cause + "; the other processes were stopped, and the point has no figure (it "
                                      "needs every process's)")[:2000])
    strip_figures(rec)
    return _rewrite(rec)


def _rewrite(rec: dict) -> dict:
    path = rec["_path"]
    _record.write_atomic(Path(path), {k: v for k, v in rec.items() if k != "_path"})
    return rec


def _read(path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}" + (" (point skipped)" if code == EXIT_SKIPPED else "")


def _stop(worker) -> None:
    """Stop one process: SIGTERM (it kills its kernel), SIGKILL after GRACE_S; its kernel too, by its pid file."""
    proc, _, spec = worker
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    try:
        kpid = int(Path(spec["pidfile"]).read_text())
        os.killpg(os.getpgid(kpid), signal.SIGKILL)
    except (OSError, ValueError):
        pass


# ------------------------------------------------------------------ one process other than 0


def worker(spec_path: str) -> int:
    """Execute the point's notebook in a fresh kernel as one process of the point (its id and coordinator in the
    environment), write its outcome (``status``), exit 0 ok, EXIT_SKIPPED skipped, 1 failed."""
    import papermill as pm

    from helpers.runner.notebook import _register_engine, kill_kernel

    spec = json.loads(Path(spec_path).read_text())
    engine = _register_engine()
    out = Path(spec["executed"])
    out.parent.mkdir(parents=True, exist_ok=True)
    os.environ["CGB_EXECUTED_NOTEBOOK"] = str(out)

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
    status, reason, code = "ok", None, 0
    try:
        pm.execute_notebook(spec["notebook"], str(out), parameters=spec["params"], engine_name="cgb",
                            kernel_name=spec["kernel"], progress_bar=False, cwd=str(NOTEBOOKS), start_timeout=120,
                            execution_timeout=spec.get("timeout_s"))
    except Exception as exc:
        ename = getattr(exc, "ename", type(exc).__name__)
        evalue = getattr(exc, "evalue", str(exc))
        status, code = ("skipped", EXIT_SKIPPED) if ename == "PointSkipped" else ("failed", 1)
        reason = f"{ename}: {evalue}"[:2000]
        kproc = kernel_proc[0] if kernel_proc else None
        rc = kproc.poll() if kproc is not None else None
        if rc is not None and rc < 0:  # its kernel was killed (out of memory, a signal): say which signal
            reason = f"{KILLED} ({_exit_text(rc)}) during the run ({reason})"
    finally:
        stop.set()
    _record.write_atomic(Path(spec["status"]), {"status": status, "reason": reason})
    return code


if __name__ == "__main__":
    sys.exit(worker(sys.argv[1]))
