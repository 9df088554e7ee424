"""The first sentence of the comparison page (``compare_page``): what it measured (NEW slower or faster on how many
configurations, by how much), then what the test can say with the runs at hand (one run a side: not enough to test,
and how many runs a side would show a change of this size), then what differs between the sides.

    first_sentence(cmp, 0.99) -> 'NEW slower on all 27 configurations, 1.4×–31×; one run a side: not enough ...'
"""

from __future__ import annotations

import math

from helpers.report.load.values import isnull
from helpers.report.words.compare import FASTER, FEW, NONE, SLOWER, Comparison
from helpers.report.words.compare_figures import figure_shown as _num


def _factors(rows: list[dict]) -> str:
    """'1.4×–31×': how many times slower (or faster) the rows read, the fewest to the most."""
    f = sorted(max(r["ratio"], 1 / r["ratio"]) if r["ratio"] > 0 else math.inf for r in rows)
    lo, hi = (f"{_num(v, 2)}×" for v in (f[0], f[-1]))
    return lo if lo == hi else f"{lo}–{hi}"


def first_sentence(cmp: Comparison, confidence: float) -> str:
    """The comparison's first words: what it measured (NEW slower or faster on how many configurations, by how
    much), then what the test can say with the runs at hand, then what differs between the sides."""
    n = len(cmp.rows)
    if not n:
        return "No configuration was measured on both sides: nothing is compared."
    slower = [r for r in cmp.rows if not isnull(r["ratio"]) and r["ratio"] < 1]
    faster = [r for r in cmp.rows if not isnull(r["ratio"]) and r["ratio"] > 1]
    said = []
    for rows, word in ((slower, "slower"), (faster, "faster")):
        if rows:
            on = ("the one configuration measured on both sides" if n == 1 else f"all {n} configurations"
                  if len(rows) == n else f"{len(rows)} of {n} configurations" if not said else str(len(rows)))
            said.append(f"{word} on {on}, {_factors(rows)}" if n == len(rows) else
                        f"{word} on {on} ({_factors(rows)})")
    same = n - len(slower) - len(faster)
    parts = ["NEW " + ", ".join(said) + (f"; the same on {same}" if same else "") if said else
             f"NEW reads the same as OLD on all {n} configurations"]
    tested = [r for r in cmp.rows if r["verdict"] in (SLOWER, FASTER, NONE)]
    few = [r for r in cmp.rows if r["verdict"] == FEW]
    if tested:
        counts = [f"{sum(r['verdict'] == v for r in tested)} {v}" for v in (SLOWER, FASTER, NONE)
                  if any(r["verdict"] == v for r in tested)]
        parts.append(f"the test over runs ({confidence:.0%} confidence) says: {', '.join(counts)}")
    if few:
        need = sorted({int(r["runs_needed_a_side"]) for r in few if not isnull(r.get("runs_needed_a_side"))})
        words = ("one run a side" if all(min(r["old_runs"], r["new_runs"]) == 1 and max(r["old_runs"], r["new_runs"])
                                          == 1 for r in few) else "one run on a side")
        head = (f"{words}: not enough runs to test" if len(few) == n else
                f"{len(few)} with {words}: not enough runs to test")
        if need:
            runs = f"{need[0]}" if len(need) == 1 else f"{need[0]}–{need[-1]}"
            head += (f" ({runs} runs a side would show a change of {'this size' if len(few) == 1 else 'these sizes'},"
                     " at the spread of this comparison's other runs)")
        else:
            head += " (at least 2 runs a side, 3 or more to see a change of a few percent)"
        parts.append(head)
    if cmp.differences:
        whats = list(dict.fromkeys(what.split(",")[0] for what, _, _ in cmp.differences))
        parts.append("the sides differ in more than the code: " + ", ".join(whats) + " (listed below)")
    return "; ".join(parts) + "."
