"""How far the layer-by-layer GPU step model (``helpers/predict/layers.py``) runs from measurements, per GPU kind
profiled: the validation zoo (fitted on nothing of it) and the array-fed workloads left out one at a time.

    .venv/bin/python benchmarks/predict_check.py [SLUG ...]            # the tables (SLUG: h200; default: all)
    .venv/bin/python benchmarks/predict_check.py --write               # and (re)write data/gpu_layers_SLUG.json
    .venv/bin/python benchmarks/predict_check.py --features --write    # the features rebuilt from Keras first
    .venv/bin/python benchmarks/predict_check.py --fresh-predict       # the fresh set's predictions, before measuring

Reads ``data/layer_profiles/SLUG_layers.jsonl`` (the layer profiles' measurements) and ``SLUG_models.jsonl``
(whole models: the zoo and the workloads), both written by ``benchmarks/layer_profile.py`` on a GPU, and
``SLUG_features.json``: each measurement's layer features, built from Keras on the CPU (several minutes: the 420
one-layer models and the 60 whole ones are built; ``--features`` rebuilds it, and does when it is missing or
stale). Prints the zoo table (measured and predicted samples/s, the error, the 80% interval, inside or not, the
unprofiled kinds), the workloads' held-out table, the zoo's errors layer kind by layer kind, and the targets:
median |error| <= 15% on each; 80-92% of the zoo's cells inside the 80% interval; no zoo cell off by more than
3x unless an unprofiled kind is named. Exit 0 when all hold, 1 where one is missed (the figures say by how much).

The third table, the fresh set (``helpers.predict.fresh``): models that entered neither the fit nor the choice of
its formula, predicted from the committed fit (``data/gpu_layers_SLUG.json``) and committed before they were
measured (``SLUG_fresh_predictions.json``; ``--fresh-predict`` writes it), against their measurements
(``SLUG_fresh.jsonl``). Printed only, no target: the out-of-sample figures.

The whole-model fit of the bundled H100 reference (``data/gpu_model.json``): ``benchmarks/predict_check_whole.py``.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from helpers.predict import fresh, layer_fit, layers  # noqa: E402

DATA = ROOT / "data" / "layer_profiles"
TARGET_MEDIAN = 0.15
TARGET_COVERAGE = (0.80, 0.92)
TARGET_WORST = 3.0


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def _signature(rows: list[dict]) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:16]


def features(slug: str, rebuild: bool) -> dict:
    """The measurements' features: the committed file when it was built from these very measurements."""
    lay, mod = _jsonl(DATA / f"{slug}_layers.jsonl"), _jsonl(DATA / f"{slug}_models.jsonl")
    path, sig = DATA / f"{slug}_features.json", _signature(lay + mod)
    if not rebuild and path.is_file():
        have = json.loads(path.read_text())
        if have.get("signature") == sig:
            return have
        print(f"{path.name}: built from other measurements: rebuilt", file=sys.stderr)
    import os

    os.environ.setdefault("KERAS_BACKEND", "jax")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    feats = {"signature": sig, "layers": layer_fit.measured_layers(lay), "models": layer_fit.measured_models(mod),
             "provenance": provenance(lay + mod)}
    path.write_text(json.dumps(feats, indent=None, sort_keys=True) + "\n")
    return feats


def provenance(rows: list[dict]) -> dict:
    """What the measurements rest on: GPU, driver, library versions, dates, rows per backend and precision."""
    keys = ("gpu", "driver", "keras", "jax", "torch", "cuda", "date", "host_cpus")
    out = {k: sorted({str(r[k]) for r in rows if r.get(k) is not None}) for k in keys}
    counts: dict[str, int] = {}
    for r in rows:
        if "error" not in r:
            k = f"{r['what']}s {r['backend']} {r['precision']}"
            counts[k] = counts.get(k, 0) + 1
    return {**out, "rows": counts, "windows_a_layer": 3, "runs_a_model": 2}


def zoo_rows(fit: dict, models: list[dict]) -> list[dict]:
    out = []
    for m in models:
        if m["set"] != "zoo" or m["backend"] not in fit["steps"]:
            continue
        p = layers.predicted(fit, m["rows"], m["backend"], m["precision"], m["batch"], m["in_bytes"])
        meas = m["batch"] / m["step_s"]
        out.append({"name": m["name"], "backend": m["backend"], "precision": m["precision"], "batch": m["batch"],
                    "measured_sps": meas, "predicted_sps": p["samples_per_s"], "error": p["samples_per_s"] / meas - 1,
                    "low_sps": p["samples_per_s_low"], "high_sps": p["samples_per_s_high"],
                    "inside": p["samples_per_s_low"] <= meas <= p["samples_per_s_high"],
                    "unprofiled": sorted(p["unprofiled"]), "unprofiled_share": p["unprofiled_share"],
                    "kinds": sorted({r["kind"] for r in m["rows"]})})
    return out


def _table(rows: list[dict]) -> None:
    print(f"  {'model':18} {'backend':6} {'precision':15} {'batch':>5} {'measured':>10} {'predicted':>10} {'error':>7}"
          "  80% interval")
    for r in rows:
        unp = f"  unprofiled: {', '.join(r['unprofiled'])} ({layers.share_text(r['unprofiled_share'])} of the step)" \
            if r.get("unprofiled") else ""
        print(f"  {r['name']:18} {r['backend']:6} {r['precision']:15} {r['batch']:5d} {r['measured_sps']:10,.0f} "
              f"{r['predicted_sps']:10,.0f} {r['error']:+7.0%}  {r['low_sps']:,.0f}-{r['high_sps']:,.0f}"
              f"{'' if r['inside'] else '  outside'}{unp}")


def _loo_rows(fit: dict, models: list[dict]) -> list[dict]:
    """The workloads' held-out cells with the interval each would be given (the other workloads' errors only)."""
    out = []
    loo = fit["held_out"]["workloads"]
    for r in loo:
        others = [x["log_err"] for x in loo if x["name"] != r["name"]]  # pooled over backends, as the fit's
        lo, hi = layers.quantiles(others)
        meas, pred = r["batch"] / r["step_s"], r["batch"] / r["predicted_s"]
        out.append({**r, "measured_sps": meas, "predicted_sps": pred, "error": pred / meas - 1,
                    "low_sps": r["batch"] / (r["predicted_s"] * math.exp(hi)),
                    "high_sps": r["batch"] / (r["predicted_s"] * math.exp(lo)),
                    "inside": lo <= r["log_err"] <= hi})
    return out


def fresh_predict(slug: str) -> None:
    """Write the fresh set's predictions from the committed fit (Keras on the CPU builds the models)."""
    import hashlib
    import os

    os.environ.setdefault("KERAS_BACKEND", "jax")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    raw = layers.fit_path(slug).read_bytes()
    preds = fresh.predictions(json.loads(raw), hashlib.sha256(raw).hexdigest())
    path = DATA / f"{slug}_fresh_predictions.json"
    path.write_text(json.dumps(preds, indent=None, sort_keys=True) + "\n")
    print(f"wrote {path.relative_to(ROOT)}: {len(preds['cells'])} cells")


def fresh_table(slug: str) -> dict | None:
    """The fresh set: the committed fit's pre-registered predictions against the measurements (None: none yet)."""
    pp, mp = DATA / f"{slug}_fresh_predictions.json", DATA / f"{slug}_fresh.jsonl"
    if not pp.is_file() or not mp.is_file():
        return None
    rows, summ = fresh.check(json.loads(layers.fit_path(slug).read_text()), json.loads(pp.read_text()), _jsonl(mp))
    print("the fresh set (out of sample: in neither the fit nor the choice of its formula; predicted before measured):")
    _table(sorted(rows, key=lambda r: (r["name"], r["backend"], r["batch"])))
    for k, v in summ.items():
        if v["cells"]:
            w = v["worst"]
            print(f"  {k:6}: {v['cells']} cells, median |error| {v['median_abs_error']:.0%}, inside the 80% interval "
                  f"{v['inside']} of {v['cells']} = {v['coverage']:.0%}; worst {w['name']} {w['backend']} "
                  f"b{w['batch']} {w['error']:+.0%}")
    return summ


def check(slug: str, rebuild: bool, write: bool) -> bool:
    feats = features(slug, rebuild)
    gpu = feats["provenance"]["gpu"][0]
    fit = layer_fit.build_fit(feats["layers"], feats["models"], gpu, feats["provenance"])
    zoo = sorted(zoo_rows(fit, feats["models"]), key=lambda r: (r["name"], r["backend"], r["precision"]))
    loo = sorted(_loo_rows(fit, feats["models"]), key=lambda r: (r["name"], r["backend"], r["batch"]))
    print(f"== {gpu}: {len(feats['layers'])} layer measurements, {len(fit['profiles'])} profiles; per-step cost "
          f"fitted on {len(fit['fitted_on'])} workloads")
    print("the validation zoo (fitted on nothing of it):")
    _table(zoo)
    print("the workloads, each left out in turn (its interval from the other workloads' errors):")
    _table(loo)
    z_med = statistics.median(abs(r["error"]) for r in zoo)
    z_cov = sum(r["inside"] for r in zoo) / len(zoo)
    w_med = statistics.median(abs(r["error"]) for r in loo)
    worst = [r for r in zoo if max(r["predicted_sps"] / r["measured_sps"], r["measured_sps"] / r["predicted_sps"])
             > TARGET_WORST and not r["unprofiled"]]
    print("the zoo's errors, layer kind by layer kind (the cells holding the kind):")
    for k in sorted({k for r in zoo for k in r["kinds"]}):
        e = [abs(r["error"]) for r in zoo if k in r["kinds"]]
        print(f"  {k:24} {len(e):2d} cells, median |error| {statistics.median(e):4.0%}, worst {max(e):4.0%}")
    for b in sorted({r["backend"] for r in zoo}):
        zb = [r for r in zoo if r["backend"] == b]
        print(f"  {b:6}: zoo median |error| {statistics.median(abs(r['error']) for r in zb):.0%}, inside "
              f"{sum(r['inside'] for r in zb)} of {len(zb)}; workloads held out "
              f"{statistics.median(abs(r['error']) for r in loo if r['backend'] == b):.0%}")
    ok = (z_med <= TARGET_MEDIAN and TARGET_COVERAGE[0] <= z_cov <= TARGET_COVERAGE[1] and not worst
          and w_med <= TARGET_MEDIAN)
    print(f"zoo: {len(zoo)} cells, median |error| {z_med:.0%} (target <= {TARGET_MEDIAN:.0%}); inside the 80% "
          f"interval {sum(r['inside'] for r in zoo)} of {len(zoo)} = {z_cov:.0%} (target {TARGET_COVERAGE[0]:.0%}-"
          f"{TARGET_COVERAGE[1]:.0%}); off by more than {TARGET_WORST:.0f}x with no unprofiled kind named: "
          f"{len(worst)}")
    print(f"workloads held out: {len(loo)} cells, median |error| {w_med:.0%} (target <= {TARGET_MEDIAN:.0%}); inside "
          f"their interval {sum(r['inside'] for r in loo)} of {len(loo)}")
    fresh_table(slug)
    if write:
        fit["zoo"] = zoo
        fit["summary"] = {"zoo_median_abs_error": z_med, "zoo_coverage": z_cov, "zoo_cells": len(zoo),
                          "workloads_median_abs_error": w_med, "workload_cells": len(loo)}
        layers.fit_path(slug).write_text(json.dumps(fit, indent=1, sort_keys=True) + "\n")
        print(f"wrote {layers.fit_path(slug).relative_to(ROOT)}")
    return ok


def main(argv: list[str]) -> int:
    rebuild, write = "--features" in argv, "--write" in argv
    slugs = [a for a in argv if not a.startswith("--")] or sorted(
        p.name[:-len("_layers.jsonl")] for p in DATA.glob("*_layers.jsonl"))
    if "--fresh-predict" in argv:
        for s in slugs:
            fresh_predict(s)
        return 0
    results = [check(s, rebuild, write) for s in slugs]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
