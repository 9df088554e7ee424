"""Loading: every record under some folders into one tidy table (one row per record).

    df, records, skipped = load_table([Path("outputs")])

``records`` are the raw dicts (``_path`` set), ``skipped`` the files that are not records, with why. Columns are
declared in ``columns`` (``COLUMNS``, in order; ``columns.row``: a record's row); ``machine`` (the hardware: GPU or
CPU model and logical CPUs) and ``config`` (device · backend) are added. The fingerprint's host identity rides along
as text (``cpu_id``, ``cpu_flags``, ``gpu_state``), with the lease (``boot_id``) and the run's host calibration
(``cal_*``; None where a record has none). ``CONFIG_KEYS`` say which columns make two records the same configuration
(its repeats).
"""

from __future__ import annotations

from pathlib import Path

from helpers.record.reader import read_records
from helpers.report.load.columns import COLUMNS, NUMERIC, row
from helpers.report.load.visible import hardware_name

__all__ = ["COLUMNS", "NUMERIC", "row", "tidy", "load_table", "latest_ok", "CONFIG_KEYS", "workload_knobs"]


def workload_knobs(name: str) -> dict:
    """A workload's knobs (``workloads.knobs``), for the reader's upgrade of older records (``record.upgrade``)."""
    from helpers.workloads import knobs
    return knobs(name)


# What makes two records the same configuration (repeats of it are pooled).
CONFIG_KEYS = ["machine", "workload", "backend", "device", "precision", "jit_compile", "batch_size",
               "threads", "n_train", "augment", "workers", "knobs", "data_source"]


def tidy(records: list[dict]):
    """The tidy table of ``records`` (dicts as ``read_records`` returns them)."""
    import pandas as pd

    df = pd.DataFrame([row(r) for r in records], columns=COLUMNS)
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
