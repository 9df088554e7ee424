"""Records and runs the runner's tests share: a valid record (``good_record``), a file written as given
(``write``), the complete ok records of an outputs folder, the runner in a process of its own (``runner``), a
render job that only sleeps (the index's SIGTERM test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from helpers.paths import PROJECT_ROOT
from helpers.record.reader import read_records
from helpers.record.schema import SCHEMA
from helpers.runner import notebook


def runner(args, extra_env=None, timeout=900) -> subprocess.CompletedProcess:
    """``python -m helpers.runner ARGS`` from the checkout, in this environment plus ``extra_env``."""
    return subprocess.run([sys.executable, "-m", "helpers.runner", *map(str, args)], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, env={**os.environ, **(extra_env or {})}, timeout=timeout)


def good_record(i: int = 0, **kw) -> dict:
    rec = {"schema": SCHEMA, "point_id": f"p{i}", "workload": "cnn_cifar10", "backend": "jax", "device": "cpu",
           "device_used": "cpu", "status": "ok", "reason": None,
           "params": {"threads": 0, "precision": "float32", "batch_size": 100, "n_train": 1000},
           "data_source": "synthetic", "n_train": 1000, "batch_size": 100, "epochs": 4, "first_epoch_s": 2.0,
           "epoch_s": [1.0, 1.1, 0.9], "median_epoch_s": 1.0, "step_s": 0.1, "samples_per_s": 1000.0,
           "history": {"loss": [2.0, 1.5, 1.2, 1.0], "accuracy": [0.1, 0.3, 0.5, 0.6]},
           "utilisation": {"cpu_pct_mean": 90.0}, "energy_j_per_epoch": None,
           "fingerprint": {"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 4, "gpu_names": [],
                           "versions": {"keras": "3.15.1", "jax": "0.10.2"}},
           "started_at": f"2026-01-01T00:00:0{i}", "duration_s": 5.0, "notebook": None, "wall_s": 6.0}
    rec.update(kw)
    return rec


def write(folder: Path, name: str, obj) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def complete_ok_records(outputs: Path) -> list[dict]:
    recs, _ = read_records([outputs / "runs"])
    return [r for r in recs if notebook.is_complete(r) and r["status"] == "ok"]


def sleep_job(job):
    time.sleep(120)
