"""The devices one process of a point trains on, and its share of the data (a JAX point past one device).

``use_devices`` sets ``keras.distribution.DataParallel`` over the first ``gpus`` devices of every process (before
the model is built); on one host Keras shards the batches itself, on several each process feeds its own part of the
numpy data (``shard``, ``auto_shard_dataset=False``). The record says which devices (``process_devices``: which
physical GPU) and their peak memory (``device_memory``).

    fields, why = use_devices(plan, params)   # the mesh: DataParallel over the devices; record fields
    x, y = shard(x, y, plan)                  # this process's part of the numpy data
"""

from __future__ import annotations

import os

from helpers.point.distribution_params import global_batch, per_process_batch
from helpers.point.process_group import Plan

DISTRIBUTION = "keras.distribution.DataParallel"


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
            from helpers.measure.nvml import load_nvml, visible_gpu_indices

            nv = load_nvml()
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
    fields = {"gpus": plan.gpus, "hosts": int(params["hosts"] or 1), "process_count": plan.hosts,
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
