"""Project paths, from one place (never from the working directory)."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = PROJECT_ROOT / "notebooks"
PARAMS = PROJECT_ROOT / "params"


def outputs_dir() -> Path:
    """Where runs write (``CGB_OUTPUTS`` overrides; default ``<project>/outputs``)."""
    return Path(os.environ.get("CGB_OUTPUTS", PROJECT_ROOT / "outputs")).resolve()
