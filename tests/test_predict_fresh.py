"""The fresh set (helpers/predict/zoo.FRESH): models that entered neither the layer model's fit nor the choice of its
formula. The fit never reads them; their predictions were made from the committed fit and committed before they were
measured; the out-of-sample figures re-check against the committed measurements, to the digit."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from helpers.paths import PROJECT_ROOT
from helpers.predict import fresh, layer_fit, layers, zoo

SLUG = "h200"
DATA = PROJECT_ROOT / "data" / "layer_profiles"
PREDS = DATA / f"{SLUG}_fresh_predictions.json"
MEASURED = DATA / f"{SLUG}_fresh.jsonl"


@pytest.fixture(scope="module")
def fit():
    return json.loads(layers.fit_path(SLUG).read_text())


@pytest.fixture(scope="module")
def preds():
    return json.loads(PREDS.read_text())


def test_the_fresh_set_is_apart_from_the_zoo_and_the_workloads():
    from helpers.workloads import names

    assert len(zoo.FRESH) >= 6
    assert not set(zoo.FRESH) & set(zoo.ZOO)
    assert not set(zoo.FRESH) & set(names())
    assert all(len(set(b)) == 2 for _, b in zoo.FRESH.values())


def test_the_fit_never_reads_the_fresh_set(fit):
    """The fit on the committed features with the fresh cells added (at absurd steps) is the committed fit: the
    per-step constants and the intervals rest on the workloads and the host probes alone."""
    feats = json.loads((DATA / f"{SLUG}_features.json").read_text())
    pre = json.loads(PREDS.read_text())
    poison = [{"set": "fresh", "name": m["name"], "backend": b, "precision": "float32", "batch": m["batch"],
               "step_s": 1e3, "runs": [1e3], "in_bytes": m["in_bytes"], "rows": m["rows"]}
              for m in pre["models"] for b in ("jax", "torch")]
    again = layer_fit.build_fit(feats["layers"], feats["models"] + poison, fit["gpu"], feats["provenance"])
    for b, v in fit["steps"].items():
        assert again["steps"][b] == pytest.approx(v, rel=1e-6)
    assert again["log_q"] == pytest.approx(fit["log_q"])
    assert not set(zoo.FRESH) & set(again["fitted_on"])
    assert not {r["name"] for r in again["held_out"]["workloads"]} & set(zoo.FRESH)


def test_the_predictions_were_made_from_the_committed_fit(fit, preds):
    """The pre-registered predictions rest on the committed fit (its sha256) and are what it gives, to the digit."""
    assert preds["fit_sha256"] == hashlib.sha256(layers.fit_path(SLUG).read_bytes()).hexdigest()
    again = fresh.predict_cells(fit, preds["models"])
    assert len(again) == len(preds["cells"]) == 2 * 2 * len(zoo.FRESH)
    for a, c in zip(again, preds["cells"]):
        assert (a["name"], a["backend"], a["batch"]) == (c["name"], c["backend"], c["batch"])
        assert f"{a['predicted_sps']:,.0f} {a['low_sps']:,.0f}-{a['high_sps']:,.0f}" == \
            f"{c['predicted_sps']:,.0f} {c['low_sps']:,.0f}-{c['high_sps']:,.0f}"


def test_the_committed_fresh_features_are_the_models_own(preds):
    os.environ.setdefault("KERAS_BACKEND", "jax")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import keras

    keras.backend.clear_session()
    model, _, _, batches = zoo.build_fresh("gru_text")
    for b in batches:
        m = next(m for m in preds["models"] if m["name"] == "gru_text" and m["batch"] == b)
        assert layers.layer_rows(model, b) == m["rows"]
        assert layers.input_bytes(model, b) == m["in_bytes"]


def test_the_fresh_figures_are_what_the_committed_measurements_give(fit, preds):
    """The out-of-sample figures docs/custom_model.md states, re-checked from the committed fit, the pre-registered
    predictions and the committed measurements: each cell predicted as registered, and the summary to the digit."""
    measured = [json.loads(ln) for ln in MEASURED.read_text().splitlines() if ln.strip()]
    assert {r["gpu"] for r in measured} == {"NVIDIA H200"} and all(r.get("driver") for r in measured)
    failed = {(r["name"], r["backend"]) for r in measured if "error" in r}
    assert failed == {("unet_transpose", "torch")}  # Keras' PyTorch backend: "grad_input must be contiguous"
    rows, summ = fresh.check(fit, preds, measured)
    cells = {(c["name"], c["backend"], c["batch"]): c for c in preds["cells"]}
    for r in rows:
        c = cells[(r["name"], r["backend"], r["batch"])]
        assert f"{r['predicted_sps']:,.0f} {r['low_sps']:,.0f}-{r['high_sps']:,.0f}" == \
            f"{c['predicted_sps']:,.0f} {c['low_sps']:,.0f}-{c['high_sps']:,.0f}"
    got = {k: (v["cells"], f"{v['median_abs_error']:.0%}", v["inside"], v["worst"]["name"], v["worst"]["backend"],
               v["worst"]["batch"], f"{v['worst']['error']:+.0%}") for k, v in summ.items()}
    assert got == {"all": (26, "18%", 20, "mlp_mixer", "torch", 256, "-45%"),
                   "jax": (14, "20%", 12, "resnet50_v2", "jax", 32, "+66%"),
                   "torch": (12, "16%", 8, "mlp_mixer", "torch", 256, "-45%")}
