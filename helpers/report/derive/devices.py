"""Several GPUs in the report: the scaling table, the published anchors beside it, the chart, findings.

    table = device_scaling(summ)              # per configuration on 1..N devices: samples/s, efficiency vs one
    anchors = published_devices(pub, wls)     # published figures with a GPU count (e.g. Lambda's 1x..8x H100)
    fig = devices_chart.plot_devices(table, anchors)  # samples/s and efficiency against N; published in grey
    lines = findings(table)                   # per model, its efficiency at the most GPUs, per input path

Efficiency: samples/s at N devices / (N x samples/s of the same configuration on one device); its range comes
from the runs (the slowest N-device run over N x the fastest one-device run, and the other way round). N devices
are reached two ways, set side by side: one process driving N GPUs (``gpus: N``) or N processes of one GPU each
(``processes: N``, or ``hosts: N`` under a launcher); ``way`` says which (in words: "one process per GPU").
"""

from __future__ import annotations

import math

from helpers.params import LATER_DEFAULTS
from helpers.report.derive.learning import learned
from helpers.report.derive.precision import digits
from helpers.report.load import columns as C
from helpers.report.load.published import published_devices as published_devices  # the anchors, kept there
from helpers.report.load.table import CONFIG_KEYS
from helpers.report.load.values import isnull, knob_items

DEVICE_KNOBS = ("gpus", "hosts", "processes")
ONE_PROCESS = "one process"  # the way of a point of one process (driving one GPU or several)
BN_PER_DEVICE = ", BatchNorm per GPU"  # a way's suffix: batchnorm_stats per_device (helpers.point.batchnorm)
PER_GPU = "one process per GPU"  # the way of N processes of one GPU each, in words
# the input paths, the recommended one (uint8 batches put on the GPUs ahead of the step) first
INPUTS = (("uint8", "staged"), ("float32", "staged"), ("float32", "host"), ("uint8", "host"), ("float32", "device"),
          ("uint8", "device"))


def device_scaling(summ):
    """One row per configuration that was run on several devices and the rows it is compared with: samples/s,
    devices (gpus x hosts), input dtype, data placement, efficiency (and its range over the runs) against the same
    configuration on one device, energy and cost. None when no record used more than one device."""
    if summ.empty or "knobs" not in summ.columns:
        return None
    s = summ[summ[C.SAMPLES_PER_S].notna()].copy()
    # profiled points are the step breakdown's (their timed window is a configuration's own, apart from the grid's)
    s = s[[str(knob_items(k).get("profile", "False")).lower() != "true" for k in s["knobs"]]]
    items = [knob_items(k) for k in s["knobs"]]
    s["gpus_n"] = [int(i.get("gpus", 1)) for i in items]
    s["hosts_n"] = [int(i.get("hosts", 1)) for i in items]
    s["procs_n"] = [int(i.get("processes", 1)) for i in items]
    s["devices"] = s["gpus_n"] * s["hosts_n"] * s["procs_n"]
    s["input_dtype"] = [i.get("input_dtype", LATER_DEFAULTS["input_dtype"]) for i in items]
    s["placement"] = [i.get("data_placement", LATER_DEFAULTS["data_placement"]) for i in items]
    # BatchNorm's statistics per device or global are one computation on one device: the same base for both
    s["_bn"] = [i.get("batchnorm_stats", LATER_DEFAULTS["batchnorm_stats"]) for i in items]
    s["_base"] = [", ".join(f"{k}={v}" for k, v in sorted(i.items()) if k not in DEVICE_KNOBS + ("batchnorm_stats",))
                  for i in items]
    if not (s["devices"] > 1).any():
        return None
    keys = [k for k in CONFIG_KEYS if k not in ("knobs", "n_train")] + ["_base"]
    rows = []
    for _, g in s.groupby(keys, dropna=False, sort=True):
        if g["devices"].max() <= 1:
            continue
        one = g[g["devices"] == 1].sort_values("_bn")  # "global" first: the grid's own one-GPU point
        base = float(one[C.SAMPLES_PER_S].iloc[0]) if len(one) else math.nan
        b_lo, b_hi = (_run_range(one.iloc[0]) if len(one) else (math.nan, math.nan))
        for r in g.sort_values(["devices", "_bn"]).to_dict("records"):
            n = r["devices"]
            if n == 1 and r["_bn"] != LATER_DEFAULTS["batchnorm_stats"] and len(one) > 1:
                continue  # the same computation as the global one-device point
            lo, hi = _run_range(r)
            bn = BN_PER_DEVICE if n > 1 and r["_bn"] == "per_device" else ""
            eff = r[C.SAMPLES_PER_S] / (n * base) if base == base else math.nan
            rows.append({"workload": r["workload"], "backend": r["backend"], "precision": r["precision"],
                         "batch per device": r["batch_size"], "input": r["input_dtype"], "data on": r["placement"],
                         "GPUs": f"{r['gpus_n']}" + (f" x {r['hosts_n']} hosts" if r["hosts_n"] > 1 else "")
                                 + (f" x {r['procs_n']} processes" if r["procs_n"] > 1 else ""),
                         "devices": n, "way": way(r["gpus_n"], r["hosts_n"] * r["procs_n"]) + bn,
                         "kind": way_kind(r["gpus_n"], r["hosts_n"] * r["procs_n"]) + bn,
                         "samples/s": r[C.SAMPLES_PER_S], "samples/s over the runs": (lo, hi) if lo != hi else None,
                         "efficiency": eff,
                         "efficiency over the runs": (lo / (n * b_hi), hi / (n * b_lo)) if base == base else None,
                         "J per epoch": r.get("energy_j_per_epoch"),
                         "$ per 1k samples": r.get("on_demand_per_1k", math.nan),
                         "$ per epoch": (r.get("on_demand_per_h", math.nan) / 3600.0 * r["s_per_epoch"]
                                         if not isnull(r.get("s_per_epoch")) else math.nan),
                         "runs": r.get("n_runs"), "digits": digits(r),  # the figure's digits (precision.sig_digits)
                         # what its marks are read from (scaling_words.marks_of)
                         "short_window": r.get("short_window"), "host_busy": r.get("host_busy"),
                         "learned": r.get("learned")})
    if not rows:
        return None
    import pandas as pd

    return pd.DataFrame(rows).sort_values(["workload", "backend", "precision", "devices", "input", "data on",
                                           "way"], kind="stable")


def way(gpus: int, processes: int) -> str:
    """How a point's devices are driven: ``one process`` (one GPU, or ``gpus`` > 1 in one process) or
    ``N processes x G GPU(s)`` (``processes`` on this host, or ``hosts`` under a launcher)."""
    if processes <= 1:
        return ONE_PROCESS
    return f"{processes} processes x {gpus} GPU" + ("s" if gpus > 1 else "")


def _run_range(r) -> tuple[float, float]:
    """The slowest and fastest run's samples/s of a summary row (its median when the range is missing)."""
    med = float(r[C.SAMPLES_PER_S])
    lo, hi = r.get("runs_sps_min"), r.get("runs_sps_max")
    return (med if isnull(lo) else float(lo)), (med if isnull(hi) else float(hi))


def way_kind(gpus: int, processes: int) -> str:
    """A way whatever the GPU count: ``ONE_PROCESS``, ``PER_GPU`` (processes of one GPU each) or the way itself
    ('2 processes x 2 GPUs'); from the counts, never from the way's words (the scaling table's ``kind``)."""
    return PER_GPU if processes > 1 and gpus == 1 else way(gpus, processes)


def scaling_table(ctx):
    """``device_scaling`` of a report context's configurations that learned (its costed rows where all have one)."""
    c = ctx.costed if getattr(ctx, "costed", None) is not None and len(ctx.costed) == len(ctx.summary) else ctx.summary
    return device_scaling(learned(c))


def leads(ctx) -> bool:
    """Whether the report leads with the scaling answer: no CPU/GPU pair to compare (``best.best_over_best``) and
    records of one configuration on several GPU counts."""
    c = ctx.costed
    if c is None or c.empty or not c[C.SAMPLES_PER_S].notna().any() or len(ctx.best):
        return False
    t = scaling_table(ctx)
    return t is not None and t["devices"].nunique() > 1


def chart_lines(g):
    """The chart's lines of one workload: per backend, precision and input path, and, where its devices were driven
    both ways, per way whatever the GPU count (``kind``; each line starting from the one-device point); the way is
    None where there is one."""
    for (be, prec, inp, on), h in g.groupby(["backend", "precision", "input", "data on"], sort=True):
        kinds = list(h["kind"])
        ways = sorted({k for k, n in zip(kinds, h["devices"]) if n > 1}, key=lambda w: (w != ONE_PROCESS, w))
        if len(ways) <= 1:
            yield (be, prec, inp, on, None), h
            continue
        for w in ways:
            yield (be, prec, inp, on, w), h[[n == 1 or k == w for n, k in zip(h["devices"], kinds)]]
