"""The notebook parameters: one spec for defaults, allowed values and validation.

The same spec validates a grid file before anything runs (``helpers.grid``) and the
parameters a notebook received (first code cell after ``parameters``), so a bad value
gets the same message whether it came from ``run_all.sh`` or from papermill by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

BACKENDS = ("tensorflow", "jax", "torch")
DEVICES = ("cpu", "gpu")
DATA_SOURCES = ("auto", "real", "synthetic")
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")
JIT_CHOICES = ("auto", True, False)
PLACEMENTS = ("host", "device")
PLACEMENT_BACKENDS = ("jax", "torch")  # data_placement 'device': Keras fits backend tensors these two keep in place


class ParamError(ValueError):
    """A parameter (from a grid file or a notebook) is invalid; the message says what is allowed."""


@dataclass(frozen=True)
class Param:
    name: str
    kind: type | tuple  # python type(s) accepted
    help: str
    choices: tuple | None = None
    minimum: int | None = None
    nullable: bool = False
    positive: bool = False  # a number > 0 (``minimum`` is inclusive)

    def allowed(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        text = " or ".join(k.__name__ for k in kinds)
        if self.minimum is not None:
            text += f" >= {self.minimum}"
        if self.positive:
            text += " > 0"
        if self.nullable:
            text += " (or null)"
        return text

    def check(self, value: Any, where: str) -> None:
        if value is None:
            if self.nullable:
                return
            raise ParamError(f"{where}: key '{self.name}' is null; allowed: {self.allowed()}")
        if self.choices is not None:
            # bool is an int in Python: compare type as well for True/False choices
            if not any(value == c and type(value) is type(c) for c in self.choices):
                raise ParamError(
                    f"{where}: key '{self.name}' has value {value!r}; allowed: {self.allowed()}"
                )
            return
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        if isinstance(value, bool) and bool not in kinds:
            ok = False
        else:
            ok = isinstance(value, kinds)
        if not ok:
            raise ParamError(
                f"{where}: key '{self.name}' has value {value!r} of type {type(value).__name__}; "
                f"allowed: {self.allowed()}"
            )
        if (self.minimum is not None and value < self.minimum) or (self.positive and not 0 < value < float("inf")):
            raise ParamError(f"{where}: key '{self.name}' has value {value!r}; allowed: {self.allowed()}")


def _spec(*params: Param) -> dict[str, Param]:
    return {p.name: p for p in params}


# Every knob a workload notebook has. Workload notebooks may add their own (see workloads).
COMMON = _spec(
    Param("workload", str, "workload name (the notebook's name)"),
    Param("backend", str, "Keras backend", choices=BACKENDS),
    Param("device", str, "device to train on", choices=DEVICES),
    Param("batch_size", int, "samples per step", minimum=1),
    Param("epochs", int, "epochs (>= 2): the first is reported apart (compile), the rest are steady state",
          minimum=2),
    Param("n_train", int, "training samples (null = the whole dataset)", minimum=1, nullable=True),
    Param("n_val", int, "validation samples evaluated each epoch (0 = none)", minimum=0),
    Param("data_source", str, "auto: real if cached or reachable, else synthetic", choices=DATA_SOURCES),
    Param("threads", int, "CPU threads/cores for the framework (0 = all cores)", minimum=0),
    Param("precision", str, "Keras dtype policy", choices=PRECISIONS),
    Param("jit_compile", (str, bool), "XLA / torch.compile: 'auto', true or false", choices=JIT_CHOICES),
    Param("steps_per_execution", int, "training steps per compiled call (Keras' compile argument; > 1 not with "
          "the torch backend)", minimum=1),
    Param("seed", int, "random seed", minimum=0),
    Param("min_steady_s", (int, float), "seconds of steady-state epochs at least: training goes on (same model, "
          "no recompilation) past `epochs` until the steady epochs add up to this", positive=True),
    Param("gpus", int, "devices per host trained data-parallel (keras.distribution, JAX only; > 1 needs device: "
          "gpu); the global batch is batch_size x gpus x hosts", minimum=1),
    Param("hosts", int, "processes, one per host, of one data-parallel point (JAX's distributed runtime; the "
          "coordinator and process id come from the environment: helpers.point.distribution)", minimum=1),
    Param("processes", int, "processes of one data-parallel point started by the runner on this host, each on its "
          "own `gpus` GPU(s) (JAX's distributed runtime on 127.0.0.1; helpers.point.launcher); JAX only, with hosts: 1",
          minimum=1),
    Param("data_placement", str, "where the training set lives: 'host' (numpy arrays, each batch copied to the "
          "device as Keras fits arrays) or 'device' (put on the device once, batches served from there; jax and "
          "torch, workloads whose data are arrays; helpers.point.placement)", choices=PLACEMENTS),
    Param("profile", bool, "after the timed window, a few steady-state steps under the framework's own "
          "profiler: the trace kept beside the record, the step's breakdown in it (helpers.point.profiling); the "
          "timed figures are not touched"),
    Param("output_dir", str, "folder for the record ('' = outputs/adhoc)"),
    Param("point_id", str, "grid point id ('' = computed from the parameters and the machine)"),
)

# Defaults of the common knobs (a workload's own defaults override them; a grid overrides both).
COMMON_DEFAULTS = {"n_val": 0, "data_source": "auto", "threads": 0, "precision": "float32",
                   "jit_compile": "auto", "steps_per_execution": 1, "seed": 0, "min_steady_s": 2.0, "gpus": 1,
                   "hosts": 1, "processes": 1, "data_placement": "host", "profile": False, "output_dir": "",
                   "point_id": ""}

# Knobs added after points were first run, with the value those points ran at. A record without the key ran
# so: at that value the knob stays out of the point id (a point keeps its id, and resume its records, across
# the upgrade; any other value makes another point) and out of the report's configuration text (an old record
# is the same configuration as a new one at that value, e.g. the published reference beside today's points).
# (input_dtype is a knob of the image workloads: their extra_params)
LATER_DEFAULTS = {"gpus": 1, "hosts": 1, "processes": 1, "steps_per_execution": 1, "data_placement": "host",
                  "profile": False, "input_dtype": "float32"}

# Keys the runner reads from a grid that are not notebook parameters (top level, ``defaults`` or a block):
# the per-point limit in seconds and the separate runs of each point (``helpers.grid``).
RUNNER_KEYS = ("timeout_s", "repeats")

# Notebook parameters the runner sets for every point (where its record goes, its id): a grid that sets
# them would be silently overridden, so grids may not.
RUNNER_SET = ("output_dir", "point_id")


def validate(params: dict[str, Any], where: str = "parameters", spec: dict[str, Param] | None = None,
             workloads: tuple[str, ...] | None = None) -> None:
    """Raise ParamError naming ``where``, the key and the allowed values for the first bad entry."""
    spec = COMMON if spec is None else spec
    for key, value in params.items():
        if key not in spec:
            close = [k for k in spec if _similar(k, key)]
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ParamError(
                f"{where}: unknown key '{key}'{hint}; allowed keys: {', '.join(sorted(spec))}"
            )
        spec[key].check(value, where)
    if workloads is not None and "workload" in params and params["workload"] not in workloads:
        raise ParamError(
            f"{where}: key 'workload' has value {params['workload']!r}; allowed: one of "
            + ", ".join(repr(w) for w in workloads)
        )


# Keras' own words when it refuses steps_per_execution > 1 with the torch backend (keras/src/backend/torch/trainer.py)
TORCH_STEPS_PER_EXECUTION = "`steps_per_execution` must be 1 with the PyTorch backend"


def check_combination(params: dict[str, Any], where: str = "parameters") -> None:
    """Keys against each other, where Keras would refuse the pair only once the model is compiled:
    ``steps_per_execution`` > 1 with the torch backend; and ``data_placement: device`` where it cannot hold
    (the TensorFlow backend, several hosts)."""
    spe = params.get("steps_per_execution", 1)
    backend = params.get("backend")
    if backend == "torch" and isinstance(spe, int) and spe > 1:
        raise ParamError(f"{where}: key 'steps_per_execution' has value {spe!r} with backend 'torch'; allowed: 1 "
                         f"(Keras: \"{TORCH_STEPS_PER_EXECUTION}\")")
    if params.get("data_placement") == "device":
        if backend not in PLACEMENT_BACKENDS:
            raise ParamError(f"{where}: key 'data_placement' has value 'device' with backend {backend!r}; allowed "
                             f"with backend {' or '.join(map(repr, PLACEMENT_BACKENDS))} (with TensorFlow, Keras "
                             "feeds fit through a tf.data pipeline on the host)")
        for key in ("hosts", "processes"):
            n = params.get(key, 1)
            if isinstance(n, int) and n > 1:
                raise ParamError(f"{where}: key 'data_placement' has value 'device' with {key}={n}; allowed with "
                                 f"{key}: 1 (several processes feed each its shard of numpy arrays)")


def _similar(a: str, b: str) -> bool:
    import difflib

    return difflib.SequenceMatcher(None, a, b).ratio() >= 0.75
