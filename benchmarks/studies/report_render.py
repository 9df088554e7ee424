"""Time the report for many records: synthesise N records by copying and perturbing real ones, render.

Usage::

    python benchmarks/studies/report_render.py [--source outputs/] [--n 100 1000] [--keep DIR] [--hostile] [--repeat 1]

Real records (status ok) under ``--source`` are copied N times with perturbed epoch times (±15%), spread over
a few synthetic machines, batch sizes and thread counts (so the report aggregates many configurations,
repeats included); each copy is marked ``fixture: true``. For each N the summary notebook is executed
through papermill in a fresh kernel and rendered to HTML, exactly as ``run_all.sh`` does; prints seconds.

``--hostile`` renders each N twice, in a fresh process each: the N good records alone, then with the
hostile set beside them (``tests/support/hostile.py``: every file that once crashed, stalled or fooled the report);
prints seconds and peak memory (resident, summed over the rendering process and its children: the summary
kernel, index workers) of both and what the hostile set adds. ``--repeat R`` renders each R times, the two kinds
interleaved, and keeps the fastest and smallest of each.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from helpers.paths import outputs_dir  # noqa: E402
from helpers.record.reader import read_records  # noqa: E402
from helpers.record.writer import write_atomic  # noqa: E402

HERE = Path(__file__).resolve()

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


def _measure(folders: list[Path], out_html: Path) -> int:
    """One render in this process (``--measure``); prints {"s": seconds} as JSON."""
    from helpers.runner.engine import register_engine
    from helpers.runner.summary import render_report

    register_engine()
    run_dir = out_html.with_suffix("")
    run_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    render_report(folders, run_dir, os.environ["CGB_BENCH_KERNEL"], out_html)
    print(json.dumps({"s": time.perf_counter() - t0}))
    return 0


def tree_peak_bytes(proc, every_s: float) -> int:
    """Until ``proc`` (a Popen) exits: the largest sum of resident memory over it and its children, sampled every
    ``every_s`` seconds (also used by benchmarks/studies/compare_scale.py)."""
    import psutil

    peak, top = 0, psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            rss = 0
            for q in [top, *top.children(recursive=True)]:
                try:
                    rss += q.memory_info().rss
                except psutil.Error:
                    pass
            peak = max(peak, rss)
        except psutil.Error:
            pass
        time.sleep(every_s)
    return peak


def _render_once(folders: list[Path], out_html: Path, kernel: str) -> tuple[float, float]:
    """(seconds, peak MB) of one render in a fresh process. Peak: the largest sum of resident memory over the
    process and its children (the summary kernel, index workers), sampled every 0.1 s (``ru_maxrss`` would
    carry this benchmark's own memory into the child it forks)."""
    proc = subprocess.Popen([sys.executable, str(HERE), "--measure", *map(str, folders), "--out", str(out_html)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "CGB_BENCH_KERNEL": kernel})
    peak = tree_peak_bytes(proc, 0.1)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"render failed: {err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])["s"], peak / 2**20


def _runs(runs: list[tuple[float, float]]) -> str:
    return ", ".join(f"({t:.1f}, {m:.1f})" for t, m in runs)


def _best(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """The fastest time and the smallest peak of repeated renders (noise only adds)."""
    return min(t for t, _ in runs), min(m for _, m in runs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", type=Path, default=outputs_dir(), help="folder with real records")
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000], help="record counts to time")
    ap.add_argument("--keep", type=Path, default=None, help="write the records and reports here (kept)")
    ap.add_argument("--hostile", action="store_true", help="also render with the hostile set beside the records")
    ap.add_argument("--repeat", type=int, default=1, help="renders per measurement (--hostile): the best is kept")
    ap.add_argument("--measure", type=Path, nargs="+", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.measure:
        return _measure(args.measure, args.out)
    real = [r for r in read_records([args.source])[0] if r.get("status") == "ok" and not r.get("fixture")]
    if not real:
        print(f"no ok records under {args.source}: run e.g. python -m helpers.runner params/smoke.yaml first",
              file=sys.stderr)
        return 2
    from helpers.runner.engine import install_kernelspec
    from helpers.runner.summary import render_report

    base = args.keep or Path(tempfile.mkdtemp(prefix="cgb-bench-"))
    kernel = install_kernelspec(base / ".jupyter")
    from helpers.runner.engine import register_engine

    register_engine()
    for n in args.n:
        folder = base / f"records-{n}"
        folder.mkdir(parents=True, exist_ok=True)
        synthesise(real, n, folder)
        if args.hostile:
            sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
            from support.hostile import write_hostile  # the tests' hostile record set

            hostile = base / f"hostile-{n}"
            expected = write_hostile(hostile, real[0], base / f"outside-{n}")
            good, bad = [], []
            for _ in range(args.repeat):  # interleaved: a busy machine slows both alike
                good.append(_render_once([folder], base / f"report-{n}.html", kernel))
                bad.append(_render_once([folder, hostile], base / f"report-{n}-hostile.html", kernel))
            (t_good, m_good), (t_bad, m_bad) = _best(good), _best(bad)
            print(f"{n} good records: {t_good:.1f} s, peak {m_good:.0f} MB; with the {len(expected)} hostile files "
                  f"beside them: {t_bad:.1f} s, peak {m_bad:.0f} MB; the hostile set adds "
                  f"{100 * (t_bad / t_good - 1):+.1f}% time, {100 * (m_bad / m_good - 1):+.1f}% memory", flush=True)
            print(f"  each render (s, peak MB): good {_runs(good)}; with the hostile set {_runs(bad)}", flush=True)
            continue
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
