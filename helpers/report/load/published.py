"""Published figures: what the source documents reported (data/published_figures.csv), beside yours, like with like.

    pub = load_published()                 # one row per published figure, with its source and file/line
    thr = published_throughput(pub)        # samples/s, derived from s/epoch where the epoch's size is known
    cov = coverage(pub)                    # every CSV row: where the report shows it, or why it cannot
    anchors = published_devices(pub, wls)  # figures with a GPU count (1x..8x H100), the scaling section's anchors

Beside your figures, like with like (``helpers.report.words.published_match``: versus_published, other_figures).
Like with like: a published epoch that includes validation (seed 002's callback times on_epoch_begin ->
on_epoch_end; seed 001's progress line) is set beside your epoch *with* its validation (training part +
``val_s``), one without beside your training part. Your figure is taken from a configuration of the same
workload, device and variant (the CSV's ``variant`` holds the suite's knobs, ``variant=improved`` or
``lstm_impl=generic``; text without ``=`` names a network the suite does not build). Each row says what its
epoch includes, and whether the pair is like with like and if not, why.
"""

from __future__ import annotations

import csv
import functools
import math
import re
from pathlib import Path

from helpers.paths import PROJECT_ROOT
from helpers.report.load import columns as C

PUBLISHED = PROJECT_ROOT / "data" / "published_figures.csv"
_COLUMNS = ["source", "ref", "workload", "variant", "hardware", "device", "framework", "price_profile", "metric",
            "value", "low", "high", "spread", "batch_size", "n_train", "workers", "augment", "threads", "validation",
            "epoch_includes", "inferred", "note"]
_TEXT = ("variant", "augment", "validation", "epoch_includes", "inferred", "note", "framework", "price_profile")

# What an epoch of the published figure includes (the CSV's ``validation``), as the report says it.
EPOCH = {"in": "training + validation", "out": "training only", "not stated": "validation not stated",
         "n/a": "not an epoch figure", "": "not stated"}
# Metrics shown in the "other figures" table, and how they read.
OTHER = {"first_epoch_s": "first epoch, s", "total_s": "whole run, s", "s_per_step": "s per step",
         "cpu_pct": "CPU % (mean)", "cpu_pct_max": "CPU % (peak)", "gpu_pct": "GPU % (mean)",
         "gpu_pct_max": "GPU % (peak)", "gpu_mem_mb": "GPU memory, MB", "gpu_speedup": "GPU / CPU images/s",
         "tuning_speedup": "workers 4 + batch 64 over workers 1 + batch 32",
         "relative_to_original": "images/s over the original network's"}
THROUGHPUT = (C.SAMPLES_PER_S, "s_per_epoch")
# What the suite guessed where a source is silent: shown as inferred in the grid, the notebooks and the report.
INFERRED = (
    "seed 001: the batch of 64 (from 153 steps per epoch of ~10k images), the Adam optimiser and the augmentation "
    "settings (rotation 25, shifts 0.1, shear 0.2, zoom 0.2, flip: the tutorial its layer table comes from) are "
    "inferred; the post names none of them",
    "seed 003: its 'extremely simple network' on MNIST is taken to be mlp_mnist (the post does not show it)",
    "seed 004: its CIFAR-10 network is taken to be TensorFlow's CIFAR-10 tutorial model (its log prints "
    "examples/sec, default batch 128), not vgg_cifar10's network: only the batch-size trend compares",
)
# Seed 004 names JPEG reading and decoding as its bottleneck; synthetic images skip it.
SYNTHETIC_IMAGES = (
    "Synthetic images skip reading and JPEG decoding, which seed 004 names as its bottleneck (\"the input pipeline "
    "(e.g., reading, decompress, and augmenting the images)\", 004_0e48492da3711cae.txt line 33): a catsdogs or "
    "cnn_256 run on synthetic data measures the generator's augmentation and the model, not the decoding; "
    "give data_dir (the JPEG folders) to include it.")


def gpu_count(p) -> int | None:
    """How many GPUs a published GPU figure used, from its hardware ("8x NVIDIA H100", "2× H200"); None for a CPU
    row (its "2x Xeon" are sockets) or hardware that names no count."""
    if str(p.get("device")) != "gpu":
        return None
    m = re.search(r"(?<![\w.])(\d+)\s*[x\u00d7]\s", str(p.get("hardware") or ""))
    return int(m.group(1)) if m else None


def load_published(path: Path | str | None = None):
    """The figures the source documents published, one row per figure (numbers parsed; ``row``: its CSV line)."""
    import pandas as pd

    path = Path(path) if path else PUBLISHED
    if not path.is_file():
        return pd.DataFrame(columns=_COLUMNS + ["row"])
    with path.open(newline="") as f:
        df = pd.DataFrame(list(csv.DictReader(f)))
    for c in _COLUMNS:
        if c not in df.columns:
            df[c] = ""
    for c in _TEXT:
        df[c] = df[c].fillna("").astype(str)
    for c in ("value", "low", "high", "batch_size", "n_train", "workers", "threads"):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    df["row"] = range(2, len(df) + 2)  # the line in the CSV (line 1 is the header)
    return df


def epoch_sizes(path: Path | str | None = None) -> dict:
    """workload -> (samples in one epoch of the source's dataset, inferred?): ``source_epochs`` as a pair."""
    return {w: (e["samples"], e["inferred"]) for w, e in source_epochs(str(path) if path else None).items()}


def _epoch_samples(p, epochs: dict):
    """Samples in the published epoch: the row's n_train, else the source's epoch (data/source_epochs.csv)."""
    if p["n_train"] == p["n_train"]:  # not NaN
        return float(p["n_train"]), bool(p.get("inferred"))
    n, inferred = epochs.get(p["workload"], (None, False))
    return (float(n), inferred) if n else (None, False)


def _key(df):
    keys = ["source", "hardware", "device", "framework", "workload", "variant", "batch_size", "augment", "workers",
            "threads"]
    return [tuple(r) for r in df[keys].astype(str).values]


def published_throughput(pub, epochs: dict | None = None):
    """Published samples/s per (source, hardware, workload, variant), derived from s/epoch when needed: the
    epoch's samples come from the row's ``n_train`` or, failing that, data/source_epochs.csv (``inferred``
    says when that size is a guess)."""
    import pandas as pd

    if pub.empty:
        return pd.DataFrame(columns=list(pub.columns))
    epochs = epoch_sizes() if epochs is None else epochs
    sps = pub[pub["metric"] == C.SAMPLES_PER_S].copy()
    have = set(_key(sps))
    spe = pub[pub["metric"] == "s_per_epoch"].copy()
    spe = spe[[k not in have for k in _key(spe)]]
    rows = []
    for _, p in spe.iterrows():
        n, inferred = _epoch_samples(p, epochs)
        if not n or not p["value"] > 0:
            continue
        p = p.copy()
        p["value"], p["low"], p["high"] = n / p["value"], n / p["high"], n / p["low"]
        p["metric"], p["n_train"] = C.SAMPLES_PER_S, n
        if inferred and not p["inferred"]:
            p["inferred"] = f"samples per epoch: {epochs[p['workload']][0]:,} (data/source_epochs.csv)"
        rows.append(p)
    return pd.concat([sps, pd.DataFrame(rows)], ignore_index=True) if rows else sps.reset_index(drop=True)


def coverage(pub, workloads=None, epochs: dict | None = None):
    """Every CSV row: where the comparison section shows it (``shown``) or why it cannot (``reason``).

    ``workloads``: the suite's workload names (default: data/source_epochs.csv's)."""
    import pandas as pd

    epochs = epoch_sizes() if epochs is None else epochs
    known = set(workloads) if workloads is not None else set(epochs)
    thr_rows = set(published_throughput(pub, epochs)["row"]) if len(pub) else set()
    have = set(_key(pub[pub["metric"] == C.SAMPLES_PER_S])) if len(pub) else set()
    out = []
    for k, (_, p) in zip(_key(pub), pub.iterrows()):
        shown, reason = "", ""
        if p["workload"] not in known:
            reason = f"no suite workload '{p['workload']}'"
        elif p["metric"] == C.SAMPLES_PER_S and (gpu_count(p) or 1) > 1:
            shown = "the scaling section (published multi-GPU figures)"
        elif p["row"] in thr_rows:
            shown = "throughput (samples/s)"
        elif p["metric"] == "s_per_epoch" and k in have:
            shown = "throughput (as its samples/s row, same figure)"
        elif p["metric"] == "s_per_epoch":
            reason = "samples per epoch unknown: neither n_train nor data/source_epochs.csv gives them"
        elif p["metric"] in OTHER:
            shown = "other figures"
        else:
            reason = f"metric '{p['metric']}' has no suite counterpart"
        out.append({"row": p["row"], "source": p["source"][:3], "workload": p["workload"], "variant": p["variant"],
                    "hardware": p["hardware"], "metric": p["metric"], "value": p["value"], "shown": shown,
                    "reason": reason})
    return pd.DataFrame(out, columns=["row", "source", "workload", "variant", "hardware", "metric", "value", "shown",
                                      "reason"])


def published_devices(pub, workloads):
    """Published samples/s with a GPU count in the hardware ('8x H100'), for ``workloads``, of every family (same
    source, variant, framework) that has a figure on several GPUs; with the family's efficiency against its one-GPU
    figure. None when there is none."""
    if pub is None or len(pub) == 0 or "hardware" not in pub.columns:
        return None
    import pandas as pd

    p = pub[(pub["metric"] == C.SAMPLES_PER_S) & pub["workload"].isin(set(workloads))].copy()
    if p.empty:
        return None
    p["GPUs"] = [gpu_count(r) for r in p.to_dict("records")]
    p = p[p["GPUs"].notna()]
    rows = []
    for _, g in p.groupby(["source", "workload", "variant", "framework"], sort=True):
        if g["GPUs"].max() < 2:
            continue
        one = g[g["GPUs"] == 1]["value"]
        for r in g.sort_values("GPUs").to_dict("records"):
            n = int(r["GPUs"])
            rows.append({"workload": r["workload"], "hardware": r["hardware"], "GPUs": n,
                         "framework": r["framework"], "variant": r["variant"], "samples/s": r["value"],
                         "efficiency": r["value"] / (n * float(one.iloc[0])) if len(one) else math.nan,
                         "source": f"{r['source']}: {r['ref']}"})
    return pd.DataFrame(rows) if rows else None


SOURCE_EPOCHS = PROJECT_ROOT / "data" / "source_epochs.csv"


@functools.lru_cache(maxsize=4)
def source_epochs(path: str | None = None) -> dict[str, dict]:
    """workload -> {'samples': samples in one epoch of the source's full dataset, 'basis', 'inferred'}."""
    p = PROJECT_ROOT / path if path else SOURCE_EPOCHS
    if not p.is_file():
        return {}
    with p.open(newline="") as f:
        return {r["workload"]: {"samples": int(r["samples_per_epoch"]), "basis": r["basis"],
                                "inferred": r.get("inferred") == "yes"} for r in csv.DictReader(f)}
