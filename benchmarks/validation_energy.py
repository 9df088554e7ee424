"""Validation timing and GPU energy, checked on a real device: samples/s with and without validation,
and the energy counter against the old mean-power figure.

Usage::

    python benchmarks/validation_energy.py [--device gpu] [--backends jax torch] [--repeats 2]
        [--workloads cnn_mnist mlp_mnist cnn_cifar10] [--out DIR]

Each point runs in a fresh Python process through the same calls a workload notebook makes
(``helpers.point.session``: begin, verify, load_data, build_model, fit, finish), alternating validation off
and on, so the pair is taken within one run. Prints per (workload, backend): samples/s without and
with validation (median of the repeats, and each run), their ratio (≈ 1 when the validation window
no longer swallows training), and for GPU points the energy per steady epoch from the board's counter
beside mean sampled power × median epoch (the pre-fix method), idle power and energy above idle.

``--in-process``: the pair taken inside one process instead (no run-to-run spread of process start,
clocks or memory placement): one model, one dataset, ``fit`` called alternately without and with
validation, each call timed by the suite's epoch timer (``helpers.measure.timing``) over a steady window of
``min_steady_s``; prints the median samples/s of each and their ratio.
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

# Both child scripts start alike: the point begun, Keras imported (its backend set by begin), the device
# verified, the data made and the model built, as a notebook does.
HEAD = """
import json, statistics, sys
sys.path.insert(0, {root!r})
from helpers.point import session as point
from helpers.measure.timing import make_epoch_timer
pt = point.begin({params!r})
import keras  # noqa: E402,F401
pt.verify()
data = pt.load_data()
model = pt.build_model()
"""

CHILD = HEAD + """
pt.fit(model, data)
rec = pt.finish()
print("RECORD " + str(pt.path))
"""

INPROCESS = HEAD + """
d = data
x, y, val, b = d.x_train, d.y_train, (d.x_val, d.y_val), pt.params["batch_size"]
model.fit(x, y, batch_size=b, epochs=2, validation_data=val, verbose=0)  # both functions compiled
out = {{"off": [], "on": [], "steps_per_epoch": -(-len(x) // b)}}
for rep in range({repeats}):
    for v in ((0, 1) if rep % 2 == 0 else (1, 0)):
        t = make_epoch_timer(printer=lambda *a: None, min_epochs=3, min_steady_s={window})
        model.fit(x, y, batch_size=b, epochs=10**6, shuffle=True, validation_data=val if v else None, verbose=0,
                  callbacks=[t])
        out["on" if v else "off"].append(len(x) / statistics.median(t.train_s[1:]))
print("INPROCESS " + json.dumps(out))
"""


def _child(code: str, prefix: str):
    """Run ``code`` in a fresh Python; the text after ``prefix`` on its output line, or a failure dict with the
    end of its stderr."""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900)
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith(prefix)), None)
    if res.returncode != 0 or line is None:
        return None, {"status": "failed", "reason": (res.stderr or res.stdout)[-1500:]}
    return line[len(prefix):], None


def in_process(params: dict, repeats: int, window: float) -> dict:
    text, failed = _child(INPROCESS.format(root=str(ROOT), params=params, repeats=repeats, window=window),
                          "INPROCESS ")
    return failed or json.loads(text)


def full_params(point: dict, folder: Path) -> dict:
    """A point with every notebook parameter (the grid's defaults), as the runner gives a notebook."""
    import yaml

    sys.path.insert(0, str(ROOT))
    from helpers import grid
    from helpers.runner.notebook import notebook_params

    folder.mkdir(parents=True, exist_ok=True)
    g = folder / "grid.yaml"
    g.write_text(yaml.safe_dump({"points": [point]}))
    p = notebook_params(grid.expand(g)[0])
    p["output_dir"] = str(folder)
    return p


def run(params: dict) -> dict:
    text, failed = _child(CHILD.format(root=str(ROOT), params=params), "RECORD ")
    return failed or json.loads(Path(text).read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="gpu")
    ap.add_argument("--backends", nargs="+", default=["jax", "torch"])
    ap.add_argument("--workloads", nargs="+", default=["cnn_mnist", "mlp_mnist", "cnn_cifar10"])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--n-train", type=int, default=None,
                    help="samples per epoch (default: the workload's, raised to --min-steps steps)")
    ap.add_argument("--min-steps", type=int, default=100,
                    help="at least this many steps per epoch (a fixed cost per epoch weighs less; issue 20, item 5)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--in-process", action="store_true",
                    help="alternate without/with validation inside one process (see the module's text)")
    ap.add_argument("--window", type=float, default=2.0, help="--in-process: seconds of steady training per fit")
    args = ap.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="cgb-valen-"))
    rows = []
    if args.in_process:
        for wl in args.workloads:
            for backend in args.backends:
                p = {"workload": wl, "backend": backend, "device": args.device, "n_val": 2000,
                     "data_source": "synthetic", "seed": 0}
                p = full_params(p, out / f"{wl}-{backend}-inproc")
                p["n_train"] = args.n_train or max(int(p.get("n_train") or 0), args.min_steps * int(p["batch_size"]))
                r = in_process(p, args.repeats, args.window)
                if "off" not in r:
                    print(f"{wl} {backend}: {r.get('status')} {r.get('reason')}", flush=True)
                    continue
                a, b = statistics.median(r["off"]), statistics.median(r["on"])
                each = [", ".join(f"{v:,.0f}" for v in r[k]) for k in ("off", "on")]
                print(f"{wl:12s} {backend:6s} one process, {r['steps_per_epoch']} steps/epoch: samples/s without "
                      f"validation {a:,.0f} ({each[0]})  with {b:,.0f} ({each[1]})  with/without {b / a:.2f}",
                      flush=True)
                rows.append({"workload": wl, "backend": backend, "in_process": True, "without": r["off"],
                             "with": r["on"]})
        (out / "summary.json").write_text(json.dumps(rows, indent=1))
        return 0
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
                    if not args.n_train:
                        p["n_train"] = max(int(p.get("n_train") or 0), args.min_steps * int(p["batch_size"]))
                    r = run(p)
                    if r.get("status") != "ok":
                        print(f"{wl} {backend} n_val={p['n_val']}: {r.get('status')} {r.get('reason')}", flush=True)
                        continue
                    runs[val].append(r["samples_per_s"])
                    if rep == 0:
                        print(f"  {wl} {backend} n_val={p['n_val']}: {r.get('steps_per_epoch')} steps/epoch, "
                              f"{len(r.get('epoch_s') or [])} steady epochs, training s each "
                              f"{[round(x, 4) for x in (r.get('epoch_s') or [])[:8]]}, validation s "
                              f"{[round(x, 4) for x in (r.get('val_s') or [])[1:5]]}", flush=True)
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
                    if r.get("energy_reason"):
                        print(f"    energy: {r['energy_reason']}", flush=True)
                    continue
                u = r.get("utilisation") or {}
                old = (u.get("power_w_mean") or 0) * r["median_epoch_s"]
                med = statistics.median(r["energy_j_epochs"]) if r.get("energy_j_epochs") else float("nan")
                print(f"    energy/epoch: counter over the window {r['energy_j_per_epoch']:.2f} J "
                      f"({r.get('energy_method')}, {r.get('energy_window_s') or 0:.2f} s, "
                      f"{len(r.get('energy_j_epochs') or [])} epochs); counter, median epoch (schema 2) {med:.2f} J; "
                      f"mean power x median epoch (schema 1) {old:.2f} J; idle {r.get('idle_power_w') or 0:.0f} W "
                      f"({r.get('idle_method')}); above idle {r.get('energy_above_idle_j_per_epoch') or 0:.2f} J; "
                      f"epoch {r['median_epoch_s']:.4f} s; {u.get('n_samples')} power samples", flush=True)
            rows.append({"workload": wl, "backend": backend, "without": runs[0], "with": runs[1]})
    (out / "summary.json").write_text(json.dumps(rows, indent=1))
    print(f"records: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
