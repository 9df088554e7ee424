"""The notebooks' parameters cells, generated from the knobs (``helpers.params``) and the workloads' entries, and
the code cells every workload notebook shares (``SHARED``: a cell tagged with its name holds its one source).

    python -m helpers.workloads.cells            # exit 1 and name the notebooks whose cell differs
    python -m helpers.workloads.cells --write    # after changing a knob, a default or a note: rewrite the cells

A workload notebook's cell lists every knob of the workload (``registry.knobs``): the common ones in
``helpers.params.COMMON``'s order, then the workload's own, then the two the runner sets (``output_dir``,
``point_id``); each with the workload's value (``registry.defaults``, else the knob's ``example``) and its note
(``registry.note``). The summary notebook's cell is ``helpers.params.report_cell()``. Only the cells tagged
``parameters`` or with a ``SHARED`` name are touched; the notebooks are written as nbformat writes them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from helpers import params as _params
from helpers.paths import NOTEBOOKS

from . import registry

# the code cells of a workload notebook that are the same in every one (custom.ipynb keeps its own begin and
# finish: it checks the saved model first, and shows what it read)
SHARED = {
    "begin": ("from helpers.point.session import begin\n\npt = begin(globals())  # validates every parameter, sets "
              "KERAS_BACKEND, CUDA_VISIBLE_DEVICES, threads"),
    "verify": "pt.verify();  # the device a Keras tensor really lives on; a GPU point without a GPU is skipped",
    "fit": "history = pt.fit(model, data)",
    "finish": "record = pt.finish()",
    "plot": "from helpers.report import plot_point\n\nplot_point(record);",
}


def workload_cell(name: str) -> str:
    """Workload ``name``'s parameters cell."""
    knobs = registry.knobs(name)
    last = [k for k in _params.RUNNER_SET if k in knobs]
    order = [k for k in knobs if k not in last] + last
    values = {**registry.defaults(name), "workload": name}
    return _params.parameters_cell([(k, values.get(k, knobs[k].example), registry.note(name, k)) for k in order])


def expected() -> dict[str, str]:
    """Notebook file name -> the source its parameters cell must have."""
    out = {f"{n}.ipynb": workload_cell(n) for n in registry.names()}
    out["summary.ipynb"] = _params.report_cell()
    return out


def _cell(nb: dict, path: Path) -> dict:
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(tagged) != 1:
        raise ValueError(f"{path}: {len(tagged)} cells tagged 'parameters'; expected one")
    return tagged[0]


def _source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def _shared(nb: dict) -> list[tuple[dict, str]]:
    """(cell, its ``SHARED`` source) for each cell tagged with a ``SHARED`` name."""
    return [(c, SHARED[t]) for c in nb["cells"] for t in c.get("metadata", {}).get("tags", []) if t in SHARED]


def committed(path: Path) -> str:
    """The source of the parameters cell of the notebook at ``path``."""
    return _source(_cell(json.loads(path.read_text(encoding="utf-8")), path))


def differing(folder: Path = NOTEBOOKS) -> list[str]:
    """The notebooks under ``folder`` whose parameters cell, or a shared cell, is not the generated one."""
    out = []
    for name, source in expected().items():
        nb = json.loads((folder / name).read_text(encoding="utf-8"))
        if _source(_cell(nb, folder / name)) != source or any(_source(c) != want for c, want in _shared(nb)):
            out.append(name)
    return sorted(out)


def write(folder: Path = NOTEBOOKS) -> list[str]:
    """Rewrite the parameters cell and the shared cells of every notebook where one differs; the names written."""
    changed = differing(folder)
    want = expected()
    for name in changed:
        path = folder / name
        nb = json.loads(path.read_text(encoding="utf-8"))
        _cell(nb, path)["source"] = want[name].splitlines(keepends=True)
        for cell, source in _shared(nb):
            cell["source"] = source.splitlines(keepends=True)
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return changed


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["--write"]):
        print("usage: python -m helpers.workloads.cells [--write]", file=sys.stderr)
        return 2
    if argv == ["--write"]:
        print("\n".join(f"wrote {n}" for n in write()) or "every parameters cell is up to date")
        return 0
    stale = differing()
    for name in stale:
        print(f"{name}: its parameters cell or a shared cell differs from the generated one "
              "(python -m helpers.workloads.cells --write)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
