"""The records of a point run as several processes: each process writes its own (under ``PROCESS_FOLDER``), process 0
gathers them through JAX's runtime (``gather``) and writes the point's record, merged from them (``merge``).

    rec = finish_processes(point)   # Point.finish on several processes: own record, gather, leave, merged record
    merged = merge(records)         # the processes' records as one
"""

from __future__ import annotations

import json
import math
import os
import time

from helpers.measure.timing import steady_figures
from helpers.point.process_group import leave
from helpers.record import fields as F
from helpers.record import writer
from helpers.record.ids import record_name
from helpers.record.schema import empty_record

PROCESS_FOLDER = ".processes"  # each process's own record (a dot folder: the report reads the merged one)
FIGURES = (F.EPOCH_S, F.MEDIAN_EPOCH_S, F.STEP_S, F.SAMPLES_PER_S, F.SAMPLES_PER_S_SPREAD, F.EPOCH_SPREAD,
           F.FIRST_EPOCH_S, F.COMPILE_OVERHEAD_S, F.STEADY_S, F.ENERGY_J_PER_EPOCH, F.ACHIEVED_TFLOPS, F.MFU)


def finish_processes(point) -> dict:
    """``Point.finish`` on several processes: each writes its own record (under ``.processes``), then process 0
    gathers them all through JAX's runtime and writes the point's record, merged (``merge``)."""
    pid = point.dist.process_id
    own = point.folder if pid else point.folder / PROCESS_FOLDER
    rec = point.record
    rec.update(status="ok", reason=None, duration_s=round(time.perf_counter() - point.t_start, 3))
    name = process_record_name(rec, pid)
    point.path = writer.write_record(rec, own, name=name)
    print(f"process {pid} record: {point.path}")
    records = gather(rec)
    # every process leaves JAX's runtime here, together: a coordinator whose kernel ended first (the notebook's
    # later cells are quicker on one process) would take the runtime down under the others (SIGABRT)
    leave()
    if pid:
        # where the point's record goes, a pointer, on a host whose folder process 0 does not share (process 0's own
        # record, written before the gather, is not in it): the point's record is written once, by process 0
        shared = (own / process_record_name(records[0], 0)).exists()
        stub = empty_record(point.params, point.point_id)
        stub.update(status="skipped", process_id=pid, fingerprint=rec.get("fingerprint"), shared_folder=shared,
                    started_at=point.started_at, duration_s=rec["duration_s"],
                    reason=f"process {pid} of {point.dist.hosts}: its figures are in process 0's merged record "
                           f"(its own record: {PROCESS_FOLDER}/{name})")
        if not shared or os.environ.get(writer.STAGE_ENV):  # a runner started this process: it decides
            writer.keep(stub, own.parent)
        return rec
    merged = merge(records)
    merged["duration_s"] = round(time.perf_counter() - point.t_start, 3)
    merged["process_records"] = [  # on each process's host, beside its point's record
        f"{PROCESS_FOLDER}/{process_record_name(r, i)}" for i, r in enumerate(records)]
    point.record = merged
    point.path = writer.keep(merged, point.folder)
    print(f"record (merged from {len(records)} processes): {point.path}; "
          f"{merged.get('samples_per_s') or 0:.0f} samples/s over every process")
    return merged


def process_record_name(rec: dict, process_id: int) -> str:
    """The file name of one process's record of a point run on several hosts: the point's, ``-p<id>`` added."""
    return record_name(rec["params"], rec["point_id"])[:-len(".json")] + f"-p{process_id}.json"


def gather(record: dict) -> list[dict]:
    """Every process's record, in process order, through JAX's runtime (every process must call it)."""
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    blob = np.frombuffer(json.dumps(writer.clean_json(record), sort_keys=True, default=str).encode(), dtype=np.uint8)
    sizes = np.asarray(multihost_utils.process_allgather(np.asarray([blob.size], dtype=np.int32))).reshape(-1)
    padded = np.zeros(int(sizes.max()), dtype=np.uint8)
    padded[:blob.size] = blob
    allb = np.asarray(multihost_utils.process_allgather(padded)).reshape(jax.process_count(), -1)
    return [json.loads(bytes(allb[i, :int(sizes[i])]).decode()) for i in range(jax.process_count())]


def merge(records: list[dict]) -> dict:
    """One record of a point run as several processes (one per host), from their records.

    The processes step together: an epoch lasts as long as its slowest process, so the merged epoch
    times are the per-epoch maxima; ``n_train`` is the global count, samples/s global samples over that
    time; energy is the sum over the processes (where each has it); the fingerprint is process 0's with
    every process's host (``hosts``) and fingerprint (``processes``).
    """
    if not records:
        raise ValueError("no records to merge")
    recs = sorted(records, key=lambda r: r.get("process_id") or 0)
    out = json.loads(json.dumps(recs[0]))
    bad = [r for r in recs if r.get("status") != "ok"]
    if bad:  # no figure of a point some process did not finish
        out.update(status=bad[0].get("status"), reason=f"process {bad[0].get('process_id')}: {bad[0].get('reason')}")
        out["processes"] = [_process_summary(r) for r in recs]
        return strip_figures(out)
    lists = [r.get(F.EPOCH_S) or [] for r in recs]
    k = min(len(x) for x in lists)
    epochs = [max(x[i] for x in lists) for i in range(k)]
    n = sum(int(r.get("n_train_process") or 0) for r in recs) or out.get("n_train")
    out.update(n_train=n, epoch_s=epochs, merged_from=len(recs), process_id=None)
    firsts = [r[F.FIRST_EPOCH_S] for r in recs if isinstance(r.get(F.FIRST_EPOCH_S), (int, float))]
    if firsts:
        out[F.FIRST_EPOCH_S] = max(firsts)
    if epochs and n:  # the figures a single process's record carries, from the merged epochs
        out.update(steady_figures(epochs, n, out.get(F.STEPS_PER_EPOCH), out.get(F.FIRST_EPOCH_S) or None),
                   steady_s=math.fsum(epochs))
    energies = [r.get(F.ENERGY_J_PER_EPOCH) for r in recs]
    if all(isinstance(e, (int, float)) for e in energies):
        out[F.ENERGY_J_PER_EPOCH] = math.fsum(energies)
    else:
        out[F.ENERGY_J_PER_EPOCH] = None
    out["processes"] = [_process_summary(r) for r in recs]
    fp = dict(out.get("fingerprint") or {})
    fp["hosts"] = [(r.get("fingerprint") or {}).get("host") for r in recs]
    fp["processes"] = [r.get("fingerprint") or {} for r in recs]
    out["fingerprint"] = fp
    out.pop("utilisation_timeline", None)  # one process's timeline would pass for the point's
    return out


def _process_summary(r: dict) -> dict:
    """One process's line in the merged record: its host, figures, devices (which GPU) and status."""
    return {"process_id": r.get("process_id"), "host": (r.get("fingerprint") or {}).get("host"),
            "n_train_process": r.get("n_train_process"), F.MEDIAN_EPOCH_S: r.get(F.MEDIAN_EPOCH_S),
            "epochs_run": r.get("epochs_run"), "window_stopped_by": r.get("window_stopped_by"),
            "samples_per_s_process": r.get("samples_per_s_process"), F.FIRST_EPOCH_S: r.get(F.FIRST_EPOCH_S),
            F.ENERGY_J_PER_EPOCH: r.get(F.ENERGY_J_PER_EPOCH),
            "final_loss": ((r.get(F.HISTORY) or {}).get("loss") or [None])[-1],
            "devices": r.get("process_devices"), "gpu_indices_used": r.get("gpu_indices_used"),
            "device_detail": r.get("device_detail"), "status": r.get("status"), "reason": r.get("reason")}


def strip_figures(rec: dict) -> dict:
    """``rec`` without the figures of a run that did not finish (a failed point claims none)."""
    for k in FIGURES:
        if k in rec:
            rec[k] = [] if k == F.EPOCH_S else None
    rec.pop("utilisation_timeline", None)
    return rec
