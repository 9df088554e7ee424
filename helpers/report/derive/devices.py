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
import re

from helpers.params import LATER_DEFAULTS
from helpers.report.derive.learning import learned
from helpers.report.derive.precision import digits
from helpers.report.load.published import published_devices as published_devices  # the anchors, kept there
from helpers.report.load.table import CONFIG_KEYS
from helpers.report.load.values import isnull
from helpers.report.words.fmt import marked, num, rounded, row_marks, union_marks
from helpers.report.words.labels import _knob_items

DEVICE_KNOBS = ("gpus", "hosts", "processes")
ONE_PROCESS = "one process"  # the way of a point of one process (driving one GPU or several)
BN_PER_DEVICE = ", BatchNorm per GPU"  # a way's suffix: batchnorm_stats per_device (helpers.point.batchnorm)
PER_GPU = "one process per GPU"  # the way of N processes of one GPU each, in words
# the input paths, the recommended one (uint8 batches put on the GPUs ahead of the step) first
INPUTS = (("uint8", "staged"), ("float32", "staged"), ("float32", "host"), ("uint8", "host"), ("float32", "device"),
          ("uint8", "device"))
PLACED = {"host": " from the host", "device": ", data on the device", "staged": " staged on the GPUs"}


def _path(inp, on, inputs: bool = True) -> str:
    """'uint8 inputs staged on the GPUs', 'float32 inputs from the host'; without ``inputs``: 'float32 from the
    host' (a table's cell)."""
    return f"{inp}{' inputs' if inputs else ''}" + PLACED.get(on, f", data_placement {on}")


def device_scaling(summ):
    """One row per configuration that was run on several devices and the rows it is compared with: samples/s,
    devices (gpus x hosts), input dtype, data placement, efficiency (and its range over the runs) against the same
    configuration on one device, energy and cost. None when no record used more than one device."""
    if summ.empty or "knobs" not in summ.columns:
        return None
    s = summ[summ["samples_per_s"].notna()].copy()
    # profiled points are the step breakdown's (their timed window is a configuration's own, apart from the grid's)
    s = s[[str(_knob_items(k).get("profile", "False")).lower() != "true" for k in s["knobs"]]]
    items = [_knob_items(k) for k in s["knobs"]]
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
        base = float(one["samples_per_s"].iloc[0]) if len(one) else math.nan
        b_lo, b_hi = (_run_range(one.iloc[0]) if len(one) else (math.nan, math.nan))
        for r in g.sort_values(["devices", "_bn"]).to_dict("records"):
            n = r["devices"]
            if n == 1 and r["_bn"] != LATER_DEFAULTS["batchnorm_stats"] and len(one) > 1:
                continue  # the same computation as the global one-device point
            lo, hi = _run_range(r)
            eff = r["samples_per_s"] / (n * base) if base == base else math.nan
            rows.append({"workload": r["workload"], "backend": r["backend"], "precision": r["precision"],
                         "batch per device": r["batch_size"], "input": r["input_dtype"], "data on": r["placement"],
                         "GPUs": f"{r['gpus_n']}" + (f" x {r['hosts_n']} hosts" if r["hosts_n"] > 1 else "")
                                 + (f" x {r['procs_n']} processes" if r["procs_n"] > 1 else ""),
                         "devices": n, "way": way(r["gpus_n"], r["hosts_n"] * r["procs_n"])
                                              + (BN_PER_DEVICE if n > 1 and r["_bn"] == "per_device" else ""),
                         "samples/s": r["samples_per_s"], "samples/s over the runs": (lo, hi) if lo != hi else None,
                         "efficiency": eff,
                         "efficiency over the runs": (lo / (n * b_hi), hi / (n * b_lo)) if base == base else None,
                         "J per epoch": r.get("energy_j_per_epoch"),
                         "$ per 1k samples": r.get("on_demand_per_1k", math.nan),
                         "$ per epoch": (r.get("on_demand_per_h", math.nan) / 3600.0 * r["s_per_epoch"]
                                         if not isnull(r.get("s_per_epoch")) else math.nan),
                         "runs": r.get("n_runs"), "digits": digits(r),  # the figure's digits (precision.sig_digits)
                         "marks": row_marks(r)})
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
    med = float(r["samples_per_s"])
    lo, hi = r.get("runs_sps_min"), r.get("runs_sps_max")
    return (med if isnull(lo) else float(lo)), (med if isnull(hi) else float(hi))


def findings(table) -> list[str]:
    """One sentence per model (workload, backend, precision): its efficiency at the most devices it ran on, per
    input path (float32 / uint8; from the host, staged on the GPUs or on the device), with the range over the runs;
    where the devices were driven both ways, one process driving them and one process per GPU side by side."""
    out = []
    for (wl, be, prec), g in table.groupby(["workload", "backend", "precision"], sort=True):
        n = g["devices"].max()
        top = g[g["devices"] == n]
        ways = sorted(set(top["way"]), key=lambda w: (w != ONE_PROCESS, w))
        parts = []
        for inp, on in INPUTS:
            said = []
            for w in ways:
                r = top[(top["input"] == inp) & (top["data on"] == on) & (top["way"] == w)]
                if len(r) and not isnull(r["efficiency"].iloc[0]):
                    rng = r["efficiency over the runs"].iloc[0]
                    said.append((eff_shown(r["efficiency"].iloc[0]), _way_words(w, n),
                                 f" ({range_shown(rng, eff_shown)} over {int(r['runs'].iloc[0])} run(s))"
                                 if rng and int(r["runs"].iloc[0] or 1) > 1 else ""))
            if len(said) == 1 and len(ways) == 1:
                parts.append(f"{said[0][0]} with {_path(inp, on)}{said[0][2]}")
            elif said:
                parts.append(f"with {_path(inp, on)} " + " against ".join(f"{e} {w}{r}" for e, w, r in said))
        if parts:
            out.append(f"{wl} ({be}, {prec}) on {n} GPUs: efficiency " + "; ".join(parts) + ".")
    return out


def answer(table) -> list[str]:
    """The scaling answer, one sentence per model and input path: its efficiency at every GPU count, per way
    ('resnet50 (jax, mixed_bfloat16), uint8 inputs staged on the GPUs: efficiency with one process per GPU 0.97 on
    2 GPUs, 0.95 on 4; with one process driving them 0.90 on 2, 0.85 on 4.'), the table's strings."""
    out = []
    for (wl, be, prec), g in table.groupby(["workload", "backend", "precision"], sort=True):
        for inp, on in INPUTS:
            h = g[(g["input"] == inp) & (g["data on"] == on) & (g["devices"] > 1) & g["efficiency"].notna()]
            ways = sorted(set(map(_kind, h["way"])), key=lambda k: (k != PER_GPU, k))
            parts = []
            one = g[(g["input"] == inp) & (g["data on"] == on) & (g["devices"] == 1)]
            base = one["marks"].iloc[0] if len(one) else ""
            for k in ways:
                r = h[[_kind(w) == k for w in h["way"]]].sort_values("devices")
                # an efficiency derives from the N-GPU figure and the one-GPU figure: the marks of both
                figs = [marked(eff_shown(e), union_marks(m, base)) + f" on {int(n)}" + (" GPUs" if i == 0 else "")
                        for i, (e, n, m) in enumerate(zip(r["efficiency"], r["devices"], r["marks"]))]
                named = "one process driving them" if k == ONE_PROCESS else k
                parts.append(("" if len(ways) == 1 else f"with {named} ") + ", ".join(figs))
            if parts:
                out.append(f"{wl} ({be}, {prec}), {_path(inp, on)}: efficiency " + "; ".join(parts)
                           + _no_faster(g[(g["input"] == inp) & (g["data on"] == on)]) + ".")
    return out


def _no_faster(g) -> str:
    """'; 2 GPUs slower than one (383 → 320 samples/s)', '; 2 GPUs no faster than one (...)': said in words where more
    GPUs did not beat one (within 5%), each figure as the table shows it; '' where they all did."""
    one = g[g["devices"] == 1]
    if not len(one):
        return ""
    base = one.iloc[0]
    said = []
    for r in g[g["devices"] > 1].sort_values("devices").to_dict("records"):
        ratio = r["samples/s"] / base["samples/s"]
        if ratio < 1.05:
            words = "slower than" if ratio < 0.95 else "no faster than"
            how = f" ({_way_words(r['way'], int(r['devices']))})" if g["way"].nunique() > 1 else ""
            said.append(f"{int(r['devices'])} GPUs{how} {words} one "
                        f"({marked(rounded(base['samples/s'], int(base['digits'])), base['marks'])} → "
                        f"{marked(rounded(r['samples/s'], int(r['digits'])), r['marks'])} samples/s)")
    return "".join(f"; {t}" for t in dict.fromkeys(said))


def _way_words(w: str, n: int) -> str:
    bn = BN_PER_DEVICE if w.endswith(BN_PER_DEVICE) else ""
    w = w[:len(w) - len(bn)]
    if n <= 1:
        return "one GPU"
    if w == ONE_PROCESS:
        return f"one process driving {n} GPUs{bn}"
    return (PER_GPU if w == way(1, n) else w) + bn


def _kind(w: str) -> str:
    """A way whatever the GPU count: ``ONE_PROCESS``, ``PER_GPU`` or the way itself ('2 processes x 2 GPUs')."""
    bn = BN_PER_DEVICE if w.endswith(BN_PER_DEVICE) else ""
    return (PER_GPU if re.fullmatch(r"\d+ processes x 1 GPU", w[:len(w) - len(bn)]) else w[:len(w) - len(bn)]) + bn


def eff_shown(v) -> str:
    """An efficiency as the report shows it everywhere: '0.84'."""
    return "" if isnull(v) else f"{v:.2f}"


def range_shown(r, fmt=num) -> str:
    """A (low, high) over the runs: '0.77-0.92', '4,191-4,451'; '' for none or where both ends read alike."""
    if not r or isnull(r[0]):
        return ""
    lo, hi = fmt(r[0]), fmt(r[1])
    return "" if lo == hi else f"{lo}-{hi}"


def scaling_table(ctx):
    """``device_scaling`` of a report context's configurations that learned (its costed rows where all have one)."""
    c = ctx.costed if getattr(ctx, "costed", None) is not None and len(ctx.costed) == len(ctx.summary) else ctx.summary
    return device_scaling(learned(c))


def leads(ctx) -> bool:
    """Whether the report leads with the scaling answer: no CPU/GPU pair to compare (``best.best_over_best``) and
    records of one configuration on several GPU counts."""
    from helpers.report.derive.best import best_over_best

    c = ctx.costed
    if c is None or c.empty or not c["samples_per_s"].notna().any() or len(best_over_best(c)):
        return False
    t = scaling_table(ctx)
    return t is not None and t["devices"].nunique() > 1


def _lines(g):
    """The chart's lines of one workload: per backend, precision and input path, and, where its devices were driven
    both ways, per way whatever the GPU count (``_kind``; each line starting from the one-device point); the way is
    None where there is one."""
    for (be, prec, inp, on), h in g.groupby(["backend", "precision", "input", "data on"], sort=True):
        kinds = [_kind(w) for w in h["way"]]
        ways = sorted({k for k, n in zip(kinds, h["devices"]) if n > 1}, key=lambda w: (w != ONE_PROCESS, w))
        if len(ways) <= 1:
            yield (be, prec, inp, on, None), h
            continue
        for w in ways:
            yield (be, prec, inp, on, w), h[[n == 1 or k == w for n, k in zip(h["devices"], kinds)]]
