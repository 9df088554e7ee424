"""Predicted GPU figures in words: a workload predicted and not measured (``said``), an interval (``interval_text``),
the workloads the verdict leaves out and why (``unpaired``)."""

from __future__ import annotations

from helpers.report.load import columns as C
from helpers.report.words.fmt import rounded
from helpers.report.words.style import backend_short


def interval_text(lo, hi) -> str:
    return f"{rounded(lo, 2)}–{rounded(hi, 2)}"


def _epoch_text(r) -> str:
    """'; an epoch of 512 samples 0.0052 s, $0.0000066': the predicted epoch and its price, where known."""
    n, sps = r.get("epoch_samples"), r["gpu_predicted"]
    if not n or n != n:
        return ""
    secs = n / sps
    price = r.get("gpu_price_per_hour")
    cost = f", ${rounded(secs * price / 3600, 2)}" if price and price == price else ""
    return f"; an epoch of {int(n):,} samples {rounded(secs, 2)} s{cost}"


def said(g) -> str:
    """One workload predicted, not measured on a GPU: each backend's samples/s with its interval and the speedup."""
    from helpers.predict import layers
    r0 = g.iloc[0]
    parts = [f"{backend_short(r['backend'])} {rounded(r['gpu_predicted'], 2)} samples/s "
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
