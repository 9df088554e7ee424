"""The summary: one tidy table from records, aggregates, costs, the charts, and rendering to HTML.

``summary.ipynb`` calls these; anything shown in more than one place lives here. Every function
copes with partial data (no GPU rows, one backend, failed points, zero records): it returns an
empty frame or draws a note instead of raising on a missing column. Text that comes from records is
HTML-escaped wherever it is shown (``html_table``, ``note``, ``esc``); chart text is drawn with
matplotlib's math parsing off, so a ``$`` in a name is text too.

    df, records, skipped = load_table([Path("outputs")])
    summ = summarise(df)                  # one row per configuration, repeats pooled, with spread
    prices = load_prices(); summ = add_costs(summ, prices, host_profiles={})
    pub = load_published()                # data/published_figures.csv
"""

from __future__ import annotations

import csv
import html
import os
import re
from pathlib import Path

from . import params as _params
from . import record as _record
from .paths import PROJECT_ROOT
from .record import read_records

PRICES = PROJECT_ROOT / "params" / "prices.yaml"
PUBLISHED = PROJECT_ROOT / "data" / "published_figures.csv"
MAX_BARS = 30  # bars per chart panel; more configurations are listed in the tables, not drawn
MAX_ROWS = 80  # rows per HTML table; the rest is summarised in a line
MAX_LINES = 8  # curves per history panel

# Columns of the tidy table (one row per record), in display order.
COLUMNS = ["workload", "backend", "device", "device_used", "status", "reason", "host", "cpu_model",
           "cpus", "ram_gb", "gpu", "gpus", "gpu_driver", "cuda", "precision", "jit_compile", "batch_size",
           "threads", "threads_eff", "n_train", "steps_per_epoch", "epochs", "data_source", "augment",
           "workers", "knobs", "first_epoch_s", "median_epoch_s", "epoch_q1", "epoch_q3", "epoch_min", "epoch_max",
           "n_steady", "step_s", "samples_per_s", "total_s", "cpu_pct", "gpu_pct", "gpu_mem_mb", "power_w",
           "energy_j_per_epoch", "final_loss", "final_accuracy", "keras", "backend_version", "python",
           "git_commit", "started_at", "point_id", "notebook", "path", "fixture", "epoch_list"]

# Parameters every notebook has (their own columns, or not part of a configuration: seed, epochs,
# output paths); the rest are a workload's own knobs. augment and workers have columns of their own.
_COMMON_PARAMS = frozenset(_params.COMMON) | {"augment", "workers"}

# What makes two records the same configuration (repeats of it are pooled).
CONFIG_KEYS = ["machine", "workload", "backend", "device", "precision", "jit_compile", "batch_size",
               "threads", "n_train", "augment", "workers", "knobs", "data_source"]
# Knobs shown in a configuration's label when they vary within a chart.
_LABEL_KNOBS = ["machine", "device", "backend", "batch_size", "threads", "precision", "jit_compile", "augment",
                "workers", "knobs", "n_train", "data_source"]
_NUMERIC = ("first_epoch_s", "median_epoch_s", "epoch_q1", "epoch_q3", "epoch_min", "epoch_max", "step_s",
            "samples_per_s", "total_s", "cpu_pct", "gpu_pct", "gpu_mem_mb", "power_w", "energy_j_per_epoch",
            "final_loss", "final_accuracy", "batch_size", "threads", "threads_eff", "n_train", "cpus",
            "ram_gb", "gpus", "steps_per_epoch", "epochs", "n_steady", "workers")

_BACKEND_PKG = {"tensorflow": ("tensorflow", "tensorflow-cpu"), "jax": ("jax",), "torch": ("torch",)}
_COLORS = {"cpu": "#1f77b4", "gpu": "#d62728"}


# ------------------------------------------------------------------ escaping and small HTML


def esc(value) -> str:
    """HTML-escape anything shown in the report that came from a record."""
    return html.escape("" if value is None else str(value))


def shown_path(path) -> str:
    """A folder as a report shows it: relative to the project (a published report names no machine's
    paths), else under ``~``, else as given."""
    p = Path(path).resolve()
    for base, prefix in ((PROJECT_ROOT.resolve(), ""), (Path.home().resolve(), "~/")):
        if p.is_relative_to(base):
            return prefix + (p.relative_to(base).as_posix() or ".")
    return str(path)


def note(template: str, *values, kind: str = "note") -> str:
    """A paragraph: ``template`` is trusted markup with ``{}`` slots; every value is escaped."""
    colours = {"note": "#555", "warn": "#8a5a00", "ok": "#215f21"}
    body = template.format(*(esc(v) for v in values))
    return f'<p style="color:{colours.get(kind, "#555")}">{body}</p>'


def _isnull(v) -> bool:
    try:
        import pandas as pd

        return v is None or (not isinstance(v, (list, dict, str)) and bool(pd.isna(v)))
    except (TypeError, ValueError):
        return False


def html_table(df, floatfmt: str | None = None, max_rows: int | None = MAX_ROWS) -> str:
    """An HTML table with every cell escaped (text from records is never trusted as markup).

    Floats: ``floatfmt`` if given, else 4 significant digits with thousands separated."""

    def fmt(v):
        if _isnull(v):
            return ""
        if isinstance(v, float):
            return html.escape(floatfmt.format(v) if floatfmt else num(v, 4))
        return html.escape(str(v))

    if df is None or len(df.columns) == 0:
        return note("(nothing to show)")
    extra = ""
    if max_rows is not None and len(df) > max_rows:
        extra = note("… {} more rows not shown (the full table is in the executed summary notebook).",
                     len(df) - max_rows)
        df = df.head(max_rows)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = "".join("<tr>" + "".join(f"<td>{fmt(v)}</td>" for v in row) + "</tr>"
                   for row in df.itertuples(index=False))
    return (f'<div style="overflow-x:auto"><table class="cgb"><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>{extra}")


def num(v, digits: int = 3) -> str:
    """A number for people: 3 significant digits, thousands separated (14,822 rather than 1.48e+04)."""
    if _isnull(v):
        return ""
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f}"
    if v != 0 and abs(v) < 1e-3:
        return f"{v:.{digits}g}"
    return f"{v:.{digits}g}" if abs(v) >= 1 else f"{v:.{digits}f}".rstrip("0").rstrip(".")


def spread_text(med, lo, hi, digits: int = 3) -> str:
    """'1.23 [1.10–1.40]' (median [low–high]); '' when the median is missing."""
    if _isnull(med):
        return ""
    m = num(med, digits)
    if _isnull(lo) or _isnull(hi) or (abs(hi - lo) <= 1e-12 * max(abs(med), 1)):
        return m
    return f"{m} [{num(lo, digits)}–{num(hi, digits)}]"


# ------------------------------------------------------------------ the tidy table


def _first(*vals):
    for v in vals:
        if v is not None:
            return v
    return None


def _row(r: dict) -> dict:
    fp = r.get("fingerprint") or {}
    params = r.get("params") or {}
    info = r.get("data_info") or {}
    util = r.get("utilisation") or {}
    spread = r.get("epoch_spread") or {}
    hist = r.get("history") or {}
    versions = fp.get("versions") or {}
    gpus = fp.get("gpu_names") or []
    total = r.get("epoch_total_s")
    steady = [t for t in (r.get("epoch_s") or []) if isinstance(t, (int, float))]
    bv = next((versions[p] for p in _BACKEND_PKG.get(r.get("backend"), ()) if p in versions), None)
    threads = params.get("threads")
    cpus = _first(fp.get("cpu_allowed"), fp.get("cpu_logical"))
    threads_eff = threads if threads else cpus
    augment = _first(params.get("augment"), info.get("augment"))
    # the workload's own knobs (catsdogs' variant, fasttext's ngram_range, vgg's augment_impl, ...):
    # records that differ in one are different configurations, never repeats of one
    knobs = ", ".join(f"{k}={params[k]}" for k in sorted(params) if k not in _COMMON_PARAMS)
    workers = _first(params.get("workers"), info.get("workers"))
    first = r.get("first_epoch_s")
    if total:
        total_s = sum(t for t in total if isinstance(t, (int, float)))
    elif steady or first is not None:
        total_s = sum(steady) + (first or 0.0)
    else:
        total_s = None
    loss = hist.get("loss") or [None]
    acc = hist.get("accuracy") or hist.get("acc") or [None]
    return {
        "workload": r.get("workload"), "backend": r.get("backend"), "device": r.get("device"),
        "device_used": r.get("device_used"), "status": r.get("status"), "reason": r.get("reason"),
        "host": fp.get("host"), "cpu_model": fp.get("cpu_model"), "cpus": cpus, "ram_gb": fp.get("ram_gb"),
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
        "epoch_max": spread.get("max"), "n_steady": spread.get("n", len(steady)), "step_s": r.get("step_s"),
        "samples_per_s": r.get("samples_per_s"), "total_s": total_s,
        "cpu_pct": util.get("cpu_pct_mean"), "gpu_pct": util.get("gpu_pct_mean"),
        "gpu_mem_mb": _first(util.get("gpu_mem_peak_mb"), util.get("gpu_mem_mb_max")),
        "power_w": util.get("power_w_mean"), "energy_j_per_epoch": r.get("energy_j_per_epoch"),
        "final_loss": loss[-1], "final_accuracy": acc[-1],
        "keras": versions.get("keras"), "backend_version": bv, "python": fp.get("python"),
        "git_commit": fp.get("git_commit"), "started_at": r.get("started_at"),
        "point_id": r.get("point_id"), "notebook": r.get("notebook"), "path": r.get("_path"),
        "fixture": bool(r.get("fixture")), "epoch_list": steady,
    }


def load_table(folders):
    """(tidy DataFrame, raw records, skipped files) from every record under ``folders``."""
    import pandas as pd

    folders = [Path(f) for f in folders if Path(f).exists()]
    records, skipped = read_records(folders)
    df = pd.DataFrame([_row(r) for r in records], columns=COLUMNS)
    for col in _NUMERIC:
        df[col] = pd.to_numeric(df[col], errors="coerce")
    df["fixture"] = df["fixture"].astype(bool)
    for col in ("workload", "backend", "device", "status", "host", "precision", "data_source", "augment"):
        df[col] = df[col].astype(object).where(df[col].notna(), None)
    host = df["host"].fillna("?").astype(str)
    hw = df["gpu"].fillna(df["cpu_model"]).fillna("?").astype(str)
    df["machine"] = host + " (" + hw + ")"
    df["config"] = df["device"].fillna("?").astype(str) + " · " + df["backend"].fillna("?").astype(str)
    return df, records, skipped


def latest_ok(df):
    """The most recent ok record per configuration."""
    ok = df[df["status"] == "ok"]
    return ok.sort_values("started_at").groupby(CONFIG_KEYS, dropna=False).tail(1)


# ------------------------------------------------------------------ aggregation over repeats


def summarise(df):
    """One row per configuration (CONFIG_KEYS): repeats pooled; median and spread of every timing.

    Steady-state epoch times of all repeats are pooled: ``s_per_epoch`` is their median, ``q1``/``q3``
    the IQR and ``min``/``max`` the range. samples/s and s/step follow from the same epochs.
    """
    import numpy as np
    import pandas as pd

    ok = df[(df["status"] == "ok") & df["median_epoch_s"].notna()]
    cols = CONFIG_KEYS + ["config", "n_runs", "n_epochs", "s_per_epoch", "q1", "q3", "min", "max",
                          "s_per_step", "step_q1", "step_q3", "samples_per_s", "sps_q1", "sps_q3",
                          "first_epoch_s", "first_min", "first_max", "total_s", "cpu_pct", "gpu_pct",
                          "gpu_mem_mb", "power_w", "energy_j_per_epoch", "final_accuracy", "threads_eff",
                          "host", "gpu", "cpu_model", "cpus", "gpus", "fixture", "epochs", "point_ids"]
    if ok.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for key, g in ok.groupby(CONFIG_KEYS, dropna=False, sort=True):
        epochs = np.array([t for lst in g["epoch_list"] for t in lst], dtype=float)
        if epochs.size == 0:
            epochs = g["median_epoch_s"].to_numpy(dtype=float)
        q1, med, q3 = np.percentile(epochs, [25, 50, 75])
        steps = g["steps_per_epoch"].dropna()
        steps = float(steps.iloc[0]) if len(steps) else None
        if not steps:
            ratio = (g["median_epoch_s"] / g["step_s"]).dropna()
            steps = float(ratio.median()) if len(ratio) else None
        n = g["n_train"].dropna()
        n = float(n.iloc[0]) if len(n) else None
        row = dict(zip(CONFIG_KEYS, key))
        row.update(
            config=g["config"].iloc[0], n_runs=len(g), n_epochs=int(epochs.size), s_per_epoch=med, q1=q1, q3=q3,
            min=float(epochs.min()), max=float(epochs.max()),
            s_per_step=med / steps if steps else None, step_q1=q1 / steps if steps else None,
            step_q3=q3 / steps if steps else None,
            samples_per_s=n / med if n else g["samples_per_s"].median(),
            sps_q1=n / q3 if n else None, sps_q3=n / q1 if n else None,
            first_epoch_s=g["first_epoch_s"].median(), first_min=g["first_epoch_s"].min(),
            first_max=g["first_epoch_s"].max(), total_s=g["total_s"].median(), cpu_pct=g["cpu_pct"].median(),
            gpu_pct=g["gpu_pct"].median(), gpu_mem_mb=g["gpu_mem_mb"].max(), power_w=g["power_w"].median(),
            energy_j_per_epoch=g["energy_j_per_epoch"].median(), final_accuracy=g["final_accuracy"].median(),
            threads_eff=g["threads_eff"].median(), host=g["host"].iloc[0], gpu=g["gpu"].iloc[0],
            cpu_model=g["cpu_model"].iloc[0], cpus=g["cpus"].iloc[0], gpus=g["gpus"].iloc[0],
            fixture=bool(g["fixture"].any()), epochs=g["epochs"].median(),
            point_ids=",".join(str(p) for p in g["point_id"].dropna().unique()[:5]))
        out.append(row)
    s = pd.DataFrame(out, columns=cols)
    for c in cols:
        if c not in CONFIG_KEYS + ["config", "host", "gpu", "cpu_model", "fixture", "point_ids"]:
            s[c] = pd.to_numeric(s[c], errors="coerce")
    return s.reset_index(drop=True)


def labels(sub, keep=("device", "backend")) -> list[str]:
    """Short labels for the configurations in ``sub``: the knobs that vary, plus ``keep``."""
    knobs = [k for k in _LABEL_KNOBS if k in sub.columns and (k in keep or sub[k].nunique(dropna=False) > 1)]
    out = []
    for _, r in sub.iterrows():
        parts = []
        for k in knobs:
            v = r[k]
            if k == "machine":
                parts.append(str(v).split(" (")[0] + ("*" if r.get("fixture") else ""))
            elif k in ("device", "backend"):
                parts.append(str(v))
            elif k == "knobs":
                parts.append(str(v) if v else "defaults")
            elif k == "threads":
                parts.append(f"threads={'all' if not v else int(v)}" if not _isnull(v) else "threads=?")
            else:
                parts.append(f"{k.replace('_size', '')}={v if not _isnull(v) else '-'}")
        out.append(" · ".join(parts))
    return out


def overview(df, summ) -> str:
    """The first lines a reader sees: how many records, machines, what is missing."""
    n = len(df)
    if n == 0:
        return note("<b>No records found.</b> Run <code>./run_all.sh</code> (or "
                    "<code>python -m helpers.runner params/quick.yaml</code>) first; every section below says "
                    "what it would show.", kind="warn")
    st = df["status"].value_counts()
    parts = [note("<b>{} records</b> ({} ok, {} failed, {} skipped) from <b>{} machine(s)</b>, {} workload(s), "
                  "backends: {}; devices used: {}.", n, int(st.get("ok", 0)), int(st.get("failed", 0)),
                  int(st.get("skipped", 0)), df["machine"].nunique(), df["workload"].nunique(),
                  ", ".join(sorted(df["backend"].dropna().astype(str).unique())) or "none",
                  ", ".join(sorted(df["device_used"].dropna().astype(str).unique())) or "none")]
    if not (df[(df["status"] == "ok")]["device_used"] == "gpu").any():
        parts.append(note("No successful GPU run in these records: GPU figures, speedups and GPU utilisation are "
                          "missing below (GPU points on a machine without a GPU are recorded as skipped).",
                          kind="warn"))
    src = df[df["status"] == "ok"]["data_source"].value_counts()
    if len(src):
        parts.append(note("Data: {}. Synthetic data has the real dataset's shapes, so timings are comparable; "
                          "accuracies are not.", ", ".join(f"{k} ({v} runs)" for k, v in src.items())))
    nfix = int(df["fixture"].sum())
    if nfix:
        parts.append(note("⚠ {} record(s) are <b>fixtures</b> (hand-written test data, marked * in charts and "
                          "'fixture' in tables), not measurements.", nfix, kind="warn"))
    return "".join(parts)


def headline(summ):
    """Per workload: the fastest GPU and CPU configuration (samples/s), speedup and '% less time'."""
    import pandas as pd

    rows = []
    for wl, g in summ[summ["samples_per_s"].notna()].groupby("workload", sort=True):
        row = {"workload": wl}
        for dev in ("cpu", "gpu"):
            d = g[g["device"] == dev]
            if len(d):
                b = d.loc[d["samples_per_s"].idxmax()]
                row[f"fastest {dev.upper()}"] = f"{b['machine']} · {b['backend']} · bs={b['batch_size']:g}"
                row[f"{dev.upper()} samples/s"] = spread_text(b["samples_per_s"], b["sps_q1"], b["sps_q3"])
                row[f"_{dev}"] = b["samples_per_s"]
        if "_cpu" in row and "_gpu" in row:
            row["GPU speedup ×"] = row["_gpu"] / row["_cpu"]
            row["% less time"] = 100 * (1 - row["_cpu"] / row["_gpu"])
        row["data"] = ", ".join(sorted(g["data_source"].dropna().astype(str).unique()))
        rows.append(row)
    cols = ["workload", "fastest CPU", "CPU samples/s", "fastest GPU", "GPU samples/s", "GPU speedup ×",
            "% less time", "data"]
    out = pd.DataFrame(rows)
    return out.reindex(columns=cols)


def timing_table(summ):
    """s/epoch, s/step, samples/s and first epoch, each as median [IQR], per configuration."""
    import pandas as pd

    if summ.empty:
        return pd.DataFrame()
    s = summ.sort_values(["workload", "machine", "device", "backend", "batch_size"])
    return pd.DataFrame({
        "workload": s["workload"], "machine": s["machine"] + s["fixture"].map({True: " (fixture)", False: ""}),
        "device · backend": s["config"], "batch": s["batch_size"], "threads": s["threads"].map(
            lambda t: "all" if t == 0 else ("" if _isnull(t) else f"{t:g}")),
        "runs": s["n_runs"], "epochs timed": s["n_epochs"],
        "s/epoch median [IQR]": [spread_text(*v) for v in zip(s["s_per_epoch"], s["q1"], s["q3"])],
        "min–max s/epoch": [f"{num(a)}–{num(b)}" for a, b in zip(s["min"], s["max"])],
        "s/step [IQR]": [spread_text(*v) for v in zip(s["s_per_step"], s["step_q1"], s["step_q3"])],
        "samples/s [IQR]": [spread_text(*v) for v in zip(s["samples_per_s"], s["sps_q1"], s["sps_q3"])],
        "data": s["data_source"],
    })


# ------------------------------------------------------------------ comparisons


# n_train is not a pairing key: a CPU point may train on fewer samples than its GPU twin (the
# speedup is then taken per sample, from samples/s, which does not depend on the epoch's size).
_PAIR_KEYS = ["machine", "workload", "backend", "precision", "jit_compile", "batch_size", "augment",
              "workers", "knobs", "data_source"]


def speedup_table(summ):
    """GPU over CPU on the same machine, workload, backend and settings: speedup and '% less time'.

    Speedup = GPU samples/s over CPU samples/s (per sample, so the two sides may train on different
    numbers of samples per epoch); the CPU side is the fastest CPU thread setting of that configuration.
    """
    import pandas as pd

    if summ.empty or not {"cpu", "gpu"} <= set(summ["device"].dropna()):
        return pd.DataFrame()
    ok = summ[summ["samples_per_s"].notna()]
    cpu = ok[ok["device"] == "cpu"].sort_values("samples_per_s", ascending=False).groupby(
        _PAIR_KEYS, dropna=False).head(1)
    gpu = ok[ok["device"] == "gpu"].sort_values("samples_per_s", ascending=False).groupby(
        _PAIR_KEYS, dropna=False).head(1)
    m = cpu.merge(gpu, on=_PAIR_KEYS, suffixes=("_cpu", "_gpu"))
    if m.empty:
        return pd.DataFrame()
    ratio = m["samples_per_s_gpu"] / m["samples_per_s_cpu"]
    worst = (m["sps_q1_gpu"] / m["sps_q3_cpu"]).astype(float)
    best = (m["sps_q3_gpu"] / m["sps_q1_cpu"]).astype(float)
    return pd.DataFrame({
        "machine": m["machine"], "workload": m["workload"], "backend": m["backend"], "batch": m["batch_size"],
        "CPU s/epoch [IQR]": [spread_text(*v) for v in zip(m["s_per_epoch_cpu"], m["q1_cpu"], m["q3_cpu"])],
        "CPU samples/epoch": m["n_train_cpu"],
        "GPU s/epoch [IQR]": [spread_text(*v) for v in zip(m["s_per_epoch_gpu"], m["q1_gpu"], m["q3_gpu"])],
        "GPU samples/epoch": m["n_train_gpu"],
        "CPU samples/s": m["samples_per_s_cpu"], "GPU samples/s": m["samples_per_s_gpu"],
        "speedup × (median)": ratio,
        "speedup × (IQR)": [f"{a:.3g}–{b:.3g}" if pd.notna(a) and pd.notna(b) else "" for a, b in zip(worst, best)],
        "% less time": 100 * (1 - 1 / ratio),
        "data": m["data_source"],
    }).sort_values(["workload", "machine", "backend"]).reset_index(drop=True)


def backend_table(summ):
    """Backend against backend on the same machine, device and settings: s/epoch and ratio to the fastest."""
    import pandas as pd

    keys = [k for k in CONFIG_KEYS if k != "backend"]
    rows = []
    for key, g in summ.groupby(keys, dropna=False, sort=True):
        if g["backend"].nunique() < 2:
            continue
        best = g["s_per_epoch"].min()
        k = dict(zip(keys, key))
        for _, r in g.sort_values("s_per_epoch").iterrows():
            rows.append({"workload": k["workload"], "machine": k["machine"], "device": k["device"],
                         "batch": k["batch_size"], "backend": r["backend"],
                         "s/epoch [IQR]": spread_text(r["s_per_epoch"], r["q1"], r["q3"]),
                         "× the fastest backend": r["s_per_epoch"] / best,
                         "first epoch s": r["first_epoch_s"], "data": k["data_source"]})
    return pd.DataFrame(rows)


def first_epoch_table(summ):
    import pandas as pd

    if summ.empty:
        return pd.DataFrame()
    s = summ.sort_values(["workload", "machine", "device", "backend"])
    return pd.DataFrame({
        "workload": s["workload"], "machine": s["machine"], "device · backend": s["config"], "batch": s["batch_size"],
        "first epoch s (median [min–max])": [spread_text(*v) for v in zip(s["first_epoch_s"], s["first_min"],
                                                                           s["first_max"])],
        "steady s/epoch [IQR]": [spread_text(*v) for v in zip(s["s_per_epoch"], s["q1"], s["q3"])],
        "compile overhead s": s["first_epoch_s"] - s["s_per_epoch"],
        "first ÷ steady": s["first_epoch_s"] / s["s_per_epoch"],
    })


def comparison_summary(summ):
    """Seed 001's 'comparison summary': total time, s/epoch, s/step, CPU %, GPU %, GPU memory."""
    import pandas as pd

    if summ.empty:
        return pd.DataFrame()
    s = summ.sort_values(["workload", "machine", "device", "backend"])
    return pd.DataFrame({
        "workload": s["workload"], "machine": s["machine"], "device · backend": s["config"], "batch": s["batch_size"],
        "epochs": s["epochs"], "total time s (median run)": s["total_s"],
        "s/epoch [IQR]": [spread_text(*v) for v in zip(s["s_per_epoch"], s["q1"], s["q3"])],
        "s/step": s["s_per_step"], "CPU % (mean)": s["cpu_pct"], "GPU % (mean)": s["gpu_pct"],
        "GPU memory MiB (peak)": s["gpu_mem_mb"], "data": s["data_source"],
    })


def energy_table(summ):
    import pandas as pd

    e = summ[summ["energy_j_per_epoch"].notna()] if not summ.empty else summ
    if e.empty:
        return pd.DataFrame()
    e = e.sort_values(["workload", "machine", "device", "backend"])
    return pd.DataFrame({
        "workload": e["workload"], "machine": e["machine"], "device · backend": e["config"], "batch": e["batch_size"],
        "mean power W": e["power_w"], "energy J/epoch (median)": e["energy_j_per_epoch"],
        "Wh/epoch": e["energy_j_per_epoch"] / 3600, "J per 1k samples": 1000 * e["energy_j_per_epoch"] / e["n_train"],
        "s/epoch": e["s_per_epoch"], "data": e["data_source"],
    })


# ------------------------------------------------------------------ prices and costs


def load_prices(path: Path | str | None = None) -> dict:
    """params/prices.yaml: {'currency': ..., 'profiles': {name: {...}}}; an empty dict if absent."""
    import yaml

    path = Path(path) if path else PRICES
    if not path.is_file():
        return {"currency": "USD", "profiles": {}, "_error": f"{path} not found"}
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise PriceError(f"{path}: a prices file is a mapping with the key 'profiles'")
    data["_path"] = str(path)
    data.setdefault("profiles", {})
    data.setdefault("currency", "USD")
    return data


def match_profile(host, gpu, cpu_model, cpus, gpus, prices: dict, host_profiles: dict | None = None):
    """The profile name for one machine: ``host_profiles`` first, then the first matching rule set."""
    profiles = prices.get("profiles") or {}
    hp = host_profiles or {}
    if host is not None and str(host) in hp and hp[str(host)] in profiles:
        return hp[str(host)]
    for name, prof in profiles.items():
        rules = (prof or {}).get("match")
        if not rules:
            continue
        ok = True
        for key, want in rules.items():
            if key == "gpu_name":
                ok = gpu is not None and not _isnull(gpu) and re.search(str(want), str(gpu), re.I) is not None
            elif key == "cpu_model":
                ok = cpu_model is not None and not _isnull(cpu_model) and re.search(str(want), str(cpu_model),
                                                                                    re.I) is not None
            elif key == "cpus":
                ok = not _isnull(cpus) and int(cpus) == int(want)
            elif key == "gpus":
                ok = int(gpus or 0) == int(want)
            else:
                ok = False  # an unknown rule never matches (a typo must not price a machine)
            if not ok:
                break
        if ok:
            return name
    return None


class PriceError(ValueError):
    """A price profile was asked for that the prices file does not have."""


def check_profile(name: str, prices: dict, where: str) -> None:
    profiles = prices.get("profiles") or {}
    if name not in profiles:
        src = prices.get("_path", "params/prices.yaml")
        raise PriceError(f"{where}: price profile '{name}' is not in {src} (key 'profiles'); allowed: "
                         + (", ".join(sorted(profiles)) or "none: the file has no profiles"))


def record_profiles(records) -> dict:
    """host -> price profile, from records of runs made with ``run_all.sh --price-profile NAME``."""
    out = {}
    for r in records:
        name = r.get("price_profile")
        host = (r.get("fingerprint") or {}).get("host")
        if name and host:
            out[str(host)] = str(name)
    return out


def add_costs(summ, prices: dict, host_profiles: dict | None = None):
    """Adds profile, $/h (on-demand, preemptible) and cost per epoch and per run to ``summ``.

    A profile named in ``host_profiles`` that the prices file lacks is an error (``PriceError``).
    """
    for host, name in (host_profiles or {}).items():
        check_profile(name, prices, f"host_profiles[{host!r}]")
    s = summ.copy()
    profiles = prices.get("profiles") or {}
    names, od, pre = [], [], []
    for _, r in s.iterrows():
        name = match_profile(r.get("host"), r.get("gpu"), r.get("cpu_model"), r.get("cpus"), r.get("gpus"), prices,
                             host_profiles)
        p = profiles.get(name) or {}
        names.append(name)
        od.append(p.get("on_demand_per_hour"))
        pre.append(p.get("preemptible_per_hour"))
    s["profile"] = names
    s["on_demand_per_h"] = [float(v) if v is not None else float("nan") for v in od]
    s["preemptible_per_h"] = [float(v) if v is not None else float("nan") for v in pre]
    for kind in ("on_demand", "preemptible"):
        s[f"{kind}_per_epoch"] = s["s_per_epoch"] * s[f"{kind}_per_h"] / 3600.0
        s[f"{kind}_per_run"] = s["total_s"] * s[f"{kind}_per_h"] / 3600.0
    return s


def pick_base(g, base_config: dict):
    """The base configuration of one workload's rows ``g``: the fastest row matching every key."""
    m = g
    for k, v in (base_config or {}).items():
        if k not in g.columns:
            return None
        m = m[m[k].astype(str) == str(v)]
    if m.empty:
        return None
    return m.loc[m["s_per_epoch"].idxmin()]


def relative_table(costed, base_config: dict):
    """Training time and cost relative to the base configuration (per workload), as seed 002 charts them."""
    import pandas as pd

    rows, missing = [], []
    for wl, g in costed.groupby("workload", sort=True):
        base = pick_base(g, base_config)
        if base is None:  # fall back to the fastest CPU configuration (every machine has a CPU), and say so
            missing.append(wl)
            base = pick_base(g, {"device": "cpu"})
            if base is None:
                base = g.loc[g["s_per_epoch"].idxmax()]
        for _, r in g.sort_values("s_per_epoch").iterrows():
            rows.append({
                "workload": wl, "machine": r["machine"], "device · backend": r["config"], "batch": r["batch_size"],
                "threads": "all" if r["threads"] == 0 else r["threads"],
                "base": "◀ base" if r.name == base.name else "",
                "s/epoch [IQR]": spread_text(r["s_per_epoch"], r["q1"], r["q3"]),
                "time × base": r["s_per_epoch"] / base["s_per_epoch"],
                "profile": r["profile"] or "no price",
                "$/epoch on-demand": r["on_demand_per_epoch"], "$/epoch preemptible": r["preemptible_per_epoch"],
                "$/run on-demand": r["on_demand_per_run"], "$/run preemptible": r["preemptible_per_run"],
                "cost × base (on-demand)": r["on_demand_per_epoch"] / base["on_demand_per_epoch"],
                "cost × base (preemptible)": r["preemptible_per_epoch"] / base["preemptible_per_epoch"],
            })
    return pd.DataFrame(rows), missing


def price_sources(prices: dict, used: set):
    import pandas as pd

    rows = []
    for name, p in (prices.get("profiles") or {}).items():
        p = p or {}
        rows.append({"profile": name, "used here": "yes" if name in used else "", "description": p.get("description"),
                     "on-demand $/h": p.get("on_demand_per_hour"), "preemptible $/h": p.get("preemptible_per_hour"),
                     "source": p.get("source"), "date": p.get("date")})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ published figures


def load_published(path: Path | str | None = None):
    """The figures the source documents published (data/published_figures.csv), one row per figure."""
    import pandas as pd

    path = Path(path) if path else PUBLISHED
    if not path.is_file():
        return pd.DataFrame(columns=["source", "ref", "workload", "hardware", "device", "metric", "value"])
    with path.open(newline="") as f:
        df = pd.DataFrame(list(csv.DictReader(f)))
    for c in ("value", "low", "high", "batch_size", "n_train", "workers", "threads"):
        if c in df.columns:
            df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def published_throughput(pub):
    """Published samples/s per (source, hardware, workload, variant), derived from s/epoch when needed."""
    import pandas as pd

    if pub.empty:
        return pd.DataFrame()
    keys = ["source", "hardware", "device", "workload", "variant", "batch_size", "augment", "workers"]
    sps = pub[pub["metric"] == "samples_per_s"].copy()
    have = set(map(tuple, sps[keys].astype(str).values))
    spe = pub[(pub["metric"] == "s_per_epoch") & pub["n_train"].notna()].copy()
    spe = spe[[tuple(r) not in have for r in spe[keys].astype(str).values]]
    if len(spe):
        spe["value"], spe["low"], spe["high"] = (spe["n_train"] / spe["value"], spe["n_train"] / spe["high"],
                                                 spe["n_train"] / spe["low"])
        spe["metric"] = "samples_per_s"
    return pd.concat([sps, spe], ignore_index=True)


def versus_published(summ, pub):
    """Your configurations beside the published ones, per workload: samples/s and s/epoch (table)."""
    import pandas as pd

    rows = []
    thr = published_throughput(pub)
    if not summ.empty and not thr.empty:
        thr = thr[thr["workload"].isin(set(summ["workload"]))]
    for _, p in thr.iterrows():
        rows.append({"workload": p["workload"], "who": "published", "hardware / configuration": p["hardware"],
                     "device": p["device"], "framework": p.get("framework"), "batch": p.get("batch_size"),
                     "samples/s": p["value"], "low": p.get("low"), "high": p.get("high"),
                     "source": f"{p['source']}: {p['ref']}"})
    for _, s in summ.iterrows():
        if s["workload"] not in set(pub.get("workload", [])):
            continue
        rows.append({"workload": s["workload"], "who": "you" + (" (fixture)" if s["fixture"] else ""),
                     "hardware / configuration": f"{s['machine']} · {s['backend']}", "device": s["device"],
                     "framework": f"Keras 3 / {s['backend']}", "batch": s["batch_size"],
                     "samples/s": s["samples_per_s"], "low": s["sps_q1"], "high": s["sps_q3"],
                     "source": f"your records ({s['n_runs']} run(s), data: {s['data_source']})"})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    return out.sort_values(["workload", "who", "samples/s"], ascending=[True, False, False]).reset_index(drop=True)


# ------------------------------------------------------------------ provenance


def machines_table(df):
    import pandas as pd

    if df.empty:
        return pd.DataFrame()
    g = df.groupby("machine", dropna=False)
    return pd.DataFrame({
        "machine": list(g.groups.keys()),
        "host": g["host"].first().values, "CPU": g["cpu_model"].first().values, "logical CPUs": g["cpus"].max().values,
        "RAM GB": g["ram_gb"].max().values, "GPU": g["gpu"].first().values, "GPUs": g["gpus"].max().values,
        "GPU driver": g["gpu_driver"].first().values, "CUDA": g["cuda"].first().values,
        "Python": g["python"].first().values, "git commit": g["git_commit"].first().values,
        "records": g.size().values, "fixture": g["fixture"].any().map({True: "FIXTURE", False: ""}).values,
        "first run": g["started_at"].min().values, "last run": g["started_at"].max().values,
    })


def versions_table(df):
    if df.empty:
        return df
    cols = ["machine", "backend", "keras", "backend_version"]
    v = df[cols].astype(str).drop_duplicates().sort_values(cols)
    return v.rename(columns={"backend_version": "backend version"}).reset_index(drop=True)


def sources_table(df):
    """Where every figure comes from: the record files, per workload, device, backend and data source."""
    import pandas as pd

    ok = df[df["status"] == "ok"]
    if ok.empty:
        return pd.DataFrame()
    rows = []
    for key, g in ok.groupby(["workload", "machine", "device", "backend", "data_source"], dropna=False):
        paths = sorted(g["path"].dropna().astype(str))
        rows.append({"workload": key[0], "machine": key[1], "device": key[2], "backend": key[3], "data": key[4],
                     "records": len(g), "record files": "; ".join(_short(p) for p in paths[:3])
                     + (f"; … {len(paths) - 3} more" if len(paths) > 3 else "")})
    return pd.DataFrame(rows)


def problems_table(df):
    bad = df[df["status"] != "ok"]
    if bad.empty:
        return bad
    out = bad[["workload", "backend", "device", "status", "reason", "machine", "started_at", "path"]].copy()
    out["reason"] = out["reason"].fillna("").astype(str).map(lambda s: s if len(s) < 400 else s[:400] + " …")
    out["path"] = out["path"].map(_short)
    return out.sort_values(["status", "workload", "backend", "device"]).reset_index(drop=True)


def _short(p) -> str:
    if _isnull(p):
        return ""
    parts = Path(str(p)).parts
    return str(Path(*parts[-3:])) if len(parts) > 3 else str(p)


# ------------------------------------------------------------------ charts


def setup_plots():
    """Matplotlib defaults for the report: no math parsing of record text, compact figures."""
    import matplotlib.pyplot as plt

    try:
        import seaborn as sns

        sns.set_theme(style="whitegrid", context="notebook", font_scale=0.85)
    except ImportError:  # pragma: no cover - seaborn is a dependency
        pass
    plt.rcParams.update({"text.parse_math": False, "figure.dpi": 90, "savefig.dpi": 90,
                         "figure.max_open_warning": 0, "axes.titlesize": 10})
    return plt


def _plain_log(ax, axis: str = "x", base: int = 10, ticks=None):
    """A log axis labelled with plain numbers (math parsing is off, so no 10^n mathtext labels)."""
    from matplotlib import ticker

    (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=base)
    a = ax.xaxis if axis == "x" else ax.yaxis
    if ticks is not None:
        a.set_major_locator(ticker.FixedLocator(sorted(set(ticks))))
    a.set_major_formatter(ticker.FuncFormatter(lambda v, _: num(v)))
    a.set_minor_formatter(ticker.NullFormatter())


def _empty(msg: str):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 0.9))
    ax.axis("off")
    ax.text(0.5, 0.5, msg, ha="center", va="center", fontsize=10, color="#555", wrap=True)
    return fig


def _cap(sub, by: str, n: int = MAX_BARS):
    """At most ``n`` rows of ``sub`` (the fastest by ``by``) and how many were left out."""
    if len(sub) <= n:
        return sub, 0
    return sub.nsmallest(n, by), len(sub) - n


def plot_metric(summ, metric: str = "s_per_epoch", lo: str = "q1", hi: str = "q3", xlabel: str = "",
                log: bool = False):
    """One horizontal bar per configuration (median; whiskers lo..hi), one panel per workload."""
    import numpy as np

    s = summ[summ[metric].notna()] if not summ.empty else summ
    workloads = sorted(s["workload"].dropna().unique()) if not s.empty else []
    if not workloads:
        return _empty("no successful runs to plot")
    import matplotlib.pyplot as plt

    panels = []
    for wl in workloads:
        sub = s[s["workload"] == wl]
        sub, dropped = _cap(sub, "s_per_epoch")
        panels.append((wl, sub.sort_values(["device", "backend", "machine", "batch_size"]), dropped))
    heights = [max(1.6, 0.28 * len(p[1]) + 1.0) for p in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (wl, sub, dropped) in zip(axes[:, 0], panels):
        med = sub[metric].to_numpy(dtype=float)
        lo_v = np.clip(med - sub[lo].fillna(sub[metric]).to_numpy(dtype=float), 0, None)
        hi_v = np.clip(sub[hi].fillna(sub[metric]).to_numpy(dtype=float) - med, 0, None)
        y = np.arange(len(sub))
        colors = [_COLORS.get(d, "#7f7f7f") for d in sub["device"]]
        hatches = ["//" if f else "" for f in sub["fixture"]]
        bars = ax.barh(y, med, xerr=[lo_v, hi_v], color=colors, capsize=2, error_kw={"lw": 0.8})
        for b, h in zip(bars, hatches):
            b.set_hatch(h)
        ax.set_yticks(y, labels(sub), fontsize=7)
        ax.invert_yaxis()
        if log:
            _plain_log(ax)
        for yi, m in zip(y, med):
            ax.text(m, yi, f" {m:.3g}", va="center", fontsize=7)
        src = ", ".join(sorted(sub["data_source"].dropna().astype(str).unique()))
        extra = f"; {dropped} slower configurations not drawn" if dropped else ""
        ax.set_title(f"{wl}  (data: {src or '?'}{extra})", loc="left")
        ax.set_xlabel(xlabel)
    fig.tight_layout()
    return fig


def plot_first_epoch(summ):
    """First epoch (compile) beside the steady-state median, per configuration and workload."""
    import numpy as np

    s = summ[summ["first_epoch_s"].notna()] if not summ.empty else summ
    if s.empty:
        return _empty("no first-epoch times recorded")
    import matplotlib.pyplot as plt

    workloads = sorted(s["workload"].unique())
    panels = [(wl, _cap(s[s["workload"] == wl], "s_per_epoch", 20)) for wl in workloads]
    heights = [max(1.6, 0.32 * len(p[1][0]) + 1.0) for p in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (wl, (sub, dropped)) in zip(axes[:, 0], panels):
        sub = sub.sort_values(["device", "backend", "machine"])
        y = np.arange(len(sub))
        ax.barh(y - 0.2, sub["first_epoch_s"], height=0.4, color="#ff7f0e", label="first epoch (compile + train)")
        ax.barh(y + 0.2, sub["s_per_epoch"], height=0.4, color="#1f77b4", label="steady-state epoch (median)")
        ax.set_yticks(y, labels(sub), fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("seconds")
        ax.set_title(f"{wl}" + (f"  ({dropped} configurations not drawn)" if dropped else ""), loc="left")
    axes[0, 0].legend(fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.08), ncol=2, frameon=False)
    fig.tight_layout()
    return fig


def plot_scaling(summ, x: str, xlabel: str, min_points: int = 2):
    """samples/s against ``x`` (batch size, threads, workers, augment), one line per other setting."""
    import matplotlib.pyplot as plt

    if summ.empty or x not in summ.columns:
        return None
    s = summ[summ[x].notna() & summ["samples_per_s"].notna()].copy()
    if x == "threads":
        s = s[s["device"] == "cpu"]
        s["_x"] = s["threads_eff"]
    else:
        s["_x"] = s[x]
    groups = []
    other = [k for k in CONFIG_KEYS if k not in (x, "workload")]
    for wl, g in s.groupby("workload", sort=True):
        lines = [(k, h) for k, h in g.groupby(other, dropna=False, sort=True) if h["_x"].nunique() >= min_points]
        if lines:
            groups.append((wl, lines[:MAX_LINES], max(0, len(lines) - MAX_LINES)))
    if not groups:
        return None
    fig, axes = plt.subplots(1, len(groups), figsize=(min(5.0 * len(groups), 15), 3.6), squeeze=False)
    cat = x == "augment"
    for ax, (wl, lines, dropped) in zip(axes[0], groups):
        for k, h in lines:
            h = h.sort_values("_x")
            lab = labels(h.head(1).assign(**{c: v for c, v in zip(other, k)}))[0] if len(h) else ""
            xs = h["_x"].astype(str) if cat else h["_x"].astype(float)
            ax.errorbar(xs, h["samples_per_s"], yerr=[(h["samples_per_s"] - h["sps_q1"]).clip(lower=0).fillna(0),
                                                       (h["sps_q3"] - h["samples_per_s"]).clip(lower=0).fillna(0)],
                        marker="o", capsize=2, label=lab, color=_COLORS.get(k[other.index("device")]) if
                        len(lines) <= 2 else None)
        if x in ("batch_size", "threads") and not cat:
            _plain_log(ax, base=2, ticks=[v for _, h in lines for v in h["_x"]])
        ax.set_xlabel(xlabel)
        ax.set_ylabel("samples/s (median; bars: IQR)")
        ax.set_title(wl + (f" (+{dropped} lines not drawn)" if dropped else ""), loc="left")
        ax.legend(fontsize=6)
    fig.tight_layout()
    return fig


def pick_timeline(records: list[dict], chosen: str = ""):
    """The run whose utilisation over time is drawn: ``chosen`` (a point id prefix or a substring of the
    record path), else the GPU run with the most samples, else the run with the most samples."""
    runs = [r for r in records if r.get("status") == "ok" and r.get("utilisation_timeline")]
    if chosen:
        for r in runs:
            if str(r.get("point_id", "")).startswith(chosen) or chosen in str(r.get("_path", "")):
                return r
    if not runs:
        return None
    return max(runs, key=lambda r: (r.get("device_used") == "gpu", len(r["utilisation_timeline"])))


def plot_timeline(rec: dict):
    """CPU %, GPU %, GPU memory and power against time for one run; epochs shaded (seed 003)."""
    import matplotlib.pyplot as plt

    tl = [s for s in (rec.get("utilisation_timeline") or []) if isinstance(s, dict) and "t" in s]
    if not tl:
        return _empty("this run has no utilisation samples")
    t = [s["t"] for s in tl]
    has_mem = any(s.get("gpu_mem_mb") is not None for s in tl)
    has_pow = any(s.get("power_w") is not None for s in tl)
    n = 1 + int(has_mem or has_pow)
    fig, axes = plt.subplots(n, 1, figsize=(10, 2.6 * n), sharex=True, squeeze=False)
    ax = axes[0, 0]
    ax.plot(t, [s.get("cpu_pct") for s in tl], label="CPU % (process, all cores = 100·cores)", color="#1f77b4")
    if any(s.get("gpu_pct") is not None for s in tl):
        ax.plot(t, [s.get("gpu_pct") for s in tl], label="GPU %", color="#d62728")
    ax.set_ylabel("utilisation %")
    for i, b in enumerate(rec.get("epoch_bounds_s") or []):
        if isinstance(b, (list, tuple)) and len(b) == 2:
            for a in axes[:, 0]:
                a.axvspan(b[0], b[1], color="#ff7f0e" if i == 0 else "#cccccc", alpha=0.25 if i == 0 else 0.2, lw=0)
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title(f"{rec.get('workload')} · {rec.get('backend')} · {rec.get('device_used')} on "
                 f"{(rec.get('fingerprint') or {}).get('host')}  (orange: first epoch; grey: later epochs)",
                 loc="left")
    if n > 1:
        a2 = axes[1, 0]
        if has_mem:
            a2.plot(t, [s.get("gpu_mem_mb") for s in tl], color="#9467bd", label="GPU memory MiB")
            a2.set_ylabel("MiB")
        if has_pow:
            a3 = a2.twinx() if has_mem else a2
            a3.plot(t, [s.get("power_w") for s in tl], color="#2ca02c", label="power W")
            a3.set_ylabel("W")
            a3.legend(fontsize=7, loc="lower right")
        if has_mem:
            a2.legend(fontsize=7, loc="upper left")
    axes[-1, 0].set_xlabel("seconds since the sampler started")
    fig.tight_layout()
    return fig


def plot_history(df, records_by_path: dict):
    """Loss and accuracy per epoch: the latest run of each configuration, one row of panels per workload."""
    import matplotlib.pyplot as plt

    ok = latest_ok(df) if not df.empty else df
    ok = ok[ok["path"].isin(list(records_by_path))] if not ok.empty else ok
    workloads = sorted(ok["workload"].dropna().unique()) if not ok.empty else []
    if not workloads:
        return _empty("no loss/accuracy history recorded")
    fig, axes = plt.subplots(len(workloads), 2, figsize=(13, 2.8 * len(workloads)), squeeze=False)
    for (a1, a2), wl in zip(axes, workloads):
        sub = ok[ok["workload"] == wl].sort_values("started_at").tail(MAX_LINES)
        for lab, (_, r) in zip(labels(sub), sub.iterrows()):
            h = records_by_path[r["path"]].get("history") or {}
            loss, acc = h.get("loss") or [], h.get("accuracy") or h.get("acc") or []
            if loss:
                a1.plot(range(1, len(loss) + 1), loss, marker=".", label=lab)
            if acc:
                a2.plot(range(1, len(acc) + 1), acc, marker=".", label=lab)
        a1.set_title(f"{wl}: training loss", loc="left")
        a2.set_title(f"{wl}: training accuracy", loc="left")
        from matplotlib.ticker import MaxNLocator

        for a in (a1, a2):
            a.set_xlabel("epoch")
            a.xaxis.set_major_locator(MaxNLocator(integer=True))
        a2.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def plot_cost(rel):
    """Time × base and cost × base per configuration (seed 002's two charts), one panel pair per workload."""
    import numpy as np

    r = rel[rel["time × base"].notna()] if not rel.empty else rel
    if r.empty:
        return _empty("no configuration to compare with the base")
    import matplotlib.pyplot as plt

    workloads = sorted(r["workload"].unique())
    panels = []
    for wl in workloads:
        sub = r[r["workload"] == wl].head(MAX_BARS)
        panels.append((wl, sub))
    heights = [max(1.5, 0.28 * len(p[1]) + 1.0) for p in panels]
    fig, axes = plt.subplots(len(panels), 2, figsize=(11, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for (a1, a2), (wl, sub) in zip(axes, panels):
        y = np.arange(len(sub))
        labs = [f"{m.split(' (')[0]} · {c} · bs={b:g}" for m, c, b in
                zip(sub["machine"], sub["device · backend"], sub["batch"])]
        a1.barh(y, sub["time × base"], color=["#444" if b else "#1f77b4" for b in sub["base"]])
        a1.axvline(1.0, ls=":", color="k")
        a1.set_yticks(y, labs, fontsize=7)
        a1.invert_yaxis()
        a1.set_title(f"{wl}: training time × base (lower is better)", loc="left")
        cost = sub["cost × base (preemptible)"].fillna(sub["cost × base (on-demand)"])
        a2.barh(y, cost.fillna(0), color=["#444" if b else "#2ca02c" for b in sub["base"]])
        for yi, c in zip(y, cost):
            if _isnull(c):
                a2.text(0.02, yi, "no price", va="center", fontsize=7, color="#8a5a00")
        a2.axvline(1.0, ls=":", color="k")
        a2.set_yticks(y, [""] * len(y))
        a2.invert_yaxis()
        a2.set_title("cost × base (preemptible, else on-demand)", loc="left")
    fig.tight_layout()
    return fig


def plot_vs_published(vs):
    """Samples/s: the published figures (grey) beside your configurations (coloured), per workload, log scale."""
    import numpy as np

    if vs.empty:
        return _empty("no published figure for the workloads in these records")
    import matplotlib.pyplot as plt

    v = vs[vs["samples/s"].notna()]
    mine = set(v[v["who"].str.startswith("you")]["workload"])
    workloads = sorted(mine) or sorted(v["workload"].unique())
    panels = []
    for wl in workloads:
        sub = v[v["workload"] == wl]
        you = sub[sub["who"].str.startswith("you")].nlargest(MAX_BARS // 2, "samples/s")
        pub = sub[sub["who"] == "published"]
        panels.append((wl, np.concatenate([pub.index.to_numpy(), you.index.to_numpy()])))
    heights = [max(1.6, 0.28 * len(p[1]) + 1.0) for p in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, sum(heights)), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (wl, idx) in zip(axes[:, 0], panels):
        sub = v.loc[idx]
        y = np.arange(len(sub))
        val = sub["samples/s"].to_numpy(dtype=float)
        lo = np.clip(val - sub["low"].fillna(sub["samples/s"]).to_numpy(dtype=float), 0, None)
        hi = np.clip(sub["high"].fillna(sub["samples/s"]).to_numpy(dtype=float) - val, 0, None)
        colors = ["#aaaaaa" if w == "published" else _COLORS.get(d, "#7f7f7f") for w, d in zip(sub["who"],
                                                                                               sub["device"])]
        ax.barh(y, val, xerr=[lo, hi], color=colors, capsize=2)
        labs = [(f"[{s.split('_')[0]}] {h}" if w == "published" else f"you: {h}") + f" · bs={b:g}"
                if not _isnull(b) else (f"[{s.split('_')[0]}] {h}" if w == "published" else f"you: {h}")
                for w, h, s, b in zip(sub["who"], sub["hardware / configuration"], sub["source"], sub["batch"])]
        ax.set_yticks(y, labs, fontsize=7)
        ax.invert_yaxis()
        _plain_log(ax)
        for yi, m in zip(y, val):
            ax.text(m, yi, f" {m:,.0f}", va="center", fontsize=7)
        ax.set_title(f"{wl}: samples/s (grey: published, [seed]; colour: your runs)", loc="left")
    axes[-1, 0].set_xlabel("samples per second (log scale; whiskers: IQR or stated range)")
    fig.tight_layout()
    return fig


def plot_point(record: dict):
    """The plots a workload notebook shows for its own run: epoch times and loss/accuracy."""
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.2))
    total = record.get("epoch_total_s") or []
    first = record.get("first_epoch_s")
    times = ([first] if first is not None else []) + list(record.get("epoch_s") or [])
    if times:
        a1.bar(range(1, len(times) + 1), times, color=["#ff7f0e"] + ["#1f77b4"] * (len(times) - 1))
        a1.set_xlabel("epoch (orange: first epoch, includes compilation)")
        a1.set_ylabel("seconds (training)")
    else:
        a1.text(0.5, 0.5, "no epochs timed", ha="center")
    a1.set_title(f"{record.get('workload')} · {record.get('backend')} · {record.get('device_used')}")
    hist = record.get("history") or {}
    for key, values in hist.items():
        if key.endswith("loss") or key.endswith("accuracy"):
            a2.plot(range(1, len(values) + 1), values, marker="o", label=key)
    a2.set_xlabel("epoch")
    a2.legend(fontsize=8)
    a2.set_title(f"loss / accuracy (data: {record.get('data_source')})")
    del total
    fig.tight_layout()
    return fig


_EXTERNAL_SCRIPT = re.compile(r"<script[^>]*\bsrc=[\"']https?://[^>]*>\s*</script>", re.IGNORECASE)
_MATHJAX_CONFIG = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL)


def make_self_contained(page: str) -> str:
    """Drop the template's CDN scripts (require.js, MathJax): the report needs no network to view."""
    page = _MATHJAX_CONFIG.sub("", page)
    return _EXTERNAL_SCRIPT.sub("", page)


def render_html(executed_notebook: Path, out_html: Path) -> Path:
    """nbconvert: the executed summary notebook to one self-contained HTML page, code hidden."""
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(executed_notebook), as_version=4)
    exporter = HTMLExporter(exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(nb)
    body = make_self_contained(body)
    out_html = Path(out_html)
    out_html.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_html.with_suffix(".html.tmp")
    tmp.write_text(body, encoding="utf-8")
    tmp.replace(out_html)
    return out_html


def _render_notebook(src: Path, dst: Path) -> None:
    """A workload notebook (code shown) to self-contained HTML; skipped when ``dst`` is up to date."""
    import nbformat
    from nbconvert import HTMLExporter

    if dst.is_file() and dst.stat().st_mtime >= src.stat().st_mtime:
        return
    nb = nbformat.read(str(src), as_version=4)
    body, _ = HTMLExporter(exclude_input_prompt=True, exclude_output_prompt=True).from_notebook_node(nb)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_suffix(".html.tmp")
    tmp.write_text(make_self_contained(body), encoding="utf-8")
    tmp.replace(dst)


def render_index(folders, out_html: Path, report_html: Path | None = None) -> Path:
    """outputs/index.html: a link to the report and to every executed workload notebook, rendered to HTML.

    Notebooks (the records' ``notebook`` key) are rendered next to the index under ``notebooks_html/``;
    a notebook that is not on this machine (records copied from elsewhere) is listed as such.
    """
    out_html = Path(out_html)
    root = out_html.parent
    records, _ = read_records([Path(f) for f in folders if Path(f).exists()])
    rows = []
    seen = set()
    for r in sorted(records, key=lambda r: (str(r.get("workload")), str(r.get("started_at")))):
        nb = _record.notebook_path(r)
        nb = str(nb) if nb else None
        cells = [esc(r.get(k)) for k in ("workload", "backend", "device", "status")]
        host = esc((r.get("fingerprint") or {}).get("host"))
        when = esc(r.get("started_at"))
        link = "<i>no notebook recorded</i>"
        if nb and nb not in seen:
            seen.add(nb)
            src = Path(nb)
            if src.is_file():
                rel = src.resolve().relative_to(root.resolve()) if src.resolve().is_relative_to(root.resolve()) \
                    else Path("external") / src.name
                dst = root / "notebooks_html" / rel.with_suffix(".html")
                try:
                    _render_notebook(src, dst)
                    href = os.path.relpath(dst, root)
                    link = f'<a href="{esc(Path(href).as_posix())}">{esc(src.name)}</a>'
                except Exception as exc:  # a broken notebook must not break the index
                    link = f"{esc(src.name)} <i>(could not render: {esc(type(exc).__name__)})</i>"
            else:
                link = f"{esc(src.name)} <i>(not on this machine)</i>"
        elif nb:
            continue
        fixture = " <b>(fixture)</b>" if r.get("fixture") else ""
        rows.append(f"<tr><td>{cells[0]}{fixture}</td><td>{cells[1]}</td><td>{cells[2]}</td><td>{cells[3]}</td>"
                    f"<td>{host}</td><td>{when}</td><td>{link}</td></tr>")
    report_link = ""
    if report_html is not None:
        report_link = (f'<p><a href="{esc(Path(os.path.relpath(report_html, root)).as_posix())}"><b>The report'
                       "</b></a>: every record summarised (timings, speedups, cost, published figures).</p>")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>CPU vs GPU benchmark: index</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 8px;font-size:90%}}th{{background:#eee}}</style></head>
<body><h1>CPU vs GPU benchmark: index</h1>{report_link}
<h2>Executed workload notebooks ({len(rows)})</h2>
<table><thead><tr><th>workload</th><th>backend</th><th>device</th><th>status</th><th>host</th><th>started</th>
<th>notebook</th></tr></thead><tbody>{''.join(rows) or '<tr><td colspan="7">no records yet</td></tr>'}</tbody>
</table></body></html>
"""
    tmp = out_html.with_suffix(".html.tmp")
    out_html.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(out_html)
    return out_html


REPORT_CSS = """<style>
table.cgb{border-collapse:collapse;font-size:12px;margin:4px 0 12px 0}
table.cgb td,table.cgb th{border:1px solid #ddd;padding:2px 6px;text-align:left !important;vertical-align:top}
table.cgb th{background:#f2f2f2}
</style>"""
