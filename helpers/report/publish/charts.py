"""One chart style for the whole report: seaborn's theme (written out), the palette and marks of ``style`` (one
colour per backend, one mark per device), faceted bar charts, inline SVG.

    plt = setup_plots()
    fig = bar_facets(summ, "samples_per_s", labels, lo="sps_q1", hi="sps_q3", xlabel="samples/s", log=True)
    html = figure_html(fig)               # inline SVG; the figure is closed

Charts are facets (one small panel per workload, several per row) rather than one tall chart per
workload, so the page reads without endless scrolling; every axis says its unit.
"""

from __future__ import annotations

import hashlib
import io
import re

from helpers.report.load.values import isnull
from helpers.report.words.fmt import esc, num, plain, stable, whole
from helpers.report.words.style import bars_look, column, key_above, style_key

MAX_BARS = 30  # bars per panel; more configurations are listed in the tables, not drawn
MAX_LINES = 8  # curves per panel
LONG_LABEL = 62  # characters: a bar chart whose labels run longer draws one panel a row
WIDTH = 12.0  # inches: the page's width
DPI = 90  # the figures' dots per inch: a 12-inch chart is 1,080 px, shown at its own size on a 1,400 px page
MIN_FONT_PT = 8.0  # no text of a chart is smaller: 8 pt at 90 dpi is 10 px, readable at 100% zoom


# seaborn's theme as ``seaborn.set_theme(style="whitegrid", context="notebook", font_scale=0.8)`` sets it (its
# "deep" palette, its grid and its font sizes), written out: importing seaborn (and scipy.stats with it) took
# 1.5 s of every process that renders a report, for these values. tests/test_charts_theme.py holds them to
# seaborn's own.
_DEEP = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd")
_SCALE = 0.8  # font_scale, on the notebook context's sizes: 12 pt (labels, titles, text) and 11 pt (ticks, legends)
THEME = {
    "axes.axisbelow": True, "axes.edgecolor": ".8", "axes.grid": True, "axes.labelcolor": ".15",
    "axes.labelsize": 12 * _SCALE, "axes.linewidth": 1.25, "axes.titlesize": 12 * _SCALE,
    "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans", "sans-serif"],
    "font.size": 12 * _SCALE, "grid.color": ".8", "grid.linewidth": 1.0, "legend.fontsize": 11 * _SCALE,
    "legend.title_fontsize": 12 * _SCALE, "lines.solid_capstyle": "round", "patch.edgecolor": "w",
    "patch.force_edgecolor": True, "text.color": ".15", "xtick.bottom": False, "xtick.color": ".15",
    "xtick.labelsize": 11 * _SCALE, "xtick.major.size": 6.0, "xtick.major.width": 1.25, "xtick.minor.size": 4.0,
    "xtick.minor.width": 1.0, "ytick.color": ".15", "ytick.labelsize": 11 * _SCALE, "ytick.left": False,
    "ytick.major.size": 6.0, "ytick.major.width": 1.25, "ytick.minor.size": 4.0, "ytick.minor.width": 1.0,
}


def setup_plots():
    """Matplotlib defaults for the report: seaborn's theme (``THEME``), no math parsing of record text, compact."""
    import matplotlib as mpl
    import matplotlib.pyplot as plt
    from cycler import cycler

    mpl.rcParams.update({**THEME, "axes.prop_cycle": cycler(color=[mpl.colors.to_rgb(c) for c in _DEEP])})
    # and, as set_theme does (seaborn.set_color_codes("deep")), the one-letter colours mean the palette's: "k" is a
    # dark grey (#1a1a1a), "b" the palette's blue ...
    for code, c in zip("bgrmyck", (*(_DEEP[i] for i in (0, 2, 3, 4, 8, 9)), (0.1, 0.1, 0.1))):
        mpl.colors.colorConverter.colors[code] = mpl.colors.to_rgb(c)
    mpl.colors.colorConverter.cache.clear()
    # axes.titley: the title at the axes' top, as matplotlib places it when nothing is drawn above an axes (no chart
    # here has ticks on top), without matplotlib measuring every axes of a figure for each title (a tenth of a
    # report's drawing time; the same SVG)
    plt.rcParams.update({"text.parse_math": False, "figure.dpi": DPI, "savefig.dpi": DPI,
                         "figure.max_open_warning": 0, "axes.titlesize": 9, "axes.titlelocation": "left",
                         "axes.titley": 1.0})
    return plt


def readable(fig):
    """Raise every text of ``fig`` (ticks, labels, legends, annotations) to at least ``MIN_FONT_PT``."""
    from matplotlib.text import Text

    for t in fig.findobj(Text):
        if t.get_fontsize() < MIN_FONT_PT:
            t.set_fontsize(MIN_FONT_PT)
    return fig


_SVG_FONT = "'DejaVu Sans', 'Bitstream Vera Sans', Verdana, Arial, Helvetica, sans-serif"
_FAMILY = re.compile(r"font-family: [^;\"]*;? ?")
_GROUP_ID = re.compile(r'<g id="[^"]*"')
_TEXT = re.compile(r"(<text\b.*?</text>)", re.DOTALL)
_DECIMALS = re.compile(r"(\d\.\d{2})\d+")


_DOTS = re.compile(r'<pattern id="([^"]+)" patternUnits="userSpaceOnUse" x="0" y="0" width="72" height="72">\s*'
                   r'<rect [^>]*fill="([^"]+)"/>\s*<path d="([^"]*)" style="fill: ([^;"]+); stroke: ([^;"]+); '
                   r'stroke-width: ([\d.]+)[^"]*"/>\s*</pattern>')


def _small_dots(m) -> str:
    """matplotlib's dot hatch ('...': dots 4 pt apart, every other row shifted by 2 pt) drawn from a 4 × 8 pt tile
    instead of 700 Bézier circles in a 72-pt tile (300 KB a chart); the hatch's lines ('xx') kept as they are."""
    pid, back, d, fill, stroke, width = m.groups()
    if "C " not in d:
        return m.group(0)
    lines = "".join(part for part in re.split(r"(?=M )", d) if part.strip() and "C " not in part)
    r = 0.4 + float(width) / 2
    dots = "".join(f'<circle cx="{x}" cy="{y}" r="{plain(r)}" fill="{stroke}"/>' for x, y in
                   ((0, 0), (4, 0), (0, 8), (4, 8), (2, 4)))
    style = m.group(0)[m.group(0).index('style="', m.group(0).index("<path")):].split('"')[1]
    return (f'<pattern id="{pid}-dots" patternUnits="userSpaceOnUse" x="0" y="0" width="4" height="8">{dots}</pattern>'
            f'<pattern id="{pid}" patternUnits="userSpaceOnUse" x="0" y="0" width="72" height="72">'
            f'<rect x="0" y="0" width="73" height="73" fill="{back}"/>'
            + (f'<path d="{lines}" style="{style}"/>' if lines else "")
            + f'<rect x="0" y="0" width="73" height="73" fill="url(#{pid}-dots)"/></pattern>')


def svg_text(fig) -> str:
    """``fig`` as an SVG element: text kept as text (``svg.fonttype: none``: a reader zooms, searches and copies
    it), one font family on the root instead of on every text, group ids dropped and the ids left (clip paths,
    markers) prefixed with the figure's own hash so that several figures share one page; no metadata, no
    external reference."""
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "cgb", "svg.image_inline": True}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None,
                                                                      "Format": None, "Type": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.DOTALL)
    svg = _GROUP_ID.sub("<g", _FAMILY.sub("", svg))
    svg = _DOTS.sub(_small_dots, svg)
    tag = "f" + hashlib.sha1(svg.encode()).hexdigest()[:6] + "-"
    svg = re.sub(r'(id="|url\(#|href="#)', lambda m: m.group(1) + tag, svg)
    # coordinates to 1/100 pt (the texts themselves untouched)
    svg = "".join(part if part.startswith("<text") else _DECIMALS.sub(r"\1", part) for part in _TEXT.split(svg))
    return "\n".join(line.strip() for line in svg.splitlines())


def figure_html(fig, alt: str = "") -> str:
    """The figure as inline SVG (the report needs no files beside it), every text at least ``MIN_FONT_PT``;
    closes the figure."""
    import matplotlib.pyplot as plt

    readable(separated(fig))
    svg = svg_text(fig)
    plt.close(fig)
    head = (f'<svg class="cgb-fig" role="img" aria-label="{esc(alt)}" style="font-family: {esc(_SVG_FONT)}" ')
    return svg.replace("<svg ", head, 1)


def tick_text(v, _pos=None) -> str:
    """A linear axis' tick as the report writes a number: thousands separated ('22,500'), never a power of ten."""
    if v == 0:
        return "0"
    if abs(v) >= 1000 and float(v).is_integer():
        return f"{whole(v)}"
    text = f"{stable(v)}"
    return text if "e" not in text else num(v, 6)


def separated(fig):
    """Every linear axis of ``fig`` still on matplotlib's default number formatter labelled by ``tick_text``
    ('22,500', not '22500'; no offset or power of ten above the axis); category and log axes left as drawn."""
    from matplotlib import ticker

    for ax in fig.get_axes():
        for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
            if scale == "linear" and type(axis.get_major_formatter()) is ticker.ScalarFormatter:
                axis.set_major_formatter(ticker.FuncFormatter(tick_text))
    return fig


def plain_log(ax, axis: str = "x", base: int = 10, ticks=None):
    """A log axis labelled with plain numbers (math parsing is off, so no 10^n mathtext labels)."""
    from matplotlib import ticker

    (ax.set_xscale if axis == "x" else ax.set_yscale)("log", base=base)
    a = ax.xaxis if axis == "x" else ax.yaxis
    if ticks is not None:
        a.set_major_locator(ticker.FixedLocator(sorted(set(ticks))))
    elif axis == "x":  # at most 4 decades labelled: '100,000' and '1,000,000' side by side overlap on a narrow panel
        a.set_major_locator(ticker.LogLocator(base=base, numticks=4))
    a.set_major_formatter(ticker.FuncFormatter(lambda v, _: num(v)))
    a.set_minor_formatter(ticker.NullFormatter())
    # no minor ticks: the theme draws no tick marks and no minor grid, and matplotlib made and measured eight tick
    # objects a decade for nothing (a fifth of a report's drawing time; the SVG loses only empty groups)
    a.set_minor_locator(ticker.NullLocator())


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
               log: bool = False, facet: str = "workload", ncols: int = 2,
               sort=("device", "backend", "machine", "batch_size"), annotate=None, refline: float | None = None,
               key: list | None = None):
    """Horizontal bars of ``value`` (whiskers ``lo``..``hi``), one panel per ``facet`` value, every panel on
    one shared axis; each bar in its backend's colour and its device's mark (``bar_look``).

    ``labeller(sub) -> list[str]`` names the bars of one panel; ``annotate(value) -> str`` the text past
    each bar's whisker; ``key`` (legend handles) above the chart (default: ``style_key``: the backends drawn and
    each device's mark with its machine, named once). Returns None when nothing has a value."""
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
    names = [labeller(p[1]) for p in panels]
    if max((len(t) for ts in names for t in ts), default=0) > LONG_LABEL:  # long labels: one panel a row, so
        ncols = 1  # that no plot area is squeezed by them
    heights = [max(1.35, 0.165 * len(p[1]) + 0.9) for p in panels]  # a bar a line of text, room for title and axis
    fig, axes = grid(len(panels), heights, ncols=ncols)
    # one axis for every panel: a bar's length compares across workloads (its own range per panel hid 7x against 320x)
    drawn = pd.concat([p[1] for p in panels])
    ends = [drawn[value]] + [drawn[c] for c in (lo, hi) if c and c in drawn]
    vals = [float(v) for col in ends for v in col if not isnull(v) and (v > 0 or not log)]
    if log and refline is not None:  # a ratio's bars start at its reference line ("1 = no gain"), kept in view
        vals.append(float(refline))
    span = ((min(vals) / 1.6, max(vals) * 3.0) if log else (min(0.0, min(vals)), max(vals) * 1.25)) if vals else None
    for ax, (f, sub, dropped), labs in zip(axes, panels, names):
        med = sub[value].to_numpy(dtype=float)
        err = None
        if lo and hi:
            lo_v = np.clip(med - sub[lo].fillna(sub[value]).to_numpy(dtype=float), 0, None)
            hi_v = np.clip(sub[hi].fillna(sub[value]).to_numpy(dtype=float) - med, 0, None)
            err = [lo_v, hi_v]
        y = np.arange(len(sub))
        look = bars_look(column(sub, "backend"), column(sub, "device"))
        base = float(refline) if log and refline is not None else 0.0
        bars = ax.barh(y, med - base, left=base, xerr=err, capsize=2, error_kw={"lw": 0.8, "color": "#555555"}, **look)
        if "fixture" in sub:
            for b, fx in zip(bars, sub["fixture"]):
                b.set_hatch("//" if fx else "")
        ax.set_yticks(y, labs, fontsize=7)
        ax.invert_yaxis()
        if log:
            plain_log(ax)
        if span and span[1] > span[0]:
            ax.set_xlim(*span)
        if refline is not None:
            ax.axvline(refline, ls=":", color="k", lw=0.8)
        ends = med if err is None else med + err[1]  # a value label starts past its whisker, never on it
        for yi, m, end in zip(y, med, ends):
            ax.annotate(annotate(m) if annotate else num(m), (end, yi), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize=8)
        extra = f" (+{dropped} not drawn)" if dropped else ""
        ax.set_title(f"{f}{extra}", fontsize=9, fontweight="bold")
    fig.supxlabel(xlabel, fontsize=8)  # once, under the panels
    key = style_key(drawn) if key is None else key
    fig.tight_layout()
    key_above(fig, axes[0], key)  # the first panel's legend(s), above the figure: fig.legends stay free for mark_bars
    return fig


