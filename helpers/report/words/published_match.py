"""Published figures beside yours, like with like (the comparison section's tables).

    vs = versus_published(summ, pub)       # throughput: published and your figures, measured the same way
    oth = other_figures(summ, pub)         # first epoch, totals, utilisation (peaks beside means), ratios

A published figure meets your configuration of the same workload, device and variant (the CSV's ``variant``
holds suite knobs, ``variant=improved``; text without ``=`` names a network the suite does not build) and
augmentation; an epoch that includes validation meets your epoch with its validation (training part +
``val_s``). Each row says what its epoch includes and whether the pair is like with like, and if not why.
"""

from __future__ import annotations

from helpers.report.load import columns as C
from helpers.report.load.published import EPOCH, OTHER, gpu_count, published_throughput
from helpers.report.words import fmt


def _knobs(s) -> dict:
    return dict(kv.strip().split("=", 1) for kv in str(s or "").split(",") if "=" in kv)


def _variant_pairs(v) -> dict | None:
    """The suite knobs a published variant names; None when it names a network the suite does not build."""
    v = str(v or "").strip()
    if not v:
        return {}
    pairs = _knobs(v)
    return pairs if pairs else None


def _knob_ok(k, want, have, device) -> bool:
    if k not in have:
        return False
    if k == "lstm_impl" and device == "cpu":  # no cuDNN on a CPU: auto runs the generic loop
        return True
    return have[k] == want


# what is derived from the last summary, kept while it is the summary asked about (the sections ask hundreds of
# times): its split by (workload, device) and each published figure's candidates
_LAST: dict = {"summ": None}


def _of_last(summ) -> dict:
    if _LAST["summ"] is not summ:
        _LAST.clear()
        _LAST.update(summ=summ, candidates={},
                     split={k: g for k, g in summ.groupby(["workload", "device"], sort=False, dropna=False)})
    return _LAST


def _by_workload_device(summ) -> dict:
    return _of_last(summ)["split"]


def candidates(summ, p):
    """Your configurations of the published figure's workload, device and variant (and augmentation, when the
    source says it), best first: same batch size, then highest samples/s. Read-only: one frame per published
    figure's workload, device, variant, augmentation and batch size, kept for the last summary."""
    if summ is None or summ.empty:
        return summ
    found = _of_last(summ)["candidates"]
    key = (p["workload"], p["device"], str(p.get("variant") or ""), str(p.get("augment") or ""), p["batch_size"])
    if key not in found:
        found[key] = _candidates(summ, p)
    return found[key]


def _candidates(summ, p):
    c = _by_workload_device(summ).get((p["workload"], p["device"]), summ.iloc[:0])
    pairs = _variant_pairs(p.get("variant"))
    if pairs:
        ok = [all(_knob_ok(k, v, _knobs(r), p["device"]) for k, v in pairs.items()) for r in c["knobs"]]
        c = c.loc[[bool(x) for x in ok]] if len(c) else c
    aug = str(p.get("augment") or "")
    if aug in ("true", "false"):
        c = c[c["augment"].isna() | (c["augment"].astype(str) == aug)]
    if c.empty:
        return c
    # the sources trained in float32: that first, then the source's batch size, then the fastest
    f32 = (c["precision"].fillna("float32") == "float32").astype(int) if "precision" in c else 1
    same = (c["batch_size"] == p["batch_size"]).astype(int)
    return (c.assign(_f32=f32, _same=same).sort_values(["_f32", "_same", C.SAMPLES_PER_S], ascending=False)
            .drop(columns=["_f32", "_same"]))


def your_throughput(s, with_validation: bool):
    """Your samples/s: the training part (``samples_per_s``), or the epoch with its validation
    (n_train / (s_per_epoch + val_s)); None when that run did not validate."""
    if not with_validation:
        return s[C.SAMPLES_PER_S]
    val, spe, n = s.get("val_s"), s.get("s_per_epoch"), s.get("n_train")
    if val is None or val != val or not val > 0 or not spe or spe != spe or not n or n != n:
        return None
    return float(n) / (float(spe) + float(val))


def _like(p, s, with_val: bool, got) -> str:
    """Is the pair like with like? 'yes', or 'no: why' / 'partly: what differs'."""
    if _variant_pairs(p.get("variant")) is None:
        return f"no: a different network ({p['variant']}); compare trends, not figures"
    if s is None:
        return "no: you have no run of this workload, device and variant"
    if with_val and got is None:
        return "no: your run did not validate (the source's epoch includes validation): run with n_val as the source"
    diff = []
    if p["batch_size"] == p["batch_size"] and s["batch_size"] != p["batch_size"]:
        diff.append(f"batch {s['batch_size']:g} vs {p['batch_size']:g}")
    if str(s.get("precision") or "float32") != "float32":
        diff.append(f"{s['precision']} vs the source's float32")
    if p.get("validation") == "not stated":
        diff.append("the source does not say whether its epoch includes validation")
    if p.get("inferred"):
        diff.append("inferred: " + p["inferred"])
    return ("partly: " + "; ".join(diff)) if diff else "yes"


def _label(p) -> str:
    v = p.get("variant") or "as published"
    aug = {"true": " · augmentation on", "false": " · augmentation off"}.get(str(p.get("augment") or ""), "")
    return f"{p['workload']} · {v}{aug} · epoch: {EPOCH.get(p.get('validation', ''), p.get('validation'))}"


def versus_published(summ, pub):
    """Published samples/s beside yours, measured the same way, one row per published figure ("published") and
    one per configuration of yours it is compared with ("you"); labelled with workload, variant and what the
    epoch includes. Only workloads you ran when you ran any."""
    import pandas as pd

    thr = published_throughput(pub)
    if not thr.empty:  # a figure of several GPUs meets yours in the scaling section, not here
        thr = thr[[(gpu_count(p) or 1) == 1 for p in thr.to_dict("records")]]
    if thr.empty:
        return pd.DataFrame()
    if summ is not None and not summ.empty:
        thr = thr[thr["workload"].isin(set(summ["workload"]))]
    rows, seen = [], set()
    for _, p in thr.iterrows():
        with_val = p.get("validation") == "in"
        c = candidates(summ, p) if summ is not None and not summ.empty else None
        best = None if c is None or c.empty else c.iloc[0]
        got = None if best is None else your_throughput(best, with_val)
        label = _label(p)
        rows.append({"workload": p["workload"], "comparison": label, "who": "published",
                     "hardware / configuration": f"{p['hardware']} · {p['framework']}" if p["framework"]
                     else p["hardware"], "device": p["device"],
                     "framework": p.get("framework"), "batch": p.get("batch_size"), "samples/s": p["value"],
                     "low": p.get("low"), "high": p.get("high"), "epoch includes": EPOCH.get(p["validation"], ""),
                     "like with like": _like(p, best, with_val, got), "source": f"{p['source']}: {p['ref']}"})
        if best is None:
            continue
        mode = "training + validation" if with_val else "training only"
        if got is None:  # your run did not validate: your training part, said to be another measure
            got, with_val = best[C.SAMPLES_PER_S], False
            mode = "training only (not like with like: the source's epoch includes validation)"
        key = (label, best["machine"], best["backend"], best["batch_size"], best["knobs"], mode)
        if key in seen:
            continue
        seen.add(key)
        hw = f"{best['machine']} · {best['backend']}" + (" · with validation" if with_val else
                                                          " · training only" if "not like" in mode else "")
        who = "you" + (" (fixture)" if best["fixture"] else "")
        rows.append({"workload": p["workload"], "comparison": label, "who": who, "hardware / configuration": hw,
                     "device": best["device"], "framework": f"Keras 3 / {best['backend']}",
                     "batch": best["batch_size"], "samples/s": got,
                     "low": best["sps_q1"] if not with_val else None, "high": best["sps_q3"] if not with_val else None,
                     "epoch includes": mode, "like with like": "",
                     "source": f"your records ({best['n_runs']} run(s), data: {best['data_source']})",
                     "_row": best.name})  # the configuration (summary row) behind it: its digits and marks
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    return out.sort_values(["workload", "comparison", "who", "samples/s"],
                           ascending=[True, True, False, False]).reset_index(drop=True)


# ------------------------------------------------------------------------------------------ other figures
def _ratio(summ, p, num: dict, den: dict):
    """Your ratio of samples/s between two sets of configurations of p's workload (same machine, backend)."""
    if summ is None or summ.empty:
        return None
    rows = [(i, r) for i, r in enumerate(summ[summ["workload"] == p["workload"]].to_dict("records"))]
    nums = [(i, a) for i, a in rows if all(_match(a, k, v) for k, v in num.items())]
    dens = [(i, b) for i, b in rows if all(_match(b, k, v) for k, v in den.items()) and b[C.SAMPLES_PER_S] > 0]
    best = None
    for ia, a in nums:
        for ib, b in dens:
            if (b["machine"], b["backend"]) == (a["machine"], a["backend"]) and ia != ib:
                r = a[C.SAMPLES_PER_S] / b[C.SAMPLES_PER_S]
                best = r if best is None or r > best else best
    return best


def _match(r, k, v) -> bool:
    if k in ("device",):
        return r["device"] == v
    if k in ("batch_size", "workers"):
        return r.get(k) == v
    return _knobs(r["knobs"]).get(k) == v


def _yours_other(summ, p):
    """Your figure beside a non-throughput published one, and what it is."""
    m = p["metric"]
    var = (_variant_pairs(p.get("variant")) or {}).get("variant")
    if m == "gpu_speedup":
        extra = {"variant": var} if var else {}
        r = _ratio(summ, p, {"device": "gpu", **extra}, {"device": "cpu", **extra})
        return r, "your best GPU / CPU pair (same machine, backend)"
    if m == "tuning_speedup":
        r = _ratio(summ, p, {"device": p["device"], "workers": 4, "batch_size": 64, "variant": var or "original"},
                   {"device": p["device"], "workers": 1, "batch_size": 32, "variant": var or "original"})
        return r, "workers 4 + batch 64 over workers 1 + batch 32 (same machine, backend)"
    if m == "relative_to_original":
        r = _ratio(summ, p, {"device": p["device"], "variant": var}, {"device": p["device"], "variant": "original"})
        return r, f"{var} over original (same machine, backend)"
    c = candidates(summ, p) if summ is not None and not summ.empty else None
    if c is None or c.empty:
        return None, "no run of this workload, device and variant"
    s = c.iloc[0]
    if m in ("gpu_pct", "gpu_pct_max"):  # the second answer beside busy time: the arithmetic done
        mfu = s.get("mfu")
        return (s["gpu_pct_max"] if m == "gpu_pct_max" else s["gpu_pct"],
                f"peak {fmt.percent(s['gpu_pct_max'], 'n/a')} beside mean {fmt.percent(s['gpu_pct'], 'n/a')} "
                "(NVML busy time); MFU "
                + (f"{fmt.mfu_shown(mfu)}% (the arithmetic done over the card's peak)" if mfu is not None and mfu == mfu
                   else "not known (no peak for this device or no FLOPs count)"))
    if m in ("cpu_pct", "cpu_pct_max"):
        what = "mean (the summary keeps no CPU peak)" if m == "cpu_pct_max" else "mean"
        return s["cpu_pct"], f"CPU % {what}: {fmt.percent(s['cpu_pct'], 'n/a')}"
    col = {"first_epoch_s": "first_epoch_s", "total_s": "total_s", "s_per_step": "s_per_step",
           "gpu_mem_mb": "gpu_mem_mb"}[m]
    note = {"first_epoch_s": f"your first epoch: {s['n_train']:,.0f} samples, compilation included",
            "total_s": f"your run: {s['epochs']:g} epochs of {s['n_train']:,.0f} samples",
            "s_per_step": f"your step: batch {s['batch_size']:g}, training only",
            "gpu_mem_mb": "your peak device memory"}[m]
    return s[col], note


def other_figures(summ, pub):
    """The published figures that are not throughput (first epoch, whole run, per step, utilisation, ratios), each
    beside your nearest figure and what it is; seed 003's peaks beside your peak and mean."""
    import pandas as pd

    o = pub[pub["metric"].isin(OTHER)] if len(pub) else pub
    rows = []
    for _, p in o.iterrows():
        v, what = _yours_other(summ, p)
        rows.append({"workload": p["workload"], "variant": p["variant"] or "as published",
                     "figure": OTHER[p["metric"]], "epoch includes": EPOCH.get(p["validation"], p["validation"]),
                     "published": p["value"], "hardware": p["hardware"], "yours": v, "your figure is": what,
                     "like with like": _like_other(summ, p, v), "inferred": p["inferred"],
                     "source": f"{p['source'][:3]}: {p['ref']}"})
    return pd.DataFrame(rows)


def _like_other(summ, p, v) -> str:
    """Is a non-throughput pair like with like? 'yes', or 'no'/'partly' and why."""
    if v is None or v != v:
        return "no: you have no such run"
    m = p["metric"]
    if _variant_pairs(p.get("variant")) is None:
        return f"no: a different network ({p['variant']})"
    if m in ("gpu_speedup", "tuning_speedup", "relative_to_original"):
        return "partly: a ratio of images/s on other hardware; compare the size of the effect"
    if m == "gpu_mem_mb":
        return "partly: your framework's peak allocation against the source's monitor (JAX preallocates 75%)"
    if m.endswith("_pct") or m.endswith("_pct_max"):
        return "partly: busy time (NVML / psutil samples) against the source's monitor"
    s = candidates(summ, p).iloc[0]
    validated = s.get("val_s") is not None and s.get("val_s") == s.get("val_s") and s.get("val_s") > 0
    why = []
    if m in ("first_epoch_s", "total_s") and p["n_train"] == p["n_train"] and s["n_train"] != p["n_train"]:
        why.append(f"your epoch holds {s['n_train']:,.0f} samples, the source's {p['n_train']:,.0f}")
    if m == "total_s" and "epochs" in str(p.get("note")):
        why.append("the source's run: " + str(p["note"]))
    if p.get("validation") == "in" and not (validated and m == "total_s"):
        why.append("the source's time includes validation, yours does not" if not validated else
                   "the source's time includes validation, your figure is the training part")
    if p.get("validation") == "not stated":
        why.append("the source states neither epochs nor validation")
    if m == "s_per_step" and p["batch_size"] == p["batch_size"] and s["batch_size"] != p["batch_size"]:
        why.append(f"batch {s['batch_size']:g} vs {p['batch_size']:g}")
    return ("no: " + "; ".join(why)) if why else "yes"
