"""The tuning ladder's grids as points (``ladder_points``): params/ladder.yaml, then params/ladder_tf.yaml (TF's
rungs, run apart: its GPU build is carried in parts), or the one grid given; a grid that cannot be read adds none."""

from __future__ import annotations

import functools

from helpers.paths import PROJECT_ROOT

LADDER = PROJECT_ROOT / "params" / "ladder.yaml"
LADDERS = (LADDER, PROJECT_ROOT / "params" / "ladder_tf.yaml")


@functools.lru_cache(maxsize=2)
def ladder_points(path: str | None = None) -> tuple:
    """Every point of the ladder's grids (``LADDERS``), or of the one grid ``path``, in their order."""
    from helpers import grid

    points = []
    for f in ([path] if path else LADDERS):
        try:
            points += grid.expand(f)
        except (grid.GridError, OSError):
            continue
    return tuple(points)
