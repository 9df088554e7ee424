"""The summary: one tidy table from records, the charts, and rendering to a self-contained HTML.

``summary.ipynb`` calls these; anything shown in more than one place lives here. Every function
copes with partial data (no GPU rows, one backend, failed points): it returns an empty frame or
draws a note instead of raising on a missing column.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from .record import read_records

# Columns of the tidy table (one row per record), in display order.
COLUMNS = ["workload", "backend", "device", "device_used", "status", "reason", "host", "cpu_model",
           "gpu", "precision", "jit_compile", "batch_size", "threads", "n_train", "data_source",
           "first_epoch_s", "median_epoch_s", "epoch_q1", "epoch_q3", "epoch_min", "epoch_max",
           "n_steady", "step_s", "samples_per_s", "total_s", "cpu_pct", "gpu_pct", "gpu_mem_mb",
           "power_w", "energy_j_per_epoch", "final_loss", "final_accuracy", "keras", "backend_version",
           "started_at", "point_id", "notebook", "path"]

_BACKEND_PKG = {"tensorflow": ("tensorflow", "tensorflow-cpu"), "jax": ("jax",), "torch": ("torch",)}


def _row(r: dict) -> dict:
    fp = r.get("fingerprint") or {}
    params = r.get("params") or {}
    util = r.get("utilisation") or {}
    spread = r.get("epoch_spread") or {}
    hist = r.get("history") or {}
    versions = fp.get("versions") or {}
    gpus = fp.get("gpu_names") or []
    total = r.get("epoch_total_s")
    bv = next((versions[p] for p in _BACKEND_PKG.get(r.get("backend"), ()) if p in versions), None)
    return {
        "workload": r.get("workload"), "backend": r.get("backend"), "device": r.get("device"),
        "device_used": r.get("device_used"), "status": r.get("status"), "reason": r.get("reason"),
        "host": fp.get("host"), "cpu_model": fp.get("cpu_model"), "gpu": gpus[0] if gpus else None,
        "precision": params.get("precision"), "jit_compile": str(params.get("jit_compile")),
        "batch_size": r.get("batch_size"), "threads": params.get("threads"), "n_train": r.get("n_train"),
        "data_source": r.get("data_source"), "first_epoch_s": r.get("first_epoch_s"),
        "median_epoch_s": r.get("median_epoch_s"), "epoch_q1": spread.get("q1"),
        "epoch_q3": spread.get("q3"), "epoch_min": spread.get("min"), "epoch_max": spread.get("max"),
        "n_steady": spread.get("n"), "step_s": r.get("step_s"), "samples_per_s": r.get("samples_per_s"),
        "total_s": sum(total) if total else None,
        "cpu_pct": util.get("cpu_pct_mean"), "gpu_pct": util.get("gpu_pct_mean"),
        "gpu_mem_mb": util.get("gpu_mem_peak_mb", util.get("gpu_mem_mb_max")),
        "power_w": util.get("power_w_mean"), "energy_j_per_epoch": r.get("energy_j_per_epoch"),
        "final_loss": (hist.get("loss") or [None])[-1],
        "final_accuracy": (hist.get("accuracy") or [None])[-1],
        "keras": versions.get("keras"), "backend_version": bv, "started_at": r.get("started_at"),
        "point_id": r.get("point_id"), "notebook": r.get("notebook"), "path": r.get("_path"),
    }


def load_table(folders):
    """(tidy DataFrame, raw records, skipped files) from every record under ``folders``."""
    import pandas as pd

    records, skipped = read_records(folders)
    df = pd.DataFrame([_row(r) for r in records], columns=COLUMNS)
    for col in ("first_epoch_s", "median_epoch_s", "epoch_q1", "epoch_q3", "epoch_min", "epoch_max",
                "step_s", "samples_per_s", "total_s", "cpu_pct", "gpu_pct", "gpu_mem_mb", "power_w",
                "energy_j_per_epoch", "final_loss", "final_accuracy"):
        df[col] = pd.to_numeric(df[col], errors="coerce")
    df["config"] = df["device"].fillna("?") + " · " + df["backend"].fillna("?")
    df["machine"] = df["host"].fillna("?") + " (" + df["gpu"].fillna(df["cpu_model"].fillna("?")) + ")"
    return df, records, skipped


def latest_ok(df):
    """The most recent ok record per (machine, workload, backend, device, config knobs)."""
    ok = df[df["status"] == "ok"].copy()
    keys = ["machine", "workload", "backend", "device", "precision", "jit_compile", "batch_size",
            "threads", "n_train"]
    return ok.sort_values("started_at").groupby(keys, dropna=False).tail(1)


def speedup_table(df):
    """GPU over CPU per (machine, workload, backend, knobs): speedup and '% less time'."""
    import pandas as pd

    ok = latest_ok(df)
    keys = ["machine", "workload", "backend", "precision", "jit_compile", "batch_size", "n_train"]
    cpu = ok[ok["device"] == "cpu"].set_index(keys)["median_epoch_s"]
    gpu = ok[ok["device"] == "gpu"].set_index(keys)["median_epoch_s"]
    both = pd.concat({"cpu_s_per_epoch": cpu, "gpu_s_per_epoch": gpu}, axis=1, join="inner").dropna()
    if both.empty:
        return both.reset_index()
    both["speedup_x"] = both["cpu_s_per_epoch"] / both["gpu_s_per_epoch"]
    both["pct_less_time"] = 100.0 * (1.0 - both["gpu_s_per_epoch"] / both["cpu_s_per_epoch"])
    return both.reset_index()


def comparison_summary(df):
    """Seed 001's 'comparison summary': total time, s/epoch, s/step, CPU %, GPU %, GPU memory."""
    ok = latest_ok(df)
    cols = {"machine": "machine", "workload": "workload", "config": "device · backend",
            "batch_size": "batch", "data_source": "data", "total_s": "total time (s)",
            "first_epoch_s": "first epoch (s)", "median_epoch_s": "s/epoch (median)",
            "step_s": "s/step", "samples_per_s": "samples/s", "cpu_pct": "CPU %", "gpu_pct": "GPU %",
            "gpu_mem_mb": "GPU memory (MiB)"}
    out = ok[list(cols)].rename(columns=cols)
    return out.sort_values(["machine", "workload", "device · backend"]).reset_index(drop=True)


def plot_epoch_times(df, ax=None):
    """Seconds per epoch (median, IQR whiskers) by backend x device, one panel per workload."""
    import matplotlib.pyplot as plt
    import numpy as np

    ok = latest_ok(df)
    workloads = sorted(ok["workload"].dropna().unique())
    if not workloads:
        fig, ax = plt.subplots(figsize=(6, 1.2))
        ax.axis("off")
        ax.text(0.5, 0.5, "no successful runs to plot", ha="center", va="center")
        return fig
    fig, axes = plt.subplots(len(workloads), 1, figsize=(9, 3.2 * len(workloads)), squeeze=False)
    for ax, wl in zip(axes[:, 0], workloads):
        sub = ok[ok["workload"] == wl].sort_values(["machine", "device", "backend"])
        labels = [f"{m.split(' (')[0]}\n{d} · {b}\nbs={bs} {p}" for m, d, b, bs, p in
                  zip(sub["machine"], sub["device"], sub["backend"], sub["batch_size"], sub["precision"])]
        med = sub["median_epoch_s"].to_numpy()
        lo = np.clip(med - sub["epoch_q1"].fillna(sub["median_epoch_s"]).to_numpy(), 0, None)
        hi = np.clip(sub["epoch_q3"].fillna(sub["median_epoch_s"]).to_numpy() - med, 0, None)
        colors = ["#d62728" if d == "gpu" else "#1f77b4" for d in sub["device"]]
        y = np.arange(len(sub))
        ax.barh(y, med, xerr=[lo, hi], color=colors, capsize=3)
        ax.set_yticks(y, labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("seconds per epoch (median of steady-state epochs; whiskers: IQR)")
        src = ", ".join(sorted(sub["data_source"].dropna().unique()))
        ax.set_title(f"{wl}  (data: {src})")
        for yi, m in zip(y, med):
            ax.text(m, yi, f" {m:.3g}s", va="center", fontsize=7)
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


def html_table(df, floatfmt: str = "{:.4g}") -> str:
    """An HTML table with every cell escaped (text from records is never trusted as markup)."""
    import pandas as pd

    def fmt(v):
        if v is None or (isinstance(v, float) and pd.isna(v)):
            return ""
        if isinstance(v, float):
            return floatfmt.format(v)
        return html.escape(str(v))

    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = "".join("<tr>" + "".join(f"<td>{fmt(v)}</td>" for v in row) + "</tr>"
                   for row in df.itertuples(index=False))
    return f'<table class="cgb"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


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
