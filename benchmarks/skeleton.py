"""Benchmark of the walking skeleton: the runner's overhead per grid point and its timing fidelity.

    .venv/bin/python benchmarks/skeleton.py [--backends tensorflow,jax,torch] [--n 10000] [--repeats 2]

1. Overhead: a grid point through the runner (fresh kernel, papermill, imports, device check, data,
   record, plots) minus the notebook's model-building and ``fit`` cells (the workload's own cost),
   against a bare ``python -c "import keras"`` with the same backend. Target: at most 2 s more.
2. Fidelity: cnn_cifar10's steady-state samples/s measured by the suite (median epoch) against the
   same model trained by benchmarks/bare_keras.py in the same run, timed the same way (median epoch;
   its whole-fit figure, which includes fit's start-up, is printed beside it). Target: within 5%.
Prints a table; writes nothing outside a temporary folder.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def bare_import(backend: str, repeats: int) -> float:
    env = {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu",
           "TF_CPP_MIN_LOG_LEVEL": "2"}
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import keras; keras.ops.ones(2)"], env=env, check=True,
                       capture_output=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cell_seconds(notebook: str, marker: str) -> float:
    """papermill's duration of the executed notebook's first code cell containing ``marker``."""
    nb = json.loads(Path(notebook).read_text())
    for c in nb["cells"]:
        src = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        if c["cell_type"] == "code" and marker in src:
            return float(c["metadata"]["papermill"]["duration"])
    raise KeyError(marker)


def bare_fit(backend: str, n: int, batch: int, epochs: int) -> dict:
    env = {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu",
           "TF_CPP_MIN_LOG_LEVEL": "2"}
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bare_keras.py"), "cnn_cifar10", "--n", str(n),
                          "--batch", str(batch), "--epochs", str(epochs)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backends", default="tensorflow,jax,torch")
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=5, help="steady-state epochs")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cgb-bench-"))
    os.environ["CGB_OUTPUTS"] = str(tmp)
    os.environ["CGB_OFFLINE"] = "1"
    from helpers import params as P
    from helpers import record, runner
    from helpers.device import backend_installed
    from helpers.fingerprint import machine_key

    kernel = runner.install_kernelspec(tmp / ".jupyter")
    engine = runner._register_engine()
    rows = []
    for backend in [b for b in args.backends.split(",") if backend_installed(b)]:
        imp = bare_import(backend, args.repeats)
        over, suite_sps, bare_sps, bare_med = [], [], [], []
        for r in range(args.repeats):
            # overhead: a tiny point; everything but fit
            p = {**P.COMMON_DEFAULTS, "workload": "cnn_cifar10", "backend": backend, "device": "cpu",
                 "batch_size": 100, "epochs": 2, "n_train": 200, "n_val": 0, "data_source": "synthetic",
                 "seed": r}
            p["point_id"] = record.point_id(p, machine_key())
            rec = runner.run_point(engine, p, tmp / f"o{r}", kernel, 600, print)
            # everything but building the model and fit (the workload's own cost, paid by a bare
            # script too): kernel start, imports, device check, data, record, plots, papermill
            nb = record.notebook_path(rec)
            over.append(rec["wall_s"] - cell_seconds(nb, "pt.build_model()") - cell_seconds(nb, "pt.fit(model, data)"))
            # fidelity: same model, same size, suite vs bare script, interleaved
            p = {**P.COMMON_DEFAULTS, "workload": "cnn_cifar10", "backend": backend, "device": "cpu",
                 "batch_size": args.batch, "epochs": args.epochs + 1, "n_train": args.n, "n_val": 0,
                 "data_source": "synthetic", "seed": r}
            p["point_id"] = record.point_id(p, machine_key())
            rec = runner.run_point(engine, p, tmp / f"f{r}", kernel, 1800, print)
            suite_sps.append(rec["samples_per_s"])
            b = bare_fit(backend, args.n, args.batch, args.epochs)
            bare_sps.append(b["samples_per_s"])
            bare_med.append(b.get("epoch_median_samples_per_s") or b["samples_per_s"])
        rows.append((backend, imp, statistics.median(over), statistics.median(suite_sps),
                     statistics.median(bare_sps), statistics.median(bare_med)))
    print()
    print(f"{'backend':<11} {'bare import s':>13} {'point overhead s':>16} {'extra s':>8} {'suite sps':>10} "
          f"{'bare sps (median epoch)':>23} {'suite/bare':>10} {'bare sps (whole fit)':>20}")
    for b, imp, ov, s, bsps, bmed in rows:
        print(f"{b:<11} {imp:>13.2f} {ov:>16.2f} {ov - imp:>8.2f} {s:>10.0f} {bmed:>23.0f} {s / bmed:>10.3f} "
              f"{bsps:>20.0f}")
    print(f"(n={args.n}, batch={args.batch}, {args.epochs} steady epochs, median of {args.repeats} repeats; "
          f"CPU, synthetic data)")


if __name__ == "__main__":
    main()
