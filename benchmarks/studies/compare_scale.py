"""Time ``compare`` over many records: N synthetic records a side (two runs a configuration, so N/2
configurations), a tenth of the configurations 30% slower on NEW and a tenth 30% faster, written to a temp folder;
``python -m helpers.runner compare OLD NEW --out DIR --fail-if-slower 10%`` run in a fresh process.

Usage::

    python benchmarks/studies/compare_scale.py [--n 20000] [--keep DIR] [--profile FILE.prof]

Prints the wall time and the peak resident memory of the comparing process (its ``VmHWM``, and the largest sum over
it and any children, sampled every 0.05 s), its exit status and its summary line. ``--profile`` runs it under
cProfile and writes the profile there (``python -m pstats FILE.prof``).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ("cnn_cifar10", "mlp_mnist", "lstm_textgen", "vgg_cifar10", "resnet_cifar10")
BACKENDS = ("tensorflow", "jax", "torch")


def record(i: int, side: str, workload: str, backend: str, batch: int, sps: float, repeat: int) -> dict:
    """A minimal ok record of one run (the fields the reader checks and the report reads)."""
    n_train = 10_000
    epoch = n_train / sps
    host = f"{side}-host"
    return {"schema": 1, "point_id": f"{side}-{workload}-{backend}-{batch}-{repeat}", "workload": workload,
            "backend": backend, "device": "cpu", "device_used": "cpu", "status": "ok", "reason": None,
            "params": {"threads": 0, "precision": "float32", "repeat": repeat}, "data_source": "synthetic",
            "n_train": n_train, "batch_size": batch, "epochs": 4, "first_epoch_s": 2 * epoch,
            "epoch_s": [epoch * 1.01, epoch, epoch * 0.99], "median_epoch_s": epoch, "step_s": epoch / 10,
            "samples_per_s": sps, "steps_per_epoch": max(1, n_train // batch),
            "history": {"loss": [2, 1.5, 1.2, 1.0]}, "utilisation": {"cpu_pct_mean": 90.0},
            "energy_j_per_epoch": None,
            "fingerprint": {"host": host, "cpu_model": f"CPU of {host}", "cpu_logical": 4, "gpu_names": [],
                            "boot_id": f"boot-{side}", "versions": {"keras": "3.15.1", backend: "1.0"}},
            "started_at": f"2026-01-01T{(i // 3600) % 24:02d}:{(i // 60) % 60:02d}:{i % 60:02d}+00:00",
            "duration_s": 5.0, "notebook": None}


def synthesise(n: int, old: Path, new: Path, seed: int = 0) -> int:
    """``n`` records a side (``n // 2`` configurations, two runs each) into ``old`` and ``new``; returns the number
    of configurations changed on NEW (a tenth slower by 30%, a tenth faster by 30%)."""
    rng = random.Random(seed)
    old.mkdir(parents=True, exist_ok=True)
    new.mkdir(parents=True, exist_ok=True)
    changed = 0
    for c in range(n // 2):
        workload, backend = WORKLOADS[c % len(WORKLOADS)], BACKENDS[(c // len(WORKLOADS)) % len(BACKENDS)]
        batch = 1 + c // (len(WORKLOADS) * len(BACKENDS))
        base = rng.uniform(100, 10_000)
        effect = 0.7 if c % 10 == 0 else 1.3 if c % 10 == 1 else 1.0
        changed += effect != 1.0
        for side, folder, f in (("old", old, 1.0), ("new", new, effect)):
            for k in range(2):
                rec = record(2 * c + k, side, workload, backend, batch, base * f * rng.uniform(0.995, 1.005), k)
                (folder / f"{rec['point_id']}.json").write_text(json.dumps(rec))
    return changed


CHILD = """
import sys, time, json
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
from helpers.runner.cli import main
argv = {argv!r}
if {profile!r}:
    import cProfile
    prof = cProfile.Profile()
    code = prof.runcall(main, argv)
    prof.dump_stats({profile!r})
else:
    code = main(argv)
hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]
print(json.dumps({{"s": time.perf_counter() - t0, "hwm_kb": int(hwm), "code": int(code)}}))
"""


def run(old: Path, new: Path, out: Path, profile: str | None) -> dict:
    """One ``compare`` in a fresh process: seconds, peak memory, exit status, what it printed."""
    from report_render import tree_peak_bytes  # this folder: on sys.path when run as a script

    argv = ["compare", str(old), str(new), "--out", str(out), "--fail-if-slower", "10%"]
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD.format(root=str(ROOT), argv=argv, profile=profile or "")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    peak = tree_peak_bytes(proc, 0.05)
    wall = time.perf_counter() - t0
    stdout, stderr = proc.communicate()
    lines = stdout.strip().splitlines()
    try:
        res = json.loads(lines[-1])
    except (IndexError, ValueError):
        raise SystemExit(f"compare did not finish (status {proc.returncode}): {stderr[-3000:]}") from None
    return {**res, "wall_s": wall, "sampled_peak_mb": peak / 2**20, "stdout": lines[:-1], "stderr": stderr}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000, help="records a side (two runs a configuration)")
    ap.add_argument("--keep", type=Path, default=None, help="write the records and the comparison here (kept)")
    ap.add_argument("--profile", default=None, help="write a cProfile profile of the comparing process here")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        t0 = time.perf_counter()
        changed = synthesise(args.n, base / "old", base / "new")
        print(f"{args.n} records a side, {args.n // 2} configurations, {changed} changed: written in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        res = run(base / "old", base / "new", base / "cmp", args.profile)
        print(f"compare: {res['wall_s']:.1f} s wall ({res['s']:.1f} s in main, imports included), peak RSS "
              f"{res['hwm_kb'] / 1024:.0f} MB (VmHWM; sampled over the process tree: {res['sampled_peak_mb']:.0f} MB), "
              f"exit {res['code']}")
        for line in res["stdout"][:3]:
            print("  " + line[:200])
        size = sum(p.stat().st_size for p in (base / "cmp").glob("*") if p.is_file())
        print(f"  output: {size / 2**20:.1f} MB in {base / 'cmp'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
