"""Samples per second of every configuration, and seconds per epoch of the source's full dataset."""

from __future__ import annotations

from ..aggregate import MIN_STEPS, labels, precision_marks, source_epochs
from ..charts import bar_facets
from ..fmt import html_table, num, spread_text
from .base import Section

TITLE = "Samples per second by workload × backend × device"
LEAD = ("Training throughput of every configuration: steady-state samples per second (median of the steady "
        "epochs of all its runs; whiskers: interquartile range). Blue: CPU, red: GPU; hatched: fixture (test) "
        "data. Points that trained on different numbers of samples compare here, per sample; raw seconds per "
        "epoch are listed in the table with the number of samples each epoch held.")


def timing_table(summ):
    import pandas as pd

    s = summ.sort_values(["workload", "machine", "device", "backend", "batch_size"])
    return pd.DataFrame({
        "workload": s["workload"], "machine": s["machine"] + s["fixture"].map({True: " (fixture)", False: ""}),
        "device · backend": s["config"], "batch": s["batch_size"],
        "threads": s["threads"].map(lambda t: "all" if t == 0 else ("" if pd.isna(t) else f"{t:g}")),
        "samples/s [IQR]": [spread_text(*v) for v in zip(s["samples_per_s"], s["sps_q1"], s["sps_q3"])],
        "between runs (min–max)": [f"{num(a)}–{num(b)}" if n > 1 else "one run" for a, b, n in
                                   zip(s["runs_sps_min"], s["runs_sps_max"], s["n_runs"])],
        "s per source epoch": s["source_epoch_s"],
        "samples/epoch": s["n_train"], "steps/epoch": s["steps_per_epoch"],
        "s/epoch [IQR]": [spread_text(*v) for v in zip(s["s_per_epoch"], s["q1"], s["q3"])],
        "s/step [IQR]": [spread_text(*v) for v in zip(s["s_per_step"], s["step_q1"], s["step_q3"])],
        "rests on": [precision_marks(r) for _, r in s.iterrows()],
        "data": s["data_source"],
    })


def build(ctx) -> Section:
    import pandas as pd

    summ = ctx.summary
    if summ.empty:
        return Section.absent(__name__, "no successful run in these records.")
    s = Section.of(__name__)
    s.figure(bar_facets(summ, "samples_per_s", labels, lo="sps_q1", hi="sps_q3", log=True,
                        xlabel="samples per second (log scale; median, whiskers: IQR)"))
    s.table(timing_table(summ), caption="samples/s, seconds per epoch and per step, and what each figure rests on")
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
