"""Where every figure comes from: machines, library versions, failed and skipped points, record files."""

from __future__ import annotations

from helpers.report.load.values import isnull
from helpers.report.publish.sections.base import Section
from helpers.report.words import findings as said
from helpers.report.words.fmt import html_table, num, percent, plain, short_path

TITLE = "Provenance"
NAV = "Provenance"  # its name in the one-line contents
LEAD = ("The machines (hardware and software fingerprints) and their leases (one per boot, with the host "
        "calibration measured at the start of each run), library versions, the points that failed or were "
        "skipped with their reasons, and the record files behind every figure.")
NOT_RECORDED = "not recorded"  # older records lack the lease and host keys (fingerprints older than those keys)
DIFFER = 0.10  # leases of one machine whose calibration medians differ by more than this are pointed out


def _known(series, join: str = "; "):
    """The distinct recorded values of ``series``, joined; ``NOT_RECORDED`` when there is none."""
    vals = [str(v) for v in dict.fromkeys(series) if not isnull(v)]
    return join.join(vals) if vals else NOT_RECORDED


def _clocks(g) -> str:
    """'345–1980, 2619' : the range of the GPUs' current SM and memory clocks over a machine's records."""
    def span(col):
        v = g[col].dropna()
        return "" if v.empty else (f"{plain(v.min())}" if v.min() == v.max() else f"{plain(v.min())}–{plain(v.max())}")

    sm, mem = span("gpu_sm_now"), span("gpu_mem_now")
    return f"{sm or '?'}, {mem or '?'}" if sm or mem else NOT_RECORDED


def machines_table(df):
    import pandas as pd

    g = df.assign(host=df["host"].fillna(NOT_RECORDED)).groupby(["machine", "host"], dropna=False, sort=True)
    keys = list(g.groups.keys())
    return pd.DataFrame({
        "machine": [k[0] for k in keys],
        "host": [k[1] for k in keys], "CPU": g["cpu_model"].first().values,
        "CPU vendor/family/model/stepping": g["cpu_id"].agg(_known).values,
        "CPU flags": g["cpu_flags"].agg(_known).values,
        "logical CPUs": g["machine_cpus"].max().values, "RAM GB": g["ram_gb"].max().values,
        "GPU": g["gpu"].first().values, "GPUs": g["gpus"].max().values,
        "GPU clocks, power limit, persistence": g["gpu_state"].agg(_known).values,
        "GPU clocks at point start (SM, mem MHz)": [_clocks(x) for _, x in g],
        "GPU driver": g["gpu_driver"].first().values, "CUDA": g["cuda"].first().values,
        "Python": g["python"].first().values, "git commit": g["git_commit"].first().values,
        "leases": g["boot_id"].nunique().map(lambda n: n or NOT_RECORDED).values,
        "records": g.size().values, "fixture": g["fixture"].any().map({True: "FIXTURE", False: ""}).values,
        "first run": g["started_at"].min().values, "last run": g["started_at"].max().values,
    })


_CAL = {"cal_dispatch": "dispatch M calls/s", "cal_matmul": "matmul GFLOP/s (all threads)",
        "cal_matmul_1t": "matmul GFLOP/s (1 thread)", "cal_threads": "BLAS threads"}


def leases_table(df):
    """One row per machine and lease (``boot_id``): records, runs (calibrations), first and last time,
    and the median of each calibration figure over the lease's runs (each run's calibration counted once)."""
    import pandas as pd

    d = df.assign(lease=df["boot_id"].where(df["boot_id"].notna(), NOT_RECORDED),
                  host=df["host"].fillna(NOT_RECORDED))
    rows = []
    for (machine, host, lease), g in d.groupby(["machine", "host", "lease"], dropna=False, sort=True):
        cal = g.dropna(subset=["cal_when"]).drop_duplicates(subset=["cal_when", *_CAL])
        row = {"machine": machine, "host": host, "lease (boot id)": lease, "records": len(g),
               "runs": len(cal) if len(cal) else NOT_RECORDED,
               "first run": g["started_at"].min(), "last run": g["started_at"].max()}
        for col, label in _CAL.items():
            vals = cal[col].dropna()
            row[label] = float(vals.median()) if len(vals) else NOT_RECORDED
            if col != "cal_threads" and len(vals) >= 2:  # how far it moved inside the lease: a state, not a trait
                row[f"{label}: min–max in the lease"] = f"{num(vals.min())}–{num(vals.max())}"
        rows.append(row)
    return pd.DataFrame(rows)


def lease_differences(leases) -> list[tuple]:
    """(machine, leases, 'figure low–high (x% apart); ...', largest fraction apart) for each machine with
    two or more calibrated leases."""
    out = []
    for machine, g in leases.groupby("machine", sort=True):
        parts, worst, n = [], 0.0, 0
        for label in (_CAL["cal_matmul"], _CAL["cal_matmul_1t"], _CAL["cal_dispatch"]):
            vals = [v for v in g[label] if isinstance(v, float)]
            if len(vals) >= 2 and min(vals) > 0:
                apart = max(vals) / min(vals) - 1
                parts.append(f"{label} {num(min(vals))}–{num(max(vals))} ({percent(100 * apart)} apart)")
                worst, n = max(worst, apart), max(n, len(vals))
        if parts:
            out.append((machine, n, "; ".join(parts), worst))
    return out


def versions_table(df):
    """The versions the successful runs used (a skipped point's record may name no backend version)."""
    cols = ["machine", "backend", "keras", "backend_version"]
    ok = df[df["status"] == "ok"] if "status" in df else df
    v = ok[cols].fillna(NOT_RECORDED).astype(str).replace({"None": NOT_RECORDED, "": NOT_RECORDED})
    v = v.drop_duplicates().sort_values(cols)
    return v.rename(columns={"backend_version": "backend version"}).reset_index(drop=True)


def problems_table(df):
    bad = df[df["status"] != "ok"]
    out = bad[["workload", "backend", "device", "status", "reason", "machine", "started_at", "path"]].copy()
    out["reason"] = out["reason"].fillna("").astype(str).map(lambda s: s if len(s) < 400 else s[:400] + " …")
    out["path"] = out["path"].map(short_path)
    return out.sort_values(["status", "workload", "backend", "device"]).reset_index(drop=True)


def sources_table(df):
    """The record files behind the figures, per workload, machine, device, backend and data source."""
    import pandas as pd

    ok = df[df["status"] == "ok"]
    rows = []
    for key, g in ok.groupby(["workload", "machine", "device", "backend", "data_source"], dropna=False):
        paths = sorted(g["path"].dropna().astype(str))
        rows.append({"workload": key[0], "machine": key[1], "device": key[2], "backend": key[3], "data": key[4],
                     "records": len(g), "record files": "; ".join(short_path(p) for p in paths[:3])
                     + (f"; … {len(paths) - 3} more" if len(paths) > 3 else "")})
    return pd.DataFrame(rows)


def build(ctx) -> Section:
    import pandas as pd

    df = ctx.df
    if not ctx.has_records and not ctx.skipped:
        return Section.absent(__name__, "no records.")
    s = Section.of(__name__)
    if ctx.has_records:
        s.found(*said.provenance(df))
        s.heading("Machines").table(machines_table(df))
        leases = leases_table(df)
        s.heading("Machines by lease").note(
            "A lease is one boot of a machine (its <code>boot_id</code>); the calibration (Python dispatch in "
            "million calls a second, <i>dispatch M calls/s</i>: the host's single-thread speed; numpy matmul in "
            "GFLOP/s) is measured at the start of each run and shown as the median over the lease's runs, with "
            "its range inside the lease: it is the host's state when a run started (it moved up to 2× between "
            "runner starts of one H100 lease and tracked none of its figures), not a trait of the machine. "
            "Records from before this was recorded say so.")
        known = df["boot_id"].dropna().nunique()  # as the section's first sentence counts them
        unknown = " and the records with none recorded" if df["boot_id"].isna().any() else ""
        s.details(f"The {known} lease(s){unknown}: records, runs and calibration medians with their range (click "
                  "to open)", html_table(leases))
        for machine, n, figures, worst in lease_differences(leases):
            s.note("{}: {} leases: {}.", machine, n, figures, kind="warn" if worst > DIFFER else "note")
        s.heading("Library versions").table(versions_table(df))
        s.heading("Failed and skipped points").table(problems_table(df), empty="None: every point ran.")
        s.heading("Data source of every figure").table(sources_table(df), empty="No successful run.")
    if ctx.skipped:
        s.heading("JSON files that are not records")
        s.table(pd.DataFrame(list(ctx.skipped), columns=["file", "why"]).assign(
            file=lambda f: f["file"].map(lambda p: p if isnull(p) else short_path(p))))
    return s
