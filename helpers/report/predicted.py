"""Predicted GPU figures in the report: a workload measured on the CPU and on no GPU gets its predicted samples/s on
the bundled reference's GPU, per backend, each with its 80% interval and the mark *predicted* (``helpers.predict``:
the step model fitted on the reference's records); a workload measured on both sides shows its GPU side's
prediction beside the measurement, so a reader sees how far off the predictions run.

    t = table(ctx)       # one row per workload x backend: CPU measured, GPU predicted (interval), GPU measured
"""

from __future__ import annotations

from .best import best_over_best
from .fmt import sps_shown
from .headline import backend_name

MARK = "predicted"


def _fastest_cpu(records, workload):
    """The CPU record of ``workload``'s fastest configuration (median samples/s over its runs)."""
    import statistics

    groups: dict[tuple, list] = {}
    for r in records:
        if r.get("workload") == workload and r.get("status") == "ok" and r.get("device_used") == "cpu" \
                and r.get("samples_per_s"):
            p = r.get("params") or {}
            key = (r.get("backend"), p.get("batch_size"), p.get("precision"), p.get("threads"), r.get("config_id"))
            groups.setdefault(key, []).append(r)
    if not groups:
        return None, None
    best = max(groups.values(), key=lambda rs: statistics.median(x["samples_per_s"] for x in rs))
    return best[0], statistics.median(x["samples_per_s"] for x in best)


def table(ctx):
    """``table_of`` the report context's records and configurations."""
    return table_of(ctx.records, ctx.costed if getattr(ctx, "costed", None) is not None else ctx.summary)


def table_of(records, costed):
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
    bob = best_over_best(costed)
    for r in bob.to_dict("records") if len(bob) else []:
        paired[r["workload"]] = r
    rows, why = [], []
    for wl in sorted({r.get("workload") for r in records if r.get("status") == "ok"} - {None}):
        rec, cpu_sps = _fastest_cpu(records, wl)
        if rec is None:
            continue
        pair = paired.get(wl)
        for backend in sorted(fit.a):
            f, reason = gpu.record_features(rec, backend)
            if f is None:
                why.append(f"{wl}: {reason}")
                break
            p = gpu.predicted(fit, f)
            measured = pair.get("samples_per_s_gpu") if pair and pair.get("backend_gpu") == backend else None
            shown = sps_shown(pair, "_gpu") if measured is not None else ""  # the verdict's own string of it
            rows.append({"workload": wl, "backend": backend, "batch": f["batch"], "precision": f["precision"],
                         "cpu_samples_per_s": cpu_sps, "gpu_predicted": p["samples_per_s"],
                         "gpu_predicted_low": p["samples_per_s_low"], "gpu_predicted_high": p["samples_per_s_high"],
                         "speedup_predicted": p["samples_per_s"] / cpu_sps,
                         "speedup_predicted_low": p["samples_per_s_low"] / cpu_sps,
                         "speedup_predicted_high": p["samples_per_s_high"] / cpu_sps,
                         "gpu_measured": measured, "gpu_measured_shown": shown, "measured_gpu": pair is not None,
                         "gpu": fit.gpu,
                         "mark": MARK, "interval": p["interval"], "fitted_on": ", ".join(fit.workloads),
                         "held_out_median_error": held.get("median_abs_error"),
                         "held_out_coverage": held.get("coverage")})
    return pd.DataFrame(rows), "; ".join(why)


def interval_text(lo, hi) -> str:
    from .fmt import rounded

    return f"{rounded(lo, 2)}–{rounded(hi, 2)}"


def sentence(g) -> str:
    """One workload predicted, not measured on a GPU: each backend's samples/s with its interval and the speedup."""
    from .fmt import rounded

    r0 = g.iloc[0]
    parts = [f"{backend_name(r['backend'])} {rounded(r['gpu_predicted'], 2)} samples/s "
             f"(80% interval {interval_text(r['gpu_predicted_low'], r['gpu_predicted_high'])}; "
             f"{rounded(r['speedup_predicted'], 2)}× the CPU's {rounded(r['cpu_samples_per_s'], 3)}, "
             f"{interval_text(r['speedup_predicted_low'], r['speedup_predicted_high'])}×)"
             for r in g.to_dict("records")]
    return (f"{r0['workload']}, batch {r0['batch']}, {r0['precision']}: predicted, not measured, on one {r0['gpu']} "
            f"(the bundled reference's GPU): " + "; ".join(parts) + ".")


def add_to(s, ctx) -> None:
    """The verdict's predicted figures: a sentence per workload no GPU measured, the model's provenance once, and a
    folded table setting predictions beside the measured GPU sides."""
    from helpers.predict import gpu

    from .fmt import esc, html_table, rounded

    t, why = table(ctx)
    if not len(t):
        if why:
            s.note("No predicted GPU figure: {}.", why)
        return
    alone = t[~t["measured_gpu"]]
    if len(alone):
        s.html('<ul class="cgb-predicted">' + "".join(f"<li>{esc(sentence(g))}</li>"
                                                     for _, g in alone.groupby("workload", sort=True)) + "</ul>")
    r0 = t.iloc[0]
    s.note("Predicted figures come from a model of one training step fitted on the bundled reference's records ({}: "
           "docs/custom_model.md); each workload held out in turn, it ran {} off the measured samples/s (median) "
           "and its 80% interval held {} of the cells (benchmarks/predict_check.py). Trust it least for layer kinds "
           "the reference never ran and for input pipelines that read files (docs/custom_model.md).",
           r0["fitted_on"], f"{r0['held_out_median_error']:.0%}", f"{r0['held_out_coverage']:.0%}")
    both = t[t["gpu_measured"].notna()]
    if len(both):
        import pandas as pd

        rows = pd.DataFrame({
            "workload": both["workload"], "GPU backend": [backend_name(b) for b in both["backend"]],
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
    c = costed[costed["samples_per_s"].notna()]
    have = set(rows["workload"]) if len(rows) else set()
    out = []
    for wl, g in c.groupby("workload", sort=True):
        if wl in have:
            continue
        cpu, gpu_side = g[g["device"] == "cpu"], g[g["device"] == "gpu"]
        bad = [d.upper() for d, side in (("cpu", cpu), ("gpu", gpu_side))
               if len(side) and "learned" in side and (side["learned"] == "no").all()]
        if bad:  # helpers.report.learning: no side to take
            out.append(f"{wl} (did not learn on the {' and '.join(bad)} side)")
        elif not len(gpu_side):
            out.append(f"{wl} (no GPU run)")
        elif not len(cpu):
            out.append(f"{wl} (no CPU run)")
        else:
            out.append(f"{wl} (no configuration measured on both: the CPU at {_configs(cpu)}; the GPU at "
                       f"{_configs(gpu_side)})")
    return out
