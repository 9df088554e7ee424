"""The verdict, first: what was compared, the answer in sentences (each workload's fastest GPU configuration over its
fastest CPU configuration, both sides named), one chart on shared log axes, one short table; the same-backend pairs
below it as the like-for-like detail."""

from __future__ import annotations

from helpers.report.derive import breakeven, fresh
from helpers.report.derive.best import one_side
from helpers.report.derive.devices import leads
from helpers.report.load import columns as C
from helpers.report.load.reference import is_reference
from helpers.report.load.values import isnull
from helpers.report.publish import predictions as shown_predictions
from helpers.report.publish.charts import plain_log
from helpers.report.publish.sections.base import Section
from helpers.report.words import headline as hl
from helpers.report.words import payoff as payoff_words
from helpers.report.words import predictions, sides
from helpers.report.words.fmt import (
    MARKS_SHORT,
    NOT_LEARNED,
    esc,
    html_table,
    note,
    plain,
    rounded,
    row_marks,
    speedup_shown,
    sps_shown,
)
from helpers.report.words.labels import PRECISION_SHORT
from helpers.report.words.learned import configurations_text, with_texts
from helpers.report.words.marks import busy_sides
from helpers.report.words.style import PALETTE, backend_short, key_handles, scatter_look

TITLE = "The verdict: how much faster the GPU trains, per workload"
NAV = "Verdict"  # its name in the one-line contents
CONFLICT_MARK = "≠"  # a side of the row is one of a run's conflicting copies (best.without_copy)
LEAD = ("Each workload's fastest GPU configuration against its fastest CPU configuration (any backend, thread and "
        "compilation setting; both at the same batch size, precision and model knobs: the model's and its input's "
        "settings, docs/knobs.md), compared per sample: GPU "
        "samples/s ÷ CPU samples/s, each the median over its runs; both sides are named. Below it, like for like: "
        "the same backend on both sides. A source epoch is one pass over the dataset the workload's source trained "
        "on (its size is in the throughput section), derived from samples/s, so runs on fewer samples compare. "
        "Cost: the whole machine's on-demand price per hour (params/prices.yaml). The verdict's rows are in "
        "verdict.csv; every configuration and run is in the sections below and in results.csv / configurations.csv.")


def _row_label(r) -> str:
    return f"{r['workload']} · {backend_short(r['backend_cpu'])} → {backend_short(r['backend_gpu'])}"


def chart(rows):
    """Per workload (one line each, labelled with the backends of its two sides): seconds per source epoch of its
    fastest CPU and fastest GPU configuration (left, one shared log axis) and GPU ÷ CPU (right, one shared log
    axis), each speedup labelled as the sentences and the table show it (``fmt.speedup_shown``)."""
    import matplotlib.pyplot as plt

    rows = rows.sort_values("speedup").reset_index(drop=True)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 0.27 * len(rows) + 0.95), sharey=True,
                                 gridspec_kw={"width_ratios": [1.25, 1]})
    ratio = {"marker": "D", "color": PALETTE["ratio"], "s": 26}
    for y, r in rows.iterrows():
        c, g = r.get("source_epoch_s_cpu"), r.get("source_epoch_s_gpu")
        if not (isnull(c) or isnull(g)):  # each side in its backend's colour and its device's mark
            a1.plot([g, c], [y, y], color="#bbbbbb", lw=1, zorder=1)
            a1.scatter([c], [y], s=30, zorder=2, **scatter_look(r["backend_cpu"], "cpu"))
            a1.scatter([g], [y], s=30, zorder=2, **scatter_look(r["backend_gpu"], "gpu"))
        a2.scatter([r["speedup"]], [y], zorder=2, **ratio)
        if not (isnull(r.get("speedup_lo")) or isnull(r.get("speedup_hi"))):
            a2.plot([r["speedup_lo"], r["speedup_hi"]], [y, y], color=PALETTE["ratio"], lw=1, zorder=1)
        m = row_marks(r)
        end = r["speedup"] if isnull(r.get("speedup_hi")) else max(r["speedup"], r["speedup_hi"])  # past the whisker
        a2.annotate(f"{speedup_shown(r)}{' ' + m if m else ''}", (end, y), xytext=(5, 0), textcoords="offset points",
                    fontsize=8, va="center")
    a1.set_yticks(range(len(rows)), [_row_label(r) for _, r in rows.iterrows()], fontsize=9)
    a1.set_ylim(len(rows) - 0.5, -0.5)
    plain_log(a1)
    plain_log(a2)
    a2.axvline(1, ls=":", color="k", lw=0.8)
    lo, hi = a2.get_xlim()
    a2.set_xlim(min(lo, 0.8), hi * 2.5)
    a1.set_xlabel("seconds per epoch of the source's dataset (log scale; fewer is better)", fontsize=9)
    a2.set_xlabel("GPU ÷ CPU samples/s (log scale; right of the dotted line: the GPU is faster)", fontsize=9)
    faster = int((rows["speedup"] > 1).sum())
    a1.set_title(f"Time per source epoch, fastest CPU vs fastest GPU configuration:\nthe GPU is faster for {faster} "
                 f"of {len(rows)}", fontsize=10)  # two lines: one would run into the next panel's title
    a2.set_title(f"The GPU trains {speedup_shown(rows.iloc[0])} to {speedup_shown(rows.iloc[-1])} as fast\n"
                 "(rows: CPU side's backend → GPU side's)", fontsize=10)
    from matplotlib.lines import Line2D

    handles = key_handles(list(rows["backend_cpu"]) + list(rows["backend_gpu"]), ["gpu", "cpu"], kind="point",
                          device_text={"gpu": "GPU side", "cpu": "CPU side"},
                          extra=[Line2D([], [], ls="", ms=6, marker="D", color=PALETTE["ratio"], label="GPU ÷ CPU")])
    fig.legend(handles=handles, loc="lower center", ncols=len(handles), fontsize=9, frameon=False,
               bbox_to_anchor=(0.5, -0.04))
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def _price(v, marks: str = "") -> str:
    """An amount without its currency sign (the column's header carries it), with its marks, or 'no price'."""
    return hl.money(v, marks).lstrip("$") or "no price"


def glance_table(rows):
    """At most seven columns, one row per workload (``best.best_over_best``), both sides named; units in the
    headers."""
    import pandas as pd

    out = []
    for r in rows.sort_values("speedup", ascending=False).to_dict("records"):
        d = int(r["digits"])
        sp = speedup_shown(r)
        if r["interval"] != "none":
            sp += f" [{rounded(r['speedup_lo'], d)}–{rounded(r['speedup_hi'], d)}]"
        m = row_marks(r)
        od_c, od_g = r.get("on_demand_per_source_epoch_cpu"), r.get("on_demand_per_source_epoch_gpu")
        out.append({
            "workload": r["workload"],
            "sides compared: CPU → GPU": f"{hl.sides(r)} · b{plain(r['batch_size'])}" + (
                f" · {PRECISION_SHORT.get(str(r['precision']), r['precision'])}"
                if str(r["precision"]) != "float32" else ""),
            "GPU ÷ CPU": sp + (f" {m}" if m else "") + (f" · {busy_sides(r)}" if busy_sides(r) else "")
            + (f" {CONFLICT_MARK}" if r.get("copies") else ""),
            # a duration's unit changes from row to row (0.42 s, 12 min, 3.2 h): it stays in the cell
            "CPU time / source epoch": hl.duration(r.get("source_epoch_s_cpu"), row_marks(r, "_cpu")),
            "GPU time / source epoch": hl.duration(r.get("source_epoch_s_gpu"), row_marks(r, "_gpu")),
            "$ / source epoch, CPU · GPU": ("no price" if isnull(od_c) and isnull(od_g) else
                                            f"{_price(od_c, row_marks(r, '_cpu'))} · "
                                            f"{_price(od_g, row_marks(r, '_gpu'))}"),
            "runs CPU / GPU": f"{int(r['n_runs_cpu'])} / {int(r['n_runs_gpu'])}",
        })
    return pd.DataFrame(out)


def like_for_like(pairs):
    """The same backend on both sides, one row per workload × backend (``headline.best_pairs``): the detail under
    the verdict, its figures shown as everywhere else (``fmt.sps_shown``, ``fmt.speedup_shown``)."""
    import pandas as pd

    def fig(r, suffix):
        m = row_marks(r, suffix)
        return sps_shown(r, suffix) + (f" {m}" if m else "")

    return pd.DataFrame([{
        "workload": r["workload"], "backend (both sides)": r["backend"],
        "GPU": hl.config_key(r) + (f" ({hl.differs(r)})" if hl.differs(r) else ""),
        "CPU samples/s": fig(r, "_cpu"), "GPU samples/s": fig(r, "_gpu"),
        "GPU ÷ CPU": speedup_shown(r) + (f" {row_marks(r)}"
                                         if row_marks(r) else ""),
    } for r in pairs.sort_values(["workload", "backend"]).to_dict("records")])


FULL_CPU_COMMAND = "./run_all.sh params/cpu_full.yaml"  # every workload's CPU side on the three backends


def cpu_backends_left_out(c, rows) -> list[str]:
    """'JAX and PyTorch for bilstm_imdb, resnet50' per set of backends these records did not measure the CPU side
    of the verdict's workloads on (the records' own CPU runs: a reference's never count)."""
    from helpers.params import BACKENDS

    cpu = c[(c["device"] == "cpu") & c[C.SAMPLES_PER_S].notna() & ~c["machine"].map(is_reference)]
    by_missing: dict[tuple, list[str]] = {}
    for w in sorted(set(rows["workload"])):
        missing = tuple(backend_short(b) for b in BACKENDS if b not in set(cpu.loc[cpu["workload"] == w, "backend"]))
        if missing:
            by_missing.setdefault(missing, []).append(w)
    return [f"{' and '.join(m)} for {', '.join(ws)}" for m, ws in sorted(by_missing.items(), key=lambda i: -len(i[1]))]


def _key_note(rows) -> str:
    machines = sorted(set(rows["gpu_machine"].dropna().astype(str)))
    names = "; ".join(f"<b>{esc(hl.gpu_side(m))}</b> = {esc(m)}" for m in machines)
    return (f'<p class="cgb-key">Key: {names}; b = batch size per step; fp32 unless named. Each side is the '
            "workload's fastest configuration on that device (any backend, thread and compilation setting) at the "
            "batch size and precision named. Brackets after a speedup: the between-run interval.</p>")


def payoff(s: Section, rows, records) -> None:
    """When the GPU pays off (``breakeven``): one sentence over every workload, then one per workload (folded)
    under a line saying how they are counted."""
    rows = breakeven.add(rows, breakeven.planned(records))
    said = payoff_words.per_workload(rows)
    if not said:
        return
    s.html(f'<p class="cgb-compared">{esc(payoff_words.overall(rows))}</p>')
    how = note("N epochs of the source's dataset on each side, the first epoch's compilation (first − steady epoch, "
               "a fixed cost) added once; N is a grid's epochs_planned, else the epochs the source trained, else "
               "{}; the GPU is ahead after the first epoch count whose total is no longer than the CPU's (looked for "
               "up to {} epochs; verdict.csv has the figures).", breakeven.DEFAULT_EPOCHS, breakeven.HORIZON)
    s.details("When the GPU pays off, per workload: N epochs on each side, the first included (click to open)",
              how + '<ul class="cgb-payoff">' + "".join(f"<li>{esc(t)}</li>" for t in said) + "</ul>")


def learning_notes(s: Section, rows, dnl) -> None:
    """Fast and right: each workload whose every configuration of one side did not learn, said in place of a speedup
    (``best.did_not_learn``: ``dnl``), or the configurations each verdict row left out of its best for not learning,
    named with their reasons (``best_over_best``'s ``not_learned``: ``rows``, below the chart)."""
    if dnl is not None and len(dnl):
        s.html('<ul class="cgb-verdict">' + "".join(
            f"<li>{esc(r['workload'])}: did not learn on the {esc(r['side'])} side {NOT_LEARNED}, so no speedup: "
            f"{esc(configurations_text(r['gone']))}.</li>" for r in dnl.to_dict("records")) + "</ul>")
    left = [f"{r['workload']}: {r['not_learned']}" for r in rows.to_dict("records") if r.get("not_learned")] \
        if rows is not None and len(rows) else []
    if left:
        s.note(NOT_LEARNED + " Left out of the verdict's best, for they did not learn (each side is the fastest "
               "configuration that did; the loss-and-accuracy section has every configuration's check): {}.",
               " | ".join(left), kind="warn")


def build(ctx) -> Section:
    c = ctx.costed
    if c.empty or not c[C.SAMPLES_PER_S].notna().any():
        return Section.absent(__name__, "no successful run in these records.")
    s = Section.of(__name__)
    comp = hl.compared(ctx.df, here=ctx.here)  # "this machine": runs of this host's outputs folder only
    s.found("{} " + hl.LINKS, hl.compared_text(comp))
    rows = with_texts(ctx.best)
    if not len(rows) and leads(ctx):  # no CPU run, several GPU counts: the scaling section leads instead
        return Section.absent(__name__, "no CPU run in these records, so no CPU/GPU speedup; what they answer, how "
                                        "samples/s grow with the number of GPUs, is the first section.")
    dnl = ctx.not_learned
    if not len(rows) and len(dnl):  # a pair of sides, one of which never learned: said in place of a speedup
        learning_notes(s, rows, dnl)
        return s.marks_note()
    if not len(rows):
        devs = set(c["device"].dropna())
        s.note("No GPU/CPU pair to compare in these records ({}): the sections below show each device's own "
               "figures.", "no GPU run" if "gpu" not in devs else "no CPU run" if "cpu" not in devs
               else "no configuration ran on both", kind="warn")
        if "cpu" in devs:  # the GPU side no record measures: predicted, with its interval
            shown_predictions.add_to(s, ctx)
        return s
    pairs = hl.best_pairs(ctx.pairs)
    said = hl.sentences(rows, comp, pairs, one_side(c))
    s.html('<ul class="cgb-verdict">' + "".join(f"<li>{esc(t)}</li>" for t in said) + "</ul>")
    learning_notes(s, None, dnl)  # a workload one side of which never learned: in place of its speedup
    left_out = predictions.unpaired(c, rows)
    if left_out:  # every workload of the inputs accounted for
        s.note("Not in the verdict ({} of {} workloads): {}.", len(left_out), c["workload"].nunique(),
               "; ".join(left_out), kind="warn")
    s.figure(chart(rows), "time per source epoch and fastest GPU ÷ fastest CPU per workload")
    if any(row_marks(r, d) for r in rows.to_dict("records") for d in ("", "_cpu", "_gpu")):  # met in the sentences
        s.html(f'<p class="cgb-key">Marks: {esc(MARKS_SHORT)}.</p>')  # under the chart: the chart stays in view
    learning_notes(s, rows, None)  # what each row left out of its best for not learning: under the chart
    unmeasured = cpu_backends_left_out(c, rows)
    if unmeasured:  # the fastest CPU configuration is the fastest of those measured: what was not, and how
        s.note("The CPU side was not measured on every backend: {}. The fastest CPU configuration above is the "
               "fastest of those run; {} measures the rest (a default run measures the CPU on the backends that won "
               "it on the reference's CPU).", "; ".join(unmeasured), FULL_CPU_COMMAND)
    for line in (sides.differences(rows, ctx.df), fresh.sentence(rows)):  # what else differs; another machine
        if line:
            s.html(f'<p class="cgb-compared">{esc(line)}</p>')
    payoff(s, rows, ctx.records)
    shown_predictions.add_to(s, ctx)
    copies = [f"{r['workload']}: {r['copies']}" for r in rows.to_dict("records") if r.get("copies")]
    if copies:  # a forged copy of a run keeps its workload in the verdict, both values shown
        s.note(CONFLICT_MARK + " Copies of one run that say different things (record files of one run, edited in one "
               "of them): {}. The row takes the fastest; which copy is true is not for the report to guess: set "
               "the wrong file aside and render again.", "; ".join(copies), kind="warn")
    busy = [f"{r['workload']} ({busy_sides(r)})" for r in rows.to_dict("records") if busy_sides(r)]
    if busy:
        s.note("⚠ Host busy: {} rest(s) on runs measured while another process used more than a quarter of the "
               "cores (no unmarked run of that configuration exists); measure it again on a quiet machine.",
               ", ".join(busy), kind="warn")
    s.html(_key_note(rows)).marks_note()
    s.html(html_table(glance_table(rows)))
    if pairs is not None and len(pairs):
        s.details(f"Like for like: the same backend on both sides, {len(pairs)} pairs (click to open)",
                  note("The same backend, batch size, precision and knobs on both sides (the CPU side at its fastest "
                       "thread setting), one row per workload and backend; every pair is in the speedup section.")
                  + html_table(like_for_like(pairs)))
    if any(is_reference(m) for m in rows["gpu_machine"].dropna()):
        s.note("The GPU side is the bundled reference run on another machine, at the configurations your CPU ran: "
               "the speedup reads \"your CPU → that GPU\", per sample.", kind="warn")
    return s
