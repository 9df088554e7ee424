"""Records left by dead runners, set aside so that neither the report nor resume counts them.

    aside = set_aside_orphans(out_root / "runs")   # before a run's first point
"""

from __future__ import annotations

from pathlib import Path

from helpers.record.reader import read_records
from helpers.runner.claims import is_alive
from helpers.runner.notebook import is_complete, set_aside


def set_aside_orphans(runs: Path) -> list[Path]:
    """Set aside the records that a notebook wrote but the runner never finished (no ``wall_s``), and ok records
    whose executed notebook is gone (resume runs the point again: the old record must not count beside the new
    one), in run folders whose runner is dead; a live runner's point in progress is left alone. The hidden
    ``.*.partial.ipynb`` a killed runner left are removed."""
    if not runs.is_dir():
        return []
    out = []
    for run_dir in sorted(p for p in runs.iterdir() if p.is_dir()):
        if is_alive(run_dir):
            continue
        for partial in (run_dir / "notebooks").glob(".*.partial.ipynb"):  # papermill's output, never renamed
            partial.unlink(missing_ok=True)
        if not (run_dir / "records").is_dir():
            continue
        records, _ = read_records([run_dir / "records"])
        for r in records:
            if r.get("wall_s") is None or not is_complete(r):
                aside = set_aside(Path(r["_path"]))
                if aside is not None:
                    out.append(aside)
    return out
