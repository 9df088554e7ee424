"""The point's processes as one group, over JAX's distributed runtime: they meet (``initialize``), check they run the
same point (``agree``), stop training after the same epoch (``agree_stop``) and leave together (``leave``).

The processes (``hosts`` x ``processes``: ``helpers.point.distribution_params``) are started by a launcher
(``srun``, ``mpirun``), by the runner (``helpers.runner.processes``), or with Keras' own variables set on each
(``helpers.point.launcher`` reads them)::

    KERAS_DISTRIBUTION_JOB_ADDRESSES=host0:PORT   # the coordinator, process 0's host (or JAX_COORDINATOR_ADDRESS)
    KERAS_DISTRIBUTION_PROCESS_ID=i               # this process, 0 .. hosts-1 (JAX_PROCESS_ID also read)
    KERAS_DISTRIBUTION_NUM_PROCESSES=H            # optional; must equal the point's `hosts`

The runtime is JAX's (``jax.distributed.initialize``, what ``keras.distribution.initialize`` calls) with the
point's timeouts: connecting is bounded by the point's deadline, a process that stops sending heartbeats is
declared dead after ``HEARTBEAT_S``. Right after it, the processes check they run the same point
(``agree``). The random seed is set before it, so Keras' cross-process seeding (a computation on JAX's CPU
devices) is not needed; GPU points keep JAX's CPU platform visible anyway (``JAX_PLATFORMS=cuda,cpu``).
On CPUs the processes talk through JAX's gloo collectives (``jax_cpu_collectives_implementation``).

    plan = initialize(params)     # before any JAX computation: the multi-host runtime, if hosts > 1
    timer = make_epoch_timer(..., agree=agree_stop)   # each epoch: stop when any process is done
    leave()                       # Point.finish, after the records are gathered
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field

from helpers.measure.timing import deadline
from helpers.point import device as _device
from helpers.point import launcher as _launch
from helpers.point.distribution_params import devices_of
from helpers.point.launcher import COORDINATOR_ENV, DistributionError

INIT_TIMEOUT_S = 300  # the processes meet within this (JAX's default), or the point's deadline if sooner
HEARTBEAT_S = 60  # a process silent this long is dead: the runtime stops the others (JAX's default: 100)
SHUTDOWN_S = 60  # a process waits this long at exit for the others (JAX's default: 300)
STUCK_MARGIN_S = 2  # the record of a process left waiting is written this long before JAX's limit
AGREE_S = 120  # the processes' parameters exchanged within this after they met


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
    _device.set_random_seed(params["seed"])  # Keras' cross-process seeding is then not needed
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
    ``process_records.gather``): JAX's shutdown waits until every process has called it (``SHUTDOWN_S``), so the
    coordinator, which process 0 hosts, stops only once no other process polls it. Left to the end of the kernel
    instead, a kernel stopped by its runner (a few seconds' grace) takes the runtime down while another process still
    runs, and JAX aborts that one (SIGABRT: the point fails though every figure was gathered)."""
    import jax

    jax.distributed.shutdown()
