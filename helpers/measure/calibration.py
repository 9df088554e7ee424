"""A short host calibration, measured once per run: how fast this host is today, in two figures.

    cal = measure()          # {'dispatch_mcalls_per_s': 14.2, 'matmul_gflops_all': 180.0, ...}, ~1-3 s
    export(cal)              # {"CGB_CALIBRATION": JSON}: the runner gives it to each kernel of the run
    reusable()               # the exported one when this boot measured it within the hour (a parent run's), or None
    from_env()               # in a kernel: the dict (None when unset or not valid JSON)
    python -m helpers.measure.calibration   # measure and print it

Two leases of the "same" cloud machine can differ (another CPU stepping, a noisy neighbour, a throttled
host): the figures put a number on it. (a) Python dispatch: a fixed single-thread loop of small function
calls (million calls/s; what eager, per-step Python overhead rides on). (b) A numpy float32 matmul in
GFLOP/s, on one thread and on all threads (``threadpoolctl`` sets the BLAS threads when it is installed;
without it only the all-threads figure is taken, as the BLAS is, with its thread count when OpenBLAS says
it). Each figure is the best of a few repetitions (the least disturbed); the whole takes a few seconds.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import time

from helpers.measure.boot import boot_id

ENV = "CGB_CALIBRATION"
DISPATCH_CALLS = 2_000_000  # calls of a one-line function per repetition (fixed: the figure compares hosts)
MATMUL_N = 1024  # square float32 matrices: 2 * N**3 floating-point operations per product
MATMUL_N_ALL = 2048  # all threads get a larger product (a 1024 product is too short for many cores)
REPEATS = 3  # each figure is the best of this many repetitions
MATMUL_REPEATS = 5
REUSE_S = 3600  # a calibration of this boot younger than this, handed down in the environment, is reused
BUDGET_S = 3.0  # a matmul figure stops repeating once its own share of this is spent (after 2 tries)


def _step(x):
    return x + 1


def dispatch_mcalls_per_s(calls: int = DISPATCH_CALLS, repeats: int = REPEATS) -> float:
    """Million Python function calls per second on one thread, best of ``repeats``."""
    best = float("inf")
    for _ in range(repeats):
        f, x = _step, 0
        t0 = time.perf_counter()
        for _ in range(calls):
            x = f(x)
        best = min(best, time.perf_counter() - t0)
    return calls / best / 1e6


def matmul_gflops(n: int = MATMUL_N, repeats: int = MATMUL_REPEATS, budget_s: float = BUDGET_S / 3) -> float:
    """GFLOP/s of an ``n`` x ``n`` float32 matmul with the BLAS threads as they are now, best of ``repeats``
    (fewer, but at least 2, once ``budget_s`` is spent); one product first, untimed (warm-up)."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    out = np.empty((n, n), dtype=np.float32)
    np.matmul(a, b, out=out)
    best, t_start = float("inf"), time.perf_counter()
    for i in range(repeats):
        t0 = time.perf_counter()
        np.matmul(a, b, out=out)
        best = min(best, time.perf_counter() - t0)
        if i >= 1 and time.perf_counter() - t_start > budget_s:
            break
    return 2 * n**3 / best / 1e9


def blas_threads() -> int | None:
    """The BLAS thread count numpy uses now: ``threadpoolctl`` if installed, else OpenBLAS' own getter
    (found in this process's mapped libraries), else None."""
    try:
        from threadpoolctl import threadpool_info

        counts = [p.get("num_threads") for p in threadpool_info() if p.get("user_api") == "blas"]
        return counts[0] if counts else None
    except ImportError:
        pass
    try:
        import ctypes

        with open("/proc/self/maps") as f:
            libs = {p for line in f if "openblas" in (p := line.split()[-1]).lower() and ".so" in p}
        for path in sorted(libs):
            lib = ctypes.CDLL(path)
            for name in ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
                         "openblas_get_num_threads64_", "openblas_get_num_threads"):
                if hasattr(lib, name):
                    return int(getattr(lib, name)())
    except Exception:
        pass
    return None


def measure() -> dict:
    """The calibration of this host now (a few seconds): dispatch and matmul figures, how long it took
    and when. ``matmul_gflops_1thread`` is None when ``threadpoolctl`` is not installed (threads not
    controlled: ``threads_controlled`` False)."""
    import numpy as np

    when = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    dispatch = dispatch_mcalls_per_s(DISPATCH_CALLS, REPEATS)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        threadpool_limits = None
    one = None
    if threadpool_limits is not None:
        with threadpool_limits(limits=1, user_api="blas"):
            one = matmul_gflops(MATMUL_N, MATMUL_REPEATS, BUDGET_S / 3)
    threads = blas_threads()
    all_threads = matmul_gflops(MATMUL_N_ALL, MATMUL_REPEATS, BUDGET_S / 3)
    return {
        "dispatch_mcalls_per_s": round(dispatch, 3),
        "matmul_gflops_1thread": None if one is None else round(one, 2),
        "matmul_gflops_all": round(all_threads, 2),
        "matmul_threads": threads,
        "threads_controlled": threadpool_limits is not None,
        "dispatch_calls": DISPATCH_CALLS, "matmul_n": MATMUL_N, "matmul_n_all": MATMUL_N_ALL,
        "python": platform.python_version(), "numpy": np.__version__,
        "seconds": round(time.perf_counter() - t0, 3),
        "when": when,
        "boot_id": boot_id(),
    }


def reusable(now: dt.datetime | None = None) -> dict | None:
    """The calibration in the environment (``ENV``) when this boot of this host measured it at most ``REUSE_S``
    ago (a parent run, shards started together, a test session), else None: measuring again would only disturb
    the runs beside it."""
    cal = from_env()
    if not cal or not cal.get("boot_id") or cal["boot_id"] != boot_id():
        return None
    try:
        age = ((now or dt.datetime.now(dt.UTC)) - dt.datetime.fromisoformat(str(cal.get("when")))).total_seconds()
    except (TypeError, ValueError):
        return None
    return cal if 0 <= age <= REUSE_S else None


def export(d: dict | None) -> dict:
    """``d`` as the environment variable (``ENV``, JSON) a kernel reads it from (``from_env``); empty for None."""
    return {} if d is None else {ENV: json.dumps(d, sort_keys=True)}


def from_env() -> dict | None:
    """The calibration exported by the runner (``ENV``), or None: unset, not valid JSON, not a mapping."""
    raw = os.environ.get(ENV)
    if not raw:
        return None
    try:
        d = json.loads(raw)
    except ValueError:
        return None
    return d if isinstance(d, dict) else None


if __name__ == "__main__":
    print(json.dumps(measure(), indent=1))
