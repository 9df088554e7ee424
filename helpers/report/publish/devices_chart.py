"""The chart of several GPUs (``devices``' scaling table): per model, samples/s and the efficiency against the GPU
count, one line per input path and way, each its own shade of its backend's colour; published figures with a GPU
count in grey, drawn only as far as the counts measured.

    fig = plot_devices(devices.device_scaling(summ), devices.published_devices(pub, wls))
"""

from __future__ import annotations

import re

from helpers.report.derive.devices import ONE_PROCESS, chart_lines
from helpers.report.words.scaling_words import path_words


def _shade(colour: str, n: int) -> str | None:
    """The ``n``-th line of one backend: its hue, each line its own shade (the backend's colour, darker, darker
    still, pale), never two lines in one colour; None: the backend's own."""
    from helpers.report.words.style import dark, pale

    return [None, dark(colour, 0.35), dark(colour, 0.65), pale(colour, 0.55)][n % 4]


def plot_devices(table, anchors=None, across: bool = False):
    """Per workload: samples/s against devices (top row; dotted: linear from one device) and the efficiency
    (bottom row; 1.0: linear), one line per input path (and backend, precision where they differ) and way; a
    published family in grey beside. ``across``: a workload's two panels side by side, two workloads a row, one
    key under them all (short enough for the report's first screen)."""
    from helpers.report.publish.charts import grid
    from helpers.report.words.style import backend_colour, point_look

    wls = sorted(set(table["workload"]))
    nw = len(wls)
    named = [c for c in ("backend", "precision") if table[c].nunique() > 1]  # a label names only what differs
    if across:
        fig, axes = grid(2 * nw, [3.2] * (2 * nw), ncols=min(4, 2 * nw))
        pairs = [(axes[2 * i], axes[2 * i + 1]) for i in range(nw)]
    else:
        n_lines = max(len(list(chart_lines(table[table["workload"] == wl]))) for wl in wls) + 2  # + published families
        fig, axes = grid(2 * nw, [3.0] * nw + [3.0 + 0.18 * n_lines] * nw, ncols=nw)  # the key under the bottom
        pairs = [(axes[i], axes[nw + i]) for i in range(nw)]
    key: dict = {}
    for wl, (top, bot) in zip(wls, pairs):
        g = table[table["workload"] == wl]
        xs_all = set(g["devices"])
        seen: dict = {}
        for (be, prec, inp, on, w), h in chart_lines(g):
            h = h.sort_values("devices")
            label = " · ".join([*(str(v) for c, v in (("backend", be), ("precision", prec)) if c in named),
                                path_words(inp, on)] + ([] if w is None else
                                                   ["one process driving them" if w == ONE_PROCESS else w]))
            paths = seen.setdefault(be, {})  # one backend's lines: its hue; each line (precision, input path, way)
            n = paths.setdefault((prec, inp, on, w), len(paths))  # its own shade and dashes; the other way: dashed
            ls = "--" if w not in (None, ONE_PROCESS) else ["-", "-", "-.", "-."][n % 4]
            look = point_look(be, "gpu", _shade(backend_colour(be), n))  # the GPU's filled square
            line = top.plot(h["devices"], h["samples/s"], label=label, linestyle=ls, **look)[0]
            one = h[h["devices"] == 1]["samples/s"]
            if len(one):
                xs = sorted(set(h["devices"]))
                top.plot(xs, [float(one.iloc[0]) * x for x in xs], linestyle=":", color=line.get_color())
            rng = [r if r else (e, e) for r, e in zip(h["efficiency over the runs"], h["efficiency"])]
            bot.errorbar(h["devices"], h["efficiency"], linestyle=ls, capsize=2, **look,
                         yerr=[[max(0.0, e - r[0]) for r, e in zip(rng, h["efficiency"])],
                               [max(0.0, r[1] - e) for r, e in zip(rng, h["efficiency"])]])
        a = anchors[anchors["workload"] == wl] if anchors is not None else None
        if a is not None and len(a):
            for k, (var, h) in enumerate(a.groupby("variant", sort=True)):
                span = f"{int(h['GPUs'].min())}-{int(h['GPUs'].max())} GPUs"
                # clipped to the GPU counts measured: a published 8-GPU point never squeezes ours to the left
                h = h[h["GPUs"] <= max(xs_all)].sort_values("GPUs")
                if not len(h):
                    continue
                style = dict(color="0.45" if k % 2 else "0.65", linestyle="--", marker="x")
                hw = re.sub(r"^\d+\s*[x\u00d7]\s*", "", str(h["hardware"].iloc[-1]))
                top.plot(h["GPUs"], h["samples/s"], label=f"published: {hw} ({span}; drawn to {int(max(xs_all))}) "
                                                          f"· {var}", **style)
                bot.plot(h["GPUs"], h["efficiency"], **style)
                xs_all |= set(h["GPUs"])
        for ax in (top, bot):
            ax.set_xticks(sorted(xs_all))
            ax.set_xlabel("GPUs (devices in the mesh)", fontsize=8)
        bot.axhline(1.0, color="0.8", linewidth=0.8)
        bot.set_ylim(0, 1.1)
        top.set_ylabel("samples/s (global; dotted: linear)", fontsize=8)
        bot.set_ylabel("scaling efficiency (bars: over the runs)", fontsize=8)
        top.set_title(f"{wl}: samples/s" if across else wl)
        if across:
            bot.set_title(f"{wl}: efficiency")
            key.update({lab: hd for hd, lab in zip(*top.get_legend_handles_labels()) if lab not in key})
        else:
            bot.legend(*top.get_legend_handles_labels(), fontsize=8, loc="upper left", bbox_to_anchor=(0.0, -0.22),
                       frameon=False, borderaxespad=0)  # under the panels: never over a line
    if across:  # one key under every panel, two columns
        w, h = fig.get_size_inches()
        extra = 0.2 * -(-len(key) // 2) + 0.15
        fig.set_size_inches(w, h + extra)
        fig.legend(list(key.values()), list(key), ncols=2, fontsize=8, frameon=False, loc="lower left",
                   bbox_to_anchor=(0.0, 0.0))
        fig.tight_layout(rect=(0, extra / (h + extra), 1, 1))
    else:
        fig.tight_layout()
    return fig
