"""cnn_256 (seed 001) and catsdogs (seed 004): models, the image generator, notebooks end to end."""

import json
import os

import numpy as np
import pytest
from support import ONE, write_archive
from support.workload_points import (
    BUILDS_FAST,
    CATSDOGS_VARIANT,
    SOURCE_SIZE,
    by_backend,
    group,
    script,
    script_group,
)

from helpers import params
from helpers.data import loaders as data
from helpers.data.image_augment import Augment, apply_affine, prepare_batch, random_affine
from helpers.data.image_folders import load_images, scan_classes, split_dirs
from helpers.data.image_plan import synthetic_pool
from helpers.workloads import catsdogs, cnn_256, get

# ---------------------------------------------------------------- models


_COUNTS = script(
    "workloads_b_counts", BUILDS_FAST,
        "import json\n"
        "from helpers.workloads import get, cnn_256, catsdogs\n"
        "m = get('cnn_256').build({'image_size': 0})\n"
        "res = {'table': [[n, list(s), p] for n, s, p in cnn_256.layer_table(m)],\n"
        "       'total': m.count_params(), 'trainable': cnn_256.trainable_params(m),\n"
        "       'diffs': cnn_256.compare_layers(m)}\n"
        "import keras\n"
        "for v in catsdogs.VARIANTS:\n"
        "    mv = get('catsdogs').build({'variant': v, 'image_size': 0})\n"
        "    res[v] = [mv.count_params(), sum(isinstance(x, keras.layers.Conv2D) for x in mv.layers),\n"
        "              list(mv.input_shape[1:]), list(mv.output_shape[1:])]\n"
        "print('JSON' + json.dumps(res))\n")  # among BUILDS_FAST's scripts (support/workload_points.script)


@pytest.mark.xdist_group(script_group(_COUNTS))
def test_parameter_counts_and_cnn_256_layer_table(workload_runs):
    out = workload_runs(BUILDS_FAST).script(_COUNTS)
    res = json.loads(out.split("JSON", 1)[1])
    # seed 001's model.summary(), layer for layer: name, output shape, parameters
    assert [tuple([n, tuple(s), p]) for n, s, p in res["table"]] == list(cnn_256.SOURCE_TABLE)
    assert res["diffs"] == []
    assert res["total"] == 58_091_396 == get("cnn_256").expected_params
    assert res["trainable"] == 58_088_516
    assert res["total"] - res["trainable"] == 2_880
    assert res["original"] == [3_937_409, 1, [64, 64, 3], [1]]
    assert res["improved"] == [1_625_281, 2, [64, 64, 3], [1]]
    assert res["highres"] == [1_681_537, 3, [128, 128, 3], [1]]
    assert res["deep"][0] == 1_064_801 and res["deep"][1] >= 30 and res["deep"][2] == [64, 64, 3]
    assert {v: res[v][0] for v in catsdogs.VARIANTS} == catsdogs.VARIANT_PARAMS


def test_source_batch_gives_153_steps():
    assert cnn_256.SOURCE_IMAGES == 9792 and -(-cnn_256.SOURCE_IMAGES // 64) == 153
    assert get("cnn_256").defaults["batch_size"] == 64 and get("catsdogs").defaults["batch_size"] == 32


def test_workload_knobs_validate():
    spec = {**params.COMMON, **get("catsdogs").extra_params}
    params.validate({"variant": "deep", "workers": 4, "augment": False, "data_dir": ""}, spec=spec)
    with pytest.raises(params.ParamError, match="key 'variant' has value 'vgg'"):
        params.validate({"variant": "vgg"}, spec=spec)
    with pytest.raises(params.ParamError, match="key 'workers' has value 0"):
        params.validate({"workers": 0}, spec=spec)
    with pytest.raises(params.ParamError, match="key 'augment'"):
        params.validate({"augment": "yes"}, spec={**params.COMMON, **get("cnn_256").extra_params})


# ---------------------------------------------------------------- the generator


_AFFINE = script(
    "workloads_b_affine", ONE,
        "import numpy as np\n"
        "from scipy.ndimage import gaussian_filter\n"
        "from keras.src.legacy.preprocessing.image import apply_affine_transform\n"
        "from helpers.data.image_augment import Augment, apply_affine, random_affine\n"
        "rng = np.random.default_rng(0)\n"
        "img = gaussian_filter(rng.uniform(0, 255, (32, 40, 3)), (2, 2, 0)).astype(np.uint8)\n"
        "ref = apply_affine_transform(img.astype(np.float32), theta=20, tx=3, ty=-4, shear=10, zx=1.1, zy=0.9,\n"
        "    row_axis=0, col_axis=1, channel_axis=2, fill_mode='nearest', order=1)\n"
        "class Fixed:\n"
        "    k = 0\n"
        "    def uniform(self, lo, hi, n):\n"
        "        self.k += 1\n"
        "        return {1: np.array([20.0]), 2: np.array([3 / 32]), 3: np.array([-4 / 40]),\n"
        "                4: np.array([10.0])}.get(self.k, np.array([[1.1], [0.9]]))\n"
        "    def random(self, n):\n"
        "        return np.array([1.0])\n"
        "aug = Augment(rotation_range=30, width_shift_range=.1, height_shift_range=.1, shear_range=15,\n"
        "                     zoom_range=.2)\n"
        "ours = apply_affine(img[None], random_affine(Fixed(), 1, 32, 40, aug))[0]\n"
        "print('MAXDIFF', np.abs(ours.astype(np.float32) - ref).max())\n")  # in ONE's chunk of scripts


@pytest.mark.xdist_group(script_group(_AFFINE))
def test_augmentation_matches_keras_image_data_generator(workload_runs):
    """The numpy/PIL transform equals Keras' own apply_affine_transform (scipy) up to rounding."""
    pytest.importorskip("scipy")  # Keras' legacy transform needs it (installed with jax)
    out = workload_runs(ONE).script(_AFFINE)
    assert float(out.split("MAXDIFF", 1)[1]) <= 1.0  # uint8 rounding


def test_augmentation_identity_flip_and_rescale():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (6, 16, 20, 3), dtype=np.uint8)
    assert np.array_equal(apply_affine(x, random_affine(rng, 6, 16, 20, Augment())), x)
    out = apply_affine(x, random_affine(rng, 6, 16, 20, Augment(horizontal_flip=True)))
    flipped = [np.array_equal(o, xi[:, ::-1]) for o, xi in zip(out, x)]
    assert all(f or np.array_equal(o, xi) for f, o, xi in zip(flipped, out, x)) and any(flipped)
    b = prepare_batch(x, None, None)
    assert b.dtype == np.float32 and np.allclose(b * 255, x)
    a = prepare_batch(x, np.random.default_rng(1), catsdogs.AUGMENT)
    assert a.shape == x.shape and 0 <= a.min() and a.max() <= 1 and not np.allclose(a * 255, x)


def test_directory_layout_is_found(tmp_path):
    root = write_archive(tmp_path / "cats-and-dogs")
    train, val = split_dirs(root)
    assert train == root / "training_set" / "training_set" and val == root / "test_set" / "test_set"
    paths, labels, classes = scan_classes(train)
    assert classes == ["cats", "dogs"] and len(paths) == 24 and labels.tolist() == [0] * 12 + [1] * 12
    x = load_images(paths[:5], (64, 64))
    assert x.shape == (5, 64, 64, 3) and x.dtype == np.uint8
    # the class folders given directly
    assert split_dirs(train) == (train, None)


def test_real_without_data_dir_is_a_clear_error():
    p = {**params.COMMON_DEFAULTS, **get("catsdogs").defaults, "data_source": "real"}
    with pytest.raises(data.DataError, match="no data_dir"):
        get("catsdogs").load(p)


def test_synthetic_pool_is_bounded_and_learnable():
    x, y = synthetic_pool(5000, (256, 256, 3), 4, seed=0, max_bytes=64 * 2**20)
    assert x.dtype == np.uint8 and len(x) == 64 * 2**20 // (256 * 256 * 3) and set(y.tolist()) <= {0, 1, 2, 3}
    xs, ys = synthetic_pool(400, (32, 32, 3), 2, seed=1)
    xv, yv = synthetic_pool(200, (32, 32, 3), 2, seed=2)
    means = np.stack([xs[ys == k].reshape(-1, 3072).mean(0) for k in range(2)])
    d = ((xv.reshape(-1, 1, 3072).astype(np.float32) - means[None]) ** 2).sum(-1)
    assert (d.argmin(1) == yv).mean() > 0.8


# ---------------------------------------------------------------- every workload on every backend
# the points of support/workload_points.py, run once per backend through the code the notebooks call


def _assert_ok(rec, backend, n_train, epochs):
    assert rec["status"] == "ok" and rec["reason"] is None
    assert rec["backend"] == backend and rec["device"] == "cpu" and rec["device_used"] == "cpu"
    assert rec["n_train"] == n_train and rec["first_epoch_s"] > 0 and len(rec["epoch_s"]) == epochs - 1
    assert rec["samples_per_s"] == pytest.approx(n_train / rec["median_epoch_s"])
    assert len(rec["history"]["loss"]) == epochs


@pytest.mark.parametrize("backend", by_backend("cnn_256"))
def test_cnn_256_on_cpu_at_source_size(workload_runs, backend):
    """One backend trains the source's network at 256x256 (58,091,396 parameters; one step of 8 images per epoch);
    the others the same network at 64x64 (its dense layer smaller)."""
    rec = workload_runs(backend)["cnn_256"]
    _assert_ok(rec, backend, 8, 2)
    at_source = backend == SOURCE_SIZE
    assert rec["expected_params"] == 58_091_396  # the source's network
    assert rec["model_params"] == (58_091_396 if at_source else 3_565_444)
    if at_source:
        assert rec["workload_info"]["trainable_params"] == 58_088_516
        assert rec["workload_info"]["non_trainable_params"] == 2_880
    assert rec["data_source"] == "synthetic" and rec["steps_per_epoch"] == 1
    info = rec["data_info"]
    assert info["augment"] is True and info["augment_params"]["rotation_range"] == 25 and info["workers"] == 1
    assert info["image_size"] == ([256, 256] if at_source else [64, 64])


@pytest.mark.parametrize("backend", by_backend("catsdogs"))
def test_catsdogs_on_cpu_writes_a_full_record(workload_runs, backend):
    variant = CATSDOGS_VARIANT[backend]  # one each
    rec = workload_runs(backend)["catsdogs"]
    _assert_ok(rec, backend, 48, 2)
    assert rec["model_params"] == catsdogs.VARIANT_PARAMS[variant] and rec["expected_params"] is None
    assert rec["data_source"] == "synthetic" and rec["steps_per_epoch"] == 3
    info = rec["data_info"]
    assert info["variant"] == variant and info["workers"] == 2 and info["augment"] is (backend != "torch")
    assert info["image_size"] == [catsdogs.VARIANT_SIZE[variant]] * 2
    assert rec["workload_info"]["conv_layers"] == catsdogs.conv_layers(variant)


@pytest.mark.xdist_group(group(ONE, "catsdogs_archive"))
def test_catsdogs_reads_the_archive_layout(workload_runs):
    rec = workload_runs(ONE)["catsdogs_archive"]
    _assert_ok(rec, ONE, 24, 2)
    assert rec["data_source"] == "real" and rec["n_val"] == 6 and rec["steps_per_epoch"] == 3
    info = rec["data_info"]
    assert info["classes"] == ["cats", "dogs"] and info["n_files"] == 24
    assert info["train_dir"].endswith(os.path.join("training_set", "training_set"))
    assert info["val_dir"].endswith(os.path.join("test_set", "test_set"))
    assert "val_loss" in rec["history"]


@pytest.mark.xdist_group(group(ONE, "catsdogs_accuracy"))
def test_catsdogs_synthetic_accuracy_rises_above_chance(workload_runs):
    rec = workload_runs(ONE)["catsdogs_accuracy"]
    acc = rec["history"]["accuracy"]
    assert acc[-1] > 0.7, acc  # chance is 0.5
    assert rec["history"]["loss"][-1] < rec["history"]["loss"][0]
