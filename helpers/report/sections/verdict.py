"""The verdict, first: what was compared, the answer in sentences, one chart on shared log axes, one short table."""

from __future__ import annotations

import socket

import psutil

from helpers.measure.fingerprint import cpu_model

from .. import headline as hl
from ..charts import PALETTE, plain_log
from ..fmt import ONE_RUN, SHORT, esc, html_table, isnull, marks, rounded
from ..reference import all_pairs, is_reference
from .base import Section

TITLE = "The verdict: how much faster the GPU trains, per workload"
NAV = "Verdict"  # its name in the one-line contents
LEAD = ("Each workload's fastest GPU configuration against the same configuration (backend, batch size, precision "
        "and model knobs) on the CPU, compared per sample: GPU samples/s ÷ CPU samples/s, each the median over its "
        "runs. A source epoch is one pass over the dataset the workload's source trained on (its size is in the "
        "throughput section), derived from samples/s, so runs on fewer samples compare. Cost: the whole machine's "
        "on-demand price per hour (params/prices.yaml). Every configuration and run is in the sections below and "
        "in results.csv / configurations.csv.")
MARKERS = {"jax": "o", "torch": "s", "tensorflow": "^"}


def chart(pairs):
    """Per workload (one band each, backends side by side in it, a marker per backend): seconds per source epoch
    on the CPU and the GPU (left, one shared log axis) and GPU ÷ CPU (right, one shared log axis)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    order = hl.per_workload(pairs).sort_values("speedup")["workload"].tolist()
    backends = sorted(set(pairs["backend"]))
    off = {b: (i - (len(backends) - 1) / 2) * 0.22 for i, b in enumerate(backends)}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 0.3 * len(order) + 0.95), sharey=True,
                                 gridspec_kw={"width_ratios": [1.25, 1]})
    for _, r in pairs.iterrows():
        y = order.index(r["workload"]) + off[r["backend"]]
        mk = MARKERS.get(r["backend"], "D")
        c, g = r.get("source_epoch_s_cpu"), r.get("source_epoch_s_gpu")
        if not (isnull(c) or isnull(g)):
            a1.plot([g, c], [y, y], color="#bbbbbb", lw=1, zorder=1)
            a1.scatter([c], [y], marker=mk, color=PALETTE["cpu"], s=30, zorder=2)
            a1.scatter([g], [y], marker=mk, color=PALETTE["gpu"], s=30, zorder=2)
        a2.scatter([r["speedup"]], [y], marker=mk, color=PALETTE["gpu"], s=30, zorder=2)
        if not (isnull(r.get("speedup_lo")) or isnull(r.get("speedup_hi"))):
            a2.plot([r["speedup_lo"], r["speedup_hi"]], [y, y], color=PALETTE["gpu"], lw=1, zorder=1)
        m = marks(r["n_runs"], bool(r["short_window"]))
        a2.annotate(f" {hl.times(r['speedup'])}{' ' + m if m else ''}",
                    (r["speedup"], y), fontsize=8, va="center")
    a1.set_yticks(range(len(order)), order, fontsize=10)
    a1.set_ylim(len(order) - 0.5, -0.5)
    plain_log(a1)
    plain_log(a2)
    a2.axvline(1, ls=":", color="k", lw=0.8)
    lo, hi = a2.get_xlim()
    a2.set_xlim(min(lo, 0.8), hi * 2.5)
    a1.set_xlabel("seconds per epoch of the source's dataset (log scale; fewer is better)", fontsize=9)
    a2.set_xlabel("GPU ÷ CPU samples/s (log scale; right of the dotted line: the GPU is faster)", fontsize=9)
    faster = int((pairs["speedup"] > 1).sum())
    a1.set_title(f"Time per source epoch, CPU (blue) vs GPU (red):\nthe GPU is faster for {faster} of {len(pairs)}",
                 fontsize=10)  # two lines: one would run into the next panel's title
    a2.set_title(f"The GPU trains {hl.times(pairs['speedup'].min())} to {hl.times(pairs['speedup'].max())} as fast",
                 fontsize=10)
    handles = [Line2D([], [], marker=MARKERS.get(b, "D"), ls="", color="#444444", label=b) for b in backends]
    handles += [Line2D([], [], marker="o", ls="", color=PALETTE[d], label=d.upper()) for d in ("cpu", "gpu")]
    fig.legend(handles=handles, loc="lower center", ncols=len(handles), fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, -0.04))
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def glance_table(rows):
    """At most seven columns, one row per workload, each cell on one line."""
    import pandas as pd

    out = []
    for r in rows.sort_values("speedup", ascending=False).to_dict("records"):
        d = int(r["digits"])
        sp = rounded(r["speedup"], d) + "×"
        if r["interval"] != "none":
            sp += f" [{rounded(r['speedup_lo'], d)}–{rounded(r['speedup_hi'], d)}]"
        m = marks(r["n_runs"], bool(r["short_window"]))
        od_c, od_g = r.get("on_demand_per_source_epoch_cpu"), r.get("on_demand_per_source_epoch_gpu")
        out.append({
            "workload": r["workload"], "configuration (GPU side)": hl.config_key(r),
            "GPU ÷ CPU": sp + (f" {m}" if m else ""),
            "CPU s / source epoch": hl.duration(r.get("source_epoch_s_cpu")),
            "GPU s / source epoch": hl.duration(r.get("source_epoch_s_gpu")),
            "$ / source epoch, CPU · GPU": ("no price" if isnull(od_c) and isnull(od_g) else
                                            f"{hl.money(od_c) or 'no price'} · {hl.money(od_g) or 'no price'}"),
            "runs CPU / GPU": f"{int(r['n_runs_cpu'])} / {int(r['n_runs_gpu'])}",
        })
    return pd.DataFrame(out)


def _key_note(pairs) -> str:
    machines = sorted(set(pairs["gpu_machine"].dropna().astype(str)))
    names = "; ".join(f"<b>{esc(hl.gpu_side(m))}</b> = {esc(m)}" for m in machines)
    return (f'<p class="cgb-key">Key: {names}; b = batch size per step; fp32 unless named. The CPU side of each '
            f"pair is the same configuration on the CPU (its fastest thread setting). {ONE_RUN} one run: no "
            f"between-run interval; {SHORT} a steady window under min_steady_s. Brackets: the between-run "
            "interval.</p>")


def build(ctx) -> Section:
    c = ctx.costed
    if c.empty or not c["samples_per_s"].notna().any():
        return Section.absent(__name__, "no successful run in these records.")
    s = Section.of(__name__)
    comp = hl.compared(ctx.df, here=(socket.gethostname(), cpu_model(), psutil.cpu_count(logical=True)))
    s.found('{} <span class="cgb-links"><a href="results.csv">results.csv</a> · <a href="configurations.csv">'
            'configurations.csv</a> · <a href="index.html">notebooks</a></span>', hl.compared_text(comp))
    pairs = hl.best_pairs(all_pairs(c))
    if pairs is None or not len(pairs):
        devs = set(c["device"].dropna())
        return s.note("No GPU/CPU pair to compare in these records ({}): the sections below show each device's own "
                      "figures.", "no GPU run" if "gpu" not in devs else "no CPU run" if "cpu" not in devs
                      else "no configuration ran on both", kind="warn")
    rows = hl.per_workload(pairs)
    said = hl.sentences(rows, comp, pairs)
    s.html('<ul class="cgb-verdict">' + "".join(f"<li>{esc(t)}</li>" for t in said) + "</ul>")
    s.figure(chart(pairs), "time per source epoch and GPU ÷ CPU per workload")
    s.html(_key_note(pairs))
    s.html(html_table(glance_table(rows)))
    if any(is_reference(m) for m in pairs["gpu_machine"].dropna()):
        s.note("The GPU side is the bundled reference run on another machine, at the configurations your CPU ran: "
               "the speedup reads \"your CPU → that GPU\", per sample.", kind="warn")
    return s

