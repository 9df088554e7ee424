"""Does ``profile: true`` touch the timed figures? A point's samples/s with the profile on against off, alternating.

    .venv/bin/python benchmarks/studies/profile_overhead.py [--backends jax,torch] [--pairs 5] [--workload mlp_mnist]
        [--device cpu] [--threads 1] [--n-train 4096] [--min-steady-s 1.0]

Each run is one grid point in a fresh Python (the notebook's sequence: begin, verify, data, model, fit, finish),
the pairs alternating (on first in even pairs, off first in odd ones) so that a drift of the host lands on both.
Printed per backend: each pair's timed samples/s off and on and their ratio, then the median ratio over the pairs
with its range (target: 1 within noise: the profiled steps run after the timed window), and from the profiled
runs the profiler's own overhead on the steps it traced (profiled step / unprofiled step, both synced) and the
breakdown's shares. Writes nothing outside a temporary folder.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_POINT = r"""
import json, sys
from helpers import params, workloads
from helpers.point.session import begin
a = json.loads(sys.argv[1])
prm = {**params.COMMON_DEFAULTS, **workloads.get(a["workload"]).defaults, **a}
pt = begin(prm)
import keras  # noqa: F401
pt.verify()
pt.load_data()
pt.build_model()
pt.fit()
r = pt.finish()
print("RESULT" + json.dumps({k: r.get(k) for k in ("samples_per_s", "step_s", "steady_s", "step_breakdown",
                                                   "step_breakdown_reason")}))
"""


def run_point(args, backend: str, profile: bool, out: str) -> dict:
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": str(ROOT)}
    if args.device == "cpu":
        env.update(CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu")
    prm = {"workload": args.workload, "backend": backend, "device": args.device, "epochs": 2,
           "threads": args.threads, "min_steady_s": args.min_steady_s, "data_source": "synthetic",
           "output_dir": out, "profile": profile}
    if args.n_train:
        prm["n_train"] = args.n_train
    res = subprocess.run([sys.executable, "-c", _POINT, json.dumps(prm)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=900)
    if res.returncode or "RESULT" not in res.stdout:
        raise SystemExit(f"{backend} profile={profile} failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    return json.loads(res.stdout.split("RESULT", 1)[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backends", default="jax,torch")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--workload", default="mlp_mnist")
    ap.add_argument("--device", default="cpu", choices=("cpu", "gpu"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--n-train", type=int, default=4096)
    ap.add_argument("--min-steady-s", type=float, default=1.0)
    args = ap.parse_args()
    print(f"{args.workload} on {args.device}, threads {args.threads}, n_train {args.n_train}, steady window >= "
          f"{args.min_steady_s} s, {args.pairs} alternating pairs per backend")
    with tempfile.TemporaryDirectory() as tmp:
        for backend in args.backends.split(","):
            ratios, overheads, shares = [], [], []
            for i in range(args.pairs):
                order = (True, False) if i % 2 == 0 else (False, True)
                got = {p: run_point(args, backend, p, f"{tmp}/{backend}-{i}-{p}") for p in order}
                on, off = got[True], got[False]
                r = on["samples_per_s"] / off["samples_per_s"]
                ratios.append(r)
                b = on.get("step_breakdown")
                extra = ""
                if b:
                    overheads.append(b["profiler_overhead"])
                    shares.append(b["shares"])
                    extra = (f"; profiler on its steps x{b['profiler_overhead']:.2f} ({b['unprofiled_step_ms']:.2f} -> "
                             f"{b['clock_step_ms']:.2f} ms/step)")
                else:
                    extra = f"; no breakdown: {on.get('step_breakdown_reason')}"
                print(f"  {backend} pair {i + 1} ({'on' if order[0] else 'off'} first): off {off['samples_per_s']:,.0f}"
                      f" samples/s, on {on['samples_per_s']:,.0f}: ratio {r:.3f}{extra}", flush=True)
            print(f"{backend}: timed samples/s, profile on / off: median {statistics.median(ratios):.3f} "
                  f"(range {min(ratios):.3f}-{max(ratios):.3f}, {len(ratios)} pairs)")
            if overheads:
                med = {k: statistics.median(s[k] for s in shares) for k in shares[0]}
                print(f"{backend}: the profiler on the steps it traced: median x{statistics.median(overheads):.2f} "
                      f"(range {min(overheads):.2f}-{max(overheads):.2f}); shares of the step (median): "
                      + ", ".join(f"{k} {v:.0%}" for k, v in med.items()))


if __name__ == "__main__":
    main()
