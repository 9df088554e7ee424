"""Tiny notebooks for the runner's own behaviour (papermill tests its runner the same way): each is a workload
notebook's ``parameters`` cell, so the runner injects and validates exactly what it does for the real one, then a
few lines that import no framework. ``CGB_NOTEBOOKS=<folder>`` makes the runner run them instead of notebooks/.

What a point does is chosen by its ``seed`` through ``CGB_TINY`` (JSON, e.g. ``{"2": "sleep:30", "3": "fail"}``;
a seed not named: ``ok``):

- ``ok``: the point's record written by ``helpers.point.session`` (``begin`` then ``finish``), as a notebook writes it;
- ``sleep:S``: S seconds first (an interrupt, a timeout or ``--budget`` meets it mid-point), then ``ok``;
- ``gate:PATH``: waits until the file PATH exists (the test creates it once it has seen what it waits for; at most
  600 s), then ``ok``;
- ``fail``: an exception in a cell, its failed record written first (``Point.fail``), as a workload's error is;
- ``crash``: an exception in a cell, no record (the runner writes the failed one);
- ``memory``: an allocation far beyond the machine (MemoryError), recorded as ``fail`` is;
- ``kill``: the kernel kills itself with SIGKILL (the runner names the signal).
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from helpers.paths import NOTEBOOKS

BODY = '''import json, os, signal, time

from helpers.point.session import begin

pt = begin(globals())  # validates the parameters and forces the device, as every workload notebook does
what = json.loads(os.environ.get("CGB_TINY") or "{}").get(str(seed), "ok")
print("tiny notebook:", what)
if what.startswith("sleep:"):
    time.sleep(float(what.split(":", 1)[1]))
elif what.startswith("gate:"):
    t0 = time.monotonic()
    while not os.path.exists(what.split(":", 1)[1]) and time.monotonic() - t0 < 600:
        time.sleep(0.1)
elif what == "fail":
    try:
        raise RuntimeError("tiny notebook: a failing cell")
    except RuntimeError as exc:
        pt.fail(exc)
        raise
elif what == "crash":
    raise RuntimeError("tiny notebook: a cell failed before any record")
elif what == "memory":
    import numpy as np

    try:
        np.ones(2**60, dtype=np.uint8)
    except MemoryError as exc:
        pt.fail(exc)
        raise
elif what == "kill":
    os.kill(os.getpid(), signal.SIGKILL)'''


def make(folder: Path, workloads=("mlp_mnist", "cnn_cifar10")) -> Path:
    """``folder`` with a tiny notebook for each of ``workloads`` (their real parameters cells)."""
    folder.mkdir(parents=True, exist_ok=True)
    for w in workloads:
        real = nbformat.read(NOTEBOOKS / f"{w}.ipynb", as_version=4)
        params = next(c for c in real.cells if "parameters" in c.metadata.get("tags", []))
        nb = nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_markdown_cell(f"# tiny {w}: the runner's behaviour, no framework (tests/support/tiny.py)"),
            nbformat.v4.new_code_cell(params.source, metadata={"tags": ["parameters"]}),
            nbformat.v4.new_code_cell(BODY),
            nbformat.v4.new_code_cell("record = pt.finish()")])
        nb.metadata = real.metadata
        nbformat.write(nb, folder / f"{w}.ipynb")
    return folder


def env(folder: Path, behaviours: dict | None = None) -> dict:
    """The variables that make a runner started with them run ``folder``'s tiny notebooks."""
    return {"CGB_NOTEBOOKS": str(folder), "CGB_TINY": json.dumps({str(k): v for k, v in (behaviours or {}).items()})}
