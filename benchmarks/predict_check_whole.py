"""How far the GPU step model (helpers/predict/gpu.py) runs from the bundled reference's measurements, each workload
held out: fitted on the others, its cells predicted, its 80% interval made of the other workloads' held-out errors.

    .venv/bin/python benchmarks/predict_check_whole.py [RECORDS_DIR ...]      # default: reference/h100 and its ladder
    .venv/bin/python benchmarks/predict_check_whole.py --write                # and (re)write data/gpu_model.json

Prints one line per held-out cell (workload, backend, batch, precision: measured and predicted samples/s, the
error, the interval and whether the measurement falls inside), then the median and worst |error| and the
interval's coverage (targets: median |error| <= 30% of the measured samples/s, coverage >= 80%), and the
constants fitted on every workload. Exit 0; 1 where a target is missed (the figures say by how much).
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from helpers.predict import gpu  # noqa: E402
from helpers.record.reader import read_records  # noqa: E402

TARGET_MEDIAN = 0.30
TARGET_COVERAGE = 0.80


def main(argv: list[str]) -> int:
    write = "--write" in argv
    argv = [a for a in argv if a != "--write"]
    folders = [Path(a) for a in argv] or [ROOT / "reference" / "h100" / "records",
                                            ROOT / "reference" / "h100" / "ladder" / "records"]
    records, _ = read_records(folders)
    obs = gpu.observations(records)
    if not obs:
        print("no GPU configuration the model describes in " + ", ".join(map(str, folders)), file=sys.stderr)
        return 2
    rows = gpu.leave_one_out(obs)
    print(f"{len(obs)} configurations of {len({o['workload'] for o in obs})} workloads on {obs[0]['gpu']} "
          f"(left out, their input batched from files on the host: {', '.join(gpu.HOST_PIPELINE)})")
    print(f"{'workload':14} {'backend':10} {'batch':>5} {'precision':15} {'measured':>10} {'predicted':>10} "
          f"{'error':>7}  80% interval")
    for r in sorted(rows, key=lambda r: (r["workload"], r["backend"], r["batch"], r["precision"])):
        print(f"{r['workload']:14} {r['backend']:10} {r['batch']:5d} {r['precision']:15} {r['measured_sps']:10,.0f} "
              f"{r['predicted_sps']:10,.0f} {r['error']:+7.0%}  {r['low_sps']:,.0f}-{r['high_sps']:,.0f}"
              f"{'' if r['inside'] else '  outside'}")
    errs = [abs(r["error"]) for r in rows]
    worst = max(rows, key=lambda r: abs(r["error"]))
    med, cov = statistics.median(errs), sum(r["inside"] for r in rows) / len(rows)
    where = f"{worst['workload']} {worst['backend']} batch {worst['batch']} {worst['precision']}"
    print(f"\nheld out: {len(rows)} cells; median |error| {med:.0%} (target <= {TARGET_MEDIAN:.0%}); worst "
          f"{worst['error']:+.0%} ({where}); "
          f"inside the 80% interval {sum(r['inside'] for r in rows)} of {len(rows)} = {cov:.0%} "
          f"(target >= {TARGET_COVERAGE:.0%})")
    for b in sorted({r["backend"] for r in rows}):
        rb = [r for r in rows if r["backend"] == b]
        print(f"  {b:10}: median |error| {statistics.median(abs(r['error']) for r in rb):.0%}, inside "
              f"{sum(r['inside'] for r in rb)} of {len(rb)}")
    fit = gpu.final_fit(obs)
    print("fitted on every workload: " + "; ".join(
        f"{b}: {fit.a[b] * 1e3:.2f} ms a step + {fit.k[b] * 1e6:.1f} us a launch, {fit.e[b]:.0%} of the peak, "
        f"interval x{math.exp(fit.log_q[b][0]):.2f} to x{math.exp(fit.log_q[b][1]):.2f} of the step"
        for b in sorted(fit.a)) + f"; {fit.w * 1e6:.1f} us a weight tensor; {fit.h * 1e12:.0f} ps a host byte")
    if write:
        held = {"cells": len(rows), "median_abs_error": med, "coverage": cov,
                "worst": {"error": worst["error"], "where": where},
                "records": [str(f.relative_to(ROOT)) if f.is_relative_to(ROOT) else str(f) for f in folders]}
        gpu.save_fit(fit, ROOT / "data" / gpu.MODEL_FILE, held)
        print(f"wrote data/{gpu.MODEL_FILE}")
    return 0 if med <= TARGET_MEDIAN and cov >= TARGET_COVERAGE else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
