"""FLOPs per training sample of every workload: the analytical count against XLA's, and the committed table.

    .venv/bin/python benchmarks/flops.py [--workloads cnn_cifar10,mlp_mnist] [--stage auto|compiled|lowered]
    .venv/bin/python benchmarks/flops.py --table      # (re)write data/flops.csv, the report's counts

1. Cross-check (default): for each of the ten workloads at its defaults (the source's configuration; ResNet-50
   at 224 px), on the JAX backend on this CPU in a fresh process: the analytical count
   (``helpers.measure.flops_analytic``: 2 FLOPs per multiply-add, backward = 2 x forward, the optimiser's update
   per step over the batch) and XLA's cost analysis of the compiled train step at the workload's batch size
   (``helpers.measure.flops_xla``; recurrent layers unrolled: XLA counts a loop body once; their unrolled step
   is analysed as lowered, before XLA's passes: compiling it takes minutes on a CPU). Printed: forward
   multiply-adds per sample, the convention's training FLOPs per sample, the same less the input gradient
   nobody computes (``exact``) and XLA's figure, with XLA ÷ exact.
   Agreement: within ``TOLERANCE``; a row past it says why (``WHY``). What remains between the two: XLA counts
   the loss, metrics, random numbers and the optimiser op by op, and leaves out a 'same' convolution's products
   with its zero padding (ResNet-50: XLA about 3% under the convention). Last run, Keras 3.15.1: all ten within
   15%, eight within 5% (fasttext_imdb -8%: its step is 99.8% the Adam update of a 66M-parameter embedding).
2. ``--table``: the analytical count of every model configuration that a record of the bundled reference, a
   grid in params/ or a workload's defaults names, written to data/flops.csv (the report fills
   ``flops_per_sample`` of records that predate the count from it, without importing Keras).
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOLERANCE = 0.15  # |XLA ÷ exact - 1| for the models whose FLOPs are matmuls and convolutions
TEN = ("bilstm_imdb", "catsdogs", "cnn_256", "cnn_cifar10", "cnn_mnist", "fasttext_imdb", "lstm_textgen",
       "mlp_mnist", "resnet50", "vgg_cifar10")
WHY = {  # what the two counts differ by, where it goes past the tolerance (none did on the last run)
    "fasttext_imdb": "the update of the 66M-parameter embedding is nearly all of it: the optimiser's elementwise "
                     "ops, counted per parameter by the convention (UPDATE_FLOPS) and one by one by XLA",
}


def _env() -> dict:
    return {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "",
            "TF_CPP_MIN_LOG_LEVEL": "3"}


def _params(name: str, extra: dict | None = None) -> dict:
    from helpers import params as P
    from helpers import workloads as W

    w = W.get(name)
    return {**P.COMMON_DEFAULTS, **w.defaults, "workload": name, "backend": "jax", "device": "cpu",
            **(extra or {})}


def _batch_spec(name: str, p: dict, batch: int):
    """ShapeDtypeStructs of one training batch of ``batch`` samples (shapes from a tiny synthetic load)."""
    import jax

    from helpers import workloads as W

    d = W.load_data(name, {**p, "data_source": "synthetic", "n_train": max(2, min(8, p["batch_size"])),
                           "n_val": 0})
    x, y = (d.train[0][0], d.train[0][1]) if d.train is not None else (d.x_train, d.y_train)
    return (jax.ShapeDtypeStruct((batch, *x.shape[1:]), x.dtype), jax.ShapeDtypeStruct((batch, *y.shape[1:]), y.dtype))


def worker_compare(names, stage: str) -> list[dict]:
    from helpers import workloads as W
    from helpers.measure import flops_analytic, flops_table, flops_xla

    rows = []
    for name in names:
        p = _params(name)
        t0 = time.perf_counter()
        model = W.build_model(name, p)
        c = flops_analytic.analytic(model)
        b = int(p["batch_size"])
        x, y = _batch_spec(name, p, b)
        t1 = time.perf_counter()
        try:
            xla = flops_xla.xla_train_step(model, x, y, stage=stage)
            err = ""
        except Exception as exc:  # shown, never hidden
            xla, err = {"per_sample": None}, f"{type(exc).__name__}: {exc}"[:200]
        rows.append({"workload": name, "batch": b, "model": flops_table.model_key(p), "fwd_macs": c.forward / 2,
                     "train": c.train(b), "exact": c.exact(b), "xla": xla["per_sample"],
                     "update_share": c.update_per_step / b / c.train(b), "notes": c.notes, "error": err,
                     "stage": xla.get("stage"),
                     "count_s": t1 - t0, "xla_s": time.perf_counter() - t1})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def _configs() -> list[tuple[str, dict]]:
    """(workload, params) of every model configuration the reference records, the grids and the defaults name."""
    from helpers import grid
    from helpers.measure import flops_table
    from helpers.record.reader import read_records
    from helpers.report.load.reference import reference_folders

    seen: dict[tuple, tuple] = {}

    def add(name, p):
        if name in TEN:
            seen.setdefault((name, flops_table.model_key(p)), (name, p))

    for name in TEN:
        add(name, _params(name))
    records, _ = read_records(reference_folders())
    for r in records:
        if r.get("workload") in TEN and isinstance(r.get("params"), dict):
            add(r["workload"], {**_params(r["workload"]), **r["params"]})
    for path in sorted((ROOT / "params").glob("*.yaml")):
        try:
            points = grid.expand(path)
        except grid.GridError:
            continue  # prices.yaml, peaks.yaml: not grids
        for pt in points:
            add(pt["workload"], {k: v for k, v in pt.items() if not k.startswith("_")})
    return list(seen.values())


def worker_table(out: Path) -> None:
    from helpers import workloads as W
    from helpers.measure import flops_analytic, flops_table
    from helpers.predict.shape import shape

    rows = []
    for name, p in sorted(_configs(), key=lambda c: (c[0], flops_table.model_key(c[1]))):
        model = W.build_model(name, {**p, "backend": "jax"})
        rows.append(flops_table.table_row(name, p, flops_analytic.analytic(model), shape(model)))
        macs = float(rows[-1]["forward_flops"]) / 2
        print(f"{name} {flops_table.model_key(p)}: {macs:,.0f} MACs forward", flush=True)
    with out.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=flops_table.TABLE_FIELDS)
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {len(rows)} rows to {out}")


def _fmt(v, unit=1e6):
    return "-" if v is None else f"{v / unit:,.2f}"


def report(rows) -> None:
    print(f"\n{'workload':15} {'batch':>5} {'fwd M MACs':>12} {'train MFLOP':>13} {'exact MFLOP':>13} "
          f"{'XLA MFLOP':>13} {'XLA/exact':>9}  update share, XLA stage, note")
    for r in rows:
        ratio = r["xla"] / r["exact"] if r["xla"] else None
        ok = ratio is not None and abs(ratio - 1) <= TOLERANCE
        note = WHY.get(r["workload"], "") if not ok else ""
        print(f"{r['workload']:15} {r['batch']:>5} {_fmt(r['fwd_macs']):>12} {_fmt(r['train']):>13} "
              f"{_fmt(r['exact']):>13} {_fmt(r['xla']):>13} {'-' if ratio is None else f'{ratio:.3f}':>9}  "
              f"{r['update_share']:.1%} {r.get('stage') or ''} {'ok' if ok else note or r['error']}")
    print(f"\nagreement: |XLA ÷ exact - 1| <= {TOLERANCE:.0%} "
          f"({sum(1 for r in rows if r['xla'] and abs(r['xla'] / r['exact'] - 1) <= TOLERANCE)} of {len(rows)})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default=",".join(TEN))
    ap.add_argument("--stage", choices=("auto", "compiled", "lowered"), default="auto",
                    help="auto: compiled, lowered for recurrent models (unrolled: minutes to compile)")
    ap.add_argument("--table", action="store_true", help="write data/flops.csv")
    ap.add_argument("--worker", choices=("compare", "table"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker == "compare":
        worker_compare([n for n in a.workloads.split(",") if n], a.stage)
        return 0
    if a.worker == "table":
        worker_table(ROOT / "data" / "flops.csv")
        return 0
    cmd = [sys.executable, __file__, "--worker", "table" if a.table else "compare", "--workloads", a.workloads,
           "--stage", a.stage]
    rows = []
    with subprocess.Popen(cmd, env=_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        for line in proc.stdout:  # progress as it comes
            if line.startswith("{"):
                rows.append(json.loads(line))
                r = rows[-1]
                print(f"{r['workload']}: counted in {r['count_s']:.1f} s, XLA in {r['xla_s']:.1f} s", flush=True)
            else:
                print(line, end="", flush=True)
        err = proc.stderr.read()
    if rows:
        report(rows)
    if proc.returncode:
        print(err[-3000:], file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
