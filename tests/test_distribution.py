"""Past one device, past one host: validation of gpus/hosts, the input path (uint8 inputs rescaled in
the model), the data-parallel path itself over JAX host devices on the CPU, two processes through JAX's
distributed runtime on this machine, and merging the processes' records."""

import json
import math
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from support import FAST_XLA, XLA_CACHE
from support.workload_points import script, script_group

from helpers import grid
from helpers.data import image_sets as datasets_images
from helpers.data import loaders as data
from helpers.params import ParamError
from helpers.paths import PROJECT_ROOT
from helpers.point import device, distribution_params, mesh, process_group, process_records
from helpers.point.launcher import DistributionError

JAX = device.backend_installed("jax")

# ---------------------------------------------------------------- validation, before anything runs


def _grid(tmp_path, text: str):
    g = tmp_path / "g.yaml"
    g.write_text(textwrap.dedent(text))
    return grid.expand_all([g])


@pytest.mark.parametrize("block, needle", [
    ("backend: torch\n    device: gpu\n    gpus: 2", "Keras 3 has no distribution API on torch"),
    ("backend: tensorflow\n    device: gpu\n    gpus: 2", "backend 'tensorflow': not supported"),
    ("backend: jax\n    device: cpu\n    gpus: 2", "several devices need device: gpu"),
    ("backend: torch\n    device: cpu\n    hosts: 2", "hosts=2 with backend 'torch'"),
    ("backend: jax\n    device: gpu\n    gpus: 0", "key 'gpus' has value 0"),
    ("backend: jax\n    device: gpu\n    hostz: 2", "did you mean 'hosts'"),
])
def test_grid_refuses_what_cannot_run_before_running(tmp_path, block, needle):
    with pytest.raises(grid.GridError) as err:
        _grid(tmp_path, f"points:\n  - workload: mlp_mnist\n    {block}\n")
    assert needle in str(err.value) and "points[1]" in str(err.value)


def test_grid_accepts_jax_on_several_gpus_and_hosts_and_defaults_to_one(tmp_path):
    pts = _grid(tmp_path, """\
        points:
          - workload: resnet50
            backend: jax
            device: gpu
            gpus: [1, 2]
            input_dtype: [float32, uint8]
          - workload: mlp_mnist
            backend: [jax, torch]
            device: cpu
        """)
    assert sorted((p["gpus"], p["input_dtype"]) for p in pts[:4]) == [
        (1, "float32"), (1, "uint8"), (2, "float32"), (2, "uint8")]
    assert all(p["hosts"] == 1 for p in pts) and all(p["gpus"] == 1 for p in pts[4:])
    assert distribution_params.global_batch({**pts[2], "batch_size": 256, "gpus": 2, "hosts": 3}) == 1536


def test_cpu_devices_only_through_the_test_route():
    p = {"backend": "jax", "device": "cpu", "gpus": 2, "hosts": 1}
    with pytest.raises(ParamError):
        distribution_params.check(p)
    distribution_params.check(p, host_devices=True)  # CGB_HOST_DEVICES=1: JAX's host devices stand in for GPUs
    assert distribution_params.host_devices_allowed({"CGB_HOST_DEVICES": "1"})
    assert not distribution_params.host_devices_allowed({})


def test_multihost_environment_is_read_and_checked():
    env = {"KERAS_DISTRIBUTION_JOB_ADDRESSES": "10.0.0.1:1234,10.0.0.2:1234", "KERAS_DISTRIBUTION_PROCESS_ID": "1"}
    assert process_group.multihost_env(2, env) == ("10.0.0.1:1234", 1)
    assert process_group.multihost_env(2, {"JAX_COORDINATOR_ADDRESS": "h:1", "JAX_PROCESS_ID": "0"}) == ("h:1", 0)
    for bad, needle in [({}, "no coordinator"), ({**env, "KERAS_DISTRIBUTION_PROCESS_ID": "2"}, "0 .. 1"),
                        ({**env, "KERAS_DISTRIBUTION_NUM_PROCESSES": "3"}, "hosts=2")]:
        with pytest.raises(DistributionError, match=needle):
            process_group.multihost_env(2, bad)


def test_shards_are_equal_and_split_evenly_over_the_devices():
    x, y = np.arange(103), np.arange(103) * 10
    parts = [mesh.shard(x, y, process_group.Plan(gpus=2, hosts=2, process_id=i)) for i in range(2)]
    assert [len(p[0]) for p in parts] == [50, 50]  # 103 // 2 = 51, trimmed to a multiple of 2 devices
    assert not set(parts[0][0]) & set(parts[1][0]) and (parts[1][1] == parts[1][0] * 10).all()
    # a generator's epoch: a multiple of the devices, batches of this process's batch
    from helpers.params import COMMON_DEFAULTS

    p = distribution_params.data_params({**COMMON_DEFAULTS, "batch_size": 32, "gpus": 4, "hosts": 1, "n_train": 1031,
                                         "n_val": 3})
    assert (p["batch_size"], p["n_train"], p["n_val"]) == (128, 1028, 4)


def test_merge_counts_global_samples_and_names_every_host():
    def rec(pid, host, epochs, energy):
        return {"process_id": pid, "status": "ok", "reason": None, "n_train": 1000, "n_train_process": 500,
                "epoch_s": epochs, "first_epoch_s": 3.0 + pid, "steps_per_epoch": 10, "energy_j_per_epoch": energy,
                "history": {"loss": [0.9, 0.5]}, "fingerprint": {"host": host}, "utilisation_timeline": [{}]}

    m = process_records.merge([rec(1, "b", [1.0, 2.2, 1.0], 50.0), rec(0, "a", [1.1, 2.0, 0.9], 40.0)])
    assert m["epoch_s"] == [1.1, 2.2, 1.0] and m["median_epoch_s"] == 1.1  # each epoch: its slowest process
    assert m["samples_per_s"] == pytest.approx(1000 / 1.1) and m["n_train"] == 1000
    assert m["fingerprint"]["hosts"] == ["a", "b"] and m["merged_from"] == 2
    assert m["energy_j_per_epoch"] == 90.0 and m["first_epoch_s"] == 4.0
    assert [p["final_loss"] for p in m["processes"]] == [0.5, 0.5] and "utilisation_timeline" not in m
    bad = process_records.merge([rec(0, "a", [1.0, 1.0], None), {**rec(1, "b", [1.0, 1.0], 1.0), "status": "failed",
                                                              "reason": "boom"}])
    assert bad["status"] == "failed" and "process 1: boom" in bad["reason"] and bad["energy_j_per_epoch"] is None


# ---------------------------------------------------------------- the input path


def test_synthetic_uint8_images_are_the_float_ones_quantised():
    f = data.load_cifar10(300, 20, "synthetic", seed=3)
    u = data.load_cifar10(300, 20, "synthetic", seed=3, dtype="uint8")
    assert u.x_train.dtype == np.uint8 and u.x_val.dtype == np.uint8 and (u.y_train == f.y_train).all()
    assert np.abs(u.x_train / 255.0 - f.x_train).max() <= 0.5 / 255 + 1e-6
    m = datasets_images.load_imagenet_shaped(8, 0, "synthetic", image_size=32, dtype="uint8")
    assert m.x_train.dtype == np.uint8 and m.x_train.shape == (8, 32, 32, 3) and m.x_train.max() > 200


_INPUT = """
import json
import numpy as np
import keras
from helpers.workloads import complete, get
from helpers.data.image_augment import prepare_batch

out = {}
for name, extra in [("cnn_cifar10", {}), ("mlp_mnist", {}), ("cnn_mnist", {}), ("vgg_cifar10", {}),
                    ("cnn_256", {"image_size": 32}), ("catsdogs", {"image_size": 32}),
                    ("resnet50", {"image_size": 32})]:
    w = get(name)
    counts = {}
    for dt in ("float32", "uint8"):
        prm = complete({**extra, "workload": name, "input_dtype": dt})
        m = w.build(prm)
        first = next(layer.name for layer in m.layers if type(layer).__name__ != "InputLayer")
        counts[dt] = [m.count_params(), m.inputs[0].dtype, first]
    out[name] = counts
u8 = np.full((2, 4, 4, 3), 255, np.uint8)
out["batch"] = [str(prepare_batch(u8, None, None, rescale=False).dtype), float(prepare_batch(u8, None, None).max())]
print("RESULT" + json.dumps(out))
"""
# the models are the same on every backend; torch builds them fastest on a CPU (JAX compiles each init): after torch's
# small chunk (support/workload_points.script)
_INPUT_RUN = script("uint8_inputs", "torch", _INPUT)


@pytest.mark.skipif(not device.backend_installed("torch"), reason="torch not installed")
@pytest.mark.xdist_group(script_group(_INPUT_RUN))
def test_uint8_inputs_are_rescaled_inside_the_same_network(workload_runs):
    res = json.loads(workload_runs("torch").script(_INPUT_RUN).split("RESULT", 1)[1])
    assert res.pop("batch") == ["uint8", 1.0]
    for name, c in res.items():
        assert c["float32"][0] == c["uint8"][0], name  # the parameter count is unchanged
        assert c["float32"][1] == "float32" and c["uint8"][1] == "uint8", name
        assert c["uint8"][2] == datasets_images.RESCALE_LAYER != c["float32"][2], name


# ---------------------------------------------------------------- the data-parallel path on 2 host devices

_POINT = """
import json, sys
from helpers.params import COMMON_DEFAULTS
from helpers.point.session import PointSkipped, begin
from helpers.workloads import get

prm = {**COMMON_DEFAULTS, **get("mlp_mnist").defaults, "workload": "mlp_mnist", "backend": "jax",
       "device": "cpu", "batch_size": 32, "n_train": 1030, "epochs": 3, "min_steady_s": 0.001,
       "data_source": "synthetic", "output_dir": OUT, **EXTRA}
pt = begin(prm)  # the notebook's cells, in order
import keras  # noqa: E402
try:
    pt.verify()
except PointSkipped as exc:
    print("RESULT" + json.dumps(pt.record))
    sys.exit(0)
pt.load_data()
pt.build_model()
pt.fit()
rec = pt.finish()
print("LOSSES" + json.dumps(rec["history"]["loss"]))
print("RESULT" + json.dumps(rec))
if THEN:  # a second point in the same process: one that must be skipped before anything is built
    pt = begin({**prm, **THEN, "output_dir": OUT + "/then"})
    try:
        pt.verify()
    except PointSkipped:
        print("SKIPPED" + json.dumps(pt.record))
"""


def _point(folder, extra: dict, env: dict, devices: int = 2, then: dict | None = None, name: str = "p"):
    """A point in a fresh Python on the CPU with ``devices`` JAX host devices; its output goes to files (two
    processes that wait on each other must never block on a full pipe)."""
    folder.mkdir(parents=True, exist_ok=True)
    code = f"OUT = {str(folder)!r}\nEXTRA = {extra!r}\nTHEN = {then!r}\n" + _POINT
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "",
           "TF_CPP_MIN_LOG_LEVEL": "3",  # behaviour, not timing: XLA's cheapest code generation (FAST_XLA)
           "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices} {FAST_XLA['XLA_FLAGS']}",
           **XLA_CACHE, **env}  # and the suite's compilation cache
    out, err = folder / f"{name}.out", folder / f"{name}.err"
    with open(out, "w") as o, open(err, "w") as e:
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=env, text=True, stdout=o,
                                stderr=e)
    return proc, out, err


def _result(started, timeout=600):
    proc, out, err = started
    try:
        proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = out.read_text()
    assert proc.returncode == 0, text[-3000:] + err.read_text()[-3000:]
    return text, json.loads(text.split("RESULT", 1)[1].splitlines()[0])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def started(tmp_path_factory):
    """Both distributed runs started at once (their compile time overlaps): gpus: 2 over 2 host devices (the
    test route), then gpus: 4 in the same process; and one point as two processes (hosts: 2)."""
    if not JAX:
        pytest.skip("JAX not installed")
    root = tmp_path_factory.mktemp("distributed")
    port = _free_port()
    runs = {"dp": _point(root / "dp", {"gpus": 2, "input_dtype": "uint8"}, {"CGB_HOST_DEVICES": "1"},
                         then={"gpus": 4})}
    for i in range(2):
        runs[f"host{i}"] = _point(root / "hosts", {"hosts": 2, "data_placement": "staged"}, {
            "KERAS_DISTRIBUTION_JOB_ADDRESSES": f"localhost:{port}", "KERAS_DISTRIBUTION_PROCESS_ID": str(i)},
            devices=1, name=f"host{i}")
    yield root, runs
    for proc, _, _ in runs.values():
        if proc.poll() is None:
            proc.kill()


@pytest.mark.xdist_group("distribution")  # shares the module fixture started
def test_data_parallel_point_over_two_host_devices(started):
    """The notebook's own calls, gpus: 2 over JAX's 2 host devices (the test route): the mesh in the record,
    the global batch, and samples/s counting every device's samples."""
    root, runs = started
    out, rec = _result(runs["dp"])
    skipped = json.loads(out.split("SKIPPED", 1)[1].splitlines()[0])
    assert rec["status"] == "ok" and rec["distribution"] == "keras.distribution.DataParallel"
    assert rec["mesh_devices"] == ["cpu:0", "cpu:1"] and [d["process"] for d in rec["mesh_detail"]] == [0, 0]
    assert (rec["gpus"], rec["hosts"], rec["per_device_batch_size"], rec["global_batch_size"]) == (2, 1, 32, 64)
    assert rec["n_train"] == 1030  # already a multiple of the 2 devices: every batch splits evenly
    assert rec["steps_per_epoch"] == math.ceil(1030 / 64) == 17
    assert rec["samples_per_s"] == pytest.approx(1030 / rec["median_epoch_s"])  # global samples
    assert rec["input_dtype"] == "uint8" and rec["data_info"]["input_dtype"] == "uint8"
    assert rec["model_params"] == 669706  # the rescaling adds no parameter
    assert rec["history"]["loss"][-1] < rec["history"]["loss"][0]  # it trains
    assert skipped["status"] == "skipped" and "gpus=4 but this host has 2 cpu device(s)" in skipped["reason"]
    on_disk = [json.loads(p.read_text()) for p in (root / "dp" / "then").glob("*.json")]
    assert [r["status"] for r in on_disk] == ["skipped"]


@pytest.mark.xdist_group("distribution")  # shares the module fixture started
def test_one_point_as_two_processes_through_jax_distributed(started):
    """hosts: 2 on this machine's CPU: two processes meet at a localhost coordinator (gloo collectives), each
    feeds its own shard, staged on its device ahead of the step (data_placement: staged); both see the same loss
    each epoch; process 0 writes the merged record."""
    root, runs = started
    (out0, merged), (out1, own1) = _result(runs["host0"]), _result(runs["host1"])
    losses = [json.loads(o.split("LOSSES", 1)[1].splitlines()[0]) for o in (out0, out1)]
    assert losses[0] == losses[1] and len(losses[0]) >= 3
    assert own1["process_id"] == 1 and own1["n_train_process"] == 515 and own1["n_train"] == 1030
    assert merged["merged_from"] == 2 and merged["hosts"] == 2 and merged["global_batch_size"] == 64
    assert merged["n_train"] == 1030 and merged["samples_per_s"] == pytest.approx(1030 / merged["median_epoch_s"])
    assert len(merged["mesh_devices"]) == 2 and [d["process"] for d in merged["mesh_detail"]] == [0, 1]
    assert len(merged["fingerprint"]["hosts"]) == 2 and [p["process_id"] for p in merged["processes"]] == [0, 1]
    # the batches were staged on each process's device ahead of the step (the recommended input path)
    assert merged["data_placement"] == "staged" and own1["data_staged"]["batches"] == math.ceil(515 / 32)
    assert own1["data_staged"]["served"] >= own1["epochs_run"] * own1["data_staged"]["batches"]
    top = [json.loads(p.read_text()) for p in (root / "hosts").glob("*.json")]
    parts = sorted((root / "hosts" / process_records.PROCESS_FOLDER).glob("*.json"))
    assert [r.get("merged_from") for r in top] == [2] and len(parts) == 2  # the report reads the merged one


_BN = """
import os, sys
import numpy as np, jax, keras
from helpers.point import batchnorm
keras.distribution.set_distribution(keras.distribution.DataParallel(devices=jax.devices()))
keras.utils.set_random_seed(0)
i = keras.Input((8, 8, 3))
x = i
for k in range(3):
    x = keras.layers.ReLU()(keras.layers.BatchNormalization()(keras.layers.Conv2D(8, 3, padding="same")(x)))
m = keras.Model(i, keras.layers.Dense(2)(keras.layers.GlobalAveragePooling2D()(x)))
print("CONVERTED", batchnorm.convert(m, batchnorm.mesh_devices()) if MODE == "per_device" else 0)
m.compile(optimizer="sgd", loss="mse")
xx = np.random.default_rng(0).normal(size=(64, 8, 8, 3)).astype("float32")
m.fit(xx, np.zeros((64, 2), "float32"), batch_size=16, epochs=1, verbose=0)
"""


def test_per_device_batchnorm_statistics_take_the_collectives_out_of_the_step(tmp_path):
    """batchnorm_stats (helpers.point.batchnorm) over 2 host devices: with Keras' global statistics the compiled
    training step all-reduces in every BatchNormalization layer (3 layers here: a dozen all-reduces); per device,
    one is left (the gradients and the moving statistics, combined), and each group is normalised by its own
    mean and variance."""
    if not JAX:
        pytest.skip("JAX not installed")
    procs = {}
    for mode in ("global", "per_device"):
        env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "",
               "TF_CPP_MIN_LOG_LEVEL": "3", "XLA_FLAGS": "--xla_force_host_platform_device_count=2 "
               f"--xla_dump_to={tmp_path / mode} --xla_dump_hlo_as_text"}
        procs[mode] = subprocess.Popen([sys.executable, "-c", f"MODE = {mode!r}\n" + _BN], cwd=PROJECT_ROOT,
                                       env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    counts = {}
    for mode, proc in procs.items():
        out = proc.communicate(timeout=300)[0]
        assert proc.returncode == 0, out[-3000:]
        assert f"CONVERTED {3 if mode == 'per_device' else 0}" in out
        step = [f for f in (tmp_path / mode).glob("*train_step*after_optimizations.txt")]
        assert len(step) == 1, sorted(p.name for p in (tmp_path / mode).iterdir())[:20]
        counts[mode] = step[0].read_text().count(" all-reduce(") + step[0].read_text().count(" all-reduce-start(")
    assert counts["global"] >= 6 and counts["per_device"] == 1, counts


def test_per_device_batchnorm_normalises_each_devices_part_by_its_own_moments():
    if not JAX:
        pytest.skip("JAX not installed")
    code = """
import numpy as np, keras
from helpers.point import batchnorm
i = keras.Input((4, 4, 3)); bn = keras.layers.BatchNormalization(); m = keras.Model(i, bn(i))
assert batchnorm.convert(m, 1) == 0 and type(bn) is keras.layers.BatchNormalization  # one device: unchanged
assert batchnorm.convert(m, 2) == 1
x = np.random.default_rng(0).normal(size=(8, 4, 4, 3)).astype("float32"); x[4:] = 3 * x[4:] + 5
y = np.asarray(bn(x, training=True))
ref = np.concatenate([(g - g.mean((0, 1, 2))) / np.sqrt(g.var((0, 1, 2)) + bn.epsilon) for g in (x[:4], x[4:])])
assert np.abs(y - ref).max() < 1e-4, np.abs(y - ref).max()
want = 0.01 * np.mean([x[:4].mean((0, 1, 2)), x[4:].mean((0, 1, 2))], axis=0)  # momentum 0.99 from 0
assert np.allclose(np.asarray(bn.moving_mean), want, atol=1e-5)
assert np.allclose(np.asarray(bn(x, training=False)), np.asarray(keras.layers.BatchNormalization.call(bn, x)))
print("OK")
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": ""})
    assert out.returncode == 0 and "OK" in out.stdout, out.stdout[-2000:] + out.stderr[-3000:]


# ---------------------------------------------------------------- the report's scaling section


def _scaling_html(tmp_path, runs):
    from helpers import report
    from helpers.record.writer import write_atomic
    from helpers.report.publish import sections

    for i, (gpus, dt, sps) in enumerate(runs):
        n = 2560
        rec = {"schema": 2, "point_id": f"p{i}", "workload": "resnet50", "backend": "jax", "device": "gpu",
               "device_used": "gpu", "status": "ok", "reason": None, "data_source": "synthetic",
               "params": {"threads": 0, "precision": "mixed_bfloat16", "gpus": gpus, "hosts": 1, "input_dtype": dt,
                          "image_size": 224},
               "n_train": n, "batch_size": 256, "epochs": 4, "first_epoch_s": 9.0, "epoch_s": [n / sps] * 3,
               "median_epoch_s": n / sps, "samples_per_s": sps, "steps_per_epoch": 10, "history": {"loss": [7, 6]},
               "utilisation": {}, "energy_j_per_epoch": 100.0 * gpus, "started_at": f"2026-01-01T00:00:0{i}",
               "fingerprint": {"host": "h", "cpu_model": "c", "cpu_logical": 32, "gpu_names": ["G", "G"]},
               "duration_s": 5.0, "notebook": None}
        write_atomic(tmp_path / f"r{i}.json", rec)
    report.setup_plots()
    ctx = report.build_context([tmp_path])
    s = sections.build(sections.get("scaling"), ctx)
    assert s.present
    return s._repr_html_()


def test_scaling_section_shows_efficiency_with_both_inputs_side_by_side(tmp_path):
    page = _scaling_html(tmp_path, [(1, "float32", 4000.0), (2, "float32", 3600.0),
                                    (1, "uint8", 6000.0), (2, "uint8", 8640.0)])
    assert "efficiency against the number of GPUs" in page and "Not run yet" not in page
    assert "0.45" in page and "0.72" in page  # 3600 / (2 x 4000), 8640 / (2 x 6000)
    assert page.count("uint8") >= 2 and page.count("float32") >= 2 and "class=\"cgb-fig\"" in page


def test_scaling_section_says_not_run_yet_without_several_gpus(tmp_path):
    page = _scaling_html(tmp_path, [(1, "float32", 4000.0), (1, "uint8", 6000.0)])
    assert "Not drawn: samples/s against the number of GPUs: no record trained on more than one GPU" in page


def test_the_processes_meet_within_the_points_deadline(monkeypatch):
    """Connecting waits at most INIT_TIMEOUT_S, less when the point's deadline (CGB_POINT_DEADLINE) is nearer, and
    never under 10 s; an unset or unreadable deadline leaves JAX's default."""
    import time

    from helpers.point import process_group as D

    monkeypatch.delenv("CGB_POINT_DEADLINE", raising=False)
    assert D._deadline_s() == D.INIT_TIMEOUT_S
    monkeypatch.setenv("CGB_POINT_DEADLINE", "soon")
    assert D._deadline_s() == D.INIT_TIMEOUT_S
    monkeypatch.setenv("CGB_POINT_DEADLINE", str(time.time() + 100))
    assert 95 < D._deadline_s() <= 100
    monkeypatch.setenv("CGB_POINT_DEADLINE", str(time.time() + 1))
    assert D._deadline_s() == 10.0
    monkeypatch.setenv("CGB_POINT_DEADLINE", str(time.time() + 10 * D.INIT_TIMEOUT_S))
    assert D._deadline_s() == D.INIT_TIMEOUT_S
