"""Throughput against batch size, CPU threads, augmentation, input-pipeline workers and the number of GPUs.

The GPU part: samples/s of a configuration on N devices (``gpus`` x ``hosts``, from the records'
knobs) against the same configuration on one, the scaling efficiency (samples/s at N / (N x samples/s at 1)),
float32 and uint8 inputs side by side, the data on the host or on the device, energy and cost per epoch against
N, and published multi-GPU figures beside where ``data/published_figures.csv`` has them (a GPU count in the row's
hardware, e.g. "8x H100"). Then where the time goes: one batch's copy from the host against the step.

Records with no CPU run and one configuration on several GPU counts (``devices.leads``: a scaling grid such as
params/multi_gpu.yaml) answer this section's question and no other: it then leads the report (``sections.order``),
titled for the GPU counts, opening with the efficiency per GPU count, way and input path (``scaling_words.answer``), the
chart and the table before the other settings.
"""

from __future__ import annotations

import math

from helpers.params import LATER_DEFAULTS
from helpers.report.derive.devices import ONE_PROCESS, leads, published_devices, scaling_table
from helpers.report.derive.devices import device_scaling as device_scaling  # the section's table, re-exported
from helpers.report.derive.learning import learned
from helpers.report.derive.precision import digits
from helpers.report.load import columns as C
from helpers.report.load.table import CONFIG_KEYS
from helpers.report.load.values import isnull, knob_items
from helpers.report.publish.charts import MAX_LINES, grid, plain_log
from helpers.report.publish.devices_chart import plot_devices
from helpers.report.publish.devices_readme import shown
from helpers.report.publish.sections.base import Section
from helpers.report.words import findings as said
from helpers.report.words.fmt import NOT_LEARNED, esc, fixed, html_table, note, num, rounded, row_marks, share
from helpers.report.words.headline import LINKS
from helpers.report.words.labels import labels
from helpers.report.words.learned import not_learned
from helpers.report.words.scaling_words import answer, eff_shown, findings
from helpers.report.words.style import point_look

TITLE = "Throughput against batch size, CPU threads, augmentation, input workers and GPUs"
NAV = "Scaling"  # its name in the one-line contents
LEAD = ("Seed 002 scaled vCPUs, seed 004 tuned batch_size and workers and measured augmentation on/off, seed 002 "
        "found its multi-GPU runs no faster. A panel appears where the records vary that setting (at least two "
        "values for otherwise equal configurations); samples/s (median over runs; bars: between-run interval), so "
        "every point of a line is per sample; a point from one run or a short window carries its mark.")
INPUT_NOTE = ("The input path: with float32 inputs every step copies 4 bytes a pixel from the host (ResNet-50 at "
              "256 images a GPU: 154 MB a step per GPU), with uint8 inputs one byte, normalised inside the model (the "
              "same network); with <code>data_placement: device</code> the training set sits on the GPUs before the "
              "clock starts and no step copies anything. Compare a model's input rows at the same GPU count: the "
              "difference is the host copy. In these records:")

WAYS_NOTE = ("Two ways to drive N GPUs, side by side (column <i>way</i>; dashed in the chart): one process driving "
             "all N (<code>gpus: N</code>: one Python process makes every GPU's host copy and step dispatch) and N "
             "processes of one GPU each (<code>processes: N</code> on this host, "
             "<code>hosts: N</code> under a launcher: each process feeds its own GPU; docs/multi_gpu.md). Both "
             "against the same one-GPU run.")

LEAD_TITLE = "Scaling: samples/s and efficiency against the number of GPUs"
LEAD_DEVICES = ("These records have no CPU run and one configuration on several GPU counts: the question they answer "
                "is how samples/s grow with the GPUs, per input path and way of driving them (one process driving all "
                "N GPUs, or one process per GPU). Per model, two charts side by side: samples/s against N, dotted the "
                "linear line from one GPU; then the efficiency, 1.00 being linear, bars the range over the runs.")

AXES = (("batch_size", "batch size", "batch sizes"),
        ("threads", "CPU threads (0 = all the machine allows)", "CPU thread counts"),
        ("augment", "augmentation", "augmentation on/off"),
        ("workers", "input-pipeline workers", "worker counts"))


def _lines(summ, x: str, min_points: int = 2):
    """Per workload, the lines (other settings equal) along which ``x`` takes at least ``min_points`` values."""
    if summ.empty or x not in summ.columns:
        return []
    s = summ[summ[x].notna() & summ[C.SAMPLES_PER_S].notna()].copy()
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
    heights = [2.2 + 0.16 * len(lines) for _, lines, _ in groups]  # room for the legend under each panel
    fig, axes = grid(len(groups), heights, ncols=3)
    cat = x == "augment"
    styles = ["-", "--", ":", "-."]
    for ax, (wl, lines, dropped) in zip(axes, groups):
        import pandas as pd

        # each line named by what differs between the lines of this panel (not by what they share)
        firsts = pd.DataFrame([h.iloc[0].to_dict() | dict(zip(other, k)) for k, h in lines]).drop(columns=[x])
        names = labels(firsts)
        seen: dict = {}
        for (k, h), lab in zip(lines, names):
            h = h.sort_values("_x")
            xs = h["_x"].astype(str) if cat else h["_x"].astype(float)
            key = (k[other.index("backend")], k[other.index("device")])
            style = styles[seen.setdefault(key, 0) % len(styles)]
            seen[key] += 1
            m = "".join(sorted({c for r in h.to_dict("records") for c in row_marks(r)}))
            ax.errorbar(xs, h[C.SAMPLES_PER_S], yerr=[(h[C.SAMPLES_PER_S] - h["sps_lo"]).clip(lower=0).fillna(0),
                                                       (h["sps_hi"] - h[C.SAMPLES_PER_S]).clip(lower=0).fillna(0)],
                        capsize=2, label=lab + (f" {m}" if m else ""), ls=style, ms=4, **point_look(*key))
        if x in ("batch_size", "threads") and not cat:
            plain_log(ax, base=2, ticks=[v for _, h in lines for v in h["_x"]])
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel("samples/s (bars: between runs)", fontsize=8)
        ax.set_title(wl + (f" (+{dropped} lines not drawn)" if dropped else ""), fontsize=9, fontweight="bold")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.0), frameon=False,
                  borderaxespad=4.2)  # 4.2 font sizes down: under the tick labels and the axis's name
    fig.tight_layout()
    return fig


def _devices_part(s: Section, ctx, table=None, lead: bool = False) -> None:
    """The GPU counts: the chart, the table, the notes; leading the report (``lead``): the answer first, no heading."""
    table = scaling_table(ctx) if table is None else table
    if table is None:  # said in the section's one list of what is not drawn (build)
        return
    if not lead:
        s.heading("samples/s against the number of GPUs")
    wls = set(table["workload"])
    if lead:
        s.html('<ul class="cgb-verdict">' + "".join(f"<li>{esc(t)}</li>" for t in answer(table)) + "</ul>")
    s.figure(plot_devices(table, published_devices(getattr(ctx, "published", None), wls), across=lead),
             "samples/s and scaling efficiency against the number of GPUs")
    s.table(shown(table), caption="the scaling table")
    s.note("Terms: <i>data on</i> is where a step's inputs come from: <i>host</i>, copied from the host's memory every "
           "step; <i>staged</i>, copied to the GPUs ahead of the step; <i>device</i>, on the GPU from the start. "
           "<i>input</i>: the inputs' type (uint8 copies a byte a pixel, float32 four). Efficiency: samples/s on N "
           "GPUs ÷ (N × samples/s on one). More: docs/report.md, Terms.")
    s.note("Efficiency: samples/s at N devices / (N x samples/s of the same configuration on one device); "
           "empty where the one-device run is missing; its range: the slowest N-device run over N x the fastest "
           "one-device run, and the other way round. The global batch is the per-device batch x N. Cost: the "
           "machine's on-demand price (params/prices.yaml; empty where it has none) for the time of 1,000 "
           "samples and of one epoch of the run; the whole machine is paid whether one or all its GPUs train.")
    if (table["way"] != ONE_PROCESS).any():
        s.note(WAYS_NOTE)
    s.note(INPUT_NOTE)
    for line in findings(table):  # at the most GPUs, with the ranges over the runs
        s.note("{}", line)
    wls = set(table["workload"])  # published multi-GPU figures beside your own GPU counts only
    anchors = published_devices(getattr(ctx, "published", None), wls)
    if anchors is not None:
        s.note("Published multi-GPU figures for these workloads (data/published_figures.csv, with their source; "
               "drawn in grey beside yours). Another framework, network variant and GPU: compare the efficiency, "
               "not the samples/s.")
        s.table(anchors.assign(**{"samples/s": [num(v) for v in anchors["samples/s"]],
                                  "efficiency": [eff_shown(v) for v in anchors["efficiency"]]}),
                caption="published multi-GPU figures")


def input_path(summ):
    """Where the time goes on the GPU: per configuration whose copy from the host was measured, bytes a
    step, the step, one batch's copy and its share of the step, and samples/s; a row with the data on the device
    beside its host twin (same configuration otherwise) gets the gain. None when nothing was measured."""
    if summ.empty or "host_copy_s" not in summ.columns or not summ["host_copy_s"].notna().any():
        return None
    s = summ[summ["host_copy_s"].notna() & summ[C.SAMPLES_PER_S].notna()].copy()
    items = [knob_items(k) for k in s["knobs"]]
    s["placement"] = [i.get("data_placement", LATER_DEFAULTS["data_placement"]) for i in items]
    s["_twin"] = [", ".join(f"{k}={v}" for k, v in sorted(i.items()) if k != "data_placement") for i in items]
    keys = [k for k in CONFIG_KEYS if k != "knobs"] + ["_twin"]

    def twin_key(r):  # as text: an empty setting is NaN, and NaN never equals NaN
        return tuple(str(r[k]) for k in keys)

    host_sps = {twin_key(r): r[C.SAMPLES_PER_S] for r in s.to_dict("records") if r["placement"] == "host"}
    rows = []
    for r in s.sort_values(["workload", "backend", "precision", "batch_size"]).to_dict("records"):
        step = r.get("s_per_step")
        copy_share = r["host_copy_s"] / step if step and not isnull(step) else math.nan
        twin = host_sps.get(twin_key(r)) if r["placement"] == "device" else None
        rows.append({"workload": r["workload"], "config": r["config"], "batch": r["batch_size"],
                     "data on": r["placement"], "MB per step": r.get("input_mb_per_step"),
                     "s per step": step, "copy of one batch, s": r["host_copy_s"],
                     "copy / step": copy_share if r["placement"] == "host" else math.nan,
                     "samples/s": r[C.SAMPLES_PER_S], "_digits": digits(r),
                     "gain of data on the device": r[C.SAMPLES_PER_S] / twin if twin else math.nan,
                     "marks": row_marks(r)})
    import pandas as pd

    return pd.DataFrame(rows)


COPY_NOTE = ("The copy is timed after training, outside the timed window: one batch (the process's batch, x and "
             "y) from numpy to the device(s) as Keras feeds arrays, synchronised, median of 5 copies. Against the "
             "step it is an upper bound of the copy's share (JAX copies one batch ahead while the previous step "
             "runs; torch copies in the step). A row with <code>data_placement: device</code> copies nothing while "
             "training: its samples/s against the host row of the same configuration is what the copy costs end "
             "to end.")


def _input_part(s: Section, ctx, fold: bool = False) -> None:
    """Where a GPU step's time goes between the host's copy and the step; ``fold``: the table one click away."""
    table = input_path(ctx.summary)
    if table is None:
        s.html('<ul class="cgb-notdrawn"><li>Not measured: the copy from the host against the step (a GPU point '
               "fed from arrays measures one batch's copy after training; CPU points and older records have "
               "none).</li></ul>")
        return
    s.heading("Where the time goes: the copy from the host against the step")
    shown = table.assign(**{c: [num(v) for v in table[c]]
                            for c in ("MB per step", "s per step", "copy of one batch, s")},
                         **{"copy / step": ["" if isnull(v) else f"{share(v)}" for v in table["copy / step"]],
                            "gain of data on the device": ["" if isnull(v) else f"{fixed(v)}x"
                                                           for v in table["gain of data on the device"]],
                            "samples/s": [rounded(v, d) for v, d in zip(table["samples/s"], table["_digits"])]}
                         ).drop(columns=["_digits"])
    if fold:
        s.details(f"The input path of {len(shown)} GPU configuration(s): bytes a step, the copy against the step "
                  "(click to open)", html_table(shown) + note(COPY_NOTE))
        return
    s.table(shown, caption="the input path")
    s.note(COPY_NOTE)


def build(ctx) -> Section:
    summ = ctx.summary
    if summ.empty:
        return Section.absent(__name__, "no successful run in these records.")
    s = Section.of(__name__)
    summ = learned(summ)  # a configuration that did not learn is no point of a scaling curve (named below)
    left = not_learned(ctx.summary)
    lead = leads(ctx)  # no CPU side, several GPU counts: the report's first section, the GPU counts first
    if lead:
        table = scaling_table(ctx)
        s.title, s.lead = LEAD_TITLE, f"{LEAD_DEVICES} {s.lead}"
        s.found("{} " + LINKS, _measured(ctx, table))
        _devices_part(s, ctx, table, lead=True)
    drawn, missing = 0, []
    for x, label, what in AXES:
        fig = plot_scaling(summ, x, label)
        if fig is None:
            present = x in summ.columns and summ[x].notna().any()
            missing.append(f"samples/s against {label}: " + (f"no configuration was run at several {what}" if present
                                                            else f"no record sets {x}"))
        else:
            drawn += 1
            s.heading(f"samples/s against {label}")
            s.figure(fig)
    if not lead:
        if scaling_table(ctx) is None:
            missing.append("samples/s against the number of GPUs: no record trained on more than one GPU (the "
                           "knob gpus; several hosts: hosts; runs of 1 and N GPUs give the efficiency)")
        _devices_part(s, ctx)
        s.found(*said.scaling(summ, drawn, len(AXES)))
    if left:
        missing.append(f"{len(left)} configuration(s) that did not learn ({NOT_LEARNED}; the loss-and-accuracy "
                       f"section says why): {'; '.join(left)}")
    if missing:  # what these records cannot draw: one line each, in one list
        s.html('<ul class="cgb-notdrawn">' + "".join(f"<li>Not drawn: {esc(m)}.</li>" for m in missing) + "</ul>")
    _input_part(s, ctx, fold=not lead)
    return s.marks_note() if drawn else s


def _measured(ctx, table) -> str:
    """'Measured: 1 to 2 NVIDIA H100 80GB HBM3 GPUs of one machine and no CPU run, so the answer is ...'."""
    gpus = sorted({str(g) for g in ctx.summary.get("gpu", []) if not isnull(g)}) or ["GPU"]
    ns, machines = sorted(set(table["devices"])), ctx.summary["machine"].nunique()
    where = "one machine" if machines <= 1 else f"{machines} machines"
    return (f"Measured: {ns[0]} to {ns[-1]} {' and '.join(gpus[:2])} GPUs of {where} and no CPU run, so the answer is "
            "how samples/s grow with the GPUs. Efficiency: samples/s on N / (N x one GPU's samples/s, the same "
            "configuration and input path); 1.00 is linear.")
