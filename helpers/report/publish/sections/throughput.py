"""Samples per second of every configuration, and seconds per epoch of the source's full dataset."""

from __future__ import annotations

from helpers.report.derive.aggregate import MIN_STEPS
from helpers.report.derive.precision import digits
from helpers.report.load import columns as C
from helpers.report.load.published import source_epochs
from helpers.report.load.values import isnull
from helpers.report.publish.charts import bar_facets
from helpers.report.publish.sections.base import Section, at_digits, config_labels, mark_bars, with_marks
from helpers.report.words import findings as said
from helpers.report.words.fmt import figure, html_table, plain, rounded, shown, whole
from helpers.report.words.labels import labels
from helpers.report.words.marks import precision_marks

TITLE = "Samples per second by workload × backend × device"
NAV = "Samples/s"  # its name in the one-line contents
LEAD = ("Training throughput of every configuration: the median over its runs of each run's steady-state samples "
        "per second; whiskers: the between-run interval (range of 2–4 runs, bootstrap 95% from 5; none for one "
        "run). Colour: the backend; solid bars: GPU, pale outlined bars: CPU (the key names each device's machine); "
        "hatched: fixture (test) data, one run (dots) or a short window (crosses). "
        "Points that trained on different numbers of samples compare here, per sample; raw seconds per epoch "
        "are listed in the table with the number of samples each epoch held.")


def _iqr(lo, hi, r) -> str:
    d = digits(r)
    return f"{rounded(lo, d)}–{rounded(hi, d)}" if lo == lo and hi == hi else ""


def timing_table(summ):
    import pandas as pd

    s = summ.sort_values(["workload", "machine", "device", "backend", "batch_size"])
    rows = s.to_dict("records")
    return pd.DataFrame({
        "workload": s["workload"], "machine": s["machine"] + s["fixture"].map({True: " (fixture)", False: ""}),
        "configuration": config_labels(s), "batch": s["batch_size"],
        "threads": s["threads"].map(lambda t: "all" if t == 0 else ("" if pd.isna(t) else f"{plain(t)}")),
        "samples/s, median of runs [between runs]": [figure(r) for r in rows],
        "within-run epoch IQR, samples/s (not its uncertainty)": [_iqr(r["sps_q1"], r["sps_q3"], r)
                                                                           for r in rows],
        "s per source epoch": [shown(r["source_epoch_s"], r) for r in rows],
        "samples · steps per epoch": [f"{whole(r['n_train'])} · {whole(r['steps_per_epoch'])}"
                                      if not (isnull(r["n_train"]) or isnull(r["steps_per_epoch"])) else ""
                                      for r in rows],
        "s/epoch (median run)": [shown(r["s_per_epoch"], r) for r in rows],
        "within-run s/epoch IQR": [_iqr(r["q1"], r["q3"], r) for r in rows],
        "s/step (median run)": [shown(r["s_per_step"], r) for r in rows],
        "rests on": [precision_marks(r) + ("" if r["data_source"] == "synthetic" else f"; {r['data_source']} data")
                     for r in rows],
    })


def build(ctx) -> Section:
    import pandas as pd

    summ = ctx.summary
    if summ.empty:
        return Section.absent(__name__, "no successful run in these records.")
    s = Section.of(__name__).found(*said.throughput(summ))
    s.figure(mark_bars(bar_facets(
        summ, C.SAMPLES_PER_S, with_marks(labels, brief=True), lo="sps_lo", hi="sps_hi", log=True,
                                  annotate=at_digits(summ, C.SAMPLES_PER_S),
                                  xlabel="samples per second (log scale; median over runs, whiskers: between runs)")))
    s.table(timing_table(summ), caption="samples/s, seconds per epoch and per step, and what each figure rests on")
    s.marks_note()
    few = summ[summ["few_steps"]]
    if len(few):
        s.note("⚠ {} configuration(s) ran fewer than {} steps per epoch: a fixed cost per epoch (iterator restart, "
               "device syncs) weighs more on short epochs and lowers their samples/s; compare them with points of "
               "equal step counts only.", len(few), MIN_STEPS, kind="warn")
    sizes = source_epochs()
    if sizes:
        tab = pd.DataFrame([{"workload": w, "samples per source epoch": v["samples"], "basis": v["basis"],
                             "inferred": "yes" if v["inferred"] else ""} for w, v in sorted(sizes.items())])
        s.details("Samples in one epoch of each source's full dataset (data/source_epochs.csv)",
                  html_table(tab, max_rows=None))
    return s
