"""custom (3 of 4): the data: what the loaded model says (input kind, label space: ``facts``), synthetic
inputs and targets of its shapes (``synthetic``) and the user's ``.npz`` checked against them; ``dataset``
makes the ``helpers.data.loaders.Dataset``. Keras is imported inside ``facts`` only.

    f = facts(model, params)       # input/output shapes, input_kind, label_space, n_classes, target_shape
    x, y = synthetic(256, f, seed=0)
    ds = dataset(params, f)        # the .npz (data_path) or synthetic data

Imports ``custom_files`` and ``custom_checks``; imported by ``custom``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from helpers.data import loaders as _data

from ..params import ParamError
from .custom_checks import _fits, _unknown_size, _x_mismatch, choices
from .custom_files import data_file

FEATURES = 16  # width of the random projection the synthetic labels come from


def _first_layer(model):
    import keras

    for layer in model.layers:
        if isinstance(layer, keras.layers.InputLayer):
            continue
        return _first_layer(layer) if isinstance(layer, keras.Model) else layer
    return None


def facts(model, params: dict, where: str = "custom") -> dict:
    """Input and output of the model, and the targets the loss wants (``label_space``)."""
    import keras

    try:
        ins, outs = list(model.inputs), list(model.outputs)
    except (AttributeError, ValueError):
        raise ParamError(f"{where}: key 'model_path': the model has no symbolic inputs (a subclassed keras.Model?); "
                         "save a Sequential or Functional model (keras.Input first)") from None
    if len(ins) != 1:
        listed = ", ".join(f"{getattr(t, 'name', '?')!r} {tuple(t.shape)}" for t in ins)
        raise ParamError(f"{where}: key 'model_path': the model has {len(ins)} inputs: {listed}; the suite feeds "
                         "one input (x)")
    if len(outs) != 1:
        raise ParamError(f"{where}: key 'model_path': the model has {len(outs)} outputs; the suite trains one")
    first = _first_layer(model)
    out_layer = outs[0]._keras_history[0]
    act = getattr(out_layer, "activation", None)
    act = "softmax" if isinstance(out_layer, keras.layers.Softmax) else getattr(act, "__name__", act or "linear")
    in_dtype = str(ins[0].dtype)
    f = {"input_shape": list(ins[0].shape), "input_dtype": in_dtype, "output_shape": list(outs[0].shape),
         "output_layer": out_layer.name, "output_activation": str(act)}
    if isinstance(first, keras.layers.Embedding):
        f.update(input_kind="token ids", vocab=int(first.input_dim))
    elif "int" in in_dtype:
        f.update(input_kind="integers", vocab=256)
    else:
        f.update(input_kind="float")
    picked = choices(params, where=where)
    space, rest = picked["label_space"], f["output_shape"][1:]
    k = rest[-1] if rest else None
    if space in ("sparse", "one-hot") and not (k and k >= 2):
        raise ParamError(f"{where}: key 'loss' is {picked['loss_name']} but the model's output "
                         f"{tuple(f['output_shape'])} ({act}) has {k} unit(s): classes need k >= 2 units; for one "
                         "sigmoid unit use binary_crossentropy, for a regression output mse")
    f.update(label_space=space, loss=picked["loss_name"], n_classes=int(k) if space in ("sparse", "one-hot")
             else (2 if space == "binary" else 0),
             target_shape=list(rest[:-1] if space == "sparse" else rest))
    expect = {"sparse": "softmax", "one-hot": "softmax", "binary": "sigmoid"}.get(space)
    if expect and act != expect:
        f["note"] = f"{picked['loss_name']} on a {act} output (usually {expect}; logits need from_logits)"
    return f


def _features(x: np.ndarray, f: dict, proto) -> np.ndarray:
    """A fixed random projection of each sample (n x FEATURES), standardised."""
    n = len(x)
    out = np.empty((n, FEATURES), np.float32)
    if f["input_kind"] == "token ids":
        table = proto.standard_normal((f["vocab"], FEATURES), dtype=np.float32)
        for a in range(0, n, 256):
            out[a:a + 256] = table[x[a:a + 256]].reshape(len(x[a:a + 256]), -1, FEATURES).mean(axis=1)
    else:
        flat = x.reshape(n, -1)
        proj = proto.standard_normal((flat.shape[1], FEATURES), dtype=np.float32)
        for a in range(0, n, 256):
            out[a:a + 256] = flat[a:a + 256].astype(np.float32) @ proj
    return (out - out.mean(0)) / (out.std(0) + 1e-6)


def synthetic(n: int, f: dict, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` inputs of the model's shape and targets of its label space (module docstring)."""
    shape = f["input_shape"][1:]
    if any(d is None for d in shape):
        raise ParamError(_unknown_size("custom", f["input_shape"]))
    rng, proto = np.random.default_rng(seed), np.random.default_rng(7919)  # proto: the same labels for val
    if f["input_kind"] == "float":
        x = rng.random((n, *shape), dtype=np.float32)
    else:
        x = rng.integers(0, f["vocab"], size=(n, *shape)).astype(np.int32 if f["input_kind"] == "token ids"
                                                                 else f["input_dtype"])
    space, rest = f["label_space"], f["output_shape"][1:]
    k = rest[-1] if rest else 1
    if len(rest) == 1:  # a vector output: targets from the inputs (learnable)
        feats = _features(x, f, proto)
        w = proto.standard_normal((FEATURES, k), dtype=np.float32) / np.float32(np.sqrt(FEATURES))
        score = np.empty((n, k), np.float32)
        for a in range(0, n, 256):
            score[a:a + 256] = feats[a:a + 256] @ w
    else:  # a sequence or map output: random targets
        score = rng.standard_normal((n, *rest), dtype=np.float32)
    if space in ("sparse", "one-hot"):
        y = score.argmax(axis=-1).astype(np.int64)
        return x, (y if space == "sparse" else np.eye(k, dtype=np.float32)[y])
    if space == "binary":
        return x, (score > 0).astype(np.float32)
    return x, score


def _npz(path: Path, f: dict) -> tuple[np.ndarray, np.ndarray]:
    where = "custom: key 'data_path'"
    with np.load(path, allow_pickle=False) as z:
        x, y = z["x"], z["y"]
    if not _fits(x.shape, f["input_shape"]):
        raise ParamError(_x_mismatch("custom", path, x.shape, f["input_shape"]))
    if f["input_kind"] == "token ids":
        if not np.issubdtype(x.dtype, np.integer) or x.min() < 0 or x.max() >= f["vocab"]:
            raise ParamError(f"{where}: array 'x' of {path} must hold token ids, integers in [0, {f['vocab']}) (the "
                             f"Embedding's input_dim); it holds {x.dtype} in [{x.min()}, {x.max()}]")
        x = x.astype(np.int32)
    elif f["input_kind"] == "float" and x.dtype != np.float32:
        x = x.astype(np.float32)
    want, space = tuple(f["target_shape"]), f["label_space"]
    if space != "sparse" and y.shape[1:] != want and not (want == (1,) and y.ndim == 1):
        hint = " (integer labels: set loss sparse_categorical_crossentropy)" if space == "one-hot" else ""
        raise ParamError(f"{where}: array 'y' of {path} has shape {y.shape}, targets of {y.shape[1:]}; the model's "
                         f"output {tuple(f['output_shape'])} with {f['loss']} needs targets of {want}{hint}")
    if space == "sparse":
        if y.shape[1:] not in (want, (*want, 1)):
            raise ParamError(f"{where}: array 'y' of {path} has shape {y.shape}; {f['loss']} on the output "
                             f"{tuple(f['output_shape'])} needs integer labels of shape {('n', *want)}")
        if y.size and (np.any(y != np.round(y)) or y.min() < 0 or y.max() >= f["n_classes"]):
            raise ParamError(f"{where}: array 'y' of {path} must hold class labels, integers in [0, {f['n_classes']}) "
                             f"(the output's units); it holds {y.dtype} in [{y.min()}, {y.max()}]")
        return x, y.reshape(len(y), *want).astype(np.int64)
    return x, y.reshape(len(y), *want).astype(np.float32)


def dataset(params: dict, f: dict) -> _data.Dataset:
    """The points' data for the model of ``facts`` ``f``: the .npz of ``data_path`` (unless data_source is
    synthetic), else synthetic data of its shapes."""
    n_train, n_val, seed = params.get("n_train"), params["n_val"] or 0, params["seed"]
    extra = {**f, "model_path": params["model_path"]}
    if params.get("data_path") and params.get("data_source") != "synthetic":
        path = data_file(params["data_path"], "custom")[0]
        x, y = _npz(path, f)
        idx = np.random.default_rng(seed).permutation(len(x))  # validation rows held out first
        va, rest = np.sort(idx[:n_val]), idx[n_val:]
        tr = np.sort(rest if n_train is None else rest[:n_train])
        detail = f"{path}: {len(tr)} of {len(x)} rows for training" + (f", {len(va)} for validation" if n_val else "")
        return _data.Dataset(x[tr], y[tr], x[va] if n_val else None, y[va] if n_val else None, "real", detail,
                             f["n_classes"], extra)
    n = 2048 if n_train is None else n_train
    x, y = synthetic(n, f, seed)
    xv, yv = synthetic(n_val, f, seed + 1) if n_val else (None, None)
    detail = ("synthetic data of the model's shapes" + (" (requested)" if params.get("data_source") == "synthetic"
                                                         else "")
              + f"; {f['label_space']} targets" + (" from a fixed random projection of the inputs (learnable)"
                                                    if len(f["output_shape"]) == 2 else " (random)"))
    return _data.Dataset(x, y, xv, yv, "synthetic", detail, f["n_classes"], extra,
                         learnable=len(f["output_shape"]) == 2)
