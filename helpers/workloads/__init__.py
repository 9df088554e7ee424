"""The workload registry: one entry per workload, keyed by the workload notebook's name.

Each entry gives the source document it reproduces, its default parameters, a model builder and a
data loader. Builders and loaders import Keras inside the function, so importing this package
imports no framework (the device must be forced first).

    build_model("cnn_cifar10", params)  -> a compiled keras.Model
    load_data("cnn_cifar10", params)    -> helpers.data.loaders.Dataset

One module per workload in this package registers its entry with ``register`` (from
``.registry``, re-exported here); ``_MODULES`` lists them. To add a workload: a module here, its
line in ``_MODULES``, its notebook in ``notebooks/``. Helper modules that register nothing
(``registry``, ``lstm``, ``imdb``, ``shift``, ``custom_files``, ``custom_checks``, ``custom_data``) are not listed.
"""

from __future__ import annotations

import importlib

from .registry import (
    REGISTRY,
    Workload,
    build_model,
    complete,
    contents,
    defaults,
    get,
    knobs,
    load_data,
    names,
    note,
    register,
)

__all__ = ["REGISTRY", "Workload", "build_model", "complete", "contents", "defaults", "get", "knobs", "load_data",
           "names", "note", "register"]

# The modules that register workloads (imported on first use of the registry; none imports Keras
# at import time).
_MODULES = ("cnn_cifar10", "mnist", "vgg_cifar10", "resnet50", "cnn_256", "catsdogs",
            "fasttext_imdb", "bilstm_imdb", "lstm_textgen", "custom")
for _m in _MODULES:
    importlib.import_module(f"{__name__}.{_m}")
