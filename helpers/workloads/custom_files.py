"""custom (1 of 4): the user's files, read without Keras: the ``.keras`` archive (a zip: config.json,
metadata.json) and the ``.npz`` (array headers only), each checked with a ``ParamError`` naming the key.

    path, info = model_file("my.keras")    # info: config (class_name, compile_config: no layers), inputs, ...
    path, arrays = data_file("d.npz")      # arrays: {"x": (shape, dtype), "y": (shape, dtype)}
    resolve("my.keras")                    # (the file or None, the places tried): cwd, $PWD, project root
    digest("my.keras")                     # the file's sha256 (None: no such file): in the point id, the record

Imported by ``custom_checks`` (grid validation, the notebook's first cell), ``custom_data`` and ``custom``
(the workload); imports none of them, only ``custom_json`` (the config parsed within bounds on what parsing it
makes, and walked) and ``custom_size`` (what the config asks Keras to build: layers, depth, parameters, bounded).
A config naming a module of keras_hub / keras_nlp / keras_cv is refused unless that package is the one installed in
the environment (``custom_json.check_installed``): Keras imports such a module by name while loading the model,
wherever Python finds its package. What is kept of a file is a small summary (``info``), never its parsed config.
The workload's documentation is ``custom``'s docstring.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
import zipfile
from pathlib import Path

import numpy as np

from ..params import ParamError
from ..paths import PROJECT_ROOT
from . import custom_json, custom_size

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


def _io(cfg: dict) -> tuple[list, int | None]:
    """From a model config: its inputs [(name, batch shape, dtype)] and its number of outputs (None: unknown,
    a subclassed model); ``ValueError`` where the config is not shaped as Keras writes one."""
    try:
        return _io_of(cfg)
    except (AttributeError, TypeError, IndexError, KeyError) as exc:
        raise ValueError(f"holds a model config whose inputs and outputs cannot be read ({type(exc).__name__}: "
                         f"{str(exc)[:100]}): not one saved by Keras") from None


def _io_of(cfg: dict) -> tuple[list, int | None]:
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


def _read_keras(path: str) -> dict:
    """What the rest needs of a .keras file's config.json and metadata.json, checked (a summary: never the parsed
    config); ``ValueError`` with the reason. Each member is bounded in bytes (``_member``), then in JSON values and
    depth (``custom_json.parse``)."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            if "config.json" not in names:
                raise ValueError("is a zip archive without config.json: not a model saved by Keras 3")
            cfg = custom_json.parse(_member(zf, "config.json"), "config.json")
            meta = custom_json.parse(_member(zf, "metadata.json"), "metadata.json") if "metadata.json" in names else {}
            _no_bomb(zf)  # the weights too (and any other member): Keras would inflate them in the kernel
    except zipfile.BadZipFile:
        raise ValueError("is not a .keras archive (not a zip file)") from None
    except OSError as exc:
        raise ValueError(f"cannot be read ({exc.strerror or exc})") from None
    if not isinstance(cfg, dict) or not isinstance(cfg.get("config"), dict) or "class_name" not in cfg:
        raise ValueError("holds no Keras model config")
    if str(cfg.get("module", "")).startswith("keras.layers"):
        raise ValueError(f"holds a {str(cfg['class_name'])[:100]} layer, not a Keras model")
    ins, n_out = _io(cfg)
    if len(ins) > 1:
        listed = ", ".join(f"{n!r} {tuple(s) if s and isinstance(s, list) else '(shape unknown)'}" for n, s, _ in ins)
        raise ValueError(f"is a model with {len(ins)} inputs: {listed}; the suite feeds one input (x) and one "
                         "target (y): save a model with a single input (e.g. concatenate the features first)")
    if n_out is not None and n_out > 1:
        raise ValueError(f"is a model with {n_out} outputs; the suite trains one output against one target (y)")
    customs, lambdas = custom_json.scan(cfg)
    if lambdas:
        named = ", ".join(lambdas[:20]) + (f" and {len(lambdas) - 20:,} more" if len(lambdas) > 20 else "")
        raise ValueError(f"has Lambda code in layers ({named}) that Keras does not load "
                         "from a file (safe mode); replace each with a small layer class, registered with "
                         "@keras.saving.register_keras_serializable() " + WHERE_HINT + ", and save the model again")
    custom_json.check_installed(custom_json.keras_packages(cfg))
    size = custom_size.size(cfg)
    custom_size.check(size)  # what Keras would build, bounded before it builds anything
    return {"config": {k: v for k, v in cfg.items() if k != "config"},  # class_name, compile_config: not its layers
            "metadata": {k: v for k, v in meta.items() if isinstance(v, (str, int, float, bool)) and len(str(v)) <= 200}
            if isinstance(meta, dict) else {}, "inputs": ins, "n_outputs": n_out,
            "custom_objects": customs, "has_weights": "model.weights.h5" in names,
            "lambdas": lambdas, "size": {"layers": size.layers, "depth": size.depth, "params_estimate": size.params}}


# The summaries (and refusals) of the last files read, by path, mtime and size (a grid names one file in many points):
# at most CACHE_ENTRIES, and CACHE_BYTES of JSON in all (~200 MB of objects at worst: [{}, {}, ...], 24 bytes a byte);
# never a parsed config: sixteen configs of [{}, {}, ...] kept whole took the validating runner past 3.8 GB (a
# MemoryError, exit 1). A summary larger than CACHE_BYTES is not kept: its file is read again at each check.
CACHE_ENTRIES, CACHE_BYTES = 16, 8 * 2**20
_CACHE: dict = {}  # key -> (summary or refusal, its size as JSON)
_CACHE_LOCK = threading.Lock()


def _read_cached(path: str, mtime_ns: int, size: int) -> dict:
    """``_read_keras``'s summary, or its ``ValueError``, read once per content while it stays in the cache."""
    key = (path, mtime_ns, size)
    with _CACHE_LOCK:
        got = _CACHE.pop(key, None)
        if got is not None:
            _CACHE[key] = got  # the most recently used last
    if got is None:
        try:
            info = _read_keras(path)
        except ValueError as exc:
            info = str(exc)
        got = info, len(json.dumps(info, default=str))
        if got[1] <= CACHE_BYTES:
            with _CACHE_LOCK:
                _CACHE[key] = got
                while len(_CACHE) > CACHE_ENTRIES or sum(n for _, n in _CACHE.values()) > CACHE_BYTES:
                    del _CACHE[next(iter(_CACHE))]
    if isinstance(got[0], str):
        raise ValueError(got[0])
    return got[0]


def model_file(value: str, where: str = "parameters") -> tuple[Path, dict]:
    """The resolved .keras file and what its config says, or ``ParamError`` naming ``model_path``."""
    if not value:
        raise ParamError(f"{where}: key 'model_path' is required (empty); {MODEL_WHAT}")
    path = _existing("model_path", value, where, ".keras", MODEL_WHAT)
    st = path.stat()
    try:
        return path, _read_cached(str(path), st.st_mtime_ns, st.st_size)
    except ValueError as exc:
        raise ParamError(f"{where}: key 'model_path': {path} {exc}; {MODEL_WHAT}") from None
    except RecursionError:  # no walk recurses (custom_json), and depth is bounded: kept as the last guard
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
