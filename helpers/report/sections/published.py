"""Your machine against the figures the source documents published."""

from __future__ import annotations

import numpy as np

from ..charts import PALETTE, colour, grid, plain_log
from ..fmt import MARKS_NOTE, digits, figure, html_table, isnull, marks, rounded
from ..published import versus_published
from .base import Section, mark_bars

TITLE = "Your machine against the published figures"
LEAD = ("The figures the source documents published (data/published_figures.csv, each with its document and "
        "file/line), beside your runs of the same workload, in samples/s (seconds per epoch depends on how many "
        "samples an epoch holds). The published hardware, framework version and batch size differ from yours: "
        "read it as an order of magnitude, not a race. Your figures: the median over runs, whiskers between runs, "
        "marked and rounded as everywhere in this report.")


def yours(vs, summ) -> list:
    """The configuration (a summary row) behind each of your rows of ``versus_published``; None for the
    published ones."""
    def key(w, h, d, b, v):
        return w, h, d, None if isnull(b) else float(b), None if isnull(v) else round(float(v), 6)

    idx = {key(r["workload"], f"{r['machine']} · {r['backend']}", r["device"], r["batch_size"], r["samples_per_s"]): r
           for r in summ.to_dict("records")}
    return [idx.get(key(r["workload"], r["hardware / configuration"], r["device"], r["batch"], r["samples/s"]))
            if str(r["who"]).startswith("you") else None for r in vs.to_dict("records")]


def with_runs(vs, src):
    """Your rows: between-run low/high (none for one run), the value as shown and the marks (for the chart)."""
    vs = vs.copy()
    vs["shown"] = [figure(r).split(" (")[0] if r else (None if isnull(v) else f"{v:,.0f}")
                   for r, v in zip(src, vs["samples/s"])]
    vs["marks"] = [marks(r["n_runs"], bool(r["short_window"])) if r else "" for r in src]
    for col, k in (("low", "sps_lo"), ("high", "sps_hi")):
        vs[col] = [r[k] if r else v for r, v in zip(src, vs[col])]
    return vs


def shown_table(vs, src):
    """The table: your figures as text, rounded to what their runs support and marked."""
    out = vs.drop(columns=["shown", "marks"]).astype(object)
    for i, r in enumerate(src):
        if r:
            d = digits(r)
            out.iat[i, out.columns.get_loc("samples/s")] = figure(r)
            for col in ("low", "high"):
                out.iat[i, out.columns.get_loc(col)] = rounded(out.iat[i, out.columns.get_loc(col)], d)
    return out


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
        for w, h, s, b, k in zip(sub["who"], sub["hardware / configuration"], sub["source"], sub["batch"],
                                 sub.get("marks", [""] * len(sub))):
            lab = f"[{s.split('_')[0]}] {h}" if w == "published" else f"you: {h}"
            labs.append(lab + (f" · bs={b:g}" if not isnull(b) else "") + (f" {k}" if k else ""))
        ax.set_yticks(y, labs, fontsize=6.5)
        ax.invert_yaxis()
        plain_log(ax)
        for yi, m, t in zip(y, val, sub.get("shown", [None] * len(sub))):
            ax.text(m, yi, f" {t if t else f'{m:,.0f}'}", va="center", fontsize=6.5)
        ax.set_title(f"{wl} (grey: published, [seed]; colour: your runs)")
        ax.set_xlabel("samples per second (log scale; whiskers: yours between runs, or the stated range)", fontsize=8)
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
        src = yours(vs, summ)
        vs = with_runs(vs, src)
        s.figure(mark_bars(plot_vs_published(vs)))
        s.table(shown_table(vs, src))
        s.note("{}", MARKS_NOTE)
    s.details("Every published figure (all metrics, with sources)", html_table(pub, max_rows=None))
    return s
