"""Past one device, past one host: Keras' own distribution API on JAX (no framework import at module level).

A point with ``gpus: N`` trains data-parallel over the first N devices of its host through
``keras.distribution.DataParallel`` (set before the model is built); the global batch is
``batch_size`` x N x ``hosts``, and samples/s counts global samples. A point with ``hosts: H`` is run
as H processes, one per host, which meet through ``keras.distribution.initialize`` (JAX's distributed
runtime); each process feeds its own shard of the numpy data (``auto_shard_dataset=False``) and writes
its own record; process 0 gathers them (through the runtime itself, no shared folder needed) and
writes one merged record (``merge``). No collective of ours: start the same grid on every process under a
launcher (``srun``, ``mpirun``), or with Keras' own variables set on each (``helpers.point.launcher`` reads them)::

    KERAS_DISTRIBUTION_JOB_ADDRESSES=host0:PORT   # the coordinator, process 0's host (or JAX_COORDINATOR_ADDRESS)
    KERAS_DISTRIBUTION_PROCESS_ID=i               # this process, 0 .. hosts-1 (JAX_PROCESS_ID also read)
    KERAS_DISTRIBUTION_NUM_PROCESSES=H            # optional; must equal the point's `hosts`

A point with ``processes: N`` (and ``hosts: 1``) is N processes on this host that the runner starts itself
(``helpers.runner.processes``), each with its own ``gpus`` GPU(s): the same runtime, the same merged record. A
point's processes are ``hosts`` x ``processes`` (``Plan.hosts`` counts them).

The runtime is JAX's (``jax.distributed.initialize``, what ``keras.distribution.initialize`` calls) with the
point's timeouts: connecting is bounded by the point's deadline, a process that stops sending heartbeats is
declared dead after ``HEARTBEAT_S``. Right after it, the processes check they run the same point
(``agree``). The random seed is set before it, so Keras' cross-process seeding (a computation on JAX's CPU
devices) is not needed; GPU points keep JAX's CPU platform visible anyway (``JAX_PLATFORMS=cuda,cpu``).
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

TensorFlow (``tf.distribute.MirroredStrategy``) and torch are refused for ``gpus`` / ``hosts`` / ``processes``
> 1: Keras 3 has no distribution API on torch (``TORCH_DDP``: what torch's own DDP does under Keras' fit); on
TensorFlow the model would have to be built and compiled
inside a strategy scope, a second code path that cannot be run on the lent GPU machines (no TensorFlow
GPU build there), so it is not written.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass, field

from helpers.measure.timing import deadline, steady_figures
from helpers.params import ParamError
from helpers.point import device as _device
from helpers.point import launcher as _launch
from helpers.point.launcher import COORDINATOR_ENV, NUM_PROCESSES_ENV, PROCESS_ID_ENV, DistributionError  # noqa: F401

HOST_DEVICES_ENV = "CGB_HOST_DEVICES"  # test only: gpus > 1 over JAX host devices on a CPU point
PROCESS_FOLDER = ".processes"  # each process's own record (a dot folder: the report reads the merged one)
DISTRIBUTION = "keras.distribution.DataParallel"
INIT_TIMEOUT_S = 300  # the processes meet within this (JAX's default), or the point's deadline if sooner
HEARTBEAT_S = 60  # a process silent this long is dead: the runtime stops the others (JAX's default: 100)
SHUTDOWN_S = 60  # a process waits this long at exit for the others (JAX's default: 300)
STUCK_MARGIN_S = 2  # the record of a process left waiting is written this long before JAX's limit
AGREE_S = 120  # the processes' parameters exchanged within this after they met
# What Keras' torch backend does with a model wrapped in torch's DistributedDataParallel (docs/multi_gpu.md)
# (benchmarks/torch_ddp_probe.py, 2 CPU processes, gloo, Keras 3.15, torch 2.13)
TORCH_DDP = ("torch's own DistributedDataParallel is not wired in: Keras' fit cannot be called on it "
             "(\"AttributeError: 'DistributedDataParallel' object has no attribute 'fit'\"), fit on its .module "
             "trains each process alone (no gradient is averaged: the processes' weights part), and only a Keras "
             "model around keras.layers.TorchModuleWrapper(DDP(model)) trains in step: docs/multi_gpu.md")
FIGURES = ("epoch_s", "median_epoch_s", "step_s", "samples_per_s", "samples_per_s_spread", "epoch_spread",
           "first_epoch_s", "compile_overhead_s", "steady_s", "energy_j_per_epoch", "achieved_tflops", "mfu")


def host_devices_allowed(environ=None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(HOST_DEVICES_ENV) == "1"


def devices_of(params: dict) -> tuple[int, int]:
    """``(gpus, processes in all)`` of a point's parameters: gpus per process, hosts x processes (absent or null:
    1)."""
    return int(params.get("gpus", 1) or 1), int(params.get("hosts", 1) or 1) * int(params.get("processes", 1) or 1)


def check(params: dict, where: str = "parameters", host_devices: bool = False) -> None:
    """Raise ``ParamError`` for a combination that cannot run: ``gpus``/``hosts``/``processes`` > 1 off JAX,
    ``gpus`` > 1 on a CPU point (unless ``host_devices``, the test-only route), ``processes`` > 1 with ``hosts``
    > 1 (the runner starts processes on its own host only)."""
    gpus, count = devices_of(params)
    if gpus == 1 and count == 1:
        return
    backend, dev = params.get("backend"), params.get("device")
    hosts, procs = int(params.get("hosts", 1) or 1), int(params.get("processes", 1) or 1)
    what = f"gpus={gpus}" if gpus > 1 else (f"hosts={hosts}" if hosts > 1 else f"processes={procs}")
    if backend == "torch":
        raise ParamError(f"{where}: {what} with backend 'torch': Keras 3 has no distribution API on torch "
                         "(keras.distribution is JAX-only; " + TORCH_DDP + "); use backend 'jax' or gpus: 1, "
                         "hosts: 1, processes: 1")
    if backend == "tensorflow":
        raise ParamError(f"{where}: {what} with backend 'tensorflow': not supported (tf.distribute."
                         "MirroredStrategy would need the model built inside a strategy scope, a second code "
                         "path that cannot be run on the lent machines: no TensorFlow GPU build there); use "
                         "backend 'jax'")
    if gpus > 1 and dev != "gpu" and not host_devices:
        raise ParamError(f"{where}: gpus={gpus} with device '{dev}': several devices need device: gpu "
                         "(a CPU point uses the host's cores through `threads`)")
    if procs > 1 and hosts > 1:
        raise ParamError(f"{where}: processes={procs} with hosts={hosts}: the runner starts `processes` on its own "
                         "host only; on several hosts a launcher starts every process (srun, mpirun: one per GPU), "
                         "with hosts set to their count and processes: 1 (docs/multi_gpu.md)")


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
    """Where this process stands: devices per process, the point's processes (``hosts`` x ``processes``; one
    per host under ``hosts``), its id, the mesh once built."""

    gpus: int = 1
    hosts: int = 1
    process_id: int = 0
    coordinator: str | None = None
    launch: dict | None = None  # who started the processes (``launch.Launch.as_record``)
    devices: list = field(default_factory=list)  # the mesh's devices, as keras names them ("gpu:0")
    detail: list = field(default_factory=list)  # each device's kind and process

    @property
    def distributed(self) -> bool:
        return self.gpus * self.hosts > 1


def multihost_env(hosts: int, environ=None) -> tuple[str, int]:
    """``(coordinator, process_id)`` from the environment (``launch.detect``: Keras' variables, JAX's, mpirun's,
    srun's)."""
    who = _launch.detect(hosts, {"hosts": hosts}, environ)
    return who.coordinator, who.process_id


def _deadline_s() -> float:
    """Seconds left before the point's deadline (``timing.deadline``), at most INIT_TIMEOUT_S, at least 10."""
    end = deadline()
    if end is None:
        return INIT_TIMEOUT_S
    return max(10.0, min(INIT_TIMEOUT_S, end - time.perf_counter()))


def initialize(params: dict, environ=None, on_stuck=None) -> Plan:
    """The multi-process runtime, when the point has several processes: call after ``import keras`` and before
    any computation (JAX's backends must not have started). A no-op plan otherwise.

    JAX ends the process (abort) when the others do not all come within the time limit; ``on_stuck(reason)`` is
    called just before, so the point's record says what was missing (its caller writes a failed record)."""
    gpus, count = devices_of(params)
    plan = Plan(gpus=gpus, hosts=count)
    if plan.hosts == 1:
        return plan
    env = os.environ if environ is None else environ
    who = _launch.detect(count, params, env)
    plan.coordinator, plan.process_id, plan.launch = who.coordinator, who.process_id, who.as_record()
    if params.get("device") == "gpu":  # a launcher's process on a host of several GPUs: its own ones
        narrow = _launch.gpu_slice(who, gpus, env)
        if narrow is not None:
            env["CUDA_VISIBLE_DEVICES"] = plan.launch["cuda_visible_devices_set"] = narrow
    if who.process_id == 0 and _launch.port_in_use(who.coordinator):
        raise DistributionError(f"process 0 cannot serve the coordinator at {who.coordinator}: port "
                                f"{who.coordinator.rsplit(':', 1)[1]} is in use on this host (another program, or a "
                                "point still running); choose another port (" + (
                                    f"{COORDINATOR_ENV[0]}" if who.source == "explicit" else "JAX_COORDINATOR_PORT")
                                + ") or stop what holds it")
    import jax

    if params.get("device") == "cpu":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")  # CPU collectives across processes
    elif "cpu" not in (jax.config.jax_platforms or "cpu").split(","):
        # device.force set JAX_PLATFORMS=cuda (a GPU point fails loudly without one); Keras' multi-process seeding
        # (distribution_lib.initialize_rng) asks for jax.devices("cpu"): keep that platform. Every process still
        # verifies that its tensors land on its GPU (device.verify) before anything is timed.
        platforms = jax.config.jax_platforms + ",cpu"
        jax.config.update("jax_platforms", platforms)
        env["JAX_PLATFORMS"] = plan.launch["jax_platforms"] = platforms
    _device.set_random_seed(params.get("seed", 0))  # Keras' cross-process seeding is then not needed
    timeout = int(_deadline_s())
    t0 = time.perf_counter()
    stuck = None
    if on_stuck is not None:
        import threading

        stuck = threading.Timer(max(1.0, timeout - STUCK_MARGIN_S), on_stuck, args=(
            f"process {who.process_id} of {count} ({who.source}) waited {timeout} s at the coordinator "
            f"{who.coordinator} and not every process came: start all of them with the same grid (a process "
            "whose runner had the point done before, or failed first, never comes); JAX's runtime then ended this "
            "process",))
        stuck.daemon = True
        stuck.start()
    try:  # what keras.distribution.initialize does, with the point's timeouts and no device narrowing of JAX's
        jax.distributed.initialize(who.coordinator, count, who.process_id, local_device_ids=[],
                                   initialization_timeout=timeout, heartbeat_timeout_seconds=HEARTBEAT_S,
                                   shutdown_timeout_seconds=SHUTDOWN_S)
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise DistributionError(
            f"process {who.process_id} of {count} ({who.source}) did not meet the others at {who.coordinator} within "
            f"{time.perf_counter() - t0:.0f} s (limit {timeout} s): {first}. Check that every process was started "
            "(with the same grid), that process 0's host is reachable at that address and its port free") from None
    finally:
        if stuck is not None:
            stuck.cancel()
    plan.launch["met_s"] = round(time.perf_counter() - t0, 3)
    agree(params, plan)
    return plan


def agree(params: dict, plan: Plan) -> None:
    """Every process of the point runs the same point: each puts its parameters in the runtime's key-value store
    and reads the others'; a difference is an error naming the keys (on every process)."""
    from jax._src import distributed

    client = distributed.global_state.client
    mine = _launch.point_key(params)
    client.key_value_set(f"cgb/point/{plan.process_id}", json.dumps(mine, sort_keys=True, default=str))
    mine = json.loads(json.dumps(mine, sort_keys=True, default=str))
    others = [json.loads(client.blocking_key_value_get(f"cgb/point/{i}", AGREE_S * 1000)) for i in range(plan.hosts)]
    # every process has read every other's before any leaves (a process that left first would end the others)
    client.wait_at_barrier("cgb/agree", AGREE_S * 1000)
    for i, theirs in enumerate(others):
        if theirs != mine:
            diff = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            said = ", ".join(f"{k}: {theirs.get(k)!r} there, {mine.get(k)!r} here" for k in diff[:6])
            raise DistributionError(f"process {i} runs another point than process {plan.process_id} ({said}): start "
                                    "every process with the same grid file and the same repeat (--rerun on all, or "
                                    "on none)")


def process_devices(plan: Plan) -> dict:
    """The devices this process uses, as the record keeps them: CUDA_VISIBLE_DEVICES, JAX's local devices and, on
    GPUs, each one's NVML index, name, UUID and PCI bus (which physical GPU it was)."""
    out = {"cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "local_devices": []}
    try:
        import jax

        local = jax.local_devices()
        out["local_devices"] = [{"device": f"{d.platform}:{d.id}", "kind": getattr(d, "device_kind", ""),
                                 "local_hardware_id": getattr(d, "local_hardware_id", None)} for d in local]
        if local and local[0].platform == "gpu":
            from helpers.measure.sampler import _nvml, visible_gpu_indices

            nv = _nvml()
            idx = visible_gpu_indices(nv) if nv is not None else []
            for d in out["local_devices"]:
                hw = d.get("local_hardware_id")
                if hw is not None and hw < len(idx):
                    h = nv.nvmlDeviceGetHandleByIndex(idx[hw])
                    d.update(nvml_index=idx[hw], name=_text(nv.nvmlDeviceGetName(h)),
                             uuid=_text(nv.nvmlDeviceGetUUID(h)), pci_bus_id=_text(nv.nvmlDeviceGetPciInfo(h).busId))
    except Exception as exc:  # what could not be read is said, never fails the point
        out["error"] = f"{type(exc).__name__}: {exc}"[:300]
    return out


def _text(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def use_devices(plan: Plan, params: dict) -> tuple[dict, str | None]:
    """Set ``DataParallel`` over the first ``gpus`` devices of every process (before the model is built).

    Returns ``(record fields, skip reason)``: the reason when this host has fewer devices than ``gpus``.
    """
    bs = int(params["batch_size"])
    fields = {"gpus": plan.gpus, "hosts": int(params.get("hosts", 1) or 1), "process_count": plan.hosts,
              "per_device_batch_size": bs, "per_process_batch_size": per_process_batch(params),
              "global_batch_size": global_batch(params), "distribution": None, "mesh_devices": None,
              "process_id": plan.process_id}
    if plan.hosts > 1:  # who started the processes; which devices this one uses (its GPUs: which physical ones)
        fields.update(launch=plan.launch, process_devices=process_devices(plan))
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

    from helpers.record.store import _clean

    blob = np.frombuffer(json.dumps(_clean(record), sort_keys=True, default=str).encode(), dtype=np.uint8)
    sizes = np.asarray(multihost_utils.process_allgather(np.asarray([blob.size], dtype=np.int32))).reshape(-1)
    padded = np.zeros(int(sizes.max()), dtype=np.uint8)
    padded[:blob.size] = blob
    allb = np.asarray(multihost_utils.process_allgather(padded)).reshape(jax.process_count(), -1)
    return [json.loads(bytes(allb[i, :int(sizes[i])]).decode()) for i in range(jax.process_count())]


def agree_stop(done: bool) -> bool:
    """Whether training stops after this epoch, the same answer in every process: once any process's window (or
    deadline) is met, all stop (every process must call it after each epoch: one all-gather of a flag, between
    epochs, outside the timed parts)."""
    import numpy as np
    from jax.experimental import multihost_utils

    flags = multihost_utils.process_allgather(np.asarray([1 if done else 0], dtype=np.int32))
    return bool(np.asarray(flags).max())


def leave() -> None:
    """Leave JAX's distributed runtime, every process at the same point of the notebook (``Point.finish``, after
    ``gather``): JAX's shutdown waits until every process has called it (``SHUTDOWN_S``), so the coordinator, which
    process 0 hosts, stops only once no other process polls it. Left to the end of the kernel instead, a kernel
    stopped by its runner (a few seconds' grace) takes the runtime down while another process still runs, and
    JAX aborts that one (SIGABRT: the point fails though every figure was gathered)."""
    import jax

    jax.distributed.shutdown()


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
            "n_train_process": r.get("n_train_process"), "median_epoch_s": r.get("median_epoch_s"),
            "epochs_run": r.get("epochs_run"), "window_stopped_by": r.get("window_stopped_by"),
            "samples_per_s_process": r.get("samples_per_s_process"), "first_epoch_s": r.get("first_epoch_s"),
            "energy_j_per_epoch": r.get("energy_j_per_epoch"),
            "final_loss": ((r.get("history") or {}).get("loss") or [None])[-1],
            "devices": r.get("process_devices"), "gpu_indices_used": r.get("gpu_indices_used"),
            "device_detail": r.get("device_detail"), "status": r.get("status"), "reason": r.get("reason")}


def strip_figures(rec: dict) -> dict:
    """``rec`` without the figures of a run that did not finish (a failed point claims none)."""
    for k in FIGURES:
        if k in rec:
            rec[k] = [] if k == "epoch_s" else None
    rec.pop("utilisation_timeline", None)
    return rec
