"""custom: your own Keras model as a workload: a ``.keras`` file saved by Keras 3, timed like any other.

    keras.Sequential([...]).save("my.keras")              # any backend: the file is backend-agnostic
    # grid: {workload: custom, model_path: my.keras, backend: [tensorflow, jax, torch], device: [cpu, gpu]}

Knobs (besides the common ones): ``model_path`` (required; relative paths are looked up in the current
directory, then in ``$PWD``, the directory the command was started from, which a notebook kernel inherits,
then in the project root), ``data_path`` ('' = synthetic; else an ``.npz`` with arrays ``x`` and ``y``),
``loss``, ``optimizer``, ``learning_rate`` (''/null = the saved model's compile config), ``import_modules``
(modules that register the model's custom layers, imported before it is loaded).

What the model says: the input shape (``model.inputs[0]``; token ids in [0, input_dim) when the first
layer is an ``Embedding``, integers in [0, 256) for another integer input, else float32 in [0, 1]); the
label space from the loss and the output shape (``label_space``): sparse integer labels in [0, k) for
``sparse_categorical_crossentropy`` on k units, one-hot for ``categorical_crossentropy``, 0/1 per unit for
``binary_crossentropy`` (one sigmoid unit: binary), float targets of the output's shape for a regression
loss (mse, mae, huber). Synthetic labels of a vector output are a fixed random projection of the inputs
(learnable); of any other output shape, random.

Bad input is refused as early as it can be, naming the key: the knobs' own checks (``_ModelPath`` ...) run
in the grid validation and in the notebook's ``begin`` (no framework: the file is a zip read with
``zipfile``); ``check_point`` (the notebook's first cell, still no framework) checks the knobs against each
other; the rest (label space, array shapes, custom layers) once Keras has loaded the model.

Precision: a saved model's layers carry their own dtype policy. Under a precision other than the saved one
the model is built again from its own config with the layers' float policies dropped, so that every layer takes
the point's policy (set globally), the output layer kept float32 (numerically safe losses), and the saved weights
copied in (``_rebuild``; not ``keras.models.clone_model``, whose clone function runs on the operations of a
functional graph too: ``x + a`` takes no ``dtype``); a model that cannot be rebuilt so is refused with the reason (use
``precision: float32`` for it).

Untrusted files: the model's folder is never put on ``sys.path`` (Keras imports the keras_hub / keras_nlp /
keras_cv modules a config names; ``custom_files`` refuses those packages unless installed): ``import_modules``
are looked up beside the model by an explicit spec lookup, each alone. What the config asks Keras to build is
bounded before Keras is imported (``custom_size``), and Keras reads the archive through a link in a private
temporary folder (what it extracts lands there, never beside the model).

The job is split over four modules, importing in this order: ``custom_files`` (the .keras and .npz files,
without Keras; its config read within bounds by ``custom_json`` and sized by ``custom_size``), ``custom_checks``
(the knobs, ``check_point``), ``custom_data`` (label space, synthetic and .npz data), and this one (the model:
load, rebuild for the precision, compile, describe; the registry entry).
The public names of the first three are re-exported here (``from helpers.workloads.custom import check_point``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from helpers.data import loaders as _data

from ..params import ParamError
from ..paths import PROJECT_ROOT
from . import custom_files as _files
from .custom_checks import EXTRA, LOSS_ALIAS, LOSS_KIND, LOSSES, OPTIMIZERS, check_point, choices
from .custom_data import FEATURES, dataset, facts, synthetic
from .custom_files import DATA_WHAT, MODEL_WHAT, WHERE_HINT, data_file, model_file, register_hint, resolve
from .custom_load import load_model
from .registry import Workload, register

__all__ = ["DATA_WHAT", "EXTRA", "FEATURES", "LOSSES", "LOSS_ALIAS", "LOSS_KIND", "MODEL_WHAT", "OPTIMIZERS",
           "PROJECT_ROOT", "WHERE_HINT", "check_point", "choices", "data_file", "dataset", "facts", "load_model",
           "model_file", "register_hint", "resolve", "synthetic"]


# ---------------------------------------------------------------- the model (Keras from here on)

_LOADED: dict = {}  # key -> model loaded by `load` (for its shapes), handed to `build` once
_BUILT: dict = {}  # id(model) -> how it was built (for `describe`)


def _key(params: dict, path: Path) -> tuple:
    st = path.stat()
    return str(path), st.st_mtime_ns, st.st_size, params.get("import_modules") or ""


def _leaves(layer):
    sub = getattr(layer, "_flatten_layers", None)
    return list(sub(include_self=False)) if sub else list(getattr(layer, "layers", []))


def _model(params: dict, where: str = "custom"):
    key = _key(params, model_file(params["model_path"], where)[0])
    if key not in _LOADED:
        _LOADED[key] = load_model(params, where)
    return key, _LOADED[key]


def _build(params: dict):
    """The saved model (weights included) under the point's precision, uncompiled."""
    import keras

    key, model = _model(params)
    _LOADED.pop(key, None)  # handed over once: a second build loads afresh
    facts(model, params)  # refuses what cannot be trained, before any rebuild
    policy = keras.mixed_precision.global_policy().name
    out_layer = model.outputs[0]._keras_history[0]
    want = {id(out_layer): "float32"} if policy != "float32" else {}
    off = [la for la in [model, *_leaves(model)] if not isinstance(la, keras.layers.InputLayer)
           and la.dtype_policy.name != want.get(id(la), policy)]
    info = {"precision": policy, "rebuilt": False, "weights": "saved"}
    if off:
        try:
            new = _rebuild(model, policy, out_layer.name)
        except Exception as exc:
            raise ParamError(f"custom: key 'precision' is {policy!r} but the saved model's layers carry "
                             f"{sorted({la.dtype_policy.name for la in off})} and it cannot be rebuilt under "
                             f"{policy} (its config without their dtype policies does not deserialize: "
                             f"{type(exc).__name__}: {str(exc)[:300]}); use precision 'float32' for this model, or "
                             "save it under the policy you want") from None
        try:
            new.set_weights(model.get_weights())
        except Exception as exc:
            info["weights"] = f"fresh initialisation (the saved weights did not fit the rebuilt model: {exc})"[:300]
        info.update(rebuilt=True, rebuilt_because=sorted({la.dtype_policy.name for la in off}),
                    float32_layers=[la.name for la in _leaves(new) if la.dtype_policy.compute_dtype == "float32"
                                    and not isinstance(la, keras.layers.InputLayer)] if policy != "float32" else [])
        model = new
    _BUILT[id(model)] = info
    return model


# the dtype policies a layer is rebuilt without (it then takes the global one, the point's); a quantized policy is kept
_FLOAT_POLICIES = {"float16", "bfloat16", "float32", "float64", "mixed_float16", "mixed_bfloat16"}


def _policy_name(value) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("config"), dict):
        name = value["config"].get("name")
        return name if isinstance(name, str) else None
    return None


def _rebuild(model, policy: str, out_name: str):
    """``model`` built again from its own config under the global dtype policy (``policy``, set by the point): every
    layer's float policy dropped from the config (each layer then takes the global one), the output layer's set to
    float32 (numerically safe losses) unless the policy is float32, and deserialized in safe mode; without weights
    (the caller copies them in). Not ``keras.models.clone_model`` with a ``clone_function`` setting ``dtype``: it is
    called on every operation of a functional graph too, and an operation (``x + a``: ``keras.src.ops.numpy.Add``)
    takes no ``dtype``."""
    import json

    import keras

    from .custom_json import walk

    cfg = json.loads(json.dumps(keras.saving.serialize_keras_object(model)))  # a plain copy
    for d in walk(cfg):
        c = d.get("config")
        if (isinstance(c, dict) and "dtype" in c and isinstance(d.get("class_name"), str)
                and d["class_name"] not in ("InputLayer", "__keras_tensor__")
                and _policy_name(c["dtype"]) in _FLOAT_POLICIES):
            del c["dtype"]
    out = _output_config(cfg, out_name)
    if out is not None and policy != "float32":
        out["config"]["dtype"] = "float32"
    new = keras.saving.deserialize_keras_object(cfg, safe_mode=True)
    if not isinstance(new, keras.Model):
        raise TypeError(f"rebuilt as a {type(new).__name__}")
    return new


def _output_config(cfg: dict, name: str) -> dict | None:
    """The config of the model's output layer ``name`` (in a nested model: that model's own output layer)."""
    node, seen = cfg, 0
    while isinstance(node, dict) and isinstance((node.get("config") or {}).get("layers"), list) and seen < 100:
        seen += 1
        layers = [la for la in node["config"]["layers"] if isinstance(la, dict)]
        if node is not cfg:  # a nested model: its own output
            outs = node["config"].get("output_layers")
            while isinstance(outs, list) and outs and isinstance(outs[0], list):
                outs = outs[0]
            name = outs[0] if isinstance(outs, list) and outs and isinstance(outs[0], str) else \
                (layers[-1].get("config") or {}).get("name") if layers else None
        node = next((la for la in layers if la.get("name") == name or (la.get("config") or {}).get("name") == name),
                    None)
    return node if isinstance(node, dict) and isinstance(node.get("config"), dict) else None


def compile_kwargs(params: dict) -> dict:
    import keras

    picked = choices(params, where="custom")
    loss = picked["loss"]
    if isinstance(loss, dict):
        loss = keras.losses.deserialize(loss)
    opt, lr = picked["optimizer"], params.get("learning_rate")
    if isinstance(opt, dict) and str(opt.get("class_name", "")).lower() in OPTIMIZERS:
        # a built-in optimiser, saved under any backend (its module names that backend's class): by name
        opt = {"class_name": opt["class_name"], "config": dict(opt.get("config") or {})}
        if lr:
            opt["config"]["learning_rate"] = float(lr)
        optimizer = keras.optimizers.deserialize(opt)
    elif isinstance(opt, dict):
        optimizer = keras.optimizers.deserialize(opt)
        if lr:
            optimizer.learning_rate = float(lr)
    else:
        optimizer = keras.optimizers.get({"class_name": opt, "config": {"learning_rate": float(lr)}} if lr else opt)
    metrics = ["accuracy"] if picked["label_space"] != "regression" else []
    return {"optimizer": optimizer, "loss": loss, "metrics": metrics}


def _load(params: dict) -> _data.Dataset:
    check_point(params, "custom")
    _, model = _model(params)
    return dataset(params, facts(model, params))


def _describe(model, params: dict) -> dict:
    path, info = model_file(params["model_path"], "custom")
    picked = choices(params, info, "custom")
    f = facts(model, params)
    opt = getattr(model, "optimizer", None)
    opt = getattr(opt, "inner_optimizer", opt)  # mixed_float16: the LossScaleOptimizer's own
    try:
        lr = float(np.asarray(opt.learning_rate))
    except Exception:
        lr = None
    data = {"data_sha256": _files.digest(params["data_path"])} if params.get("data_path") else {}
    return {"model_path": params["model_path"], "model_file": str(path), "sha256": _files.sha256(path), **data,
            "file_bytes": path.stat().st_size, "saved_by_keras": info["metadata"].get("keras_version"),
            "model_class": info["config"].get("class_name"), "model_name": model.name,
            "layers": len(model.layers),
            "layers_all": sum(type(la).__name__ != "InputLayer" for la in _leaves(model)),
            "params": int(model.count_params()),
            "trainable_params": int(sum(np.prod(v.shape) for v in model.trainable_weights)),
            **{k: f[k] for k in ("input_shape", "input_dtype", "input_kind", "output_shape", "output_layer",
                                 "output_activation", "label_space", "loss") if k in f},
            **({"vocab": f["vocab"]} if "vocab" in f else {}), "loss_from": picked["loss_from"],
            "optimizer": type(opt).__name__ if opt is not None else None, "learning_rate": lr,
            "optimizer_from": picked["optimizer_from"], "custom_objects": info["custom_objects"],
            "import_modules": params.get("import_modules") or "", **_BUILT.get(id(model), {})}


register(Workload(
    name="custom",
    notes={
        "n_train": "training samples (None: every row of data_path; synthetic: 2048)",
        "data_source": "auto: the .npz in data_path when given, else synthetic; or real / synthetic",
        "precision": "(a mixed policy rebuilds the model)",
        "model_path": "required: your .keras file from model.save(\"my.keras\"); relative: cwd, $PWD, project root",
        "data_path": "an .npz with arrays x and y (empty: synthetic data of the model's shapes)",
        "loss": "empty: the saved compile config's; or sparse_categorical_crossentropy, binary_crossentropy, mse ...",
        "optimizer": "empty: the saved compile config's; or adam, adamw, sgd, rmsprop ... (Keras' defaults)",
        "learning_rate": "None: the optimizer's own (saved, or Keras' default)",
        "import_modules": "modules registering the model's custom layers, comma-separated (empty: none)",
    },
    source="",
    summary="your own model: a .keras file saved by Keras 3, trained on data of its shapes (synthetic) or an .npz",
    defaults={"batch_size": 32, "epochs": 3, "n_train": 2048, "n_val": 0, "data_path": "", "loss": "",
              "optimizer": "", "learning_rate": None, "import_modules": ""},  # model_path: no default (required)
    build=_build,
    compile_args=compile_kwargs,
    load=_load,
    expected_params=None,  # the model's own count is the record's model_params
    extra_params=EXTRA,
    describe=_describe,
))
