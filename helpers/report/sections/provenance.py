"""Where every figure comes from: machines, library versions, failed and skipped points, record files."""

from __future__ import annotations

from ..fmt import isnull, short_path
from .base import Section

TITLE = "Provenance"
LEAD = ("The machines (hardware and software fingerprints), library versions, the points that failed or were "
        "skipped with their reasons, and the record files behind every figure.")


def machines_table(df):
    import pandas as pd

    g = df.groupby("machine", dropna=False)
    return pd.DataFrame({
        "machine": list(g.groups.keys()),
        "host": g["host"].first().values, "CPU": g["cpu_model"].first().values,
        "logical CPUs": g["machine_cpus"].max().values, "RAM GB": g["ram_gb"].max().values,
        "GPU": g["gpu"].first().values, "GPUs": g["gpus"].max().values,
        "GPU driver": g["gpu_driver"].first().values, "CUDA": g["cuda"].first().values,
        "Python": g["python"].first().values, "git commit": g["git_commit"].first().values,
        "records": g.size().values, "fixture": g["fixture"].any().map({True: "FIXTURE", False: ""}).values,
        "first run": g["started_at"].min().values, "last run": g["started_at"].max().values,
    })


def versions_table(df):
    cols = ["machine", "backend", "keras", "backend_version"]
    v = df[cols].astype(str).drop_duplicates().sort_values(cols)
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
        s.heading("Machines").table(machines_table(df))
        s.heading("Library versions").table(versions_table(df))
        s.heading("Failed and skipped points").table(problems_table(df), empty="None: every point ran.")
        s.heading("Data source of every figure").table(sources_table(df), empty="No successful run.")
    if ctx.skipped:
        s.heading("JSON files that are not records")
        s.table(pd.DataFrame(list(ctx.skipped), columns=["file", "why"]).assign(
            file=lambda f: f["file"].map(lambda p: p if isnull(p) else short_path(p))))
    return s
