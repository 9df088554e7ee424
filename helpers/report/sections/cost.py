"""Training time and cost per sample relative to a base configuration (seed 002's two charts)."""

from __future__ import annotations

from ..charts import PALETTE, grid
from ..costs import price_sources, relative_table
from ..fmt import html_table, isnull
from .base import Section

TITLE = "Training time and cost relative to a base configuration"
LEAD = ("As seed 002 does: per workload, each configuration's time and cost per sample divided by the base's "
        "(the fastest configuration matching the summary parameter base_config). Per sample, so configurations "
        "whose epochs held different numbers of samples compare. Cost = time × the machine's price per hour in "
        "params/prices.yaml (on-demand and preemptible/spot), the whole machine rented.")


def plot_relative(rel):
    import numpy as np

    r = rel[rel["time × base"].notna()]
    if r.empty:
        return None
    workloads = sorted(r["workload"].unique())
    panels = [(wl, r[r["workload"] == wl].head(20)) for wl in workloads]
    fig, axes = grid(2 * len(panels), [h for _, sub in panels for h in [0.2 * len(sub) + 0.9] * 2], ncols=2)
    for i, (wl, sub) in enumerate(panels):
        a1, a2 = axes[2 * i], axes[2 * i + 1]
        y = np.arange(len(sub))
        labs = [f"{m.split(' (')[0]} · {c} · bs={b:g}" for m, c, b in
                zip(sub["machine"], sub["device · backend"], sub["batch"])]
        dev = [c.split(" · ")[0] for c in sub["device · backend"]]
        a1.barh(y, sub["time × base"], color=[PALETTE["base"] if b else PALETTE.get(d, PALETTE["other"])
                                              for b, d in zip(sub["base"], dev)])
        a1.axvline(1.0, ls=":", color="k", lw=0.8)
        a1.set_yticks(y, labs, fontsize=7)
        a1.invert_yaxis()
        a1.set_title(f"{wl}: time per sample × base (lower is better)")
        a1.set_xlabel("× the base's time per sample", fontsize=8)
        cost = sub["cost × base (preemptible)"].fillna(sub["cost × base (on-demand)"])
        a2.barh(y, cost.fillna(0), color=[PALETTE["base"] if b else PALETTE["cost"] for b in sub["base"]])
        for yi, c in zip(y, cost):
            if isnull(c):
                a2.text(0.02, yi, "no price", va="center", fontsize=7, color="#8a5a00")
        a2.axvline(1.0, ls=":", color="k", lw=0.8)
        a2.set_yticks(y, [""] * len(y))
        a2.invert_yaxis()
        a2.set_title("cost per sample × base (preemptible, else on-demand)")
        a2.set_xlabel("× the base's cost per sample", fontsize=8)
    fig.tight_layout()
    return fig


def build(ctx) -> Section:
    c = ctx.costed
    if c.empty:
        s = Section.absent(__name__, "no successful run: nothing to compare.")
    else:
        s = Section.of(__name__)
        s.note("Base configuration: {}.", ", ".join(f"{k} = {v}" for k, v in ctx.base_config.items()) or "none given")
        rel, no_base = relative_table(c, ctx.base_config)
        if no_base:
            s.note("No configuration matches the base for: {}; there the base is the fastest CPU configuration "
                   "instead (marked ◀ base).", ", ".join(no_base), kind="warn")
        unpriced = sorted(set(c[c["profile"].isna()]["machine"]))
        if unpriced:
            s.note("No price for: {}. These machines match no profile in prices.yaml and no "
                   "<code>host_profiles</code> entry: their cost is left blank (\"no price\").", "; ".join(unpriced),
                   kind="warn")
        s.figure(plot_relative(rel))
        s.table(rel)
        s.note("Prices in {} per hour; $/source epoch: one epoch of the source's full dataset at this "
               "configuration's samples/s.", ctx.prices.get("currency", "USD"))
    used = set(c["profile"].dropna()) if len(c) else set()
    s.details("Price profiles and their sources", html_table(price_sources(ctx.prices, used), max_rows=None))
    return s
