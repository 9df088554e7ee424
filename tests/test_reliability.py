"""Reliability: interruption, resume, a second run at once, failures, mislabelling, escaping."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import tiny
from support.shared_run import env_for

from helpers.params import ParamError
from helpers.paths import PROJECT_ROOT
from helpers.point import notebook_params
from helpers.point import session as point
from helpers.record.ids import notebook_path
from helpers.record.reader import read_records
from helpers.runner.outputs import acquire_lock


def start(args, outputs: Path, **extra) -> subprocess.Popen:
    return subprocess.Popen(["bash", str(PROJECT_ROOT / "run_all.sh"), *args], env=env_for(outputs, **extra),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)


def kernels_of(outputs: Path) -> list[int]:
    """PIDs of kernel processes started for this outputs folder (found by their environment)."""
    pids = []
    needle = f"CGB_OUTPUTS={outputs}".encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            cmd = (d / "cmdline").read_bytes()
            if b"helpers.runner.kernel" in cmd and needle in (d / "environ").read_bytes().split(b"\0"):
                pids.append(int(d.name))
        except OSError:
            continue
    return pids


def wait_for(pred, timeout=180.0, step=0.2):
    t0 = time.time()
    while time.time() - t0 < timeout:
        value = pred()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("timed out waiting")


def all_records(outputs: Path) -> list[dict]:
    files = list(outputs.glob("runs/*/records/*.json"))
    return [{**json.loads(f.read_text()), "_path": str(f)} for f in files]  # every file parses: nothing partial


GRID3 = """timeout_s: 600
points:
  - workload: cnn_cifar10
    backend: jax
    device: cpu
    batch_size: 100
    epochs: 3
    n_train: 1500
    data_source: synthetic
    seed: [1, 2, 3]
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_interrupt_mid_point_then_resume(tmp_path, sig, tiny_notebooks):
    """Tiny notebooks (support/tiny.py): the second point sleeps until it is interrupted; resumed, it runs."""
    outputs = tmp_path / "outputs"
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID3)
    proc = start([str(grid), "--no-report"], outputs, **tiny.env(tiny_notebooks, {2: "sleep:300"}))
    # wait until the first point is done (the runner's own fields written: its notebook ran to the end)
    # and the second point's kernel is running
    wait_for(lambda: len([r for r in all_records(outputs) if "wall_s" in r]) == 1)
    wait_for(lambda: kernels_of(outputs))
    time.sleep(2.0)
    os.kill(proc.pid, sig)  # run_all.sh execs the runner: this is the driving Python process
    proc.wait(timeout=60)
    if sig == signal.SIGINT:
        assert proc.returncode == 130
        assert "interrupted" in proc.stdout.read()
    # no orphan kernel (after kill -9 the kernel notices its parent is gone within seconds)
    wait_for(lambda: not kernels_of(outputs), timeout=30)
    recs = all_records(outputs)
    assert len(recs) == 1 and recs[0]["status"] == "ok"
    assert not list(outputs.glob("runs/*/records/.*"))  # no temp files left
    # the next run resumes: the finished point is not run again, the others run
    res = subprocess.run(["bash", str(PROJECT_ROOT / "run_all.sh"), str(grid), "--no-report"],
                         env=env_for(outputs, **tiny.env(tiny_notebooks)), capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("not run again") == 1
    recs = all_records(outputs)
    assert sorted(r["params"]["seed"] for r in recs) == [1, 2, 3]
    assert all(r["status"] == "ok" for r in recs)
    # --rerun runs everything again
    res = subprocess.run(["bash", str(PROJECT_ROOT / "run_all.sh"), "validate", str(grid), "--rerun"],
                         env=env_for(outputs), capture_output=True, text=True)
    assert res.returncode == 0 and "3 points valid" in res.stdout


def test_second_run_at_once_is_refused_clearly(tmp_path):
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    held = acquire_lock(outputs)
    assert held is not None
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID3)
    res = subprocess.run(["bash", str(PROJECT_ROOT / "run_all.sh"), str(grid), "--no-report"],
                         env=env_for(outputs), capture_output=True, text=True, timeout=120)
    assert res.returncode == 5  # Exit.BUSY
    assert "in use by a run in progress" in res.stderr and f"pid {os.getpid()}" in res.stderr
    assert not (outputs / "runs").exists()
    held.close()


def test_failures_are_recorded_and_the_grid_goes_on(tmp_path, tiny_notebooks):
    """Tiny notebooks (support/tiny.py): a cell's error with the notebook's own failed record, an error before any
    record, memory exhausted, a kernel killed, a point past its time limit; the grid goes on to the last point.
    (A real workload's error in its notebook: test_image_array_workloads.py::test_real_data_missing_fails_the_point.)"""
    outputs = tmp_path / "outputs"
    grid = tmp_path / "g.yaml"
    grid.write_text("""timeout_s: 600
defaults: {workload: cnn_cifar10, backend: jax, device: cpu, epochs: 2, batch_size: 100, n_train: 200}
points:
  - seed: [1, 2, 3, 4]
  - seed: 5
    timeout_s: 5
  - seed: 6                     # still runs after the failures
""")
    fates = {1: "fail", 2: "crash", 3: "memory", 4: "kill", 5: "sleep:300"}
    res = subprocess.run(["bash", str(PROJECT_ROOT / "run_all.sh"), str(grid), "--no-report"],
                         env=env_for(outputs, **tiny.env(tiny_notebooks, fates)), capture_output=True, text=True,
                         timeout=900)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "5 failed" in res.stdout and "1 ok" in res.stdout
    recs = {r["params"]["seed"]: r for r in all_records(outputs)}
    assert sorted(recs) == [1, 2, 3, 4, 5, 6]
    assert recs[1]["status"] == "failed" and recs[1]["reason"] == "RuntimeError: tiny notebook: a failing cell"
    assert recs[1]["traceback"]  # the notebook's own record: Point.fail
    assert recs[2]["status"] == "failed" and "a cell failed before any record" in recs[2]["reason"]
    assert recs[3]["status"] == "failed" and "MemoryError" in recs[3]["reason"]
    assert recs[4]["status"] == "failed" and "killed (SIGKILL)" in recs[4]["reason"]
    assert recs[5]["status"] == "failed" and "timed out after 5 s" in recs[5]["reason"]
    assert recs[6]["status"] == "ok"
    for r in recs.values():
        assert notebook_path(r).is_file()  # the executed notebook is kept
        assert r["samples_per_s"] is None or r["status"] == "ok"
        assert r["wall_s"] is not None  # the runner finished every one
    assert not kernels_of(outputs)


def test_backend_not_installed_is_skipped_with_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(point._device, "backend_installed", lambda b: False)
    from helpers.params import COMMON_DEFAULTS
    from helpers.workloads import get

    params = {**COMMON_DEFAULTS, **get("cnn_cifar10").defaults,  # every knob a notebook has
              "workload": "cnn_cifar10", "backend": "tensorflow", "device": "cpu", "batch_size": 10,
              "epochs": 2, "n_train": 10, "n_val": 0, "data_source": "synthetic", "threads": 0, "min_steady_s": 0.01,
              "precision": "float32", "jit_compile": "auto", "seed": 0, "output_dir": str(tmp_path),
              "point_id": ""}
    with pytest.raises(point.PointSkipped, match="backend not installed"):
        point.begin(params)
    (rec_path,) = tmp_path.glob("*.json")
    rec = json.loads(rec_path.read_text())
    assert rec["status"] == "skipped" and "backend not installed" in rec["reason"]
    assert rec["samples_per_s"] is None and rec["device_used"] is None


def test_unknown_injected_parameter_is_rejected():
    ns = {"workload": "cnn_cifar10", "backend": "jax", "device": "cpu", "batch_size": 10, "epochs": 2,
          "n_train": 10, "n_val": 0, "data_source": "synthetic", "threads": 0, "precision": "float32",
          "jit_compile": "auto", "seed": 0, "output_dir": "", "point_id": "", "epoch": 5,
          "In": [], "_i1": "x", "json": json}
    with pytest.raises(ParamError, match="unknown key 'epoch'.*did you mean"):
        notebook_params.collect(ns)


def test_record_written_atomically_under_concurrent_writers(tmp_path):
    """Many processes writing the same record path at once: the file is always one whole record."""
    code = ("import sys; from helpers.record.schema import empty_record; "
            "from helpers.record.writer import write_record\n"
            "for i in range(200):\n"
            "    r = empty_record({'workload': 'w', 'backend': 'jax', 'device': 'cpu'}, 'same')\n"
            "    r.update(status='ok', history={'loss': [float(sys.argv[1])] * 2000})\n"
            f"    write_record(r, {str(tmp_path)!r})\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(k)], cwd=PROJECT_ROOT) for k in range(4)]
    path = tmp_path / "w-jax-cpu-same.json"
    reads = 0
    while any(p.poll() is None for p in procs):
        if path.exists():
            data = json.loads(path.read_text())
            assert len(set(data["history"]["loss"])) == 1
            reads += 1
    assert all(p.returncode == 0 for p in procs)
    assert reads > 0
    assert [f.name for f in tmp_path.iterdir()] == [path.name]
    read_records([tmp_path])


def test_price_profile_missing_from_prices_file_is_refused_before_running(tmp_path):
    outputs = tmp_path / "outputs"
    grid = tmp_path / "g.yaml"
    grid.write_text(GRID3)
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: USD\nprofiles:\n  my-box: {on_demand_per_hour: 1.0}\n")
    res = subprocess.run(["bash", str(PROJECT_ROOT / "run_all.sh"), str(grid), "--prices", str(prices),
                          "--price-profile", "h100-spot"], env=env_for(outputs), capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "'h100-spot'" in res.stderr and str(prices) in res.stderr and "my-box" in res.stderr
    assert not (outputs / "runs").exists()


def test_summary_refuses_a_host_profile_missing_from_prices():
    import pandas as pd

    from helpers.report.derive import costs

    prices = {"profiles": {"a": {"on_demand_per_hour": 1.0}}, "_path": "prices.yaml"}
    with pytest.raises(costs.PriceError, match="'nope' is not in prices.yaml.*allowed: a"):
        costs.add_costs(pd.DataFrame(), prices, {"host1": "nope"})
    recs = [{"price_profile": "a", "fingerprint": {"host": "h"}}, {"fingerprint": {"host": "g"}}]
    assert costs.record_profiles(recs) == {"h": "a"}
