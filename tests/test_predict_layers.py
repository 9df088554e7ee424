"""The layer-by-layer GPU step model (helpers/predict/layers.py) on its committed profiles: a kind no profile holds
is named with its share and widens the interval; the validation zoo's committed figures are what the committed
measurements give, to the digit; a prediction never comes without its interval and GPU."""

from __future__ import annotations

import json
import math
import os

import pytest

from helpers.paths import PROJECT_ROOT
from helpers.predict import layer_fit, layers

SLUG = "h200"
FEATURES = PROJECT_ROOT / "data" / "layer_profiles" / f"{SLUG}_features.json"


@pytest.fixture(scope="module")
def fit():
    return json.loads(layers.fit_path(SLUG).read_text())


@pytest.fixture(scope="module")
def feats():
    return json.loads(FEATURES.read_text())


@pytest.fixture(scope="module")
def keras_cpu():
    os.environ.setdefault("KERAS_BACKEND", "jax")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import keras

    return keras


def _mixed(keras, with_custom: bool):
    @keras.saving.register_keras_serializable(package="test_layers")
    class Gate(keras.layers.Layer):  # a user's own layer: no profile holds it
        def build(self, shape):
            self.g = self.add_weight(shape=(shape[-1],), initializer="ones")

        def call(self, x):
            return x * keras.ops.sigmoid(self.g)

    inp = keras.Input((256,))
    x = keras.layers.Dense(1024, activation="relu")(inp)
    if with_custom:
        x = Gate()(x)
    return keras.Model(inp, keras.layers.Dense(10, activation="softmax")(x))


def test_an_unprofiled_kind_is_named_with_its_share_and_widens_the_interval(fit, keras_cpu):
    width = {}
    for with_custom in (False, True):
        model = _mixed(keras_cpu, with_custom)
        rows = layers.layer_rows(model, 128)
        for backend in ("jax", "torch"):
            p = layers.predicted(fit, rows, backend, "float32", 128, layers.input_bytes(model, 128))
            assert p["gpu"] == "NVIDIA H200" and p["interval"] == 0.8 and p["mark"] == "predicted"
            assert p["samples_per_s_low"] < p["samples_per_s"] < p["samples_per_s_high"]
            width[(with_custom, backend)] = p["samples_per_s_high"] / p["samples_per_s_low"]
            if with_custom:
                assert set(p["unprofiled"]) == {"Gate"} and 0 < p["unprofiled_share"] < 1
            else:
                assert p["unprofiled"] == {} and p["unprofiled_share"] == 0
    for backend in ("jax", "torch"):
        # the held-out kinds' errors are wider than the workloads' here: the mixed model's interval is wider, by
        # no more than the unprofiled share moves it towards theirs
        assert width[(True, backend)] > width[(False, backend)]
        lo, hi = fit["log_q"][backend]
        klo, khi = fit["kind_log_q"]
        assert width[(True, backend)] <= math.exp(max(hi, khi) - min(lo, klo)) + 1e-9


def test_the_interval_is_never_narrower_than_the_held_out_errors(fit):
    for backend in fit["log_q"]:
        lo, hi = fit["log_q"][backend]
        for share in (0.0, 0.3, 1.0):
            a, b = layers.interval(fit, backend, share)
            assert a <= lo and b >= hi


def test_the_zoo_figures_are_what_the_committed_measurements_give(fit, feats):
    """Refitted here from the committed features: the same profiles and constants, and each zoo cell's predicted
    samples/s and interval as committed, to the digit (benchmarks/predict_check.py --write wrote both)."""
    again = layer_fit.build_fit(feats["layers"], feats["models"], fit["gpu"], feats["provenance"])
    assert again["profiles"].keys() == fit["profiles"].keys()
    for k, v in fit["profiles"].items():
        assert again["profiles"][k] == pytest.approx(v, rel=1e-6, abs=1e-18)
    for b, v in fit["steps"].items():
        assert again["steps"][b] == pytest.approx(v, rel=1e-6)
    by = {(m["name"], m["backend"], m["precision"]): m for m in feats["models"] if m["set"] == "zoo"}
    assert len(fit["zoo"]) >= 12 * 2 and len({r["name"] for r in fit["zoo"]}) >= 12
    for z in fit["zoo"]:
        m = by[(z["name"], z["backend"], z["precision"])]
        p = layers.predicted(again, m["rows"], m["backend"], m["precision"], m["batch"], m["in_bytes"])
        assert f"{p['samples_per_s']:,.0f}" == f"{z['predicted_sps']:,.0f}"
        assert f"{p['samples_per_s_low']:,.0f}-{p['samples_per_s_high']:,.0f}" == \
            f"{z['low_sps']:,.0f}-{z['high_sps']:,.0f}"
        assert f"{m['batch'] / m['step_s']:,.0f}" == f"{z['measured_sps']:,.0f}"
    # the zoo is never fitted on: the per-step constants rest on the workloads alone
    assert not {r["name"] for r in fit["zoo"]} & set(fit["fitted_on"])
    assert fit["summary"]["zoo_cells"] == len(fit["zoo"])


@pytest.mark.parametrize("name", ["tiny_mlp", "conv_autoencoder", "gru_tagger"])
def test_the_committed_features_are_the_models_own(feats, keras_cpu, name):
    """A zoo model rebuilt here gives the layer features committed beside its measurement."""
    from helpers.predict import zoo

    keras_cpu.backend.clear_session()
    model = zoo.build(name)[0]
    committed = next(m for m in feats["models"] if m["set"] == "zoo" and m["name"] == name)
    assert layers.layer_rows(model, committed["batch"]) == committed["rows"]
    assert layers.input_bytes(model, committed["batch"]) == committed["in_bytes"]


def test_the_profiles_keep_their_provenance(fit):
    prov = fit["provenance"]
    assert prov["gpu"] == ["NVIDIA H200"] and prov["driver"] and prov["keras"] and prov["date"]
    assert prov["rows"]["layers jax float32"] >= 100 and prov["rows"]["models torch float32"] >= 20
    kinds = {k.split("|")[2] for k in fit["profiles"]}
    for k in ("Dense", "Conv1D", "Conv2D", "DepthwiseConv2D", "SeparableConv2D", "Conv2DTranspose",
              "BatchNormalization", "LayerNormalization", "MultiHeadAttention", "Embedding", "LSTM", "GRU",
              "SimpleRNN", "MaxPooling2D", "Activation", "Dropout", "Add", "Concatenate", "Reshape"):
        assert k in kinds, k


def test_the_step_fit_recovers_known_constants_on_both_sides_of_the_host_copy():
    """Steps made by ``max(a, h x bytes) + s x S + k x layers`` with known constants (a little noise): the fit gives
    them back, the copy-bound cells (bytes past a / h) and the loop-bound ones both among them."""
    import random

    rnd = random.Random(0)
    prof = {("jax", "float32", "Dense"): [1e-5, 1e-12, 1e-12], ("jax", "float32", "BatchNormalization"): [1e-3, 0, 0]}
    truth = [1e-3, 0.8, 1e-10, 1e-4]
    models = []
    for i in range(24):
        n = 1 + i % 6
        rows = [{"kind": "Dense", "units": 1, "flops": 1e7 * (1 + i), "bytes": 1e6 * (i % 5)}] * n
        rows += [{"kind": "BatchNormalization", "units": 1, "flops": 1e6, "bytes": 1e8}] * (i % 3)
        in_bytes = [1e5, 4e6, 3e7, 1.5e8][i % 4]
        parts = layers.step_parts(rows, prof, "jax", "float32")
        t = layers.step_time(truth, parts["sum_s"], parts["layers"], in_bytes) * math.exp(rnd.gauss(0, 0.005))
        models.append({"backend": "jax", "precision": "float32", "rows": rows, "in_bytes": in_bytes, "step_s": t})
    assert {truth[2] * m["in_bytes"] > truth[0] for m in models} == {True, False}
    got = layers.fit_steps(models, prof)["jax"]
    assert got == pytest.approx(truth, rel=0.05)


def test_a_fused_kind_costs_the_per_layer_term_and_an_unprofiled_one_its_time(fit):
    """A batch normalisation (profiled, fused by XLA) adds one layer's ``k`` whatever its size; a kind no profile
    holds adds its generic profile's time besides, and is named."""
    dense = [{"kind": "Dense", "units": 1, "flops": 3e9, "bytes": 4e6}]
    for backend, (_a, _s, _h, k) in fit["steps"].items():
        base = layers.predicted(fit, dense, backend, "float32", 128, 10**5)["step_s"] * 128
        row = {"units": 1, "flops": 1e9, "bytes": 5e8}
        bn = layers.predicted(fit, dense + [{**row, "kind": "BatchNormalization"}], backend, "float32", 128, 10**5)
        assert bn["step_s"] * 128 - base == pytest.approx(k * 128, rel=1e-9) and bn["unprofiled"] == {}
        own = layers.predicted(fit, dense + [{**row, "kind": "MyGate"}], backend, "float32", 128, 10**5)
        assert own["step_s"] * 128 - base > k * 128 and set(own["unprofiled"]) == {"MyGate"}


def test_the_host_probes_are_fitted_on_and_never_held_out(fit, feats):
    probes = {m["name"] for m in feats["models"] if m["set"] == "probe"}
    assert len(probes) >= 5 and set(fit["probes"]) == probes
    assert not probes & ({r["name"] for r in fit["held_out"]["workloads"]} | set(fit["fitted_on"]))
    # each probe measured on both backends, its batch's bytes from 6 KB to past 100 MB
    cells = [m for m in feats["models"] if m["set"] == "probe"]
    assert {m["backend"] for m in cells} == {"jax", "torch"}
    assert min(m["in_bytes"] for m in cells) < 10**4 and max(m["in_bytes"] for m in cells) > 10**8


LAYER = {"kind": "Dense", "units": 1, "flops": 1e6, "bytes": 1e5}


@pytest.mark.parametrize(("rows", "why"), [
    ([{**LAYER, "flops": -1.0}], "'model_layers[0].flops' is a number, not a finite number >= 0"),
    ([LAYER, {**LAYER, "kind": "x" * 5000}], "'model_layers[1].kind' is a string, not a non-empty string of at most"),
    ([LAYER] * 10_001, "'model_layers' has more than 10,000 layers"),
    ([{**LAYER, "bytes": 1e30}], "'model_layers[0]' holds a figure over"),
    ([[1, 2]], "'model_layers[0]' is a list, not a mapping"),
])
def test_a_records_layers_are_checked_at_read(rows, why):
    """A record's ``model_layers`` (the layer model's input, from a kernel or a file anyone may hand over) is checked
    before any figure is predicted from it: the record is refused, the bound named."""
    from support.records import _rec

    from helpers.record.check import problem

    assert problem(_rec(0, model_layers=[LAYER])) is None
    got = problem(_rec(1, model_layers=rows))
    assert got is not None and got.startswith(why), got
