"""Seed 001's comparison summary and the utilisation of one run over time (seed 003)."""

from __future__ import annotations

from helpers.report.derive import mfu as mfu_of
from helpers.report.derive.precision import digits
from helpers.report.load.values import isnull
from helpers.report.publish.sections.base import Section, config_labels
from helpers.report.words import findings as said
from helpers.report.words.fmt import (
    BUSY,
    figure,
    marked,
    mfu_shown,
    num,
    percent,
    rounded,
    row_marks,
    short_path,
    shown,
)
from helpers.report.words.style import PALETTE

TITLE = "Comparison summary and utilisation over time"
NAV = "Utilisation"  # its name in the one-line contents
LEAD = ("As seed 001 tabulates it: total time of the median run, seconds per epoch (with the samples an epoch "
        "held) and per step, mean and peak GPU utilisation (NVML: the share of time any kernel ran, not how much "
        "of the GPU's arithmetic was used) beside MFU (the arithmetic done over the device's peak), mean CPU "
        "utilisation and peak GPU memory (the framework's own peak counter where it has one: JAX preallocates "
        "most of the card, so NVML's figure alone misleads).")
# Seed 001's and seed 003's question, "how much of the GPU did it use?", has two answers.
WHY_THEY_DIFFER = ("Two answers to \"how much of the GPU did it use\": NVML's GPU % counts the time any kernel ran, "
                   "however few of the card's units it kept busy, so a small model that launches one small kernel "
                   "after another reads near 100%; MFU (model FLOPs utilisation: FLOPs per sample x samples/s over "
                   "the device's peak for the precision, the section \"How far from the limit\") counts the "
                   "arithmetic done, so the same run may read a few percent.")


def _mfu_text(v) -> str:
    return "" if v is None or v != v else f"{mfu_shown(v)}%"


def comparison_summary(summ):
    import pandas as pd

    s = summ.sort_values(["workload", "machine", "device", "backend"])
    rows = s.to_dict("records")
    return pd.DataFrame({
        "workload": s["workload"], "machine": s["machine"], "configuration": config_labels(s), "batch": s["batch_size"],
        "epochs": s["epochs"], "samples/epoch": s["n_train"],
        "total time s (median run)": [shown(r["total_s"], r) for r in rows],
        "s/epoch (median run)": [shown(r["s_per_epoch"], r) for r in rows],
        "within-run s/epoch IQR": [f"{rounded(r['q1'], digits(r))}–{rounded(r['q3'], digits(r))}" for r in rows],
        "s/step": [shown(r["s_per_step"], r) for r in rows],
        "samples/s: median of runs": [figure(r) for r in rows],
        "CPU % (system, 0–100)": s["cpu_pct"], "CPU % (process, 100 per core)": s["proc_cpu_pct"],
        "GPU % (mean)": s["gpu_pct"], "GPU % (peak)": s["gpu_pct_max"],
        "MFU": [marked(_mfu_text(r.get("mfu")), row_marks(r)) for r in rows],
        "GPU memory MiB (peak)": s["gpu_mem_mb"], "data": s["data_source"],
    })


def pick_timeline(records, chosen: str = ""):
    """The run whose utilisation over time is drawn: ``chosen`` (a point id prefix or a substring of the
    record path), else the GPU run with the most samples, else the run with the most samples."""
    runs = [r for r in records if r.get("status") == "ok" and isinstance(r.get("utilisation_timeline"), list)
            and r.get("utilisation_timeline")]
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
        return None
    t = [s["t"] for s in tl]
    has_mem = any(s.get("gpu_mem_mb") is not None for s in tl)
    has_pow = any(s.get("power_w") is not None for s in tl)
    n = 1 + int(has_mem or has_pow)
    fig, axes = plt.subplots(n, 1, figsize=(12, 2.3 * n), sharex=True, squeeze=False)
    ax = axes[0, 0]
    ax.plot(t, [s.get("cpu_pct") for s in tl], label="CPU % (system-wide, 0–100)", color=PALETTE["util_cpu"])
    if any(s.get("proc_cpu_pct") is not None for s in tl):
        cores = max(1, int((rec.get("fingerprint") or {}).get("cpu_logical") or 1))
        ax.plot(t, [None if s.get("proc_cpu_pct") is None else s["proc_cpu_pct"] / cores for s in tl],
                label="CPU % (this process, 0–100 of all cores)", color=PALETTE["util_cpu"], ls="--")
    if any(s.get("gpu_pct") is not None for s in tl):
        ax.plot(t, [s.get("gpu_pct") for s in tl], label="GPU % (NVML busy time)", color=PALETTE["util_gpu"])
    ax.set_ylabel("utilisation %")
    for i, b in enumerate(rec.get("epoch_bounds_s") or []):
        if isinstance(b, (list, tuple)) and len(b) == 2:
            for a in axes[:, 0]:
                a.axvspan(b[0], b[1], color=PALETTE["first"] if i == 0 else "#cccccc", alpha=0.25 if i == 0 else 0.2,
                          lw=0)
    ax.legend(fontsize=7, loc="upper right")
    ax.set_title(marked(f"{rec.get('workload')} · {rec.get('backend')} · {rec.get('device_used')} on "
                        f"{(rec.get('fingerprint') or {}).get('host')}", BUSY if rec.get("host_busy") is True else "")
                 + "  (pink: first epoch; grey: later epochs)")
    if n > 1:
        a2 = axes[1, 0]
        if has_mem:
            a2.plot(t, [s.get("gpu_mem_mb") for s in tl], color=PALETTE["memory"], label="GPU memory MiB")
            a2.set_ylabel("MiB")
            a2.set_ylim(0, max([s.get("gpu_mem_mb") or 0 for s in tl] + [1]) * 1.15)  # from 0: a flat line is
            # not stretched into a wave; headroom: JAX's preallocation, flat at its top, is not hidden by the frame
            a2.legend(fontsize=7, loc="upper left")
        if has_pow:
            a3 = a2.twinx() if has_mem else a2
            a3.plot(t, [s.get("power_w") for s in tl], color=PALETTE["power"], label="board power W")
            a3.set_ylabel("W")
            a3.set_ylim(0, max([s.get("power_w") or 0 for s in tl] + [1]) * 1.15)  # 73.2-73.4 W is not a swing
            a3.legend(fontsize=7, loc="lower right")
    axes[-1, 0].set_xlabel("seconds since the sampler started")
    fig.tight_layout()
    return fig


def build(ctx) -> Section:
    if ctx.summary.empty:
        return Section.absent(__name__, "no successful run in these records.")
    s = Section.of(__name__).found(*said.utilisation(ctx.summary))
    s.table(comparison_summary(ctx.summary))
    s.marks_note()
    s.note("{}", WHY_THEY_DIFFER)
    run = pick_timeline(ctx.records, ctx.timeline_run)
    if ctx.timeline_run and (run is None or not str(run.get("point_id", "")).startswith(ctx.timeline_run)):
        s.note("The run {} asked for by <code>timeline_run</code> was not found or has no samples.",
               ctx.timeline_run, kind="warn")
    if run is None:
        return s.note("No run has utilisation samples.")
    s.note("Utilisation over time of run {} ({}; record {}). Choose another with the <code>timeline_run</code> "
           "parameter.", run.get("point_id"), run.get("data_source"), short_path(run.get("_path")))
    both = both_answers(run, _tidy_row(ctx.df, run))
    if both:
        s.note("{}", both)
    return s.figure(plot_timeline(run))


def _tidy_row(df, rec: dict) -> dict:
    """The tidy table's row of a record, with its achieved TFLOP/s and MFU (``mfu.add``: its FLOPs per sample, the
    record's own or counted at report time for older records, x its samples/s over its devices' peak)."""
    if df is None or "path" not in df or not rec.get("_path"):
        return {}
    rows = df[df["path"] == rec["_path"]]
    return mfu_of.add(rows.head(1).copy()).iloc[0].to_dict() if len(rows) else {}


def _known(v):
    return None if isnull(v) else v


def both_answers(rec: dict, tidy: dict | None = None) -> str | None:
    """Seed 003's graphs asked how busy the GPU was: for the drawn run, NVML's busy time and MFU in one line
    (MFU from its tidy row, ``_tidy_row``; without one, the record's own)."""
    util = rec.get("utilisation") or {}
    t = tidy or {}
    busy = util.get("gpu_pct_mean")
    mfu = _known(t.get("mfu", rec.get("mfu")))
    tflops = _known(t.get("achieved_tflops", rec.get("achieved_tflops")))
    why = rec.get("mfu_reason") or (_known(t.get("peak_source")) if t.get("flops_per_sample") else None)
    if busy is None and mfu is None:
        return None
    parts = []
    if busy is not None:
        parts.append(f"busy {percent(busy)} of the time (NVML, mean over {util.get('window') or 'the run'}"
                     + (f", peak {percent(util['gpu_pct_max'])}" if util.get("gpu_pct_max") is not None else "") + ")")
    if mfu is not None:
        parts.append(f"did {_mfu_text(mfu)} of its peak arithmetic (MFU"
                     + (f", {num(tflops)} TFLOP/s" if tflops else "") + ")")
    elif why:
        parts.append(f"MFU not known: {why}")
    return marked("This run's device: " + "; ".join(parts) + ".", BUSY if rec.get("host_busy") is True else "")
