"""mlp_mnist, cnn_mnist, vgg_cifar10 (seed 002/004) and resnet50: models, data, notebooks end to end."""

import json
import sys
import textwrap

import numpy as np
import pytest
from support import FAST_COMPILE, ONE, write_cifar_cache, write_mnist_cache
from support.workload_points import ACCURACY, BUILDS_FAST, KERAS_SHIFT, by_backend, group, script, script_group

from helpers import params
from helpers.data import image_sets as datasets_images
from helpers.data import loaders as data
from helpers.paths import NOTEBOOKS
from helpers.workloads import get

MINE = ("mlp_mnist", "cnn_mnist", "vgg_cifar10", "resnet50")


# ---------------------------------------------------------------- registry and knobs


def test_registry_entries_name_their_source_and_defaults():
    for name in MINE:
        w = get(name)
        assert w.name == name and (NOTEBOOKS / f"{name}.ipynb").is_file()
        assert w.summary and w.expected_params
        # every extra knob has a default, so a grid point or a notebook run gets a full parameter set
        assert set(w.extra_params) <= set(w.defaults)
        spec = {**params.COMMON, **w.extra_params}
        params.validate(w.defaults, spec=spec)
    for name in ("mlp_mnist", "cnn_mnist", "vgg_cifar10"):
        assert get(name).source == "002_51261036f2f3f066.txt"
    assert get("mlp_mnist").defaults["batch_size"] == get("cnn_mnist").defaults["batch_size"] == 128
    assert get("vgg_cifar10").defaults["batch_size"] == 32 and get("vgg_cifar10").defaults["augment"] is True
    assert get("resnet50").defaults["batch_size"] == 64 and get("resnet50").defaults["image_size"] == 224


def test_workload_knobs_validate():
    vgg = {**params.COMMON, **get("vgg_cifar10").extra_params}
    params.validate({"augment": False}, spec=vgg)
    with pytest.raises(params.ParamError, match="key 'augment' has value 'yes'"):
        params.validate({"augment": "yes"}, spec=vgg)
    res = {**params.COMMON, **get("resnet50").extra_params}
    params.validate({"image_size": 32}, spec=res)
    with pytest.raises(params.ParamError, match="key 'image_size' has value 16; allowed: int >= 32"):
        params.validate({"image_size": 16}, spec=res)
    with pytest.raises(params.ParamError, match="unknown key 'augment'"):
        params.validate({"augment": True}, spec=res)


def test_notebook_parameters_cells_list_every_knob():
    import nbformat

    for name in MINE:
        nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
        cell = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])][0]
        names = [ln.split("=", 1)[0].strip() for ln in cell.source.splitlines() if "=" in ln]
        assert sorted(names) == sorted({**params.COMMON, **get(name).extra_params}), name
        ns: dict = {}
        exec(cell.source, ns)  # plain literals
        assert ns["workload"] == name
        for key, value in get(name).defaults.items():
            assert ns[key] == value, (name, key)
        for line in cell.source.splitlines():  # papermill's parser: no '=' in comments
            assert "=" not in line.split("#", 1)[1], line
        assert "002_51261036f2f3f066.txt" in nb.cells[0].source or name == "resnet50"
    assert "003_52c708d41ba29d8b.txt" in nbformat.read(NOTEBOOKS / "mlp_mnist.ipynb", as_version=4).cells[0].source
    assert "2,790 images/s" in nbformat.read(NOTEBOOKS / "resnet50.ipynb", as_version=4).cells[0].source


# ---------------------------------------------------------------- models


_COUNTS = script("workloads_a_counts", BUILDS_FAST, textwrap.dedent("""
        import json
        import numpy as np
        import keras
        from helpers.workloads import build_model

        def shapes(m):
            return [[layer.name, list(layer.output.shape[1:])] for layer in m.layers]

        def same(a, b):
            return bool(np.allclose(keras.ops.convert_to_numpy(a), b))

        res = {}
        for name, p in [("mlp_mnist", {}), ("cnn_mnist", {}), ("vgg_cifar10", {"augment": True}),
                        ("vgg_off", {"augment": False}), ("resnet50", {"image_size": 224})]:
            m = build_model("vgg_cifar10" if name == "vgg_off" else name, p)
            opt = m.optimizer
            r = res[name] = {"params": m.count_params(), "input": list(m.input_shape[1:]),
                             "output": list(m.output_shape[1:]),
                             "shapes": shapes(m) if name != "resnet50" else [],
                             "opt": type(opt).__name__, "lr": float(np.asarray(opt.learning_rate))}
            if name == "vgg_cifar10":
                r["lr_1e6"] = float(np.asarray(opt._learning_rate(1_000_000)))
                x = np.random.default_rng(0).uniform(size=(4, 32, 32, 3)).astype("float32")
                aug = keras.Sequential(m.layers[:2])
                r["aug_off_in_inference"] = same(aug(x, training=False), x)
                r["aug_on_in_training"] = not same(aug(x, training=True), x)
            if name == "resnet50":
                r["momentum"] = float(opt.momentum)
            if name == "cnn_mnist":
                r["rho"] = float(opt.rho)
        print("JSON" + json.dumps(res))
        """))  # among BUILDS_FAST's scripts (support/workload_points.script)


@pytest.mark.xdist_group(script_group(_COUNTS))
def test_parameter_counts_shapes_and_optimisers(workload_runs):
    out = workload_runs(BUILDS_FAST).script(_COUNTS)
    res = json.loads(out.split("JSON", 1)[1])
    mlp, cnn, vgg, off, rn = (res[k] for k in ("mlp_mnist", "cnn_mnist", "vgg_cifar10", "vgg_off", "resnet50"))
    # mnist_mlp.py: 784*512+512 + 512*512+512 + 512*10+10
    assert mlp["params"] == 669_706 == get("mlp_mnist").expected_params
    assert mlp["shapes"] == [["dense1", [512]], ["dropout1", [512]], ["dense2", [512]], ["dropout2", [512]],
                             ["logits", [10]], ["softmax", [10]]]
    assert mlp["opt"] == "RMSprop" and mlp["lr"] == pytest.approx(1e-3)
    # mnist_cnn.py: 320 + 18,496 + 9216*128+128 + 128*10+10
    assert cnn["params"] == 1_199_882 == get("cnn_mnist").expected_params
    assert cnn["input"] == [28, 28, 1] and cnn["shapes"] == [
        ["conv1", [26, 26, 32]], ["conv2", [24, 24, 64]], ["pool", [12, 12, 64]], ["dropout1", [12, 12, 64]],
        ["flatten", [9216]], ["dense1", [128]], ["dropout2", [128]], ["logits", [10]], ["softmax", [10]]]
    assert cnn["opt"] == "Adadelta" and cnn["lr"] == pytest.approx(1.0) and cnn["rho"] == pytest.approx(0.95)
    # cifar10_cnn.py: 896 + 9,248 + 18,496 + 36,928 + 2304*512+512 + 512*10+10
    assert vgg["params"] == off["params"] == 1_250_858 == get("vgg_cifar10").expected_params
    assert [s for n, s in vgg["shapes"] if n.startswith(("conv", "pool", "flatten", "dense"))] == [
        [32, 32, 32], [30, 30, 32], [15, 15, 32], [15, 15, 64], [13, 13, 64], [6, 6, 64], [2304], [512]]
    assert [n for n, _ in vgg["shapes"][:2]] == ["random_shift", "random_flip"]
    assert not any(n.startswith("random") for n, _ in off["shapes"])
    assert vgg["opt"] == "RMSprop" and vgg["lr"] == pytest.approx(1e-4)
    assert vgg["lr_1e6"] == pytest.approx(1e-4 / (1 + 1e-6 * 1e6))  # Keras 2's decay=1e-6
    assert vgg["aug_off_in_inference"] and vgg["aug_on_in_training"]
    # keras.applications.ResNet50(weights=None, classes=1000)
    assert rn["params"] == 25_636_712 == get("resnet50").expected_params  # image_size 32: the smoke test
    assert rn["input"] == [224, 224, 3] and rn["output"] == [1000]
    assert rn["opt"] == "SGD" and rn["lr"] == pytest.approx(0.1) and rn["momentum"] == pytest.approx(0.9)


# ---------------------------------------------------------------- data


def test_mnist_from_the_keras_cache(tmp_path):
    arrays = write_mnist_cache(data.keras_home())  # the autouse fixture's empty KERAS_HOME
    ds = get("cnn_mnist").load({"n_train": None, "n_val": 40, "data_source": "auto", "seed": 0})
    assert ds.source == "real" and "Keras cache" in ds.detail and str(datasets_images.mnist_cache_file()) in ds.detail
    assert ds.x_train.shape == (300, 28, 28, 1) and ds.x_train.dtype == np.float32
    np.testing.assert_allclose(ds.x_train[..., 0], arrays["x_train"] / 255.0, rtol=1e-6)
    assert ds.y_train.tolist() == arrays["y_train"].tolist() and ds.y_train.dtype == np.int64
    assert ds.x_val.shape == (40, 28, 28, 1) and ds.y_val.tolist() == arrays["y_test"][:40].tolist()
    flat = get("mlp_mnist").load({"n_train": 100, "n_val": 0, "data_source": "real", "seed": 0})
    assert flat.source == "real" and flat.x_train.shape == (100, 784) and flat.x_val is None
    # a random, reproducible subset of the training images
    again = get("mlp_mnist").load({"n_train": 100, "n_val": 0, "data_source": "real", "seed": 0})
    np.testing.assert_array_equal(flat.x_train, again.x_train)
    assert ds.n_classes == 10 and ds.extra["dataset"] == "mnist"


def test_mnist_missing_real_is_a_clear_error_and_auto_falls_back():
    with pytest.raises(data.DataError, match=r"MNIST is not in the Keras cache .* storage.googleapis.com"):
        datasets_images.load_mnist(100, 0, source="real")
    ds = datasets_images.load_mnist(100, 10, source="auto", flat=True)
    assert ds.source == "synthetic" and "neither cached" in ds.detail and "storage.googleapis.com" in ds.detail
    assert ds.x_train.shape == (100, 784) and ds.x_val.shape == (10, 784)
    assert 0 <= ds.x_train.min() and ds.x_train.max() <= 1 and set(np.unique(ds.y_train)) <= set(range(10))
    req = datasets_images.load_mnist(50, 0, source="synthetic")
    assert req.source == "synthetic" and "requested" in req.detail and req.x_train.shape == (50, 28, 28, 1)
    with pytest.raises(ValueError, match="data_source"):
        datasets_images.load_mnist(50, 0, source="cached")


def test_mnist_downloads_when_reachable(monkeypatch):
    """Not cached but reachable: keras.datasets.mnist downloads it (stubbed here: no network in tests)."""
    import types

    calls = []
    monkeypatch.setattr(datasets_images, "reachable", lambda host: calls.append(host) or True)
    x = np.zeros((20, 28, 28), np.uint8)
    y = np.arange(20, dtype=np.uint8) % 10
    fake = types.SimpleNamespace(datasets=types.SimpleNamespace(
        mnist=types.SimpleNamespace(load_data=lambda: ((x, y), (x[:5], y[:5])))))
    monkeypatch.setitem(sys.modules, "keras", fake)
    ds = datasets_images.load_mnist(None, 5, source="real")
    assert calls == ["storage.googleapis.com"]
    assert ds.source == "real" and "downloaded" in ds.detail and ds.x_train.shape == (20, 28, 28, 1)


def test_vgg_cifar10_data_real_from_cache_and_says_augmentation():
    write_cifar_cache(data.keras_home())
    ds = get("vgg_cifar10").load({"n_train": 100, "n_val": 20, "data_source": "auto", "seed": 0, "augment": True})
    assert ds.source == "real" and ds.x_train.shape == (100, 32, 32, 3) and ds.x_val.shape == (20, 32, 32, 3)
    assert "RandomShift" in ds.extra["augmentation"] and "RandomFlip" in ds.extra["augmentation"]
    keras_impl = get("vgg_cifar10").load({"n_train": 10, "n_val": 0, "data_source": "synthetic", "seed": 0,
                                          "augment": True, "augment_impl": "keras"})
    assert "RandomTranslation" in keras_impl.extra["augmentation"]
    off = get("vgg_cifar10").load({"n_train": 50, "n_val": 0, "data_source": "synthetic", "seed": 0,
                                   "augment": False})
    assert off.source == "synthetic" and off.extra["augmentation"] == "off"


def test_imagenet_shaped_is_synthetic_and_real_is_a_clear_error():
    with pytest.raises(data.DataError, match="not available for ImageNet-shaped workloads"):
        get("resnet50").load({"n_train": 8, "n_val": 0, "data_source": "real", "seed": 0, "image_size": 32})
    ds = get("resnet50").load({"n_train": 8, "n_val": 2, "data_source": "auto", "seed": 0, "image_size": 40})
    assert ds.source == "synthetic" and "no Keras loader" in ds.detail
    assert ds.x_train.shape == (8, 40, 40, 3) and ds.x_val.shape == (2, 40, 40, 3) and ds.n_classes == 1000
    assert ds.y_train.max() < 1000
    with pytest.raises(ValueError, match="n_train is required"):
        datasets_images.load_imagenet_shaped(None, 0)


def test_synthetic_images_upsample_prototypes_per_chunk():
    """1000 classes of 224 x 224 x 3: no full-size prototype per class (600 MB) is ever held."""
    import tracemalloc

    tracemalloc.start()
    x, y = data.synthetic_images(8, (224, 224, 3), 1000, seed=3)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert x.shape == (8, 224, 224, 3) and x.dtype == np.float32 and 0 <= x.min() and x.max() <= 1
    assert peak < 60 * 2**20, peak  # the images (4.8 MB), a noise bank of 16 fields and a chunk


# ---------------------------------------------------------------- every workload on every backend
# the points of support/workload_points.py, run once per backend through the code the notebooks call


def check_record(rec, name, backend, n_train, batch_size, source):
    assert rec["status"] == "ok" and rec["reason"] is None, rec.get("reason")
    assert rec["workload"] == name and rec["backend"] == backend
    assert rec["device"] == "cpu" and rec["device_used"] == "cpu"
    assert rec["model_params"] == rec["expected_params"] == get(name).expected_params
    assert rec["data_source"] == source and rec["n_train"] == n_train
    assert rec["first_epoch_s"] > 0 and len(rec["epoch_s"]) == 1 and rec["epoch_s"][0] > 0
    assert rec["samples_per_s"] == pytest.approx(n_train / rec["median_epoch_s"])
    assert rec["step_s"] == pytest.approx(rec["median_epoch_s"] / -(-n_train // batch_size))
    assert len(rec["history"]["loss"]) == 2


@pytest.mark.parametrize("backend", by_backend("mlp_mnist"))
def test_mlp_mnist_on_real_cached_mnist(workload_runs, backend):
    rec = workload_runs(backend)["mlp_mnist"]
    check_record(rec, "mlp_mnist", backend, 300, 50, "real")
    assert "Keras cache" in rec["data_detail"] and rec["data_info"]["input_shape"] == [784]
    # Keras' set_random_seed imports TensorFlow wherever it is installed (5-6 s a kernel here): the suite's own
    # seeding (helpers.point.device.set_random_seed) leaves it out on the other backends
    assert workload_runs(backend).modules("mlp_mnist") == {"tensorflow": backend == "tensorflow"}


@pytest.mark.parametrize("backend", by_backend("cnn_mnist"))
def test_cnn_mnist_synthetic(workload_runs, backend):
    rec = workload_runs(backend)["cnn_mnist"]
    check_record(rec, "cnn_mnist", backend, 100, 50, "synthetic")
    assert "neither cached" in rec["data_detail"]


@pytest.mark.parametrize("backend", by_backend("vgg_cifar10"))
def test_vgg_cifar10_with_augmentation(workload_runs, backend):
    rec = workload_runs(backend)["vgg_cifar10"]
    impl = "keras" if backend == KERAS_SHIFT else "matmul"  # Keras' RandomTranslation once, the suite's elsewhere
    check_record(rec, "vgg_cifar10", backend, 64, 32, "real")
    assert rec["params"]["augment"] is True and "RandomFlip" in rec["data_info"]["augmentation"]
    assert rec["params"]["augment_impl"] == impl
    assert ("RandomTranslation" if impl == "keras" else "RandomShift") in rec["data_info"]["augmentation"]


@pytest.mark.parametrize("backend", by_backend("resnet50"))
def test_resnet50_small_images(workload_runs, backend):
    rec = workload_runs(backend)["resnet50"]
    check_record(rec, "resnet50", backend, 8, 4, "synthetic")
    assert rec["params"]["image_size"] == 32 and "no Keras loader" in rec["data_detail"]


@pytest.mark.xdist_group(group(ONE, "real_missing"))
def test_real_data_missing_fails_the_point(workload_runs):
    """A workload's own error, in the code its notebook runs: the failed record (``Point.fail``) says why, no
    figure; the exception reaches the notebook (the runner then reports the cell's error)."""
    run = workload_runs(ONE)
    rec = run["real_missing"]
    assert rec["status"] == "failed" and "DataError" in rec["reason"] and "Keras cache" in rec["reason"]
    assert rec["samples_per_s"] is None and rec["first_epoch_s"] is None and "DataError" in rec["traceback"]
    assert run.error("real_missing").startswith("DataError")


@pytest.mark.xdist_group(group(FAST_COMPILE, "mlp_mnist_accuracy"))  # the accuracy chunk
@pytest.mark.parametrize("name", [a[0] for a in ACCURACY])
def test_synthetic_accuracy_rises_above_chance(workload_runs, name):
    rec = workload_runs(FAST_COMPILE)[f"{name}_accuracy"]
    acc, loss = rec["history"]["accuracy"], rec["history"]["loss"]
    print(f"ACCURACY {name} {FAST_COMPILE}: {[round(a, 3) for a in acc]}")
    assert rec["status"] == "ok" and rec["workload"] == name and rec["data_source"] == "synthetic"
    assert acc[-1] > 0.25 and acc[-1] > acc[0], acc
    assert loss[-1] < loss[0], loss
