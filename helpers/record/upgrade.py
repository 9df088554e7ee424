"""Every record read in the current shape: the one place that knows what changed between schemas.

``read_records`` passes each record it returns through ``upgrade``; code that reads records (the report, the
runner's resume) reads the current shape and branches on no schema number. A record keeps its ``schema`` as
written (the provenance of its figures); what the older meanings imply is said in fields of their own:

- ``protocol``: ``"current"`` (schema 2 on: a steady epoch is its training part alone, every clock read after a
  device sync) or ``"earlier"`` (schema 1): a figure never pools runs of both (``report.protocol``);
- ``caveats``: what a reader should know of its figures (``TIMING``: measured before the timing fix, its samples/s
  may be too high where it validated on JAX or a GPU, its energy mean power × time; ``ENERGY_MEDIAN``: its GPU
  energy is the median epoch's counter difference, biased low for short epochs);
- ``params``: every knob added after the record was written (``params.LATER_DEFAULTS``), at the value it ran at
  (a workload's own knob only where that workload has it: ``knobs_of``).

    rec = upgrade(rec, knobs_of=registry_knobs)   # in place; returns it
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from helpers import params as _params
from helpers.record import fields as F

if TYPE_CHECKING:
    from helpers.record.schema import Record

CURRENT, EARLIER = "current", "earlier"
TIMING = "timing before the sync fix"
ENERGY_MEDIAN = "energy of the median epoch"
COUNTER = "nvml_energy_counter"  # a record's energy_method when the board's energy counter measured it


def _schema(rec: Record) -> int:
    s = rec.get(F.SCHEMA)
    return s if isinstance(s, int) and not isinstance(s, bool) else 1


def upgrade(rec: Record, knobs_of=None) -> Record:
    """``rec`` in the current shape (see the module docstring); ``knobs_of(workload)``: the knobs that workload has
    (None, or one that raises for an unknown workload: its own later knobs are left as recorded)."""
    schema = _schema(rec)
    rec[F.PROTOCOL] = CURRENT if schema >= 2 else EARLIER
    caveats = []
    if schema < 2:
        caveats.append(TIMING)
    if schema == 2 and rec.get(F.ENERGY_METHOD) == COUNTER:
        caveats.append(ENERGY_MEDIAN)
    rec[F.CAVEATS] = caveats
    params = rec.get(F.PARAMS) if isinstance(rec.get(F.PARAMS), dict) else None
    if params is not None:
        own: set = set()
        if knobs_of is not None:
            try:
                own = set(knobs_of(rec.get(F.WORKLOAD)))
            except Exception:  # noqa: BLE001 - a workload this suite does not know: its knobs as recorded
                own = set()
        later = {k: v for k, v in _params.LATER_DEFAULTS.items()
                 if k not in params and (k in _params.COMMON or k in own)}
        if later:
            rec[F.PARAMS] = {**later, **params}
    return rec
