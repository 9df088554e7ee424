"""Each section's opening sentence: what it found for these records, generated from the figures it shows.

    s.found(*findings.first_epoch(summary))      # (template, values...) for ``Section.found``

One function per section, each a function of the tidy tables only, so the sentences are tested against
fixtures whose numbers are known. Each returns a ``(template, *values)`` tuple (values escaped when shown).
"""

from __future__ import annotations

from helpers.report.load import columns as C
from helpers.report.load.values import isnull
from helpers.report.words.fmt import mfu_shown, rounded, speedup_shown, sps_shown
from helpers.report.words.headline import duration


def _cfg(r) -> str:
    parts = [str(r.get("workload")), f"{r.get('device')} · {r.get('backend')}"]
    if not isnull(r.get("batch_size")):
        parts.append(f"batch {r['batch_size']:g}")
    return ", ".join(parts)


def speedup(pairs) -> tuple:
    sp = pairs["speedup"]
    hi, lo = pairs.loc[sp.idxmax()], pairs.loc[sp.idxmin()]
    slower = int((sp <= 1).sum())
    return ("{} matched pair(s): the GPU trains {} to {} faster than the CPU of the same configuration; the largest "
            "gain is {} on {} (batch {}), the smallest {} on {}{}.", len(pairs), speedup_shown(lo),
            speedup_shown(hi), hi["workload"], hi["backend"], f"{hi['batch_size']:g}", lo["workload"],
            lo["backend"], f"; {slower} pair(s) are no faster on the GPU" if slower else "")


def throughput(summ) -> tuple:
    ok = summ[summ[C.SAMPLES_PER_S].notna()]
    best = ok.loc[ok.groupby("workload")[C.SAMPLES_PER_S].idxmax()]
    on_gpu = int((best["device"] == "gpu").sum())
    top, low = ok.loc[ok[C.SAMPLES_PER_S].idxmax()], ok.loc[ok[C.SAMPLES_PER_S].idxmin()]
    return ("{} configuration(s) of {} workload(s), from {} to {} samples/s; each workload's fastest configuration "
            "is on the GPU for {} of them. The fastest of all: {} ({} samples/s).", len(ok), len(best),
            _fig(low), _fig(top), on_gpu, _cfg(top), _fig(top))


def _fig(r) -> str:
    """A configuration's samples/s as every table shows it (``fmt.sps_shown``: the digits its runs support)."""
    return sps_shown(r)


def cost(costed, best) -> tuple:
    """Where a workload has a verdict row priced on both sides (best.best_over_best: on one machine the fastest
    configuration is also the cheapest), the same count as the verdict's; else the cheapest configuration's device."""
    c = costed[costed["on_demand_per_source_epoch"].notna()]
    unpriced = int(costed["on_demand_per_source_epoch"].isna().sum())
    if not len(c):
        return ("No configuration has a price (no profile of params/prices.yaml matches these machines), so only "
                "relative times are shown; {} configuration(s) unpriced.", unpriced)
    rows = best  # the verdict's rows (the context's ``best``)
    more = f"; {unpriced} configuration(s) have no price" if unpriced else ""
    if len(rows):
        rows = rows[rows["on_demand_per_source_epoch_cpu"].notna() & rows["on_demand_per_source_epoch_gpu"].notna()]
    if len(rows):
        gpu = int((rows["on_demand_per_source_epoch_gpu"] < rows["on_demand_per_source_epoch_cpu"]).sum())
        return ("Per epoch of the source's dataset, at on-demand prices, an epoch is cheaper on the GPU for {} of "
                "the {} workloads priced on both sides (each side its fastest configuration, as in the verdict){}.",
                gpu, len(rows), more)
    best = c.loc[c.groupby("workload")["on_demand_per_source_epoch"].idxmin()]
    gpu = int((best["device"] == "gpu").sum())
    if not (c["device"] == "cpu").any():  # nothing to be cheaper than
        return ("Only GPU configurations are priced here (no CPU run), so no device is compared on cost: {} "
                "workload(s) priced per epoch of the source's dataset{}.", len(best), more)
    return ("Per epoch of the source's dataset, at on-demand prices, the cheapest configuration is on the GPU for {} "
            "of {} priced workload(s){}.", gpu, len(best), more)


def first_epoch(s_) -> tuple:
    r = s_.loc[s_["compile_s"].idxmax()]
    return ("The first epoch (tracing, compilation) costs from {} to {} more than a steady one; the most on {} "
            "({}, {}× a steady epoch).", duration(s_["compile_s"].min()), duration(s_["compile_s"].max()), _cfg(r),
            duration(r["compile_s"]), rounded(r["first_epoch_s"] / r["s_per_epoch"], 2))


def scaling(summ, drawn: int, axes: int) -> tuple:
    if not drawn:
        return ("None of the {} settings (batch size, CPU threads, augmentation, input workers) was varied in these "
                "records, so nothing is drawn against them; each needs runs at several values (e.g. "
                "params/scaling.yaml).", axes)
    return ("{} of the {} settings (batch size, CPU threads, augmentation, input workers) were varied in these "
            "records and are drawn below; the others need runs at several values (e.g. params/scaling.yaml).",
            drawn, axes)


def utilisation(summ) -> tuple:
    cpu = summ["cpu_pct"].dropna()
    gpu = summ[summ["device"] == "gpu"]["gpu_pct"].dropna()
    parts = [f"the CPU busy {cpu.min():.0f}% to {cpu.max():.0f}% on average" if len(cpu) else "no CPU samples"]
    parts.append(f"the GPU busy {gpu.min():.0f}% to {gpu.max():.0f}% of the time (NVML)" if len(gpu)
                 else "no GPU utilisation measured")
    return ("Over {} configuration(s): {}.", len(summ), "; ".join(parts))


def limit(summ) -> tuple:
    m = summ[summ["mfu"].notna()]
    if not len(m):
        return ("No configuration has an MFU: {} have a FLOPs count but no known peak for their device.",
                int(summ["flops_per_sample"].notna().sum()))
    g = m[m["device"] == "gpu"]
    pick = g if len(g) else m
    hi = pick.loc[pick["mfu"].idxmax()]
    return ("{} configurations run at {}% to {}% of their device's peak arithmetic (MFU); the highest is {} "
            "({}%).", "GPU" if len(g) else "CPU", mfu_shown(pick["mfu"].min()),
            mfu_shown(pick["mfu"].max()), _cfg(hi), mfu_shown(hi["mfu"]))


def energy(e) -> tuple:
    lo, hi = e.loc[e["j_per_1k"].idxmin()], e.loc[e["j_per_1k"].idxmax()]
    return ("GPU board energy per 1,000 training samples ranges from {} J ({}) to {} J ({}) over {} "
            "configuration(s).", rounded(lo["j_per_1k"], 2), _cfg(lo), rounded(hi["j_per_1k"], 2), _cfg(hi), len(e))


def history(summ) -> tuple:
    acc = summ["final_accuracy"].dropna() if "final_accuracy" in summ else summ.iloc[0:0]
    if not len(acc):
        return ("Loss per epoch of {} configuration(s).", len(summ))
    return ("Loss and accuracy per epoch; the final training accuracy of the {} configuration(s) ranges from {}% "
            "to {}% "
            "(synthetic data is easy to learn: its accuracy says the model trains, not how well).", len(acc),
            rounded(acc.min() * 100, 2), rounded(acc.max() * 100, 2))


def backends(bt) -> tuple:
    fastest = bt[bt["× the fastest backend's time"].astype(str).isin(["1", "1.0", "1.00", "1.000"])]
    counts = fastest["backend"].value_counts()
    groups = len(fastest)
    return ("Where several backends ran the same configuration ({} comparisons), the fastest is {}.", groups,
            ", ".join(f"{b} in {n}" for b, n in counts.items()) or "not determined")


def published(n_figures: int, n_compared: int) -> tuple:
    return ("{} published figure(s) from the source write-ups; {} of them meet a configuration of yours measured "
            "the same way (throughput beside yours below).", n_figures, n_compared)


def overview(df) -> tuple:
    st = df["status"].value_counts()
    return ("{} record(s): {} ok, {} failed, {} skipped, from {} machine(s).", len(df), int(st.get("ok", 0)),
            int(st.get("failed", 0)), int(st.get("skipped", 0)), df["machine"].nunique())


def provenance(df) -> tuple:
    bad = df[df["status"] != "ok"]
    return ("{} machine(s) over {} lease(s) (boots); {} point(s) failed or were skipped, each listed below with its "
            "reason.", df["machine"].nunique(), df["boot_id"].dropna().nunique() or "unknown", len(bad))
