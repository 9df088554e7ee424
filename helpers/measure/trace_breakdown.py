"""Where one steady step's time goes, read from a profiler trace: the standard library only.

    events = read_chrome("…/perfetto_trace.json.gz")     # helpers.measure.trace_events
    b = breakdown(events, steps=12, device="gpu", source="xla")

A trace is a list of ``trace_events.Ev`` (process, thread, name, category, start and duration in microseconds).
The profiled steps sit inside one annotation named ``WINDOW`` (``helpers.point.profiling`` opens it at an epoch's
start and closes it after the device finished the epoch's last step). Inside that window every instant is one of:

- ``device_busy``: a kernel runs on the GPU (a CPU point: a framework op runs on any of its threads);
- ``copies``: no kernel runs but a copy between host and device does (a CPU point: JAX's host-to-"device" copy);
- ``host_only``: the device is idle while the host works: Python, Keras and framework dispatch, the data
  pipeline, the profiler itself.

So the three parts add up to the window exactly, and ``step_ms`` (window / steps) is what the trace says one
step took; ``helpers.point.profiling`` sets it beside the step the clock measured. ``top`` lists the five kernels
(a CPU point: ops) with the most time per step, each by its own time (a nested op's children taken out).
"""

from __future__ import annotations

import re
from collections import defaultdict

from helpers.measure.trace_events import Ev

WINDOW = "cgb_profiled_steps"  # the annotation around the profiled steps
TOP = 5

_MEMCPY = re.compile(r"memcpy|memcpy[hd]2[hd]|\bcopy (?:h|d)to(?:h|d)", re.I)
_H2D = re.compile(r"h2d|htod|host ?to ?device|pageable -> device|pinned -> device", re.I)
_MEMSET = re.compile(r"memset", re.I)
# bookkeeping and waits on the XLA / TensorFlow host threads: not work
_NOT_WORK = re.compile(r"^(ThreadpoolListener|Wait for|ThunkExecutor::Execute \(wait|end: |ExecutorDoneCallback)")
_HOST_OP_THREADS = ("tf_XLA", "tf_Compute", "tf_numa", "tf_XLAEigen")
# GPU kernels by family, from their names (cuDNN / cuBLAS / CUTLASS / XLA / ATen naming), first match wins
COLLECTIVE = re.compile(r"nccl|all-?reduce|all_reduce|allreduce|all-?gather|reduce-?scatter|collective-permute|"
                        r"all-to-all", re.I)
FAMILIES = (
    ("collective", COLLECTIVE),  # the devices' collectives (NCCL's kernels): before "reduce" matches AllReduce
    ("layout", re.compile(r"convertTensor|transpose|nchwToNhwc|nhwcToNchw|permute", re.I)),
    ("matmul_conv", re.compile(r"gemm|conv|cudnn|xmma|cutlass|cublas|nvjet|wgrad|dgrad|implicit|\bdot\b|_mm_|sm\d\d_",
                               re.I)),
    ("reduce", re.compile(r"reduce|norm|softmax|mean|sum_", re.I)),
    ("elementwise", re.compile(r"elementwise|fusion|copy|cast|fill|add|mul|relu|where|loop_|vectorized|unrolled",
                               re.I)),
)


class TraceError(ValueError):
    """The trace cannot give a breakdown (no window, no events); the message says why."""


# ------------------------------------------------------------------ classifying
def _is_device(e: Ev) -> bool:
    return "/device:gpu" in e.process.lower() or e.cat in ("kernel", "gpu_memcpy", "gpu_memset")


def kind(e: Ev, device: str) -> str | None:
    """``kernel`` (device compute), ``copy``, ``op`` (a framework op on a host thread) or None (anything else:
    Python, annotations, the runtime's bookkeeping)."""
    if e.cat in ("kernel", "gpu_memset"):
        return "kernel"
    if e.cat == "gpu_memcpy":
        return "copy"
    if e.cat == "cpu_op":  # torch
        return "op"
    if _is_device(e):
        if not e.thread.startswith("Stream"):  # derived lines (XLA Ops, XLA Modules, Steps): not raw activity
            return None
        if _MEMSET.search(e.name):
            return "kernel"
        return "copy" if _MEMCPY.search(e.name) else "kernel"
    if e.thread.startswith(_HOST_OP_THREADS) or "Eigen" in e.thread:
        if _NOT_WORK.match(e.name):
            return None
        return "copy" if e.name == "H2D Dispatch" else "op"
    return None


# ------------------------------------------------------------------ interval arithmetic
def _union(intervals) -> list[tuple[float, float]]:
    out: list[list[float]] = []
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def _length(intervals) -> float:
    return sum(b - a for a, b in intervals)


def _clip(events, lo: float, hi: float):
    for e in events:
        a, b = max(e.ts, lo), min(e.ts + e.dur, hi)
        if b > a:
            yield a, b


def self_times(events: list[Ev]) -> list[tuple[Ev, float]]:
    """Each event with its own time: its duration less that of the events nested directly inside it on the same
    thread (torch's ``aten::linear`` holds ``aten::addmm``; XLA's executor holds its thunks)."""
    by_thread = defaultdict(list)
    for e in events:
        by_thread[(e.process, e.thread)].append(e)
    out = []
    for evs in by_thread.values():
        evs.sort(key=lambda e: (e.ts, -e.dur))
        stack: list[list] = []  # [event, end, children's time]
        for e in evs:
            while stack and e.ts >= stack[-1][1] - 1e-9:
                done = stack.pop()
                out.append((done[0], max(0.0, done[0].dur - done[2])))
            if stack:
                stack[-1][2] += e.dur
            stack.append([e, e.ts + e.dur, 0.0])
        out.extend((d[0], max(0.0, d[0].dur - d[2])) for d in stack)
    return out


# ------------------------------------------------------------------ the breakdown
def window(events: list[Ev], name: str = WINDOW) -> tuple[float, float]:
    marks = [e for e in events if e.name == name and e.dur > 0]
    if not marks:
        raise TraceError(f"the trace has no '{name}' annotation around the profiled steps")
    w = max(marks, key=lambda e: e.dur)
    return w.ts, w.ts + w.dur


def breakdown(events: list[Ev], steps: int, device: str, source: str = "", top: int = TOP) -> dict:
    """One step's time in the trace's window, in milliseconds and shares (see the module's docstring).

    ``device``: the device the point trained on (``gpu`` or ``cpu``): on a GPU the device's busy time is its
    kernels, on a CPU the framework's ops on any thread. ``source`` names the framework for the record."""
    if steps < 1:
        raise TraceError("no profiled step")
    lo, hi = window(events)
    kinds = [(e, kind(e, device)) for e in events]
    compute_kind = "kernel" if device == "gpu" else "op"
    compute = [e for e, k in kinds if k == compute_kind]
    copies = [e for e, k in kinds if k == "copy"]
    if not compute:
        raise TraceError(f"the trace has no {'GPU kernel' if device == 'gpu' else 'framework op'} events "
                         f"({len(events)} events in all): the profiler did not see the "
                         f"{'device' if device == 'gpu' else 'ops'}")
    busy = _union(_clip(compute, lo, hi))
    busy_or_copy = _union(list(busy) + list(_clip(copies, lo, hi)))
    win = hi - lo
    parts_us = {"device_busy": _length(busy), "copies": _length(busy_or_copy) - _length(busy)}
    parts_us["host_only"] = max(0.0, win - _length(busy_or_copy))
    per_step = {k: v / 1000 / steps for k, v in parts_us.items()}
    step_ms = win / 1000 / steps
    out = {
        "source": source, "device": device, "steps": steps,
        "step_ms": step_ms,  # the window over its steps: what the parts add up to
        "parts_ms": per_step,
        "shares": {k: (v / step_ms if step_ms else None) for k, v in per_step.items()},
        "top": _top(compute, lo, hi, steps, step_ms, top, xla=source != "torch", nested=device != "gpu"),
        "events": len(events),
    }
    if device == "gpu":  # where the kernels' time goes by family: convolutions and matmuls against the rest
        out["kernel_families_ms"] = families(compute, lo, hi, steps)
    h2d = [e for e in copies if _H2D.search(e.name) or e.name == "H2D Dispatch"]
    if copies:
        out["h2d_ms"] = _length(_union(_clip(h2d, lo, hi))) / 1000 / steps
    if device == "gpu":  # the host's framework ops (torch: aten::, XLA/TF executor threads) while the device idles
        host_ops = [e for e, k in kinds if k == "op"]
        if host_ops:
            idle = _subtract([(lo, hi)], busy_or_copy)
            out["host_ops_while_idle_ms"] = _length(_intersect(idle, _union(_clip(host_ops, lo, hi)))) / 1000 / steps
    return out


def family(name: str) -> str:
    return next((f for f, pat in FAMILIES if pat.search(name)), "other")


def collective_per_device(b: dict, devices: int) -> tuple[float | None, float | None]:
    """One device's collective kernels in a step of a breakdown (``ms``, ``calls``): the kernels of every device
    traced are summed, so over ``devices``. From the ``collective`` family where the breakdown has it, else from
    its top kernels (a breakdown made before the family existed counted NCCL's kernels under ``reduce``); None
    where neither names one."""
    n = max(1, int(devices or 1))
    fam = b.get("kernel_families_ms") or {}
    top = [t for t in (b.get("top") or []) if COLLECTIVE.search(str(t.get("name", "")))]
    calls = sum(float(t.get("calls_per_step") or 0) for t in top) / n if top else None
    if fam.get("collective") is not None:
        return float(fam["collective"]) / n, calls
    if top:
        return sum(float(t.get("ms") or 0) for t in top) / n, calls
    return None, None


def families(kernels, lo, hi, steps) -> dict:
    """Kernel time per step by family (``FAMILIES``: layout changes, matmuls and convolutions, reductions and
    normalisations, elementwise work with casts and copies, other), each kernel's duration inside the window."""
    out = {f: 0.0 for f, _ in FAMILIES} | {"other": 0.0}
    for e in kernels:
        a, b = max(e.ts, lo), min(e.ts + e.dur, hi)
        if b > a:
            out[family(e.name)] += (b - a) / 1000 / steps
    return out


def _top(compute, lo, hi, steps, step_ms, n, xla: bool, nested: bool) -> list[dict]:
    """The ``n`` names with the most time per step: kernels by their duration, host ops by their own time."""
    inside = [e for e in compute if lo <= e.ts < hi]
    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for e, own in (self_times(inside) if nested else [(e, e.dur) for e in inside]):
        if xla and "::" in e.name:  # the executor's wrappers (ThunkExecutor::Execute, ExecutorState::Process)
            continue
        totals[e.name] += own
        counts[e.name] += 1
    best = sorted(totals.items(), key=lambda kv: -kv[1])[:n]
    return [{"name": name[:160], "ms": us / 1000 / steps, "share": (us / 1000 / steps / step_ms) if step_ms else None,
             "calls_per_step": counts[name] / steps} for name, us in best]


def _subtract(base, cut):
    out = []
    for a, b in base:
        cur = a
        for c, d in cut:
            if d <= cur or c >= b:
                continue
            if c > cur:
                out.append((cur, c))
            cur = max(cur, d)
        if cur < b:
            out.append((cur, b))
    return out


def _intersect(xs, ys):
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if b > a:
            out.append((a, b))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out
