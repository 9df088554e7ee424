"""Throughput against batch size, CPU threads, augmentation and input-pipeline workers."""

from __future__ import annotations

from ..aggregate import labels
from ..charts import MAX_LINES, colour, grid, plain_log
from ..fmt import MARKS_NOTE, marks
from ..table import CONFIG_KEYS
from .base import Section

TITLE = "Throughput against batch size, CPU threads, augmentation and input workers"
LEAD = ("Seed 002 scaled vCPUs, seed 004 tuned batch_size and workers and measured augmentation on/off. A panel "
        "appears where the records vary that setting (at least two values for otherwise equal configurations); "
        "samples/s (median over runs; bars: between-run interval), so every point of a line is per sample; a "
        "point from one run or a short window carries its mark.")

AXES = (("batch_size", "batch size", "batch sizes"),
        ("threads", "CPU threads (0 = all the machine allows)", "CPU thread counts"),
        ("augment", "augmentation", "augmentation on/off"),
        ("workers", "input-pipeline workers", "worker counts"))


def _lines(summ, x: str, min_points: int = 2):
    """Per workload, the lines (other settings equal) along which ``x`` takes at least ``min_points`` values."""
    if summ.empty or x not in summ.columns:
        return []
    s = summ[summ[x].notna() & summ["samples_per_s"].notna()].copy()
    if x == "threads":
        s = s[s["device"] == "cpu"]
        s["_x"] = s["threads_eff"]
    else:
        s["_x"] = s[x]
    other = [k for k in CONFIG_KEYS if k not in (x, "workload")]
    out = []
    for wl, g in s.groupby("workload", sort=True):
        lines = [(k, h) for k, h in g.groupby(other, dropna=False, sort=True) if h["_x"].nunique() >= min_points]
        if lines:
            out.append((wl, lines[:MAX_LINES], max(0, len(lines) - MAX_LINES)))
    return out


def plot_scaling(summ, x: str, xlabel: str):
    """samples/s against ``x``, one panel per workload, one line per other setting; None if nothing varies."""
    groups = _lines(summ, x)
    if not groups:
        return None
    other = [k for k in CONFIG_KEYS if k not in (x, "workload")]
    fig, axes = grid(len(groups), [3.0] * len(groups), ncols=3)
    cat = x == "augment"
    for ax, (wl, lines, dropped) in zip(axes, groups):
        for k, h in lines:
            h = h.sort_values("_x")
            lab = labels(h.head(1).assign(**dict(zip(other, k))))[0]
            xs = h["_x"].astype(str) if cat else h["_x"].astype(float)
            ax.errorbar(xs, h["samples_per_s"], yerr=[(h["samples_per_s"] - h["sps_lo"]).clip(lower=0).fillna(0),
                                                       (h["sps_hi"] - h["samples_per_s"]).clip(lower=0).fillna(0)],
                        marker="o", capsize=2, label=lab,
                        color=colour(k[other.index("device")]) if len(lines) <= 2 else None)
            for xv, yv, n, sh in zip(xs, h["samples_per_s"], h["n_runs"], h["short_window"]):
                if marks(n, bool(sh)):
                    ax.annotate(marks(n, bool(sh)), (xv, yv), textcoords="offset points", xytext=(3, 3), fontsize=7)
        if x in ("batch_size", "threads") and not cat:
            plain_log(ax, base=2, ticks=[v for _, h in lines for v in h["_x"]])
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel("samples/s (median of runs; bars: between runs)", fontsize=8)
        ax.set_title(wl + (f" (+{dropped} lines not drawn)" if dropped else ""))
        ax.legend(fontsize=5.5)
    fig.tight_layout()
    return fig


def build(ctx) -> Section:
    summ = ctx.summary
    if summ.empty:
        return Section.absent(__name__, "no successful run in these records.")
    s = Section.of(__name__)
    drawn = 0
    for x, label, what in AXES:
        fig = plot_scaling(summ, x, label)
        s.heading(f"samples/s against {label}")
        if fig is None:
            present = x in summ.columns and summ[x].notna().any()
            s.note("Not drawn: {}.", ("no configuration was run at several " + what) if present
                   else ("no record sets " + x))
        else:
            drawn += 1
            s.figure(fig)
    return s.note("{}", MARKS_NOTE) if drawn else s
