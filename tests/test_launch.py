"""Several processes of one point: who started them (Keras' variables, mpirun, srun), the runner's own
``processes: N``, and what goes wrong (no coordinator, an id out of range, a port in use, processes that disagree
on the point, one that dies mid-run): each a clear error or a failed record without figures, the others stopped.

The end-to-end runs go through the runner (``python -m helpers.runner``) on this machine's CPU, mlp_mnist on JAX:
a 2-process point under a real ``mpirun`` (Open MPI, installed by run_tests.sh through scripts/ensure_openmpi.sh),
under a real ``srun`` (the single-node Slurm of support/slurm.py; scripts/ensure_slurm.sh), the same point with
Keras' variables set by hand on two runners, ``processes: 2`` started by the runner, and one of those two processes
killed mid-run. The mpirun, srun and by-hand commands are docs/multi_gpu.md's own, read from the page and run word
for word (support/doc_commands.py: the grid file and the interpreter filled in)."""

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support import FAST_XLA, XLA_CACHE, doc_commands, record_audit
from support import slurm as slurm_support

from helpers import grid
from helpers.paths import PROJECT_ROOT
from helpers.point import distribution_params, process_group, process_records
from helpers.point import launcher as launch
from helpers.runner import processes as local_launch

JAX = __import__("helpers.point.device", fromlist=["x"]).backend_installed("jax")

# ---------------------------------------------------------------- validation, before anything runs


def _grid(tmp_path, text: str):
    g = tmp_path / "g.yaml"
    g.write_text(textwrap.dedent(text))
    return grid.expand_all([g])


@pytest.mark.parametrize("block, needle", [
    ("backend: jax\n    device: gpu\n    processes: 2\n    hosts: 2", "the runner starts `processes` on its own host"),
    ("backend: torch\n    device: gpu\n    processes: 2", "'DistributedDataParallel' object has no attribute 'fit'"),
    ("backend: tensorflow\n    device: cpu\n    processes: 2", "backend 'tensorflow': not supported"),
    ("backend: jax\n    device: cpu\n    processes: 2\n    data_placement: device", "with processes=2"),
    ("backend: jax\n    device: cpu\n    processes: 0", "key 'processes' has value 0"),
])
def test_grid_refuses_process_combinations_that_cannot_run(tmp_path, block, needle):
    with pytest.raises(grid.GridError) as err:
        _grid(tmp_path, f"points:\n  - workload: mlp_mnist\n    {block}\n")
    assert needle in str(err.value) and "points[1]" in str(err.value)


def test_processes_is_a_later_knob_and_counts_in_the_global_batch(tmp_path):
    from helpers.params import LATER_DEFAULTS
    from helpers.record.ids import point_id

    pts = _grid(tmp_path, "points:\n  - workload: mlp_mnist\n    backend: jax\n    device: cpu\n"
                          "    processes: [1, 2]\n")
    assert LATER_DEFAULTS["processes"] == 1 and [p["processes"] for p in pts] == [1, 2]
    one = {k: v for k, v in pts[0].items() if k not in ("timeout_s", "repeats", "_grid")}
    assert point_id(one, "m") == point_id({k: v for k, v in one.items() if k != "processes"}, "m")
    assert distribution_params.devices_of({"gpus": 2, "processes": 3}) == (2, 3)
    assert distribution_params.global_batch({"batch_size": 32, "gpus": 2, "processes": 3}) == 192


# ---------------------------------------------------------------- who started this process


def test_launchers_are_read_from_their_own_variables():
    prm = {"hosts": 2, "workload": "mlp_mnist", "point_id": "abc-r1"}
    ex = launch.detect(2, prm, {"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234,10.0.0.2:1",
                                "KERAS_DISTRIBUTION_PROCESS_ID": "1"})
    assert (ex.source, ex.coordinator, ex.process_id, ex.count) == ("explicit", "10.0.0.1:1234", 1, 2)
    mpi = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "1",
           "OMPI_MCA_orte_hnp_uri": "1531576320.0;tcp://10.96.0.1,10.148.0.1:34911"}
    a = launch.detect(2, prm, mpi)
    assert (a.source, a.process_id, a.local_rank) == ("mpirun", 1, 1) and a.coordinator.startswith("10.96.0.1:")
    port = int(a.coordinator.rsplit(":", 1)[1])
    assert launch.PORT_BASE <= port < launch.PORT_BASE + launch.PORT_SPAN
    assert launch.detect(2, {**prm, "n_train": 5}, mpi).coordinator != a.coordinator  # another point, another port
    assert launch.detect(2, prm, {**mpi, "JAX_COORDINATOR_PORT": "5555"}).coordinator == "10.96.0.1:5555"
    slurm = {"SLURM_JOB_ID": "77", "SLURM_STEP_NODELIST": "node[003-004]", "SLURM_PROCID": "0", "SLURM_NTASKS": "2",
             "SLURM_LOCALID": "0"}
    s = launch.detect(2, prm, slurm)
    assert (s.source, s.process_id) == ("srun", 0) and s.coordinator.startswith("node003:")
    # the runner's lock and claim: every process of a launch is one run, each with its own part
    assert [launch.lock_name(e) for e in ({}, mpi, slurm)] == [".run.lock", ".run.lock.p1", ".run.lock"]
    assert launch.claim_suffix(mpi) == ".p1" and launch.claim_suffix({}) == ""
    assert launch.point_key(prm)["repeat"] == 1 and "point_id" not in launch.point_key(prm)


@pytest.mark.parametrize("env, needle", [
    ({}, "no coordinator: this process was not started by a launcher"),
    ({"KERAS_DISTRIBUTION_PROCESS_ID": "0"}, "no coordinator address"),
    ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "h:1", "KERAS_DISTRIBUTION_PROCESS_ID": "2"}, "0 .. 1"),
    ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "h", "KERAS_DISTRIBUTION_PROCESS_ID": "0"}, "has no port"),
    ({"KERAS_DISTRIBUTION_JOB_ADDRESSES": "h:1", "KERAS_DISTRIBUTION_PROCESS_ID": "0",
      "KERAS_DISTRIBUTION_NUM_PROCESSES": "3"}, "make them agree"),
    ({"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "3", "OMPI_MCA_orte_hnp_uri": "1.0;tcp://h:1"},
     "mpirun started 3 processes: start 2 (mpirun -np 2)"),
])
def test_bad_launch_environments_name_what_to_fix(env, needle):
    with pytest.raises(launch.DistributionError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        process_group.initialize({"hosts": 2, "device": "cpu", "backend": "jax"}, environ=env)


def test_a_port_in_use_is_refused_before_the_runtime_starts():
    with socket.socket() as s:
        s.bind(("0.0.0.0", 0))
        s.listen()
        port = s.getsockname()[1]
        assert launch.port_in_use(f"127.0.0.1:{port}")
        env = {"KERAS_DISTRIBUTION_JOB_ADDRESSES": f"127.0.0.1:{port}", "KERAS_DISTRIBUTION_PROCESS_ID": "0"}
        with pytest.raises(launch.DistributionError, match=f"port {port} is in use on this host"):
            process_group.initialize({"processes": 2, "device": "cpu", "backend": "jax"}, environ=env)
    assert not launch.port_in_use(f"127.0.0.1:{launch.free_port()}")


def test_each_process_gets_its_own_gpus():
    p = {"device": "gpu", "processes": 2, "gpus": 2}
    assert local_launch.gpu_slices(p, {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}) == (["4,5", "6,7"], None)
    slices, why = local_launch.gpu_slices(p, {"CUDA_VISIBLE_DEVICES": "0,1"})
    assert not slices and "needs 4 GPUs, one set per process, but this host shows 2" in why
    assert local_launch.gpu_slices({**p, "device": "cpu"}, {}) == ([None, None], None)
    # one process asking for more GPUs than the host shows (the 8-GPU lines of params/multi_gpu.yaml on 4): the
    # runner skips it without a kernel, and says so
    slices, why = local_launch.gpu_slices({"device": "gpu", "gpus": 8}, {"CUDA_VISIBLE_DEVICES": "0,1,2,3"})
    assert not slices and why == "gpus=8 needs 8 GPUs but this host shows 4 (CUDA_VISIBLE_DEVICES=0,1,2,3): lower gpus"
    four = {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    assert local_launch.gpu_slices({"device": "gpu", "gpus": 4}, four) == (["0,1,2,3"], None)
    mpi = launch.Launch("mpirun", "h:1", 4, 3, local_rank=1)
    assert launch.gpu_slice(mpi, 1, {"CUDA_VISIBLE_DEVICES": "0,1"}) == "1"
    assert launch.gpu_slice(mpi, 1, {"CUDA_VISIBLE_DEVICES": "3"}) is None  # the launcher gave it its own
    with pytest.raises(launch.DistributionError, match="needs GPUs 2..3"):
        launch.gpu_slice(mpi, 2, {"CUDA_VISIBLE_DEVICES": "0,1,2"})


def test_a_merged_record_of_a_process_that_failed_claims_no_figure():
    ok = {"process_id": 0, "status": "ok", "epoch_s": [1.0, 1.0], "n_train_process": 5, "samples_per_s": 9.0,
          "median_epoch_s": 1.0, "fingerprint": {"host": "a"}, "process_devices": {"cuda_visible_devices": "0"}}
    bad = {"process_id": 1, "status": "failed", "reason": "boom", "epoch_s": [], "fingerprint": {"host": "a"}}
    m = process_records.merge([ok, bad])
    assert m["status"] == "failed" and "process 1: boom" in m["reason"]
    assert m["samples_per_s"] is None and m["epoch_s"] == [] and m["median_epoch_s"] is None
    assert m["processes"][0]["devices"] == {"cuda_visible_devices": "0"}


# ---------------------------------------------------------------- through the runner, on this CPU

POINT = {"workload": "mlp_mnist", "backend": "jax", "device": "cpu", "batch_size": 32, "n_train": 1024, "epochs": 3,
         "min_steady_s": 0.5, "data_source": "synthetic"}


def _write_grid(path: Path, timeout_s: int = 300, **extra) -> Path:
    import yaml

    path.write_text(yaml.safe_dump({"timeout_s": timeout_s, "points": [{**POINT, **extra}]}))
    return path


def _env(outputs: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "SLURM_", "KERAS_DISTRIBUTION",
                                                                     "JAX_COORDINATOR", "JAX_PROCESS"))}
    # the points check behaviour, not speed: XLA's cheapest code generation, kept through the kernel's clean-up, and
    # the suite's compilation cache
    return {**env, "CGB_OUTPUTS": str(outputs), "PYTHONUNBUFFERED": "1", **FAST_XLA, **XLA_CACHE,
            "CGB_KEEP_ENV": "XLA_FLAGS", **extra}


def _runner(args, env, log: Path, timeout=600):
    with open(log, "w") as out:
        proc = subprocess.run(args, cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
    return proc.returncode, log.read_text()


def _point_records(outputs: Path) -> list[dict]:
    """The records the report reads (not the per-process ones under .processes)."""
    files = sorted(glob.glob(str(outputs / "runs" / "*" / "records" / "*.json")))
    return [json.loads(Path(f).read_text()) for f in files]


def _assert_merged_from_both(outputs: Path, launcher: str):
    recs = _point_records(outputs)
    merged = [r for r in recs if r.get("merged_from")]
    assert len(merged) == 1, [(r["status"], r.get("reason")) for r in recs]
    m = merged[0]
    assert m["status"] == "ok" and m["merged_from"] == 2 and m["process_count"] == 2
    assert m["launch"]["launcher"] == launcher
    assert m["n_train"] == 1024 and m["samples_per_s"] == pytest.approx(1024 / m["median_epoch_s"])
    assert m["global_batch_size"] == 64 and [d["process"] for d in m["mesh_detail"]] == [0, 1]
    procs = m["processes"]
    assert [p["process_id"] for p in procs] == [0, 1] and all(p["status"] == "ok" for p in procs)
    assert all(p["n_train_process"] == 512 and p["median_epoch_s"] > 0 for p in procs)  # both processes' figures
    assert all(p["devices"]["local_devices"][0]["kind"] == "cpu" for p in procs)  # which device each one used
    assert procs[0]["final_loss"] == procs[1]["final_loss"]  # one model, trained in step
    # the processes stop after the same epoch (process_group.agree_stop): one that trained on would wait in a
    # collective for ever
    assert procs[0]["epochs_run"] == procs[1]["epochs_run"] >= 3  # the point's `epochs` at least
    # every other record of the point is a pointer of a process other than 0, never a second set of figures
    assert all(r.get("merged_from") or (r["status"] == "skipped" and r["samples_per_s"] is None) for r in recs)
    return m


@pytest.mark.skipif(not JAX, reason="JAX not installed")
def test_two_processes_under_a_real_mpirun(tmp_path):
    """docs/multi_gpu.md's `mpirun -np 2 ... python -m helpers.runner GRID.yaml` (hosts: 2), word for word: each
    rank a runner, their id, count and coordinator from Open MPI's variables as JAX's cluster detection reads them;
    one merged record. Root and more ranks than cores are allowed through the environment (as a user would)."""
    (line,) = doc_commands.lines("mpirun")
    pre, args = doc_commands.argv(line, _write_grid(tmp_path / "g.yaml", hosts=2))
    assert args[0] == "mpirun" and not pre, line
    path = os.environ["PATH"]
    if os.environ.get("CGB_MPIRUN"):  # scripts/ensure_openmpi.sh's: its folder first, the command as the page has it
        path = os.path.dirname(os.environ["CGB_MPIRUN"]) + os.pathsep + path
    if not shutil.which("mpirun", path=path):
        pytest.skip("mpirun not found: run the tests through ./run_tests.sh (it installs Debian's openmpi-bin)")
    env = _env(tmp_path / "out", PATH=path, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    rc, log = _runner(args, env, tmp_path / "mpirun.log")
    assert rc == 0, log[-4000:]
    _assert_merged_from_both(tmp_path / "out", "mpirun")


@pytest.mark.xdist_group(slurm_support.GROUP)  # one single-node Slurm at a time
@pytest.mark.skipif(not JAX, reason="JAX not installed")
def test_two_processes_under_a_real_srun(slurm, tmp_path):
    """docs/multi_gpu.md's `srun --ntasks 2 python -m helpers.runner GRID.yaml` (hosts: 2), word for word, on a
    single-node Slurm started here: each task a runner, their id, count and coordinator (the step's first node)
    from Slurm's variables as JAX's SlurmCluster reads them; one merged record."""
    slurm_env, folder = slurm
    (line,) = doc_commands.lines("srun")
    pre, args = doc_commands.argv(line, _write_grid(tmp_path / "g.yaml", hosts=2))
    assert args[0] == "srun" and not pre, line
    env = _env(tmp_path / "out", SLURM_CONF=slurm_env["SLURM_CONF"])
    rc, log = _runner(args, env, tmp_path / "srun.log")
    assert rc == 0, log[-4000:] + "\n--- slurmd.log\n" + slurm_support.tail(folder / "slurmd.log")
    m = _assert_merged_from_both(tmp_path / "out", "srun")
    node = socket.gethostname().split(".")[0]  # the Slurm node's name (support/slurm.py)
    assert m["launch"]["coordinator"].startswith(f"{node}:") and m["launch"]["local_rank"] == 0, m["launch"]
    assert [p["host"] for p in m["processes"]] == [m["fingerprint"]["host"]] * 2


@pytest.mark.skipif(not JAX, reason="JAX not installed")
def test_two_processes_with_keras_variables_set_by_hand(tmp_path):
    """docs/multi_gpu.md's two commands with Keras' variables set by hand (one on each host, no launcher), word for
    word, both on this host: the page's coordinator host0:PORT is 127.0.0.1 at a free port here."""
    g = _write_grid(tmp_path / "g.yaml", hosts=2)
    port = launch.free_port()
    lines = doc_commands.lines("by-hand")
    assert len(lines) == 2, lines
    procs = []
    for i, line in enumerate(lines):
        pre, args = doc_commands.argv(line, g, **{doc_commands.BY_HAND_COORDINATOR: f"127.0.0.1:{port}"})
        assert pre[launch.COORDINATOR_ENV[0]] == f"127.0.0.1:{port}" and pre[launch.PROCESS_ID_ENV[0]] == str(i), pre
        env = _env(tmp_path / "out", **pre)
        out = open(tmp_path / f"r{i}.log", "w")  # noqa: SIM115 - closed below
        procs.append((subprocess.Popen(args, cwd=PROJECT_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT), out))
    for proc, out in procs:
        try:
            proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
            out.close()
    logs = [(tmp_path / f"r{i}.log").read_text() for i in range(2)]
    assert [p.returncode for p, _ in procs] == [0, 0], logs[0][-3000:] + logs[1][-3000:]
    _assert_merged_from_both(tmp_path / "out", "explicit")


@pytest.mark.skipif(not JAX, reason="JAX not installed")
def test_processes_started_by_the_runner_itself(tmp_path):
    """processes: 2: the runner starts both processes on 127.0.0.1 (a free port) and writes one merged record."""
    audit = tmp_path / "record_writes.jsonl"  # every write into a records folder, by any process (support/record_audit)
    env = {**_env(tmp_path / "out"), **record_audit.environment(audit)}
    rc, log = _runner([sys.executable, "-m", "helpers.runner", str(_write_grid(tmp_path / "g.yaml", processes=2)),
                       "--no-report"], env, tmp_path / "runner.log")
    assert rc == 0, log[-4000:]
    m = _assert_merged_from_both(tmp_path / "out", "local")
    assert m["params"]["processes"] == 2 and m["hosts"] == 1
    assert [p["exit"] for p in m["launch_processes"]] == [None, 0]  # process 0 is the runner's own kernel
    # the point's record and each process's own: each written once, by write_record (the processes' own by their
    # kernels, under .processes; the point's by the runner, once its processes' parts are in)
    seen = record_audit.assert_one_writer_each_record_once(audit, [tmp_path / "out"])
    placed = [w["path"] for w in seen if w["event"] == "os.rename"]
    assert sum("/.processes/" in p for p in placed) == 2 and sum("/.processes/" not in p for p in placed) == 1


@pytest.mark.skipif(not JAX, reason="JAX not installed")
def test_a_process_killed_mid_run_stops_the_other_and_the_point_fails(tmp_path):
    """processes: 2 with a long window; process 1's kernel is killed (SIGKILL, as the OOM killer would) while it
    trains: process 0 is stopped at once (not left in a collective until the timeout) and the point's record is
    failed, names process 1 and the signal, and claims no figure."""
    out = tmp_path / "out"
    g = _write_grid(tmp_path / "g.yaml", timeout_s=600, processes=2, min_steady_s=300)
    log = tmp_path / "runner.log"
    with open(log, "w") as f:
        proc = subprocess.Popen([sys.executable, "-m", "helpers.runner", str(g), "--no-report"], cwd=PROJECT_ROOT,
                                env=_env(out), stdout=f, stderr=subprocess.STDOUT)
    launched = out / "runs" / "*" / "launch"

    def training() -> bool:  # gloo connects both processes at their first step together: they train
        logs = glob.glob(str(launched / "*-p1*log"))
        return any("[Gloo] Rank 1" in Path(f).read_text(errors="replace") for f in logs)

    try:
        t0 = time.time()
        while time.time() - t0 < 300 and not training():
            assert proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.5)
        time.sleep(3)
        pidfile = glob.glob(str(launched / "*-p1.kernel.pid"))
        assert pidfile and training(), log.read_text()[-3000:]
        os.kill(int(Path(pidfile[0]).read_text()), signal.SIGKILL)
        killed = time.time()
        proc.wait(timeout=120)
        stopped_in = time.time() - killed
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1 and stopped_in < 60, (stopped_in, log.read_text()[-3000:])
    (rec,) = _point_records(out)
    assert rec["status"] == "failed" and rec["samples_per_s"] is None and rec["epoch_s"] == []
    assert rec["reason"].startswith("process 1 of 2 failed") and "SIGKILL" in rec["reason"], rec["reason"]
    assert "the other processes were stopped" in rec["reason"]


_AGREE = """
import os, sys, time
from helpers.point import process_group
from helpers.point.launcher import DistributionError
import keras  # noqa: E402
prm = {"workload": "mlp_mnist", "backend": "jax", "device": "cpu", "hosts": 2, "seed": 0, "n_train": N}
try:
    process_group.initialize(prm)
except DistributionError as exc:
    print("ERROR" + str(exc))
    sys.stdout.flush()
    time.sleep(3)  # the other process prints its own before this one's runtime goes
    os._exit(0)
print("MET")
"""


@pytest.mark.skipif(not JAX, reason="JAX not installed")
def test_processes_that_disagree_on_the_point_stop_with_the_keys_named():
    port = launch.free_port()
    procs = []
    for i, n in enumerate((1000, 1030)):
        env = _env(Path("/nonexistent"), KERAS_BACKEND="jax", JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="",
                   KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}", KERAS_DISTRIBUTION_PROCESS_ID=str(i))
        procs.append(subprocess.Popen([sys.executable, "-c", _AGREE.replace("N}", f"{n}}}")], cwd=PROJECT_ROOT,
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=180)[0] for p in procs]
    for o in outs:
        assert "ERROR" in o and "MET" not in o, o
        msg = o.split("ERROR", 1)[1]
        assert "runs another point" in msg and "n_train" in msg and "same grid" in msg, msg
