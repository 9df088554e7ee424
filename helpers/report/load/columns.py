"""The report's columns, declared once: the tidy table's (one row per record) and the CSVs' (results.csv,
configurations.csv, verdict.csv): name, kind, unit, how the report formats and marks it, its CSV header, what it
means, and for a tidy column how a record gives it.

    from helpers.report.load import columns as col
    df[col.SAMPLES_PER_S]                   # the column's name, never the string spelled out
    col.TIDY["samples_per_s"].unit          # 'samples/s'
    col.row(record)                         # the tidy table's row of one record (every column of COLUMNS)

The declaration generates ``COLUMNS`` (the tidy table's, in order), ``NUMERIC`` (those read as numbers),
``row`` (a record's row), ``RESULT_HEADERS`` / ``RESULT_DROP`` (results.csv), ``CONFIG_COLUMNS``
(configurations.csv), ``VERDICT_SIDE`` / ``VERDICT_COLUMNS`` (verdict.csv) and docs/csv_columns.md
(``python -m helpers.report.load.columns``; a test compares). A column taken straight from a record names its
field (``helpers.record.fields``), whose declaration says the record's side; a knob's column names the knob
(``helpers.params`` holds the knobs' table).

``kind``: 'number' (read with ``pd.to_numeric``), 'text', 'flag' (a bool) or 'list'. ``fmt``: how the report shows
it (``words.fmt``): 'figure' (a median over runs, its digits set by the spread between runs and marked with the
marks: one run, short window, host busy, did not learn), 'num' (``fmt.num``: 3 significant digits), 'mfu'
(``fmt.mfu_shown``), 'text' (as it is, made visible), 'count' (an integer) or '' (never shown on the page).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from helpers import params as _params
from helpers.record import fields as F
from helpers.record.learned import check_inputs

KINDS = ("number", "integer", "text", "flag", "list")
FORMATS = ("figure", "num", "mfu", "text", "count", "")


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # KINDS
    unit: str  # '' where it has none
    fmt: str  # FORMATS: how the report shows it
    help: str
    csv: str | None = None  # its CSV header (None: the name itself; '' left out of the CSV)
    get: Callable[[Source], Any] | None = None  # a tidy column's value of a record (None: added by the table)
    knob: bool = False  # the column is a knob's value (helpers.params.COMMON)

    @property
    def header(self) -> str:
        return self.name if self.csv is None else self.csv


def _first(*vals):
    for v in vals:
        if v is not None:
            return v
    return None


def _nums(values) -> list[float]:
    return [float(t) for t in (values or []) if isinstance(t, (int, float)) and not isinstance(t, bool)]


def _num(v):
    """A finite number from a record, else None (records from elsewhere may hold anything here)."""
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")
    return v if ok else None


_BACKEND_PKG = {"tensorflow": ("tensorflow", "tensorflow-cpu"), "jax": ("jax",), "torch": ("torch",)}

# Parameters every notebook has (their own columns, or not part of a configuration: seed, epochs,
# output paths); the rest are a workload's own knobs. augment and workers have columns of their own.
_COMMON_PARAMS = frozenset(_params.COMMON) | {"augment", "workers", "repeat", "min_steady_s"}

# Knobs added after records were written (params.LATER_DEFAULTS, with the value such a record ran at; the reader
# adds them to an older record: helpers.record.upgrade): the common ones of them are named in a configuration only
# away from that value.
LATER_COMMON = tuple(k for k in _params.LATER_DEFAULTS if k in _params.COMMON)


class Source:
    """One record as the tidy columns read it: its parts (fingerprint, calibration, params, ...) looked up once."""

    def __init__(self, r: dict):
        self.r = r
        self.fp = r.get(F.FINGERPRINT) or {}
        cal = self.fp.get("calibration")
        self.cal = cal if isinstance(cal, dict) else {}
        self.params = r.get(F.PARAMS) or {}
        self.info = r.get(F.DATA_INFO) or {}
        self.util = r.get(F.UTILISATION) or {}
        self.spread = r.get(F.EPOCH_SPREAD) or {}
        self.hist = r.get(F.HISTORY) or {}
        self.versions = self.fp.get("versions") or {}
        self.gpus = self.fp.get("gpu_names") or []
        self.steady = _nums(r.get(F.EPOCH_S))
        self.cpus = _first(self.fp.get("cpu_allowed"), self.fp.get("cpu_logical"))
        self.gpu = self.gpus[0] if self.gpus else None

    @cached_property
    def knobs(self) -> str:
        """The workload's own knobs (catsdogs' variant, fasttext's ngram_range, vgg's augment_impl, ...): records
        that differ in one are different configurations, never repeats of one; and the common knobs added later
        (several devices or hosts, steps per compiled call, the data on the device) away from their old value.
        A file a knob names (a custom model, its data) carries a short hash of its content: files of different
        contents under one path are different configurations (model_path=my.keras@1a2b3c4d)."""
        params, r = self.params, self.r
        shown = [k for k in sorted(params) if k not in _COMMON_PARAMS and not _params.learning_default(k, params[k])]
        shown += [k for k in LATER_COMMON if params.get(k) not in (None, _params.LATER_DEFAULTS[k])]
        wl_info = r.get("workload_info") if isinstance(r.get("workload_info"), dict) else {}
        sha = {"model_path": wl_info.get("sha256"), "data_path": wl_info.get("data_sha256")}
        return ", ".join(f"{k}={params[k]}" + (f"@{sha[k][:8]}" if isinstance(sha.get(k), str) and params[k] else "")
                         for k in shown)

    @cached_property
    def total_s(self):
        total, first = self.r.get(F.EPOCH_TOTAL_S), self.r.get(F.FIRST_EPOCH_S)
        if total:
            return sum(_nums(total))
        if self.steady or first is not None:
            return sum(self.steady) + (first or 0.0)
        return None

    @cached_property
    def learned(self) -> dict:
        return check_inputs(self.r)  # the learning check's (record.learned)

    @cached_property
    def limit(self) -> dict:
        """``flops_per_sample``: the model's FLOPs per sample, forward + backward (what MFU counts; the optimiser's
        per step apart, ``optimizer_flops_per_step``), and ``flops_source`` (``flops_table.for_record``),
        ``peak_flops`` (of the devices the point used) and ``peak_source`` (its source, or why there is none)."""
        from helpers.measure import flops_table, peaks
        from helpers.point.distribution_params import devices_of

        r = self.r
        if r.get(F.STATUS) != "ok":
            return {"flops_per_sample": None, "flops_source": None, "peak_flops": None, "peak_source": None,
                    "optimizer_flops_per_step": None}
        fps, opt, source = flops_table.for_record(r)  # the model's (forward + backward); the optimiser's per step
        p = r.get(F.PARAMS) or {}
        per_process, processes = devices_of({k: _num(p.get(k)) for k in ("gpus", "hosts", "processes")})
        threads = self.params.get("threads")
        pk, why = peaks.peak(r.get(F.DEVICE_USED), self.gpu, p.get("precision") or "float32", self.cal or None,
                             threads or None, gpus=per_process * processes)  # every device the point used
        return {"flops_per_sample": _num(fps), "flops_source": source, "peak_flops": pk, "peak_source": why,
                "optimizer_flops_per_step": _num(opt)}


def _cpu_id(fp: dict) -> str | None:
    """'GenuineIntel family 6 model 207 stepping 2' (what was recorded of it), None when nothing was."""
    parts = [(label, fp.get(key)) for label, key in (("", "cpu_vendor"), ("family", "cpu_family"),
                                                     ("model", "cpu_model_number"), ("stepping", "cpu_stepping"))]
    shown = [f"{label} {v}".strip() for label, v in parts if isinstance(v, (str, int)) and not isinstance(v, bool)]
    return " ".join(shown) or None


def _cpu_flags(fp: dict) -> str | None:
    flags = fp.get("cpu_flags")
    if not isinstance(flags, list):
        return None
    return " ".join(str(f) for f in flags) or "none of avx2/avx512/amx"


def _gpu_state(fp: dict) -> str | None:
    """Per GPU 'SM max 1980 MHz · mem max 2619 MHz · 700 W limit · persistence on' (what stays put over a
    lease; the clocks *now* are ``_gpu_clocks_now``), identical GPUs counted once ('8 × ...'); 'no GPU'
    when NVML saw none; None when not recorded."""
    states = fp.get("gpu_state")
    if not isinstance(states, list):
        return None
    if not states:
        return "no GPU"

    def one(g):
        if not isinstance(g, dict):
            return "?"
        out = [f"{label} max {top:g} MHz" for label, key in (("SM", "sm_clock_max_mhz"), ("mem", "mem_clock_max_mhz"))
               if (top := _num(g.get(key))) is not None]
        if _num(g.get("power_limit_w")) is not None:
            out.append(f"{g['power_limit_w']:g} W limit")
        if isinstance(g.get("persistence_mode"), bool):
            out.append(f"persistence {'on' if g['persistence_mode'] else 'off'}")
        return " · ".join(out) or "?"

    texts = [one(g) for g in states]
    return "; ".join(f"{texts.count(t)} × {t}" if texts.count(t) > 1 else t for t in dict.fromkeys(texts))


def _gpu_clocks_now(fp: dict, key: str):
    """The highest current clock (``sm_clock_mhz`` / ``mem_clock_mhz``) over the GPUs when the fingerprint
    was taken (an idle GPU idles low: a reading, not the GPU's speed); None when not recorded."""
    states = fp.get("gpu_state")
    vals = [v for g in states if isinstance(g, dict) and (v := _num(g.get(key))) is not None] \
        if isinstance(states, list) else []
    return max(vals) if vals else None


TIDY: dict[str, Column] = {}


def tidy(name: str, kind: str, unit: str, fmt: str, help: str, get=None, csv: str | None = None) -> str:
    """Declare a tidy table column; returns its name (bind it to the column's constant)."""
    if name in TIDY:
        raise ValueError(f"column {name!r} declared twice")
    if kind not in KINDS or fmt not in FORMATS:
        raise ValueError(f"column {name!r}: kind {kind!r} / fmt {fmt!r} unknown")
    TIDY[name] = Column(name, kind, unit, fmt, help, csv, get, knob=name in _params.COMMON)
    return name


def _field(key: str):
    return lambda s: s.r.get(key)


# the tidy table: one row per record, in this order (results.csv's columns, renamed where ``csv`` says)
WORKLOAD = tidy(F.WORKLOAD, "text", "", "text", "the workload", _field(F.WORKLOAD))
BACKEND = tidy(F.BACKEND, "text", "", "text", "Keras's backend", _field(F.BACKEND))
DEVICE = tidy(F.DEVICE, "text", "", "text", "cpu or gpu", _field(F.DEVICE))
DEVICE_USED = tidy(F.DEVICE_USED, "text", "", "text", "the device the model was placed on", _field(F.DEVICE_USED))
STATUS = tidy(F.STATUS, "text", "", "text", "ok, failed or skipped", _field(F.STATUS))
REASON = tidy(F.REASON, "text", "", "text", "why a run failed or was skipped", _field(F.REASON))
HOST = tidy("host", "text", "", "text", "the host's name", lambda s: s.fp.get("host"))
CPU_MODEL = tidy("cpu_model", "text", "", "text", "the CPU model", lambda s: s.fp.get("cpu_model"))
CPUS = tidy("cpus", "number", "CPUs", "count", "logical CPUs the run could use", lambda s: s.cpus, "cpus_used")
# the machine a user rents has all its logical CPUs, whatever a point's affinity narrowed
MACHINE_CPUS = tidy("machine_cpus", "number", "CPUs", "count", "the machine's logical CPUs",
                    lambda s: _first(s.fp.get("cpu_logical"), s.cpus), "machine_logical_cpus")
RAM_GB = tidy("ram_gb", "number", "GiB", "num", "the machine's memory", lambda s: s.fp.get("ram_gb"), "ram_gib")
GPU = tidy("gpu", "text", "", "text", "the GPU model", lambda s: s.gpu)
GPUS = tidy("gpus", "number", "GPUs", "count", "GPUs the machine has", lambda s: len(s.gpus), "gpu_count")
GPU_DRIVER = tidy("gpu_driver", "text", "", "text", "the GPU driver's version", lambda s: s.fp.get("gpu_driver"))
CUDA = tidy("cuda", "text", "", "text", "the CUDA driver's version", lambda s: s.fp.get("cuda_driver"))
PRECISION = tidy("precision", "text", "", "text", "float32 or a mixed precision", lambda s: s.params.get("precision"))
JIT_COMPILE = tidy("jit_compile", "text", "", "text", "the jit_compile knob as written",
                   lambda s: str(s.params.get("jit_compile")))
BATCH_SIZE = tidy(F.BATCH_SIZE, "number", "samples", "count", "samples per step", _field(F.BATCH_SIZE))
THREADS = tidy("threads", "number", "threads", "count", "the threads knob (0 or empty: every CPU)",
               lambda s: s.params.get("threads"))
THREADS_EFF = tidy("threads_eff", "number", "threads", "count", "the threads in effect",
                   lambda s: s.params.get("threads") or s.cpus)
N_TRAIN = tidy(F.N_TRAIN, "number", "samples", "count", "training samples per epoch", _field(F.N_TRAIN))
STEPS_PER_EPOCH = tidy(F.STEPS_PER_EPOCH, "number", "steps", "count", "steps of an epoch", _field(F.STEPS_PER_EPOCH))
EPOCHS = tidy(F.EPOCHS, "number", "epochs", "count", "epochs run", _field(F.EPOCHS))
DATA_SOURCE = tidy(F.DATA_SOURCE, "text", "", "text", "real or synthetic data", _field(F.DATA_SOURCE))
AUGMENT = tidy("augment", "text", "", "text", "'true' where the data was augmented",
               lambda s: None if (a := _first(s.params.get("augment"), s.info.get("augment"))) is None
               else str(bool(a)).lower())
WORKERS = tidy("workers", "number", "workers", "count", "the data loader's workers",
               lambda s: _first(s.params.get("workers"), s.info.get("workers")))
KNOBS = tidy("knobs", "text", "", "text", "the workload's own knobs and later common knobs away from their default",
             lambda s: s.knobs)
FIRST_EPOCH_S = tidy(F.FIRST_EPOCH_S, "number", "s", "num", "the first epoch, compilation included",
                     _field(F.FIRST_EPOCH_S))
MEDIAN_EPOCH_S = tidy(F.MEDIAN_EPOCH_S, "number", "s", "figure", "the median steady epoch", _field(F.MEDIAN_EPOCH_S))
EPOCH_Q1 = tidy("epoch_q1", "number", "s", "num", "the steady epochs' first quartile", lambda s: s.spread.get("q1"),
                "epoch_q1_s")
EPOCH_Q3 = tidy("epoch_q3", "number", "s", "num", "the steady epochs' third quartile", lambda s: s.spread.get("q3"),
                "epoch_q3_s")
EPOCH_MIN = tidy("epoch_min", "number", "s", "num", "the shortest steady epoch", lambda s: s.spread.get("min"),
                 "epoch_min_s")
EPOCH_MAX = tidy("epoch_max", "number", "s", "num", "the longest steady epoch", lambda s: s.spread.get("max"),
                 "epoch_max_s")
N_STEADY = tidy("n_steady", "number", "epochs", "count", "steady epochs timed",
                lambda s: s.spread.get("n", len(s.steady)))
STEADY_S = tidy(F.STEADY_S, "number", "s", "num", "the steady window: the steady epochs' training time",
                lambda s: _first(s.r.get(F.STEADY_S), sum(s.steady) if s.steady else None))
STEP_S = tidy(F.STEP_S, "number", "s", "figure", "a steady step", _field(F.STEP_S))
SAMPLES_PER_S = tidy(F.SAMPLES_PER_S, "number", "samples/s", "figure",
                     "training samples per second over the steady epochs", _field(F.SAMPLES_PER_S))
VAL_S = tidy(F.VAL_S, "number", "s", "num", "an epoch's validation time (the median epoch's)",
             lambda s: sorted(v)[len(v) // 2] if (v := _nums(s.r.get(F.VAL_S))) else None)
TOTAL_S = tidy("total_s", "number", "s", "num", "every epoch's time, validation and the first epoch included",
               lambda s: s.total_s)
CPU_PCT = tidy("cpu_pct", "number", "%", "num", "the host's CPUs busy over the steady epochs (mean)",
               lambda s: s.util.get("cpu_pct_mean"), "cpu_busy_pct")
PROC_CPU_PCT = tidy("proc_cpu_pct", "number", "%", "num", "the run's process's CPU (mean; 100 = one core)",
                    lambda s: s.util.get("proc_cpu_pct_mean"), "process_cpu_pct")
GPU_PCT = tidy("gpu_pct", "number", "%", "num", "the GPUs busy (mean)", lambda s: s.util.get("gpu_pct_mean"),
               "gpu_busy_pct")
GPU_PCT_MAX = tidy("gpu_pct_max", "number", "%", "num", "the GPUs busy (highest reading)",
                   lambda s: s.util.get("gpu_pct_max"), "gpu_busy_max_pct")
GPU_MEM_MB = tidy("gpu_mem_mb", "number", "MiB", "num", "the GPU memory's peak",
                  lambda s: _first(s.util.get("gpu_mem_peak_mb"), s.util.get("gpu_mem_mb_max")))
POWER_W = tidy("power_w", "number", "W", "num", "the GPUs' power (mean)", lambda s: s.util.get("power_w_mean"))
ENERGY_J_PER_EPOCH = tidy(F.ENERGY_J_PER_EPOCH, "number", "J", "num", "GPU energy of a steady epoch",
                          _field(F.ENERGY_J_PER_EPOCH))
ENERGY_ABOVE_IDLE_J_PER_EPOCH = tidy(F.ENERGY_ABOVE_IDLE_J_PER_EPOCH, "number", "J", "num",
                                     "a steady epoch's GPU energy above idle", _field(F.ENERGY_ABOVE_IDLE_J_PER_EPOCH))
IDLE_POWER_W = tidy(F.IDLE_POWER_W, "number", "W", "num", "the GPUs' idle power", _field(F.IDLE_POWER_W))
ENERGY_METHOD = tidy(F.ENERGY_METHOD, "text", "", "text", "how the energy was measured",
                     lambda s: s.r.get(F.ENERGY_METHOD) or ("mean_power" if s.r.get(F.ENERGY_J_PER_EPOCH) else None))
FINAL_LOSS = tidy("final_loss", "number", "", "num", "the last epoch's training loss",
                  lambda s: (s.hist.get("loss") or [None])[-1])
FINAL_ACCURACY = tidy("final_accuracy", "number", "fraction", "num", "the last epoch's training accuracy",
                      lambda s: (s.hist.get("accuracy") or s.hist.get("acc") or [None])[-1])
KERAS = tidy("keras", "text", "", "text", "Keras's version", lambda s: s.versions.get("keras"))
BACKEND_VERSION = tidy("backend_version", "text", "", "text", "the backend's version",
                       lambda s: next((s.versions[p] for p in _BACKEND_PKG.get(s.r.get(F.BACKEND), ())
                                       if p in s.versions), None))
PYTHON = tidy("python", "text", "", "text", "Python's version", lambda s: s.fp.get("python"))
GIT_COMMIT = tidy("git_commit", "text", "", "text", "the suite's commit", lambda s: s.fp.get("git_commit"))
SCHEMA = tidy(F.SCHEMA, "number", "", "count", "the record's schema", _field(F.SCHEMA))
PROTOCOL = tidy(F.PROTOCOL, "text", "", "", "'current' or 'earlier' (helpers.record.upgrade)", _field(F.PROTOCOL),
                "")
STARTED_AT = tidy(F.STARTED_AT, "text", "", "text", "when the run started (ISO 8601)", _field(F.STARTED_AT))
POINT_ID = tidy(F.POINT_ID, "text", "", "text", "the point's id", _field(F.POINT_ID))
NOTEBOOK = tidy(F.NOTEBOOK, "text", "", "", "the executed notebook", _field(F.NOTEBOOK), "")
PATH = tidy("path", "text", "", "text", "the record's file, relative to the project where it lies inside it",
            lambda s: s.r.get("_path"), "record")
FIXTURE = tidy(F.FIXTURE, "flag", "", "text", "a test's record, not a measurement", lambda s: bool(s.r.get(F.FIXTURE)))
EPOCH_LIST = tidy("epoch_list", "list", "s", "", "each steady epoch's time", lambda s: s.steady, "")
BOOT_ID = tidy("boot_id", "text", "", "text", "the host's boot (a lease)",
               lambda s: s.fp.get("boot_id") if isinstance(s.fp.get("boot_id"), str) else None)
CPU_ID = tidy("cpu_id", "text", "", "text", "the CPU's vendor, family, model and stepping", lambda s: _cpu_id(s.fp))
CPU_FLAGS = tidy("cpu_flags", "text", "", "text", "the CPU's vector extensions", lambda s: _cpu_flags(s.fp))
GPU_STATE = tidy("gpu_state", "text", "", "text", "each GPU's top clocks, power limit and persistence mode",
                 lambda s: _gpu_state(s.fp))
GPU_SM_NOW = tidy("gpu_sm_now", "number", "MHz", "num", "the GPUs' SM clock when the fingerprint was taken",
                  lambda s: _gpu_clocks_now(s.fp, "sm_clock_mhz"), "gpu_sm_clock_mhz")
GPU_MEM_NOW = tidy("gpu_mem_now", "number", "MHz", "num", "the GPUs' memory clock when the fingerprint was taken",
                   lambda s: _gpu_clocks_now(s.fp, "mem_clock_mhz"), "gpu_mem_clock_mhz")
CAL_WHEN = tidy("cal_when", "text", "", "text", "when the host was calibrated",
                lambda s: s.cal.get("when") if isinstance(s.cal.get("when"), str) else None)
CAL_DISPATCH = tidy("cal_dispatch", "number", "Mcalls/s", "num", "the host's calibrated dispatch rate",
                    lambda s: _num(s.cal.get("dispatch_mcalls_per_s")), "cal_dispatch_mcalls_per_s")
CAL_MATMUL = tidy("cal_matmul", "number", "GFLOP/s", "num", "the host's calibrated matmul rate, every thread",
                  lambda s: _num(s.cal.get("matmul_gflops_all")), "cal_matmul_gflop_per_s")
CAL_MATMUL_1T = tidy("cal_matmul_1t", "number", "GFLOP/s", "num", "the host's calibrated matmul rate, one thread",
                     lambda s: _num(s.cal.get("matmul_gflops_1thread")), "cal_matmul_1thread_gflop_per_s")
CAL_THREADS = tidy("cal_threads", "number", "threads", "count", "the threads of the calibration's matmul",
                   lambda s: _num(s.cal.get("matmul_threads")))
# repeats (older records: one run, no target window recorded)
REPEAT = tidy(F.REPEAT, "number", "", "count", "which repeat of its configuration",
              lambda s: _num(_first(s.r.get(F.REPEAT), s.params.get("repeat"))))
CONFIG_ID = tidy(F.CONFIG_ID, "text", "", "text", "the configuration's id", _field(F.CONFIG_ID))
MIN_STEADY_S = tidy("min_steady_s", "number", "s", "num", "the steady window the run aimed for",
                    lambda s: _num(s.params.get("min_steady_s")))
# how far from the limit: the record's count, else the committed one (helpers.measure.flops_table)
FLOPS_PER_SAMPLE = tidy(F.FLOPS_PER_SAMPLE, "number", "FLOP", "num",
                        "the model's FLOPs per sample, forward + backward", lambda s: s.limit["flops_per_sample"])
FLOPS_SOURCE = tidy(F.FLOPS_SOURCE, "text", "", "text", "where the FLOPs count came from",
                    lambda s: s.limit["flops_source"])
PEAK_FLOPS = tidy("peak_flops", "number", "FLOP/s", "num", "the devices' peak at the run's precision",
                  lambda s: s.limit["peak_flops"], "peak_flop_per_s")
PEAK_SOURCE = tidy("peak_source", "text", "", "text", "the peak's source, or why there is none",
                   lambda s: s.limit["peak_source"])
# the input path: one batch's copy from the host, measured after training on GPU points
HOST_COPY_S = tidy("host_copy_s", "number", "s", "num", "one batch's copy from the host to the GPU",
                   _field(F.HOST_COPY_S_PER_STEP))
INPUT_MB_PER_STEP = tidy("input_mb_per_step", "number", "MB", "num", "one step's input batch",
                         lambda s: s.r[F.INPUT_BYTES_PER_STEP] / 1e6 if s.r.get(F.INPUT_BYTES_PER_STEP) else None)
# other runners busy on the same host when the point started (None: not recorded)
CONCURRENT_RUNNERS = tidy("concurrent_runners", "number", "runners", "count",
                          "other runners on the host when the run started",
                          lambda s: _num(s.r.get("concurrent_runners")))
# another process used more than a quarter of the point's cores while it was timed (helpers.measure.host_load)
HOST_BUSY = tidy(F.HOST_BUSY, "flag", "", "text", "another process used the run's cores while it was timed",
                 lambda s: s.r.get(F.HOST_BUSY) is True)
HOST_OTHERS_CORES = tidy("host_others_cores", "number", "cores", "num", "the cores other processes used",
                         lambda s: _num((s.r.get(F.HOST_LOAD) if isinstance(s.r.get(F.HOST_LOAD), dict)
                                         else {}).get("others_cores")))
OPTIMIZER_FLOPS_PER_STEP = tidy(F.OPTIMIZER_FLOPS_PER_STEP, "number", "FLOP", "num", "the optimiser's FLOPs per step",
                                lambda s: s.limit["optimizer_flops_per_step"], "optimizer_flops_per_step")
LOSS_CURVE = tidy("loss_curve", "list", "", "", "the training loss per epoch (the learning check)",
                  lambda s: s.learned["loss_curve"], "")
N_CLASSES = tidy(F.N_CLASSES, "integer", "classes", "count", "the data's classes (the learning check)",
                 lambda s: s.learned["n_classes"])
DATA_LEARNABLE = tidy(F.DATA_LEARNABLE, "flag", "", "text", "the data has something to learn (the learning check)",
                      lambda s: s.learned["data_learnable"])
# added by the table from the columns above (table.tidy)
MACHINE = tidy("machine", "text", "", "text", "the hardware, named as shortly as tells it apart (GPU or CPU model, "
               "logical CPUs)")
CONFIG = tidy("config", "text", "", "text", "device · backend")

ADDED = tuple(c.name for c in TIDY.values() if c.get is None)  # the table adds these after the rows
COLUMNS = [c.name for c in TIDY.values() if c.get is not None]  # a record's row, in order
NUMERIC = tuple(c.name for c in TIDY.values() if c.kind == "number")
RESULT_DROP = tuple(c.name for c in TIDY.values() if c.csv == "")  # lists, the reader's protocol, local paths
RESULT_HEADERS = {c.name: c.csv for c in TIDY.values() if c.csv}  # results.csv's header where not the name


def row(r: dict) -> dict:
    """The tidy table's row of a record (a dict as ``read_records`` returns it): every column of ``COLUMNS``."""
    s = Source(r)
    return {c.name: c.get(s) for c in TIDY.values() if c.get is not None}


def _csv_columns(*cols: tuple) -> dict[str, Column]:
    """CSV columns of a frame the report derives: (name in the frame, CSV header, kind, unit, fmt, what it means)."""
    out = {}
    for name, header, kind, unit, fmt, help in cols:
        if name in out:
            raise ValueError(f"column {name!r} declared twice")
        out[name] = Column(name, kind, unit, fmt, help, header)
    return out


# configurations.csv: one row per configuration (aggregate.summarise, costs.add_costs, fresh.add); ``{cur}``: the
# prices file's currency, lower case
MARKS = "marks"
CONFIGURATION = _csv_columns(
    ("machine", "machine", "text", "", "text", "the hardware (see results.csv)"),
    ("workload", "workload", "text", "", "text", "the workload"),
    ("backend", "backend", "text", "", "text", "Keras's backend"),
    ("device", "device", "text", "", "text", "cpu or gpu"),
    ("precision", "precision", "text", "", "text", "float32 or a mixed precision"),
    ("jit_compile", "jit_compile", "text", "", "text", "the jit_compile knob"),
    ("batch_size", "batch_size", "number", "samples", "count", "samples per step"),
    ("threads", "threads", "number", "threads", "count", "the threads knob"),
    ("n_train", "samples_per_epoch", "number", "samples", "count", "training samples per epoch"),
    ("augment", "augment", "text", "", "text", "'true' where the data was augmented"),
    ("workers", "workers", "number", "workers", "count", "the data loader's workers"),
    ("knobs", "knobs", "text", "", "text", "the workload's own knobs"),
    ("data_source", "data_source", "text", "", "text", "real or synthetic data"),
    ("n_runs", "runs", "number", "runs", "count", "runs the figures rest on"),
    ("n_leases", "leases", "number", "leases", "count", "host boots the runs came from"),
    ("n_earlier", "earlier_protocol_runs_left_out", "number", "runs", "count",
     "runs of the earlier timing protocol, left out"),
    ("n_host_busy", "host_busy_runs_left_out", "number", "runs", "count", "runs on a busy host, left out"),
    (SAMPLES_PER_S, "samples_per_s_median", "number", "samples/s", "figure", "the median over runs"),
    ("sps_lo", "samples_per_s_low", "number", "samples/s", "figure", "the between-run interval's low end"),
    ("sps_hi", "samples_per_s_high", "number", "samples/s", "figure", "the between-run interval's high end"),
    ("sps_interval", "interval_kind", "text", "", "text", "range or bootstrap 95%"),
    ("fresh_lo", "fresh_machine_samples_per_s_low", "number", "samples/s", "figure",
     "what a fresh machine of this kind is expected to give: low end"),
    ("fresh_hi", "fresh_machine_samples_per_s_high", "number", "samples/s", "figure",
     "what a fresh machine of this kind is expected to give: high end"),
    ("fresh_basis", "fresh_machine_interval", "text", "", "text", "what the fresh-machine interval rests on"),
    ("runs_sps_min", "samples_per_s_min_run", "number", "samples/s", "num", "the slowest run"),
    ("runs_sps_max", "samples_per_s_max_run", "number", "samples/s", "num", "the fastest run"),
    (STEADY_S, "steady_window_s", "number", "s", "num", "the median run's steady window"),
    (MIN_STEADY_S, "min_steady_s", "number", "s", "num", "the steady window the runs aimed for"),
    ("short_window", "short_window", "flag", "", "text", "the steady window is under min_steady_s"),
    ("s_per_epoch", "steady_epoch_s", "number", "s", "figure", "a steady epoch (median)"),
    ("s_per_step", "step_s", "number", "s", "figure", "a steady step (median)"),
    (FIRST_EPOCH_S, "first_epoch_s", "number", "s", "num", "the first epoch, compilation included (median)"),
    ("source_samples", "source_epoch_samples", "number", "samples", "count",
     "samples in one epoch of the source's full dataset"),
    ("source_epoch_s", "source_epoch_s", "number", "s", "num", "a steady epoch of the source's full dataset"),
    (FLOPS_PER_SAMPLE, "model_flop_per_sample", "number", "FLOP", "num",
     "the model's FLOPs per sample, forward + backward"),
    (OPTIMIZER_FLOPS_PER_STEP, "optimizer_flop_per_step", "number", "FLOP", "num", "the optimiser's FLOPs per step"),
    ("achieved_tflops", "achieved_tflop_per_s", "number", "TFLOP/s", "num", "the model's FLOPs per second"),
    ("mfu", "mfu_fraction", "number", "fraction", "mfu", "achieved over the devices' peak"),
    (CPU_PCT, "cpu_busy_pct", "number", "%", "num", "the host's CPUs busy (median)"),
    (GPU_PCT, "gpu_busy_pct", "number", "%", "num", "the GPUs busy (median)"),
    (GPU_MEM_MB, "gpu_mem_peak_mb", "number", "MiB", "num", "the GPU memory's peak"),
    (ENERGY_J_PER_EPOCH, "energy_j_per_epoch", "number", "J", "num", "GPU energy of a steady epoch"),
    ("on_demand_per_h", "on_demand_{cur}_per_h", "number", "{cur}/h", "num", "the machine's on-demand price"),
    ("on_demand_per_source_epoch", "on_demand_{cur}_per_source_epoch", "number", "{cur}", "num",
     "an epoch of the source's full dataset at the on-demand price"),
    ("preemptible_per_source_epoch", "preemptible_{cur}_per_source_epoch", "number", "{cur}", "num",
     "an epoch of the source's full dataset at the preemptible price"),
    ("profile", "price_profile", "text", "", "text", "the price profile that priced the machine"),
    (FIXTURE, "fixture", "flag", "", "text", "a test's records, not measurements"),
    ("learned", "learned", "text", "", "text", "whether the configuration learned (the learning check)"),
    ("learned_why", "learned_why", "text", "", "text", "why the learning check says so"),
    ("loss_epoch", "loss_compared_epoch", "number", "", "count", "the epoch whose loss was compared"),
    ("loss_at", "loss_compared", "number", "", "num", "the loss compared"),
    ("loss_tolerance", "loss_tolerance", "number", "", "num", "how far the loss may be from the first epoch's"),
    (MARKS, "marks", "text", "", "text", "the page's marks: † one run, ‡ short window, § host busy, ✗ did not learn"),
)
CONFIG_COLUMNS = {k: c.header for k, c in CONFIGURATION.items() if k != MARKS}  # summary column -> CSV column

SIDES = ("cpu", "gpu")
# verdict.csv: each side's columns (as configurations.csv names them: the best-over-best row's ``<name>_cpu`` and
# ``<name>_gpu``), headed ``cpu_<header>`` and ``gpu_<header>``
VERDICT_SIDE_COLUMNS = {k: CONFIGURATION[k] for k in ("machine", "backend", "threads", "jit_compile", "batch_size",
                                                        "precision", SAMPLES_PER_S, "sps_lo", "sps_hi", "n_runs",
                                                        "fresh_lo", "fresh_hi", "learned")}
VERDICT_SIDE = {k: c.header for k, c in VERDICT_SIDE_COLUMNS.items()}
# when the GPU pays off (breakeven.add): each side's first epoch, its compile overhead (first − steady epoch), a
# steady epoch of the source's dataset and the time for epochs_planned of them, the first included
BREAKEVEN_SIDE_DECLARED = _csv_columns(
    (FIRST_EPOCH_S, "first_epoch_s", "number", "s", "num", "the first epoch"),
    ("compile_s", "compile_overhead_s", "number", "s", "num", "first epoch less a steady one"),
    ("epoch_s", "source_epoch_s", "number", "s", "num", "a steady epoch of the source's full dataset"),
    ("planned_s", "s_for_epochs_planned", "number", "s", "num", "epochs_planned epochs, the first included"),
)
BREAKEVEN_SIDE = {k: c.header for k, c in BREAKEVEN_SIDE_DECLARED.items()}
BREAKEVEN_SIDE_COLUMNS = [f"{d}_{v}" for d in SIDES for v in BREAKEVEN_SIDE.values()]
VERDICT_OWN = _csv_columns(
    ("workload", "workload", "text", "", "text", "the workload"),
    ("sides", "sides", "text", "", "text", "what is compared: the two sides' machines, or why a side has none"),
    ("cpu_samples_per_s_shown", "cpu_samples_per_s_shown", "text", "samples/s", "figure",
     "the CPU side's figure as the page shows it"),
    ("gpu_samples_per_s_shown", "gpu_samples_per_s_shown", "text", "samples/s", "figure",
     "the GPU side's figure as the page shows it"),
    ("speedup", "speedup", "number", "×", "figure", "GPU samples/s over CPU samples/s"),
    ("speedup_low", "speedup_low", "number", "×", "figure", "the speedup interval's low end"),
    ("speedup_high", "speedup_high", "number", "×", "figure", "the speedup interval's high end"),
    ("interval_kind", "interval_kind", "text", "", "text", "range, bootstrap 95% or a prediction interval"),
    ("speedup_shown", "speedup_shown", "text", "×", "figure", "the speedup as the page shows it"),
    (MARKS, "marks", "text", "", "text", "the page's marks (§ GPU side: the side whose runs were on a busy host)"),
    ("fresh_machine_interval", "fresh_machine_interval", "text", "", "text",
     "what each side's fresh-machine interval rests on"),
    ("epochs_planned", "epochs_planned", "number", "epochs", "count", "the epochs a user plans (N)"),
    ("epochs_planned_from", "epochs_planned_from", "text", "", "text", "where N comes from"),
    ("gpu_ahead_after_epochs", "gpu_ahead_after_epochs", "number", "epochs", "count",
     "the epochs after which the GPU is ahead (empty: never within the horizon)"),
    ("gpu_behind_again_from_epoch", "gpu_behind_again_from_epoch", "number", "epochs", "count",
     "the epoch from which the GPU falls behind again"),
    ("figure", "figure", "text", "", "text", "measured or predicted"),
    ("not_learned_left_out", "not_learned_left_out", "text", "", "text",
     "configurations left out because they did not learn, with why"),
)


def _sides(cols: dict[str, Column]) -> list[str]:
    return [f"{d}_{c.header}" for d in SIDES for c in cols.values()]


_OWN = list(VERDICT_OWN)
VERDICT_COLUMNS = (_OWN[:2] + _sides(VERDICT_SIDE_COLUMNS) + _OWN[2:11] + _sides(BREAKEVEN_SIDE_DECLARED)
                   + _OWN[11:])
