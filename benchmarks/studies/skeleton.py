"""Benchmark of the walking skeleton: the runner's overhead per grid point and its timing fidelity.

    .venv/bin/python benchmarks/studies/skeleton.py [--backends tensorflow,jax,torch] [--device cpu|gpu] [--repeats 4]
        [--fidelity] [--n 10000]

1. Overhead per point: one small grid point through the runner (``run_point``: fresh kernel, papermill,
   parameters, device check, data, model, ``fit``, record, plots, the executed notebook written) against a
   bare script doing the same training in a fresh process (``benchmarks/bare_keras.py``: ``import keras``,
   the same network, same data size, same epochs), end to end, the two alternating (suite first in even
   repeats, bare first in odd ones). The figure is the median over repeats of the paired difference
   (suite - bare), with its range. Target: at most 2 s. The point's own cells are printed too (where the
   rest goes: kernel start and papermill are the time outside its cells).
2. Fidelity (``--fidelity``): cnn_cifar10's steady-state samples/s measured by the suite (median epoch)
   against the same model trained by benchmarks/bare_keras.py in the same run, timed the same way.
   Target: within 5%.
Prints tables; writes nothing outside a temporary folder.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def device_env(backend: str, device: str) -> dict:
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2"}
    if device == "cpu":
        env.update(CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu")
    else:
        env.pop("JAX_PLATFORMS", None)
        env.setdefault("CUDA_VISIBLE_DEVICES", "0")
    return env


def bare_fit(backend: str, device: str, n: int, batch: int, epochs: int, workload: str = "cnn_cifar10") -> dict:
    """bare_keras.py in a fresh process: its JSON line plus ``wall_s``, the process end to end."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bare_keras.py"), workload, "--n", str(n),
                          "--batch", str(batch), "--epochs", str(epochs), "--device", device],
                         env=device_env(backend, device), check=True, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "wall_s": wall}


def cells(nb_path) -> dict:
    """Seconds per code cell of an executed notebook (papermill's durations), by the cell's first words."""
    nb = json.loads(Path(nb_path).read_text())
    out = {}
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            key = next((ln for ln in src.splitlines() if ln.strip() and not ln.startswith("#")), "")[:22]
            out[key] = out.get(key, 0.0) + float(c["metadata"]["papermill"]["duration"] or 0)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default="tensorflow,jax,torch")
    ap.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--point-n", type=int, default=1000, help="overhead: training samples of the small point")
    ap.add_argument("--point-batch", type=int, default=100)
    ap.add_argument("--point-epochs", type=int, default=3, help="overhead: epochs (the first compiles)")
    ap.add_argument("--fidelity", action="store_true", help="also the suite-vs-bare samples/s check")
    ap.add_argument("--n", type=int, default=10000, help="fidelity: training samples")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=5, help="fidelity: steady-state epochs")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cgb-bench-"))
    os.environ["CGB_OUTPUTS"] = str(tmp)
    os.environ["CGB_OFFLINE"] = "1"
    from helpers import params as P
    from helpers.measure.machine import machine_key
    from helpers.point.device import backend_installed
    from helpers.record.ids import notebook_path, point_id
    from helpers.runner import notebook as runner
    from helpers.runner.engine import install_kernelspec, register_engine
    from helpers.runner.plan import run_setup

    kernel = install_kernelspec(tmp / ".jupyter")
    engine = register_engine()
    os.environ["CGB_KERNEL_IPYTHONDIR"] = str(tmp / ".ipython")
    run_setup(print, gpu=args.device == "gpu")  # what a run does once: calibration, GPU idle power
    rows, fid = [], []
    for backend in [b for b in args.backends.split(",") if backend_installed(b)]:
        diffs, suite_w, bare_w, outside, cell_s = [], [], [], [], []
        for r in range(args.repeats):
            p = {**P.COMMON_DEFAULTS, "workload": "cnn_cifar10", "backend": backend, "device": args.device,
                 "batch_size": args.point_batch, "epochs": args.point_epochs, "n_train": args.point_n, "n_val": 0,
                 "data_source": "synthetic", "seed": r, "min_steady_s": 1e-3}  # exactly `epochs` epochs
            p["point_id"] = point_id(p, machine_key())
            order = ("suite", "bare") if r % 2 == 0 else ("bare", "suite")
            got = {}
            for which in order:
                if which == "suite":
                    rec = runner.run_point(engine, p, tmp / f"o-{backend}-{r}", kernel, 900, print)
                    if rec.get("status") != "ok":
                        raise SystemExit(f"suite point {rec.get('status')}: {rec.get('reason')}")
                    got["suite"] = rec["wall_s"]
                    cs = cells(notebook_path(rec))
                    cell_s.append(cs)
                    outside.append(rec["wall_s"] - sum(cs.values()))
                else:
                    got["bare"] = bare_fit(backend, args.device, args.point_n, args.point_batch,
                                           args.point_epochs - 1)["wall_s"]
            suite_w.append(got["suite"])
            bare_w.append(got["bare"])
            diffs.append(got["suite"] - got["bare"])
            print(f"{backend} repeat {r}: suite {got['suite']:.2f} s, bare {got['bare']:.2f} s, "
                  f"extra {got['suite'] - got['bare']:+.2f} s ({' then '.join(order)})", flush=True)
        per_cell = {k: statistics.median(c.get(k, 0.0) for c in cell_s) for k in cell_s[0]}
        rows.append((backend, statistics.median(suite_w), statistics.median(bare_w), statistics.median(diffs),
                     min(diffs), max(diffs), statistics.median(outside), per_cell))
        if args.fidelity:
            suite_sps, bare_sps, bare_med = [], [], []
            for r in range(args.repeats):
                p = {**P.COMMON_DEFAULTS, "workload": "cnn_cifar10", "backend": backend, "device": args.device,
                     "batch_size": args.batch, "epochs": args.epochs + 1, "n_train": args.n, "n_val": 0,
                     "data_source": "synthetic", "seed": r, "min_steady_s": 1e-3}
                p["point_id"] = point_id(p, machine_key())
                rec = runner.run_point(engine, p, tmp / f"f-{backend}-{r}", kernel, 1800, print)
                suite_sps.append(rec["samples_per_s"])
                b = bare_fit(backend, args.device, args.n, args.batch, args.epochs)
                bare_sps.append(b["samples_per_s"])
                bare_med.append(b.get("epoch_median_samples_per_s") or b["samples_per_s"])
            fid.append((backend, statistics.median(suite_sps), statistics.median(bare_med),
                        statistics.median(bare_sps)))
    print()
    print(f"Overhead per point ({args.device}; cnn_cifar10, {args.point_n} samples, batch {args.point_batch}, "
          f"{args.point_epochs} epochs; median of {args.repeats} alternating pairs):")
    print(f"{'backend':<11} {'suite s':>8} {'bare s':>8} {'extra s':>8} {'range':>14} {'outside cells s':>16}")
    for b, sw, bw, d, lo, hi, out, _ in rows:
        print(f"{b:<11} {sw:>8.2f} {bw:>8.2f} {d:>+8.2f} {f'{lo:+.2f}..{hi:+.2f}':>14} {out:>16.2f}")
    for b, *_, per_cell in rows:
        print(f"  {b} cells (median s): " + ", ".join(f"{k!r} {v:.2f}" for k, v in per_cell.items()))
    if fid:
        print()
        print(f"{'backend':<11} {'suite sps':>10} {'bare sps (median epoch)':>23} {'suite/bare':>10} "
              f"{'bare sps (whole fit)':>20}")
        for b, s, bmed, bsps in fid:
            print(f"{b:<11} {s:>10.0f} {bmed:>23.0f} {s / bmed:>10.3f} {bsps:>20.0f}")
        print(f"(n={args.n}, batch={args.batch}, {args.epochs} steady epochs, median of {args.repeats} repeats)")


if __name__ == "__main__":
    main()
