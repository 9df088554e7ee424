"""What a configuration's figure rests on: the current protocol's runs (never mixed with the earlier one's), its runs
on a quiet host (``quiet_host``: host-busy runs only where no other exists), and the marks that say how many runs,
leases, epochs and seconds of window, and what to beware of."""

from __future__ import annotations

from helpers.record.upgrade import EARLIER
from helpers.report.words import fmt
from helpers.report.words.fmt import isnull

HOST_BUSY = "host busy"  # the mark of a figure measured while another process used the cores
MIN_STEPS = 100  # a point with fewer steps per epoch carries a fixed per-epoch cost (iterator restart, syncs)


def current_protocol(g):
    """(the runs of one configuration that its figure rests on, how many were left out): where a configuration
    has runs of the current protocol (a steady window of at least ``min_steady_s``, validation timed apart: the
    reader's ``protocol``, helpers.record.upgrade), its runs of the earlier protocol are left out of its figure, so
    a median never mixes protocols; they stay in the records and the run tables. A configuration measured only
    under the earlier protocol keeps its runs (and the overview's mark)."""
    earlier = g["protocol"] == EARLIER
    if earlier.any() and not earlier.all():
        return g[~earlier], int(earlier.sum())
    return g, 0


def quiet_host(g):
    """(the runs of one configuration that its figure rests on, how many host-busy runs were left out): a run
    measured while another process used more than a quarter of its cores (``host_busy``, helpers.measure.host_load)
    is left out of the figure while the configuration has an unmarked run; where every run is marked, they all stay
    and the figure is marked *host busy* (``host_busy`` of its summary row)."""
    if "host_busy" not in g:
        return g, 0
    busy = g["host_busy"].fillna(False).astype(bool)
    if busy.any() and not busy.all():
        return g[~busy], int(busy.sum())
    return g, 0


def marked(v) -> bool:
    """A ``host_busy`` cell that says yes (a bool or numpy bool; missing and NaN say no)."""
    return not isnull(v) and bool(v)


def busy_sides(r) -> str:
    """'host busy (CPU side)', '... (GPU side)', '... (both sides)' for a row with ``host_busy_cpu``/``_gpu`` (a
    matched pair, a verdict row): a side whose figure rests on host-busy runs only; '' where neither does."""
    sides = [d.upper() for d in ("cpu", "gpu") if marked(r.get(f"host_busy_{d}"))]
    if not sides:
        return ""
    return f"{HOST_BUSY} ({'both sides' if len(sides) == 2 else sides[0] + ' side'})"


def precision_marks(r) -> str:
    """What a figure rests on, for tables: runs, leases, epochs, window, and warnings (one run, few steps)."""
    n, lease = int(r["n_runs"]), f", {int(r['n_leases'])} lease(s)" if r.get("n_leases") else ""
    marks = [f"{n} run{'s' if n != 1 else ''}{lease}, {int(r['n_epochs'])} epochs"]
    if not isnull(r.get("steady_s")):
        marks[0] += f", {fmt.num(r['steady_s'], 2)} s timed per run (median)"
    if r.get("short_window"):
        marks.append(f"{fmt.SHORT} window under {r['min_steady_s']:g} s")
    if n == 1:
        marks.append(f"{fmt.ONE_RUN} one run: no between-run spread")
    if r.get("few_steps"):
        marks.append(f"< {MIN_STEPS} steps/epoch")
    if marked(r.get("host_busy")):
        marks.append(f"{HOST_BUSY}: every run measured while another process used its cores")
    if not isnull(r.get("n_host_busy")) and r["n_host_busy"] > 0:
        marks.append(f"{int(r['n_host_busy'])} {HOST_BUSY} run(s) left out")
    if not isnull(r.get("shared_host")) and r["shared_host"] > 0:
        marks.append(f"host shared: up to {int(r['shared_host'])} other runner(s) busy when a run started")
    return "; ".join(marks)
