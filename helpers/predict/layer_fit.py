"""The layer-by-layer step model's fit (``helpers.predict.layers``): the measurements' features rebuilt from Keras,
the workloads held out one at a time, each kind's profile held out in turn, and the committed fit they make
(``benchmarks/predict_check.py --write`` writes it; ``helpers.predict.layers.predicted`` reads it).

    feats = measured_layers(rows), measured_models(rows)     # Keras, on the CPU (minutes)
    fit = build_fit(feats_layers, feats_models, "NVIDIA H200", provenance)
"""

from __future__ import annotations

import math

from .layers import (
    FEATURES,
    LEVEL,
    STEP_TERMS,
    fit_profiles,
    fit_steps,
    input_bytes,
    layer_rows,
    predict_step,
    quantiles,
)


def measured_layers(rows: list[dict]) -> list[dict]:
    """Each profile measurement (``benchmarks/layer_profile.py layers``) with its layer's features, the one-layer
    model rebuilt from its sweep entry."""
    import keras

    from helpers.predict import sweep

    out = []
    for r in rows:
        if "error" in r or r.get("what") != "layer":
            continue
        keras.backend.clear_session()
        mine = [x for x in layer_rows(sweep.build(r["spec"]), r["batch"]) if x["kind"] == r["kind"]]
        out.append({**mine[0], "key": r["key"], "backend": r["backend"], "precision": r["precision"],
                    "step_s": float(r["step_s"])})
    return out


def model_of(r: dict):
    """The built model a whole-model measurement timed: a zoo entry, a host probe, or a workload at its recorded
    knobs."""
    from helpers.predict import zoo
    from helpers.workloads import build_model

    if r["set"] == "zoo":
        return zoo.build(r["name"])[0]
    if r["set"] == "probe":
        return zoo.probe(r["params"]["shape"])[0]
    return build_model(r["name"], {**r["params"], "backend": "jax"})


def measured_models(rows: list[dict]) -> list[dict]:
    """Each whole-model measurement (``benchmarks/layer_profile.py models``) with its layers' features."""
    import keras

    out = []
    for r in rows:
        if "error" in r or r.get("what") != "model":
            continue
        keras.backend.clear_session()
        m = model_of(r)
        out.append({"set": r["set"], "name": r["name"], "backend": r["backend"], "precision": r["precision"],
                    "batch": int(r["batch"]), "step_s": float(r["step_s"]), "runs": [x["step_s"] for x in r["runs"]],
                    "in_bytes": input_bytes(m, int(r["batch"])), "rows": layer_rows(m, int(r["batch"]))})
    return out


def leave_one_out(models: list[dict], prof: dict, probes: list[dict]) -> list[dict]:
    """Each workload left out in turn: the per-step constants fitted on the others and the host ``probes``, its
    cells predicted. Each row: the cell, measured and predicted step, and ``log_err`` = log(measured / predicted
    step)."""
    out = []
    for wl in sorted({m["name"] for m in models}):
        steps = fit_steps([m for m in models if m["name"] != wl] + probes, prof)
        for m in models:
            if m["name"] == wl and m["backend"] in steps:
                p = predict_step(prof, steps, m["rows"], m["backend"], m["precision"], m["in_bytes"])["step_s"]
                out.append({**_cell(m), "predicted_s": p, "log_err": math.log(m["step_s"] / p)})
    return out


def held_out_kinds(meas: list[dict], models: list[dict], gpu: str, probes: list[dict]) -> list[dict]:
    """Each kind the workloads hold, its profile left out in turn (fitted on nothing, read from the generic profile
    fitted without it), each workload holding it predicted with the per-step constants fitted on the other
    workloads: the errors an unprofiled kind earns, held out as the workloads' own are."""
    out = []
    kinds = sorted({r["kind"] for m in models for r in m["rows"]} & {x["kind"] for x in meas})
    for k in kinds:
        prof = fit_profiles(meas, gpu, leave_out=k)
        for wl in sorted({m["name"] for m in models if any(r["kind"] == k for r in m["rows"])}):
            steps = fit_steps([m for m in models if m["name"] != wl] + probes, prof)
            for m in models:
                if m["name"] == wl and m["backend"] in steps:
                    p = predict_step(prof, steps, m["rows"], m["backend"], m["precision"], m["in_bytes"])["step_s"]
                    out.append({**_cell(m), "kind_left_out": k, "predicted_s": p,
                                "log_err": math.log(m["step_s"] / p)})
    return out


def _cell(m: dict) -> dict:
    return {k: m[k] for k in ("set", "name", "backend", "precision", "batch", "step_s")}


def build_fit(meas: list[dict], models: list[dict], gpu: str, provenance: dict) -> dict:
    """The profiles, the per-step constants and the intervals, fitted on ``meas``, the workloads of ``models`` and
    its host probes (the zoo's rows are never read here)."""
    work = [m for m in models if m["set"] == "workload"]
    probes = [m for m in models if m["set"] == "probe"]
    prof = fit_profiles(meas, gpu)
    loo = leave_one_out(work, prof, probes)
    kinds = held_out_kinds(meas, work, gpu, probes)
    return {"gpu": gpu, "level": LEVEL, "features": list(FEATURES),
            "profiles": {"|".join(k): v for k, v in sorted(prof.items())},
            "steps": fit_steps(work + probes, prof), "step_terms": list(STEP_TERMS),
            # the workloads' held-out errors pooled over the backends: 8 workloads give each backend 15-16, whose 10th
            # and 90th percentiles with the finite-sample correction are their extremes (the 96th); pooled, 31
            "log_q": {b: quantiles([r["log_err"] for r in loo]) for b in sorted({r["backend"] for r in loo})},
            "log_q_per_backend": {b: quantiles([r["log_err"] for r in loo if r["backend"] == b])
                                  for b in sorted({r["backend"] for r in loo})},
            "kind_log_q": quantiles([r["log_err"] for r in kinds]),
            "held_out": {"workloads": loo, "kinds": kinds}, "provenance": provenance,
            "fitted_on": sorted({m["name"] for m in work}), "probes": sorted({m["name"] for m in probes})}
