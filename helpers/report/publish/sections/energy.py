"""GPU energy per 1,000 samples and per epoch of the source's dataset, total and above idle."""

from __future__ import annotations

from helpers.report.publish.charts import bar_facets
from helpers.report.publish.sections.base import Section, at_digits, config_labels, mark_bars, with_marks
from helpers.report.words import findings as said
from helpers.report.words.fmt import shown
from helpers.report.words.labels import labels

TITLE = "Energy per epoch and per 1,000 samples"
NAV = "Energy"  # its name in the one-line contents
LEAD = ("Where the GPU's energy was measured (NVML): the board's energy counter differenced at synchronised "
        "epoch boundaries on the GPUs the point used (older records: mean sampled power × epoch time). Per "
        "1,000 samples and per epoch of the source's full dataset, so configurations compare; the idle power "
        "is shown apart, with the energy above idle beside the total. The figure per epoch is the steady window's "
        "energy over its epochs: the counter moves in steps of 0.1 s (H100), so a window under 1 s has none. "
        "Idle W: in a runner's run, the GPU at rest before the first point, no framework holding it (73-75 W on "
        "the H100 here); a point run on its own (JupyterLab) measures it while its data is made, the framework "
        "holding the GPU, which draws more (116-125 W on the same H100). Above the first, \"above idle\" counts "
        "that holding power as the work's.")

METHODS = {"nvml_energy_counter": "energy counter", "mean_power": "mean power × time (idle included)"}


def energy_table(summ):
    import pandas as pd

    e = summ[summ["energy_j_per_epoch"].notna()].sort_values(["workload", "machine", "device", "backend"])
    per_sample = e["energy_j_per_epoch"] / e["n_train"]
    above = e["energy_above_idle_j_per_epoch"] / e["n_train"]
    rows = e.to_dict("records")

    def col(values, mark=False):  # each row's figure digits (precision.sig_digits); marks on the headline column
        return [shown(v, r, mark) for v, r in zip(values, rows)]

    return pd.DataFrame({
        "workload": e["workload"], "machine": e["machine"], "configuration": config_labels(e), "batch": e["batch_size"],
        "J per 1k samples": col(1000 * per_sample, True), "J per 1k samples above idle": col(1000 * above),
        "J per source epoch": col(per_sample * e["source_samples"]),
        "Wh per source epoch": col(per_sample * e["source_samples"] / 3600),
        "idle W": col(e["idle_power_w"]), "mean power W": col(e["power_w"]),
        "samples/epoch": e["n_train"], "J/epoch (as run)": col(e["energy_j_per_epoch"]),
        "method": e["energy_method"].map(lambda m: ", ".join(METHODS.get(x.strip(), x) for x in str(m).split(","))
                                         if m else ""),
        "runs": e["n_runs"], "data": e["data_source"],
    })


def build(ctx) -> Section:
    summ = ctx.summary
    e = summ[summ["energy_j_per_epoch"].notna()] if len(summ) else summ
    if e.empty:
        return Section.absent(__name__, "no run measured GPU energy (a CPU-only machine, or NVML unavailable). "
                                        "CPU energy is not measured.")
    s = Section.of(__name__)
    e = e.assign(j_per_1k=1000 * e["energy_j_per_epoch"] / e["n_train"])
    s.found(*said.energy(e))
    s.figure(mark_bars(bar_facets(
        e, "j_per_1k", with_marks(labels, brief=True), log=True, annotate=at_digits(e, "j_per_1k", " J"),
                                  xlabel="joules per 1,000 training samples (log scale)")),
        fold="Joules per 1,000 samples, per configuration (click to open; the table has every figure)")
    s.table(energy_table(summ))
    s.marks_note()
    if (e["energy_method"].fillna("") == "mean_power").any():
        s.note("⚠ Records marked \"mean power × time\" were measured before the energy counter was used: NVML's "
               "power reading is averaged over about a second, short steady windows get few samples, and idle "
               "power (about 120 W on an H100 at rest) is included.", kind="warn")
    return s
