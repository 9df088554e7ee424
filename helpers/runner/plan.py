"""What a run will do, decided before its first point: which points cannot run here, this machine's earlier
records, the size guard, and what the run measures once for all its points.

    reason = skip_reason(point)               # None, or why it is skipped without a kernel
    over, lines = guard(blocks, estimate)     # more than GUARD_RUNS runs or GUARD_S estimated: refused
    run_setup(log, gpu=True)                  # host calibration and GPU idle power, exported to the kernels
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from helpers import grid as _grid
from helpers.params import LATER_DEFAULTS
from helpers.record.ids import point_id
from helpers.record.reader import read_records
from helpers.runner.engine import RUN_FACTS
from helpers.runner.notebook import is_complete, notebook_params
from helpers.workloads import contents

GUARD_RUNS = 500  # more runs than this: refused without --yes
GUARD_S = 3 * 3600.0  # an estimated time over this: refused without --yes
LOAD_WINDOW_S = 0.2  # the shortest window over which the start line judges whether the machine is already loaded


def describe(p: dict) -> str:
    extra = []
    for k in ("batch_size", "precision", "threads", "jit_compile", "n_train"):
        extra.append(f"{k}={p[k]}")
    # the knobs added later, where a point sets them away from their old value (gpus=2, input_dtype=uint8, ...):
    # without them the runs of a scaling grid would read alike
    extra += [f"{k}={p[k]}" for k in LATER_DEFAULTS if k in p and p[k] != LATER_DEFAULTS[k]]
    return f"{p['workload']} {p['backend']}/{p['device']} " + " ".join(extra)


def label(run: dict, always: bool = False) -> str:
    """``describe`` plus the run's repeat (1-based in text: ``repeat 2/3`` is the record's ``repeat`` 1)."""
    n = run.get("repeats", 1)
    return describe(run) + (f"  repeat {run.get('_repeat', 0) + 1}/{n}" if always or n > 1 else "")


def has_nvidia_gpu() -> bool:
    """Whether NVML or the device files show an NVIDIA GPU (the notebook still verifies the device)."""
    from helpers.measure.fingerprint import gpus

    return bool(gpus()["gpu_names"]) or any(Path("/dev").glob("nvidia[0-9]*"))


def skip_reason(p: dict) -> str | None:
    """Why ``p`` cannot run here, decided without a kernel (its record says it); None if it can."""
    from helpers.point.device import BACKEND_MODULES, allowed_cores, backend_installed

    if not backend_installed(p["backend"]):
        return (f"backend not installed: the '{BACKEND_MODULES[p['backend']]}' package is not importable in "
                "this Python")
    if p.get("threads", 0) > len(allowed_cores()):
        return f"threads={p.get('threads')} but this machine lets the process use {len(allowed_cores())} cores"
    if p["device"] == "gpu" and not has_nvidia_gpu():
        return "no NVIDIA GPU on this machine (NVML and /dev/nvidia* find none): a GPU point is not timed on the CPU"
    return None


def complete_records(runs: Path) -> list[dict]:
    """Every complete record (``is_complete``) under ``runs`` (the outputs folder's ``runs/``): resume and the
    estimate read them once."""
    if not runs.is_dir():
        return []
    records, _ = read_records([runs])
    return [r for r in records if is_complete(r)]


def of_this_machine(records: list[dict], mkey: str) -> list[dict]:
    """The records measured on this machine: the fingerprint's own machine key is this one's, or the record's
    id is what its parameters give with this machine's ``machine_key`` (a renamed host)."""
    from helpers.measure.fingerprint import host_key

    here = host_key()
    out = []
    for r in records:
        fp, params = r.get("fingerprint") or {}, r.get("params")
        ids = (r.get("config_id"), r.get("point_id"))
        if fp.get("machine_key") == here or (
                isinstance(params, dict) and point_id(notebook_params(params), mkey, contents(params)) in ids):
            out.append(r)
    return out


# ------------------------------------------------------------------ the size guard

def guard(blocks: list, est, yes_hint: bool = True) -> tuple[bool, list[str]]:
    """Whether the grid is over the size guard, and the lines that say so (why, its biggest blocks), then
    its size and estimated time. ``est``: a ``grid.Estimate``, or None when the grid was not expanded."""
    total = sum(b.runs for b in blocks)
    why = []
    if total > GUARD_RUNS:
        why.append(f"more than {GUARD_RUNS:,} runs")
    if est is not None and est.known and est.seconds > GUARD_S:
        why.append(f"estimated over {_grid.fmt_duration(GUARD_S)}")
    lines = []
    if why:
        lines.append(f"the grid is over the size guard ({' and '.join(why)})"
                     + ("; check it for a list too many, or run it anyway with --yes" if yes_hint else ""))
        lines += ["  biggest blocks:"] + [f"    {b.describe()}" for b in sorted(blocks, key=lambda b: -b.runs)[:3]]
    lines.append(f"size: {total:,} runs in {len(blocks)} block(s)")
    lines.append(est.describe() if est is not None else "no time estimate (the grid was not expanded)")
    return bool(why), lines



def bytecode_note(dont_write: bool | None = None, module: str = "ipykernel.kernelapp") -> str | None:
    """A warning when Python will not write bytecode (``PYTHONDONTWRITEBYTECODE``) and the kernel's own imports
    have none cached: then every point's kernel compiles them again. Seen on a GPU image whose packages were
    installed without byte-compiling: the kernel's first cell came 1.7 s after its start, 0.6 s once compiled."""
    import importlib.util

    if not (sys.flags.dont_write_bytecode if dont_write is None else dont_write):
        return None
    top, _, rest = module.partition(".")
    try:  # the top-level package's spec only: nothing is imported into the runner
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None) or ""
    if rest and origin.endswith("__init__.py"):
        origin = os.path.join(os.path.dirname(origin), *rest.split(".")) + ".py"
    if not origin.endswith(".py") or not os.path.exists(origin) \
            or os.path.exists(importlib.util.cache_from_source(origin)):
        return None
    return (f"note: PYTHONDONTWRITEBYTECODE is set and {module.split('.')[0]} has no compiled bytecode, so every "
            "point's kernel compiles its imports again (about 1 s a point, seen on a GPU machine). Byte-compile "
            "the environment once (python -m compileall -q <its site-packages>) or unset the variable.")


def run_setup(log, gpu: bool) -> None:
    """What a run measures once, before its first point, and hands to every point's kernel (environment):
    the host's calibration (in every record's fingerprint; one this boot measured within the hour and handed down
    in the environment, by a parent run or shards started together, is reused) and, when GPU points will run, each
    GPU's idle
    power (so that no point waits for an idle window of its own)."""
    from helpers.measure import calibration, host_load

    before = host_load.reading()  # the machine's load while the run sets up: another process on its cores?
    note = bytecode_note()
    if note:
        log(note)
    cal = calibration.reusable()
    how = f"measured by an earlier run of this boot at {cal['when']}" if cal else ""
    cal = cal or calibration.measure()
    RUN_FACTS.update(calibration.export(cal) or {})
    log(f"host calibration: {cal.get('dispatch_mcalls_per_s')} M Python calls/s, matmul "
        f"{cal.get('matmul_gflops_1thread')} GFLOP/s on 1 thread, {cal.get('matmul_gflops_all')} on "
        f"{cal.get('matmul_threads')} ({how or str(cal.get('seconds')) + ' s'})")
    time.sleep(max(0.0, LOAD_WINDOW_S - (time.perf_counter() - before["t"])))
    loaded = host_load.loaded_line(before, host_load.reading())
    if loaded:
        log(loaded)
    if gpu:
        from helpers.measure.sampler import IDLE_ENV, measure_gpus_idle

        idle = measure_gpus_idle(1.0)
        if idle:
            RUN_FACTS[IDLE_ENV] = json.dumps(idle)
            log("GPU idle power: " + ", ".join(f"{w:.0f} W" for w in idle["per_gpu_w"].values())
                + f" (energy counter, {idle['window_s']:.1f} s, before any point)")
