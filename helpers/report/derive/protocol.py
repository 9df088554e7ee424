"""What a configuration's figure rests on: the current protocol's runs (never mixed with the earlier one's), its runs
on a quiet host (``quiet_host``: host-busy runs only where no other exists), and the marks that say how many runs,
leases, epochs and seconds of window, and what to beware of."""

from __future__ import annotations

from helpers.params import COMMON_DEFAULTS
from helpers.record.upgrade import EARLIER
from helpers.report.load.values import isnull

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


def is_busy(v) -> bool:
    """A ``host_busy`` cell that says yes (a bool or numpy bool; missing and NaN say no)."""
    return not isnull(v) and bool(v)


MIN_STEADY_S = COMMON_DEFAULTS["min_steady_s"]  # seconds: the window records without ``params.min_steady_s`` hold
