"""Jobs in worker processes that may die or run too long: such a job costs itself only, never the others or the caller.

    results = run_jobs(render_one, [(src, dst), ...], workers=4, limit_s=60)   # {job: None (done) or why not}

``multiprocessing.Pool`` never returns when a worker is killed (the kernel's OOM killer, a SIGKILL): its
job is lost and ``imap`` waits for it forever. ``concurrent.futures.ProcessPoolExecutor`` notices a dead worker
and fails every pending job with ``BrokenProcessPool``; the jobs not done are then run again one at a time
in a single-worker pool (a fresh one after each death), so the job that killed its worker is found and the rest
still run. It is listed with ``DIED_OOM`` when the OOM killer's counters rose meanwhile, ``DIED_NOT_OOM`` when
they did not (a kill -9, a crash), ``DIED`` when they cannot be read. A job that runs longer than ``limit_s``
(timed from when its worker starts it, not from when it was queued: each worker writes its job's start time into
a shared array) gets ``too_slow(limit_s)``: its pool is killed (a running job cannot be cancelled otherwise) and
the jobs not done go on in a fresh one. The caller waits in short slices, so a signal (SIGTERM raised as
KeyboardInterrupt, as the runner does) is handled within a second; the workers are killed before it goes on.
``fn(job)`` must be a module-level function (workers are spawned) returning None or a short reason.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import time
from concurrent.futures.process import BrokenProcessPool

DIED = "the renderer died (killed or crashed; whether for memory cannot be told here)"
DIED_OOM = "the renderer died (killed by the out-of-memory killer)"
DIED_NOT_OOM = ("the renderer died (killed or crashed, not for memory: the out-of-memory killer's count did not "
                "change)")
TOO_SLOW = "not rendered: too slow (over {:g} s)"  # ``too_slow``: a job stopped at its time limit
OVER_TOTAL = "not rendered: the whole index's time bound ({:g} s) was reached first"  # ``over_total``
POLL_S = 0.5  # how long the caller waits at a time: a signal is handled at most this late

_STARTED = None  # in a worker: the shared array of the jobs' start times (time.monotonic, system-wide on Linux)


def too_slow(limit_s: float) -> str:
    """The reason given to a job stopped at ``limit_s`` seconds (it names the limit)."""
    return TOO_SLOW.format(limit_s)


def over_total(total_s: float) -> str:
    """The reason given to a job not done when the whole batch's ``total_s`` ran out (it names the bound)."""
    return OVER_TOTAL.format(total_s)


def _init(started) -> None:
    global _STARTED
    _STARTED = started


def _timed(fn, i: int, job):
    """``fn(job)`` in a worker, its start time written first (slot ``i``) for the caller's time bound."""
    if _STARTED is not None:
        _STARTED[i] = time.monotonic()
    return fn(job)


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


def _pool(ctx, n: int, n_jobs: int):
    """A pool of ``n`` workers and the shared array where they write the start time of each of ``n_jobs`` jobs."""
    started = ctx.RawArray("d", max(1, n_jobs))  # 0.0: not started
    return cf.ProcessPoolExecutor(n, mp_context=ctx, initializer=_init, initargs=(started,)), started


def _drain(pool, fn, jobs: list, results: dict, limit_s: float | None = None, end=None) -> str:
    """Run ``jobs`` on ``pool`` (an executor and its start-time array) into ``results``: "done"; "died" when a
    worker died, "slow" when a job ran over ``limit_s`` (that job's result set): then the pool is killed and the
    other jobs not done lack a result; "over" when ``end`` (``(time.monotonic() deadline, total_s)``) passed: the
    jobs not done get ``over_total``."""
    executor, started = pool
    for k in range(len(started)):
        started[k] = 0.0
    futures = {executor.submit(_timed, fn, i, job): (i, job) for i, job in enumerate(jobs)}
    pending = set(futures)
    state = "done"
    wait_s = POLL_S if limit_s is None else max(0.01, min(POLL_S, limit_s / 10))
    try:
        while pending and state == "done":
            done, pending = cf.wait(pending, timeout=wait_s, return_when=cf.FIRST_COMPLETED)
            for f in done:
                job = futures[f][1]
                try:
                    results[job] = f.result()
                except BrokenProcessPool:
                    state = "died"
                except Exception as exc:  # noqa: BLE001 - the job's own error is its result
                    results[job] = type(exc).__name__
            if end is not None and state == "done" and pending and time.monotonic() > end[0]:
                for f in pending:
                    results.setdefault(futures[f][1], over_total(end[1]))
                state = "over"
            if limit_s is not None and state == "done":
                now = time.monotonic()
                for f in pending:
                    i, job = futures[f]
                    if started[i] and now - started[i] > limit_s and not f.done():
                        results[job] = too_slow(limit_s)
                        state = "slow"
    except BaseException:
        _kill(executor)
        raise
    if state != "done":
        _kill(executor)
    return state


def run_jobs(fn, jobs: list, workers: int, limit_s: float | None = None, total_s: float | None = None) -> dict:
    """``{job: fn(job)}`` over ``workers`` spawned processes; a job whose worker died gets ``DIED*``, one that ran
    longer than ``limit_s`` seconds ``too_slow(limit_s)`` (the others go on in a fresh pool); once ``total_s``
    seconds have passed since the call, every job not done gets ``over_total(total_s)``."""
    end = None if total_s is None else (time.monotonic() + total_s, total_s)
    from helpers.measure import oom

    ctx = mp.get_context("spawn")
    results: dict = {}
    oom_before = oom.oom_kills()  # a worker that died is called out of memory only when the OOM killer counted it
    todo, state = list(jobs), "slow"
    while todo and state == "slow":  # each round ends at least one job: the one stopped at its limit
        pool = _pool(ctx, max(1, min(workers, len(todo))), len(todo))
        state = _drain(pool, fn, todo, results, limit_s, end)
        todo = [j for j in todo if j not in results]
    if state == "done":
        pool[0].shutdown(wait=True)
        return results
    pool = None
    for job in todo:  # a worker died: one at a time, so the job that kills its worker is found
        if state == "over" or (end is not None and time.monotonic() > end[0]):
            results[job] = over_total(end[1])
            state = "over"
            continue
        pool = pool or _pool(ctx, 1, 1)
        if (state := _drain(pool, fn, [job], results, limit_s, end)) != "done":
            results.setdefault(job, DIED)  # "over" and "slow" set it already
            pool = None
    if pool is not None:
        pool[0].shutdown(wait=True)
    died = [j for j, why in results.items() if why == DIED]
    if died:
        why = died_reason(oom.killed_by_oom(oom_before, oom.oom_kills()))
        results.update(dict.fromkeys(died, why))
    return results


def died_reason(oom: bool | None) -> str:
    """Why a worker died, as far as the OOM killer's counters tell (``helpers.measure.oom.killed_by_oom``)."""
    return DIED_OOM if oom else DIED_NOT_OOM if oom is False else DIED
