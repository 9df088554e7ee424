"""custom (2 of 4): the knobs' checks, still without Keras: the ``Param`` subclasses of ``EXTRA`` (run in the
grid validation and the notebook's ``begin``), the loss and optimizer picked from knob or saved compile config
(``choices``), and the knobs against each other (``check_point``, the notebook's first cell).

    EXTRA["model_path"].check("my.keras", "g.yaml: points[1]")   # ParamError naming the key
    check_point(params)    # -> choices(params): loss, optimizer, label_space, each with where it came from

Imports ``custom_files``; imported by ``custom_data`` and ``custom``.
"""

from __future__ import annotations

import importlib.machinery
import re
import sys

from ..params import Param, ParamError
from .custom_files import data_file, digest, model_file, register_hint

LOSS_KIND = {"sparse_categorical_crossentropy": "sparse", "categorical_crossentropy": "one-hot",
             "categorical_focal_crossentropy": "one-hot", "binary_crossentropy": "binary",
             "binary_focal_crossentropy": "binary", "mean_squared_error": "regression",
             "mean_absolute_error": "regression", "huber": "regression", "log_cosh": "regression"}
LOSS_ALIAS = {"mse": "mean_squared_error", "mae": "mean_absolute_error", "huber_loss": "huber", "logcosh": "log_cosh"}
LOSSES = ("", "sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy", "mse", "mae",
          "huber", "mean_squared_error", "mean_absolute_error")
OPTIMIZERS = ("", "adam", "adamw", "sgd", "rmsprop", "adagrad", "adadelta", "adamax", "nadam", "lion")


class _ModelPath(Param):
    digest = staticmethod(digest)  # a knob naming a file: its content is part of the point (registry.contents)

    def check(self, value, where):
        super().check(value, where)
        model_file(value, where)


class _DataPath(Param):
    digest = staticmethod(digest)

    def check(self, value, where):
        super().check(value, where)
        if value:
            data_file(value, where)


# packages import_modules never names: the suite's own, Keras and the packages whose modules Keras' deserializer
# imports by name (a folder of that name beside a model would shadow them)
NOT_YOURS = ("helpers", "keras", "keras_hub", "keras_nlp", "keras_cv")


class _Modules(Param):
    def check(self, value, where):
        super().check(value, where)
        _modules(value, where)


def _modules(value, where: str | None = None) -> list[str]:
    """The module names of ``import_modules``; with ``where``, each checked (``ParamError`` naming the key)."""
    out = [m.strip() for m in str(value or "").split(",") if m.strip()]
    for m in out if where is not None else []:
        if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", m) or m.split(".")[0] in NOT_YOURS:
            raise ParamError(f"{where}: key 'import_modules': {m!r} is not a module name of yours; allowed: module "
                             "names, comma-separated (e.g. 'my_layers, pkg.blocks'; not the suite's helpers, nor "
                             f"{', '.join(NOT_YOURS[1:])}), or '' for none")
    return out


EXTRA = {p.name: p for p in (
    _ModelPath("model_path", str, "your model: a .keras file saved by Keras 3 (required; relative: the current "
               "directory, $PWD, then the project root)", example=""),
    _DataPath("data_path", str, "an .npz with arrays x and y ('' = synthetic data of the model's shapes)"),
    Param("loss", str, "loss ('' = the saved compile config's)", choices=LOSSES, nullable=True),
    Param("optimizer", str, "optimizer with Keras' defaults ('' = the saved compile config's)", choices=OPTIMIZERS,
          nullable=True),
    Param("learning_rate", (int, float), "learning rate (null = the optimizer's: saved or default)", positive=True,
          nullable=True),
    _Modules("import_modules", str, "modules registering the model's custom layers, imported before loading it "
             "(comma-separated; '' = none)"),
)}


# ---------------------------------------------------------------- the knobs against each other (no Keras)

def saved_loss_name(loss) -> str | None:
    if isinstance(loss, str):
        name = loss
    elif isinstance(loss, dict):
        name = (loss.get("config") or {}).get("name") if isinstance(loss.get("config"), dict) else None
        name = name or re.sub(r"(?<!^)(?=[A-Z])", "_", str(loss.get("class_name", ""))).lower()
    else:
        return None
    return LOSS_ALIAS.get(name, name)


def choices(params: dict, info: dict | None = None, where: str = "parameters") -> dict:
    """Loss and optimizer, each from its knob or the saved compile config: ``ParamError`` when neither gives
    one the suite can use."""
    info = info or model_file(params["model_path"], where)[1]
    cc = info["config"].get("compile_config") or {}
    out, missing = {}, []
    for key in ("loss", "optimizer"):
        if params.get(key):
            out[key], out[f"{key}_from"] = params[key], "knob"
        elif cc.get(key):
            out[key], out[f"{key}_from"] = cc[key], "saved compile config"
        else:
            missing.append(key)
    if missing:
        keys = f"key{'s' if len(missing) > 1 else ''} {' and '.join(map(repr, missing))}"
        raise ParamError(f"{where}: {keys} empty and the saved model has "
                         + ("no compile config (saved before model.compile)" if not cc else f"no {missing[0]} in its "
                            "compile config") + ": set "
                         + "; ".join(f"{k} (one of {', '.join(filter(None, LOSSES if k == 'loss' else OPTIMIZERS))})"
                                     for k in missing))
    out["loss_name"] = saved_loss_name(out["loss"])
    if out["loss_name"] not in LOSS_KIND:
        known = ", ".join(c for c in LOSSES if c)
        raise ParamError(f"{where}: key 'loss' is empty and the saved loss {out['loss_name'] or out['loss']!r} is "
                         f"not one the suite can make targets for; set loss (one of {known})")
    out["label_space"] = LOSS_KIND[out["loss_name"]]
    return out


def check_point(params: dict, where: str = "notebook parameters") -> dict:
    """The knobs against each other, before Keras is imported (the notebook's first cell)."""
    path, info = model_file(params["model_path"], where)
    customs, mods = info["custom_objects"], _modules(params.get("import_modules"), where)
    if customs and not mods:
        raise ParamError(f"{where}: key 'model_path': {path} uses custom objects ({', '.join(customs)}) and key "
                         "'import_modules' is empty: Keras finds a custom class only once it is registered: "
                         + register_hint(customs))
    for m in mods:
        top = m.split(".")[0]
        found = top in sys.modules or importlib.machinery.PathFinder.find_spec(top, [*sys.path, str(path.parent)])
        if not found:
            raise ParamError(f"{where}: key 'import_modules': module {top!r} is not importable (searched "
                             f"PYTHONPATH, sys.path and {path.parent}); put it next to the model file or on PYTHONPATH")
    picked = choices(params, info, where)
    if params.get("data_source") == "real" and not params.get("data_path"):
        raise ParamError(f"{where}: key 'data_source' is 'real' but key 'data_path' is empty: give an .npz "
                         "(x, y), or use data_source 'auto' or 'synthetic'")
    want = info["inputs"][0][1] if info["inputs"] else None
    if params.get("data_path") and params.get("data_source") != "synthetic":
        dpath, arrays = data_file(params["data_path"], where)
        if want and not _fits(arrays["x"][0], want):
            raise ParamError(_x_mismatch(where, dpath, arrays["x"][0], want))
    elif want and any(d is None for d in want[1:]):
        raise ParamError(_unknown_size(where, want))
    return picked


def _unknown_size(where, want) -> str:
    return (f"{where}: key 'data_path' is empty and the model's input {tuple(want)} has an unknown size besides the "
            "batch: synthetic data needs a fixed shape; save the model with one (keras.Input((100,))) or give "
            "data_path")


def _fits(shape, batch_shape) -> bool:
    return len(shape) == len(batch_shape) and all(w is None or w == s for s, w in zip(shape[1:], batch_shape[1:]))


def _x_mismatch(where, path, got, want) -> str:
    want = tuple(want)
    return (f"{where}: key 'data_path': array 'x' of {path} has shape {tuple(got)}, samples of {tuple(got)[1:]}; "
            f"the model's input is {want} (batch first): each sample must be {want[1:]}")
