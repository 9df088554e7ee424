"""Figures in words, as the verdict's sentences and tables write them: a duration ('4.4 min †§'), an amount of money
('$0.0042'), each with the marks of the figures it derives from; what else the two sides of a pair differ in ('input
workers: 1 on the CPU, 4 on the GPU').

    duration(264, "†") -> '4.4 min †';  money(0.0042) -> '$0.0042';  differs(row) -> ''
"""

from __future__ import annotations

from helpers.report.load.values import isnull
from helpers.report.words import fmt
from helpers.report.words.fmt import rounded


def _workers(r, suffix: str) -> str:
    v = r.get(f"input_workers{suffix}", r.get(f"workers{suffix}"))
    try:
        return "" if isnull(v) or v == "" else f"{int(float(v))}"
    except (TypeError, ValueError):
        return str(v)


def differs(r) -> str:
    """What else the two sides of a pair (a verdict row, a matched pair) differ in: 'input workers: 1 on the CPU, 4
    on the GPU' (the data loader's workers: ``w1``, ``w4`` in the charts' labels); '' where nothing does. A pair
    differs only in what its row says."""
    cpu, gpu = _workers(r, "_cpu"), _workers(r, "_gpu")
    if cpu == gpu:
        return ""
    return f"input workers: {cpu or 'not set'} on the CPU, {gpu or 'not set'} on the GPU"


def duration(s, marks: str = "") -> str:
    """Seconds for people: '0.42 s', '41 s', '12 min', '3.2 h', '2.1 days'; with the ``marks`` of the figures it
    derives from ('4.4 min †§')."""
    if isnull(s):
        return "?"
    s = float(s)
    if s < 60:
        text = f"{rounded(s, 2)} s"
    elif s < 3600:
        text = f"{rounded(s / 60, 2)} min"
    elif s < 48 * 3600:
        text = f"{rounded(s / 3600, 2)} h"
    else:
        text = f"{rounded(s / 86400, 2)} days"
    return fmt.marked(text, marks)


def money(v, marks: str = "") -> str:
    return "" if isnull(v) else fmt.marked(f"${rounded(v, 2)}" if v < 100 else f"${v:,.0f}", marks)
