"""custom: your own .keras model as a workload: knobs, refusals, label spaces, notebooks end to end."""

import hashlib
import json
import re
import textwrap
from pathlib import Path

import nbformat
import pytest
from support import in_fresh_python

from helpers import grid, params
from helpers.paths import NOTEBOOKS
from helpers.point import device
from helpers.workloads import custom, get

INSTALLED = [b for b in ("tensorflow", "jax", "torch") if device.backend_installed(b)]
RUN = "jax" if "jax" in INSTALLED else INSTALLED[0]  # the notebooks run here ...
SAVE = next((b for b in ("torch", "tensorflow", "jax") if b in INSTALLED and b != RUN), RUN)  # ... the files saved here
OTHER = next((b for b in INSTALLED if b not in (RUN, SAVE)), RUN)
pytestmark = pytest.mark.xdist_group("custom")  # the models are saved once (``saved``), on the worker that runs these

SAVE_MODELS = """
import json, sys
import numpy as np
import keras
from keras import layers

out = sys.argv[1] if len(sys.argv) > 1 else {out!r}
clf = keras.Sequential([keras.Input((12,)), layers.Dense(16, activation="relu"), layers.Dense(4, activation="softmax")],
                       name="my_classifier")
clf.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
clf.save(f"{{out}}/clf.keras")
text = keras.Sequential([keras.Input((20,), dtype="int32"), layers.Embedding(50, 8), layers.GlobalAveragePooling1D(),
                         layers.Dense(1, activation="sigmoid")], name="my_text")
text.save(f"{{out}}/text.keras")  # not compiled: the loss and optimizer knobs are needed
keras.Sequential([keras.Input((None,), dtype="int32"), layers.Embedding(50, 8), layers.GlobalAveragePooling1D(),
                  layers.Dense(1, activation="sigmoid")]).save(f"{{out}}/any_length.keras")
reg = keras.Sequential([keras.Input((6,)), layers.Dense(8, activation="relu"), layers.Dense(2)], name="my_regression")
reg.compile(optimizer="sgd", loss="mse")
reg.save(f"{{out}}/reg.keras")
a, b = keras.Input((4,), name="tokens"), keras.Input((3,), name="numbers")
keras.Model([a, b], layers.Dense(1)(layers.Concatenate()([a, b]))).save(f"{{out}}/two.keras")

@keras.saving.register_keras_serializable(package="cgbtest")
class Twice(layers.Layer):
    def call(self, x):
        return 2 * x

cust = keras.Sequential([keras.Input((5,)), Twice(), layers.Dense(1, activation="sigmoid")])
cust.compile(optimizer="sgd", loss="binary_crossentropy")
cust.save(f"{{out}}/cust.keras")
rng = np.random.default_rng(0)
np.savez(f"{{out}}/reg.npz", x=rng.random((200, 6), dtype=np.float32), y=rng.standard_normal((200, 2)))
np.savez(f"{{out}}/clf.npz", x=rng.random((100, 12), dtype=np.float32), y=rng.integers(0, 4, 100))
np.savez(f"{{out}}/bad_x.npz", x=rng.random((100, 13), dtype=np.float32), y=rng.integers(0, 4, 100))
np.savez(f"{{out}}/bad_y.npz", x=rng.random((100, 12), dtype=np.float32), y=rng.integers(0, 4, (100, 3)))
np.savez(f"{{out}}/no_y.npz", x=rng.random((100, 12), dtype=np.float32))
counts = {{"clf": clf.count_params(), "text": text.count_params(), "reg": reg.count_params()}}
print("JSON" + json.dumps({{"params": counts, "layers": {{"clf": len(clf.layers), "text": len(text.layers)}}}}))
"""

LAYERS_MODULE = textwrap.dedent("""
    import keras


    @keras.saving.register_keras_serializable(package="cgbtest")
    class Twice(keras.layers.Layer):
        def call(self, x):
            return 2 * x
    """)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The test models and data, saved once under SAVE (another backend than the notebooks run on)."""
    d = tmp_path_factory.mktemp("models")
    out = in_fresh_python(SAVE_MODELS.format(out=str(d)), SAVE)
    (d / "not_a_model.keras").write_text("a text file, not a zip\n")
    (d / "cgb_test_layers.py").write_text(LAYERS_MODULE)  # registers Twice: found next to the model file
    (d / "cgb_test_empty.py").write_text("X = 1\n")  # importable, registers nothing
    return d, json.loads(out.split("JSON", 1)[1])


def base(**kw) -> dict:
    return {"data_source": "auto", "data_path": "", "loss": "", "optimizer": "", "learning_rate": None,
            "import_modules": "", **kw}


def refused(fn, *needles):
    with pytest.raises(params.ParamError) as err:
        fn()
    for n in needles:
        assert n in str(err.value), (n, str(err.value))
    return str(err.value)


# ---------------------------------------------------------------- registry, knobs, notebook


def test_registry_entry_and_notebook_parameters():
    w = get("custom")
    assert w.expected_params is None and w.describe is not None
    assert set(w.extra_params) == {"model_path", "data_path", "loss", "optimizer", "learning_rate", "import_modules"}
    assert "model_path" not in w.defaults and set(w.extra_params) - {"model_path"} <= set(w.defaults)
    assert w.defaults["n_train"] == 2048
    spec = {**params.COMMON, **w.extra_params}
    params.validate({k: v for k, v in w.defaults.items()}, spec=spec)
    nb = nbformat.read(NOTEBOOKS / "custom.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None
    cell = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])][0]
    names = [ln.split("=", 1)[0].strip() for ln in cell.source.splitlines() if "=" in ln]
    assert sorted(names) == sorted(spec)
    ns: dict = {}
    exec(cell.source, ns)
    assert ns["workload"] == "custom" and ns["model_path"] == ""
    for key, value in w.defaults.items():
        assert ns[key] == value, key
    for line in cell.source.splitlines():
        assert "#" in line and "=" not in line.split("#", 1)[1], line  # a comment each; papermill's parser
    setup = [c.source for c in nb.cells if "begin(globals())" in c.source][0]
    assert "check_point(pt.params)" in setup  # the knobs against each other, in the first cell


def test_knob_types_validate_like_any_other_key():
    spec = {**params.COMMON, **get("custom").extra_params}
    params.validate({"loss": "mse", "optimizer": "adam", "learning_rate": 0.01, "import_modules": "a, b.c"}, spec=spec)
    params.validate({"loss": None, "optimizer": None, "learning_rate": None}, spec=spec)
    refused(lambda: params.validate({"loss": "hinge"}, "g", spec=spec), "key 'loss' has value 'hinge'")
    refused(lambda: params.validate({"optimizer": "Adam!"}, "g", spec=spec), "key 'optimizer'")
    refused(lambda: params.validate({"learning_rate": 0}, "g", spec=spec), "key 'learning_rate'")
    refused(lambda: params.validate({"import_modules": "my-layers"}, "g", spec=spec), "key 'import_modules'")
    refused(lambda: params.validate({"import_modules": "helpers.point.session"}, "g", spec=spec),
            "not the suite's helpers")
    refused(lambda: params.validate({"model_path": ""}, "g", spec=spec), "key 'model_path' is required")


# ---------------------------------------------------------------- refused before anything runs (no Keras)


def _grid(tmp_path, block: str) -> Path:
    g = tmp_path / "g.yaml"
    g.write_text("points:\n  - workload: custom\n    backend: [tensorflow, jax, torch]\n    device: [cpu, gpu]\n"
                 + textwrap.indent(textwrap.dedent(block), "    "))
    return g


def test_grid_validation_refuses_bad_files_naming_the_key(saved, tmp_path, monkeypatch):
    d, _ = saved
    ok = grid.expand(_grid(tmp_path, f"model_path: {d / 'clf.keras'}\ndata_path: {d / 'clf.npz'}\n"))
    assert len(ok) == 6 and {p["model_path"] for p in ok} == {str(d / "clf.keras")} and ok[0]["n_train"] == 2048
    cases = [
        ("batch_size: 8\n", ["missing keys ['model_path']"]),
        (f"model_path: {d / 'missing.keras'}\n", ["key 'model_path'", "does not exist"]),
        (f"model_path: {d / 'not_a_model.keras'}\n", ["key 'model_path'", "not a .keras archive"]),
        (f"model_path: {d / 'reg.npz'}\n", ["key 'model_path'", "is not a .keras file"]),
        (f"model_path: {d / 'two.keras'}\n", ["key 'model_path'", "2 inputs", "'tokens' (None, 4)",
                                              "'numbers' (None, 3)", "the suite feeds one input"]),
        (f"model_path: {d / 'clf.keras'}\ndata_path: {d / 'nope.npz'}\n", ["key 'data_path'", "does not exist"]),
        (f"model_path: {d / 'clf.keras'}\ndata_path: {d / 'no_y.npz'}\n", ["key 'data_path'", "no array 'y'"]),
    ]
    for block, needles in cases:
        with pytest.raises(grid.GridError) as err:
            grid.expand(_grid(tmp_path, block))
        assert re.search(r"g\.yaml:\d+: points\[1\]", str(err.value)), str(err.value)  # file:line
        for n in needles:
            assert n in str(err.value), (n, str(err.value))
    # a relative path: the current directory first, then $PWD, then the project root
    monkeypatch.chdir(d)
    assert custom.resolve("clf.keras")[0] == (d / "clf.keras").resolve()
    assert grid.expand(_grid(tmp_path, "model_path: clf.keras\n"))[0]["model_path"] == "clf.keras"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PWD", str(d))
    assert custom.resolve("clf.keras")[0] == (d / "clf.keras").resolve()
    monkeypatch.delenv("PWD")
    path, tried = custom.resolve("clf.keras")
    assert path is None and tried[0] == tmp_path / "clf.keras" and tried[-1].parent == custom.PROJECT_ROOT


def test_first_cell_checks_the_knobs_against_each_other(saved):
    d, _ = saved
    assert custom.check_point(base(model_path=str(d / "clf.keras")))["loss_from"] == "saved compile config"
    refused(lambda: custom.check_point(base(model_path=str(d / "text.keras"))),
            "keys 'loss' and 'optimizer' empty", "no compile config (saved before model.compile)",
            "sparse_categorical_crossentropy", "adam")
    picked = custom.check_point(base(model_path=str(d / "text.keras"), loss="binary_crossentropy", optimizer="adam"))
    assert picked["label_space"] == "binary" and picked["optimizer_from"] == "knob"
    msg = refused(lambda: custom.check_point(base(model_path=str(d / "cust.keras"))),
                  "key 'model_path'", "cgbtest>Twice", "key 'import_modules' is empty",
                  "@keras.saving.register_keras_serializable(package='cgbtest')", "PYTHONPATH",
                  "import_modules: my_layers")
    print("REFUSAL", msg)
    refused(lambda: custom.check_point(base(model_path=str(d / "cust.keras"), import_modules="no_such_module_x")),
            "key 'import_modules'", "'no_such_module_x' is not importable")
    custom.check_point(base(model_path=str(d / "cust.keras"), import_modules="cgb_test_layers"))  # next to the model
    refused(lambda: custom.check_point(base(model_path=str(d / "clf.keras"), data_path=str(d / "bad_x.npz"))),
            "key 'data_path'", "array 'x'", "(100, 13)", "(None, 12)", "each sample must be (12,)")
    refused(lambda: custom.check_point(base(model_path=str(d / "any_length.keras"), loss="mse", optimizer="sgd")),
            "key 'data_path' is empty", "(None, None)", "unknown size")
    refused(lambda: custom.check_point(base(model_path=str(d / "clf.keras"), data_source="real")),
            "key 'data_source' is 'real' but key 'data_path' is empty")


# ---------------------------------------------------------------- the model side (Keras, a fresh interpreter)


def test_label_spaces_precision_and_load_refusals_under_keras(saved):
    d, _ = saved
    code = textwrap.dedent(f"""
        import json
        import numpy as np
        import keras
        from helpers.params import ParamError
        from helpers.workloads import build_model, get, load_data

        d = {str(d)!r}
        base = dict(data_source="auto", data_path="", loss="", optimizer="", learning_rate=None, import_modules="",
                    n_train=64, n_val=8, seed=0, jit_compile="auto")
        res = {{}}

        def data(name, **kw):
            ds = load_data("custom", {{**base, "model_path": f"{{d}}/{{name}}.keras", **kw}})
            return {{"x": [list(ds.x_train.shape), str(ds.x_train.dtype), float(ds.x_train.min()),
                           float(ds.x_train.max())],
                    "y": [list(ds.y_train.shape), str(ds.y_train.dtype),
                          sorted({{float(v) for v in ds.y_train.ravel()}})[:6]],
                    "val": list(ds.x_val.shape), "source": ds.source, "info": ds.extra}}

        def refusal(fn):
            try:
                fn()
            except ParamError as exc:
                return str(exc)
            return "not refused"

        res["clf"] = data("clf")
        res["text"] = data("text", loss="binary_crossentropy", optimizer="adam")
        res["onehot"] = data("clf", loss="categorical_crossentropy")
        res["reg"] = data("reg")
        res["npz"] = data("clf", data_path=f"{{d}}/clf.npz", n_train=None)
        res["bad_y"] = refusal(lambda: data("clf", data_path=f"{{d}}/bad_y.npz"))
        res["one_unit"] = refusal(lambda: data("text", loss="sparse_categorical_crossentropy", optimizer="adam"))
        res["unregistered"] = refusal(lambda: data("cust", import_modules="cgb_test_empty"))
        res["registered"] = data("cust", import_modules="cgb_test_layers")["info"]["label_space"]

        # mixed precision: rebuilt under the policy, output layer float32, the saved weights kept
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
        p = {{**base, "model_path": f"{{d}}/clf.keras", "learning_rate": 0.5}}
        m = build_model("custom", p)
        saved = keras.saving.load_model(f"{{d}}/clf.keras", compile=False)
        res["mixed"] = {{"policies": [la.dtype_policy.name for la in m.layers],
                        "same_weights": all(np.allclose(a, b) for a, b in zip(m.get_weights(), saved.get_weights())),
                        "lr": float(np.asarray(m.optimizer.learning_rate)),
                        "info": {{k: v for k, v in get("custom").describe(m, p).items() if k != "sha256"}}}}
        keras.mixed_precision.set_global_policy("float32")
        m = build_model("custom", {{**base, "model_path": f"{{d}}/clf.keras"}})
        res["float32"] = [type(m.optimizer).__name__, float(np.asarray(m.optimizer.learning_rate)),
                          [la.dtype_policy.name for la in m.layers]]
        print("JSON" + json.dumps(res))
        """)
    res = json.loads(in_fresh_python(code, OTHER).split("JSON", 1)[1])
    clf, text, onehot, reg, npz = (res[k] for k in ("clf", "text", "onehot", "reg", "npz"))
    # a softmax classifier, sparse_categorical_crossentropy: integer classes in [0, 4); inputs float32 in [0, 1]
    assert clf["x"][:2] == [[64, 12], "float32"] and 0 <= clf["x"][2] and clf["x"][3] <= 1
    assert clf["y"][0] == [64] and clf["y"][1] == "int64" and set(clf["y"][2]) <= {0, 1, 2, 3}
    assert len(set(clf["y"][2])) >= 2 and clf["val"] == [8, 12] and clf["source"] == "synthetic"
    assert clf["info"]["label_space"] == "sparse" and clf["info"]["n_classes"] == 4
    assert clf["info"]["output_activation"] == "softmax" and clf["info"]["input_kind"] == "float"
    # an Embedding first: token ids in [0, input_dim); one sigmoid unit, binary_crossentropy: 0/1
    assert text["x"][:2] == [[64, 20], "int32"] and 0 <= text["x"][2] and text["x"][3] < 50
    assert text["info"]["input_kind"] == "token ids" and text["info"]["vocab"] == 50
    assert text["y"][0] == [64, 1] and text["y"][2] == [0.0, 1.0] and text["info"]["label_space"] == "binary"
    assert onehot["y"][:2] == [[64, 4], "float32"] and onehot["y"][2] == [0.0, 1.0]
    # a linear output with mse: float targets of the output's shape
    assert reg["y"][:2] == [[64, 2], "float32"] and reg["info"]["label_space"] == "regression"
    assert npz["source"] == "real" and npz["x"][0] == [92, 12] and npz["val"] == [8, 12]  # 100 rows: 8 held out
    assert "key 'data_path'" in res["bad_y"] and "array 'y'" in res["bad_y"] and "(100, 3)" in res["bad_y"]
    assert "key 'loss'" in res["one_unit"] and "1 unit" in res["one_unit"] and "binary_crossentropy" in res["one_unit"]
    unreg = res["unregistered"]
    assert "key 'model_path'" in unreg and "Could not locate class 'Twice'" in unreg, unreg
    assert "register_keras_serializable(package='cgbtest')" in unreg and "import_modules" in unreg
    assert res["registered"] == "binary"
    mixed = res["mixed"]
    assert mixed["policies"] == ["mixed_bfloat16", "float32"] and mixed["same_weights"], mixed
    assert mixed["lr"] == pytest.approx(0.5) and mixed["info"]["rebuilt"] is True
    assert mixed["info"]["float32_layers"] == [mixed["info"]["output_layer"]]  # only the output layer
    assert mixed["info"]["precision"] == "mixed_bfloat16" and mixed["info"]["weights"] == "saved"
    assert res["float32"] == ["Adam", pytest.approx(0.01), ["float32", "float32"]]  # the saved optimizer


# ---------------------------------------------------------------- notebooks (papermill, fresh kernels)


def run_nb(kernel, tmp_path, **prm):
    import papermill as pm

    prm.setdefault("output_dir", str(tmp_path / "records"))
    prm.setdefault("min_steady_s", 1e-6)  # behaviour, not timing: `epochs` epochs, however short
    prm.setdefault("epochs", 2)
    prm.setdefault("device", "cpu")
    pm.execute_notebook(str(NOTEBOOKS / "custom.ipynb"), str(tmp_path / "custom.ipynb"), parameters=prm,
                        kernel_name=kernel, progress_bar=False, cwd=str(NOTEBOOKS))
    files = list((tmp_path / "records").glob("*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


def check_ok(rec, backend, n_train):
    assert rec["status"] == "ok" and rec["reason"] is None, rec.get("reason")
    assert rec["workload"] == "custom" and rec["backend"] == backend and rec["device_used"] == "cpu"
    assert rec["samples_per_s"] > 0 and rec["n_train"] == n_train and len(rec["history"]["loss"]) >= 2
    assert rec["expected_params"] is None and rec["model_params"] == rec["workload_info"]["params"]
    print(f"CUSTOM {rec['workload_info']['model_name']} {backend}: {rec['samples_per_s']:.0f} samples/s")


def test_notebook_times_a_model_saved_under_another_backend(kernel, tmp_path, saved):
    d, facts = saved
    rec = run_nb(kernel, tmp_path, backend=RUN, model_path=str(d / "clf.keras"), batch_size=64, n_train=512)
    check_ok(rec, RUN, 512)
    info = rec["workload_info"]
    assert rec["data_source"] == "synthetic" and "learnable" in rec["data_detail"]
    assert info["sha256"] == hashlib.sha256((d / "clf.keras").read_bytes()).hexdigest()
    assert info["params"] == facts["params"]["clf"] and info["layers"] == facts["layers"]["clf"] == 2
    assert info["input_shape"] == [None, 12] and info["output_shape"] == [None, 4]
    assert info["label_space"] == "sparse" and info["model_name"] == "my_classifier"
    assert info["loss_from"] == info["optimizer_from"] == "saved compile config" and info["optimizer"] == "Adam"
    assert info["rebuilt"] is False and info["model_path"] == str(d / "clf.keras")
    assert rec["data_info"]["n_classes"] == 4 and "accuracy" in rec["history"]
    # no GPU measured it: the report's verdict predicts its GPU side, each backend with its interval and the mark
    assert rec["model_shape"] == {"layers": 2, "launches": 2, "weights": 4, "input_bytes": 48}
    from helpers import report
    from helpers.report.publish import sections
    from helpers.report.publish.csvs import verdict_frame

    report.setup_plots()
    ctx = report.build_context([tmp_path / "records"], use_reference=False)
    page = sections.build(sections.get("verdict"), ctx)._repr_html_()
    assert [r["kind"] for r in rec["model_layers"]] == ["Dense", "Dense"]
    assert all(r["flops"] > 0 and r["bytes"] > 0 and r["units"] == 1 for r in rec["model_layers"])
    # every GPU kind: the H200 layer by layer (JAX, PyTorch), the reference's H100 whole-model (three backends)
    assert "custom, batch 64, float32: predicted, not measured, on one NVIDIA H100" in page
    assert "custom, batch 64, float32: predicted, not measured, on one NVIDIA H200 (layer by layer" in page
    assert page.count("samples/s (80% interval ") == 5 and "held out in turn" in page
    assert page.count("an epoch of 512 samples ") == 5 and page.count(" s, $") == 5  # every GPU priced
    rows = verdict_frame(ctx)
    assert list(rows["figure"]) == ["predicted"] * 5 and list(rows["marks"]) == ["predicted"] * 5
    assert sum("NVIDIA H200" in s for s in rows["sides"]) == 2
    assert (rows["gpu_samples_per_s_low"] < rows["gpu_samples_per_s_median"]).all()
    assert (rows["gpu_samples_per_s_median"] < rows["gpu_samples_per_s_high"]).all()


def test_notebook_text_model_with_knobs(kernel, tmp_path, saved):
    d, facts = saved
    rec = run_nb(kernel, tmp_path, backend=SAVE, model_path=str(d / "text.keras"), batch_size=32, n_train=256,
                 loss="binary_crossentropy", optimizer="rmsprop", learning_rate=0.01)
    check_ok(rec, SAVE, 256)
    info = rec["workload_info"]
    assert info["input_kind"] == "token ids" and info["vocab"] == 50 and info["label_space"] == "binary"
    assert info["loss_from"] == "knob" and info["optimizer"] == "RMSprop"
    assert info["learning_rate"] == pytest.approx(0.01)
    assert info["params"] == facts["params"]["text"] and rec["params"]["loss"] == "binary_crossentropy"


def test_notebook_regression_on_an_npz(kernel, tmp_path, saved):
    d, _ = saved
    rec = run_nb(kernel, tmp_path, backend=RUN, model_path=str(d / "reg.keras"), data_path=str(d / "reg.npz"),
                 batch_size=50, n_train=150)
    check_ok(rec, RUN, 150)
    assert rec["data_source"] == "real" and "150 of 200 rows" in rec["data_detail"]
    assert rec["workload_info"]["label_space"] == "regression" and "accuracy" not in rec["history"]


@pytest.mark.parametrize("case", ["bad_x", "unregistered"])
def test_notebook_refuses_in_its_first_cell(kernel, tmp_path, saved, case):
    import papermill as pm

    d, _ = saved
    prm, needles = {
        "bad_x": ({"model_path": str(d / "clf.keras"), "data_path": str(d / "bad_x.npz")},
                  ["key 'data_path'", "(100, 13)", "(None, 12)"]),
        "unregistered": ({"model_path": str(d / "cust.keras")},
                         ["key 'model_path'", "cgbtest>Twice", "register_keras_serializable(package='cgbtest')"]),
    }[case]
    with pytest.raises(pm.PapermillExecutionError) as err:
        run_nb(kernel, tmp_path, backend=RUN, **prm)
    assert err.value.ename == "ParamError" and "check_point(pt.params)" in err.value.source
    for n in needles:
        assert n in err.value.evalue, (n, err.value.evalue)
    assert not (tmp_path / "records").exists()  # refused before Keras was imported: nothing ran
