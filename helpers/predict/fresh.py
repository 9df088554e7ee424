"""The fresh set's out-of-sample check of the layer-by-layer step model (``helpers.predict.zoo.FRESH``): models that
entered neither a fit nor the choice of the step's formula, predicted from the committed fit *before* they were
measured, then measured on the GPU and compared.

    preds = predictions(fit, fit_sha)          # Keras on the CPU: each model's layer features, each cell's prediction
    rows, summary = check(fit, preds, measured)   # measured: benchmarks/layer_profile.py models --set fresh rows

``data/layer_profiles/SLUG_fresh_predictions.json`` holds the predictions as committed before the measurement
(``benchmarks/predict_check.py --fresh-predict`` wrote it), ``SLUG_fresh.jsonl`` the measurements.
"""

from __future__ import annotations

import math
import statistics

from .layers import input_bytes, layer_rows, predicted

PRECISION = "float32"


def features() -> list[dict]:
    """Each fresh model at each of its batches: its layer features and host bytes a batch, from Keras (the CPU)."""
    import keras

    from helpers.predict import zoo

    out = []
    for name in zoo.FRESH:
        keras.backend.clear_session()
        model, _, _, batches = zoo.build_fresh(name)
        for batch in batches:
            out.append({"name": name, "batch": int(batch), "in_bytes": input_bytes(model, batch),
                        "rows": layer_rows(model, batch)})
    return out


def predict_cells(fit: dict, models: list[dict]) -> list[dict]:
    """Each (model, batch) of ``models`` on each backend the fit holds: the predicted samples/s and its interval."""
    out = []
    for m in models:
        for b in sorted(fit["steps"]):
            p = predicted(fit, m["rows"], b, PRECISION, m["batch"], m["in_bytes"])
            out.append({"name": m["name"], "backend": b, "precision": PRECISION, "batch": m["batch"],
                        "predicted_sps": p["samples_per_s"], "low_sps": p["samples_per_s_low"],
                        "high_sps": p["samples_per_s_high"], "unprofiled": sorted(p["unprofiled"]),
                        "unprofiled_share": p["unprofiled_share"]})
    return out


def predictions(fit: dict, fit_sha: str) -> dict:
    """What is committed before measuring: the fit it rests on (its file's sha256), the features, the cells."""
    models = features()
    return {"gpu": fit["gpu"], "level": fit["level"], "fit_sha256": fit_sha, "models": models,
            "cells": predict_cells(fit, models)}


def check(fit: dict, preds: dict, measured: list[dict]) -> tuple[list[dict], dict]:
    """(rows, summary): each pre-registered cell with its measurement (``measured``: rows of ``set`` 'fresh'),
    re-predicted from ``fit`` and the committed features; the median |error|, the interval's coverage and the worst
    cell, over all the cells measured and per backend."""
    by = {(r["name"], r["backend"], r["precision"], int(r["batch"])): r for r in measured
          if r.get("set") == "fresh" and "error" not in r}
    models = {(m["name"], m["batch"]): m for m in preds["models"]}
    rows = []
    for c in preds["cells"]:
        r = by.get((c["name"], c["backend"], c["precision"], c["batch"]))
        if r is None:
            continue
        m = models[(c["name"], c["batch"])]
        p = predicted(fit, m["rows"], c["backend"], c["precision"], c["batch"], m["in_bytes"])
        meas = c["batch"] / float(r["step_s"])
        rows.append({**c, "measured_sps": meas, "predicted_sps": p["samples_per_s"], "low_sps": p["samples_per_s_low"],
                     "high_sps": p["samples_per_s_high"], "error": p["samples_per_s"] / meas - 1,
                     "inside": p["samples_per_s_low"] <= meas <= p["samples_per_s_high"]})
    return rows, summary(rows)


def summary(rows: list[dict]) -> dict:
    def one(rs):
        if not rs:
            return {"cells": 0}
        worst = max(rs, key=lambda r: abs(math.log(r["predicted_sps"] / r["measured_sps"])))
        return {"cells": len(rs), "median_abs_error": statistics.median(abs(r["error"]) for r in rs),
                "inside": sum(r["inside"] for r in rs), "coverage": sum(r["inside"] for r in rs) / len(rs),
                "worst": {k: worst[k] for k in ("name", "backend", "batch", "error")}}

    return {"all": one(rows), **{b: one([r for r in rows if r["backend"] == b])
                                 for b in sorted({r["backend"] for r in rows})}}
