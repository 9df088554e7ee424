"""Published figures: what the source documents reported (data/published_figures.csv), in samples/s.

    pub = load_published()                 # one row per published figure, with its source and file/line
    thr = published_throughput(pub)        # samples/s, derived from s/epoch where n_train is known
    vs = versus_published(summ, pub)       # your configurations beside the published ones
"""

from __future__ import annotations

import csv
from pathlib import Path

from ..paths import PROJECT_ROOT

PUBLISHED = PROJECT_ROOT / "data" / "published_figures.csv"
_COLUMNS = ["source", "ref", "workload", "hardware", "device", "metric", "value"]


def load_published(path: Path | str | None = None):
    """The figures the source documents published, one row per figure (numbers parsed)."""
    import pandas as pd

    path = Path(path) if path else PUBLISHED
    if not path.is_file():
        return pd.DataFrame(columns=_COLUMNS)
    with path.open(newline="") as f:
        df = pd.DataFrame(list(csv.DictReader(f)))
    for c in ("value", "low", "high", "batch_size", "n_train", "workers", "threads"):
        if c in df.columns:
            df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def published_throughput(pub):
    """Published samples/s per (source, hardware, workload, variant), derived from s/epoch when needed."""
    import pandas as pd

    if pub.empty:
        return pd.DataFrame()
    keys = ["source", "hardware", "device", "workload", "variant", "batch_size", "augment", "workers"]
    sps = pub[pub["metric"] == "samples_per_s"].copy()
    have = set(map(tuple, sps[keys].astype(str).values))
    spe = pub[(pub["metric"] == "s_per_epoch") & pub["n_train"].notna()].copy()
    spe = spe[[tuple(r) not in have for r in spe[keys].astype(str).values]]
    if len(spe):
        spe["value"], spe["low"], spe["high"] = (spe["n_train"] / spe["value"], spe["n_train"] / spe["high"],
                                                 spe["n_train"] / spe["low"])
        spe["metric"] = "samples_per_s"
    return pd.concat([sps, spe], ignore_index=True)


def versus_published(summ, pub):
    """Your configurations beside the published ones, per workload: samples/s with its range (table)."""
    import pandas as pd

    rows = []
    thr = published_throughput(pub)
    if not summ.empty and not thr.empty:
        thr = thr[thr["workload"].isin(set(summ["workload"]))]
    for _, p in thr.iterrows():
        rows.append({"workload": p["workload"], "who": "published", "hardware / configuration": p["hardware"],
                     "device": p["device"], "framework": p.get("framework"), "batch": p.get("batch_size"),
                     "samples/s": p["value"], "low": p.get("low"), "high": p.get("high"),
                     "source": f"{p['source']}: {p['ref']}"})
    for _, s in summ.iterrows():
        if s["workload"] not in set(pub.get("workload", [])):
            continue
        rows.append({"workload": s["workload"], "who": "you" + (" (fixture)" if s["fixture"] else ""),
                     "hardware / configuration": f"{s['machine']} · {s['backend']}", "device": s["device"],
                     "framework": f"Keras 3 / {s['backend']}", "batch": s["batch_size"],
                     "samples/s": s["samples_per_s"], "low": s["sps_q1"], "high": s["sps_q3"],
                     "source": f"your records ({s['n_runs']} run(s), data: {s['data_source']})"})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    return out.sort_values(["workload", "who", "samples/s"], ascending=[True, False, False]).reset_index(drop=True)
