"""The GPU's speedup over the CPU, for matched configurations only, per sample."""

from __future__ import annotations

from ..aggregate import labels, matched_pairs
from ..charts import bar_facets
from ..fmt import num, spread_text
from .base import Section

TITLE = "Speedup of the GPU over the CPU (matched configurations)"
LEAD = ("GPU samples/s ÷ CPU samples/s of the same machine, workload, backend, batch size, precision and "
        "knobs (the CPU side: its fastest thread setting); per sample, so the two sides may train on different "
        "numbers of samples. \"% less time\" as seeds 000 and 001 report it. The interval comes from the "
        "between-run ranges of both sides when each has several runs, else from the epochs' interquartile "
        "ranges of a single run (labelled).")


def _label(sub) -> list[str]:
    return labels(sub, keep=("backend",))


def build(ctx) -> Section:
    import pandas as pd

    m = matched_pairs(ctx.summary)
    if m.empty:
        return Section.absent(__name__, "no GPU/CPU pair to compare: no successful GPU run on a machine that also "
                                        "ran the same configuration on its CPU (see the skipped points under "
                                        "Provenance).")
    s = Section.of(__name__)
    fig = bar_facets(m.assign(device="gpu"), "speedup", _label, lo="speedup_lo", hi="speedup_hi", log=True,
                     xlabel="GPU ÷ CPU samples/s (log scale; 1 = no gain)", refline=1.0,
                     sort=("backend", "batch_size"), annotate=lambda v: f"{num(v)}×")
    s.figure(fig)
    tab = pd.DataFrame({
        "machine": m["machine"], "workload": m["workload"], "backend": m["backend"], "batch": m["batch_size"],
        "precision": m["precision"], "knobs": m["knobs"],
        "CPU samples/s [IQR]": [spread_text(*v) for v in zip(m["samples_per_s_cpu"], m["sps_q1_cpu"], m["sps_q3_cpu"])],
        "CPU runs": m["n_runs_cpu"], "CPU samples/epoch": m["n_train_cpu"],
        "GPU samples/s [IQR]": [spread_text(*v) for v in zip(m["samples_per_s_gpu"], m["sps_q1_gpu"], m["sps_q3_gpu"])],
        "GPU runs": m["n_runs_gpu"], "GPU samples/epoch": m["n_train_gpu"],
        "speedup × [interval]": [spread_text(*v) for v in zip(m["speedup"], m["speedup_lo"], m["speedup_hi"])],
        "interval from": m["interval"].map({"runs": "between runs", "epochs": "epoch IQR (one run)"}),
        "% less time": 100 * (1 - 1 / m["speedup"]),
        "data": m["data_source"],
    })
    return s.table(tab)
