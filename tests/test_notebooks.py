"""Notebooks through papermill on real kernels, the runner end to end, the rendered report."""

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from helpers import device, record
from helpers.paths import NOTEBOOKS, PROJECT_ROOT

INSTALLED = [b for b in ("tensorflow", "jax", "torch") if device.backend_installed(b)]
TINY = {"batch_size": 100, "epochs": 3, "n_train": 400, "data_source": "synthetic"}


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


def run_nb(kernel, tmp_path, name="cnn_cifar10", **params):
    import papermill as pm

    out = tmp_path / f"{name}-{params.get('backend', '')}-{params.get('device', '')}.ipynb"
    params.setdefault("output_dir", str(tmp_path / "records"))
    params.setdefault("min_steady_s", 1e-6)  # behaviour, not timing: `epochs` epochs, however short
    pm.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(out), parameters=params,
                        kernel_name=kernel, progress_bar=False, cwd=str(NOTEBOOKS))
    return out


def only_record(folder: Path) -> dict:
    files = list(folder.glob("*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


@pytest.mark.slow
@pytest.mark.parametrize("backend", INSTALLED)
def test_cnn_cifar10_on_cpu_writes_a_full_record(kernel, tmp_path, backend):
    run_nb(kernel, tmp_path, backend=backend, device="cpu", **TINY)
    rec = only_record(tmp_path / "records")
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


@pytest.mark.slow
def test_gpu_point_without_gpu_is_skipped_not_timed(kernel, tmp_path):
    import papermill as pm

    from helpers.fingerprint import gpus

    if gpus()["gpu_names"]:
        pytest.skip("this machine has a GPU")
    with pytest.raises(pm.PapermillExecutionError) as err:
        run_nb(kernel, tmp_path, backend=INSTALLED[0], device="gpu", **TINY)
    assert err.value.ename == "PointSkipped"
    rec = only_record(tmp_path / "records")
    assert rec["status"] == "skipped" and rec["reason"]
    assert rec["first_epoch_s"] is None and rec["samples_per_s"] is None and rec["epoch_s"] == []
    assert rec["device_used"] != "gpu"


@pytest.mark.slow
def test_synthetic_accuracy_rises_above_chance(kernel, tmp_path):
    backend = "jax" if "jax" in INSTALLED else INSTALLED[0]
    run_nb(kernel, tmp_path, backend=backend, device="cpu", batch_size=50, epochs=6, n_train=2000,
           data_source="synthetic")
    rec = only_record(tmp_path / "records")
    acc = rec["history"]["accuracy"]
    assert acc[-1] > 0.3, acc  # chance is 0.1
    assert rec["history"]["loss"][-1] < rec["history"]["loss"][0]


@pytest.mark.slow
@pytest.mark.parametrize("bad, needle", [
    ({"batch_size": 0}, "key 'batch_size' has value 0"),
    ({"batchsize": 64}, "unknown key 'batchsize'"),
    ({"backend": "mxnet"}, "key 'backend' has value 'mxnet'"),
])
def test_papermill_by_hand_with_bad_parameter_fails_in_first_cell(kernel, tmp_path, bad, needle):
    import papermill as pm

    with pytest.raises(pm.PapermillExecutionError) as err:
        run_nb(kernel, tmp_path, **bad)
    assert err.value.ename == "ParamError" and needle in err.value.evalue
    assert "begin(globals())" in err.value.source  # the first code cell after the parameters
    assert not (tmp_path / "records").exists()


def _run_all(args, tmp_path, env_extra=None):
    env = {**os.environ, "CGB_USE_CURRENT_PYTHON": "1", "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.update(env_extra or {})
    return subprocess.run(["bash", str(PROJECT_ROOT / "run_all.sh"), *args], capture_output=True, text=True,
                          env=env, timeout=1200)


def test_run_all_rejects_a_bad_grid_before_running(tmp_path):
    g = tmp_path / "bad.yaml"
    g.write_text("points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n"
                 "  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    batch_size: 0\n")
    res = _run_all([str(g)], tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert str(g) in res.stderr and "'batch_size'" in res.stderr and ">= 1" in res.stderr
    assert not (Path(os.environ["CGB_OUTPUTS"]) / "runs").exists()


@pytest.mark.slow
def test_run_all_smoke_grid_end_to_end_with_report(tmp_path):
    """params/smoke.yaml (every workload, every backend) through ./run_all.sh, then the report."""
    from helpers import grid

    smoke = PROJECT_ROOT / "params" / "smoke.yaml"
    points = grid.expand(smoke)
    res = _run_all([str(smoke)], tmp_path)
    out = res.stdout
    assert res.returncode == 0, out + res.stderr[-3000:]
    n = len(points)
    assert f"[1/{n}]" in out and f"[{n}/{n}]" in out and "report:" in out
    outputs = Path(os.environ["CGB_OUTPUTS"])
    recs = [{**json.loads(p.read_text()), "_path": str(p)} for p in outputs.glob("runs/*/records/*.json")]
    assert len(recs) == n
    for r in recs:
        want = "ok" if r["backend"] in INSTALLED else "skipped"
        assert r["status"] == want, (r["workload"], r["backend"], r["reason"])
        if want == "ok":
            assert r["device_used"] == "cpu" and r["samples_per_s"] > 0 and len(r["epoch_s"]) == 1
            assert r["data_source"] == "synthetic" and not Path(r["notebook"]).is_absolute() \
                and record.notebook_path(r).is_file()
    assert {r["workload"] for r in recs} == {p["workload"] for p in points}
    html = (outputs / "report.html").read_text()
    assert "data:image/png;base64" in html and "<script src=\"http" not in html
    # a second run resumes: points done on this machine are not run again
    res2 = _run_all([str(smoke), "--no-report"], tmp_path)
    n_ok = sum(r["status"] == "ok" for r in recs)
    assert res2.returncode == 0 and res2.stdout.count("not run again") == n_ok, res2.stdout


def test_run_all_skips_gpu_points_without_a_gpu_fast(tmp_path):
    from helpers.plan import has_nvidia_gpu

    if has_nvidia_gpu():
        pytest.skip("this machine has a GPU")
    g = tmp_path / "grid.yaml"
    g.write_text("points:\n  - workload: cnn_cifar10\n    backend: [tensorflow, jax, torch]\n    device: gpu\n")
    res = _run_all([str(g), "--no-report"], tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    recs = [json.loads(p.read_text()) for p in Path(os.environ["CGB_OUTPUTS"]).glob("runs/*/records/*.json")]
    assert len(recs) == 3 and all(r["status"] == "skipped" and "no NVIDIA GPU" in r["reason"] for r in recs)
    assert all(r["samples_per_s"] is None and r["device_used"] is None for r in recs)
