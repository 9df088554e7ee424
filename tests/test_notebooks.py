"""Notebooks through papermill on real kernels, the runner end to end, the rendered report."""

import json
import os
import re
from pathlib import Path

import nbformat
import pytest
from support import INSTALLED, ONE, only_record, run_nb
from support.shared_run import SHARDS, run_all
from support.workload_points import TINY, by_backend, group

from helpers.paths import NOTEBOOKS
from helpers.record.ids import notebook_path


def test_committed_notebooks_have_no_outputs():
    nbs = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert nbs
    for path in nbs:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs and cell.execution_count is None, path.name
        tagged = [c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])]
        assert len(tagged) == 1, path.name


@pytest.mark.parametrize("backend", by_backend("cnn_cifar10"))
def test_cnn_cifar10_on_cpu_writes_a_full_record(workload_runs, backend):
    rec = workload_runs(backend)["cnn_cifar10"]  # support.workload_points: TINY
    assert rec["status"] == "ok" and rec["reason"] is None
    assert rec["backend"] == backend and rec["device"] == "cpu" and rec["device_used"] == "cpu"
    assert rec["model_params"] == rec["expected_params"] == 39558
    assert rec["data_source"] == "synthetic" and rec["n_train"] == 400
    assert rec["first_epoch_s"] > 0 and len(rec["epoch_s"]) == 2
    assert rec["median_epoch_s"] == pytest.approx(sorted(rec["epoch_s"])[0] / 2 + sorted(rec["epoch_s"])[1] / 2)
    assert rec["samples_per_s"] == pytest.approx(400 / rec["median_epoch_s"])
    assert rec["step_s"] == pytest.approx(rec["median_epoch_s"] / 4)
    assert len(rec["history"]["loss"]) == 3 and len(rec["history"]["accuracy"]) == 3
    assert rec["utilisation"]["n_samples"] >= 1 and "cpu_pct_mean" in rec["utilisation"]
    assert rec["fingerprint"]["versions"]["keras"].startswith("3.")
    assert rec["env_forced"]["KERAS_BACKEND"] == backend and rec["env_forced"]["CUDA_VISIBLE_DEVICES"] == ""


def test_gpu_point_without_gpu_is_skipped_not_timed(kernel, tmp_path):
    import papermill as pm

    from helpers.measure.fingerprint import gpus

    if gpus()["gpu_names"]:
        pytest.skip("this machine has a GPU")
    with pytest.raises(pm.PapermillExecutionError) as err:
        # on JAX: the notebook's skip is the same on every backend, and a TensorFlow kernel takes 8 s longer to start;
        # each backend's own GPU skip reason: test_helpers' test_verify_reports_the_device_really_used
        run_nb(kernel, tmp_path, "cnn_cifar10", backend=ONE, device="gpu", **TINY)
    assert err.value.ename == "PointSkipped"
    rec = only_record(tmp_path / "records")
    assert rec["status"] == "skipped" and rec["reason"]
    assert rec["first_epoch_s"] is None and rec["samples_per_s"] is None and rec["epoch_s"] == []
    assert rec["device_used"] != "gpu"


@pytest.mark.xdist_group(group(ONE, "cnn_cifar10_accuracy"))
def test_synthetic_accuracy_rises_above_chance(workload_runs):
    rec = workload_runs(ONE)["cnn_cifar10_accuracy"]
    acc = rec["history"]["accuracy"]
    assert acc[-1] > 0.3, acc  # chance is 0.1
    assert rec["history"]["loss"][-1] < rec["history"]["loss"][0]


@pytest.mark.parametrize("bad, needle", [
    ({"batch_size": 0}, "key 'batch_size' has value 0"),
    ({"batchsize": 64}, "unknown key 'batchsize'"),
    ({"backend": "mxnet"}, "key 'backend' has value 'mxnet'"),
])
def test_papermill_by_hand_with_bad_parameter_fails_in_first_cell(kernel, tmp_path, bad, needle):
    import papermill as pm

    with pytest.raises(pm.PapermillExecutionError) as err:
        run_nb(kernel, tmp_path, "cnn_cifar10", **bad)
    assert err.value.ename == "ParamError" and needle in err.value.evalue
    assert "begin(globals())" in err.value.source  # the first code cell after the parameters
    assert not (tmp_path / "records").exists()


def _run_all(args, tmp_path, env_extra=None):
    return run_all(args, Path(os.environ["CGB_OUTPUTS"]), timeout=1200, **(env_extra or {}))


def test_run_all_rejects_a_bad_grid_before_running(tmp_path):
    g = tmp_path / "bad.yaml"
    g.write_text("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n"
                 "  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    batch_size: 0\n")
    res = _run_all([str(g)], tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert str(g) in res.stderr and "'batch_size'" in res.stderr and ">= 1" in res.stderr
    assert not (Path(os.environ["CGB_OUTPUTS"]) / "runs").exists()


@pytest.mark.xdist_group("shared_run")
@pytest.mark.parametrize("k", range(SHARDS))
def test_shared_run_shard_runs_its_points(shared_run, k):
    """The shared run (support/shared_run.py): each shard of the grid through ./run_all.sh, its points in real
    papermill kernels, progress lines counting its runs."""
    out = shared_run.shard(k).stdout
    assert f"shard {k}/{SHARDS}" in out and "[1/" in out and "0 failed" in out, out[-3000:]
    n = int(re.search(r": (\d+) runs of \d+ points", out).group(1))  # this shard's runs
    assert n >= 1 and f"[{n}/{n}]" in out


@pytest.mark.xdist_group("shared_run")
def test_shared_run_report_renders(shared_run):
    res = shared_run.report
    assert "report:" in res.stdout
    html = (shared_run.outputs / "report.html").read_text()
    assert 'class="cgb-fig"' in html and "<svg " in html and "<script src=\"http" not in html


@pytest.mark.xdist_group("shared_run")
def test_run_all_one_point_per_workload_end_to_end_with_report(shared_run):
    """One point per workload (backends rotated, each in a real papermill kernel) through ./run_all.sh, its report,
    then the same grid again: points done on this machine are not run again."""
    from helpers import grid, workloads

    points = grid.expand(shared_run.grid)
    recs = shared_run.records
    assert len(recs) == len(points)  # the shards' union is the grid, each point once
    for r in recs:
        want = "ok" if r["backend"] in INSTALLED and r["device"] == "cpu" else "skipped"
        assert r["status"] == want, (r["workload"], r["backend"], r["reason"])
        if want == "ok":
            assert r["device_used"] == "cpu" and r["samples_per_s"] > 0
            assert len(r["epoch_s"]) == r["params"]["epochs"] - 1
            assert r["data_source"] == "synthetic" and not Path(r["notebook"]).is_absolute() \
                and notebook_path(r).is_file()
    assert {r["workload"] for r in recs} == set(workloads.names()) - {"custom"}
    assert {r["backend"] for r in shared_run.ok()} == set(INSTALLED)  # a real kernel on every backend
    # a second run resumes: points done on this machine are not run again
    res2 = shared_run.again
    n_ok = len(shared_run.ok())
    assert res2.returncode == 0 and res2.stdout.count("not run again") == n_ok, res2.stdout


def test_run_all_skips_gpu_points_without_a_gpu_fast(tmp_path):
    from helpers.runner.plan import has_nvidia_gpu

    if has_nvidia_gpu():
        pytest.skip("this machine has a GPU")
    g = tmp_path / "grid.yaml"
    g.write_text("points:\n  - workload: cnn_cifar10\n    backend: [tensorflow, jax, torch]\n    device: gpu\n")
    res = _run_all([str(g), "--no-report"], tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    recs = [json.loads(p.read_text()) for p in Path(os.environ["CGB_OUTPUTS"]).glob("runs/*/records/*.json")]
    assert len(recs) == 3 and all(r["status"] == "skipped" and "no NVIDIA GPU" in r["reason"] for r in recs)
    assert all(r["samples_per_s"] is None and r["device_used"] is None for r in recs)
