"""How far from the limit, per configuration: FLOPs per sample, peak, achieved TFLOP/s and MFU.

    row.update(**config(g))     # in aggregate.summarise: a configuration's runs -> its count and peak
    s = add(s)                  # in aggregate.per_sample: achieved TFLOP/s and MFU from its samples/s

The tidy table carries each record's ``flops_per_sample``: the model's FLOPs per sample, forward + backward, what MFU
counts (its own, else counted at report time from data/flops.csv: ``flops_source`` says which), with the optimiser's
FLOPs per step apart (``optimizer_flops_per_step``: divided by the batch, the update would make MFU fall as the batch
grows while throughput rises) and ``peak_flops`` of the devices it used (``peak_source``: the
datasheet, the measured matmul peak, or why there is none); see ``helpers.measure.flops_analytic`` (the count) and
``helpers.measure.flops_table`` (the committed counts).
"""

from __future__ import annotations

from helpers.measure import peaks
from helpers.report.load import columns as C

COLUMNS = ["flops_per_sample", "flops_source", "peak_flops", "peak_source", "achieved_tflops", "mfu",
           "optimizer_flops_per_step"]
TEXT = {"flops_source", "peak_source"}


def _joined(col) -> str | None:
    return "; ".join(sorted(col.dropna().astype(str).unique())) or None


def config(g) -> dict:
    """A configuration's model FLOPs per sample and optimiser FLOPs per step (medians of its runs), where the count
    comes from, and the peak of its
    devices (median over runs: a CPU's measured peak differs per run) with its source or why there is none."""
    if "flops_per_sample" not in g:
        return {}
    return {"flops_per_sample": g["flops_per_sample"].median(), "flops_source": _joined(g["flops_source"]),
            "peak_flops": g["peak_flops"].median(), "peak_source": _joined(g["peak_source"]),
            "optimizer_flops_per_step": g["optimizer_flops_per_step"].median()
            if "optimizer_flops_per_step" in g else None}


def add(s):
    """``achieved_tflops`` (FLOPs per sample × the configuration's samples/s) and ``mfu`` (÷ its peak)."""
    s["achieved_tflops"] = peaks.achieved_flops(s["flops_per_sample"], s[C.SAMPLES_PER_S]) / 1e12
    s["mfu"] = peaks.mfu(s["flops_per_sample"], s[C.SAMPLES_PER_S], s["peak_flops"])
    return s
