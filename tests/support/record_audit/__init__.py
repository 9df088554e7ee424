"""The record-write audit (``sitecustomize.py`` here): ``environment(log)`` for a run's processes, ``writes(log)`` to
read what they wrote into records folders, ``assert_one_writer_each_record_once(log, folders)`` to check it."""

from __future__ import annotations

import collections
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


def assert_one_writer_each_record_once(log: Path, folders: list[Path]) -> list[dict]:
    """Every write into a records folder logged in ``log`` was ``write_record``'s, each record file was renamed into
    place once, and every record file under ``folders`` is one of them. Returns the log's lines."""
    seen = writes(log)
    others = [w for w in seen if not w["by_writer"]]
    assert not others, f"written into a records folder by other code than write_record: {others[:5]}"
    placed = collections.Counter(w["path"] for w in seen if w["event"] == "os.rename")
    twice = {p: n for p, n in placed.items() if n > 1}
    assert not twice, f"records written more than once: {twice}"
    on_disk = {str(p.resolve()) for f in folders for p in f.glob("runs/*/records/**/*.json")}
    assert on_disk and on_disk <= set(placed), sorted(on_disk - set(placed))[:5]
    return seen
