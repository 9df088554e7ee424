"""Aggregation: one row per configuration, matched CPU/GPU pairs, and per-sample figures.

    summ = summarise(df)                  # one row per configuration (CONFIG_KEYS): median over its runs
    pairs = matched_pairs(summ)           # GPU against CPU of the same configuration, per sample
    sizes = source_epochs()               # samples in one epoch of each source's full dataset

Two spreads, never confused: a figure is the median over runs (records) of each run's
samples/s, with the *between-run* interval (``between_runs``); the *within-run* epoch spread is kept apart
and never shown as the figure's uncertainty. How figures are rounded and marked: precision.sig_digits.

Honest axes: configurations are compared in samples/s (or time and money per 1,000 samples, or
per epoch of the source's full dataset derived from samples/s), never in raw seconds per epoch when
their epochs hold different numbers of samples.
"""

from __future__ import annotations

from helpers.report.derive import learning, mfu
from helpers.report.derive.precision import digits, sig_digits
from helpers.report.derive.protocol import MIN_STEADY_S, MIN_STEPS, current_protocol, quiet_host
from helpers.report.load import columns as C
from helpers.report.load.published import source_epochs
from helpers.report.load.table import CONFIG_KEYS
from helpers.report.load.values import isnull, yes

BOOT_FROM = 5  # runs from which the between-run interval is a bootstrap interval (below: the range)
BOOT_SEED = 14  # fixed: the same records give the same report
BOOT_RESAMPLES = 9999

# A matched pair: same machine and everything but the device. n_train is not a pairing key: a CPU point
# may train on fewer samples than its GPU twin (the speedup is then taken per sample, from samples/s).
PAIR_KEYS = ["machine", "workload", "backend", "precision", "jit_compile", "batch_size", "augment",
             "workers", "knobs", "data_source"]

SUMMARY_COLUMNS = CONFIG_KEYS + [
    "config", "n_runs", "n_epochs", "s_per_epoch", "q1", "q3", "min", "max", "s_per_step", "step_q1", "step_q3",
    C.SAMPLES_PER_S, "sps_q1", "sps_q3", "runs_sps_min", "runs_sps_max", "sps_lo", "sps_hi", "sps_interval",
    "run_sps", "n_leases", "min_steady_s", "short_window", "steps_per_epoch", "steady_s", "steady_min_s",
    "first_epoch_s", "first_min", "first_max", "val_s", "total_s", "cpu_pct", "proc_cpu_pct", "gpu_pct",
    "gpu_pct_max", "gpu_mem_mb", "power_w", "energy_j_per_epoch", "energy_above_idle_j_per_epoch", "idle_power_w",
    "energy_method", "final_accuracy", "threads_eff", "host", "gpu", "cpu_model", "cpus", "machine_cpus", "gpus",
    "fixture", "epochs", "n_earlier", "point_ids", "host_copy_s", "input_mb_per_step", "shared_host",
    "host_busy", "n_host_busy", "run_index", *mfu.COLUMNS]
_TEXT = set(CONFIG_KEYS) | {"config", "host", "gpu", "cpu_model", "fixture", "point_ids", "energy_method",
                            "sps_interval", "run_sps", "short_window", "host_busy", "run_index", *mfu.TEXT}


def _bootstrap(samples: tuple, statistic) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of ``statistic`` (independent resampling of each sample), fixed seed."""
    import numpy as np
    from scipy import stats

    res = stats.bootstrap(samples, statistic, n_resamples=BOOT_RESAMPLES, confidence_level=0.95, method="percentile",
                          paired=False, vectorized=True, rng=np.random.default_rng(BOOT_SEED))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def between_runs(values) -> tuple[float, float, str]:
    """(low, high, kind) of the median of per-run figures: 'range' (min–max) under BOOT_FROM runs,
    'bootstrap' (95% interval of the median) from BOOT_FROM, 'none' (NaN bounds) for one run."""
    import numpy as np

    v = np.asarray([x for x in values if not isnull(x)], dtype=float)
    if v.size < 2:
        return float("nan"), float("nan"), "none"
    if v.size < BOOT_FROM or np.ptp(v) == 0:
        return float(v.min()), float(v.max()), "range"
    lo, hi = _bootstrap((v,), lambda x, axis: np.median(x, axis=axis))
    med = float(np.median(v))
    return min(lo, med), max(hi, med), "bootstrap"


def ratio_interval(num_runs, den_runs) -> tuple[float, float, str]:
    """(low, high, kind) of median(num) ÷ median(den) from both sides' runs: 'bootstrap' (95%, each side
    resampled) when both have BOOT_FROM runs, else 'range' [min num ÷ max den, max num ÷ min den] when
    both have two, else 'none' (a side has one run: no interval)."""
    import numpy as np

    a = np.asarray([x for x in num_runs if not isnull(x)], dtype=float)
    b = np.asarray([x for x in den_runs if not isnull(x)], dtype=float)
    if min(a.size, b.size) < 2:
        return float("nan"), float("nan"), "none"
    if min(a.size, b.size) < BOOT_FROM or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return float(a.min() / b.max()), float(a.max() / b.min()), "range"
    lo, hi = _bootstrap((a, b), lambda x, y, axis: np.median(x, axis=axis) / np.median(y, axis=axis))
    r = float(np.median(a) / np.median(b))
    return min(lo, r), max(hi, r), "bootstrap"


def run_figures(g):
    """Each run's (record's) steady-state samples/s: n_train ÷ its median steady epoch (else its own figure)."""
    sps = g["n_train"] / g["median_epoch_s"]
    return sps.where(sps.notna(), g[C.SAMPLES_PER_S]).dropna().to_numpy(dtype=float)


def summarise(df):
    """One row per configuration (CONFIG_KEYS): the median over its runs of each run's figure.

    ``samples_per_s``: median over runs of each run's samples/s (``run_sps``); ``sps_lo``/``sps_hi``: its
    between-run interval (``sps_interval``: 'range', 'bootstrap', 'none'); ``runs_sps_min``/``_max``: the
    runs' extremes; ``s_per_epoch``: median of the runs' median epochs. Within-run: the steady epochs of
    all runs pooled (``q1``/``q3``, ``min``/``max`` in s; ``sps_q1``/``sps_q3``). ``steady_s``: the median
    run's window, ``short_window``: under ``min_steady_s`` (protocol.MIN_STEADY_S if unrecorded); ``n_leases``:
    distinct ``boot_id`` (0: unknown); ``n_earlier``, ``n_host_busy``: runs left out (protocol.py)."""
    import numpy as np
    import pandas as pd

    ok = df[(df["status"] == "ok") & df["median_epoch_s"].notna()]
    if ok.empty:
        return learning.judge(pd.DataFrame(columns=SUMMARY_COLUMNS), None)
    out = []
    for key, g in ok.groupby(CONFIG_KEYS, dropna=False, sort=True):
        g, n_earlier = current_protocol(g)
        g, n_busy = quiet_host(g)  # host-busy runs left out while an unmarked run exists
        epochs = np.array([t for lst in g["epoch_list"] for t in lst], dtype=float)
        if epochs.size == 0:
            epochs = g["median_epoch_s"].to_numpy(dtype=float)
        q1, q3 = np.percentile(epochs, [25, 75])
        med = float(g["median_epoch_s"].median())
        steps = g["steps_per_epoch"].dropna()
        steps = float(steps.iloc[0]) if len(steps) else None
        if not steps:
            ratio = (g["median_epoch_s"] / g["step_s"]).dropna()
            steps = float(ratio.median()) if len(ratio) else None
        n = float(g["n_train"].dropna().iloc[0]) if g["n_train"].notna().any() else None
        run_sps = run_figures(g)
        lo, hi, kind = between_runs(run_sps)
        min_steady = g["min_steady_s"].max() if g["min_steady_s"].notna().any() else MIN_STEADY_S
        window = g["steady_s"].median()
        row = dict(zip(CONFIG_KEYS, key))
        row.update(
            config=g["config"].iloc[0], n_runs=len(g), n_epochs=int(epochs.size), s_per_epoch=med, q1=q1, q3=q3,
            min=float(epochs.min()), max=float(epochs.max()),
            s_per_step=med / steps if steps else None, step_q1=q1 / steps if steps else None,
            step_q3=q3 / steps if steps else None,
            samples_per_s=float(np.median(run_sps)) if run_sps.size else None,
            sps_q1=n / q3 if n else None, sps_q3=n / q1 if n else None,
            runs_sps_min=run_sps.min() if run_sps.size else None, runs_sps_max=run_sps.max() if run_sps.size else None,
            sps_lo=lo, sps_hi=hi, sps_interval=kind, run_sps=tuple(sorted(run_sps.tolist())),
            n_leases=g["boot_id"].dropna().nunique(),
            min_steady_s=min_steady, short_window=bool(not isnull(window) and window < min_steady),
            steps_per_epoch=steps, steady_s=window, steady_min_s=g["steady_s"].min(),
            first_epoch_s=g["first_epoch_s"].median(), first_min=g["first_epoch_s"].min(),
            first_max=g["first_epoch_s"].max(), val_s=g["val_s"].median(), total_s=g["total_s"].median(),
            cpu_pct=g["cpu_pct"].median(), proc_cpu_pct=g["proc_cpu_pct"].median(), gpu_pct=g["gpu_pct"].median(),
            gpu_pct_max=g["gpu_pct_max"].max(), gpu_mem_mb=g["gpu_mem_mb"].max(), power_w=g["power_w"].median(),
            energy_method=", ".join(sorted(g["energy_method"].dropna().astype(str).unique())) or None, **mfu.config(g),
            **{c: g[c].median() for c in ("energy_j_per_epoch", "energy_above_idle_j_per_epoch", "idle_power_w",
                                          "final_accuracy", "host_copy_s", "input_mb_per_step")},
            threads_eff=g["threads_eff"].median(), host=g["host"].iloc[0], gpu=g["gpu"].iloc[0],
            cpu_model=g["cpu_model"].iloc[0], cpus=g["cpus"].iloc[0], machine_cpus=g["machine_cpus"].max(),
            gpus=g["gpus"].iloc[0], fixture=bool(g["fixture"].any()), epochs=g["epochs"].median(),
            n_earlier=n_earlier, n_host_busy=n_busy, host_busy=bool(g["host_busy"].any()),
            # the most other runners busy on the host when one of its runs started: host-bound figures move
            shared_host=g["concurrent_runners"].max() if "concurrent_runners" in g else None,
            point_ids=",".join(str(p) for p in g["point_id"].dropna().unique()[:5]),
            run_index=tuple(g.index))  # the rows of ``df`` its figures rest on (the learning check reads their history)
        out.append(row)
    s = pd.DataFrame(out, columns=SUMMARY_COLUMNS)
    for c in SUMMARY_COLUMNS:
        if c not in _TEXT:
            s[c] = pd.to_numeric(s[c], errors="coerce")
    # did each configuration learn (the learning check: learned, learned_why, the loss compared)
    return learning.judge(per_sample(s.reset_index(drop=True)), ok)


def per_sample(s):
    """Adds the per-sample columns: ``ms_per_1k`` (seconds per 1,000 samples), ``source_epoch_s``
    (seconds per epoch of the source's full dataset, from samples/s), ``few_steps`` (under MIN_STEPS)."""
    sizes = source_epochs()
    s = s.copy()
    s["s_per_1k"] = 1000.0 / s[C.SAMPLES_PER_S]
    full = s["workload"].map(lambda w: (sizes.get(w) or {}).get("samples"))
    s["source_samples"] = full.astype(float)
    s["source_epoch_s"] = s["source_samples"] / s[C.SAMPLES_PER_S]
    s["few_steps"] = s["steps_per_epoch"].map(lambda v: (not isnull(v)) and v < MIN_STEPS)
    return mfu.add(s)  # achieved TFLOP/s and MFU


def matched_pairs(summ):
    """GPU against CPU of the same configuration (PAIR_KEYS: same machine, backend, batch, precision, knobs).

    One row per pair, columns suffixed ``_cpu``/``_gpu``; the CPU side is that configuration's fastest
    thread setting. ``speedup`` = GPU samples/s ÷ CPU samples/s (per sample, medians over runs);
    ``speedup_lo``/``_hi`` its between-run interval from the runs of both sides (``ratio_interval``;
    ``interval``: 'range', 'bootstrap', or 'none' when a side has one run: no interval, never an epoch IQR).
    ``n_runs``/``short_window`` (the fewer runs, either window short) and ``digits`` say how it is shown."""
    import pandas as pd

    if summ.empty or not {"cpu", "gpu"} <= set(summ["device"].dropna()):
        return pd.DataFrame()
    ok = learning.learned(summ[summ[C.SAMPLES_PER_S].notna()])  # a side that did not learn pairs with nothing
    cpu = ok[ok["device"] == "cpu"].sort_values(C.SAMPLES_PER_S, ascending=False).groupby(
        PAIR_KEYS, dropna=False).head(1)
    gpu = ok[ok["device"] == "gpu"].sort_values(C.SAMPLES_PER_S, ascending=False).groupby(
        PAIR_KEYS, dropna=False).head(1)
    m = cpu.merge(gpu, on=PAIR_KEYS, suffixes=("_cpu", "_gpu"))
    if m.empty:
        return m
    return add_speedup(m).sort_values(["workload", "machine", "backend", "batch_size"]).reset_index(drop=True)


def add_speedup(m):
    """GPU ÷ CPU of rows with ``_cpu``/``_gpu`` columns (a matched pair, a verdict row), in place: ``speedup``
    (samples/s, medians over runs), its between-run interval ``speedup_lo``/``_hi``/``interval`` from both sides'
    runs (``ratio_interval``), ``n_runs`` (the fewer), ``short_window`` (either side's) and ``digits``: the
    interval's (``precision.sig_digits``), else its less precise side's. Every rendering of the speedup uses ``digits``
    (``fmt.speedup_shown``)."""
    m["speedup"] = m["samples_per_s_gpu"] / m["samples_per_s_cpu"]
    iv = [ratio_interval(g, c) for g, c in zip(m["run_sps_gpu"], m["run_sps_cpu"])]
    m["speedup_lo"], m["speedup_hi"], m["interval"] = ([v[i] for v in iv] for i in range(3))
    m["n_runs"] = m[["n_runs_cpu", "n_runs_gpu"]].min(axis=1)
    m["short_window"] = m["short_window_cpu"].astype(bool) | m["short_window_gpu"].astype(bool)
    m["host_busy"] = [yes(r.get("host_busy_cpu")) or yes(r.get("host_busy_gpu")) for r in m.to_dict("records")]
    m["digits"] = [sig_digits(r["speedup"], r["speedup_lo"], r["speedup_hi"], r["n_runs"], r["short_window"])
                   if r["interval"] != "none" else min(digits(r, "_cpu"), digits(r, "_gpu"))
                   for r in m.to_dict("records")]
    return m
