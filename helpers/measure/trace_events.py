"""Profiler traces as a list of events: read from a Chrome / Perfetto JSON or a TensorFlow XSpace, written
back as a Chrome trace. The standard library only (TensorFlow's protobuf classes for an XSpace).

    events = read_chrome("…/perfetto_trace.json.gz")     # JAX (create_perfetto_trace), torch (export_chrome_trace)
    events = read_xplane("…/host.xplane.pb")             # TensorFlow (tf.profiler writes only the XSpace)
    write_chrome(events, "…/trace.json.gz")              # viewable in Perfetto without TensorBoard

An event is an ``Ev``: process, thread, name, category, start and duration in microseconds. What one step's
time is made of: ``helpers.measure.trace_breakdown``.
"""

from __future__ import annotations

import gzip
import json
from typing import NamedTuple


class Ev(NamedTuple):
    process: str
    thread: str
    name: str
    cat: str
    ts: float  # microseconds
    dur: float


def _open(path):
    path = str(path)
    return gzip.open(path, "rt") if path.endswith(".gz") else open(path)


def chrome_events(doc) -> list[Ev]:
    """The complete events (``ph`` X) of a Chrome / Perfetto JSON trace (a dict with ``traceEvents``, or a list),
    with their process and thread names from the metadata events."""
    raw = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    procs, threads = {}, {}
    for e in raw:
        if not isinstance(e, dict) or e.get("ph") != "M":
            continue
        name = (e.get("args") or {}).get("name")
        if e.get("name") == "process_name":
            procs[e.get("pid")] = str(name)
        elif e.get("name") == "thread_name":
            threads[(e.get("pid"), e.get("tid"))] = str(name)
    out = []
    for e in raw:
        if not isinstance(e, dict) or e.get("ph") != "X" or "ts" not in e:
            continue
        pid, tid = e.get("pid"), e.get("tid")
        out.append(Ev(procs.get(pid, str(pid)), threads.get((pid, tid), str(tid)), str(e.get("name", "")),
                      str(e.get("cat") or ""), float(e["ts"]), float(e.get("dur") or 0.0)))
    return out


def read_chrome(path) -> list[Ev]:
    with _open(path) as f:
        return chrome_events(json.load(f))


def read_xplane(path) -> list[Ev]:
    """The events of a TensorFlow profiler XSpace (``*.xplane.pb``), through the protobuf classes TensorFlow
    ships (imported here: only a TensorFlow point reads one)."""
    try:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2
    except ImportError:  # older layouts
        from tsl.profiler.protobuf import xplane_pb2  # type: ignore[no-redef]

    space = xplane_pb2.XSpace()
    with open(path, "rb") as f:
        space.ParseFromString(f.read())
    out = []
    for plane in space.planes:
        names = {k: (v.display_name or v.name) for k, v in plane.event_metadata.items()}
        for line in plane.lines:
            base_ps = line.timestamp_ns * 1000
            for e in line.events:
                out.append(Ev(plane.name, line.display_name or line.name, names.get(e.metadata_id, ""), "",
                              (base_ps + e.offset_ps) / 1e6, e.duration_ps / 1e6))
    return out


def write_chrome(events: list[Ev], path) -> None:
    """``events`` as a gzipped Chrome trace JSON (Perfetto and chrome://tracing open it): TensorFlow's XSpace
    made viewable without TensorBoard."""
    pids: dict = {}
    tids: dict = {}
    meta, body = [], []
    for e in events:
        if e.process not in pids:
            pids[e.process] = len(pids) + 1
            meta.append({"ph": "M", "pid": pids[e.process], "name": "process_name", "args": {"name": e.process}})
        pid = pids[e.process]
        key = (e.process, e.thread)
        if key not in tids:
            tids[key] = len(tids) + 1
            meta.append({"ph": "M", "pid": pid, "tid": tids[key], "name": "thread_name", "args": {"name": e.thread}})
        body.append({"ph": "X", "pid": pid, "tid": tids[key], "name": e.name, "ts": round(e.ts, 3),
                     "dur": round(e.dur, 3), **({"cat": e.cat} if e.cat else {})})
    with gzip.open(str(path), "wt") as f:
        json.dump({"displayTimeUnit": "ms", "traceEvents": meta + body}, f)
