"""Backend against backend on the same machine, device and settings."""

from __future__ import annotations

from helpers.report.derive.precision import digits
from helpers.report.load import columns as C
from helpers.report.load.table import CONFIG_KEYS
from helpers.report.publish.sections.base import Section
from helpers.report.words import findings as said
from helpers.report.words.fmt import figure, rounded

TITLE = "Backend against backend on the same device"
NAV = "Backends"  # its name in the one-line contents
LEAD = ("TensorFlow, JAX and PyTorch through Keras 3 on the same machine, device, batch, precision, knobs and "
        "epoch size: samples/s and the ratio to the fastest backend of that configuration.")


def backend_table(summ):
    import pandas as pd

    keys = [k for k in CONFIG_KEYS if k != "backend"]
    rows = []
    for key, g in summ.groupby(keys, dropna=False, sort=True):
        if g["backend"].nunique() < 2:
            continue
        best = g.loc[g[C.SAMPLES_PER_S].idxmax()]
        k = dict(zip(keys, key))
        for _, r in g.sort_values(C.SAMPLES_PER_S, ascending=False).iterrows():
            rows.append({"workload": k["workload"], "machine": k["machine"], "device": k["device"],
                         "batch": k["batch_size"], "precision": k["precision"], "knobs": k["knobs"],
                         "backend": r["backend"],
                         "samples/s: median of runs [between runs]": figure(r),
                         "× the fastest backend's time": rounded(best[C.SAMPLES_PER_S] / r[C.SAMPLES_PER_S],
                                                                 min(digits(best), digits(r))),
                         "first epoch s": r["first_epoch_s"], "runs": r["n_runs"], "data": k["data_source"]})
    return pd.DataFrame(rows)


def build(ctx) -> Section:
    bt = backend_table(ctx.summary) if len(ctx.summary) else ctx.summary
    if len(bt) == 0:
        return Section.absent(__name__, "only one backend per device and setting in these records: nothing to "
                                        "compare.")
    return Section.of(__name__).found(*said.backends(bt)).table(bt).marks_note()
