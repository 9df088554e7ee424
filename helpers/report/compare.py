"""What changed between two runs of the suite (``./run_all.sh --compare OLD NEW``): every configuration measured on
both sides, its samples/s on each, the ratio NEW ÷ OLD with its interval, and a verdict from a test whose power fits
the runs at hand: *faster*, *slower*, *no difference shown*, or *not enough runs*.

The test. A configuration's figure is the median over its runs of each run's figure (samples per epoch ÷ the run's
median steady epoch), as everywhere in the report; its epochs' spread is inside its runs' spread. Runs are the
samples: two leases of one machine type differ more than two runs of one lease, and an upgrade is measured in other
runs anyway. The ratio is tested on the log of the run figures with Welch's t (unequal variances; Hsu's conservative
degrees of freedom, the fewer runs less one), two-sided at ``CONFIDENCE``; its interval is the t interval of the
difference of log means, taken back to a ratio. A side with one run has no spread to judge by: *not enough runs*,
with the count. Where the runs show no difference, the runs a side that would show the observed one (or 5%, where
none is observed) at this confidence are said. With 3 runs a side a Mann-Whitney U test cannot go below p = 0.1, and
a bootstrap of 3 runs underestimates the spread; this test keeps the stated false-alarm rate at small counts
(``tests/test_compare.py`` simulates it, with the power at 5% and 20%).

    cmp = compare(old_folders, new_folders)   # rows (one per configuration on both sides), one-side-only, differences
    write_changes(cmp, folder)                 # changes.csv, stable for diffing
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

CONFIDENCE = 0.99  # two-sided: a change is called at p < 0.01
KEY = ["workload", "backend", "device", "batch_size", "precision", "jit_compile", "threads", "augment", "workers",
       "knobs"]  # a configuration across machines: the same model, backend, device, batch, precision and knobs
SMALL = 0.05  # the change the runs needed are said for where none is observed
MAX_RUNS = 100
FASTER, SLOWER, NONE, FEW = "faster", "slower", "no difference shown", "not enough runs"
CHANGES = "changes.csv"
COLUMNS = ["workload", "backend", "device", "batch_size", "precision", "jit_compile", "threads", "augment", "workers",
           "knobs", "old_samples_per_s", "old_runs", "new_samples_per_s", "new_runs", "ratio", "ratio_low",
           "ratio_high", "confidence", "p_value", "verdict", "runs_needed_a_side", "old_machine", "new_machine"]


@dataclass
class Comparison:
    rows: list[dict] = field(default_factory=list)  # one per configuration on both sides
    only_old: list[dict] = field(default_factory=list)  # configurations on one side only: never dropped silently
    only_new: list[dict] = field(default_factory=list)
    differences: list[tuple[str, str, str]] = field(default_factory=list)  # (what, old, new) where the sides differ
    skipped: list[tuple[str, str]] = field(default_factory=list)  # files that are not records, and why


def _key(r) -> tuple:
    return tuple("" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v) for v in (r[k] for k in KEY))


def runs_by_configuration(df) -> dict[tuple, dict]:
    """Per configuration (``KEY``): its run figures (``aggregate.run_figures``) and machines, from its runs of the
    current protocol where it has any (``protocol.current_protocol``), as the report's figures take them."""
    import numpy as np

    from .aggregate import run_figures
    from .protocol import current_protocol

    ok = df[(df["status"] == "ok") & df["median_epoch_s"].notna() & (df["median_epoch_s"] > 0)] if len(df) else df
    out: dict[tuple, dict] = {}
    for key, g in ok.groupby(KEY, dropna=False, sort=False) if len(ok) else ():
        g, _ = current_protocol(g)
        runs = [f for f in run_figures(g).tolist() if math.isfinite(f) and f > 0]
        if runs:
            out[_key(dict(zip(KEY, key)))] = {"runs": runs, "median": float(np.median(runs)),
                                              "machines": sorted({str(m) for m in g["machine"]})}
    return out


def _log_stats(xs: list[float]) -> tuple[float, float, int]:
    """(mean, sample variance, n) of the logs of ``xs`` (variance 0 for one value)."""
    logs = [math.log(x) for x in xs]
    n = len(logs)
    mean = sum(logs) / n
    return mean, (sum((x - mean) ** 2 for x in logs) / (n - 1) if n > 1 else 0.0), n


def welch(old: list[float], new: list[float], confidence: float = CONFIDENCE) -> dict:
    """Welch's t on log run figures: ratio (NEW ÷ OLD of the geometric means), its interval, p, verdict."""
    from scipy import stats

    (ma, va, na), (mb, vb, nb) = _log_stats(old), _log_stats(new)
    d = mb - ma
    if na < 2 or nb < 2:
        return {"ratio": math.exp(d), "low": float("nan"), "high": float("nan"), "p": float("nan"), "verdict": FEW}
    se2 = va / na + vb / nb
    if se2 <= 0:  # identical runs on both sides: a difference is exact, none is none
        verdict = NONE if d == 0 else (FASTER if d > 0 else SLOWER)
        return {"ratio": math.exp(d), "low": math.exp(d), "high": math.exp(d), "p": 0.0 if d else 1.0,
                "verdict": verdict}
    df = min(na, nb) - 1  # Welch's statistic against the conservative degrees of freedom (Hsu): at 2 to 5 runs a
    t = d / math.sqrt(se2)  # side, Satterthwaite's approximation lets the false-alarm rate pass the stated level
    p = 2 * stats.t.sf(abs(t), df)
    half = stats.t.ppf(0.5 + confidence / 2, df) * math.sqrt(se2)
    verdict = NONE if p >= 1 - confidence else (FASTER if d > 0 else SLOWER)
    return {"ratio": math.exp(d), "low": math.exp(d - half), "high": math.exp(d + half), "p": p, "verdict": verdict}


def runs_needed(old: list[float], new: list[float], confidence: float = CONFIDENCE) -> int | None:
    """Runs a side that would show the observed change (or ``SMALL`` where the observed one is under it) at
    ``confidence``, from the spread of these runs; None where no count up to ``MAX_RUNS`` would."""
    from scipy import stats

    (ma, va, na), (mb, vb, nb) = _log_stats(old), _log_stats(new)
    if na < 2 or nb < 2:
        return None
    var = ((na - 1) * va + (nb - 1) * vb) / (na + nb - 2)  # pooled
    d = max(abs(mb - ma), math.log(1 + SMALL))
    if var <= 0:
        return 2
    for n in range(2, MAX_RUNS + 1):
        if stats.t.ppf(0.5 + confidence / 2, n - 1) * math.sqrt(2 * var / n) < d:
            return n
    return None


def _versions(df) -> str:
    if not len(df):
        return ""
    ok = df[df["status"] == "ok"]
    pairs = sorted({f"{b} {v}" for b, v in zip(ok["backend"], ok["backend_version"]) if isinstance(v, str) and v})
    keras = sorted({str(v) for v in ok["keras"].dropna()})
    return "; ".join([f"keras {', '.join(keras)}"] * bool(keras) + pairs)


def _median_of(df, col: str) -> str:
    from .fmt import num

    v = df[col].dropna() if col in df else []
    return f"{num(float(v.median()))} (median of {len(v)} runs)" if len(v) else ""


def differences(old, new) -> list[tuple[str, str, str]]:
    """What differs between the sides beside the figures: library versions, machines, the host calibration."""
    out = []
    for what, f in (("library versions", _versions),
                    ("machines", lambda d: "; ".join(sorted({str(m) for m in d["machine"].dropna()})) if len(d)
                     else ""),
                    ("CPUs a run was allowed", lambda d: ", ".join(sorted({str(int(c)) for c in d["cpus"].dropna()}))
                     if len(d) else ""),
                    ("host calibration, M Python calls/s", lambda d: _median_of(d, "cal_dispatch")),
                    ("host calibration, matmul GFLOP/s", lambda d: _median_of(d, "cal_matmul"))):
        a, b = f(old), f(new)
        if a != b:
            out.append((what, a or "not recorded", b or "not recorded"))
    return out


def compare(old_folders, new_folders, confidence: float = CONFIDENCE) -> Comparison:
    """Both sides read as the report reads records (``table.load_table``); every configuration on both compared."""
    from . import table

    old_df, _, bad_old = table.load_table([Path(f) for f in old_folders])
    new_df, _, bad_new = table.load_table([Path(f) for f in new_folders])
    old, new = runs_by_configuration(old_df), runs_by_configuration(new_df)
    cmp = Comparison(differences=differences(old_df, new_df), skipped=[*bad_old, *bad_new])
    for k in sorted(set(old) & set(new)):
        o, n = old[k], new[k]
        t = welch(o["runs"], n["runs"], confidence)
        need = runs_needed(o["runs"], n["runs"], confidence) if t["verdict"] == NONE else None
        cmp.rows.append({**dict(zip(KEY, k)), "old_samples_per_s": o["median"], "old_runs": len(o["runs"]),
                         "new_samples_per_s": n["median"], "new_runs": len(n["runs"]), "ratio": t["ratio"],
                         "ratio_low": t["low"], "ratio_high": t["high"], "confidence": confidence,
                         "p_value": t["p"], "verdict": t["verdict"], "runs_needed_a_side": need,
                         "old_machine": "; ".join(o["machines"]), "new_machine": "; ".join(n["machines"])})
    cmp.only_old = [dict(zip(KEY, k)) for k in sorted(set(old) - set(new))]
    cmp.only_new = [dict(zip(KEY, k)) for k in sorted(set(new) - set(old))]
    return cmp


def regressions(cmp: Comparison, threshold: float) -> list[dict]:
    """The configurations significantly slower, by more than ``threshold`` (0.10: NEW under 0.9 × OLD)."""
    return [r for r in cmp.rows if r["verdict"] == SLOWER and r["ratio"] < 1 - threshold]


def write_changes(cmp: Comparison, folder: Path) -> Path:
    """``changes.csv``: one row per configuration on both sides, sorted by its key, figures to 6 significant
    digits: the same comparison writes the same bytes (stable for diffing)."""
    import pandas as pd

    from .csvs import inert
    from .render import write_text_atomic

    def g(v):
        return v if not isinstance(v, float) or math.isnan(v) else float(f"{v:.6g}")

    frame = pd.DataFrame([{c: g(r.get(c)) for c in COLUMNS} for r in cmp.rows], columns=COLUMNS)
    return write_text_atomic(Path(folder) / CHANGES, inert(frame).to_csv(index=False))
