"""The notebook parameters: every knob defined once, with its default, allowed values, help and note.

The same spec validates a grid file before anything runs (``helpers.grid``) and the
parameters a notebook received (first code cell after ``parameters``), so a bad value
gets the same message whether it came from ``run_all.sh`` or from papermill by hand. The notebooks'
parameters cells are generated from it (``helpers.workloads.cells``; a test compares), and docs/knobs.md too
(``helpers.runner.knobs_doc``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

BACKENDS = ("tensorflow", "jax", "torch")
DEVICES = ("cpu", "gpu")
DATA_SOURCES = ("auto", "real", "synthetic")
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")
JIT_CHOICES = ("auto", True, False)
PLACEMENTS = ("host", "device", "staged")
BATCHNORM_STATS = ("global", "per_device")  # helpers.point.batchnorm
PLACEMENT_BACKENDS = ("jax", "torch")  # data_placement 'device': Keras fits backend tensors these two keep in place


class ParamError(ValueError):
    """A parameter (from a grid file or a notebook) is invalid; the message says what is allowed."""


REQUIRED = object()  # a knob without a default: each workload (or the grid) gives its value

# The largest integer any knob takes where it names no tighter bound: a knob's value is written into the point's
# record, and the record reader refuses an integer beyond +-2**53 (``helpers.record.limits.MAX_INT``: not exact as a
# float); a value past it would run, then be neither reported nor run again (tests/test_hostile_bounds.py walks
# every knob's bound against the reader's).
MAX_KNOB_INT = 2**53


@dataclass(frozen=True)
class Param:
    name: str
    kind: type | tuple  # python type(s) accepted
    help: str
    choices: tuple | None = None
    minimum: int | None = None
    maximum: int | float | None = None  # inclusive; an int knob without one is bounded by MAX_KNOB_INT
    nullable: bool = False
    positive: bool = False  # a number > 0 (``minimum`` is inclusive)
    default: Any = REQUIRED  # the value where neither the grid nor the workload gives one
    example: Any = None  # a notebook opened by hand runs with this where the knob has no default
    note: str = ""  # its comment in the notebooks' parameters cell (a workload's ``notes`` may say it its way)

    def allowed(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        text = " or ".join(k.__name__ for k in kinds)
        if self.minimum is not None:
            text += f" >= {self.minimum}"
        if self.positive:
            text += " > 0"
        if self.upper() is not None:
            text += (" and" if self.minimum is not None or self.positive else "") + f" <= {self.upper_text()}"
        if self.nullable:
            text += " (or null)"
        return text

    def upper(self) -> int | float | None:
        """The largest value allowed: ``maximum``, else ``MAX_KNOB_INT`` for a knob that takes integers."""
        if self.maximum is not None:
            return self.maximum
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        return MAX_KNOB_INT if int in kinds and self.choices is None else None

    def upper_text(self) -> str:
        top = self.upper()
        return "2**53" if top == MAX_KNOB_INT else f"{top:,}"

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
        top = self.upper()
        if ((self.minimum is not None and value < self.minimum) or (self.positive and not 0 < value < float("inf"))
                or (top is not None and not value <= top)):
            raise ParamError(f"{where}: key '{self.name}' has value {value!r}; allowed: {self.allowed()}")


def _spec(*params: Param) -> dict[str, Param]:
    return {p.name: p for p in params}


# Every knob a workload notebook has. Workload notebooks may add their own (see workloads).
COMMON = _spec(
    Param("workload", str, "workload name (the notebook's name)", note="workload name (this notebook)"),
    Param("backend", str, "Keras backend", choices=BACKENDS, example="jax",
          note="Keras backend: tensorflow, jax or torch"),
    Param("device", str, "device to train on", choices=DEVICES, example="cpu",
          note="cpu or gpu (a gpu point without a usable GPU is recorded as skipped)"),
    Param("batch_size", int, "samples per step", minimum=1, maximum=2**31 - 1, note="samples per step"),
    Param("epochs", int, "epochs (>= 2): the first is reported apart (compile), the rest are steady state",
          minimum=2, maximum=100_000, note="epochs; the first is reported apart (compile), the rest are steady state"),
    Param("epochs_planned", int, "epochs you plan to train: the report's break-even (when the GPU pays off) and "
          "time for that many; null = the source's count, else 10; not part of the point id (measures nothing)",
          minimum=1, maximum=1_000_000, nullable=True, default=None,
          note="epochs you plan to train, for the report's break-even"),
    Param("n_train", int, "training samples (null = the whole dataset)", minimum=1, nullable=True,
          note="training samples (None: the whole dataset)"),
    Param("n_val", int, "validation samples evaluated each epoch (0 = none)", minimum=0, default=0,
          note="validation samples evaluated each epoch (0: none)"),
    Param("data_source", str, "auto: real if cached or reachable, else synthetic", choices=DATA_SOURCES,
          default="auto", note="auto: real data if cached or reachable, else synthetic; or real / synthetic"),
    Param("threads", int, "CPU threads/cores for the framework (0 = all cores)", minimum=0, maximum=65_536, default=0,
          note="CPU cores for the framework (0: all cores)"),
    Param("precision", str, "Keras dtype policy", choices=PRECISIONS, default="float32",
          note="float32, mixed_float16 or mixed_bfloat16"),
    Param("jit_compile", (str, bool), "XLA / torch.compile: 'auto', true or false", choices=JIT_CHOICES,
          default="auto", note='XLA / torch.compile: "auto", True or False'),
    Param("steps_per_execution", int, "training steps per compiled call (Keras' compile argument; > 1 not with "
          "the torch backend)", minimum=1, maximum=1_000_000, default=1,
          note="training steps per compiled call (Keras compile; > 1 not on torch)"),
    Param("seed", int, "random seed (NumPy takes < 2**32)", minimum=0, maximum=2**32 - 1, default=0,
          note="random seed"),
    Param("min_steady_s", (int, float), "seconds of steady-state epochs at least: training goes on (same model, "
          "no recompilation) past `epochs` until the steady epochs add up to this", positive=True, maximum=86_400,
          default=2.0,
          note="steady-state seconds at least: epochs go on past `epochs` until the window is this long"),
    Param("gpus", int, "devices per host trained data-parallel (keras.distribution, JAX only; > 1 needs device: "
          "gpu); the global batch is batch_size x gpus x hosts", minimum=1, maximum=4_096, default=1,
          note="devices per host trained data-parallel (keras.distribution, JAX only; more than 1 needs a gpu)"),
    Param("hosts", int, "processes, one per host, of one data-parallel point (JAX's distributed runtime; the "
          "coordinator and process id come from the environment: helpers.point.launcher)", minimum=1, maximum=65_536,
          default=1,
          note="processes, one per host (coordinator and process id from the environment: README)"),
    Param("processes", int, "processes of one data-parallel point started by the runner on this host, each on its "
          "own `gpus` GPU(s) (JAX's distributed runtime on 127.0.0.1; helpers.point.launcher); JAX only, with hosts: 1",
          minimum=1, maximum=4_096, default=1,
          note="processes on this host, one per GPU, started by the runner (docs/multi_gpu.md)"),
    Param("data_placement", str, "where the training set lives: 'host' (numpy arrays, each batch copied to the "
          "device as Keras fits arrays), 'device' (put on the device once, batches served from there; one process) "
          "or 'staged' (numpy on the host, each batch put on the devices ahead of the step by a thread of its own; "
          "several processes too; helpers.point.staging); jax and torch, workloads whose data are arrays",
          choices=PLACEMENTS, default="host",
          note="host (numpy, as Keras copies it), device (put there once) or staged (ahead of the step)"),
    Param("batchnorm_stats", str, "whose batch a BatchNormalization layer normalises by on several devices: "
          "'global' (Keras' DataParallel: the global batch, its statistics all-reduced in every such layer) or "
          "'per_device' (each device's part of the batch, as PyTorch's DistributedDataParallel; "
          "helpers.point.batchnorm); the same on one device", choices=BATCHNORM_STATS, default="global",
          note="global (Keras: all-reduced in each layer) or per_device (as PyTorch DDP)"),
    Param("profile", bool, "after the timed window, a few steady-state steps under the framework's own "
          "profiler: the trace kept beside the record, the step's breakdown in it (helpers.point.profiling); the "
          "timed figures are not touched", default=False,
          note="True: after the timed window, a few steps under the framework's profiler (docs/profiling.md)"),
    Param("output_dir", str, "folder for the record ('' = outputs/adhoc)", default="",
          note="folder for the record (empty: outputs/adhoc/<time>)"),
    Param("point_id", str, "grid point id ('' = computed from the parameters and the machine)", default="",
          note="grid point id (empty: computed from the parameters and the machine)"),
)

# Defaults of the common knobs (a workload's own defaults override them; a grid overrides both).
COMMON_DEFAULTS = {name: p.default for name, p in COMMON.items() if p.default is not REQUIRED}

# The summary notebook's knobs (notebooks/summary.ipynb; the runner sets inputs and csv_dir, and the price and
# reference options of its command line).
REPORT = _spec(
    Param("inputs", list, "folders of records", default=[], note="folders of records (empty list: outputs/)"),
    Param("base_config", dict, "base of relative time and cost: column -> value",
          default={"device": "cpu", "backend": "tensorflow"},
          note="base of relative time and cost: column -> value"),
    Param("host_profiles", dict, "host name -> profile in params/prices.yaml", default={},
          note="host name -> profile in params/prices.yaml (wins over matching by hardware)"),
    Param("timeline_run", str, "the run whose utilisation is drawn", default="",
          note="point id (prefix) or record-path part of the run whose utilisation is drawn; empty: pick one"),
    Param("prices_file", str, "prices YAML", default="", note="prices YAML; empty: params/prices.yaml"),
    Param("published_file", str, "published figures CSV", default="",
          note="published figures CSV; empty: data/published_figures.csv"),
    Param("use_reference", bool, "compare with the bundled reference GPU", default=True,
          note="no GPU run in these records: compare with the bundled reference GPU (reference/)"),
    Param("price_set", str, "prices in params/prices.yaml", default="current",
          note='prices in params/prices.yaml: "current" (today\'s) or "2017" (seed 002\'s table)'),
    Param("csv_dir", str, "folder for results.csv and configurations.csv", default="",
          note="folder to write results.csv and configurations.csv into (empty: not written)"),
    Param("banner", str, "a line shown above the report (the runner's: 'partial: 14 of 60 runs ...')", default="",
          note="a line shown above everything (the runner's: a run that has not ended says partial)"),
)


def literal(value) -> str:
    """``value`` as a Python literal in a notebook's parameters cell (strings in double quotes)."""
    if isinstance(value, str):
        import json

        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def parameters_cell(lines: list[tuple[str, Any, str]]) -> str:
    """A notebook's parameters cell: one ``name = value  # note`` line a knob (papermill reads the comment as help;
    no ``=`` in it)."""
    for name, _, note in lines:
        if "=" in note:
            raise ValueError(f"the note of knob {name!r} has '=' (papermill would read it as code): {note!r}")
    return "\n".join(f"{name} = {literal(value)}  # {note}" for name, value, note in lines)


def report_cell() -> str:
    """The summary notebook's parameters cell, from ``REPORT``."""
    return parameters_cell([(n, p.default, p.note or p.help) for n, p in REPORT.items()])


# Knobs added after points were first run, with the value those points ran at. A record without the key ran
# so: at that value the knob stays out of the point id (a point keeps its id, and resume its records, across
# the upgrade; any other value makes another point) and out of the report's configuration text (an old record
# is the same configuration as a new one at that value, e.g. the published reference beside today's points).
# (input_dtype is a knob of the image workloads: their extra_params)
LATER_DEFAULTS = {**{k: COMMON_DEFAULTS[k] for k in ("gpus", "hosts", "processes", "steps_per_execution",
                                                      "data_placement", "profile", "batchnorm_stats")},
                  "input_dtype": "float32",  # the image workloads' own knob: their default (a test compares)
                  "learning_rate": 0.001}  # mlp_mnist's own knob: the source's RMSprop() rate

# Knobs that change what a model learns and not the work of a step (a workload's own): the report names them in a
# configuration only away from their LATER_DEFAULTS value, and the verdict takes its fastest side over them as over
# threads and compilation settings, among the configurations that learned (helpers.report.derive.learning)
LEARNING_KNOBS = ("learning_rate",)


def learning_default(knob: str, value) -> bool:
    """Whether ``knob`` is a knob of what is learned at its default (``LEARNING_KNOBS``): left out of a label."""
    return knob in LEARNING_KNOBS and value == LATER_DEFAULTS[knob]

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


def _similar(a: str, b: str) -> bool:
    import difflib

    return difflib.SequenceMatcher(None, a, b).ratio() >= 0.75
