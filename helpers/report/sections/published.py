"""Your machine against the figures the source documents published."""

from __future__ import annotations

import numpy as np

from ..charts import PALETTE, colour, grid, plain_log
from ..fmt import html_table, isnull
from ..published import versus_published
from .base import Section

TITLE = "Your machine against the published figures"
LEAD = ("The figures the source documents published (data/published_figures.csv, each with its document and "
        "file/line), beside your runs of the same workload, in samples/s (seconds per epoch depends on how many "
        "samples an epoch holds). The published hardware, framework version and batch size differ from yours: "
        "read it as an order of magnitude, not a race.")


def plot_vs_published(vs):
    v = vs[vs["samples/s"].notna()]
    mine = set(v[v["who"].str.startswith("you")]["workload"])
    workloads = sorted(mine) or sorted(v["workload"].unique())
    panels = []
    for wl in workloads:
        sub = v[v["workload"] == wl]
        you = sub[sub["who"].str.startswith("you")].nlargest(15, "samples/s")
        pub = sub[sub["who"] == "published"]
        panels.append((wl, np.concatenate([pub.index.to_numpy(), you.index.to_numpy()])))
    if not panels:
        return None
    fig, axes = grid(len(panels), [0.2 * len(p[1]) + 0.9 for p in panels], ncols=2)
    for ax, (wl, idx) in zip(axes, panels):
        sub = v.loc[idx]
        y = np.arange(len(sub))
        val = sub["samples/s"].to_numpy(dtype=float)
        lo = np.clip(val - sub["low"].fillna(sub["samples/s"]).to_numpy(dtype=float), 0, None)
        hi = np.clip(sub["high"].fillna(sub["samples/s"]).to_numpy(dtype=float) - val, 0, None)
        colours = [PALETTE["published"] if w == "published" else colour(d) for w, d in zip(sub["who"], sub["device"])]
        ax.barh(y, val, xerr=[lo, hi], color=colours, capsize=2)
        labs = []
        for w, h, s, b in zip(sub["who"], sub["hardware / configuration"], sub["source"], sub["batch"]):
            lab = f"[{s.split('_')[0]}] {h}" if w == "published" else f"you: {h}"
            labs.append(lab + (f" · bs={b:g}" if not isnull(b) else ""))
        ax.set_yticks(y, labs, fontsize=6.5)
        ax.invert_yaxis()
        plain_log(ax)
        for yi, m in zip(y, val):
            ax.text(m, yi, f" {m:,.0f}", va="center", fontsize=6.5)
        ax.set_title(f"{wl} (grey: published, [seed]; colour: your runs)")
        ax.set_xlabel("samples per second (log scale; whiskers: IQR or stated range)", fontsize=8)
    fig.tight_layout()
    return fig


def build(ctx) -> Section:
    pub = ctx.published
    if pub.empty:
        return Section.absent(__name__, "the published figures file was not found.")
    s = Section.of(__name__)
    summ = ctx.summary
    missing = sorted(set(pub["workload"]) - set(summ["workload"])) if len(summ) else sorted(set(pub["workload"]))
    if missing:
        s.note("Published figures exist for workloads you have not run: {}.", ", ".join(missing))
    vs = versus_published(summ, pub)
    if len(vs):
        s.figure(plot_vs_published(vs))
        s.table(vs)
    s.details("Every published figure (all metrics, with sources)", html_table(pub, max_rows=None))
    return s
