"""The first epoch (tracing, compilation, autotuning) beside the steady state."""

from __future__ import annotations

from helpers.report.publish.charts import bar_facets
from helpers.report.publish.sections.base import Section, config_labels, mark_bars, with_marks
from helpers.report.words import findings as said
from helpers.report.words.fmt import marked, rounded, row_marks, shown, spread_text
from helpers.report.words.labels import labels

TITLE = "First epoch (compilation) beside the steady state"
NAV = "First epoch"  # its name in the one-line contents
LEAD = ("The first epoch includes tracing, XLA/graph compilation and autotuning; it is never summed into the "
        "steady-state figures. Charted: its overhead, the first epoch minus a steady epoch of the same point "
        "(seconds of set-up, a fixed cost that does not grow with the epoch's size).")


def build(ctx) -> Section:
    import pandas as pd

    summ = ctx.summary
    s_ = summ[summ["first_epoch_s"].notna()] if len(summ) else summ
    if s_.empty:
        return Section.absent(__name__, "no first-epoch times recorded.")
    s_ = s_.assign(compile_s=(s_["first_epoch_s"] - s_["s_per_epoch"]).clip(lower=0))
    s = Section.of(__name__).found(*said.first_epoch(s_))
    s.figure(mark_bars(bar_facets(
        s_, "compile_s", with_marks(labels, brief=True), xlabel="first epoch − steady epoch, seconds",
                                  annotate=lambda v: f"{rounded(v, 2)} s")),
             fold="The first epoch's overhead per configuration (click to open; the verdict counts it in when the "
                  "GPU pays off)")
    t = s_.sort_values(["workload", "machine", "device", "backend"])
    rows = t.to_dict("records")
    s.table(pd.DataFrame({
        "workload": t["workload"], "machine": t["machine"], "configuration": config_labels(t), "batch": t["batch_size"],
        "samples/epoch": t["n_train"],
        "first epoch s (median [min–max])": [marked(spread_text(r["first_epoch_s"], r["first_min"], r["first_max"]),
                                                    row_marks(r)) for r in rows],
        "steady s/epoch (median run)": [shown(r["s_per_epoch"], r) for r in rows],
        "compile overhead s": [marked(rounded(r["compile_s"], 2), row_marks(r)) for r in rows],
        "first ÷ steady ×": [marked(rounded(r["first_epoch_s"] / r["s_per_epoch"], 2), row_marks(r)) for r in rows],
        "runs": t["n_runs"],
    }))
    return s.note("First epoch: median over runs [min–max]; the overhead and the ratio to 2 significant digits (a "
                  "run measures its first epoch once).").marks_note()
