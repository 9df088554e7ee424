"""Shards for real: runners in their own processes, points in fresh kernels, one outputs folder.

- two shards at once (one given by Slurm's array variables, one by Kubernetes' JOB_COMPLETION_INDEX): their
  union is the grid, no run twice, one merged report;
- a shard killed with SIGKILL (runner and kernel, as a node's loss or ``scancel`` does) and started again
  finishes its own runs only;
- a single-node Slurm started here (slurmctld, slurmd, munged as root, private ports and folders; the fixture
  ``slurm``, tests/support/slurm.py):
  ``sbatch --array=0-1 scripts/cluster/slurm_array.sbatch`` gives one merged report. Skipped, with the
  daemons' own error, where Slurm is not installed (scripts/ensure_slurm.sh installs it) or cannot run.

The grid is 4 runs of mlp_mnist in tiny notebooks (tests/support/tiny.py: the parameters cell, the record, no
framework): the mechanism, not the timings, is tested (``CGB_SLURM_GRID=params/smoke.yaml`` runs the Slurm test
over that grid, on the real notebooks, instead).
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import slurm as slurm_support
from support import tiny

from helpers.paths import PROJECT_ROOT
from helpers.record.reader import read_records

GRID = """timeout_s: 300
points:
  - workload: mlp_mnist
    backend: jax
    device: cpu
    batch_size: 50
    epochs: 2
    n_train: 200
    min_steady_s: 0.000001
    data_source: synthetic
    seed: [1, 2, 3, 4]
"""
SHARD_VARS = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_COUNT",
              "SLURM_ARRAY_TASK_STEP", "JOB_COMPLETION_INDEX", "CGB_SHARD_COUNT")


@pytest.fixture(autouse=True)
def _tiny(tiny_notebooks, monkeypatch):
    """Every runner this module starts runs the tiny notebooks (unless CGB_SLURM_GRID asks for a real grid)."""
    if not os.environ.get("CGB_SLURM_GRID"):
        for k, v in tiny.env(tiny_notebooks).items():
            monkeypatch.setenv(k, v)


def env_for(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in SHARD_VARS and not k.startswith("SLURM_")}
    env.update(CGB_OUTPUTS=str(tmp_path / "out"), CGB_RUNNERS_DIR=str(tmp_path / "runners"), JUPYTER_PATH="",
               PYTHONPATH="", **extra)
    return env


def runner_cmd(grid: Path, *args) -> list[str]:
    return [sys.executable, "-m", "helpers.runner", str(grid), *args]


def complete(out: Path) -> list[dict]:
    recs, skipped = read_records([out / "runs"])
    assert not skipped, skipped
    return [r for r in recs if r.get("wall_s") is not None]


def grid_point_ids(grid: Path, env: dict) -> list[str]:
    code = ("import sys; from helpers import grid; from helpers.record.ids import point_id; "
            "from helpers.runner.notebook import notebook_params; "
            "from helpers.measure.machine import machine_key; "
            "print(' '.join(point_id(notebook_params(r), machine_key()) "
            "for r in grid.runs(grid.expand_all([sys.argv[1]]))))")
    out = subprocess.run([sys.executable, "-c", code, str(grid)], cwd=PROJECT_ROOT, env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout.split()


def test_two_shards_at_once_into_one_folder_give_the_grid_once_and_one_report(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID)
    slurm = env_for(tmp_path, SLURM_ARRAY_TASK_ID="0", SLURM_ARRAY_TASK_MIN="0", SLURM_ARRAY_TASK_MAX="1",
                    SLURM_ARRAY_TASK_COUNT="2")
    k8s = env_for(tmp_path, JOB_COMPLETION_INDEX="1", CGB_SHARD_COUNT="2")
    procs = [subprocess.Popen(runner_cmd(grid), cwd=PROJECT_ROOT, env=e, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for e in (slurm, k8s)]
    outs = [p.communicate(timeout=900)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], "\n".join(o[-3000:] for o in outs)
    assert "shard 0/2 (Slurm array" in outs[0] and "shard 1/2 (Kubernetes Indexed Job" in outs[1]
    out = tmp_path / "out"
    recs = complete(out)
    assert all(r["status"] == "ok" for r in recs), [r.get("reason") for r in recs]
    assert sorted(r["point_id"] for r in recs) == sorted(grid_point_ids(grid, slurm))  # the grid, each run once
    assert sorted(r["shard"] for r in recs) == ["0/2", "0/2", "1/2", "1/2"]
    assert all(isinstance(r["concurrent_runners"], int) for r in recs)
    # one report, rendered once, by the last shard out
    assert sum("report: " in o for o in outs) == 1 and (out / "report.html").is_file()
    assert sum("rendered by the last shard" in o for o in outs) == 1


def test_a_shard_killed_with_sigkill_and_started_again_finishes_its_own_runs_only(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID)
    env = env_for(tmp_path, CGB_TINY='{"1": "sleep:5", "2": "sleep:5", "3": "sleep:5", "4": "sleep:5"}')
    out = tmp_path / "out"
    log = (tmp_path / "first.log").open("w")
    first = subprocess.Popen(runner_cmd(grid, "--shard", "0/2", "--no-report"), cwd=PROJECT_ROOT, env=env,
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.time() + 600
        while time.time() < deadline and not (out.is_dir() and complete(out)):
            assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
            time.sleep(0.5)
        assert complete(out), "no run finished in time"
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the runner and its kernel, at once
        first.wait()
    (done_first,) = complete(out)
    env["CGB_TINY"] = "{}"
    again = subprocess.run(runner_cmd(grid, "--shard", "0/2", "--no-report"), cwd=PROJECT_ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert "1 done before" in again.stdout
    recs = complete(out)
    ids = [r["point_id"] for r in recs]
    assert len(ids) == len(set(ids)) == 2 and done_first["point_id"] in ids  # shard 0's two runs, once each
    assert {r["shard"] for r in recs} == {"0/2"}
    shard1 = set(grid_point_ids(grid, env)) - set(ids)
    assert len(shard1) == 2  # shard 1's runs: not run by shard 0
    assert all(r["status"] == "ok" for r in recs)


# ------------------------------------------------------------------ a real single-node Slurm (support/slurm.py)


@pytest.mark.xdist_group(slurm_support.GROUP)  # one single-node Slurm at a time
def test_sbatch_array_of_a_grid_gives_one_merged_report(slurm, tmp_path):
    env, d = slurm
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID)
    if os.environ.get("CGB_SLURM_GRID"):  # e.g. params/smoke.yaml (30 runs: minutes on 2 cores)
        grid = (PROJECT_ROOT / os.environ["CGB_SLURM_GRID"]).resolve()
    out = tmp_path / "out"
    venv_bin = str(Path(sys.executable).parent)
    job_env = {**env_for(tmp_path), "SLURM_CONF": env["SLURM_CONF"], "PATH": f"{venv_bin}:{os.environ['PATH']}"}
    sub = subprocess.run(["sbatch", "--parsable", "--array=0-1", "--cpus-per-task=1", f"--chdir={PROJECT_ROOT}",
                          f"--output={tmp_path}/slurm-%A_%a.out", "scripts/cluster/slurm_array.sbatch",
                          "--current-python", str(grid)],
                         cwd=PROJECT_ROOT, env=job_env, capture_output=True, text=True, timeout=60)
    assert sub.returncode == 0, sub.stderr
    job = sub.stdout.strip().split(";")[0]
    deadline = time.time() + 1800
    while time.time() < deadline:
        q = subprocess.run(["squeue", "-h", "-j", job], env=env, capture_output=True, text=True)
        if q.returncode == 0 and not q.stdout.strip():
            break
        time.sleep(2)
    logs = {p.name: p.read_text(errors="replace") for p in sorted(tmp_path.glob("slurm-*.out"))}
    detail = "\n".join(f"--- {k}\n{v[-2500:]}" for k, v in logs.items()) + "\n" + slurm_support.tail(d / "slurmd.log")
    states = subprocess.run(["scontrol", "-o", "show", "job", job], env=env, capture_output=True, text=True).stdout
    assert len(logs) == 2, detail
    assert states.count("JobState=COMPLETED") == 2 and states.count("ExitCode=0:0") == 2, states + detail
    text = "\n".join(logs.values())
    assert "shard 0/2 (Slurm array" in text and "shard 1/2 (Slurm array" in text, detail
    recs = complete(out)
    assert sorted(r["point_id"] for r in recs) == sorted(grid_point_ids(grid, job_env)), detail
    assert all(r["status"] == "ok" for r in recs), [r.get("reason") for r in recs]
    assert text.count("report: ") == 1 and (out / "report.html").is_file(), detail
