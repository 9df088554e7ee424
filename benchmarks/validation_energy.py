"""Validation timing and GPU energy, checked on a real device: samples/s with and without validation,
and the energy counter against the old mean-power figure.

Usage::

    python benchmarks/validation_energy.py [--device gpu] [--backends jax torch] [--repeats 2]
        [--workloads cnn_mnist mlp_mnist cnn_cifar10] [--out DIR]

Each point runs in a fresh Python process through the same calls a workload notebook makes
(``helpers.point``: begin, verify, load_data, build_model, fit, finish), alternating validation off
and on, so the pair is taken within one run. Prints per (workload, backend): samples/s without and
with validation (median of the repeats, and each run), their ratio (≈ 1 when the validation window
no longer swallows training), and for GPU points the energy per steady epoch from the board's counter
beside mean sampled power × median epoch (the pre-fix method), idle power and energy above idle.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from helpers import point
pt = point.begin({params!r})
import keras  # noqa: E402,F401
pt.verify()
data = pt.load_data()
model = pt.build_model()
pt.fit(model, data)
rec = pt.finish()
print("RECORD " + str(pt.path))
"""


def full_params(point: dict, folder: Path) -> dict:
    """A point with every notebook parameter (the grid's defaults), as the runner gives a notebook."""
    import yaml

    sys.path.insert(0, str(ROOT))
    from helpers import grid
    from helpers.execute import notebook_params

    folder.mkdir(parents=True, exist_ok=True)
    g = folder / "grid.yaml"
    g.write_text(yaml.safe_dump({"points": [point]}))
    p = notebook_params(grid.expand(g)[0])
    p["output_dir"] = str(folder)
    return p


def run(params: dict) -> dict:
    code = CHILD.format(root=str(ROOT), params=params)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith("RECORD ")), None)
    if res.returncode != 0 or line is None:
        return {"status": "failed", "reason": (res.stderr or res.stdout)[-1500:]}
    return json.loads(Path(line[7:]).read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--backends", nargs="+", default=["jax", "torch"])
    ap.add_argument("--workloads", nargs="+", default=["cnn_mnist", "mlp_mnist", "cnn_cifar10"])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--n-train", type=int, default=None, help="samples per epoch (default: the workload's)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="cgb-valen-"))
    rows = []
    for wl in args.workloads:
        for backend in args.backends:
            runs = {0: [], 1: []}
            recs = {0: [], 1: []}
            for rep in range(args.repeats):
                order = (0, 1) if rep % 2 == 0 else (1, 0)  # alternate which goes first
                for val in order:
                    p = {"workload": wl, "backend": backend, "device": args.device, "epochs": args.epochs,
                         "n_val": 2000 * val, "data_source": "synthetic", "seed": rep}
                    if args.n_train:
                        p["n_train"] = args.n_train
                    p = full_params(p, out / f"{wl}-{backend}-{val}-{rep}")
                    r = run(p)
                    if r.get("status") != "ok":
                        print(f"{wl} {backend} n_val={p['n_val']}: {r.get('status')} {r.get('reason')}", flush=True)
                        continue
                    runs[val].append(r["samples_per_s"])
                    recs[val].append(r)
            if not runs[0] or not runs[1]:
                continue
            a, b = statistics.median(runs[0]), statistics.median(runs[1])
            each = [", ".join(f"{x:,.0f}" for x in runs[v]) for v in (0, 1)]
            line = (f"{wl:12s} {backend:6s} samples/s without validation {a:,.0f} ({each[0]})  with {b:,.0f} "
                    f"({each[1]})  with/without {b / a:.2f}")
            print(line, flush=True)
            for r in recs[0]:
                if r.get("energy_j_per_epoch") is None:
                    continue
                u = r.get("utilisation") or {}
                old = (u.get("power_w_mean") or 0) * r["median_epoch_s"]
                print(f"    energy/epoch: counter {r['energy_j_per_epoch']:.1f} J ({r.get('energy_method')}), "
                      f"mean power x median epoch {old:.1f} J, idle {r.get('idle_power_w') or 0:.0f} W, above idle "
                      f"{r.get('energy_above_idle_j_per_epoch') or 0:.1f} J, epoch {r['median_epoch_s']:.3f} s, "
                      f"{u.get('n_samples')} power samples", flush=True)
            rows.append({"workload": wl, "backend": backend, "without": runs[0], "with": runs[1]})
    (out / "summary.json").write_text(json.dumps(rows, indent=1))
    print(f"records: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
