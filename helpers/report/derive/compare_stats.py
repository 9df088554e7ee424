"""The test of a comparison (``compare``): NEW ÷ OLD of one configuration's run figures, tested on their logs with
Welch's t (unequal variances; Hsu's conservative degrees of freedom, the fewer runs less one), two-sided at
``CONFIDENCE``; its interval is the t interval of the difference of log means. Runs are the samples: two leases of
one machine type differ more than two runs of one lease, and an upgrade is measured in other runs anyway. A side with
one run has no spread to judge by: *not enough runs*. Where the runs show no difference, the runs a side that would
show the observed one (or ``SMALL``, where none is observed) are said. With 3 runs a side a Mann-Whitney U test
cannot go below p = 0.1, and a bootstrap of 3 runs underestimates the spread; this test keeps the stated false-alarm
rate at small counts (``tests/test_compare.py`` simulates it, with the power at 5% and 20%).

Everything is computed on logs (a record's samples/s may be 1e-3 or 1e300): a ratio is taken back from its log only
to be shown, clamped to 1e±``MAX_LOG10`` (``ratio_of``); never an overflow. The t distribution's tail and quantiles
are scipy's ufuncs (``special.stdtr``, ``stdtrit``; the quantiles cached): microseconds a configuration.

    welch(old_runs, new_runs)        # {"log_ratio", "log_low", "log_high", "ratio", "low", "high", "p", "verdict"}
    runs_needed(old_runs, new_runs)  # runs a side that would show the change seen, or None
"""

from __future__ import annotations

import functools
import math

CONFIDENCE = 0.99  # two-sided: a change is called at p < 0.01
SMALL = 0.05  # the change the runs needed are said for where none is observed
MAX_RUNS = 100
MAX_LOG10 = 300  # a ratio shown (changes.csv, the page) is clamped to 1e-300..1e300: finite, its log carried exact
FASTER, SLOWER, NONE, FEW = "faster", "slower", "no difference shown", "not enough runs"


def ratio_of(log_ratio: float) -> float:
    """``exp(log_ratio)`` clamped to 1e±``MAX_LOG10`` (never an overflow); NaN stays NaN."""
    if math.isnan(log_ratio):
        return float("nan")
    return math.exp(max(-MAX_LOG10 * math.log(10), min(MAX_LOG10 * math.log(10), log_ratio)))


def _log_stats(xs: list[float]) -> tuple[float, float, int]:
    """(mean, sample variance, n) of the logs of ``xs`` (variance 0 for one value)."""
    logs = [math.log(x) for x in xs]
    n = len(logs)
    mean = math.fsum(logs) / n
    return mean, (math.fsum((x - mean) ** 2 for x in logs) / (n - 1) if n > 1 else 0.0), n


@functools.lru_cache(maxsize=4096)
def _t_quantile(df: int, q: float) -> float:
    from scipy import special

    return float(special.stdtrit(df, q))


def welch(old: list[float], new: list[float], confidence: float = CONFIDENCE) -> dict:
    """Welch's t on log run figures: ratio (NEW ÷ OLD of the geometric means), its interval, p, verdict. Computed in
    logs throughout: ``log_ratio``, ``log_low``, ``log_high`` exact; ``ratio``, ``low``, ``high`` from them
    (``ratio_of``: clamped, never an overflow)."""
    from scipy import special

    (ma, va, na), (mb, vb, nb) = _log_stats(old), _log_stats(new)
    d = mb - ma
    nan = float("nan")
    if na < 2 or nb < 2:
        lo = hi = p = nan
        verdict = FEW
    else:
        se2 = va / na + vb / nb
        if se2 <= 0:  # identical runs on both sides: a difference is exact, none is none
            lo = hi = d
            p = 0.0 if d else 1.0
            verdict = NONE if d == 0 else (FASTER if d > 0 else SLOWER)
        else:
            df = min(na, nb) - 1  # Welch's statistic against the conservative degrees of freedom (Hsu): at 2 to 5
            se = math.sqrt(se2)  # runs a side, Satterthwaite's approximation lets the false-alarm rate pass it
            p = float(min(1.0, 2 * special.stdtr(df, -abs(d) / se)))
            half = _t_quantile(df, 0.5 + confidence / 2) * se
            lo, hi = d - half, d + half
            verdict = NONE if p >= 1 - confidence else (FASTER if d > 0 else SLOWER)
    return {"log_ratio": d, "log_low": lo, "log_high": hi, "ratio": ratio_of(d), "low": ratio_of(lo),
            "high": ratio_of(hi), "p": p, "verdict": verdict}


def runs_needed(old: list[float], new: list[float], confidence: float = CONFIDENCE) -> int | None:
    """Runs a side that would show the observed change (or ``SMALL`` where the observed one is under it) at
    ``confidence``, from the spread of these runs; None where no count up to ``MAX_RUNS`` would."""
    (ma, va, na), (mb, vb, nb) = _log_stats(old), _log_stats(new)
    if na < 2 or nb < 2:
        return None
    return runs_needed_at(mb - ma, ((na - 1) * va + (nb - 1) * vb) / (na + nb - 2), confidence)  # pooled


def runs_needed_at(log_ratio: float, var: float, confidence: float = CONFIDENCE) -> int | None:
    """Runs a side that would show a change of ``log_ratio`` (at least ``SMALL``) at ``confidence`` where the runs'
    logs spread by ``var`` (a side with one run: the spread of the comparison's other runs, ``compare_figures.spread``);
    None where no count up to ``MAX_RUNS`` would."""
    d = max(abs(log_ratio), math.log(1 + SMALL))
    if var <= 0:
        return 2
    for n in range(2, MAX_RUNS + 1):
        if _t_quantile(n - 1, 0.5 + confidence / 2) * math.sqrt(2 * var / n) < d:
            return n
    return None
