"""Unit tests of helpers: device forcing, records, atomic writes, data, timing statistics."""

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import helpers
from helpers.data import loaders as data
from helpers.measure import timing
from helpers.paths import PROJECT_ROOT
from helpers.point import device
from helpers.record.ids import point_id
from helpers.record.reader import read_records
from helpers.record.schema import empty_record
from helpers.record.writer import write_record


def test_package_imports_no_framework():
    code = ("import sys, helpers, helpers.point.session, helpers.runner.cli, helpers.grid, helpers.report, "
            "helpers.workloads, helpers.data.loaders, helpers.point.device, helpers.measure.timing, "
            "helpers.measure.sampler, helpers.measure.energy, helpers.measure.nvml, helpers.measure.framework_memory, "
            "helpers.measure.flops_analytic, helpers.measure.flops_table, helpers.measure.flops_xla, "
            "helpers.measure.trace_events, helpers.measure.trace_breakdown, helpers.data.image_plan, "
            "helpers.data.image_augment, helpers.data.image_folders\n"
            "bad = [m for m in ('keras', 'tensorflow', 'jax', 'torch') if m in sys.modules]\n"
            "print(bad); sys.exit(1 if bad else 0)")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert helpers.__version__


_SEEDS = """
import json, random, sys
import numpy as np
import keras
from helpers.point import device
from keras.src.utils import rng_utils  # get_random_seed is not exported

def draws():
    return [random.random(), float(np.random.rand()), [float(v) for v in keras.random.uniform((3,))]]

device.set_random_seed(7)
mine = draws()
out = {"tensorflow": "tensorflow" in sys.modules, "seed": rng_utils.get_random_seed()}
keras.utils.set_random_seed(7)  # Keras' own, which imports TensorFlow where it is installed
out["same"] = draws() == mine
device.set_random_seed(8)  # TensorFlow imported now: Keras' own function, as it is
out["after"] = [rng_utils.get_random_seed(), draws() != mine]
print("RESULT" + json.dumps(out))
"""


@pytest.mark.skipif(not device.backend_installed("jax"), reason="JAX not installed")
def test_the_suite_seeds_as_keras_does_without_importing_tensorflow_on_jax():
    from support import in_fresh_python

    res = json.loads(in_fresh_python(_SEEDS, "jax").split("RESULT", 1)[1])
    assert res == {"tensorflow": False, "seed": 7, "same": True, "after": [8, True]}


def test_force_cpu_sets_variables():
    env = {"CUDA_VISIBLE_DEVICES": "0"}
    set_vars = device.force("jax", "cpu", environ=env)
    assert env["KERAS_BACKEND"] == "jax"
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["JAX_PLATFORMS"] == "cpu"
    assert set_vars["CUDA_VISIBLE_DEVICES"] == ""


def test_force_gpu_unhides_inherited_cpu_setting():
    env = {"CUDA_VISIBLE_DEVICES": ""}
    device.force("torch", "gpu", environ=env)
    assert "CUDA_VISIBLE_DEVICES" not in env
    assert env["JAX_PLATFORMS"] == "cuda" and env["KERAS_BACKEND"] == "torch"


def test_force_threads():
    env = {}
    device.force("tensorflow", "cpu", threads=1, environ=env)
    for key in device.THREAD_ENV:
        assert env[key] == "1"
    with pytest.raises(device.DeviceError, match="cores"):
        device.force("tensorflow", "cpu", threads=10_000, environ={})


def test_force_rejects_switching_backend_in_process():
    code = ("import os; os.environ['KERAS_BACKEND']='jax'; os.environ['JAX_PLATFORMS']='cpu'\n"
            "import keras\nfrom helpers.point import device\n"
            "try:\n    device.force('torch', 'cpu')\nexcept device.DeviceError as e:\n    print('ERR', e)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True)
    assert "ERR keras is already imported with backend 'jax'" in out.stdout, out.stderr[-2000:]
    assert "restart the kernel" in out.stdout


# a CPU point verified as "cpu" on every backend: test_image_array_workloads's check_record, on each backend's
# points (forced by helpers.point.session.begin, verified by Point.verify, as a notebook does)
@pytest.mark.parametrize("backend", [b for b in ("tensorflow", "jax", "torch") if device.backend_installed(b)])
@pytest.mark.parametrize("dev", ["gpu"])
def test_verify_reports_the_device_really_used(backend, dev):
    """On a GPU-less machine: gpu yields a skip reason, never 'gpu'."""
    code = ("import json, sys\nfrom helpers.point import device\n"
            f"device.force({backend!r}, {dev!r})\nimport keras\n"
            f"print('RESULT', json.dumps(device.verify({backend!r}, {dev!r})))")
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "JAX_PLATFORMS")}
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True,
                         env=env, timeout=300)
    line = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")]
    assert line, out.stderr[-3000:]
    res = json.loads(line[0][7:])
    from helpers.measure.fingerprint import gpus

    if not gpus()["gpu_names"]:
        assert res["skip_reason"], res
        assert res["device_used"] != "gpu"


def test_point_id_stable_and_sensitive():
    p = {"workload": "cnn_cifar10", "backend": "jax", "device": "cpu", "batch_size": 10,
         "output_dir": "/a", "point_id": ""}
    a = point_id(p, "m1")
    assert a == point_id({**p, "output_dir": "/elsewhere"}, "m1")
    assert a != point_id({**p, "batch_size": 11}, "m1")
    assert a != point_id(p, "m2")
    assert len(a) == 12
    # knobs added later keep the ids of points run before them at the value those ran with, and only then
    later = {"steps_per_execution": 1, "gpus": 1, "hosts": 1, "input_dtype": "float32"}
    assert a == point_id({**p, **later}, "m1")
    for k, v in {"steps_per_execution": 8, "gpus": 2, "hosts": 2, "input_dtype": "uint8"}.items():
        assert a != point_id({**p, **later, k: v}, "m1"), k


def test_record_has_design_keys_and_writes_atomically(tmp_path):
    p = {"workload": "cnn_cifar10", "backend": "jax", "device": "cpu", "batch_size": 10, "epochs": 2}
    rec = empty_record(p, "abc")
    for key in ("schema", "point_id", "workload", "backend", "device", "device_used", "status", "reason",
                "params", "data_source", "n_train", "batch_size", "epochs", "first_epoch_s", "epoch_s",
                "median_epoch_s", "step_s", "samples_per_s", "history", "utilisation",
                "energy_j_per_epoch", "fingerprint", "started_at", "duration_s", "notebook"):
        assert key in rec
    rec["status"] = "ok"
    rec["first_epoch_s"] = np.float32(1.5)  # numpy scalars are converted
    rec["median_epoch_s"] = float("nan")  # NaN becomes null (strict JSON)
    path = write_record(rec, tmp_path)
    back = json.loads(path.read_text())
    assert back["first_epoch_s"] == 1.5 and back["median_epoch_s"] is None
    # a write that fails half way leaves the previous file intact and no temp file behind
    rec["history"] = {"loss": [object()]}
    with pytest.raises(TypeError):
        write_record(rec, tmp_path)
    assert json.loads(path.read_text())["first_epoch_s"] == 1.5
    assert [f.name for f in tmp_path.iterdir()] == [path.name]
    with pytest.raises(ValueError, match="status"):
        write_record({**rec, "status": "done", "history": {}}, tmp_path)


def test_read_records_skips_foreign_and_corrupt(tmp_path):
    p = {"workload": "cnn_cifar10", "backend": "jax", "device": "cpu"}
    good = empty_record(p, "x1")
    good["status"] = "ok"
    write_record(good, tmp_path)
    (tmp_path / "corrupt.json").write_text("{not json")
    (tmp_path / "foreign.json").write_text(json.dumps({"hello": 1}))
    (tmp_path / "old.json").write_text(json.dumps({**good, "schema": 0}))
    recs, skipped = read_records([tmp_path])
    assert [r["point_id"] for r in recs] == ["x1"]
    assert len(skipped) == 3


def test_spread():
    s = timing.spread([3.0, 1.0, 2.0, 4.0])
    assert s["median"] == 2.5 and s["min"] == 1.0 and s["max"] == 4.0 and s["n"] == 4
    assert s["q1"] <= s["median"] <= s["q3"]
    assert timing.spread([])["median"] is None


def test_synthetic_data_is_learnable():
    """A nearest-class-mean classifier fit on one sample beats chance (10%) by far on another."""
    x, y = data.synthetic_images(2000, (32, 32, 3), 10, seed=1)
    xv, yv = data.synthetic_images(1000, (32, 32, 3), 10, seed=2)
    assert x.dtype == np.float32 and x.shape == (2000, 32, 32, 3) and 0 <= x.min() and x.max() <= 1
    means = np.stack([x[y == k].reshape(-1, 3072).mean(0) for k in range(10)])
    d = ((xv.reshape(-1, 1, 3072) - means[None]) ** 2).sum(-1)
    acc = (d.argmin(1) == yv).mean()
    assert acc > 0.5, acc
    # not trivially separable by mean brightness alone
    assert len(np.unique(y)) == 10


def _write_cifar_cache(root, n_per_batch=10000):
    d = root / "datasets" / "cifar-10-batches-py-target" / "cifar-10-batches-py"
    d.mkdir(parents=True)
    rng = np.random.default_rng(0)
    expected = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        x = rng.integers(0, 256, size=(n_per_batch, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n_per_batch).tolist()
        with open(d / name, "wb") as f:
            pickle.dump({b"data": x, b"labels": labels, b"batch_label": name.encode()}, f)
        expected[name] = (x, labels)
    return expected


def test_real_cifar10_from_keras_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "kh"))
    expected = _write_cifar_cache(tmp_path / "kh", n_per_batch=200)
    ds = data.load_cifar10(n_train=None, n_val=50, source="auto", seed=0)
    assert ds.source == "real" and "Keras cache" in ds.detail
    assert ds.x_train.shape == (1000, 32, 32, 3) and ds.x_val.shape == (50, 32, 32, 3)
    x0, labels0 = expected["data_batch_1"]
    # first image, channels-last, scaled to [0, 1]: pixel (0, 0) of each channel
    np.testing.assert_allclose(ds.x_train[0, 0, 0], x0[0, [0, 1024, 2048]] / 255.0, rtol=1e-6)
    assert ds.y_train[0] == labels0[0]
    xt, lt = expected["test_batch"]
    assert ds.y_val.tolist() == lt[:50]
    sub = data.load_cifar10(n_train=300, n_val=0, source="real", seed=0)
    assert sub.x_train.shape[0] == 300 and sub.x_val is None and sub.source == "real"


def test_real_required_but_missing_is_a_clear_error():
    with pytest.raises(data.DataError, match="not in the Keras cache"):
        data.load_cifar10(100, 0, source="real")


def test_auto_falls_back_to_synthetic_and_says_so():
    ds = data.load_cifar10(100, 10, source="auto")
    assert ds.source == "synthetic" and "neither cached nor reachable" in ds.detail
    assert ds.x_train.shape == (100, 32, 32, 3) and ds.x_val.shape == (10, 32, 32, 3)
