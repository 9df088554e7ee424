"""Past one device, past one host: Keras' own distribution API on JAX (no framework import at module level).

A point with ``gpus: N`` trains data-parallel over the first N devices of its host through
``keras.distribution.DataParallel`` (set before the model is built); the global batch is
``batch_size`` x N x ``hosts``, and samples/s counts global samples. A point with ``hosts: H`` is run
as H processes, one per host, which meet through ``keras.distribution.initialize`` (JAX's distributed
runtime); each process feeds its own shard of the numpy data (``auto_shard_dataset=False``) and writes
its own record; process 0 gathers them (through the runtime itself, no shared folder needed) and
writes one merged record (``merge``). No launcher or collective of ours: start the same notebook (or
``run_all.sh`` with a one-point grid) on every host with these environment variables, Keras' own::

    KERAS_DISTRIBUTION_JOB_ADDRESSES=host0:PORT   # the coordinator, process 0's host (or JAX_COORDINATOR_ADDRESS)
    KERAS_DISTRIBUTION_PROCESS_ID=i               # this process, 0 .. hosts-1 (JAX_PROCESS_ID also read)
    KERAS_DISTRIBUTION_NUM_PROCESSES=H            # optional; must equal the point's `hosts`

On CPUs the processes talk through JAX's gloo collectives (``jax_cpu_collectives_implementation``).

    check(params)                 # cross-key rules (grid validation and the notebook's first cell)
    plan = initialize(params)     # before any JAX computation: the multi-host runtime, if hosts > 1
    fields = use_devices(plan, params)   # the mesh: DataParallel over the devices; record fields
    x, y = shard(x, y, plan)      # this process's part of the numpy data
    merged = merge(records)       # the processes' records as one

Test-only route (issue 16, item 6): ``gpus`` > 1 needs ``device: gpu``, except when the environment
says ``CGB_HOST_DEVICES=1`` (never honoured in grid files): then a CPU point trains over JAX's host
devices, ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` set before the process starts, so
the same code path runs on a machine without a GPU (``tests/test_distribution.py``).

TensorFlow (``tf.distribute.MirroredStrategy``) and torch are refused for ``gpus`` / ``hosts`` > 1:
Keras 3 has no distribution API on torch; on TensorFlow the model would have to be built and compiled
inside a strategy scope, a second code path that cannot be run on the lent GPU machines (no TensorFlow
GPU build there), so it is not written.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

from .params import ParamError
from .timing import steady_figures

HOST_DEVICES_ENV = "CGB_HOST_DEVICES"  # test only: gpus > 1 over JAX host devices on a CPU point
COORDINATOR_ENV = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "JAX_COORDINATOR_ADDRESS")
PROCESS_ID_ENV = ("KERAS_DISTRIBUTION_PROCESS_ID", "JAX_PROCESS_ID")
NUM_PROCESSES_ENV = "KERAS_DISTRIBUTION_NUM_PROCESSES"
PROCESS_FOLDER = ".processes"  # each process's own record (a dot folder: the report reads the merged one)
DISTRIBUTION = "keras.distribution.DataParallel"


class DistributionError(RuntimeError):
    """The multi-host environment is incomplete or inconsistent (the message names the variable)."""


def host_devices_allowed(environ=None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(HOST_DEVICES_ENV) == "1"


def devices_of(params: dict) -> tuple[int, int]:
    """``(gpus, hosts)`` of a point's parameters (absent or null: 1)."""
    return int(params.get("gpus", 1) or 1), int(params.get("hosts", 1) or 1)


def check(params: dict, where: str = "parameters", host_devices: bool = False) -> None:
    """Raise ``ParamError`` for a combination that cannot run: ``gpus``/``hosts`` > 1 off JAX, ``gpus`` > 1
    on a CPU point (unless ``host_devices``, the test-only route)."""
    gpus, hosts = devices_of(params)
    if gpus == 1 and hosts == 1:
        return
    backend, dev = params.get("backend"), params.get("device")
    what = f"gpus={gpus}" if gpus > 1 else f"hosts={hosts}"
    if backend == "torch":
        raise ParamError(f"{where}: {what} with backend 'torch': Keras 3 has no distribution API on torch "
                         "(keras.distribution is JAX-only); use backend 'jax' or gpus: 1, hosts: 1")
    if backend == "tensorflow":
        raise ParamError(f"{where}: {what} with backend 'tensorflow': not supported (tf.distribute."
                         "MirroredStrategy would need the model built inside a strategy scope, a second code "
                         "path that cannot be run on the lent machines: no TensorFlow GPU build there); use "
                         "backend 'jax'")
    if gpus > 1 and dev != "gpu" and not host_devices:
        raise ParamError(f"{where}: gpus={gpus} with device '{dev}': several devices need device: gpu "
                         "(a CPU point uses the host's cores through `threads`)")


def per_process_batch(params: dict) -> int:
    return int(params["batch_size"]) * devices_of(params)[0]


def data_params(params: dict) -> dict:
    """The parameters a workload's loader gets: this process's batch (``batch_size`` x ``gpus``), and with
    several devices ``n_train``/``n_val`` trimmed to a multiple of ``gpus``, so that a generator's last batch
    splits evenly over the devices too (JAX refuses a batch it cannot split)."""
    gpus = devices_of(params)[0]
    out = {**params, "batch_size": per_process_batch(params)}
    if gpus > 1:
        for key in ("n_train", "n_val"):
            if out.get(key):
                out[key] = max(gpus, out[key] - out[key] % gpus)
    return out


def global_batch(params: dict) -> int:
    return per_process_batch(params) * devices_of(params)[1]


# ---------------------------------------------------------------- the plan


@dataclass
class Plan:
    """Where this process stands: devices per host, hosts, its id, the mesh once built."""

    gpus: int = 1
    hosts: int = 1
    process_id: int = 0
    coordinator: str | None = None
    devices: list = field(default_factory=list)  # the mesh's devices, as keras names them ("gpu:0")
    detail: list = field(default_factory=list)  # each device's kind and process

    @property
    def distributed(self) -> bool:
        return self.gpus * self.hosts > 1


def multihost_env(hosts: int, environ=None) -> tuple[str, int]:
    """``(coordinator, process_id)`` from the environment (Keras' variables, else JAX's)."""
    env = os.environ if environ is None else environ
    coord = next((env[k] for k in COORDINATOR_ENV if env.get(k)), None)
    raw = next((env[k] for k in PROCESS_ID_ENV if env.get(k)), None)
    if not coord:
        raise DistributionError(f"hosts={hosts}: no coordinator address; set {COORDINATOR_ENV[0]}=host:port "
                                "(process 0's host) on every host")
    if raw is None or not raw.strip().isdigit() or not 0 <= int(raw) < hosts:
        raise DistributionError(f"hosts={hosts}: {PROCESS_ID_ENV[0]} is {raw!r}; set it to this process's id, "
                                f"0 .. {hosts - 1}, a different one on every host")
    n = env.get(NUM_PROCESSES_ENV)
    if n and n.strip() != str(hosts):
        raise DistributionError(f"{NUM_PROCESSES_ENV}={n} but the point says hosts={hosts}")
    return coord.split(",")[0].strip(), int(raw)


def initialize(params: dict, environ=None) -> Plan:
    """The multi-host runtime, when ``hosts`` > 1: call after ``import keras`` and before any computation
    (JAX's backends must not have started). A no-op plan otherwise."""
    gpus, hosts = devices_of(params)
    plan = Plan(gpus=gpus, hosts=hosts)
    if plan.hosts == 1:
        return plan
    plan.coordinator, plan.process_id = multihost_env(plan.hosts, environ)
    import jax
    import keras

    if params.get("device") == "cpu":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")  # CPU collectives across processes
    keras.distribution.initialize(plan.coordinator, plan.hosts, plan.process_id)
    return plan


def use_devices(plan: Plan, params: dict) -> tuple[dict, str | None]:
    """Set ``DataParallel`` over the first ``gpus`` devices of every process (before the model is built).

    Returns ``(record fields, skip reason)``: the reason when this host has fewer devices than ``gpus``.
    """
    bs = int(params["batch_size"])
    fields = {"gpus": plan.gpus, "hosts": plan.hosts, "per_device_batch_size": bs,
              "per_process_batch_size": per_process_batch(params), "global_batch_size": global_batch(params),
              "distribution": None, "mesh_devices": None, "process_id": plan.process_id}
    if not plan.distributed:
        return fields, None
    import jax
    import keras

    local = jax.local_devices()
    if len(local) < plan.gpus:
        kind = local[0].platform if local else "device"
        return fields, (f"gpus={plan.gpus} but this host has {len(local)} {kind} device(s) usable by jax "
                        f"({', '.join(str(d) for d in local)})")
    chosen = []
    for p in range(jax.process_count()):
        mine = sorted((d for d in jax.devices() if d.process_index == p), key=lambda d: d.id)
        chosen.extend(mine[:plan.gpus])
    plan.devices = [f"{d.platform}:{d.id}" for d in chosen]
    plan.detail = [{"device": f"{d.platform}:{d.id}", "kind": getattr(d, "device_kind", ""),
                    "process": d.process_index} for d in chosen]
    dist = keras.distribution.DataParallel(devices=plan.devices, auto_shard_dataset=plan.hosts == 1)
    keras.distribution.set_distribution(dist)
    fields.update(distribution=DISTRIBUTION, mesh_devices=list(plan.devices), mesh_detail=plan.detail,
                  mesh_shape=list(dist.device_mesh.shape), mesh_axes=list(dist.device_mesh.axis_names))
    return fields, None


# ---------------------------------------------------------------- data


def trim(n: int, plan: Plan) -> int:
    """Samples kept of ``n`` (per process): a multiple of the devices, so every batch, the last one too,
    splits evenly over them."""
    return n - n % max(1, plan.gpus) if plan.distributed else n


def shard(x, y, plan: Plan):
    """This process's equal, contiguous part of the arrays (every process the same count: the processes
    take the same number of steps), trimmed to a multiple of its devices."""
    if x is None or not plan.distributed:
        return x, y
    n = len(x) // plan.hosts
    n = trim(n, plan)
    if n == 0:
        raise ValueError(f"{len(x)} samples cannot be shared by {plan.hosts} processes x {plan.gpus} devices")
    a = plan.process_id * n
    return x[a:a + n], y[a:a + n]


def device_memory(plan: Plan | None) -> dict:
    """Peak memory (MB) per mesh device of this process (the framework's counters; GPUs only)."""
    if plan is None or not plan.devices:
        return {}
    import jax

    out = {}
    for d in jax.local_devices():
        name = f"{d.platform}:{d.id}"
        if name not in plan.devices:
            continue
        stats = d.memory_stats() or {}
        if "peak_bytes_in_use" in stats:
            out[name] = stats["peak_bytes_in_use"] / 2**20
    return {"gpu_peak_mb_per_device": out} if out else {}


# ---------------------------------------------------------------- the processes' records


def gather(record: dict) -> list[dict]:
    """Every process's record, in process order, through JAX's runtime (every process must call it)."""
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    from .record import _clean

    blob = np.frombuffer(json.dumps(_clean(record), sort_keys=True, default=str).encode(), dtype=np.uint8)
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
    if bad:
        out.update(status=bad[0].get("status"), reason=f"process {bad[0].get('process_id')}: {bad[0].get('reason')}")
    lists = [r.get("epoch_s") or [] for r in recs]
    k = min(len(x) for x in lists)
    epochs = [max(x[i] for x in lists) for i in range(k)]
    n = sum(int(r.get("n_train_process") or 0) for r in recs) or out.get("n_train")
    out.update(n_train=n, epoch_s=epochs, merged_from=len(recs), process_id=None)
    firsts = [r["first_epoch_s"] for r in recs if isinstance(r.get("first_epoch_s"), (int, float))]
    if firsts:
        out["first_epoch_s"] = max(firsts)
    if epochs and n:  # the figures a single process's record carries, from the merged epochs
        out.update(steady_figures(epochs, n, out.get("steps_per_epoch"), out.get("first_epoch_s") or None),
                   steady_s=math.fsum(epochs))
    energies = [r.get("energy_j_per_epoch") for r in recs]
    if all(isinstance(e, (int, float)) for e in energies):
        out["energy_j_per_epoch"] = math.fsum(energies)
    else:
        out["energy_j_per_epoch"] = None
    out["processes"] = [{"process_id": r.get("process_id"), "host": (r.get("fingerprint") or {}).get("host"),
                         "n_train_process": r.get("n_train_process"), "median_epoch_s": r.get("median_epoch_s"),
                         "first_epoch_s": r.get("first_epoch_s"), "energy_j_per_epoch": r.get("energy_j_per_epoch"),
                         "final_loss": ((r.get("history") or {}).get("loss") or [None])[-1],
                         "status": r.get("status")} for r in recs]
    fp = dict(out.get("fingerprint") or {})
    fp["hosts"] = [(r.get("fingerprint") or {}).get("host") for r in recs]
    fp["processes"] = [r.get("fingerprint") or {} for r in recs]
    out["fingerprint"] = fp
    out.pop("utilisation_timeline", None)  # one process's timeline would pass for the point's
    return out
