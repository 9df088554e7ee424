"""custom and --predict: untrusted models, round 5 (issue 74, items 2, 6 and 9).

2. A model's folder never runs code: a ``keras_nlp/__init__.py`` beside a ``.keras`` whose config names a keras_nlp
   module never runs, under ``--predict`` (the runner's process, then a ``python -I`` child in a fresh folder) nor in
   a custom point's load (``custom.load_model``, the kernel's path); ``import_modules`` finds exactly the modules it
   names beside the model, and never keras / keras_nlp / keras_hub / keras_cv / helpers.
6. What a small archive asks Keras to build is bounded from its config before Keras builds anything (parameters,
   layers, Sequential length, graph depth, loader passes: ``custom_size``), and Keras' extract folder is never
   beside the model.
9. ``--predict``'s options: ``--samples`` and ``--batch-size`` bounded, a grid beside ``--predict`` refused, an
   uncompiled model predicted with a stated default loss and optimiser (``--optimizer`` to choose).

Each: the exit status, the message, nothing written beside the model (or anywhere outside the test's folders), and
good input still working."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest
from support import fresh_env, in_fresh_python

from helpers.exits import Exit
from helpers.paths import PROJECT_ROOT

pytestmark = pytest.mark.xdist_group("custom")

SAVE = """
import sys, keras
from keras import layers
out = sys.argv[1] if len(sys.argv) > 1 else {out!r}
m = keras.Sequential([keras.Input((12,)), layers.Dense(16, activation="relu"), layers.Dense(4, activation="softmax")])
m.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
m.save(f"{{out}}/good.keras")
keras.Sequential([keras.Input((12,)), layers.Dense(3)]).save(f"{{out}}/bare.keras")  # uncompiled

@keras.saving.register_keras_serializable(package="cgbhostile")
class Twice(layers.Layer):
    def call(self, x):
        return 2 * x

c = keras.Sequential([keras.Input((5,)), Twice(), layers.Dense(1, activation="sigmoid")])
c.compile(optimizer="sgd", loss="binary_crossentropy")
c.save(f"{{out}}/cust.keras")
print("saved")
"""

LAYERS = textwrap.dedent("""
    import keras


    @keras.saving.register_keras_serializable(package="cgbhostile")
    class Twice(keras.layers.Layer):
        def call(self, x):
            return 2 * x
    """)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """good.keras (compiled), bare.keras (uncompiled), cust.keras (a registered layer), saved once by Keras."""
    d = tmp_path_factory.mktemp("saved")
    in_fresh_python(SAVE.format(out=str(d)))
    return d


def _rewrite(src: Path, dst: Path, change) -> Path:
    """``src`` with its config.json changed by ``change(cfg)`` (its weights and metadata kept)."""
    with zipfile.ZipFile(src) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    cfg = json.loads(members["config.json"])
    change(cfg)
    members["config.json"] = json.dumps(cfg).encode()
    with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return dst


def _listing(folder: Path) -> set:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _predict(*args, cwd=PROJECT_ROOT, env=None, timeout=300):
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "helpers.runner", *map(str, args)], cwd=cwd, capture_output=True,
                         text=True, env=env or fresh_env("jax"), timeout=timeout)
    return out.returncode, out.stdout, out.stderr, time.perf_counter() - t0


def _runner_path(extra: Path) -> dict:
    """An environment whose PYTHONPATH holds the project root (the runner's package) and ``extra``."""
    return fresh_env("jax", PYTHONPATH=os.pathsep.join([str(PROJECT_ROOT), str(extra)]))


# ------------------------------------------------------------------ 2. a model's folder never runs code


@pytest.fixture
def hostile_folder(models, tmp_path):
    """A folder as a model from elsewhere may come: evil.keras (its Dense's module named keras_nlp.layers.evil),
    good.keras, and a keras_nlp package whose import writes ``tmp_path / 'ran'``."""
    d = tmp_path / "downloaded"
    (d / "keras_nlp").mkdir(parents=True)
    marker = tmp_path / "ran"
    (d / "keras_nlp" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (d / "keras_nlp" / "layers.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")

    def to_nlp(cfg):
        cfg["config"]["layers"][1]["module"] = "keras_nlp.layers.evil"

    _rewrite(models / "good.keras", d / "evil.keras", to_nlp)
    (d / "good.keras").write_bytes((models / "good.keras").read_bytes())
    return d, marker


def test_a_keras_nlp_folder_beside_the_model_never_runs_under_predict(hostile_folder):
    d, marker = hostile_folder
    before = _listing(d)
    # the worst case: started from the model's folder, with that folder on PYTHONPATH
    for cwd, env in ((PROJECT_ROOT, None), (d, _runner_path(d))):
        status, out, err, took = _predict("--predict", d / "evil.keras", "--batch-size", "32", cwd=cwd, env=env)
        assert status == Exit.BAD_GRID, (status, out, err)
        assert "key 'model_path'" in err and "'keras_nlp.layers.evil'" in err and "keras_nlp is not installed" in err
        assert "Traceback" not in err and not marker.exists(), err
    assert f"Python would import it from {d / 'keras_nlp'}" in err, err
    assert _listing(d) == before
    # good input beside it still predicts, and still runs nothing of the folder
    status, out, err, _ = _predict("--predict", d / "good.keras", "--batch-size", "32", cwd=d, env=_runner_path(d))
    assert status == Exit.OK, (out, err)
    # every GPU kind: the H200 layer by layer (JAX, PyTorch) and the reference's H100 (three backends)
    assert out.count("samples/s (predicted; 80% interval") == 5 and not marker.exists()
    assert _listing(d) == before


def test_the_predict_child_sees_nothing_of_the_models_folder(hostile_folder, monkeypatch, capsys):
    """Were the config check missed (switched off in the child here), the child still could not import the folder's
    keras_nlp: ``python -I`` in a fresh temporary folder, the project root its only addition to sys.path."""
    from helpers.predict import cli

    d, marker = hostile_folder
    before = _listing(d)
    monkeypatch.setattr(cli, "_CHILD", "import sys; sys.path.insert(0, sys.argv[1]); "
                        "import helpers.workloads.custom_json as cj; cj.check_installed = lambda packages: None; "
                        + cli._CHILD.split("; ", 1)[1])
    monkeypatch.chdir(d)
    for k, v in fresh_env("jax", PYTHONPATH=str(d)).items():
        monkeypatch.setenv(k, v)
    status, msg = cli._in_child(d / "evil.keras", 32, "float32", "", "")
    assert status == Exit.BAD_GRID and "key 'model_path'" in msg and "keras_nlp" in msg, msg
    assert not marker.exists() and _listing(d) == before


def test_a_custom_load_never_puts_the_models_folder_on_sys_path(hostile_folder, models):
    """The kernel's load (``custom.load_model``): the evil model refused by its config, and, the check switched off,
    refused by Keras (keras_nlp not found): the folder is not on sys.path. A module ``import_modules`` names is
    found beside the model and imported alone."""
    d, marker = hostile_folder
    (d / "cust.keras").write_bytes((models / "cust.keras").read_bytes())
    (d / "cgb_hostile_layers.py").write_text(LAYERS)
    before = _listing(d)
    code = textwrap.dedent(f"""
        import importlib.util, json, sys
        from helpers.params import ParamError
        from helpers.workloads import custom, custom_files, custom_json

        d, res = {str(d)!r}, {{}}

        def refusal(params):
            try:
                custom.load_model(params)
            except ParamError as exc:
                return str(exc)
            return "not refused"

        base = {{"import_modules": ""}}
        res["evil"] = refusal({{**base, "model_path": d + "/evil.keras"}})
        real, custom_json.check_installed = custom_json.check_installed, lambda packages: None
        custom_files._CACHE.clear()
        res["evil_unchecked"] = refusal({{**base, "model_path": d + "/evil.keras"}})
        custom_json.check_installed = real
        m = custom.load_model({{"model_path": d + "/cust.keras", "import_modules": "cgb_hostile_layers"}})
        res["cust"] = [type(la).__name__ for la in m.layers]
        res["module_from"] = sys.modules["cgb_hostile_layers"].__file__
        res["folder_on_path"] = [p for p in sys.path if p.rstrip("/") == d]
        res["keras_nlp_findable"] = importlib.util.find_spec("keras_nlp") is not None
        for name in ("keras_nlp.layers", "keras", "keras_hub", "keras_cv.x", "helpers.paths"):
            res[name] = refusal({{"model_path": d + "/good.keras", "import_modules": name}})
        print("JSON" + json.dumps(res))
        """)
    res = json.loads(in_fresh_python(code).split("JSON", 1)[1])
    assert "keras_nlp is not installed" in res["evil"], res["evil"]
    assert "Keras cannot rebuild" in res["evil_unchecked"] or "does not load" in res["evil_unchecked"], res
    assert "keras_nlp.layers.evil" in res["evil_unchecked"], res["evil_unchecked"]
    assert res["cust"] == ["Twice", "Dense"] and res["module_from"] == str(d / "cgb_hostile_layers.py")
    assert res["folder_on_path"] == [] and res["keras_nlp_findable"] is False
    for name in ("keras_nlp.layers", "keras", "keras_hub", "keras_cv.x", "helpers.paths"):
        assert "key 'import_modules'" in res[name] and "is not a module name of yours" in res[name], res[name]
    assert not marker.exists()
    assert _listing(d) == before  # no __pycache__ beside the model either


def test_the_grid_refuses_a_model_naming_a_package_not_installed(hostile_folder, tmp_path):
    d, marker = hostile_folder
    g = tmp_path / "g.yaml"
    g.write_text(f"points:\n  - {{workload: custom, backend: jax, device: cpu, model_path: {d / 'evil.keras'}}}\n"
                 f"  - {{workload: custom, backend: jax, device: cpu, model_path: {d / 'good.keras'}}}\n")
    status, out, err, _ = _predict(g, "--validate-only", env=_runner_path(d))
    assert status == Exit.BAD_GRID and "points[1]" in out + err and "keras_nlp is not installed" in out + err
    assert "points[2]" not in out + err and not marker.exists()


# ------------------------------------------------------------------ 6. what a small archive asks Keras to build


def _huge_dense(cfg):
    inp, dense = cfg["config"]["layers"][:2]
    inp["config"]["batch_shape"] = [None, 60_000]
    dense["config"]["units"] = 60_000
    dense["build_config"]["input_shape"] = [None, 60_000]


def _many_layers(n):
    """A Sequential of ``n`` Dense(12) layers after its input, each as small as Keras reads one."""
    def change(cfg):
        cfg["config"]["layers"] = cfg["config"]["layers"][:1] + [
            {"module": "keras.layers", "class_name": "Dense", "config": {"name": f"d{i}", "units": 12},
             "build_config": {"input_shape": [None, 12]}} for i in range(n)]
    return change


def test_a_small_archive_asking_for_14_gb_of_weights_is_refused_in_seconds(models, tmp_path):
    d = tmp_path / "m"
    d.mkdir()
    big = _rewrite(models / "good.keras", d / "big.keras", _huge_dense)
    many = _rewrite(models / "good.keras", d / "many.keras", _many_layers(20_000))
    assert big.stat().st_size < 20_000 and many.stat().st_size < 200_000
    before = _listing(d)
    status, out, err, took = _predict("--predict", big, "--batch-size", "32")
    assert status == Exit.BAD_GRID and took < 60, (status, took, out, err)  # was SIGABRT, no message
    assert "declares about 3,600," in err and "'dense' (Dense): 3,600,0" in err and "more than" in err, err
    assert "refused before Keras builds it" in err and "Traceback" not in err
    status, out, err, took = _predict("--predict", many, "--batch-size", "32")
    assert status == Exit.BAD_GRID and took < 60, (status, took, out, err)  # was 237 s to a RecursionError
    assert "declares 20,000 layers" in err and "more than 5,000" in err, err
    assert _listing(d) == before
    # the custom point's load: refused the same way, before Keras is imported (none in this process)
    from helpers.params import ParamError
    from helpers.workloads import custom

    had_keras = "keras" in sys.modules
    for path, needle in ((big, "parameters"), (many, "layers")):
        with pytest.raises(ParamError, match=needle) as err:
            custom.load_model({"model_path": str(path), "import_modules": ""})
        assert "key 'model_path'" in str(err.value)
    assert (had_keras or "keras" not in sys.modules) and _listing(d) == before


def test_each_bound_of_a_config_is_named(models, tmp_path):
    """Sequential length, graph depth, passes of Keras' loader, a cycle, a layer without its input shape, a layer
    bringing outside code: each refused from the config alone, naming it; the models Keras saved pass."""
    from helpers.params import ParamError
    from helpers.workloads import custom_files, custom_size

    def chain(n, backwards=False, cycle=False):
        def change(cfg):
            layers = cfg["config"]["layers"]
            inp, dense = layers[0], layers[1]
            out = [{"module": "keras", "class_name": "Functional", "registered_name": None}]
            nodes = [inp | {"name": inp["config"]["name"], "inbound_nodes": []}]
            prev = inp["config"]["name"]
            for i in range(n):
                src = f"d{n - 1}" if cycle and i == 0 else prev
                nodes.append({**dense, "name": f"d{i}", "config": {**dense["config"], "name": f"d{i}", "units": 12},
                              "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {
                                  "shape": [None, 12], "dtype": "float32", "keras_history": [src, 0, 0]}}],
                                  "kwargs": {}}]})
                prev = f"d{i}"
            if backwards:
                nodes = [nodes[0], *reversed(nodes[1:])]
            cfg.update(out[0])
            cfg["config"] = {"name": "f", "trainable": True, "layers": nodes,
                             "input_layers": [[inp["config"]["name"], 0, 0]], "output_layers": [[prev, 0, 0]]}
        return change

    def no_build_config(cfg):  # after a Reshape, a Dense whose input width only Keras would know
        cfg["config"]["layers"].insert(2, {**cfg["config"]["layers"][1], "config": {
            **cfg["config"]["layers"][1]["config"], "name": "flat_in"}})
        cfg["config"]["layers"].insert(2, {"module": "keras.layers", "class_name": "Reshape",
                                           "config": {"name": "reshape", "target_shape": [4, 4]}})
        for la in cfg["config"]["layers"][2:]:
            la.pop("build_config", None)

    def tfsm(cfg):
        cfg["config"]["layers"][1].update(class_name="TFSMLayer", config={"name": "saved", "filepath": "/x"})

    cases = {
        "seq": (_many_layers(custom_size.MAX_SEQUENTIAL + 1), f"a Sequential of {custom_size.MAX_SEQUENTIAL + 1}"),
        "deep": (chain(custom_size.MAX_DEPTH + 1), f"{custom_size.MAX_DEPTH + 1:,} layers deep"),
        "backwards": (chain(40, backwards=True), "out of the order of its graph"),
        "cycle": (chain(5, cycle=True), "a cycle"),
        "no_shape": (no_build_config, "input shape its config does not say ('flat_in' (Dense)"),
        "tfsm": (tfsm, "TFSMLayer layer ('saved')"),
    }
    for name, (change, needle) in cases.items():
        path = _rewrite(models / "good.keras", tmp_path / f"{name}.keras", change)
        t0 = time.perf_counter()
        with pytest.raises(ParamError) as err:
            custom_files.model_file(str(path))
        assert needle in str(err.value) and "key 'model_path'" in str(err.value), (name, str(err.value))
        assert time.perf_counter() - t0 < 10, name
    # within the bounds: a chain in its order, a Sequential at the bound, the saved model (its estimate exact)
    for name, change in (("ok_chain", chain(50)), ("ok_seq", _many_layers(custom_size.MAX_SEQUENTIAL - 1))):
        assert custom_files.model_file(str(_rewrite(models / "good.keras", tmp_path / f"{name}.keras", change)))
    assert custom_files.model_file(str(models / "good.keras"))[1]["size"] == {
        "layers": 2, "depth": 2, "params_estimate": 12 * 16 + 16 + 16 * 4 + 4}


def test_keras_extracts_the_weights_in_a_private_folder_never_beside_the_model(models, tmp_path):
    """Keras extracts model.weights.h5 next to the file it opens when it judges memory short
    (``saving_lib``: ``TemporaryDirectory(dir=<the file's folder>)``); forced here: the folder it made is not the
    model's, is gone after, and the weights are the saved ones."""
    d = tmp_path / "m"
    d.mkdir()
    (d / "good.keras").write_bytes((models / "good.keras").read_bytes())
    before = _listing(d)
    code = textwrap.dedent(f"""
        import json, os, tempfile
        import numpy as np
        import keras
        from keras.src.saving import saving_lib
        from helpers.workloads import custom

        made = []

        class Spy(tempfile.TemporaryDirectory):
            def __init__(self, *a, **kw):
                super().__init__(*a, **kw)
                made.append(self.name)

        saving_lib.is_memory_sufficient = lambda model: False
        saving_lib.tempfile = type(tempfile)("spied")
        saving_lib.tempfile.__dict__.update(vars(tempfile), TemporaryDirectory=Spy)
        m = custom.load_model({{"model_path": {str(d / "good.keras")!r}, "import_modules": ""}})
        saved = keras.saving.load_model({str(models / "good.keras")!r}, compile=False)
        print("JSON" + json.dumps({{"made": made, "left": [p for p in made if os.path.exists(p)],
                                    "same": all(np.array_equal(a, b) for a, b in zip(m.get_weights(),
                                                                                      saved.get_weights()))}}))
        """)
    res = json.loads(in_fresh_python(code).split("JSON", 1)[1])
    assert res["made"] and res["left"] == [] and res["same"], res
    assert all(Path(p).parent != d and Path(p).parent.name.startswith("cgb-keras-load-") for p in res["made"][:1])
    assert _listing(d) == before


# ------------------------------------------------------------------ 9. --predict's options


def test_predict_bounds_its_options_and_refuses_a_grid_beside_it(models, capsys):
    from helpers.runner.cli import main

    good = str(models / "good.keras")
    cases = [
        (["--predict", good, "--batch-size", "32", "--samples", "-5"], ["--samples", "0 <= N <= 10,000,000,000",
                                                                          "got -5"]),
        (["--predict", good, "--batch-size", str(10**30)], ["--batch-size", "1 <= N <= 1,000,000", "a huge number"]),
        (["--predict", good, "--batch-size", "0"], ["--batch-size", "1 <= N <= 1,000,000", "got 0"]),
        (["--predict", good], ["--batch-size"]),
        (["--predict", good, "params/quick.yaml", "--batch-size", "32"], ["--predict runs nothing else",
                                                                          "params/quick.yaml would not run"]),
        (["--predict", good, "--batch-size", "32", "--optimizer", "adamm"], ["--optimizer 'adamm' is not one of"]),
        (["params/quick.yaml", "--batch-size", "32", "--validate-only"], ["--batch-size is an option of: predict"]),
    ]
    before = _listing(models)
    for argv, needles in cases:
        assert main(argv) == Exit.BAD_GRID, argv
        err = capsys.readouterr().err
        for n in needles:
            assert n in err, (argv, n, err)
    assert _listing(models) == before


def test_an_uncompiled_model_is_predicted_with_a_stated_loss_and_optimizer(models):
    before = _listing(models)
    status, out, err, _ = _predict("--predict", models / "bare.keras", "--batch-size", "64", "--samples", "6400")
    assert status == Exit.OK, (out, err)
    assert "(adam optimiser)" in out and "compiled with optimizer adam (the model was saved without one" in out
    assert "loss mse (the model was saved without one" in out
    lines = [ln for ln in out.splitlines() if "samples/s (predicted; 80% interval" in ln]
    assert len(lines) == 5 and all("6,400 samples: " in ln and " s an epoch, $" in ln and "-" not in ln.split(":")[-1]
                                   for ln in lines), out
    status, out, err, _ = _predict("--predict", models / "bare.keras", "--batch-size", "64", "--optimizer", "sgd")
    assert status == Exit.OK and "(sgd optimiser)" in out.lower() and "optimizer adam" not in out, (out, err)
    assert "loss mse" in out
    assert _listing(models) == before
