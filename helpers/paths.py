"""Project paths, from one place (never from the working directory)."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = PROJECT_ROOT / "notebooks"
PARAMS = PROJECT_ROOT / "params"


def without_prefix(obj, prefix: str | Path):
    """A JSON-able ``obj`` with the folder ``prefix`` cut from every string in it (paths in commands,
    tracebacks, parameters): what is published names no machine's folders."""
    import json

    cut = json.dumps(str(prefix).rstrip("/") + "/")[1:-1]
    return json.loads(json.dumps(obj).replace(cut, ""))


def workload_notebook(workload: str) -> Path:
    """The notebook a point of ``workload`` runs: ``notebooks/<workload>.ipynb``, or the one in ``$CGB_NOTEBOOKS``
    when set (the tests' tiny notebooks: the runner's behaviour without a framework, tests/support/tiny.py)."""
    return Path(os.environ.get("CGB_NOTEBOOKS") or NOTEBOOKS) / f"{workload}.ipynb"


def outputs_dir() -> Path:
    """Where runs write (``CGB_OUTPUTS`` overrides; default ``<project>/outputs``)."""
    return Path(os.environ.get("CGB_OUTPUTS", PROJECT_ROOT / "outputs")).resolve()
