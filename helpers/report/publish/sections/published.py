"""Your machine against the figures the source documents published."""

from __future__ import annotations

import re
import warnings

import numpy as np

from helpers.report.derive.precision import digits
from helpers.report.load import columns as C
from helpers.report.load.published import INFERRED, SYNTHETIC_IMAGES, coverage
from helpers.report.load.values import isnull
from helpers.report.publish.charts import grid, plain_log
from helpers.report.publish.sections.base import Section, mark_bars
from helpers.report.words import findings as said
from helpers.report.words.fmt import figure, html_table, note, plain, rounded, row_marks, whole
from helpers.report.words.published_match import other_figures, versus_published
from helpers.report.words.style import PALETTE, bar_look, key_above, style_key

TITLE = "Your machine against the published figures"
NAV = "Published figures"  # its name in the one-line contents
LEAD = ("The figures the source documents published (data/published_figures.csv, each with its document and "
        "file/line, or file and commit of the source's own logs), beside your runs of the same workload, device and "
        "variant, in samples/s (seconds per epoch depends on how many samples an epoch holds), measured the same "
        "way: where the source's epoch includes validation, yours is shown with its validation too. Every row says "
        "its workload, variant and what its epoch includes, and whether the pair is like with like. The published "
        "hardware, framework version and batch size differ from yours: read it as an order of magnitude, not a race. "
        "Your figures: the median over runs, whiskers between runs, marked and rounded as everywhere in this report.")


def yours(vs, summ) -> list:
    """The configuration (a summary row) behind each of your rows of ``versus_published`` (its ``_row``); None for
    the published ones."""
    rows = summ.to_dict("index")
    return [rows.get(i) if str(w).startswith("you") and not isnull(i) else None
            for w, i in zip(vs["who"], vs.get("_row", [None] * len(vs)))]


def _shown(r, v) -> str:
    """Your figure as every other part of the report writes it: the configuration's own (``fmt.figure``) where it
    is its samples/s, else (an epoch with its validation) ``v`` to the configuration's digits, with its marks."""
    if not isnull(v) and not isnull(r.get(C.SAMPLES_PER_S)) and abs(v - r[C.SAMPLES_PER_S]) <= 1e-9 * abs(v):
        return figure(r).split(" (")[0]
    m = row_marks(r)
    return rounded(v, digits(r)) + (f" {m}" if m else "")


def with_runs(vs, src):
    """Your rows: between-run low/high (none for one run), the value as shown and the marks (for the chart)."""
    vs = vs.copy()
    vs["shown"] = [_shown(r, v) if r else (None if isnull(v) else f"{whole(v)}") for r, v in zip(src, vs["samples/s"])]
    vs["marks"] = [row_marks(r) if r else "" for r in src]
    for col, k in (("low", "sps_lo"), ("high", "sps_hi")):
        vs[col] = [r[k] if r and _shown(r, v) == figure(r).split(" (")[0] else lo
                   for r, v, lo in zip(src, vs["samples/s"], vs[col])]
    return vs


def shown_table(vs, src):
    """The table: your figures as text, rounded to what their runs support and marked."""
    out = vs.drop(columns=["shown", "marks", "_row"], errors="ignore").astype(object)
    for i, r in enumerate(src):
        if r:
            d = digits(r)
            v = out.iat[i, out.columns.get_loc("samples/s")]
            out.iat[i, out.columns.get_loc("samples/s")] = figure(r) if _shown(r, v) == figure(r).split(" (")[0] \
                else _shown(r, v)
            for col in ("low", "high"):
                out.iat[i, out.columns.get_loc(col)] = rounded(out.iat[i, out.columns.get_loc(col)], d)
    return out.rename(columns={"low": "low samples/s", "high": "high samples/s"})  # the unit in the header


MAX_PUBLISHED = 5  # published bars per panel (the fastest; the table below has every one)


def _short(text: str, n: int) -> str:
    """``text`` cut to ``n`` characters with an ellipsis (a chart's label; the table has every word)."""
    return text if len(text) <= n else text[:n - 1].rstrip() + "…"


def plot_vs_published(vs):
    from matplotlib.ticker import LogLocator

    v = vs[vs["samples/s"].notna()]
    mine = set(v[v["who"].str.startswith("you")]["workload"])
    workloads = sorted(mine) or sorted(v["workload"].unique())
    panels = []
    for wl in workloads:
        sub = v[v["workload"] == wl]
        you = sub[sub["who"].str.startswith("you")].nlargest(15, "samples/s")
        pub = sub[sub["who"] == "published"]
        if len(you):  # the chart pairs: published figures your runs meet (same comparison and device); the table
            pairs = set(zip(you["comparison"], you["device"]))  # has them all
            pub = pub[[(c, d) in pairs for c, d in zip(pub["comparison"], pub["device"])]]
        left = max(0, len(pub) - MAX_PUBLISHED)  # the fastest published figures drawn; the table has every one
        pub = pub.nlargest(MAX_PUBLISHED, "samples/s").sort_index() if left else pub
        panels.append((wl, np.concatenate([pub.index.to_numpy(), you.index.to_numpy()]), left))
    if not panels:
        return None
    fig, axes = grid(len(panels), [0.16 * len(p[1]) + 0.7 for p in panels], ncols=2)
    fig.set_figheight(fig.get_figheight() + 0.4)  # the axis's name under the panels: on one row of panels alone
    for ax, (wl, idx, left) in zip(axes, panels):
        sub = v.loc[idx]
        y = np.arange(len(sub))
        val = sub["samples/s"].to_numpy(dtype=float)
        lo = np.clip(val - sub["low"].fillna(sub["samples/s"]).to_numpy(dtype=float), 0, None)
        hi = np.clip(sub["high"].fillna(sub["samples/s"]).to_numpy(dtype=float) - val, 0, None)
        looks = [bar_look(None, "gpu", PALETTE["published"]) if w == "published" else bar_look(_backend(f), d)
                 for w, f, d in zip(sub["who"], sub["framework"], sub["device"])]  # yours: backend and device
        ax.barh(y, val, xerr=[lo, hi], capsize=2, error_kw={"lw": 0.8, "color": "#555555"},
                **{k: [x[n] for x in looks] for k, n in (("color", "facecolor"), ("edgecolor", "edgecolor"),
                                                         ("linewidth", "linewidth"))})
        labs = []
        for w, h, s, b, k, c, d, f in zip(sub["who"], sub["hardware / configuration"], sub["source"], sub["batch"],
                                          sub.get("marks", [""] * len(sub)), sub["comparison"], sub["device"],
                                          sub["framework"]):
            var = " · ".join(c.split(" · ")[1:-1])  # variant (and augmentation), between workload and epoch
            # short labels: the seed and the hardware's first words (the table below has every word); yours by
            # device and backend (the machines are named in the key above the chart)
            tail = f" · {_short(var, 14)}" if var else ""
            lab = (f"[{_short(s.split('_')[0], 8)}] {_short(h.split(' · ')[0], 30)}{tail}"
                   if w == "published" else f"{_whose(h, f)} · {d} · {_backend(f)}")
            labs.append(lab + (f" · b{plain(b)}" if not isnull(b) else "") + (f" {k}" if k else ""))
        ax.set_yticks(y, labs, fontsize=8)
        ax.invert_yaxis()
        plain_log(ax)
        for yi, m, e, t in zip(y, val, val + hi, sub.get("shown", [None] * len(sub))):
            ax.annotate(re.sub(r" \[.*?\]", "", t) if t else f"{whole(m)}", (e, yi),  # the interval: in the table
                        xytext=(4, 0), textcoords="offset points", va="center",
                        fontsize=8)
        ax.set_xlim(right=ax.get_xlim()[1] * 6)  # room for the value labels
        ax.xaxis.set_major_locator(LogLocator(numticks=3))  # a narrow panel: every other decade labelled
        ax.set_title(wl + (f" (+{left} published not drawn)" if left else ""), fontsize=9, fontweight="bold")
    fig.supxlabel("samples per second (log scale; grey: published, [seed]; coloured: the runs read here, 'you' or "
                  "the bundled reference's, 'ref'; whiskers: between runs, or the stated range)", fontsize=8)
    with warnings.catch_warnings():  # long labels: matplotlib warns when it cannot fit them, the chart still reads
        warnings.simplefilter("ignore", UserWarning)
        fig.tight_layout()
    from matplotlib.patches import Patch

    drawn = v.loc[np.concatenate([idx for _, idx, _ in panels])]
    mine = drawn[drawn["who"].str.startswith("you")]
    be = [_backend(f) for f in mine["framework"]]  # yours: 'machine · backend[ · with validation]'
    hw = mine["hardware / configuration"]
    mine = mine.assign(backend=be, machine=[h.split(f" · {b}")[0] for h, b in zip(hw, be)])
    published = Patch(**bar_look(None, "gpu", PALETTE["published"]), label="published [seed]")
    key_above(fig, axes[0], style_key(mine, extra=[published]))
    return fig


def _backend(framework) -> str:
    """Your row's backend, from its framework ('Keras 3 / jax')."""
    return str(framework).rsplit(" / ", 1)[-1]


def _whose(hardware, framework) -> str:
    """A drawn run's owner on its label: 'you', or the bundled reference's short name ('H100 ref') for its rows."""
    from helpers.report.load.reference import is_reference
    from helpers.report.words.headline import gpu_side

    machine = str(hardware).split(f" · {_backend(framework)}")[0]
    return gpu_side(machine) if is_reference(machine) else "you"


def build(ctx) -> Section:
    pub = ctx.published
    if pub.empty:
        return Section.absent(__name__, "the published figures file was not found.")
    s = Section.of(__name__)
    summ = ctx.summary
    missing = sorted(set(pub["workload"]) - set(summ["workload"])) if len(summ) else sorted(set(pub["workload"]))
    if missing:
        s.note("Published figures exist for workloads you have not run: {}.", ", ".join(missing))
    cov = coverage(pub)
    cant = cov[cov["reason"] != ""]
    s.note("{} published figures: {} reach the throughput comparison, {} the scaling section (multi-GPU), {} the "
           "other figures; {} cannot be compared (listed below with the reason).", len(cov),
           int(cov["shown"].str.startswith("throughput").sum()), int(cov["shown"].str.startswith("the scaling").sum()),
           int((cov["shown"] == "other figures").sum()), len(cant))
    vs = versus_published(summ, pub)
    s.found(*said.published(len(cov), vs[vs["who"] == "published"]["comparison"].isin(
        vs[vs["who"] != "published"]["comparison"]).sum() if len(vs) else 0))
    if len(vs):
        src = yours(vs, summ)
        vs = with_runs(vs, src)
        s.figure(mark_bars(plot_vs_published(vs)))
        s.table(shown_table(vs, src), caption="published throughput beside yours, like with like")
        s.marks_note()
    oth = other_figures(summ, pub)
    if len(oth):
        s.heading("Other published figures: first epoch, whole run, utilisation (peaks beside means), ratios")
        s.table(oth, caption="other published figures beside yours")
    how = [note("Epochs: 'training + validation' is the whole epoch with its validation pass (seed 002's logged "
                "'elapsed' times on_epoch_begin → on_epoch_end; seed 001's progress line); yours then is n_train / "
                "(training part + your validation), and your validation set may be smaller than the source's (the "
                "source's full run: params/seeds.yaml). 'training only' leaves validation out on both sides."),
           note("Inferred, not stated by the sources: {}.", "; ".join(INFERRED))]
    if (pub["workload"].isin(["catsdogs", "cnn_256"])).any():
        how.append(note("{}", SYNTHETIC_IMAGES))
    s.details("How the sources' figures are read: epochs, what is inferred, synthetic images (click to open)",
              "".join(how))
    if len(cant):
        s.heading("Published figures that cannot be compared, and why")
        s.table(cant, caption="figures not compared")
    s.details("Every published figure (all metrics, with sources) and where this section shows it",
              html_table(pub.merge(cov[["row", "shown", "reason"]], on="row"), max_rows=None))
    return s
