"""A comparison's figures as its page and terminal print them (``compare``): each side's figure of a configuration as
the report rounds and marks it, NEW ÷ OLD as the ratio of the two medians printed, its between-run interval, the spread
a side of one run would have, the knobs a configuration of one side differs in from its twin on the other, and what
differs between the sides beside the figures (``differences``).

    side_figure(runs, windows, min_steady, busy)  # {"median", "digits", "marks", "shown"}: '2,160', '†§'
    shown_ratio(old_side, new_side)               # {"ratio", "ratio_low", "ratio_high", "interval", "ratio_digits"}
    ratio_shown(row) -> '0.333×';  interval_shown(row) -> '0.75–0.90'
"""

from __future__ import annotations

import math

from helpers.report.derive.compare_stats import ratio_of


def side_figure(runs: list[float], window, least, busy: bool) -> dict:
    """A side's figure of one configuration as the report shows it (``aggregate.summarise``, ``fmt``): the median
    over runs, its between-run interval, the digits those support and its marks (one run, a short window, every run
    on a busy host)."""
    import numpy as np

    from helpers.report.derive.aggregate import between_runs
    from helpers.report.derive.precision import sig_digits
    from helpers.report.derive.protocol import MIN_STEADY_S
    from helpers.report.words.fmt import marks, rounded

    median = float(np.median(runs))
    lo, hi, _ = between_runs(runs)
    w = window[np.isfinite(window)]
    lim = float(np.nanmax(least)) if np.isfinite(least).any() else MIN_STEADY_S
    short = bool(w.size and float(np.median(w)) < lim)
    d = sig_digits(median, lo, hi, len(runs), short)
    return {"median": median, "digits": d, "marks": marks(len(runs), short, busy), "shown": rounded(median, d)}


def spread(configurations: list[tuple[list[float], list[float]]]) -> float | None:
    """The pooled variance of the runs' logs within a configuration's side, over every side with two runs or more
    (``configurations``: (OLD runs, NEW runs) each): what a side with one run would spread by. None where no side
    has two runs."""
    ss, dof = 0.0, 0
    for side in (s for pair in configurations for s in pair):
        if len(side) > 1:
            logs = [math.log(x) for x in side]
            mean = math.fsum(logs) / len(logs)
            ss += math.fsum((x - mean) ** 2 for x in logs)
            dof += len(logs) - 1
    return ss / dof if dof else None


SAME = 5  # the first parts of a configuration's key a near one shares: workload, backend, device, batch, precision


def near(only: list[dict], keys: list[tuple], other, side: str, names: list[str]) -> None:
    """Each configuration of one side only (``only``, its ``keys``) gets ``near``: where the other side (``other``:
    its keys) measured the same workload, backend, device, batch and precision with other knobs, the knobs that
    differ ('workers 1 here, 4 on NEW'): the reason the two are not compared, said (a pair differs only in what the
    page says)."""
    by_base: dict[tuple, list[tuple]] = {}
    for k in other:
        by_base.setdefault(k[:SAME], []).append(k)
    for r, k in zip(only, keys):
        twins = by_base.get(k[:SAME], [])[:3]
        r["near"] = "; ".join(", ".join(f"{c} {k[i] or 'unset'} here, {t[i] or 'unset'} on {side}"
                                        for i, c in enumerate(names) if k[i] != t[i]) for t in twins)


def figure_shown(v, digits: int = 3) -> str:
    """A figure for people (``fmt.rounded``: separators, never powers of ten), except past 1e15 or under a millionth
    (1e+300, not 301 digits: such a figure is no measurement's)."""
    from helpers.report.load.values import isnull
    from helpers.report.words.fmt import rounded

    return rounded(v, digits) if isnull(v) or 1e-6 <= abs(v) < 1e15 else f"{v:.{digits}g}"


def ratio_shown(r) -> str:
    """'0.82×': NEW ÷ OLD of the medians printed beside it, to the digits of its less precise side; '' where none."""
    from helpers.report.load.values import isnull

    return "" if isnull(r.get("ratio")) else f"{figure_shown(r['ratio'], int(r.get('ratio_digits') or 3))}×"


def interval_shown(r) -> str:
    """'0.75–0.90': the ratio's between-run interval (its digits); '' where a side has one run."""
    from helpers.report.load.values import isnull

    if isnull(r.get("ratio_low")):
        return ""
    d = int(r.get("ratio_digits") or 3)
    return f"{figure_shown(r['ratio_low'], d)}–{figure_shown(r['ratio_high'], d)}"


def shown_ratio(o: dict, n: dict) -> dict:
    """NEW ÷ OLD as the page prints it: the ratio of the two medians printed beside it (never of other means), its
    between-run interval from both sides' runs (``aggregate.ratio_interval``: the report's, as for a speedup; none
    where a side has one run) and the digits of its less precise side."""
    from helpers.report.derive.aggregate import ratio_interval

    log_r = math.log(n["median"]) - math.log(o["median"])  # in logs: figures far apart never overflow
    lo, hi, kind = ratio_interval([x / n["median"] for x in n["runs"]], [x / o["median"] for x in o["runs"]])
    lo, hi = ((ratio_of(log_r + math.log(v)) if v > 0 else 0.0) if not math.isnan(v) else v for v in (lo, hi))
    return {"old_samples_per_s": o["median"], "new_samples_per_s": n["median"], "ratio": ratio_of(log_r),
            "ratio_low": lo, "ratio_high": hi, "interval": kind, "ratio_digits": min(o["digits"], n["digits"])}


def _versions(df) -> str:
    if not len(df):
        return ""
    ok = df[df["status"] == "ok"]
    pairs = sorted({f"{b} {v}" for b, v in zip(ok["backend"], ok["backend_version"]) if isinstance(v, str) and v})
    keras = sorted({str(v) for v in ok["keras"].dropna()})
    return "; ".join([f"keras {', '.join(keras)}"] * bool(keras) + pairs)


def _median_of(df, col: str) -> str:
    from helpers.report.words.fmt import num

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
        try:
            a, b = f(old), f(new)
        except Exception as exc:  # noqa: BLE001 - a record's odd value costs this line only
            a, b = f"not read ({type(exc).__name__})", ""
        if a != b:
            out.append((what, a or "not recorded", b or "not recorded"))
    return out
