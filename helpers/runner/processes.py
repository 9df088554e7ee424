"""One point as N processes on this host, started by the runner itself (``processes: N``, ``hosts: 1``).

    rec = run(engine, p, run_dir, kernel, timeout_s, log, ...)   # the runner's call for every point

The runner picks a free port on 127.0.0.1 and starts processes 1 .. N-1, each ``python -m
helpers.runner.process_worker`` executing the point's notebook in its own fresh kernel, with Keras' variables
(``KERAS_DISTRIBUTION_*``, the coordinator 127.0.0.1:port, its id, N) and, on a GPU point, its own GPUs
(``CUDA_VISIBLE_DEVICES``: process i takes the visible GPUs i*gpus .. i*gpus+gpus-1). Process 0 is the runner's
usual kernel (``notebook.run_point``): its record is the point's, merged from every process's through JAX's
runtime (``process_records.merge``).

A watchdog follows the processes: when one ends badly (failed, skipped, killed) before process 0 is done, the
others are stopped at once (not left waiting in a collective until a timeout), and the point's record says
which process ended first and why, with no figure (``process_outcome.outcome``). Each process's notebook,
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

from helpers.paths import PROJECT_ROOT, workload_notebook
from helpers.point import launcher as _launch
from helpers.record.ids import record_name
from helpers.runner.engine import kernel_env
from helpers.runner.process_outcome import exit_text, outcome

POLL_S = 0.2
GRACE_S = 5.0  # a process asked to stop (SIGTERM: its kernel killed) gets this long before SIGKILL
AFTER_S = 60.0  # process 0 done: the others finish their part (the record's gather) within this
PEER_S = 15.0  # process 0 failed: the others get this long to end and say why (one killed: the cause)


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
    if n == 1 and g > len(visible):
        return [], (f"gpus={g} needs {g} GPUs but this host shows {len(visible)}"
                    + (f" (CUDA_VISIBLE_DEVICES={spec})" if spec else "") + ": lower gpus")
    if n * g > len(visible):
        return [], (f"processes={n} x gpus={g} needs {n * g} GPUs, one set per process, but this host shows "
                    f"{len(visible)}" + (f" (CUDA_VISIBLE_DEVICES={spec})" if spec else "")
                    + ": lower processes or gpus")
    return [",".join(visible[i * g:(i + 1) * g]) for i in range(n)], None


def run(engine, p: dict, run_dir: Path, kernel: str, timeout_s: float, log, price_profile: str | None = None,
        record_fields: dict | None = None) -> dict:
    """The runner's call for one point: ``notebook.run_point`` as it is for one process; for ``processes`` > 1,
    every process started, followed and stopped here, and the point's record (process 0's, merged) returned."""
    from helpers.runner.engine import kill_kernel
    from helpers.runner.notebook import notebook_params, run_point, skip_without_kernel

    n = processes_of(p)
    if n <= 1 and int(p.get("gpus", 1) or 1) > 1:  # a point asking for more GPUs than the host shows: no kernel
        _, why = gpu_slices(p)
        if why:
            return skip_without_kernel(p, run_dir, why, record_fields)
    if n <= 1:
        return run_point(engine, p, run_dir, kernel, timeout_s, log, price_profile, record_fields=record_fields)
    slices, why = gpu_slices(p)
    if why:
        return skip_without_kernel(p, run_dir, why, record_fields)
    params = notebook_params(p)
    params.update(point_id=p["point_id"], output_dir=str(run_dir / "records"))
    stem = record_name(params, p["point_id"])[:-5]
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
        env = {**kernel_env(env_of(i)), "CGB_POINT_DEADLINE": str(deadline),
               "CGB_KERNEL_STDERR": str(folder / f"{stem}-p{i}.kernel.log")}
        out = open(folder / f"{stem}-p{i}.log", "w")  # noqa: SIM115 - closed below
        workers[i] = (subprocess.Popen([sys.executable, "-m", "helpers.runner.process_worker",
                                        str(folder / f"{stem}-p{i}.spec.json")], cwd=PROJECT_ROOT, env=env, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True), out, spec)
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
                        log(f"  process {i} of {n} ended ({exit_text(proc.returncode)}): stopping the others")
                        for j in workers:
                            if j != i and j not in ended:
                                stopped.add(j)
                                _stop(workers[j])
            if first_bad:
                kill_kernel(engine)  # process 0's kernel (again, until it has started and is gone)
            done.wait(POLL_S)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    rec = None
    try:  # process 0: the runner's own kernel, its record written by ``outcome`` with every process's part
        rec = run_point(engine, p, run_dir, kernel, timeout_s, log, price_profile, record_fields=record_fields,
                        kernel_env=env_of(0), write=False)
    finally:
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
    return outcome(rec, n, workers, ended, first_bad, t_end + POLL_S, slices, stopped)


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
