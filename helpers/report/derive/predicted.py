"""Predicted GPU figures in the report: a workload measured on the CPU and on no GPU gets its predicted samples/s on
each GPU kind profiled layer by layer (``helpers.predict.layers``, from the record's ``model_layers``) and on the
bundled reference's GPU where no layer profile of it is committed (``helpers.predict.gpu``: the whole-model fit on
the reference's records), per backend, each with its 80% interval, its GPU and the mark *predicted*; a workload
measured on both sides shows its GPU side's prediction beside the measurement (of the same GPU), so a reader sees how
far off the predictions run.

    t = table(ctx)       # one row per workload x backend: CPU measured, GPU predicted (interval), GPU measured
"""

from __future__ import annotations

from helpers.report.load import columns as C

MARK = "predicted"


def _fastest_cpu(records, workload):
    """The CPU record of ``workload``'s fastest configuration (median samples/s over its runs)."""
    import statistics

    groups: dict[tuple, list] = {}
    for r in records:
        if r.get("workload") == workload and r.get("status") == "ok" and r.get("device_used") == "cpu" \
                and r.get(C.SAMPLES_PER_S):
            p = r.get("params") or {}
            key = (r.get("backend"), p.get("batch_size"), p.get("precision"), p.get("threads"), r.get("config_id"))
            groups.setdefault(key, []).append(r)
    if not groups:
        return None, None
    best = max(groups.values(), key=lambda rs: statistics.median(x[C.SAMPLES_PER_S] for x in rs))
    return best[0], statistics.median(x[C.SAMPLES_PER_S] for x in best)


def table(ctx):
    """``table_of`` the report context's records and configurations."""
    return table_of(ctx.records, ctx.costed if getattr(ctx, "costed", None) is not None else ctx.summary, ctx.best)


def table_of(records, costed, best):
    """Rows (a DataFrame, empty where nothing is predicted): workload, backend, batch, precision, the CPU's measured
    samples/s (its fastest configuration), the GPU's predicted samples/s with its interval, the predicted speedup
    with its interval, the GPU's measured samples/s where the inputs hold it (the verdict's GPU side), the GPU and
    what the model was fitted on; or where no prediction can be made, why."""
    import pandas as pd

    from helpers.predict import gpu

    try:
        fit, held = gpu.load_fit()
    except (OSError, ValueError, TypeError) as exc:
        return pd.DataFrame(), f"no fitted step model ({type(exc).__name__}: {exc})"
    paired = {}
    bob = best  # the verdict's rows (the context's ``best``)
    for r in bob.to_dict("records") if len(bob) else []:
        paired[r["workload"]] = r
    from helpers.report.derive.costs import one_gpu_price

    rows, why, prices = [], [], {}
    for wl in sorted({r.get("workload") for r in records if r.get("status") == "ok"} - {None}):
        rec, cpu_sps = _fastest_cpu(records, wl)
        if rec is None:
            continue
        pair = paired.get(wl)
        for p, f in _layer_predictions(rec, why, wl) + _whole_predictions(fit, held, rec, why, wl):
            backend = p["backend"]
            if p["gpu"] not in prices:  # params/prices.yaml read once a GPU kind, not once a row
                prices[p["gpu"]] = one_gpu_price(p["gpu"])
            same = pair is not None and pair.get("backend_gpu") == backend and pair.get("gpu_gpu") == p["gpu"]
            measured = pair.get("samples_per_s_gpu") if same else None
            rows.append({"workload": wl, "backend": backend, "batch": f["batch"], "precision": f["precision"],
                         "cpu_samples_per_s": cpu_sps, "gpu_predicted": p[C.SAMPLES_PER_S],
                         "gpu_predicted_low": p["samples_per_s_low"], "gpu_predicted_high": p["samples_per_s_high"],
                         "speedup_predicted": p[C.SAMPLES_PER_S] / cpu_sps,
                         "speedup_predicted_low": p["samples_per_s_low"] / cpu_sps,
                         "speedup_predicted_high": p["samples_per_s_high"] / cpu_sps,
                         "gpu_measured": measured, "measured_gpu": pair is not None,
                         "gpu_measured_pair": pair if measured is not None else None,  # the verdict's GPU row
                         "gpu": p["gpu"], "method": p["method"],
                         "unprofiled": ", ".join(sorted(p.get("unprofiled") or {})),
                         "unprofiled_share": p.get("unprofiled_share") or 0.0,
                         "epoch_samples": _epoch_samples(rec),
                         "gpu_price_per_hour": (prices[p["gpu"]] or (None, None))[1],
                         "mark": MARK, "interval": p["interval"], "fitted_on": p["fitted_on"],
                         "held_out_median_error": p["held_out_median_error"],
                         "held_out_coverage": p["held_out_coverage"]})
    return pd.DataFrame(rows), "; ".join(why)


def _epoch_samples(rec) -> int | None:
    """Samples an epoch of the record's run (its ``n_train``): the predicted epoch time's."""
    n = rec.get("n_train") or (rec.get("params") or {}).get("n_train")
    return int(n) if isinstance(n, (int, float)) and n > 0 else None


def _whole_predictions(fit, held, rec, why, wl):
    """The whole-model fit's predictions (the bundled reference's GPU), where no layer profile of its GPU is
    committed: [(prediction, features)] per backend."""
    from helpers.predict import gpu, layers

    if fit.gpu in {f["gpu"] for f in layers.committed_fits()}:
        return []
    out = []
    for backend in sorted(fit.a):
        f, reason = gpu.record_features(rec, backend)
        if f is None:
            why.append(f"{wl}: {reason}")
            return []
        out.append(({**gpu.predicted(fit, f), "method": "whole", "fitted_on": ", ".join(fit.workloads),
                     "held_out_median_error": held.get("median_abs_error"),
                     "held_out_coverage": held.get("coverage")}, f))
    return out


def _layer_predictions(rec, why, wl):
    """Each GPU kind profiled layer by layer (``helpers.predict.layers``), from the record's ``model_layers``:
    [(prediction, {batch, precision})] per GPU kind and backend."""
    from helpers.predict import layers

    fits = layers.committed_fits()
    rows = rec.get("model_layers")
    if not fits:
        return []
    if not rows:
        why.append(f"{wl}: no layer features in the record (written before the suite recorded them)")
        return []
    p = rec.get("params") or {}
    batch = int(p.get("batch_size") or rec.get("batch_size") or 1)
    precision = p.get("precision") or "float32"
    in_bytes = int((rec.get("model_shape") or {}).get("input_bytes") or 0) * batch
    out = []
    for fit in fits:
        for backend in sorted(fit["steps"]):
            got = layers.predicted(fit, rows, backend, precision, batch, in_bytes)
            out.append(({**got, "method": "layers", "fitted_on": ", ".join(fit["fitted_on"]),
                         "held_out_median_error": fit["summary"]["zoo_median_abs_error"],
                         "held_out_coverage": fit["summary"]["zoo_coverage"]},
                        {"batch": batch, "precision": precision}))
    return out

