"""The record's fields, declared once: name, type, unit, what it means, how a record read back is checked, and
whether it is one of every record's keys.

    from helpers.record import fields as F
    rec[F.SAMPLES_PER_S]            # the name, never the string spelled out
    F.FIELDS["samples_per_s"].unit  # 'samples/s'

Each ``NAME = field("name", ...)`` both declares the field (``FIELDS``, in declaration order) and binds the name to
its constant, so code and the declaration cannot drift apart. ``kind`` is the check a record read back gets
(``helpers.record.check``: 'pos?' a finite number > 0, 'count?' an integer > 0, 'map?' a mapping, ...); None for a
field the report never reads. ``required``: every record holds it (None where not measured; ``schema.REQUIRED_KEYS``).
The knobs a record ran at are under ``params``; their table is ``helpers.params`` (``knob``: the top-level fields
that repeat one of them, so a reader knows the knob's spec says what values it takes).
"""

from __future__ import annotations

from dataclasses import dataclass

from helpers import params as _params


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # the Python type a record holds (None allowed where ``kind`` ends in '?')
    unit: str  # '' where it has none
    kind: str | None  # helpers.record.check's kind; None: not checked (the report does not read it)
    help: str
    required: bool = False  # one of every record's keys (schema.REQUIRED_KEYS)

    @property
    def knob(self) -> bool:
        """The field repeats a knob of ``params`` (its spec: ``helpers.params.COMMON``)."""
        return self.name in _params.COMMON


FIELDS: dict[str, Field] = {}


def field(name: str, type: str, unit: str, kind: str | None, help: str, required: bool = False) -> str:
    """Declare a record field; returns its name (bind it to the field's constant)."""
    if name in FIELDS:
        raise ValueError(f"record field {name!r} declared twice")
    FIELDS[name] = Field(name, type, unit, kind, help, required)
    return name


# every record's keys, in the order an empty record holds them (schema.empty_record)
SCHEMA = field("schema", "int", "", None, "the record's schema: which meanings its figures carry", True)
POINT_ID = field("point_id", "str", "", "text", "the point's id: its knobs' hash (helpers.record.ids)", True)
WORKLOAD = field("workload", "str", "", "text", "the workload's name", True)
BACKEND = field("backend", "str", "", "text", "Keras's backend: tensorflow, jax or torch", True)
DEVICE = field("device", "str", "", "text", "the device asked for: cpu or gpu", True)
DEVICE_USED = field("device_used", "str", "", "label?", "the device the backend placed the model on", True)
STATUS = field("status", "str", "", "text", "ok, failed or skipped", True)
REASON = field("reason", "str", "", "text?", "why a point failed or was skipped", True)
PARAMS = field("params", "dict", "", "map?", "every knob the point ran at (helpers.params)", True)
DATA_SOURCE = field("data_source", "str", "", "label?", "real or synthetic data", True)
N_TRAIN = field("n_train", "int", "samples", "count?", "training samples per epoch", True)
BATCH_SIZE = field("batch_size", "int", "samples", "count?", "samples per step (the global batch)", True)
EPOCHS = field("epochs", "int", "", "count?", "epochs run", True)
FIRST_EPOCH_S = field("first_epoch_s", "float", "s", "pos?", "the first epoch's training time, compilation included",
                      True)
EPOCH_S = field("epoch_s", "list[float]", "s", "poslist?", "each steady epoch's training time", True)
MEDIAN_EPOCH_S = field("median_epoch_s", "float", "s", "pos?", "the median steady epoch", True)
STEP_S = field("step_s", "float", "s", "pos?", "a steady step: the median epoch over its steps", True)
SAMPLES_PER_S = field("samples_per_s", "float", "samples/s", "pos?",
                      "training samples per second over the steady epochs", True)
HISTORY = field("history", "dict[str, list[float]]", "", "map?", "Keras's history: loss and metrics per epoch", True)
UTILISATION = field("utilisation", "dict", "", "map?", "CPU and GPU busy, memory and power over the steady epochs",
                    True)
ENERGY_J_PER_EPOCH = field("energy_j_per_epoch", "float", "J", "nonneg?", "GPU energy of a steady epoch", True)
FINGERPRINT = field("fingerprint", "dict", "", "map?", "the machine and software (helpers.measure.fingerprint)", True)
STARTED_AT = field("started_at", "str", "", "label?", "when the point started (ISO 8601)", True)
DURATION_S = field("duration_s", "float", "s", "nonneg?", "the notebook's run time", True)
NOTEBOOK = field("notebook", "str", "", "path?", "the executed notebook's path", True)

# further keys the report reads (helpers.record.check bounds them)
PRICE_PROFILE = field("price_profile", "str", "", "label?", "the price profile the runner named for its machine")
TRACEBACK = field("traceback", "str", "", "text?", "a failed point's traceback")
ENERGY_METHOD = field("energy_method", "str", "", "label?", "how the energy was measured")
ENERGY_REASON = field("energy_reason", "str", "", "text?", "why a point has no energy figure")
CONFIG_ID = field("config_id", "str", "", "label?", "the configuration's id: its repeats share it")
FLOPS_SOURCE = field("flops_source", "str", "", "text?", "where the FLOPs count came from")
INPUT_BYTES_PER_STEP = field("input_bytes_per_step", "int", "bytes", "nonneg?", "one step's input batch")
HOST_COPY_S_PER_STEP = field("host_copy_s_per_step", "float", "s", "nonneg?",
                             "one batch's copy from the host to the GPU")
FLOPS_PER_SAMPLE = field("flops_per_sample", "float", "FLOP", "nonneg?", "the whole step's FLOPs per sample")
REPEAT = field("repeat", "int", "", "index?", "which repeat of its configuration")
GLOBAL_BATCH_SIZE = field("global_batch_size", "int", "samples", "count?", "samples per step over every device")
DATA_INFO = field("data_info", "dict", "", "map?", "what the data loader did (augment, workers)")
EPOCH_SPREAD = field("epoch_spread", "dict", "s", "map?", "quartiles, minimum and maximum of the steady epochs")
STEPS_PER_EPOCH = field("steps_per_epoch", "int", "", "count?", "steps of an epoch")
STEADY_S = field("steady_s", "float", "s", "pos?", "the steady window: the steady epochs' training time")
WALL_S = field("wall_s", "float", "s", "nonneg?", "the point's wall time as the runner saw it")
ENERGY_ABOVE_IDLE_J_PER_EPOCH = field("energy_above_idle_j_per_epoch", "float", "J", "num?",
                                      "a steady epoch's GPU energy above the GPUs' idle power")
IDLE_POWER_W = field("idle_power_w", "float", "W", "nonneg?", "the GPUs' idle power before training")
ENERGY_WINDOW_S = field("energy_window_s", "float", "s", "nonneg?", "the window the energy was measured over")
EPOCH_TOTAL_S = field("epoch_total_s", "list[float]", "s", "poslist?", "each epoch's time, validation included")
VAL_S = field("val_s", "list[float]", "s", "nonneglist?", "each epoch's validation time")
UTILISATION_TIMELINE = field("utilisation_timeline", "list", "", "list?", "the sampler's readings over the run")
EPOCH_BOUNDS_S = field("epoch_bounds_s", "list", "s", "list?", "each epoch's start and end on the sampler's clock")
FIXTURE = field("fixture", "bool", "", "bool?", "a test's record, not a measurement")
HOST_BUSY = field("host_busy", "bool", "", "bool?", "another process used the point's cores while it was timed")
HOST_LOAD = field("host_load", "dict", "", "map?", "what else ran on the host (helpers.measure.host_load)")
MODEL_SHAPE = field("model_shape", "dict", "", "map?", "what a step launches (helpers.predict.shape)")
MODEL_PARAMS = field("model_params", "int", "", "count?", "the model's weights")
MODEL_LAYERS = field("model_layers", "list", "", "list?", "each computing layer (helpers.predict.layers)")
N_CLASSES = field("n_classes", "int", "", "count?", "the data's classes (the learning check)")
DATA_LEARNABLE = field("data_learnable", "bool", "", "bool?", "the data has something to learn (the learning check)")

# written by the point, read by the runner or kept for the record's reader (not checked)
SAMPLES_PER_S_SPREAD = field("samples_per_s_spread", "dict", "samples/s", None, "the spread over steady epochs")
COMPILE_OVERHEAD_S = field("compile_overhead_s", "float", "s", None, "first epoch less a steady one")
ACHIEVED_TFLOPS = field("achieved_tflops", "float", "TFLOP/s", None, "the model's FLOPs per second")
MFU = field("mfu", "float", "fraction", None, "model FLOPs utilisation: achieved over the devices' peak")
PEAK_TFLOPS = field("peak_tflops", "float", "TFLOP/s", None, "the devices' peak at the point's precision")
MODEL_FLOPS_PER_SAMPLE = field("model_flops_per_sample", "float", "FLOP", None,
                               "the model's FLOPs per sample, forward + backward")
OPTIMIZER_FLOPS_PER_STEP = field("optimizer_flops_per_step", "float", "FLOP", None, "the optimiser's FLOPs per step")
# the runner's, added before the record's one write
# set by the reader (helpers.record.upgrade), never written
PROTOCOL = field("protocol", "str", "", None, "'current' or 'earlier' (helpers.record.upgrade)")
CAVEATS = field("caveats", "list[str]", "", None, "what a reader should know of the figures (helpers.record.upgrade)")

REQUIRED = tuple(f.name for f in FIELDS.values() if f.required)
CHECKED = {f.name: f.kind for f in FIELDS.values() if f.kind is not None}
