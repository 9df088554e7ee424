"""The record's keys and schema: what a record holds, an empty one, and whether an object read back is one.

Keys (DESIGN.md): schema, point_id, workload, backend, device, device_used, status, reason, params,
data_source, n_train, batch_size, epochs, first_epoch_s, epoch_s, median_epoch_s, step_s,
samples_per_s, history, utilisation, energy_j_per_epoch, fingerprint, started_at, duration_s,
notebook. More keys may be added; renaming one, or changing its meaning, needs a new ``SCHEMA``.

Schema 2 changed meanings: ``epoch_s``/``first_epoch_s``/``samples_per_s`` are the training
part of an epoch with every clock read after a device sync (schema 1 on async backends, JAX and GPU
TF/torch, let training run inside the validation window when ``n_val`` > 0); ``energy_j_per_epoch`` is
the GPU energy counter differenced at synchronised epoch bounds on the GPUs the point used (schema 1:
mean 1-s averaged power x median epoch, summed over every GPU NVML saw); ``utilisation`` is over the
GPUs used only and adds ``proc_cpu_pct``; ``threads_in_effect`` replaces ``threads_used``; the
fingerprint is taken before the CPU affinity is narrowed (``cpu_available`` added). New keys:
``epoch_with_val_s``, ``median_epoch_with_val_s``, ``timing``, ``energy_method``, ``energy_j_epochs``,
``energy_with_val_j_epochs``, ``first_epoch_energy_j``, ``energy_above_idle_j_per_epoch``,
``energy_above_idle_j_epochs``, ``idle_power_w``, ``idle_window_s``, ``idle_method``,
``gpu_indices_used``. ``helpers.record.reader.read_records`` reads every schema in ``READABLE_SCHEMAS``.

Schema 3: ``energy_j_per_epoch`` (and ``energy_above_idle_j_per_epoch``) is the steady window's counter energy
over its epochs, a mean (schema 2: the median epoch's, which the counter's 0.1-s steps biased: an H100 epoch of
27 ms read 0 J); a steady window under ``energy.ENERGY_MIN_WINDOW_S`` has none and says why
(``energy_reason``). ``mfu`` / ``peak_tflops`` of a float32 point on a GPU with TF32 tensor cores are against
the TF32 peak (schema 2: plain FP32, which a JAX ResNet-50 on an H100 read as 99%). New key: ``energy_window_s``.

Schema 4: ``mfu`` / ``achieved_tflops`` count the model's FLOPs (forward + backward, ``model_flops_per_sample``),
the optimiser apart (``optimizer_flops_per_step``); schema 3 and older counted the whole step (``flops_per_sample``,
whose meaning is kept). The report computes MFU from the FLOPs for every schema (``helpers.measure.flops_table``),
so records of both meanings stand side by side. New keys: ``host_load`` and ``host_busy``
(``helpers.measure.host_load``).

Ids and file names: ``helpers.record.ids``; the atomic writer: ``helpers.record.writer``; reading a folder
of records back: ``helpers.record.reader``, which returns every record in the current shape
(``helpers.record.upgrade``: what an older schema means, said in ``protocol``, ``caveats`` and the later knobs'
values): no reader past it branches on a schema number.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from helpers.record import fields as F
from helpers.record.check import problem as _problem

SCHEMA = 4
READABLE_SCHEMAS = (1, 2, 3, 4)  # older records stay readable; ``schema`` says which meanings they carry
STATUSES = ("ok", "failed", "skipped")
REQUIRED_KEYS = F.REQUIRED  # every record holds these (None where not measured): helpers.record.fields


class Record(TypedDict, total=False):
    """The record's type: the keys every record has (``REQUIRED_KEYS``, None where a figure was not measured) and the
    runner's own; the writer (``helpers.record.writer``), the reader and the upgrade take and give it. Every field,
    these and the further ones (utilisation details, energy, FLOPs), is declared with its type, unit and check in
    ``helpers.record.fields`` (a test keeps this type within it); ``helpers.record.check`` bounds what any key may
    hold."""
    schema: int
    point_id: str
    workload: str
    backend: Literal["jax", "torch", "tensorflow"]
    device: Literal["cpu", "gpu"]
    device_used: str | None
    status: Literal["ok", "failed", "skipped"]
    reason: str | None
    params: dict[str, Any]
    data_source: str | None
    n_train: int | None
    batch_size: int | None
    epochs: int | None
    first_epoch_s: float | None
    epoch_s: list[float]
    median_epoch_s: float | None
    step_s: float | None
    samples_per_s: float | None
    history: dict[str, list[float]]
    utilisation: dict[str, Any]
    energy_j_per_epoch: float | None
    fingerprint: dict[str, Any] | None
    started_at: str | None
    duration_s: float | None
    notebook: str | None
    # the runner's, added before the record's one write
    wall_s: float
    repeat: int
    config_id: str
    # set by the reader (helpers.record.upgrade), never written
    protocol: Literal["current", "earlier"]
    caveats: list[str]


def empty_record(params: dict, pid: str) -> Record:
    """A record of ``params`` with every key of ``REQUIRED_KEYS`` and no figure (``status`` still None)."""
    rec: Record = {k: None for k in REQUIRED_KEYS}  # type: ignore[assignment]
    rec.update(schema=SCHEMA, point_id=pid, workload=params.get("workload"),
               backend=params.get("backend"), device=params.get("device"), params=dict(params),
               n_train=params.get("n_train"), batch_size=params.get("batch_size"),
               epochs=params.get("epochs"), epoch_s=[], history={}, utilisation={})
    return rec


def is_record(obj) -> bool:
    return (isinstance(obj, dict) and obj.get("schema") in READABLE_SCHEMAS
            and all(k in obj for k in ("point_id", "workload", "backend", "device", "status")))


def why_not_record(obj) -> str | None:
    """Why ``obj`` (parsed JSON) is not a usable record; None if it is one."""
    if not isinstance(obj, dict):
        return "not a record (not a JSON object)"
    if "schema" not in obj:
        return "missing key 'schema'" if "point_id" in obj else "not a record"
    schema = obj["schema"]
    if isinstance(schema, bool) or not isinstance(schema, int):
        return "'schema' is not an integer"
    for key in ("point_id", "workload", "backend", "device", "status"):
        if key not in obj:
            return f"missing key '{key}'"
    if not is_record(obj):
        return (f"record schema {schema}: newer than this suite reads (up to {SCHEMA})" if schema > SCHEMA
                else f"record schema {schema}: not readable (this suite reads {', '.join(map(str, READABLE_SCHEMAS))})")
    why = _problem(obj)
    if why:
        return why
    if obj["status"] not in STATUSES:
        return f"'status' is not one of {', '.join(STATUSES)}"
    return None
