"""Loss and accuracy per epoch: the latest run of each configuration."""

from __future__ import annotations

from helpers.report.load.table import latest_ok
from helpers.report.publish.charts import LONG_LABEL, grid
from helpers.report.publish.sections.base import Section
from helpers.report.words import findings as said
from helpers.report.words import learned
from helpers.report.words.fmt import NOT_LEARNED, esc
from helpers.report.words.labels import labels
from helpers.report.words.style import point_look

TITLE = "Loss and accuracy per epoch"
NAV = "Loss and accuracy"  # its name in the one-line contents
LEAD = ("The latest run of each configuration (at most eight per workload). On synthetic data, accuracy only "
        "shows that the model learns; compare accuracies on real data only.")


def plot_history(df, records_by_path: dict):
    from matplotlib.ticker import MaxNLocator

    ok = latest_ok(df) if not df.empty else df
    ok = ok[ok["path"].isin(list(records_by_path))] if not ok.empty else ok
    workloads = sorted(ok["workload"].dropna().unique()) if not ok.empty else []
    if not workloads:
        return None
    subs = {wl: ok[ok["workload"] == wl].sort_values("started_at").tail(6) for wl in workloads}  # 6 keys a row
    # room under each panel for its key (one line per run drawn)
    names = {wl: labels(subs[wl]) for wl in workloads}
    wide = max(len(t) for ts in names.values() for t in ts) > LONG_LABEL  # long keys: one workload a row
    fig, axes = grid(2 * len(workloads), [1.7 + 0.16 * len(subs[wl]) for wl in workloads for _ in (0, 1)],
                     ncols=2 if wide else 4)
    for i, wl in enumerate(workloads):
        a1, a2 = axes[2 * i], axes[2 * i + 1]
        sub = subs[wl]
        styles: dict = {}
        for lab, (_, r) in zip(names[wl], sub.iterrows()):
            h = records_by_path[r["path"]].get("history")
            h = h if isinstance(h, dict) else {}
            loss, acc = h.get("loss") or [], h.get("accuracy") or h.get("acc") or []
            key = (r["backend"], r["device"])  # colour: backend; marker: device
            n = styles[key] = styles.get(key, -1) + 1  # the lines of one backend and device: told apart by dashes
            look = {**point_look(*key), "ms": 3.5, "ls": ["-", "--", ":", "-."][n % 4],
                    "alpha": 1.0 - 0.35 * (n // 4 % 2)}
            if isinstance(loss, list) and loss:
                a1.plot(range(1, len(loss) + 1), loss, label=lab, **look)
            if isinstance(acc, list) and acc:
                a2.plot(range(1, len(acc) + 1), acc, label=lab, **look)
        short = wl if len(wl) <= 22 else wl[:21] + "…"  # four panels a row: a title never runs into the next one
        a1.set_title(f"{short}: loss by epoch", fontsize=9, fontweight="bold")  # the axis's name in the title: the
        a2.set_title(f"{short}: accuracy by epoch", fontsize=9, fontweight="bold")  # key sits right under the ticks
        for a in (a1, a2):
            a.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=5))
        if not a2.get_legend_handles_labels()[0]:  # a workload without accuracy: said, not an empty panel
            a2.cla()
            a2.axis("off")
            a2.text(0.0, 0.9, f"{wl}: no accuracy recorded", fontsize=9, transform=a2.transAxes)
        a1.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0.0, 0.0), frameon=False,
                  borderaxespad=2.2)  # 2.2 font sizes under the axis: clear of its tick labels at any panel height
    fig.tight_layout()
    return fig


def learning_part(s: Section, summ) -> None:
    """Did each configuration learn (``learning``): one line per workload, then, where a grid varies the batch size
    at fixed data and epochs, what the larger batches give up against the smallest; how 'learned' is decided."""
    said_lines = learned.lines(summ)
    if not said_lines:
        return
    fine = [t for t in said_lines if ": all " in t and " learned" in t]  # a workload every configuration of learned
    rest = [t for t in said_lines if t not in fine]
    if rest:  # a configuration that did not learn, or was not checked: in view
        s.html('<ul class="cgb-learned">' + "".join(f"<li>{esc(t)}</li>" for t in rest) + "</ul>")
    if fine:  # the rest a click away: one line per workload, the page no longer for them
        s.details(f"Every configuration learned in {len(fine)} workload(s): each one's line, with its losses (click "
                  "to open)", '<ul class="cgb-learned">' + "".join(f"<li>{esc(t)}</li>" for t in fine) + "</ul>")
    by_batch = learned.batches(summ)
    if by_batch:
        s.details(f"Larger batches at the same data and epochs: the loss against the smallest batch's, "
                  f"{len(by_batch)} (click to open)",
                  '<ul class="cgb-learned">' + "".join(f"<li>{esc(t)}</li>" for t in by_batch) + "</ul>")
    s.note("Learned: every epoch's loss finite, the last below the first, the accuracy above chance where the class "
           "count is recorded, and the loss no higher than the median of the workload's other configurations at the "
           "same data, batch and epoch by more than the largest spread between the runs of one configuration "
           "(compared at the last epoch every run reached; on synthetic data with random targets, finiteness only). "
           "A configuration that did not learn is marked {} and left out of the verdict, the speedups, the scaling "
           "and the comparison.", NOT_LEARNED)


def build(ctx) -> Section:
    fig = plot_history(ctx.df, ctx.by_path)
    if fig is None:
        return Section.absent(__name__, "no loss/accuracy history recorded.")
    # the curves back the sentence (loss falls, accuracy rises): one click away
    s = Section.of(__name__).found(*said.history(ctx.summary))
    learning_part(s, ctx.summary)
    return s.figure(fig, fold="Loss and accuracy by epoch, per workload (click to open)")
