"""custom (the model's file into Keras): ``load_model``, with ``import_modules`` imported first, each failure a
``ParamError`` naming the key. Imports ``custom_files`` and ``custom_checks``; imported by ``custom``, which
re-exports ``load_model``; Keras is imported inside ``load_model`` only, once the file's checks have passed.

    model = load_model({"model_path": "my.keras", "import_modules": "my_layers"}, where="custom")

What an untrusted model cannot do here: run code from its folder (the folder never goes on ``sys.path``; only the
modules ``import_modules`` names are looked up there, each alone), make Keras build more than ``custom_size``'s
bounds (checked on its config before Keras is imported), or leave Keras' extracted weights beside it (Keras reads the
archive through a link in a private temporary folder).
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import importlib.util
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from ..params import ParamError
from .custom_checks import _modules
from .custom_files import model_file, register_hint


def load_model(params: dict, where: str = "custom"):
    """``keras.saving.load_model(path, compile=False)`` after importing ``import_modules``; each failure a
    ``ParamError`` naming the key and what to do.

    The model's folder is never put on ``sys.path``: Keras' deserializer imports any module of keras_hub, keras_nlp
    or keras_cv that a config names, and a folder of that name beside the model would run. Only the modules
    ``import_modules`` names are looked up there (``_import_user_module``). Keras reads the archive through a link in
    a private temporary folder: it extracts large weights next to the file it opens (``saving_lib``:
    ``TemporaryDirectory(dir=<the file's folder>)``), so never beside the model."""
    path, info = model_file(params["model_path"], where)  # its size bounded before Keras is imported
    import keras

    for m in _modules(params.get("import_modules"), where):
        try:
            _import_user_module(m, path.parent)
        except Exception as exc:
            raise ParamError(f"{where}: key 'import_modules': importing {m!r} failed ({type(exc).__name__}: "
                             f"{exc}); put it next to the model file or on PYTHONPATH") from None
    try:
        with _private_link(path) as link:
            model = keras.saving.load_model(str(link), compile=False)
    except Exception as exc:
        customs, why = info["custom_objects"], _why(exc)
        if customs or "Could not locate" in why or "could not be deserialized" in why:
            raise ParamError(f"{where}: key 'model_path': Keras cannot rebuild {path} in this kernel ({why}); "
                             f"custom objects in its config: {', '.join(customs) or 'none found'}; "
                             + register_hint(customs)) from None
        raise ParamError(f"{where}: key 'model_path': {path} does not load as a Keras model ({why})") from None
    if not isinstance(model, keras.Model):
        raise ParamError(f"{where}: key 'model_path': {path} holds a {type(model).__name__}, not a keras.Model")
    return model


@contextlib.contextmanager
def _private_link(path: Path):
    """A link to ``path`` in a new private temporary folder (removed after): what Keras writes beside the file it
    opens goes there."""
    tmp = Path(tempfile.mkdtemp(prefix="cgb-keras-load-"))
    try:
        link = tmp / "model.keras"
        try:
            os.symlink(path, link)
        except OSError:  # no symlinks here: a copy
            shutil.copyfile(path, link)
        yield link
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _import_user_module(name: str, folder: Path):
    """Import the user's module ``name`` (never one of ``custom_checks.NOT_YOURS``: ``_modules`` refuses them), by
    importlib's documented find_spec / module_from_spec / exec_module steps: it is no edge of the suite's import
    graph (tests/test_imports.py checks that graph and resolves only literal module names). Its top-level package is
    looked up on ``sys.path`` (PYTHONPATH), else in ``folder`` (the model's) alone, by an explicit spec lookup:
    the folder never goes on ``sys.path``, so nothing else in it is importable."""
    if name in sys.modules:
        return sys.modules[name]
    top = name.split(".")[0]
    if top not in sys.modules and importlib.machinery.PathFinder.find_spec(top, sys.path) is None:
        spec = importlib.machinery.PathFinder.find_spec(top, [str(folder)])
        if spec is None:
            raise ModuleNotFoundError(f"No module named {top!r} on PYTHONPATH, sys.path or in {folder}")
        _exec(top, spec)
        if name == top:
            return sys.modules[top]
    spec = importlib.util.find_spec(name)  # imports the parent packages of a dotted name (from their own folders)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {name!r}")
    return _exec(name, spec)


def _exec(name: str, spec):
    """The module of ``spec`` run, as ``sys.modules[name]``; no bytecode written beside it (the model's folder)."""
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    no_pyc, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        sys.dont_write_bytecode = no_pyc
    return module


def _why(exc: BaseException) -> str:
    """The most telling first line of an exception chain (Keras wraps 'Could not locate class ...')."""
    chain = [exc]
    while (chain[-1].__cause__ or chain[-1].__context__) and len(chain) < 10:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
    found = re.search(r"Could not locate \w+ '[^']*'|Could not deserialize \w+ '[^']*' because its parent module "
                      r"[\w.]+ cannot be imported", " ".join(str(e) for e in chain))
    first = (str(exc).splitlines() or [""])[0][:300]
    return f"{type(exc).__name__}: " + (f"{found.group(0)}" if found else first)
