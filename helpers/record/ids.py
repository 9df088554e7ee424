"""A grid point's id, its record's file name, and where a record's executed notebook lies.

    pid = point_id(params, machine_key)     # same parameters on the same machine -> same id
    pid = point_id(params, mkey, contents)  # ... and files of the same content (workloads.contents: knob -> sha256)
    record_name(params, pid)                # <workload>-<backend>-<device>-<id>.json
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from helpers.params import LATER_DEFAULTS

# Parameters that do not change what is measured (where it is written, its id; the epochs the report plans for).
_ID_EXCLUDED = ("output_dir", "point_id", "epochs_planned")


def point_id(params: dict, machine_key: str, contents: dict | None = None) -> str:
    """Stable id of a grid point: same parameters on the same machine -> same id. ``contents``: the sha256 of each
    file a knob names (a custom model, its data): a file saved again with another network is another point. The
    ids of points that read no file are those of before."""
    core = {k: v for k, v in sorted(params.items())
            if k not in _ID_EXCLUDED and not (k in LATER_DEFAULTS and v == LATER_DEFAULTS[k])}
    point = {"params": core, "machine": machine_key}
    if contents:
        point["contents"] = dict(sorted(contents.items()))
    blob = json.dumps(point, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def notebook_path(rec: dict, record_file: str | Path | None = None) -> Path | None:
    """A record's executed notebook. Records store it relative to their own folder (an outputs folder can
    be moved, published or copied to another machine); records of older runs may hold an absolute path.
    ``record_file`` defaults to the ``_path`` that ``read_records`` and ``run_point`` set."""
    nb = rec.get("notebook")
    if not nb:
        return None
    p = Path(nb)
    base = record_file or rec.get("_path")
    if p.is_absolute() or base is None:
        return p
    return Path(os.path.normpath(Path(base).parent / p))


def record_name(params: dict, pid: str) -> str:
    return f"{params['workload']}-{params['backend']}-{params['device']}-{pid}.json"
