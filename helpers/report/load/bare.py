"""Bare training loops beside the suite: what plain JAX / PyTorch reach on the same machine.

``benchmarks/bare_jax.py`` and ``benchmarks/bare_torch.py`` (``--record FILE``) append one JSON line per run to
a ``bare_loops.jsonl`` file: the result they print, the host and its GPU, when. Put the file in the run's
folder (``outputs/runs/<run>/bare_loops.jsonl``) and the report reads it with the records: the section "How far
from the limit" sets each workload's best rung beside the bare loop of the same machine, backend and precision.

    append("outputs/runs/r1/bare_loops.jsonl", result)    # in the benchmark
    df = read(folders)                                    # one row per line of every bare_loops.jsonl found
"""

from __future__ import annotations

import datetime as dt
import json
import socket
from pathlib import Path

from helpers.report.load import columns as C

FILE = "bare_loops.jsonl"
COLUMNS = ["impl", "backend", "workload", "precision", "batch", C.SAMPLES_PER_S, "step_s", "chunks", "host", "gpu",
           "device_used", "model", "started_at", "path"]
BACKEND = {"bare-jax": "jax", "bare-torch": "torch"}
REQUIRED = ("impl", "workload", "precision", "batch", C.SAMPLES_PER_S)


def append(path: str | Path, result: dict, gpu: str | None = None) -> Path:
    """One bare-loop result as a line of ``path`` (a ``bare_loops.jsonl``), with this host and when."""
    path = Path(path)
    if path.name != FILE:
        raise ValueError(f"--record: the file must be named {FILE} (the report looks for that name): got {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {**result, "host": socket.gethostname(), "gpu": gpu,
            "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
    return path


MAX_BYTES = 8 * 2**20  # a line is ~400 bytes: 20,000 runs; the file is read whole, so it is capped like a record
MAX_LINES = 20_000


def _no_constant(name):
    raise ValueError(f"{name} is not a number")


def _parse(text: str):
    """One line as JSON, or raise ValueError: no NaN or Infinity, no integer past +-2**53 (``float`` of it
    overflows), nothing beyond a record's bounds (``helpers.record.limits``)."""
    from helpers.record.limits import out_of_bounds

    try:
        obj = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError: its message names a position, never the text
        raise ValueError(f"not JSON ({str(exc).split(':', 1)[0][:80]})") from None
    why = out_of_bounds(obj)
    if why:
        raise ValueError(why)
    return obj


def files(folders) -> tuple[list[Path], list[tuple[str, str]]]:
    """The ``bare_loops.jsonl`` files under ``folders`` (a folder is searched, a file is taken as it is; a file
    reached twice counts once) that lie inside them; and those that do not ((file, why): a symlink to outside
    the folders given, a loop)."""
    from helpers.record.reader import found_files

    found, bad = found_files(folders, FILE)
    return [path for _, path in found], bad


def lines(folders, unreadable: list | None = None):
    """Every non-blank line of the ``bare_loops.jsonl`` files under ``folders``, as (file, line number, the JSON
    object or None when the line is not one, why not). Each file goes through the record reader's bounds
    (``read_bytes``: a regular file, inside the folders given, at most ``MAX_BYTES``); the files that do not
    are added to ``unreadable`` as (file, why)."""
    from helpers.record.reader import read_bytes

    found, bad = files(folders)
    for f in found:
        data, why = read_bytes(f, MAX_BYTES)
        if why is not None:
            bad.append((str(f), why))
            continue
        text = data.decode("utf-8", errors="replace").splitlines()
        if len(text) > MAX_LINES:
            bad.append((str(f), f"more than {MAX_LINES:,} lines"))
            continue
        for i, line in enumerate(text, 1):
            if not line.strip():
                continue
            try:
                obj = _parse(line)
            except ValueError as exc:
                yield f, i, None, str(exc)
                continue
            if isinstance(obj, dict):
                yield f, i, obj, None
            else:
                yield f, i, None, f"a {type(obj).__name__}, not an object"
    if unreadable is not None:
        unreadable.extend(bad)


def _row(f, r: dict) -> dict:
    """A usable line as a row; ValueError naming the field (never its value) when it is not one."""
    from helpers.record.check import MAX_LABEL

    missing = [k for k in REQUIRED if k not in r]
    if missing:
        raise ValueError(f"missing {missing}")
    for k in ("impl", "workload", "precision", "host", "gpu", "device_used", "model", "started_at"):
        v = r.get(k)
        if v is not None and not (isinstance(v, str) and len(v) <= MAX_LABEL):
            raise ValueError(f"'{k}' is not a string of at most {MAX_LABEL} characters")
    sps, batch, step = r[C.SAMPLES_PER_S], r["batch"], r.get("step_s")
    if isinstance(sps, bool) or not isinstance(sps, (int, float)) or not 0 < sps < float("inf"):
        raise ValueError("'samples_per_s' is not a finite number > 0")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch <= 0:
        raise ValueError("'batch' is not an integer > 0")
    if step is not None and (isinstance(step, bool) or not isinstance(step, (int, float)) or not step >= 0):
        raise ValueError("'step_s' is not a finite number >= 0")
    chunks = r.get("chunk_s") or []
    return {"impl": r["impl"], "backend": BACKEND.get(r["impl"]), "workload": r["workload"],
            "precision": r["precision"], "batch": batch, C.SAMPLES_PER_S: float(sps), "step_s": step,
            "chunks": len(chunks) if isinstance(chunks, list) else 0, "host": r.get("host"), "gpu": r.get("gpu"),
            "device_used": r.get("device_used"), "model": r.get("model"), "started_at": r.get("started_at"),
            "path": str(f)}


def read(folders, unreadable: list | None = None) -> tuple[object, list]:
    """(a DataFrame of every usable line of the ``bare_loops.jsonl`` files under ``folders``, [(file:line, why)]
    of the lines that are not usable). Whole files that cannot be read (not a regular file, outside the folders,
    too large) are added to ``unreadable`` as (file, why); any error in one line costs that line only."""
    import pandas as pd

    rows, bad = [], []
    for f, i, r, why in lines(folders, unreadable):
        try:
            if r is None:
                raise ValueError(why)
            rows.append(_row(f, r))
        except Exception as exc:  # noqa: BLE001 - a line from anyone: its problem, never the report's
            msg = str(exc) if isinstance(exc, ValueError) else type(exc).__name__
            bad.append((f"{f}:{i}", f"not a bare-loop result: {msg}"[:200]))
    return pd.DataFrame(rows, columns=COLUMNS), bad


def beside(bare, workload: str, backend: str, precision: str, host) -> dict | None:
    """The bare loop of this workload, backend and precision on this host: its best batch's median run."""
    if bare is None or len(bare) == 0:
        return None
    g = bare[(bare["workload"] == workload) & (bare["backend"] == backend) & (bare["precision"] == precision)
             & (bare["host"] == host)]
    if g.empty:
        return None
    per_batch = g.groupby("batch")[C.SAMPLES_PER_S].agg(["median", "count"])
    batch = per_batch["median"].idxmax()
    row = g[g["batch"] == batch].iloc[0]
    return {C.SAMPLES_PER_S: float(per_batch.loc[batch, "median"]), "runs": int(per_batch.loc[batch, "count"]),
            "batch": int(batch), "impl": row["impl"], "model": row["model"]}
