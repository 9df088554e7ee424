"""One run of the runner shared by the tests (``tests/conftest.py: shared_run``): ``./run_all.sh`` over one point
per workload, the backends rotated so that each meets several workloads in a real papermill kernel, and the GPU
points the report shows as skipped (no kernel: this machine has no GPU), as four shards into one folder; then
hand-written fixtures beside it and ``--report-only``; then the grid again (resume).

Tests that use it carry ``pytest.mark.xdist_group("shared_run")`` so that one worker runs it once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.paths import PROJECT_ROOT
from helpers.point import device

from . import FAST_XLA, POINT_ENV, XLA_CACHE, record_audit
from .fixtures import write_fixtures

BACKENDS = [b for b in ("jax", "torch", "tensorflow") if device.backend_installed(b)]


def _rotated(i: int) -> str:
    return BACKENDS[i % len(BACKENDS)] if BACKENDS else "jax"


def grid_text() -> str:
    two = BACKENDS[:2] or ["jax"]
    b0 = two[0]
    cifar = "    batch_size: 100\n    epochs: 3\n    n_train: 400\n"
    rows = [  # (workload, its tiny size); backends rotated down the list
        ("mlp_mnist", "    batch_size: 50\n    n_train: 200\n"),
        ("cnn_mnist", "    batch_size: 50\n    n_train: 200\n"),
        ("vgg_cifar10", "    batch_size: 32\n    n_train: 96\n"),
        ("cnn_256", "    batch_size: 8\n    n_train: 16\n    image_size: 64\n"),
        ("catsdogs", "    variant: original\n    batch_size: 16\n    n_train: 64\n    workers: 2\n"),
        ("resnet50", "    batch_size: 4\n    n_train: 8\n    image_size: 32\n"),
        ("fasttext_imdb", "    batch_size: 32\n    n_train: 128\n    maxlen: 80\n    ngram_range: 1\n"),
        ("bilstm_imdb", "    batch_size: 32\n    n_train: 64\n    maxlen: 20\n"),
        ("lstm_textgen", "    batch_size: 64\n    n_train: 256\n    maxlen: 20\n"),
    ]
    out = ["description: the tests' shared run (tests/support/shared_run.py)", "timeout_s: 600",
           "defaults:", "  device: cpu", "  epochs: 2", "  min_steady_s: 0.000001", "  data_source: synthetic",
           "points:",
           f"  - workload: cnn_cifar10\n    backend: {b0}\n{cifar}",
           # GPU points on a machine without one: skipped with the reason, no kernel started
           f"  - workload: cnn_cifar10\n    backend: [{', '.join(two)}]\n    device: gpu\n{cifar}"]
    for i, (w, size) in enumerate(rows):
        out.append(f"  - workload: {w}\n    backend: {_rotated(i + 2)}\n{size}")
    return "\n".join(s.rstrip("\n") for s in out) + "\n"


def env_for(outputs: Path, **extra) -> dict:
    """``./run_all.sh`` on this Python (no install) into ``outputs``."""
    env = {**os.environ, "CGB_USE_CURRENT_PYTHON": "1", "CGB_OUTPUTS": str(outputs),
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", **extra}
    for k in POINT_ENV:
        env.pop(k, None)
    return env


def run_all(args, outputs: Path, timeout=1500, **extra) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(PROJECT_ROOT / "run_all.sh"), *map(str, args)], capture_output=True,
                          text=True, env=env_for(outputs, **extra), timeout=timeout)


SHARDS = 4  # the grid runs as four shards into one folder (the runner's --shard): no step of it is long


class SharedRun:
    """The shared run, step by step, each step run the first time it is asked for (so that each lands in the set-up
    or call of a different test, none of them long): ``shard(k)`` runs shard k of the grid (``--no-report``);
    ``records`` are the runs' records once every shard ran; ``report`` adds the hand-written fixtures beside them
    and renders the report (``--report-only``); ``again`` runs the whole grid again (resume)."""

    def __init__(self, root: Path):
        self.root = root
        self.grid = root / "shared.yaml"
        self.grid.write_text(grid_text())
        self.outputs = root / "outputs"
        # behaviour, not speed: XLA's cheapest code generation in the JAX kernels (kept through the kernel's clean-up)
        # and the suite's compilation cache
        self.env = {"KERAS_HOME": str(root / "keras_home"), "CGB_OFFLINE": "1", **FAST_XLA, **XLA_CACHE,
                    "CGB_KEEP_ENV": "XLA_FLAGS"}
        # every write into a records folder, by any process of the run, logged (support/record_audit)
        self.audit = root / "record_writes.jsonl"
        self.env.update(record_audit.environment(self.audit))
        self.shards: dict[int, subprocess.CompletedProcess] = {}
        self._report = self._again = None

    def shard(self, k: int) -> subprocess.CompletedProcess:
        if k not in self.shards:
            res = run_all([self.grid, "--shard", f"{k}/{SHARDS}", "--no-report"], self.outputs, **self.env)
            assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-3000:]
            self.shards[k] = res
        return self.shards[k]

    @property
    def records(self) -> list[dict]:
        """Every run's record ("_path" added), once every shard ran."""
        for k in range(SHARDS):
            self.shard(k)
        return [{**json.loads(p.read_text()), "_path": str(p)} for p in self.outputs.glob("runs/*/records/*.json")]

    def ok(self) -> list[dict]:
        return [r for r in self.records if r["status"] == "ok"]

    @property
    def report(self) -> subprocess.CompletedProcess:
        if self._report is None:
            ok = self.ok()
            assert ok, [(r["workload"], r["backend"], r["status"], r["reason"]) for r in self.records]
            # what this machine cannot produce: hand-written, marked as fixtures
            write_fixtures(self.outputs / "fixtures", next(r for r in ok if r["workload"] == "cnn_cifar10"))
            (self.outputs / "fixtures" / "broken.json").write_text("{not json")
            res = run_all(["--report-only"], self.outputs, **self.env)
            assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-3000:]
            self._report = res
        return self._report

    @property
    def again(self) -> subprocess.CompletedProcess:
        if self._again is None:
            self.records  # noqa: B018 - every shard first
            self._again = run_all([self.grid, "--no-report"], self.outputs, **self.env)
        return self._again
