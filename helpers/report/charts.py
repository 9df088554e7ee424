"""One chart style for the whole report: seaborn's theme, one palette, CPU and GPU colours fixed.

    plt = setup_plots()
    fig = bar_facets(summ, "samples_per_s", lo="sps_q1", hi="sps_q3", xlabel="samples/s", log=True)
    html = figure_html(fig)               # a PNG <img> (data URI); the figure is closed

Charts are facets (one small panel per workload, several per row) rather than one tall chart per
workload, so the page reads without endless scrolling; every axis says its unit.
"""

from __future__ import annotations

import base64
import io

from .fmt import esc, isnull, num

PALETTE = {"cpu": "#1f77b4", "gpu": "#d62728", "published": "#aaaaaa", "other": "#7f7f7f",
           "first": "#ff7f0e", "base": "#444444", "cost": "#2ca02c"}
MAX_BARS = 30  # bars per panel; more configurations are listed in the tables, not drawn
MAX_LINES = 8  # curves per panel
WIDTH = 12.0  # inches: the page's width
DPI = 90  # the figures' dots per inch: a 12-inch chart is 1,080 px, shown at its own size on a 1,400 px page
MIN_FONT_PT = 8.0  # no text of a chart is smaller: 8 pt at 90 dpi is 10 px, readable at 100% zoom


def setup_plots():
    """Matplotlib defaults for the report: seaborn's theme, no math parsing of record text, compact."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.8)
    plt.rcParams.update({"text.parse_math": False, "figure.dpi": DPI, "savefig.dpi": DPI,
                         "figure.max_open_warning": 0, "axes.titlesize": 9, "axes.titlelocation": "left"})
    return plt


def colour(device) -> str:
    return PALETTE.get(str(device), PALETTE["other"])


def _palette_png(png: bytes) -> bytes:
    """A chart's PNG as 256 colours (Pillow, matplotlib's own dependency): a third of the bytes for the flat
    colours of a chart (the published report: 3.5 MB of figures -> 1.2 MB); the original if that fails."""
    try:
        from PIL import Image

        im = Image.open(io.BytesIO(png)).convert("RGB")
        out = io.BytesIO()
        im.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(out, "PNG",
                                                                                                optimize=True)
        return out.getvalue() if out.tell() < len(png) else png
    except Exception:  # a Pillow without quantize: the full-colour PNG
        return png


def readable(fig):
    """Raise every text of ``fig`` (ticks, labels, legends, annotations) to at least ``MIN_FONT_PT``."""
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        if t.get_fontsize() < MIN_FONT_PT:
            t.set_fontsize(MIN_FONT_PT)
    return fig


def figure_html(fig, alt: str = "") -> str:
    """The figure as an inline PNG image (the report needs no files beside it), every text at least
    ``MIN_FONT_PT``; closes the figure."""
    import matplotlib.pyplot as plt

    readable(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight", dpi=DPI)
    plt.close(fig)
    data = base64.b64encode(_palette_png(buf.getvalue())).decode("ascii")
    return f'<img class="cgb-fig" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def plain_log(ax, axis: str = "x", base: int = 10, ticks=None):
    """A log axis labelled with plain numbers (math parsing is off, so no 10^n mathtext labels)."""
    from matplotlib import ticker

    (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=base)
    a = ax.xaxis if axis == "x" else ax.yaxis
    if ticks is not None:
        a.set_major_locator(ticker.FixedLocator(sorted(set(ticks))))
    a.set_major_formatter(ticker.FuncFormatter(lambda v, _: num(v)))
    a.set_minor_formatter(ticker.NullFormatter())


def grid(n_panels: int, heights: list[float], ncols: int = 2, width: float = WIDTH):
    """(fig, axes list) with ``n_panels`` panels in rows of ``ncols``; row height from the tallest panel."""
    import matplotlib.pyplot as plt

    ncols = max(1, min(ncols, n_panels))
    nrows = -(-n_panels // ncols)
    row_h = [max(heights[r * ncols:(r + 1) * ncols] or [1.5]) for r in range(nrows)]
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, sum(row_h)), squeeze=False,
                             gridspec_kw={"height_ratios": row_h})
    flat = list(axes.flat)
    for ax in flat[n_panels:]:
        ax.set_visible(False)
    return fig, flat[:n_panels]


def cap(sub, by: str, n: int = MAX_BARS, largest: bool = True):
    """At most ``n`` rows of ``sub`` (the largest, or smallest, by ``by``) and how many were left out."""
    if len(sub) <= n:
        return sub, 0
    return (sub.nlargest(n, by) if largest else sub.nsmallest(n, by)), len(sub) - n


def bar_facets(frame, value: str, labeller, lo: str | None = None, hi: str | None = None, xlabel: str = "",
               log: bool = False, facet: str = "workload", colour_by: str = "device", ncols: int = 2,
               sort=("device", "backend", "machine", "batch_size"), annotate=None, refline: float | None = None):
    """Horizontal bars of ``value`` (whiskers ``lo``..``hi``), one panel per ``facet`` value, every panel on
    one shared axis.

    ``labeller(sub) -> list[str]`` names the bars of one panel; ``annotate(value) -> str`` the text at
    each bar's end. Returns None when nothing has a value."""
    import numpy as np
    import pandas as pd

    s = frame[frame[value].notna()] if len(frame) else frame
    facets = sorted(s[facet].dropna().unique()) if len(s) else []
    if not facets:
        return None
    panels = []
    for f in facets:
        sub, dropped = cap(s[s[facet] == f], value)
        sub = sub.sort_values([c for c in sort if c in sub.columns])
        panels.append((f, sub, dropped))
    heights = [0.2 * len(p[1]) + 0.9 for p in panels]
    fig, axes = grid(len(panels), heights, ncols=ncols)
    # one axis for every panel: a bar's length compares across workloads (its own range per panel hid 7x against 320x)
    drawn = pd.concat([p[1] for p in panels])
    ends = [drawn[value]] + [drawn[c] for c in (lo, hi) if c and c in drawn]
    vals = [float(v) for col in ends for v in col if not isnull(v) and (v > 0 or not log)]
    span = ((min(vals) / 1.6, max(vals) * 3.0) if log else (min(0.0, min(vals)), max(vals) * 1.25)) if vals else None
    for ax, (f, sub, dropped) in zip(axes, panels):
        med = sub[value].to_numpy(dtype=float)
        err = None
        if lo and hi:
            lo_v = np.clip(med - sub[lo].fillna(sub[value]).to_numpy(dtype=float), 0, None)
            hi_v = np.clip(sub[hi].fillna(sub[value]).to_numpy(dtype=float) - med, 0, None)
            err = [lo_v, hi_v]
        y = np.arange(len(sub))
        colours = [colour(d) for d in sub[colour_by]] if colour_by in sub else PALETTE["other"]
        bars = ax.barh(y, med, xerr=err, color=colours, capsize=2, error_kw={"lw": 0.8})
        if "fixture" in sub:
            for b, fx in zip(bars, sub["fixture"]):
                b.set_hatch("//" if fx else "")
        ax.set_yticks(y, labeller(sub), fontsize=7)
        ax.invert_yaxis()
        if log:
            plain_log(ax)
        if span and span[1] > span[0]:
            ax.set_xlim(*span)
        if refline is not None:
            ax.axvline(refline, ls=":", color="k", lw=0.8)
        for yi, m in zip(y, med):
            ax.text(m, yi, " " + (annotate(m) if annotate else num(m)), va="center", fontsize=6.5)
        extra = f" (+{dropped} not drawn)" if dropped else ""
        ax.set_title(f"{f}{extra}")
        ax.set_xlabel(xlabel, fontsize=8)
    fig.tight_layout()
    return fig
