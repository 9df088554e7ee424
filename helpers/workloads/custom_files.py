"""custom (1 of 4): the user's files, read without Keras: the ``.keras`` archive (a zip: config.json,
metadata.json) and the ``.npz`` (array headers only), each checked with a ``ParamError`` naming the key.

    path, info = model_file("my.keras")    # info: config, metadata, inputs, n_outputs, custom_objects, ...
    path, arrays = data_file("d.npz")      # arrays: {"x": (shape, dtype), "y": (shape, dtype)}
    resolve("my.keras")                    # (the file or None, the places tried): cwd, $PWD, project root
    digest("my.keras")                     # the file's sha256 (None: no such file): in the point id, the record

Imported by ``custom_checks`` (grid validation, the notebook's first cell), ``custom_data`` and ``custom``
(the workload); imports none of them. The workload's documentation is ``custom``'s docstring.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import zipfile
from pathlib import Path

import numpy as np

from ..params import ParamError
from ..paths import PROJECT_ROOT

WHERE_HINT = ("in a module (e.g. my_layers.py) next to the model file or on PYTHONPATH (export PYTHONPATH=/its/folder "
              "before ./run_all.sh or papermill: kernels inherit it), and set the knob import_modules: my_layers "
              "(imported in the kernel before the model is loaded)")


def register_hint(customs) -> str:
    """What to do for the custom objects ``customs`` (registered names, 'package>Name' or a bare name)."""
    parts = []
    for c in customs or ["MyLayer"]:
        pkg, _, name = c.rpartition(">")
        parts.append(f"{name} with @keras.saving.register_keras_serializable(package={pkg!r})" if pkg else
                     f"{name} with @keras.saving.register_keras_serializable() (it was saved unregistered: save the "
                     "model again once it is registered)")
    return "register " + "; ".join(parts) + " " + WHERE_HINT


def resolve(value: str) -> tuple[Path | None, list[Path]]:
    """The file ``value`` names (absolute; else in the current directory, ``$PWD``, the project root), and
    the places tried."""
    p = Path(value).expanduser()
    bases = [] if p.is_absolute() else [Path.cwd(), *([Path(os.environ["PWD"])] if os.environ.get("PWD") else []),
                                         PROJECT_ROOT]
    tried = list(dict.fromkeys([p] if p.is_absolute() else [b / p for b in bases]))
    return next((t.resolve() for t in tried if t.exists()), None), tried


def sha256(path: Path) -> str:
    """The sha256 of the file's bytes (hex), read once per content (path, modification time, size)."""
    st = Path(path).stat()
    return _sha256(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _sha256(path: str, mtime_ns: int, size: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def digest(value: str) -> str | None:
    """The sha256 of the file ``value`` names (found as ``resolve`` finds it); None where there is none."""
    path, _ = resolve(value) if value else (None, [])
    return sha256(path) if path is not None and path.is_file() else None


def _existing(key: str, value: str, where: str, suffix: str, what: str) -> Path:
    path, tried = resolve(value)
    if path is None:
        raise ParamError(f"{where}: key '{key}': {value!r} does not exist (looked in: "
                         f"{', '.join(str(t) for t in tried)}); {what}")
    if not path.is_file():
        raise ParamError(f"{where}: key '{key}': {path} is not a file; {what}")
    if path.suffix != suffix:
        raise ParamError(f"{where}: key '{key}': {path} is not a {suffix} file; {what}")
    if not os.access(path, os.R_OK):
        raise ParamError(f"{where}: key '{key}': {path} cannot be read (permissions); {what}")
    return path


# ---------------------------------------------------------------- the .keras file, without Keras

MODEL_WHAT = "model_path is a .keras file saved by Keras 3: model.save(\"my.keras\")"


def _walk(node):
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


def _io(cfg: dict) -> tuple[list, int | None]:
    """From a model config: its inputs [(name, batch shape, dtype)] and its number of outputs (None: unknown,
    a subclassed model)."""
    c = cfg.get("config") or {}
    layers = c.get("layers") or []
    if cfg.get("class_name") == "Sequential":
        first = layers[0] if layers else {}
        if first.get("class_name") == "InputLayer":
            fc = first.get("config") or {}
            return [(fc.get("name"), fc.get("batch_shape"), fc.get("dtype"))], 1
        shape = c.get("build_input_shape") or (cfg.get("build_config") or {}).get("input_shape")
        return ([("input", shape, None)] if shape else []), 1
    if "input_layers" not in c:
        return [], None

    def names(spec):
        spec = list(spec.values()) if isinstance(spec, dict) else spec or []
        return [s[0] for s in ([spec] if spec and isinstance(spec[0], str) else spec)]

    by_name = {(lc.get("config") or {}).get("name") or lc.get("name"): lc.get("config") or {}
               for lc in layers if lc.get("class_name") == "InputLayer"}
    ins = [(n, by_name.get(n, {}).get("batch_shape"), by_name.get(n, {}).get("dtype"))
           for n in names(c["input_layers"])]
    return ins, len(names(c.get("output_layers")))


def _custom_objects(cfg: dict) -> list[str]:
    """Objects of the model config Keras cannot find by itself: classes from outside Keras, registered
    functions ('package>name')."""
    out = []
    for d in _walk(cfg.get("config")):
        if "class_name" not in d or "module" not in d:
            continue
        mod, reg, cls = d.get("module"), d.get("registered_name"), d.get("class_name")
        if cls == "function" and mod == "builtins":
            if isinstance(d.get("config"), str) and ">" in d["config"]:
                out.append(d["config"])
        elif cls not in ("__keras_tensor__", "__lambda__") and (mod is None or not str(mod).startswith("keras")):
            out.append(reg if isinstance(reg, str) else cls)
    return list(dict.fromkeys(out))


MAX_CONFIG_BYTES = 16 * 2**20  # config.json of a ResNet-50 is ~100 kB; a zip bomb inflates 1000:1
# Keras stores a .keras archive's members uncompressed (1:1); weights deflate to ~0.9 of their size at best. A member
# over MAX_CONFIG_BYTES once inflated and more than MAX_EXPANSION times its size in the archive is a bomb: refused
# before Keras inflates it (its kernel's memory, or the disk it extracts to). Python's zipfile never inflates a member
# past the size the archive declares for it, so the declared size bounds what Keras can be made to inflate.
MAX_EXPANSION = 20


def _no_bomb(zf: zipfile.ZipFile) -> None:
    """``ValueError`` naming the first member that inflates past the bounds above (weights included)."""
    for info in zf.infolist():
        if info.file_size > MAX_CONFIG_BYTES and info.file_size > MAX_EXPANSION * max(1, info.compress_size):
            raise ValueError(
                f"has a member {info.filename[:100]!r} that inflates from {info.compress_size / 2**20:.1f} MB to "
                f"{info.file_size / 2**20:,.0f} MB (more than {MAX_EXPANSION}:1; Keras stores its files "
                "uncompressed): a zip bomb, not a model saved by Keras, refused before it is inflated")


def _member(zf: zipfile.ZipFile, name: str) -> bytes:
    """One member of the archive, its size checked before it is inflated (``ZipInfo.file_size``) and while."""
    if zf.getinfo(name).file_size > MAX_CONFIG_BYTES:
        raise ValueError(f"has a {name} larger than {MAX_CONFIG_BYTES // 2**20} MB once inflated: not a model config")
    with zf.open(name) as f:
        data = f.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(f"has a {name} larger than {MAX_CONFIG_BYTES // 2**20} MB once inflated: not a model config")
    return data


@functools.lru_cache(maxsize=16)
def _read_keras(path: str, mtime_ns: int, size: int) -> dict:
    """config.json and metadata.json of a .keras file, checked; ``ValueError`` with the reason."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            if "config.json" not in names:
                raise ValueError("is a zip archive without config.json: not a model saved by Keras 3")
            cfg = json.loads(_member(zf, "config.json"))
            meta = json.loads(_member(zf, "metadata.json")) if "metadata.json" in names else {}
            _no_bomb(zf)  # the weights too (and any other member): Keras would inflate them in the kernel
    except zipfile.BadZipFile:
        raise ValueError("is not a .keras archive (not a zip file)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"has an unreadable config.json ({exc})") from None
    except RecursionError:
        raise ValueError("has a config.json nested too deeply to be a model config") from None
    except OSError as exc:
        raise ValueError(f"cannot be read ({exc.strerror or exc})") from None
    if not isinstance(cfg, dict) or not isinstance(cfg.get("config"), dict) or "class_name" not in cfg:
        raise ValueError("holds no Keras model config")
    if str(cfg.get("module", "")).startswith("keras.layers"):
        raise ValueError(f"holds a {cfg['class_name']} layer, not a Keras model")
    ins, n_out = _io(cfg)
    info = {"config": cfg, "metadata": meta if isinstance(meta, dict) else {}, "inputs": ins, "n_outputs": n_out,
            "custom_objects": _custom_objects(cfg), "has_weights": "model.weights.h5" in names,
            "lambdas": _lambda_layers(cfg)}
    if len(ins) > 1:
        listed = ", ".join(f"{n!r} {tuple(s) if s else '(shape unknown)'}" for n, s, _ in ins)
        raise ValueError(f"is a model with {len(ins)} inputs: {listed}; the suite feeds one input (x) and one "
                         "target (y): save a model with a single input (e.g. concatenate the features first)")
    if n_out is not None and n_out > 1:
        raise ValueError(f"is a model with {n_out} outputs; the suite trains one output against one target (y)")
    if info["lambdas"]:
        raise ValueError(f"has Lambda code in layers ({', '.join(info['lambdas'])}) that Keras does not load "
                         "from a file (safe mode); replace each with a small layer class, registered with "
                         "@keras.saving.register_keras_serializable() " + WHERE_HINT + ", and save the model again")
    return info


def _lambda_layers(cfg: dict) -> list[str]:
    """Names of the layers holding Python code Keras does not load in safe mode: Lambda layers, and any layer
    with a lambda inside its config (a Dense whose activation is a lambda: ``__lambda__``)."""
    out = set()
    for d in _walk(cfg.get("config")):
        c = d.get("config")
        if not isinstance(c, dict) or "class_name" not in d or "layers" in c:
            continue
        if d["class_name"] == "Lambda" or any(x.get("class_name") == "__lambda__" for x in _walk(c)):
            name = str(c.get("name", "?"))
            out.add(name if d["class_name"] == "Lambda" else f"{name} ({d['class_name']})")
    return sorted(out)


def model_file(value: str, where: str = "parameters") -> tuple[Path, dict]:
    """The resolved .keras file and what its config says, or ``ParamError`` naming ``model_path``."""
    if not value:
        raise ParamError(f"{where}: key 'model_path' is required (empty); {MODEL_WHAT}")
    path = _existing("model_path", value, where, ".keras", MODEL_WHAT)
    st = path.stat()
    try:
        return path, _read_keras(str(path), st.st_mtime_ns, st.st_size)
    except ValueError as exc:
        raise ParamError(f"{where}: key 'model_path': {path} {exc}; {MODEL_WHAT}") from None
    except RecursionError:  # json.loads took it, the walk of the config did not
        raise ParamError(f"{where}: key 'model_path': {path} has a config nested too deeply to be a model's; "
                         f"{MODEL_WHAT}") from None


DATA_WHAT = "data_path is an .npz with arrays x (inputs) and y (targets): np.savez(\"d.npz\", x=x, y=y)"


def _npz_shapes(path: Path) -> dict:
    """Shapes and dtypes of the arrays of an .npz, read from their headers (nothing loaded)."""
    out = {}
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if name.endswith(".npy"):
                with zf.open(name) as f:
                    version = np.lib.format.read_magic(f)
                    if version not in ((1, 0), (2, 0)):
                        raise ValueError(f"array {name} in .npy format {version}")
                    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                        np.lib.format.read_array_header_2_0
                    shape, _, dtype = read(f)
                out[name[:-4]] = (tuple(shape), dtype)
    return out


def data_file(value: str, where: str = "parameters") -> tuple[Path, dict]:
    path = _existing("data_path", value, where, ".npz", DATA_WHAT)
    try:
        arrays = _npz_shapes(path)
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ParamError(f"{where}: key 'data_path': {path} is not a readable .npz ({exc}); {DATA_WHAT}") from None
    missing = [k for k in ("x", "y") if k not in arrays]
    if missing:
        raise ParamError(f"{where}: key 'data_path': {path} has no array {' or '.join(map(repr, missing))} "
                         f"(it has: {', '.join(sorted(arrays)) or 'none'}); {DATA_WHAT}")
    (xs, xd), (ys, yd) = arrays["x"], arrays["y"]
    for name, shape, dtype in (("x", xs, xd), ("y", ys, yd)):
        if dtype.hasobject or not shape:
            raise ParamError(f"{where}: key 'data_path': array {name!r} of {path} is "
                             f"{'an object array' if dtype.hasobject else 'a scalar'}: numbers, one row per sample")
    if xs[0] != ys[0]:
        raise ParamError(f"{where}: key 'data_path': {path}: x has {xs[0]} samples (shape {xs}), y {ys[0]} "
                         f"(shape {ys}): one target per input")
    return path, arrays
