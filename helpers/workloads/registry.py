"""The registry itself: the ``Workload`` record, ``register`` and the look-ups (no framework import).

    from .registry import Workload, register   # in a workload module
    register(Workload(name="cnn_cifar10", source=..., defaults=..., build=..., load=...))

Workload modules import from here, not from the package: the package (``helpers.workloads``)
imports them to register their entries and re-exports everything below, so the import graph has
no cycle (package -> workload module -> registry).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from helpers import params as _params
from helpers.data import loaders as _data


@dataclass(frozen=True)
class Workload:
    name: str
    source: str  # seed document it reproduces
    summary: str
    defaults: dict
    build: Callable[[dict], object]  # params -> uncompiled keras.Model
    compile_args: Callable[[dict], dict]  # params -> kwargs of model.compile (optimizer, loss, metrics)
    load: Callable[[dict], _data.Dataset]
    expected_params: int | None = None  # parameter count the source gives
    extra_params: dict = field(default_factory=dict)  # workload-only knobs: name -> helpers.params.Param
    # after training: facts for the record that only the model/backend can tell (e.g. LSTM kernel)
    describe: Callable[[object, dict], dict] | None = None
    # a knob's comment in this workload's notebook where it says more than the knob's own ``Param.note``: a note
    # starting with "(" is added after the knob's own, any other replaces it
    notes: dict = field(default_factory=dict)


REGISTRY: dict[str, Workload] = {}


def register(w: Workload) -> Workload:
    """Add ``w`` to the registry; its ``build``, ``compile_args`` and ``load`` get every knob (``complete``: the
    values given, else the defaults), so that a workload's code reads ``params[knob]`` and keeps no default."""
    if not w.name.isidentifier():
        raise ValueError(f"workload name must be a valid identifier: {w.name!r}")

    def completing(fn):
        return lambda params: fn(complete({**params, "workload": w.name}))

    w = dataclasses.replace(w, build=completing(w.build), compile_args=completing(w.compile_args),
                            load=completing(w.load))
    REGISTRY[w.name] = w
    return w


def names() -> tuple[str, ...]:
    return tuple(sorted(REGISTRY))


def get(name: str) -> Workload:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(names())}") from None


def knobs(name: str) -> dict:
    """Every knob of workload ``name``: the common ones (``helpers.params.COMMON``), then its own."""
    return {**_params.COMMON, **get(name).extra_params}


def contents(params: dict) -> dict:
    """What the files a point reads hold: knob -> sha256, for each knob naming a file (its ``Param`` has a
    ``digest``: custom's ``model_path``, ``data_path``) with a value; {} for the workloads that read none. Part
    of the point id (``record.ids.point_id``): a file saved again with other contents is another point."""
    try:
        spec = knobs(params["workload"])
    except KeyError:
        return {}
    out = {}
    for k, p in spec.items():
        digest = getattr(p, "digest", None)
        if digest is not None and params.get(k) and (h := digest(params[k])):
            out[k] = h
    return out


def defaults(name: str) -> dict:
    """Workload ``name``'s values where a grid gives none: the common defaults, overridden by its own."""
    return {**_params.COMMON_DEFAULTS, **get(name).defaults}


def complete(params: dict) -> dict:
    """``params`` with every knob of its workload: the values given, else the knob's default (its ``Param``, then
    the workload's own ``defaults``): the one place a knob not given gets its value. Code past this reads
    ``params[knob]``, never a default of its own."""
    spec = knobs(params["workload"])
    base = {k: p.default for k, p in spec.items() if p.default is not _params.REQUIRED}
    return {**base, **defaults(params["workload"]), **params}


def note(name: str, knob: str) -> str:
    """The comment of ``knob`` in workload ``name``'s parameters cell."""
    p, own = knobs(name)[knob], get(name).notes.get(knob)
    base = p.note or p.help
    return own if own and not own.startswith("(") else f"{base} {own}" if own else base


def build_model(name: str, params: dict):
    """The workload's model, compiled with its optimiser, loss, metrics, ``jit_compile`` and
    ``steps_per_execution``; ``params`` completed with the workload's defaults (``complete``)."""
    w = get(name)
    params = complete({**params, "workload": name})
    model = w.build(params)
    jit = params["jit_compile"]
    model.compile(**w.compile_args(params), jit_compile=jit,
                  steps_per_execution=int(params["steps_per_execution"] or 1))
    return model


def load_data(name: str, params: dict) -> _data.Dataset:
    """The workload's data for ``params``, completed with the workload's defaults (``complete``)."""
    return get(name).load(complete({**params, "workload": name}))
