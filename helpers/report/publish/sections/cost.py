"""Training time and cost per sample relative to a base configuration (seed 002's two charts)."""

from __future__ import annotations

from helpers.report.derive.precision import digits
from helpers.report.load import columns as C
from helpers.report.load.values import isnull
from helpers.report.publish.charts import grid, plain_log
from helpers.report.publish.sections.base import Section, mark_bars
from helpers.report.words import findings as said
from helpers.report.words.cost_table import price_sources, relative_table
from helpers.report.words.fmt import figure, html_table, marked, plain, rounded, row_marks, union_marks
from helpers.report.words.labels import labels
from helpers.report.words.style import PALETTE, bars_look, key_above, style_key

TITLE = "Training time and cost relative to a base configuration"
NAV = "Time and cost"  # its name in the one-line contents
LEAD = ("As seed 002 does: per workload, each configuration's time and cost per sample divided by the base's "
        "(the fastest configuration matching the summary parameter base_config). Per sample, so configurations "
        "whose epochs held different numbers of samples compare. Cost = time × the machine's price per hour in "
        "params/prices.yaml (on-demand and preemptible/spot), the whole machine rented.")


def _limits(values) -> tuple[float, float]:
    v = [x for x in values if not isnull(x) and x > 0]
    return (min(v + [1.0]) / 1.5, max(v + [1.0]) * 1.5) if v else (0.1, 10.0)


def _top(g, n: int = 12):
    """The ``n`` fastest rows of one workload, its base always among them (the table has every row)."""
    return g if len(g) <= n else g[g.index.isin(g.head(n - 1).index) | (g["base"] != "")]


def plot_relative(rel):
    """Per workload, cost per sample × the base, on a log axis shared by every panel (a bar's length compares
    across workloads), two workloads a row; each bar in its backend's colour and its device's mark, the base
    outlined in black and labelled; a bar's label says what differs between the workload's configurations
    (``label``, else device, backend and batch); the key names each device's machine once. Time per sample × the
    base is the table's column (and the throughput section's chart): drawn again, it would double the chart."""
    import numpy as np
    import pandas as pd

    r = rel[rel["time × base"].notna()]
    if r.empty:
        return None
    workloads = sorted(r["workload"].unique())
    panels = [(wl, _top(r[r["workload"] == wl])) for wl in workloads]
    cost_all = r["cost × base (preemptible)"].fillna(r["cost × base (on-demand)"])
    clim = _limits(cost_all)
    fig, axes = grid(len(panels), [0.18 * len(sub) + 1.0 for _, sub in panels], ncols=2)
    for ax, (wl, sub) in zip(axes, panels):
        y = np.arange(len(sub))
        names = sub["label"] if "label" in sub else [f"{c} · b{plain(b)}" for c, b in zip(sub["device · backend"],
                                                                                 sub["batch"])]
        labs = [f"{n}{' ◀ base' if b else ''}{' ' + k if k else ''}" for n, b, k
                in zip(names, sub["base"], sub.get("marks", [""] * len(sub)))]
        dev, be = zip(*[(c.split(" · ") + ["?"])[:2] for c in sub["device · backend"]])
        look = bars_look(be, dev)
        look["edgecolor"] = [PALETTE["base"] if b else e for b, e in zip(sub["base"], look["edgecolor"])]
        look["linewidth"] = [1.8 if b else w for b, w in zip(sub["base"], look["linewidth"])]
        cost = sub["cost × base (preemptible)"].fillna(sub["cost × base (on-demand)"])
        ax.barh(y, cost.fillna(0), **look)
        plain_log(ax)
        ax.set_xlim(*clim)
        for yi, c in zip(y, cost):
            if isnull(c):
                ax.text(clim[0] * 1.1, yi, "no price", va="center", fontsize=8, color="#8a5a00")
        ax.axvline(1.0, ls=":", color="k", lw=0.8)
        ax.set_yticks(y, labs, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(f"{wl}: cost per sample", fontsize=9, fontweight="bold")
        ax.set_xlabel(f"× the base's cost per sample (log; {price_kind(sub)}; lower is better)", fontsize=8)
    fig.tight_layout()
    from matplotlib.patches import Patch

    drawn = pd.DataFrame([c.split(" · ")[:2] for c in r["device · backend"]], columns=["device", "backend"])
    base = Patch(facecolor="white", edgecolor=PALETTE["base"], linewidth=1.8, label="◀ base: outlined in black")
    key_above(fig, axes[0], style_key(drawn.assign(machine=list(r["machine"])), extra=[base]))
    return fig


def price_kind(rel) -> str:
    """Which price the cost bars of ``rel`` use: 'preemptible', 'on-demand' or 'preemptible, else on-demand'."""
    pre, od = rel["cost × base (preemptible)"].notna(), rel["cost × base (on-demand)"].notna()
    if pre.any() and not (od & ~pre).any():
        return "preemptible"
    return "on-demand" if not pre.any() else "preemptible, else on-demand"


def ranks_as_time(rel) -> bool:
    """Whether cost per sample orders every workload's configurations as time per sample does (one price per
    machine, or prices that change no order): then the cost chart would repeat the time chart."""
    cost = rel["cost × base (preemptible)"].fillna(rel["cost × base (on-demand)"])
    for _, g in rel.assign(_cost=cost).groupby("workload", sort=False):
        g = g[g["_cost"].notna() & g["time × base"].notna()]
        by_time = g.sort_values(["time × base", "_cost"], kind="stable").index
        by_cost = g.sort_values(["_cost", "time × base"], kind="stable").index
        if list(by_time) != list(by_cost):
            return False
    return True


def with_labels(rel, src):
    """``rel`` with ``label``: each configuration as the report's other charts name it (``labels.labels``: device
    and backend, then what differs between the workload's configurations: batch, precision, threads, jit, knobs)."""
    import pandas as pd

    out = []
    for wl in rel["workload"].drop_duplicates():
        out += labels(pd.DataFrame([s for s in src if s["workload"] == wl]))
    return rel.assign(label=out)


def _sources(c, rel) -> list | None:
    """The configuration behind each row of ``costs.relative_table`` (same order: workload, then fastest
    first), or None if the rows do not line up."""
    src = [r for _, g in c.groupby("workload", sort=True) for r in
           g.sort_values(C.SAMPLES_PER_S, ascending=False).to_dict("records")]
    ok = len(src) == len(rel) and all(a["workload"] == b for a, b in zip(src, rel["workload"]))
    return src if ok else None


def shown_relative(rel, src):
    """``rel`` with each figure written to the digits its runs support (precision.sig_digits) and marked; a ratio to
    the base keeps the digits of the less precise of the two."""
    rel = rel.copy()
    base = {r["workload"]: (digits(s), row_marks(s)) for r, s in zip(rel.to_dict("records"), src) if r["base"]}
    d = [(digits(s), row_marks(s)) for s in src]
    db = [(min(x, base.get(w, (x, ""))[0]), union_marks(m, base.get(w, (x, ""))[1])) for (x, m), w in
          zip(d, rel["workload"])]
    rel.insert(list(rel.columns).index("samples/s [IQR]"), "samples/s: median of runs [between runs]",
               [figure(s) for s in src])
    rel = rel.drop(columns=["samples/s [IQR]"])
    for col, dd in (("s per source epoch", d), ("time × base", db), ("$/1k samples on-demand", d),
                    ("$/1k samples preemptible", d), ("$/source epoch on-demand", d),
                    ("$/source epoch preemptible", d), ("cost × base (on-demand)", db),
                    ("cost × base (preemptible)", db)):
        if col in rel:
            rel[col] = [marked(rounded(v, k), m) for v, (k, m) in zip(rel[col], dd)]
    if "label" not in rel:
        return rel
    # in view: what tells the rows apart and the figures read first; the rest one click away (the CSVs hold all)
    rel = rel.rename(columns={"label": "configuration"}).drop(columns=["device · backend"])
    front = ["workload", "configuration", "base", "samples/s: median of runs [between runs]", "time × base",
             "$/1k samples on-demand", "cost × base (on-demand)"]
    return rel[[c for c in front if c in rel] + [c for c in rel.columns if c not in front]]


def build(ctx) -> Section:
    c = ctx.costed
    if c.empty:
        s = Section.absent(__name__, "no successful run: nothing to compare.")
    else:
        s = Section.of(__name__).found(*said.cost(c, ctx.best))
        s.note("Base configuration: {}.", ", ".join(f"{k} = {v}" for k, v in ctx.base_config.items()) or "none given")
        rel, no_base = relative_table(c, ctx.base_config)
        if no_base:
            s.note("No configuration matches the base for: {}; there the base is {} instead (marked ◀ base).",
                   ", ".join(no_base), "the fastest CPU configuration" if (c["device"] == "cpu").any() else
                   "the slowest configuration", kind="warn")
        unpriced = sorted(set(c[c["profile"].isna()]["machine"]))
        if unpriced:
            s.note("No price for: {}. These machines match no profile in prices.yaml and no "
                   "<code>host_profiles</code> entry: their cost is left blank (\"no price\").", "; ".join(unpriced),
                   kind="warn")
        src = _sources(c, rel)
        if src is not None:
            rel = with_labels(rel, src).assign(marks=[row_marks(r) for r in src])
        same = ranks_as_time(rel)
        if same and c["on_demand_per_source_epoch"].notna().any():
            s.note("Cost per sample ranks every workload's configurations as time per sample does (one price per "
                   "machine here): its chart is folded below, the table holds the prices.")
        elif same:
            s.note("No configuration has a price, so cost per sample can only repeat time per sample: its chart is "
                   "folded below.")
        s.figure(mark_bars(plot_relative(rel)), fold="Cost per sample against the base, per workload (click to "
                 "open)" if same else "")
        s.table(shown_relative(rel.drop(columns=["marks"]), src) if src is not None else rel)
        s.marks_note()
        s.note("Prices in {} per hour, price set \"{}\" ({} prices; each profile's dates below); $/source epoch: "
               "one epoch of the source's full dataset at this configuration's samples/s.",
               ctx.prices.get("currency", "USD"), ctx.prices.get("price_set") or "all",
               ctx.prices.get("era") or "undated")
    used = set(c["profile"].dropna()) if len(c) else set()
    s.details("Price profiles and their sources", html_table(price_sources(ctx.prices, used), max_rows=None))
    return s
