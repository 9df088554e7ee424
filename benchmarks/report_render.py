"""Time the report for many records: synthesise N records by copying and perturbing real ones, render.

Usage::

    python benchmarks/report_render.py [--source outputs/] [--n 100 1000] [--keep DIR]

Real records (status ok) under ``--source`` are copied N times with perturbed epoch times (±15%), spread over
a few synthetic machines, batch sizes and thread counts (so the report aggregates many configurations,
repeats included); each copy is marked ``fixture: true``. For each N the summary notebook is executed
through papermill in a fresh kernel and rendered to HTML, exactly as ``run_all.sh`` does; prints seconds.
"""

from __future__ import annotations

import argparse
import copy
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.paths import outputs_dir  # noqa: E402
from helpers.record import read_records, write_atomic  # noqa: E402

MACHINES = 5  # synthetic hosts
BATCHES = (32, 64, 128, 256)
THREADS = (0, 1, 2, 4)


def synthesise(real: list[dict], n: int, folder: Path, seed: int = 0) -> None:
    rng = random.Random(seed)
    for i in range(n):
        r = copy.deepcopy(real[i % len(real)])
        f = rng.uniform(0.85, 1.15)
        host = f"bench-host-{i % MACHINES}"
        r["fingerprint"] = {**(r.get("fingerprint") or {}), "host": host}
        bs = BATCHES[(i // MACHINES) % len(BATCHES)]
        th = THREADS[(i // (MACHINES * len(BATCHES))) % len(THREADS)]
        r["batch_size"] = bs
        r["params"] = {**(r.get("params") or {}), "batch_size": bs, "threads": th}
        r["epoch_s"] = [t * f * rng.uniform(0.95, 1.05) for t in (r.get("epoch_s") or [])]
        if r["epoch_s"]:
            r["median_epoch_s"] = sorted(r["epoch_s"])[len(r["epoch_s"]) // 2]
            r["epoch_spread"] = {}
            r["samples_per_s"] = (r.get("n_train") or 0) / r["median_epoch_s"]
        if r.get("first_epoch_s"):
            r["first_epoch_s"] *= f
        r["point_id"] = f"bench{i:05d}"
        r["started_at"] = f"2026-01-01T00:{(i // 60) % 60:02d}:{i % 60:02d}+00:00"
        r["fixture"] = True
        write_atomic(folder / f"bench-{i:05d}.json", r)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=outputs_dir(), help="folder with real records")
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000], help="record counts to time")
    ap.add_argument("--keep", type=Path, default=None, help="write the records and reports here (kept)")
    args = ap.parse_args(argv)
    real = [r for r in read_records([args.source])[0] if r.get("status") == "ok" and not r.get("fixture")]
    if not real:
        print(f"no ok records under {args.source}: run e.g. python -m helpers.runner params/smoke.yaml first",
              file=sys.stderr)
        return 2
    from helpers.runner import install_kernelspec, render_report

    base = args.keep or Path(tempfile.mkdtemp(prefix="cgb-bench-"))
    kernel = install_kernelspec(base / ".jupyter")
    from helpers.runner import _register_engine

    _register_engine()
    for n in args.n:
        folder = base / f"records-{n}"
        folder.mkdir(parents=True, exist_ok=True)
        synthesise(real, n, folder)
        run_dir = base / f"run-{n}"
        run_dir.mkdir(exist_ok=True)
        t0 = time.perf_counter()
        html = render_report([folder], run_dir, kernel, base / f"report-{n}.html")
        dt = time.perf_counter() - t0
        print(f"{n} records: {dt:.1f} s (execute summary.ipynb + render HTML; {html.stat().st_size / 1e6:.1f} MB)",
              flush=True)
    print(f"files: {base}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
