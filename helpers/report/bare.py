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

FILE = "bare_loops.jsonl"
COLUMNS = ["impl", "backend", "workload", "precision", "batch", "samples_per_s", "step_s", "chunks", "host", "gpu",
           "device_used", "model", "started_at", "path"]
BACKEND = {"bare-jax": "jax", "bare-torch": "torch"}
REQUIRED = ("impl", "workload", "precision", "batch", "samples_per_s")


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


def lines(folders):
    """Every non-blank line of the ``bare_loops.jsonl`` files under ``folders`` (a folder is searched, a file is
    taken as it is; a file reached twice counts once), as (file, line number, the JSON object or None when the
    line is not one, why not)."""
    seen = set()
    for folder in folders:
        folder = Path(folder)
        files = [folder] if folder.is_file() else sorted(folder.rglob(FILE)) if folder.is_dir() else []
        for f in files:
            if f.name != FILE or f.resolve() in seen:
                continue
            seen.add(f.resolve())
            for i, text in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if not text.strip():
                    continue
                try:
                    obj = json.loads(text)
                except ValueError as exc:
                    yield f, i, None, str(exc)
                    continue
                if isinstance(obj, dict):
                    yield f, i, obj, None
                else:
                    yield f, i, None, f"a {type(obj).__name__}, not an object"


def read(folders) -> tuple[object, list]:
    """(a DataFrame of every usable line of the ``bare_loops.jsonl`` files under ``folders``, [(file:line, why)]
    of the lines that are not usable)."""
    import pandas as pd

    rows, bad = [], []
    for f, i, r, why in lines(folders):
        try:
            if r is None:
                raise ValueError(why)
            missing = [k for k in REQUIRED if k not in r]
            if missing:
                raise ValueError(f"missing {missing}")
            sps = float(r["samples_per_s"])
            if not sps > 0:
                raise ValueError(f"samples_per_s {r['samples_per_s']!r}")
        except (ValueError, TypeError) as exc:
            bad.append((f"{f}:{i}", f"not a bare-loop result: {exc}"[:200]))
            continue
        rows.append({"impl": r["impl"], "backend": BACKEND.get(r["impl"]), "workload": r["workload"],
                     "precision": r["precision"], "batch": int(r["batch"]), "samples_per_s": sps,
                     "step_s": r.get("step_s"), "chunks": len(r.get("chunk_s") or []), "host": r.get("host"),
                     "gpu": r.get("gpu"), "device_used": r.get("device_used"), "model": r.get("model"),
                     "started_at": r.get("started_at"), "path": str(f)})
    return pd.DataFrame(rows, columns=COLUMNS), bad


def beside(bare, workload: str, backend: str, precision: str, host) -> dict | None:
    """The bare loop of this workload, backend and precision on this host: its best batch's median run."""
    if bare is None or len(bare) == 0:
        return None
    g = bare[(bare["workload"] == workload) & (bare["backend"] == backend) & (bare["precision"] == precision)
             & (bare["host"] == host)]
    if g.empty:
        return None
    per_batch = g.groupby("batch")["samples_per_s"].agg(["median", "count"])
    batch = per_batch["median"].idxmax()
    row = g[g["batch"] == batch].iloc[0]
    return {"samples_per_s": float(per_batch.loc[batch, "median"]), "runs": int(per_batch.loc[batch, "count"]),
            "batch": int(batch), "impl": row["impl"], "model": row["model"]}
