"""The verdict's predicted figures on the page (``add_to``): a sentence per workload no GPU measured, the model's
provenance once, and a folded table setting predictions beside the measured GPU sides."""

from __future__ import annotations

from helpers.report.words.fmt import esc, html_table, rounded, share, sps_shown
from helpers.report.words.predictions import interval_text, said
from helpers.report.words.style import backend_short


def add_to(s, ctx) -> None:
    """The verdict's predicted figures: a sentence per workload no GPU measured, the model's provenance once, and a
    folded table setting predictions beside the measured GPU sides."""
    from helpers.predict import gpu

    t, why = ctx.predicted
    if not len(t):
        if why:
            s.note("No predicted GPU figure: {}.", why)
        return
    alone = t[~t["measured_gpu"]]
    if len(alone):
        s.html('<ul class="cgb-predicted">' + "".join(f"<li>{esc(said(g))}</li>" for _, g in alone.groupby(
            ["workload", "gpu"], sort=True)) + "</ul>")
    for _, g in t.groupby("gpu", sort=True):
        r0 = g.iloc[0]
        if r0["method"] == "layers":
            s.note("On the {}: each layer's time read from its kind's profile measured on that GPU, summed, the "
                   "backend's per-step cost fitted on the workloads ({}); on 14 models of layer kinds the workloads "
                   "lack it ran {} off the measured samples/s (median) and its 80% interval held {} of them "
                   "(benchmarks/predict_check.py, docs/custom_model.md).", r0["gpu"], r0["fitted_on"],
                   f"{share(r0['held_out_median_error'])}", f"{share(r0['held_out_coverage'])}")
        else:
            s.note("On the {}: a model of one training step fitted on the bundled reference's records ({}: "
                   "docs/custom_model.md); each workload held out in turn, it ran {} off the measured samples/s "
                   "(median) and its 80% interval held {} of the cells (benchmarks/predict_check_whole.py). Trust it "
                   "least for layer kinds the reference never ran and for input pipelines that read files.",
                   r0["gpu"], r0["fitted_on"], f"{share(r0['held_out_median_error'])}",
                   f"{share(r0['held_out_coverage'])}")
    both = t[t["gpu_measured"].notna()]
    if len(both):
        import pandas as pd

        rows = pd.DataFrame({
            "workload": both["workload"], "GPU": both["gpu"],
            "GPU backend": [backend_short(b) for b in both["backend"]],
            "batch": both["batch"], "measured samples/s": [sps_shown(p, "_gpu") for p in both["gpu_measured_pair"]],
            "predicted samples/s (80% interval)": [f"{rounded(p, 2)} ({interval_text(lo, hi)})" for p, lo, hi in zip(
                both["gpu_predicted"], both["gpu_predicted_low"], both["gpu_predicted_high"])],
            "predicted ÷ measured": [rounded(p / m, 2) for p, m in zip(both["gpu_predicted"], both["gpu_measured"])],
            "note": ["its input batched from files on the host: outside what the model describes (not fitted on)"
                     if w in gpu.HOST_PIPELINE else "" for w in both["workload"]]})
        s.details(f"Predicted beside measured: the verdict's GPU sides, {len(rows)} workload(s) (click to open)",
                  html_table(rows))
