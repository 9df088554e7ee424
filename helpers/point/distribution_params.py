"""Past one device, past one host: what a point's ``gpus``, ``hosts`` and ``processes`` ask for, which combinations
run (``check``), and the batch and data sizes they make (no framework import).

A point with ``gpus: N`` trains data-parallel over the first N devices of its host through
``keras.distribution.DataParallel`` (set before the model is built: ``helpers.point.mesh``); the global batch is
``batch_size`` x N x ``hosts``, and samples/s counts global samples. A point with ``hosts: H`` is run
as H processes, one per host, which meet through JAX's distributed runtime (``helpers.point.process_group``);
each process feeds its own shard of the numpy data (``auto_shard_dataset=False``) and writes
its own record; process 0 gathers them (through the runtime itself, no shared folder needed) and
writes one merged record (``helpers.point.process_records``). No collective of ours: start the same grid on every
process under a launcher (``srun``, ``mpirun``), or with Keras' own variables set on each (``helpers.point.launcher``
reads them).

A point with ``processes: N`` (and ``hosts: 1``) is N processes on this host that the runner starts itself
(``helpers.runner.processes``), each with its own ``gpus`` GPU(s): the same runtime, the same merged record. A
point's processes are ``hosts`` x ``processes`` (``Plan.hosts`` counts them).

    check(params)                 # every rule of keys against each other (grid validation, the notebook's first cell)
    data_params(params)           # what the workload's loader gets: this process's batch, sizes the devices split
    global_batch(params)          # batch_size x gpus x the point's processes

Test-only route: ``gpus`` > 1 needs ``device: gpu``, except when the environment
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

import os

from helpers.params import COMMON_DEFAULTS, PLACEMENT_BACKENDS, ParamError

HOST_DEVICES_ENV = "CGB_HOST_DEVICES"  # test only: gpus > 1 over JAX host devices on a CPU point
# What Keras' torch backend does with a model wrapped in torch's DistributedDataParallel (docs/multi_gpu.md)
# (probed by hand, no script kept: 2 CPU processes, gloo, Keras 3.15, torch 2.13)
TORCH_DDP = ("torch's own DistributedDataParallel is not wired in: Keras' fit cannot be called on it "
             "(\"AttributeError: 'DistributedDataParallel' object has no attribute 'fit'\"), fit on its .module "
             "trains each process alone (no gradient is averaged: the processes' weights part), and only a Keras "
             "model around keras.layers.TorchModuleWrapper(DDP(model)) trains in step: docs/multi_gpu.md")


def host_devices_allowed(environ=None) -> bool:
    env = os.environ if environ is None else environ
    return env.get(HOST_DEVICES_ENV) == "1"


def devices_of(params: dict) -> tuple[int, int]:
    """``(gpus, processes in all)`` of a point's parameters (a record's, which may predate a key: its default):
    gpus per process, hosts x processes."""
    p = {**COMMON_DEFAULTS, **{k: v for k, v in params.items() if v is not None}}
    return int(p["gpus"]), int(p["hosts"]) * int(p["processes"])


# Keras' own words when it refuses steps_per_execution > 1 with the torch backend (keras/src/backend/torch/trainer.py)
TORCH_STEPS_PER_EXECUTION = "`steps_per_execution` must be 1 with the PyTorch backend"


def check(params: dict, where: str = "parameters", host_devices: bool = False) -> None:
    """The one check of keys against each other (a grid's point, a notebook's parameters): raise ``ParamError`` for a
    combination that cannot run. Where Keras would refuse the pair only once the model is compiled:
    ``steps_per_execution`` > 1 with torch; ``data_placement`` 'device' or 'staged' off JAX and torch, 'device' with
    several hosts or processes. The devices: ``gpus``/``hosts``/``processes`` > 1 off JAX, ``gpus`` > 1 on a CPU
    point (unless ``host_devices``, the test-only route), ``processes`` > 1 with ``hosts`` > 1 (the runner starts
    processes on its own host only)."""
    params = {**COMMON_DEFAULTS, **params}  # a grid's block may leave a knob to its default
    _check_keys(params, where)
    gpus, count = devices_of(params)
    if gpus == 1 and count == 1:
        return
    backend, dev = params.get("backend"), params.get("device")
    hosts, procs = int(params["hosts"] or 1), int(params["processes"] or 1)
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


def _check_keys(params: dict, where: str) -> None:
    spe, backend, how = params["steps_per_execution"], params.get("backend"), params["data_placement"]
    if backend == "torch" and isinstance(spe, int) and spe > 1:
        raise ParamError(f"{where}: key 'steps_per_execution' has value {spe!r} with backend 'torch'; allowed: 1 "
                         f"(Keras: \"{TORCH_STEPS_PER_EXECUTION}\")")
    if how in ("device", "staged") and backend not in PLACEMENT_BACKENDS:
        raise ParamError(f"{where}: key 'data_placement' has value {how!r} with backend {backend!r}; allowed "
                         f"with backend {' or '.join(map(repr, PLACEMENT_BACKENDS))} (with TensorFlow, Keras "
                         "feeds fit through a tf.data pipeline on the host)")
    for key in ("hosts", "processes") if how == "device" else ():
        n = params[key]
        if isinstance(n, int) and n > 1:
            raise ParamError(f"{where}: key 'data_placement' has value 'device' with {key}={n}; allowed with "
                             f"{key}: 1 (several processes feed each its shard of numpy arrays: "
                             "data_placement 'staged' puts each batch of it on the devices ahead of the step)")
