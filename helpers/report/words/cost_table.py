"""The cost section's tables in words: training time and cost relative to a base configuration (``relative_table``),
a row's price profile as it reads (``profile_text``), and the price sets' sources (``price_sources``)."""

from __future__ import annotations

from helpers.report.derive.costs import pick_base
from helpers.report.load import columns as C
from helpers.report.load.prices import profile_era
from helpers.report.load.values import isnull
from helpers.report.words.fmt import spread_text


def profile_text(name, label=None) -> str:
    """How a row's profile reads in a table: its name, what the match means (``label``), or "no price"."""
    if isnull(name) or not name:
        return "no price"
    return f"{name} ({label})" if label and not isnull(label) else str(name)


def relative_table(costed, base_config: dict):
    """Training time and cost per sample relative to the base configuration (per workload), as seed 002
    charts them: ``time × base`` = base samples/s ÷ samples/s; cost likewise per 1,000 samples."""
    import pandas as pd

    rows, missing = [], []
    for wl, g in costed.groupby("workload", sort=True):
        base = pick_base(g, base_config)
        if base is None:  # fall back to the fastest CPU configuration (every machine has a CPU), and say so
            missing.append(wl)
            base = pick_base(g, {"device": "cpu"})
            if base is None:
                base = g.loc[g[C.SAMPLES_PER_S].idxmin()]
        for _, r in g.sort_values(C.SAMPLES_PER_S, ascending=False).iterrows():
            rows.append({
                "workload": wl, "machine": r["machine"], "device · backend": r["config"], "batch": r["batch_size"],
                "precision": r.get("precision"), "jit": r.get("jit_compile"),
                "threads": "all" if r["threads"] == 0 else r["threads"],
                "base": "◀ base" if r.name == base.name else "",
                "samples/s [IQR]": spread_text(r[C.SAMPLES_PER_S], r["sps_q1"], r["sps_q3"]),
                "s per source epoch": r["source_epoch_s"],
                "time × base": base[C.SAMPLES_PER_S] / r[C.SAMPLES_PER_S],
                "profile": profile_text(r["profile"], r.get("profile_label")),
                "$/1k samples on-demand": r["on_demand_per_1k"], "$/1k samples preemptible": r["preemptible_per_1k"],
                "$/source epoch on-demand": r["on_demand_per_source_epoch"],
                "$/source epoch preemptible": r["preemptible_per_source_epoch"],
                "cost × base (on-demand)": r["on_demand_per_1k"] / base["on_demand_per_1k"],
                "cost × base (preemptible)": r["preemptible_per_1k"] / base["preemptible_per_1k"],
            })
    return pd.DataFrame(rows), missing


def price_sources(prices: dict, used: set):
    """The price set's profiles (``prices["profiles"]``) with their prices, sources and dates."""
    import pandas as pd

    rows = []
    for name, p in (prices.get("profiles") or {}).items():
        p = p or {}
        rows.append({"profile": name, "used here": "yes" if name in used else "", "description": p.get("description"),
                     "on-demand $/h": p.get("on_demand_per_hour"), "preemptible $/h": p.get("preemptible_per_hour"),
                     "era": profile_era(p) or "any", "source": p.get("source"), "date": p.get("date"),
                     "read": p.get("read"), "as of": p.get("as_of"), "note": p.get("note")})
    return pd.DataFrame(rows)
