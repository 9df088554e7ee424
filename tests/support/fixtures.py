"""Hand-written records this machine cannot produce (a GPU pair, a failure, markup in every field), marked
``fixture: true``, built from one real record."""

from __future__ import annotations

import copy
from pathlib import Path

from helpers.record.writer import write_atomic

XSS = "<script>window.__xss=1</script>"



def fixture_records(real: dict) -> list[dict]:
    """Records this machine cannot produce, built from a real one and marked ``fixture: true``: a GPU pair with
    power and a GPU timeline, a failed point, and a record whose text is markup."""
    out = []
    fp = copy.deepcopy(real["fingerprint"])
    fp.update(host="FIXTURE-not-a-real-machine", gpu_names=["Tesla P100-PCIE-16GB"], gpu_driver="fixture",
              cuda_driver="fixture", cpu_model="FIXTURE Xeon", cpu_logical=8, cpu_allowed=8,
              machine_key="FIXTURE|P100")
    for dev, backend, scale in (("gpu", "jax", 0.05), ("cpu", "jax", 1.0), ("gpu", "torch", 0.08)):
        r = copy.deepcopy(real)
        r.update(fixture=True, device=dev, device_used=dev, backend=backend, fingerprint=copy.deepcopy(fp),
                 point_id=f"fixture{dev}{backend}", started_at="2026-01-01T00:00:00+00:00")
        r["params"] = {**r["params"], "device": dev, "backend": backend}
        r["epoch_s"] = [t * scale for t in (real["epoch_s"] or [0.1])] * 3
        r["median_epoch_s"] = sorted(r["epoch_s"])[len(r["epoch_s"]) // 2]
        r["epoch_spread"] = {}
        r["first_epoch_s"] = (real["first_epoch_s"] or 1.0) * (3 if dev == "gpu" else 1)
        r["epoch_total_s"] = [r["first_epoch_s"], *r["epoch_s"]]
        r["samples_per_s"] = r["n_train"] / r["median_epoch_s"]
        r["step_s"] = r["median_epoch_s"] / (r.get("steps_per_epoch") or 1)
        if dev == "gpu":
            tl = [{"t": 0.25 * i, "cpu_pct": 60.0, "rss_mb": 900.0, "gpu_pct": 20.0 + (i % 7) * 10,
                   "gpu_mem_mb": 1500.0 + 10 * i, "power_w": 80.0 + (i % 5) * 20} for i in range(40)]
            r["utilisation_timeline"] = tl
            r["epoch_bounds_s"] = [[0.5, 4.0], [4.0, 6.0], [6.0, 8.0]]
            r["utilisation"] = {"cpu_pct_mean": 60.0, "gpu_pct_mean": 55.0, "gpu_mem_peak_mb": 1900.0,
                                "power_w_mean": 120.0, "gpu_sampled": True}
            r["energy_j_per_epoch"] = 120.0 * r["median_epoch_s"]
        r["notebook"] = None
        out.append(r)
    bad = copy.deepcopy(out[1])
    bad.update(status="failed", reason=f"ValueError: fixture failure {XSS}", point_id="fixturefailed",
               workload=XSS, median_epoch_s=None, epoch_s=[], samples_per_s=None)
    out.append(bad)
    odd = copy.deepcopy(out[0])
    odd.update(workload=XSS, point_id="fixturexss")
    odd["fingerprint"]["host"] = "FIXTURE-<b>bold</b>-$x$"
    out.append(odd)
    return out


def write_fixtures(folder: Path, real: dict) -> list[Path]:
    return [write_atomic(folder / f"fixture-{r['point_id']}.json", r) for r in fixture_records(real)]
