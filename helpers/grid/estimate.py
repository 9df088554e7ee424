"""How long runs should take here (``helpers.grid``, 3 of 3), from the wall times of earlier records on this machine.

    est = estimate(order, records)   # an Estimate: seconds, and what they rest on (est.describe())
    fmt_duration(5400)               # "1.5 h"
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass


@dataclass
class Estimate:
    """Seconds a list of runs should take here, and what that rests on."""

    seconds: float = 0.0
    same: int = 0  # runs estimated from records of the same workload, backend and device
    same_records: int = 0
    other: int = 0  # runs estimated from every record of this machine
    other_s: float | None = None  # their median wall time
    records: int = 0
    none: int = 0  # runs without an estimate (no record of this machine)

    @property
    def known(self) -> bool:
        return self.same + self.other > 0

    def describe(self) -> str:
        if not (self.same or self.other or self.none):
            return "no run to start a kernel for: no time to estimate"
        if not self.known:
            return "no time estimate (no complete record of this machine in the outputs folder's runs/)"
        parts = []
        if self.same:
            parts.append(f"{self.same} run(s) at the median wall time of earlier runs of the same workload, "
                         f"backend and device ({self.same_records} record(s))")
        if self.other:
            parts.append(f"{self.other} at the median of every earlier run ({self.other_s:.1f} s, "
                         f"{self.records} record(s))")
        if self.none:
            parts.append(f"{self.none} without an estimate")
        return f"estimated {fmt_duration(self.seconds)} on this machine: " + "; ".join(parts)


def estimate(order: list[dict], records: list[dict]) -> Estimate:
    """How long ``order`` (runs) should take: for each run, the median ``wall_s`` of ``records`` (complete
    records of this machine) of the same workload, backend and device, else of every record, else none."""
    walls: dict[tuple, list[float]] = {}
    every = []
    for r in records:
        w = r.get("wall_s")
        if isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) and w >= 0:
            walls.setdefault((r.get("workload"), r.get("backend"), r.get("device")), []).append(float(w))
            every.append(float(w))
    est = Estimate(records=len(every), other_s=statistics.median(every) if every else None)
    used = set()
    for p in order:
        kind = (p["workload"], p["backend"], p["device"])
        if kind in walls:
            est.seconds += statistics.median(walls[kind])
            est.same += 1
            used.add(kind)
        elif every:
            est.seconds += est.other_s
            est.other += 1
        else:
            est.none += 1
    est.same_records = sum(len(walls[k]) for k in used)
    return est


def fmt_duration(seconds: float) -> str:
    """``42 s``, ``7.5 min``, ``3.2 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
