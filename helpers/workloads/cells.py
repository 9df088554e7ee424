"""The notebooks' parameters cells, generated from the knobs (``helpers.params``) and the workloads' entries.

    python -m helpers.workloads.cells            # exit 1 and name the notebooks whose cell differs
    python -m helpers.workloads.cells --write    # after changing a knob, a default or a note: rewrite the cells

A workload notebook's cell lists every knob of the workload (``registry.knobs``): the common ones in
``helpers.params.COMMON``'s order, then the workload's own, then the two the runner sets (``output_dir``,
``point_id``); each with the workload's value (``registry.defaults``, else the knob's ``example``) and its note
(``registry.note``). The summary notebook's cell is ``helpers.params.report_cell()``. Only the cell tagged
``parameters`` is touched; the notebooks are written as nbformat writes them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from helpers import params as _params
from helpers.paths import NOTEBOOKS

from . import registry


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


def committed(path: Path) -> str:
    """The source of the parameters cell of the notebook at ``path``."""
    src = _cell(json.loads(path.read_text(encoding="utf-8")), path)["source"]
    return "".join(src) if isinstance(src, list) else src


def differing(folder: Path = NOTEBOOKS) -> list[str]:
    """The notebooks under ``folder`` whose parameters cell is not the generated one."""
    return sorted(name for name, source in expected().items() if committed(folder / name) != source)


def write(folder: Path = NOTEBOOKS) -> list[str]:
    """Rewrite the parameters cell of every notebook whose cell differs; the names written."""
    changed = differing(folder)
    want = expected()
    for name in changed:
        path = folder / name
        nb = json.loads(path.read_text(encoding="utf-8"))
        _cell(nb, path)["source"] = want[name].splitlines(keepends=True)
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
        print(f"{name}: its parameters cell differs from the knobs (python -m helpers.workloads.cells --write)")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
