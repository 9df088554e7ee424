"""What a configuration's figure rests on: the current protocol's runs (never mixed with the earlier one's), and the
marks that say how many runs, leases, epochs and seconds of window, and what to beware of."""

from __future__ import annotations

from . import fmt
from .fmt import isnull

MIN_STEPS = 100  # a point with fewer steps per epoch carries a fixed per-epoch cost (iterator restart, syncs)


def current_protocol(g):
    """(the runs of one configuration that its figure rests on, how many were left out): where a configuration
    has runs of the current protocol (record schema 2 or later: a steady window of at least ``min_steady_s``,
    validation timed apart), its runs of the earlier protocol (schema 1) are left out of its figure, so a
    median never mixes protocols; they stay in the records and the run tables. A configuration measured only
    under the earlier protocol keeps its runs (and the overview's mark)."""
    import pandas as pd

    schema = pd.to_numeric(g["schema"], errors="coerce").fillna(1)
    if (schema >= 2).any() and (schema < 2).any():
        return g[schema >= 2], int((schema < 2).sum())
    return g, 0


def precision_marks(r) -> str:
    """What a figure rests on, for tables: runs, leases, epochs, window, and warnings (one run, few steps)."""
    n, lease = int(r["n_runs"]), f", {int(r['n_leases'])} lease(s)" if r.get("n_leases") else ""
    marks = [f"{n} run{'s' if n != 1 else ''}{lease}, {int(r['n_epochs'])} epochs"]
    if not isnull(r.get("steady_s")):
        marks[0] += f", {r['steady_s']:.2g} s timed per run (median)"
    if r.get("short_window"):
        marks.append(f"{fmt.SHORT} window under {r['min_steady_s']:g} s")
    if n == 1:
        marks.append(f"{fmt.ONE_RUN} one run: no between-run spread")
    if r.get("few_steps"):
        marks.append(f"< {MIN_STEPS} steps/epoch")
    if not isnull(r.get("shared_host")) and r["shared_host"] > 0:
        marks.append(f"host shared: up to {int(r['shared_host'])} other runner(s) busy when a run started")
    return "; ".join(marks)
