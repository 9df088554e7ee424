"""Project paths, from one place.

``PROJECT_ROOT`` holds the suite's own files: ``notebooks/``, ``params/``, ``data/`` and ``reference/<name>/records``.
In a checkout it is the folder above helpers/ (it holds ``notebooks/`` and ``params/``). In an installed copy
(``pip install .`` without ``-e``) it is ``helpers/_suite/``, where pyproject.toml ships those files. Resources never
come from the working directory; only where an installed copy's runs write does (``outputs_dir``).
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = _PACKAGE.parent
INSTALLED = not ((_CHECKOUT / "notebooks").is_dir() and (_CHECKOUT / "params").is_dir())
PROJECT_ROOT = _PACKAGE / "_suite" if INSTALLED else _CHECKOUT
CODE_ROOT = _CHECKOUT  # the folder that holds the helpers package (a kernel's PYTHONPATH), checkout or site-packages
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
    """Where runs write (``CGB_OUTPUTS`` overrides; default ``<project>/outputs`` in a checkout, ``./outputs`` of
    the working directory in an installed copy: never inside the installed package)."""
    if "CGB_OUTPUTS" in os.environ:
        return Path(os.environ["CGB_OUTPUTS"]).resolve()
    return ((_working_dir() if INSTALLED else PROJECT_ROOT) / "outputs").resolve()


def _working_dir() -> Path:
    """The folder an installed copy's ``outputs/`` goes in: the working directory, unless that lies inside the
    installed package (a kernel works in the shipped ``notebooks/``, papermill's cwd): then the shell's (``$PWD``,
    which a kernel's launch keeps), else the home folder."""
    tried = [Path.cwd(), *([Path(os.environ["PWD"])] if os.environ.get("PWD") else [])]
    return next((d for d in tried if not d.resolve().is_relative_to(_PACKAGE)), Path.home())
