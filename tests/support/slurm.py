"""A private single-node Slurm for the tests that submit to one (``sbatch`` in test_cluster.py, ``srun`` in
test_launch.py): slurmctld, slurmd and munged started as root on private ports and folders, with their own munge
key. ``single_node()`` is the body of the fixture ``slurm`` (tests/conftest.py): it yields the clients'
environment (``SLURM_CONF`` set) and the daemons' folder (their logs), and stops them after.

Skipped, with the daemons' own error, where Slurm is not installed (scripts/ensure_slurm.sh installs Debian's
``slurm-wlm`` and ``munge``), the tests do not run as root, or slurmd cannot run here. The tests that use it
carry ``xdist_group(GROUP)``: one such Slurm at a time.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

GROUP = "slurm"  # the xdist group of the tests that start one


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, n: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return f"({path.name}: none)"


SLURM_CONF = """ClusterName=cgbtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d}/munge.sock
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
MinJobAge=600
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=cgb Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def single_node():
    """A private single-node Slurm (its own ports, folders and munge key): yields ``(environment, folder)``."""
    need = ("slurmctld", "slurmd", "sbatch", "srun", "squeue", "scontrol", "munged")
    missing = [c for c in need if not shutil.which(c)]
    if missing:
        pytest.skip(f"Slurm not installed (missing {', '.join(missing)}): scripts/ensure_slurm.sh installs Debian's "
                    "slurm-wlm and munge as root")
    if os.geteuid() != 0:
        pytest.skip("the single-node Slurm of this test runs its daemons as root")
    d = Path(tempfile.mkdtemp(prefix="cgb-slurm-"))  # short: munge's socket path must fit in 108 bytes
    for sub in ("state", "spool"):
        (d / sub).mkdir()
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    host = socket.gethostname().split(".")[0]
    conf = d / "slurm.conf"
    conf.write_text(SLURM_CONF.format(host=host, d=d, ctld_port=_free_port(), d_port=_free_port(),
                                      cpus=os.cpu_count() or 1))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs = []

    def start(args, log):
        f = (d / log).open("w")
        procs.append(subprocess.Popen(args, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True))

    try:
        start(["munged", "-F", "-f", f"--key-file={key}", f"--socket={d}/munge.sock", f"--pid-file={d}/munged.pid",
               f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed"], "munged.out")
        for _ in range(50):
            if (d / "munge.sock").exists():
                break
            time.sleep(0.1)
        start(["slurmctld", "-D", "-f", str(conf)], "slurmctld.out")
        start(["slurmd", "-D", "-f", str(conf)], "slurmd.out")
        state, t0 = "", time.time()
        while time.time() - t0 < 60:
            dead = [p.args[0] for p in procs if p.poll() is not None]
            if dead:
                break
            q = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=env, capture_output=True, text=True)
            state = (q.stdout + q.stderr).strip()
            if q.returncode == 0 and state.startswith("idle"):
                break
            time.sleep(1)
        else:
            dead = []
        if dead or not state.startswith("idle"):
            why = "; ".join(f"{n}: {tail(d / n, 6)}" for n in ("munged.out", "slurmctld.out", "slurmctld.log",
                                                                 "slurmd.out", "slurmd.log"))
            pytest.skip(f"slurmd cannot run here ({', '.join(dead) or 'node ' + (state or 'not up')}): {why}")
        yield env, d
    finally:
        subprocess.run(["scancel", "--user=root"], env=env, capture_output=True)
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(d, ignore_errors=True)
