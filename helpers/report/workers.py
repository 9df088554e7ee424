"""Jobs in worker processes that may die: a dead worker costs its own job, never the others or the caller.

    results = run_jobs(render_one, [(src, dst), ...], workers=4)   # {job: None (done) or why not}

``multiprocessing.Pool`` never returns when a worker is killed (the kernel's OOM killer, a SIGKILL): its
job is lost and ``imap`` waits for it forever. ``concurrent.futures.ProcessPoolExecutor`` notices a dead worker
and fails every pending job with ``BrokenProcessPool``; the jobs not done are then run again one at a time
in a single-worker pool (a fresh one after each death), so the job that killed its worker is found, listed
with ``DIED``, and the rest still run. The caller waits in short slices, so a signal (SIGTERM raised as
KeyboardInterrupt, as the runner does) is handled within a second; the workers are killed before it goes on.
``fn(job)`` must be a module-level function (workers are spawned) returning None or a short reason.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
from concurrent.futures.process import BrokenProcessPool

DIED = "the renderer died (killed, likely out of memory)"
POLL_S = 0.5  # how long the caller waits at a time: a signal is handled at most this late


def _kill(executor) -> None:
    """Stop ``executor`` now: cancel what has not started, kill its workers (a private map, but the only way)."""
    procs = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        try:
            p.kill()
        except (OSError, AttributeError):
            pass
    for p in procs:
        try:
            p.join(5)
        except (OSError, AttributeError, AssertionError):
            pass


def _drain(executor, fn, jobs: list, results: dict) -> bool:
    """Run ``jobs`` on ``executor`` into ``results``; False when the pool broke (the jobs not done lack a result)."""
    futures = {executor.submit(fn, job): job for job in jobs}
    pending = set(futures)
    broken = False
    try:
        while pending:
            done, pending = cf.wait(pending, timeout=POLL_S, return_when=cf.FIRST_COMPLETED)
            for f in done:
                try:
                    results[futures[f]] = f.result()
                except BrokenProcessPool:
                    broken = True
                except Exception as exc:  # noqa: BLE001 - the job's own error is its result
                    results[futures[f]] = type(exc).__name__
            if broken:
                break
    except BaseException:
        _kill(executor)
        raise
    if broken:
        _kill(executor)
    return not broken


def run_jobs(fn, jobs: list, workers: int) -> dict:
    """``{job: fn(job)}`` over ``workers`` spawned processes; a job whose worker died gets ``DIED``."""
    ctx = mp.get_context("spawn")
    results: dict = {}
    executor = cf.ProcessPoolExecutor(max(1, min(workers, len(jobs))), mp_context=ctx)
    if not _drain(executor, fn, jobs, results):
        executor = None
        for job in [j for j in jobs if j not in results]:  # one at a time: the job that kills its worker is found
            executor = executor or cf.ProcessPoolExecutor(1, mp_context=ctx)
            if not _drain(executor, fn, [job], results):
                results[job] = DIED
                executor = None
    if executor is not None:
        executor.shutdown(wait=True)
    return results
