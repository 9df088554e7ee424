"""At a glance: one row per workload a reader can act on (best CPU, best GPU, matched speedup, cost, energy)."""

from __future__ import annotations

from ..aggregate import describe, varying_knobs
from ..fmt import MARKS_NOTE, digits, figure, isnull, rounded, shown, speedup_text
from ..reference import all_pairs, is_reference, speedup_label
from .base import Section

TITLE = "At a glance: a verdict per workload"
LEAD = ("Per workload: the fastest CPU and GPU configurations (named in full), the GPU's speedup over the CPU "
        "for the same configuration (same machine, backend, batch, precision and knobs; per sample; the fastest "
        "such pair), and what one epoch of the source's full dataset costs in time, money and energy on each "
        "side.")


def _money(v, b) -> str:
    return "" if isnull(v) else f"${rounded(v, digits(b))}"


def _side(row: dict, dev: str, b, knobs: set) -> None:
    d = dev.upper()
    row[f"best {d}"] = describe(b, knobs)
    row[f"{d} samples/s"] = figure(b)
    mfu = b.get("mfu")  # how far from the limit (issue 15): achieved ÷ peak, the limit section says why when empty
    row[f"{d} MFU"] = (f"{mfu * 100:.2g}%" if not isnull(mfu) else
                       "peak unknown" if not isnull(b.get("achieved_tflops")) else "not counted")
    row[f"{d} s/source epoch"] = shown(b["source_epoch_s"], b)
    od, pre = b.get("on_demand_per_source_epoch"), b.get("preemptible_per_source_epoch")
    row[f"{d} $/source epoch (on-demand · spot)"] = "no price" if isnull(od) and isnull(pre) else \
        f"{_money(od, b)} · {_money(pre, b)}"
    e = b.get("energy_j_per_epoch")
    if not isnull(e) and b["n_train"]:
        row[f"{d} energy/source epoch"] = shown(e / b["n_train"] * b["source_samples"], b, unit=" J")
    else:
        row[f"{d} energy/source epoch"] = "not measured"


def verdict_table(c):
    import pandas as pd

    pairs = all_pairs(c)
    rows = []
    for wl, g in c[c["samples_per_s"].notna()].groupby("workload", sort=True):
        knobs = varying_knobs(g)
        row = {"workload": wl}
        best = {}
        for dev in ("cpu", "gpu"):
            d = g[g["device"] == dev]
            if len(d):
                best[dev] = d.loc[d["samples_per_s"].idxmax()]
                _side(row, dev, best[dev], knobs)
        p = pairs[pairs["workload"] == wl] if len(pairs) else pairs
        if len(p):
            p = p.loc[p["samples_per_s_gpu"].idxmax()]
            row["speedup × (matched)"] = (speedup_label(p) + ": " if speedup_label(p) else "") + speedup_text(p)
            gpu_side = pd.Series({k.removesuffix("_gpu"): v for k, v in p.items() if not k.endswith("_cpu")})
            gpu_side["machine"] = p["gpu_machine"]
            row["matched pair (GPU side; CPU: same on its CPU)"] = describe(gpu_side, knobs)
        elif len(best) == 2:
            row["speedup × (matched)"] = "no matched pair"
        if len(best) == 2:
            ratio = best["gpu"]["samples_per_s"] / best["cpu"]["samples_per_s"]
            row["best GPU ÷ best CPU (not matched)"] = rounded(ratio, min(digits(best["gpu"]), digits(best["cpu"])))
        row["data"] = ", ".join(sorted(g["data_source"].dropna().astype(str).unique()))
        rows.append(row)
    cols = ["workload", "best CPU", "CPU samples/s", "CPU MFU", "best GPU", "GPU samples/s", "GPU MFU",
            "speedup × (matched)",
            "matched pair (GPU side; CPU: same on its CPU)", "best GPU ÷ best CPU (not matched)", "CPU s/source epoch",
            "GPU s/source epoch", "CPU $/source epoch (on-demand · spot)", "GPU $/source epoch (on-demand · spot)",
            "GPU energy/source epoch", "data"]
    return pd.DataFrame(rows).reindex(columns=cols)


def build(ctx) -> Section:
    c = ctx.costed
    if c.empty or not c["samples_per_s"].notna().any():
        return Section.absent(__name__, "no successful run in these records.")
    s = Section.of(__name__)
    s.table(verdict_table(c))
    s.note("samples/s: the median over a configuration's runs of each run's steady-state samples/s, with its "
           "between-run interval in brackets; {} A source epoch is one pass over the source's full dataset (sizes "
           "under the throughput section), derived from samples/s, so points that trained on fewer samples compare. "
           "MFU: achieved TFLOP/s ÷ the device's peak for the precision used (\"How far from the limit\" says how, "
           "and why one is empty). Cost: the whole machine's price per hour (params/prices.yaml). Energy: GPU board "
           "energy; the CPU's is not measured.", MARKS_NOTE)
    if "gpu" not in set(c["device"].dropna()):
        s.note("No GPU configuration ran successfully here: the GPU columns are empty.", kind="warn")
    elif all(is_reference(m) for m in c[c["device"] == "gpu"]["machine"]):
        s.note("<b>The GPU columns are another machine's</b>: the bundled reference run (its name and date in each "
               "GPU cell), at the configurations your CPU ran; the speedup is your CPU → that GPU, per sample.",
               kind="warn")
    return s
