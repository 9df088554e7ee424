"""The first epoch (tracing, compilation, autotuning) beside the steady state."""

from __future__ import annotations

from ..aggregate import labels
from ..charts import bar_facets
from ..fmt import num, spread_text
from .base import Section

TITLE = "First epoch (compilation) beside the steady state"
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
    s = Section.of(__name__)
    s.figure(bar_facets(s_, "compile_s", labels, xlabel="first epoch − steady epoch, seconds",
                        annotate=lambda v: f"{num(v)} s"))
    t = s_.sort_values(["workload", "machine", "device", "backend"])
    return s.table(pd.DataFrame({
        "workload": t["workload"], "machine": t["machine"], "device · backend": t["config"], "batch": t["batch_size"],
        "samples/epoch": t["n_train"],
        "first epoch s (median [min–max])": [spread_text(*v) for v in zip(t["first_epoch_s"], t["first_min"],
                                                                           t["first_max"])],
        "steady s/epoch [IQR]": [spread_text(*v) for v in zip(t["s_per_epoch"], t["q1"], t["q3"])],
        "compile overhead s": t["compile_s"],
        "first ÷ steady": t["first_epoch_s"] / t["s_per_epoch"],
        "runs": t["n_runs"],
    }))
