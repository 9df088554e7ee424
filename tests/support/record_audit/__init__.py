"""The record-write audit (``sitecustomize.py`` here): ``environment(log)`` for a run's processes, ``writes(log)`` to
read what they wrote into records folders."""

from __future__ import annotations

import json
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent


def environment(log: Path) -> dict:
    """Variables that make every Python process of a run (runner, kernels, process workers) log its writes into
    records folders to ``log``."""
    path = [str(HERE)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {"PYTHONPATH": os.pathsep.join(path), "CGB_RECORD_AUDIT": str(log)}


def writes(log: Path) -> list[dict]:
    return [json.loads(line) for line in Path(log).read_text().splitlines()] if Path(log).exists() else []
