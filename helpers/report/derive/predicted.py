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
from helpers.report.words.fmt import sps_shown
from helpers.report.words.headline import backend_name

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
            shown = sps_shown(pair, "_gpu") if measured is not None else ""  # the verdict's own string of it
            rows.append({"workload": wl, "backend": backend, "batch": f["batch"], "precision": f["precision"],
                         "cpu_samples_per_s": cpu_sps, "gpu_predicted": p[C.SAMPLES_PER_S],
                         "gpu_predicted_low": p["samples_per_s_low"], "gpu_predicted_high": p["samples_per_s_high"],
                         "speedup_predicted": p[C.SAMPLES_PER_S] / cpu_sps,
                         "speedup_predicted_low": p["samples_per_s_low"] / cpu_sps,
                         "speedup_predicted_high": p["samples_per_s_high"] / cpu_sps,
                         "gpu_measured": measured, "gpu_measured_shown": shown, "measured_gpu": pair is not None,
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


def interval_text(lo, hi) -> str:
    from helpers.report.words.fmt import rounded

    return f"{rounded(lo, 2)}–{rounded(hi, 2)}"


def _epoch_text(r) -> str:
    """'; an epoch of 512 samples 0.0052 s, $0.0000066': the predicted epoch and its price, where known."""
    from helpers.report.words.fmt import rounded

    n, sps = r.get("epoch_samples"), r["gpu_predicted"]
    if not n or n != n:
        return ""
    secs = n / sps
    price = r.get("gpu_price_per_hour")
    cost = f", ${rounded(secs * price / 3600, 2)}" if price and price == price else ""
    return f"; an epoch of {int(n):,} samples {rounded(secs, 2)} s{cost}"


def sentence(g) -> str:
    """One workload predicted, not measured on a GPU: each backend's samples/s with its interval and the speedup."""
    from helpers.predict import layers
    from helpers.report.words.fmt import rounded

    r0 = g.iloc[0]
    parts = [f"{backend_name(r['backend'])} {rounded(r['gpu_predicted'], 2)} samples/s "
             f"(80% interval {interval_text(r['gpu_predicted_low'], r['gpu_predicted_high'])}; "
             f"{rounded(r['speedup_predicted'], 2)}× the CPU's {rounded(r['cpu_samples_per_s'], 3)}, "
             f"{interval_text(r['speedup_predicted_low'], r['speedup_predicted_high'])}×{_epoch_text(r)})"
             for r in g.to_dict("records")]
    how = ("layer by layer from its profiles" if r0["method"] == "layers"
           else "the bundled reference's GPU, a whole-model fit")
    share = layers.share_text(r0["unprofiled_share"])
    unp = f" Unprofiled: {r0['unprofiled']} ({share} of the step; the interval widened)" if r0["unprofiled"] else ""
    return (f"{r0['workload']}, batch {r0['batch']}, {r0['precision']}: predicted, not measured, on one {r0['gpu']} "
            f"({how}): " + "; ".join(parts) + "." + unp)


def add_to(s, ctx) -> None:
    """The verdict's predicted figures: a sentence per workload no GPU measured, the model's provenance once, and a
    folded table setting predictions beside the measured GPU sides."""
    from helpers.predict import gpu
    from helpers.report.words.fmt import esc, html_table, rounded

    t, why = ctx.predicted
    if not len(t):
        if why:
            s.note("No predicted GPU figure: {}.", why)
        return
    alone = t[~t["measured_gpu"]]
    if len(alone):
        s.html('<ul class="cgb-predicted">' + "".join(f"<li>{esc(sentence(g))}</li>" for _, g in alone.groupby(
            ["workload", "gpu"], sort=True)) + "</ul>")
    for _, g in t.groupby("gpu", sort=True):
        r0 = g.iloc[0]
        if r0["method"] == "layers":
            s.note("On the {}: each layer's time read from its kind's profile measured on that GPU, summed, the "
                   "backend's per-step cost fitted on the workloads ({}); on 14 models of layer kinds the workloads "
                   "lack it ran {} off the measured samples/s (median) and its 80% interval held {} of them "
                   "(benchmarks/predict_check.py, docs/custom_model.md).", r0["gpu"], r0["fitted_on"],
                   f"{r0['held_out_median_error']:.0%}", f"{r0['held_out_coverage']:.0%}")
        else:
            s.note("On the {}: a model of one training step fitted on the bundled reference's records ({}: "
                   "docs/custom_model.md); each workload held out in turn, it ran {} off the measured samples/s "
                   "(median) and its 80% interval held {} of the cells (benchmarks/predict_check_whole.py). Trust it "
                   "least for layer kinds the reference never ran and for input pipelines that read files.",
                   r0["gpu"], r0["fitted_on"], f"{r0['held_out_median_error']:.0%}",
                   f"{r0['held_out_coverage']:.0%}")
    both = t[t["gpu_measured"].notna()]
    if len(both):
        import pandas as pd

        rows = pd.DataFrame({
            "workload": both["workload"], "GPU": both["gpu"], "GPU backend": [backend_name(b) for b in both["backend"]],
            "batch": both["batch"], "measured samples/s": list(both["gpu_measured_shown"]),
            "predicted samples/s (80% interval)": [f"{rounded(p, 2)} ({interval_text(lo, hi)})" for p, lo, hi in zip(
                both["gpu_predicted"], both["gpu_predicted_low"], both["gpu_predicted_high"])],
            "predicted ÷ measured": [rounded(p / m, 2) for p, m in zip(both["gpu_predicted"], both["gpu_measured"])],
            "note": ["its input batched from files on the host: outside what the model describes (not fitted on)"
                     if w in gpu.HOST_PIPELINE else "" for w in both["workload"]]})
        s.details(f"Predicted beside measured: the verdict's GPU sides, {len(rows)} workload(s) (click to open)",
                  html_table(rows))


def _configs(g) -> str:
    """A side's configurations in words: 'batch 8, image_size=32' (distinct, at most three)."""
    seen = []
    for b, p, k in zip(g["batch_size"], g["precision"], g["knobs"]):
        text = ", ".join(filter(None, [f"batch {int(b)}" if b == b else "", "" if p == "float32" else str(p),
                                       str(k or "")]))
        if text not in seen:
            seen.append(text)
    return "; ".join(seen[:3]) + (f" and {len(seen) - 3} more" if len(seen) > 3 else "")


def unpaired(costed, rows) -> list[str]:
    """Every workload of the inputs that the verdict leaves out, named with the reason: no GPU run, no CPU run, or
    no configuration (batch, precision, knobs) measured on both sides, each side's configurations said."""
    c = costed[costed[C.SAMPLES_PER_S].notna()]
    have = set(rows["workload"]) if len(rows) else set()
    out = []
    for wl, g in c.groupby("workload", sort=True):
        if wl in have:
            continue
        cpu, gpu_side = g[g["device"] == "cpu"], g[g["device"] == "gpu"]
        bad = [d.upper() for d, side in (("cpu", cpu), ("gpu", gpu_side))
               if len(side) and "learned" in side and (side["learned"] == "no").all()]
        if bad:  # helpers.report.derive.learning: no side to take
            out.append(f"{wl} (did not learn on the {' and '.join(bad)} side)")
        elif not len(gpu_side):
            out.append(f"{wl} (no GPU run)")
        elif not len(cpu):
            out.append(f"{wl} (no CPU run)")
        else:
            out.append(f"{wl} (no configuration measured on both: the CPU at {_configs(cpu)}; the GPU at "
                       f"{_configs(gpu_side)})")
    return out
