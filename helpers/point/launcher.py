"""Who started this process of a multi-process point: its id, the process count and the coordinator.

A point run as several processes (``hosts: H``, or ``processes: N`` that the runner starts itself) reads
them from the environment its launcher set, first match wins (``detect``)::

    explicit   KERAS_DISTRIBUTION_JOB_ADDRESSES=host:port  KERAS_DISTRIBUTION_PROCESS_ID=i
               [KERAS_DISTRIBUTION_NUM_PROCESSES=n]         (Keras' own; JAX_COORDINATOR_ADDRESS / JAX_PROCESS_ID
               also read). The runner's ``processes: N`` sets these for each process it starts (local_launch).
    mpirun     Open MPI: OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK; the coordinator is mpirun's host, read
               from OMPI_MCA_orte_hnp_uri as JAX's cluster detection (OmpiCluster) reads it
    srun       Slurm: SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID; the coordinator is the step's first node
               (SLURM_STEP_NODELIST), as JAX's SlurmCluster reads it

Nothing is set by hand under mpirun or srun. The coordinator's port under a launcher: ``JAX_COORDINATOR_PORT``
when set, else one of 61440..65535 drawn from the job id and the point (``point_key``): every process of one
point computes the same, and two points of one job (a grid of several) do not meet at one port.

Under a launcher that starts one process per GPU on a host of several (mpirun -np 8 on 8 GPUs, no
CUDA_VISIBLE_DEVICES per rank), process ``local_rank`` takes GPUs ``local_rank*gpus ..`` (``gpu_slice``).

This module imports no framework; ``helpers.point.process_group`` calls it before JAX starts.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
from dataclasses import dataclass

COORDINATOR_ENV = ("KERAS_DISTRIBUTION_JOB_ADDRESSES", "JAX_COORDINATOR_ADDRESS")
PROCESS_ID_ENV = ("KERAS_DISTRIBUTION_PROCESS_ID", "JAX_PROCESS_ID")
NUM_PROCESSES_ENV = "KERAS_DISTRIBUTION_NUM_PROCESSES"
LOCAL_ENV = "CGB_LAUNCH"  # set by the runner for the processes it starts itself (processes: N): "local"
OMPI = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE")
SLURM = ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE")
PORT_BASE, PORT_SPAN = 61440, 4096  # JAX's own range for a launcher's coordinator port


class DistributionError(RuntimeError):
    """The multi-process environment is incomplete or inconsistent (the message names what to fix)."""


@dataclass
class Launch:
    source: str  # explicit | local | mpirun | srun
    coordinator: str
    count: int
    process_id: int
    local_rank: int | None = None  # this process's rank on its host (launchers)

    def as_record(self) -> dict:
        return {"launcher": self.source, "coordinator": self.coordinator, "count": self.count,
                "process_id": self.process_id, "local_rank": self.local_rank}


def launcher_rank(environ=None) -> int | None:
    """This process's id when a launcher (or the explicit variables) says one, else None (cheap, no checks)."""
    env = os.environ if environ is None else environ
    for k in (*PROCESS_ID_ENV, OMPI[0], SLURM[0]):
        if (env.get(k) or "").strip().isdigit():
            return int(env[k])
    return None


def lock_name(environ=None) -> str:
    """The runner's lock file in the outputs folder: one run at a time, except that the processes of one launch
    (mpirun -np 2 ./run_all.sh on one host) are one run: every process but 0 has its own."""
    rank = launcher_rank(environ)
    return ".run.lock" if not rank else f".run.lock.p{rank}"


def claim_suffix(environ=None) -> str:
    """What a runner adds to a run's claim (``fleet``): nothing, or ``.p<rank>`` for process rank > 0 of a launch."""
    rank = launcher_rank(environ)
    return f".p{rank}" if rank else ""


def point_key(params: dict) -> dict:
    """What every process of one point must agree on: its parameters (but where its record goes) and its repeat."""
    out = {k: v for k, v in params.items() if k not in ("output_dir", "point_id")}
    m = re.search(r"-r(\d+)$", str(params.get("point_id") or ""))
    out["repeat"] = int(m.group(1)) if m else 0
    return out


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _port(job: str, params: dict) -> str:
    return str(PORT_BASE + int(_digest([job, point_key(params)])[:8], 16) % PORT_SPAN)


def detect(count: int, params: dict, environ=None) -> Launch:
    """This process's place in a point of ``count`` processes, from its launcher's environment."""
    env = os.environ if environ is None else environ
    what = f"a point of {count} processes ({_knobs(params)})"
    coord = next((env[k] for k in COORDINATOR_ENV if env.get(k)), None)
    raw = next((env[k] for k in PROCESS_ID_ENV if env.get(k) not in (None, "")), None)
    if coord or raw is not None:
        source = "local" if env.get(LOCAL_ENV) == "local" else "explicit"
        if not coord:
            raise DistributionError(f"{what}: {PROCESS_ID_ENV[0]} is set but no coordinator address: set "
                                    f"{COORDINATOR_ENV[0]}=host:port (process 0's host, a free port) on every process")
        if raw is None or not raw.strip().isdigit() or not 0 <= int(raw) < count:
            raise DistributionError(f"{what}: {PROCESS_ID_ENV[0]} is {raw!r}; set it to this process's id, "
                                    f"0 .. {count - 1}, a different one on every process")
        n = env.get(NUM_PROCESSES_ENV)
        if n and n.strip() != str(count):
            raise DistributionError(f"{what}: {NUM_PROCESSES_ENV}={n}, but the point has {count} processes "
                                    f"({_knobs(params)}): make them agree")
        coordinator = coord.split(",")[0].strip()
        if ":" not in coordinator or not coordinator.rsplit(":", 1)[1].isdigit():
            raise DistributionError(f"{what}: {COORDINATOR_ENV[0]}={coord!r} has no port: write host:port")
        return Launch(source, coordinator, count, int(raw))
    if env.get(OMPI[0]) is not None and env.get(OMPI[1]) is not None:
        source, (rank, size, local) = "mpirun", (env.get(k) for k in OMPI[:3])
        cluster, job = "ompi", (env.get("OMPI_MCA_orte_hnp_uri") or "").split(".", 1)[0]
        if not env.get("OMPI_MCA_orte_hnp_uri"):
            raise DistributionError(f"{what}: started by an MPI without OMPI_MCA_orte_hnp_uri (Open MPI 5 or another "
                                    f"MPI): JAX cannot find the coordinator; set {COORDINATOR_ENV[0]}=host:port "
                                    "(process 0's host) for every process")
    elif all(env.get(k) is not None for k in ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", *SLURM[:3])):
        source, (rank, size, local) = "srun", (env.get(k) for k in SLURM[:3])
        cluster, job = "slurm", f"{env['SLURM_JOB_ID']}.{env.get('SLURM_STEP_ID', '')}"
    else:
        raise DistributionError(
            f"{what}: no coordinator: this process was not started by a launcher (srun or mpirun: SLURM_PROCID, "
            f"OMPI_COMM_WORLD_RANK are unset) and {COORDINATOR_ENV[0]} is unset. Start every process under srun or "
            f"mpirun; or set {COORDINATOR_ENV[0]}=host:port and {PROCESS_ID_ENV[0]}=i on each; or, on one host, let "
            "the runner start them: processes: N, hosts: 1 (docs/multi_gpu.md)")
    if int(size) != count:
        raise DistributionError(f"{what}: {source} started {size} processes: start {count} ({source} "
                                f"{'-np' if source == 'mpirun' else '--ntasks'} {count}), or set the point's hosts "
                                f"to {size}")
    port = env.get("JAX_COORDINATOR_PORT") or _port(job, params)
    host = _ompi_host(env["OMPI_MCA_orte_hnp_uri"]) if cluster == "ompi" else _slurm_first(env["SLURM_STEP_NODELIST"])
    host = f"[{host}]" if ":" in host else host  # an IPv6 address
    return Launch(source, f"{host}:{port}", count, int(rank), int(local) if (local or "").isdigit() else None)


def _ompi_host(uri: str) -> str:
    """mpirun's host from Open MPI's ``OMPI_MCA_orte_hnp_uri`` (``jobid.0;tcp://10.0.0.1,10.1.0.1:34911``), as
    JAX's ``OmpiCluster`` reads it."""
    m = re.search(r"tcp://(.+?)[,:]|tcp6://\[(.+?)[,\]]", uri)
    if m is None:
        raise DistributionError(f"cannot read mpirun's address from OMPI_MCA_orte_hnp_uri={uri!r}: set "
                                f"{COORDINATOR_ENV[0]}=host:port for every process")
    return next(g for g in m.groups() if g is not None)


def _slurm_first(nodes: str) -> str:
    """The first node of a Slurm node list (``node[003-004,007],gpu1`` -> ``node003``), as JAX's ``SlurmCluster``
    reads it."""
    m = re.match(r"([^,\[]+)(?:\[([^,\]-]+))?", nodes.strip())
    if m is None:
        raise DistributionError(f"cannot read the first node of SLURM_STEP_NODELIST={nodes!r}")
    return m.group(1) + (m.group(2) or "")


def _knobs(params: dict) -> str:
    return ", ".join(f"{k}={params.get(k, 1)}" for k in ("hosts", "processes", "gpus"))


def gpu_slice(launch: Launch, gpus: int, environ=None) -> str | None:
    """Under a launcher that gave this process no GPU of its own (CUDA_VISIBLE_DEVICES unset or listing more than
    ``gpus``): the ``gpus`` GPUs of its local rank, as a CUDA_VISIBLE_DEVICES value; None where there is nothing
    to narrow. Raises when the host has too few for its rank."""
    env = os.environ if environ is None else environ
    if launch.local_rank is None or launch.source in ("explicit", "local"):
        return None
    spec = env.get("CUDA_VISIBLE_DEVICES")
    if spec is not None:
        visible = [s.strip() for s in spec.split(",") if s.strip()]
    else:
        from helpers.measure.fingerprint import gpus as _gpus

        visible = [str(i) for i in range(len(_gpus()["gpu_names"]))]
    if len(visible) <= gpus:
        return None
    a = launch.local_rank * gpus
    if a + gpus > len(visible):
        raise DistributionError(f"process {launch.process_id} ({launch.source}, local rank {launch.local_rank}) needs "
                                f"GPUs {a}..{a + gpus - 1} but this host shows {len(visible)}: start fewer processes "
                                "per host or set gpus lower")
    return ",".join(visible[a:a + gpus])


def port_in_use(address: str) -> bool:
    """Whether the coordinator's port is taken on this host (process 0 binds ``[::]:port``, as JAX does)."""
    port = int(address.rsplit(":", 1)[1])
    for family, host in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")):
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((host, port))
            return False
        except OSError as exc:
            if family == socket.AF_INET6 and exc.errno not in (98,):  # no IPv6 here: try IPv4
                continue
            return True
    return False


def free_port() -> int:
    """A port free on 127.0.0.1 for a coordinator, below the kernel's ephemeral range (``ip_local_port_range``, where
    the system picks a client's source port): the other processes connect to it before it listens, and a client
    connecting to a free port of that range on its own host can be given that very port as its source (a TCP
    self-connect), after which the coordinator finds its port taken. Outside the range no client is given it."""
    import random

    low = _ephemeral_low()
    for _ in range(200):
        port = random.randint(10_000, max(10_001, low - 1))
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # every try taken: the system's choice
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768  # Linux's default
