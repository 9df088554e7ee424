"""Loading: every record under some folders into one tidy table (one row per record).

    df, records, skipped = load_table([Path("outputs")])

``records`` are the raw dicts (``_path`` set), ``skipped`` the files that are not records, with why. Columns are
listed in ``COLUMNS``; ``machine`` (the hardware: GPU or CPU model and logical CPUs) and ``config`` (device · backend)
are added. The fingerprint's host identity rides along as text (``cpu_id``, ``cpu_flags``, ``gpu_state``), with the
lease (``boot_id``) and the run's host calibration (``cal_*``; None where a record has none). ``CONFIG_KEYS`` say which
columns make two records the same configuration (its repeats).
"""

from __future__ import annotations

from pathlib import Path

from helpers import params as _params
from helpers.record.learned import check_inputs
from helpers.record.reader import read_records
from helpers.report.load.visible import hardware_name

COLUMNS = ["workload", "backend", "device", "device_used", "status", "reason", "host", "cpu_model",
           "cpus", "machine_cpus", "ram_gb", "gpu", "gpus", "gpu_driver", "cuda", "precision", "jit_compile",
           "batch_size", "threads", "threads_eff", "n_train", "steps_per_epoch", "epochs", "data_source", "augment",
           "workers", "knobs", "first_epoch_s", "median_epoch_s", "epoch_q1", "epoch_q3", "epoch_min", "epoch_max",
           "n_steady", "steady_s", "step_s", "samples_per_s", "val_s", "total_s", "cpu_pct", "proc_cpu_pct",
           "gpu_pct", "gpu_pct_max", "gpu_mem_mb", "power_w", "energy_j_per_epoch", "energy_above_idle_j_per_epoch",
           "idle_power_w", "energy_method", "final_loss", "final_accuracy", "keras", "backend_version", "python",
           "git_commit", "schema", "protocol", "started_at", "point_id", "notebook", "path", "fixture", "epoch_list",
           "boot_id", "cpu_id", "cpu_flags", "gpu_state", "gpu_sm_now", "gpu_mem_now", "cal_when", "cal_dispatch",
           "cal_matmul", "cal_matmul_1t", "cal_threads", "repeat", "config_id", "min_steady_s",
           "flops_per_sample", "flops_source", "peak_flops", "peak_source", "host_copy_s", "input_mb_per_step",
           "concurrent_runners", "host_busy", "host_others_cores", "optimizer_flops_per_step", "loss_curve",
           "n_classes", "data_learnable"]

# Parameters every notebook has (their own columns, or not part of a configuration: seed, epochs,
# output paths); the rest are a workload's own knobs. augment and workers have columns of their own.
_COMMON_PARAMS = frozenset(_params.COMMON) | {"augment", "workers", "repeat", "min_steady_s"}

# Knobs added after records were written (params.LATER_DEFAULTS, with the value such a record ran at; the reader
# adds them to an older record: helpers.record.upgrade): the common ones of them are named in a configuration only
# away from that value.
LATER_COMMON = tuple(k for k in _params.LATER_DEFAULTS if k in _params.COMMON)


def workload_knobs(name: str) -> dict:
    """A workload's knobs (``workloads.knobs``), for the reader's upgrade of older records (``record.upgrade``)."""
    from helpers.workloads import knobs
    return knobs(name)


# What makes two records the same configuration (repeats of it are pooled).
CONFIG_KEYS = ["machine", "workload", "backend", "device", "precision", "jit_compile", "batch_size",
               "threads", "n_train", "augment", "workers", "knobs", "data_source"]

NUMERIC = ("first_epoch_s", "median_epoch_s", "epoch_q1", "epoch_q3", "epoch_min", "epoch_max", "step_s",
           "samples_per_s", "val_s", "total_s", "cpu_pct", "proc_cpu_pct", "gpu_pct", "gpu_pct_max", "gpu_mem_mb",
           "power_w", "energy_j_per_epoch", "energy_above_idle_j_per_epoch", "idle_power_w", "final_loss",
           "final_accuracy", "batch_size", "threads", "threads_eff", "n_train", "cpus", "machine_cpus", "ram_gb",
           "gpus", "steps_per_epoch", "epochs", "n_steady", "steady_s", "workers", "schema", "cal_dispatch",
           "cal_matmul", "cal_matmul_1t", "cal_threads", "gpu_sm_now", "gpu_mem_now", "repeat", "min_steady_s",
           "flops_per_sample", "peak_flops", "host_copy_s", "input_mb_per_step", "concurrent_runners",
           "host_others_cores", "optimizer_flops_per_step")

_BACKEND_PKG = {"tensorflow": ("tensorflow", "tensorflow-cpu"), "jax": ("jax",), "torch": ("torch",)}


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


def _row(r: dict) -> dict:
    fp = r.get("fingerprint") or {}
    cal = fp.get("calibration") if isinstance(fp.get("calibration"), dict) else {}
    params = r.get("params") or {}
    info = r.get("data_info") or {}
    util = r.get("utilisation") or {}
    spread = r.get("epoch_spread") or {}
    hist = r.get("history") or {}
    versions = fp.get("versions") or {}
    gpus = fp.get("gpu_names") or []
    total = r.get("epoch_total_s")
    steady = _nums(r.get("epoch_s"))
    bv = next((versions[p] for p in _BACKEND_PKG.get(r.get("backend"), ()) if p in versions), None)
    threads = params.get("threads")
    cpus = _first(fp.get("cpu_allowed"), fp.get("cpu_logical"))
    threads_eff = threads if threads else cpus
    augment = _first(params.get("augment"), info.get("augment"))
    # the workload's own knobs (catsdogs' variant, fasttext's ngram_range, vgg's augment_impl, ...):
    # records that differ in one are different configurations, never repeats of one
    # and the common knobs added later (several devices or hosts, steps per compiled call, the data on the device)
    # away from their old value: another configuration, never a repeat of one
    shown = [k for k in sorted(params) if k not in _COMMON_PARAMS and not _params.learning_default(k, params[k])] + [
        k for k in LATER_COMMON if params.get(k) not in (None, _params.LATER_DEFAULTS[k])]
    # a file a knob names (a custom model, its data) with a short hash of its content: files of different contents
    # under one path are different configurations, and their labels say which (model_path=my.keras@1a2b3c4d)
    wl_info = r.get("workload_info") if isinstance(r.get("workload_info"), dict) else {}
    sha = {"model_path": wl_info.get("sha256"), "data_path": wl_info.get("data_sha256")}
    knobs = ", ".join(f"{k}={params[k]}" + (f"@{sha[k][:8]}" if isinstance(sha.get(k), str) and params[k] else "")
                      for k in shown)
    workers = _first(params.get("workers"), info.get("workers"))
    first = r.get("first_epoch_s")
    if total:
        total_s = sum(_nums(total))
    elif steady or first is not None:
        total_s = sum(steady) + (first or 0.0)
    else:
        total_s = None
    val = _nums(r.get("val_s"))
    loss = hist.get("loss") or [None]
    acc = hist.get("accuracy") or hist.get("acc") or [None]
    return {
        "workload": r.get("workload"), "backend": r.get("backend"), "device": r.get("device"),
        "device_used": r.get("device_used"), "status": r.get("status"), "reason": r.get("reason"),
        "host": fp.get("host"), "cpu_model": fp.get("cpu_model"), "cpus": cpus,
        # the machine a user rents has all its logical CPUs, whatever a point's affinity narrowed
        "machine_cpus": _first(fp.get("cpu_logical"), cpus), "ram_gb": fp.get("ram_gb"),
        "gpu": gpus[0] if gpus else None, "gpus": len(gpus), "gpu_driver": fp.get("gpu_driver"),
        "cuda": fp.get("cuda_driver"),
        "precision": params.get("precision"), "jit_compile": str(params.get("jit_compile")),
        "batch_size": r.get("batch_size"), "threads": threads, "threads_eff": threads_eff,
        "n_train": r.get("n_train"), "steps_per_epoch": r.get("steps_per_epoch"), "epochs": r.get("epochs"),
        "data_source": r.get("data_source"),
        "augment": None if augment is None else str(bool(augment)).lower(),
        "workers": workers, "knobs": knobs,
        "first_epoch_s": first, "median_epoch_s": r.get("median_epoch_s"),
        "epoch_q1": spread.get("q1"), "epoch_q3": spread.get("q3"), "epoch_min": spread.get("min"),
        "epoch_max": spread.get("max"), "n_steady": spread.get("n", len(steady)),
        "steady_s": _first(r.get("steady_s"), sum(steady) if steady else None), "step_s": r.get("step_s"),
        "samples_per_s": r.get("samples_per_s"), "val_s": sorted(val)[len(val) // 2] if val else None,
        "total_s": total_s,
        "cpu_pct": util.get("cpu_pct_mean"), "proc_cpu_pct": util.get("proc_cpu_pct_mean"),
        "gpu_pct": util.get("gpu_pct_mean"), "gpu_pct_max": util.get("gpu_pct_max"),
        "gpu_mem_mb": _first(util.get("gpu_mem_peak_mb"), util.get("gpu_mem_mb_max")),
        "power_w": util.get("power_w_mean"), "energy_j_per_epoch": r.get("energy_j_per_epoch"),
        "energy_above_idle_j_per_epoch": r.get("energy_above_idle_j_per_epoch"),
        "idle_power_w": r.get("idle_power_w"),
        "energy_method": r.get("energy_method") or ("mean_power" if r.get("energy_j_per_epoch") else None),
        "final_loss": loss[-1], "final_accuracy": acc[-1], **check_inputs(r),  # the learning check's (record.learned)
        # the input path: one batch's copy from the host, measured after training on GPU points
        "host_copy_s": r.get("host_copy_s_per_step"),
        "input_mb_per_step": r["input_bytes_per_step"] / 1e6 if r.get("input_bytes_per_step") else None,
        "keras": versions.get("keras"), "backend_version": bv, "python": fp.get("python"),
        "git_commit": fp.get("git_commit"), "schema": r.get("schema"), "protocol": r.get("protocol"),
        "started_at": r.get("started_at"),
        "point_id": r.get("point_id"), "notebook": r.get("notebook"), "path": r.get("_path"),
        "fixture": bool(r.get("fixture")), "epoch_list": steady,
        "boot_id": fp.get("boot_id") if isinstance(fp.get("boot_id"), str) else None,
        "cpu_id": _cpu_id(fp), "cpu_flags": _cpu_flags(fp), "gpu_state": _gpu_state(fp),
        "gpu_sm_now": _gpu_clocks_now(fp, "sm_clock_mhz"), "gpu_mem_now": _gpu_clocks_now(fp, "mem_clock_mhz"),
        "cal_when": cal.get("when") if isinstance(cal.get("when"), str) else None,
        "cal_dispatch": _num(cal.get("dispatch_mcalls_per_s")), "cal_matmul": _num(cal.get("matmul_gflops_all")),
        "cal_matmul_1t": _num(cal.get("matmul_gflops_1thread")), "cal_threads": _num(cal.get("matmul_threads")),
        # repeats (older records: one run, no target window recorded)
        "repeat": _num(_first(r.get("repeat"), params.get("repeat"))), "config_id": r.get("config_id"),
        "min_steady_s": _num(params.get("min_steady_s")),
        # other runners busy on the same host when the point started (None: not recorded)
        "concurrent_runners": _num(r.get("concurrent_runners")),
        # another process used more than a quarter of the point's cores while it was timed (helpers.measure.host_load)
        "host_busy": r.get("host_busy") is True,
        "host_others_cores": _num((r.get("host_load") if isinstance(r.get("host_load"), dict) else {}).get(
            "others_cores")),
        # how far from the limit: the record's count, else the committed one (helpers.measure.flops_table)
        **_limit(r, gpus[0] if gpus else None, cal, threads),
    }


def _limit(r: dict, gpu, cal: dict, threads) -> dict:
    """``flops_per_sample``: the model's FLOPs per sample, forward + backward (what MFU counts; the optimiser's per
    step apart, ``optimizer_flops_per_step``), and ``flops_source`` (``flops_table.for_record``), ``peak_flops``
    (of the devices the point used) and ``peak_source`` (its source, or why there is none)."""
    from helpers.measure import flops_table, peaks
    from helpers.point.distribution_params import devices_of

    if r.get("status") != "ok":
        return {"flops_per_sample": None, "flops_source": None, "peak_flops": None, "peak_source": None,
                "optimizer_flops_per_step": None}
    fps, opt, source = flops_table.for_record(r)  # the model's (forward + backward); the optimiser's per step
    p = r.get("params") or {}
    per_process, processes = devices_of({k: _num(p.get(k)) for k in ("gpus", "hosts", "processes")})
    pk, why = peaks.peak(r.get("device_used"), gpu, p.get("precision") or "float32", cal or None, threads or None,
                         gpus=per_process * processes)  # every device the point used, as its record counts them
    return {"flops_per_sample": _num(fps), "flops_source": source, "peak_flops": pk, "peak_source": why,
            "optimizer_flops_per_step": _num(opt)}


def tidy(records: list[dict]):
    """The tidy table of ``records`` (dicts as ``read_records`` returns them)."""
    import pandas as pd

    df = pd.DataFrame([_row(r) for r in records], columns=COLUMNS)
    for col in NUMERIC:
        df[col] = pd.to_numeric(df[col], errors="coerce")
    df["fixture"] = df["fixture"].astype(bool)
    for col in ("workload", "backend", "device", "status", "host", "precision", "data_source", "augment",
                "energy_method"):
        df[col] = df[col].astype(object).where(df[col].notna(), None)
    # a record's hardware as the report names it everywhere (labels.hardware_name: a name reading like the bundled
    # reference's is quoted as a record's name); the machine is its hardware, not its host name: two leases of one
    # cloud machine type (new host names, new boots) pool their runs; hosts and leases: the provenance section
    df["gpu"], df["cpu_model"] = (df[c].map(hardware_name, na_action="ignore") for c in ("gpu", "cpu_model"))
    hw = df["gpu"].fillna(df["cpu_model"]).fillna("?").astype(str)
    cpus = df["machine_cpus"].map(lambda n: f" · {int(n)} CPUs" if pd.notna(n) else "")
    df["machine"] = _told_apart(df, hw + cpus)
    df["config"] = df["device"].fillna("?").astype(str) + " · " + df["backend"].fillna("?").astype(str)
    return df


def _told_apart(df, label):
    """Each row's machine: what it is (GPU model and count, CPU model, logical CPUs), named as shortly as tells it
    apart: the GPU (else CPU) model and CPUs; where another machine has that name, its GPU count and CPU model too
    (hosts of one GPU model and CPU count but not one CPU; a CPU-only box whose CPU reads as a GPU: never pooled)."""
    import pandas as pd

    if not len(df):
        return label
    ident = df[["gpu", "gpus", "cpu_model", "machine_cpus"]].map(str).agg("|".join, axis=1)
    shared = ident.groupby(label).transform("nunique") > 1

    def full(r) -> str:
        n = int(r["gpus"]) if pd.notna(r["gpus"]) else 0
        gpus = "no GPU" if not n else f"{n} GPU{'s' if n > 1 else ''}"
        return f" · {gpus} · CPU {r['cpu_model'] if pd.notna(r['cpu_model']) else 'not recorded'}"

    return label.where(~shared, label + df.apply(full, axis=1))


def load_table(folders):
    """(tidy DataFrame, raw records, skipped files) from every record under ``folders``."""
    folders = [Path(f) for f in folders if Path(f).exists()]
    records, skipped = read_records(folders, workload_knobs)
    return tidy(records), records, skipped


def latest_ok(df):
    """The most recent ok record per configuration."""
    ok = df[df["status"] == "ok"]
    return ok.sort_values("started_at").groupby(CONFIG_KEYS, dropna=False).tail(1)
