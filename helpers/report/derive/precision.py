"""How many significant digits a figure has earned: from its between-run interval, its runs and its window
(``sig_digits``, the report's one rounding rule; ``digits`` for a configuration's row). The words stage rounds by it."""

from __future__ import annotations

from helpers.report.load.values import isnull


def sig_digits(med, lo=None, hi=None, n_runs=1, short=False) -> int:
    """How many significant digits a figure may show: the report's one rounding rule.

    * one run: 3 digits, 2 when its steady window was under min_steady_s (``short``): nothing measured
      how far a second run would land, and a short window adds start-up noise;
    * several runs: from the relative width r = (high − low) / |median| of the between-run interval,
      digits = 1 − floor(log10 r), kept within 2..4 (r ≥ 10%: 2 digits; 1% ≤ r < 10%: 3; 0.1% ≤ r < 1%:
      4; identical runs: 4); at most 3 when the median run's window was short.
    Derived figures (seconds per epoch, costs, ratios) keep the digits of the figure(s) they come from."""
    import math

    several = not isnull(n_runs) and n_runs >= 2 and not isnull(lo) and not isnull(hi) and not isnull(med)
    if not several:
        return 2 if short else 3
    r = abs(hi - lo) / abs(med) if med else 0.0
    d = 4 if r <= 1e-12 else min(4, max(2, 1 - math.floor(math.log10(r))))
    return min(d, 3) if short else d


def digits(r, suffix: str = "") -> int:
    """The significant digits a configuration's figures may show (``sig_digits`` on its runs and window)."""
    return sig_digits(r.get(f"samples_per_s{suffix}"), r.get(f"sps_lo{suffix}"), r.get(f"sps_hi{suffix}"),
                      r.get(f"n_runs{suffix}"), bool(r.get(f"short_window{suffix}")))
