"""custom under a mixed precision: a real float32 transformer rebuilt under the point's policy (issue 74, item 10).

A functional model with MultiHeadAttention and residuals written ``x + a`` (each a ``keras.src.ops.numpy.Add``
operation, no layer) could not run under ``precision: mixed_bfloat16``: ``keras.models.clone_model`` handed
``dtype`` to the ``+`` operation's node ("Operation.__init__() got an unexpected keyword argument 'dtype'") and the
point was refused. Now the model is built again from its own config with the layers' float policies dropped, under
the global policy, its output layer float32, and the saved weights copied in (``custom._rebuild``)."""

from __future__ import annotations

import json
import textwrap

import pytest
from support import ONE, in_fresh_python

pytestmark = pytest.mark.xdist_group("custom")


def test_a_functional_transformer_with_residual_adds_trains_under_mixed_bfloat16(tmp_path):
    code = textwrap.dedent(f"""
        import json, os
        import numpy as np
        import keras
        from keras import layers
        from helpers.workloads import build_model, get

        path = {str(tmp_path / "transformer.keras")!r}
        x = inp = keras.Input((16,), dtype="int32")
        h = layers.Embedding(50, 32)(x)
        a = layers.MultiHeadAttention(num_heads=2, key_dim=16, name="attention")(h, h)
        h = h + a  # an operation of the graph, no layer
        h = layers.LayerNormalization()(h)
        f = layers.Dense(32, activation="relu", name="ffn")(h)
        h = h + f
        out = layers.Dense(3, activation="softmax", name="head")(layers.GlobalAveragePooling1D()(h))
        saved = keras.Model(inp, out)
        saved.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
        saved.save(path)
        res = {{"ops": sorted({{type(op).__name__ for op in saved.operations if not isinstance(op, layers.Layer)}})}}

        keras.mixed_precision.set_global_policy("mixed_bfloat16")
        params = dict(data_source="auto", data_path="", loss="", optimizer="", learning_rate=None, import_modules="",
                      n_train=64, n_val=0, seed=0, jit_compile="auto", model_path=path)
        m = build_model("custom", params)
        inner = [la for la in m._flatten_layers(include_self=False) if not isinstance(la, layers.InputLayer)]
        res["policies"] = {{la.name: la.dtype_policy.name for la in inner}}
        res["compute"] = {{la.name: la.compute_dtype for la in inner}}
        res["variables"] = sorted({{v.dtype for v in m.weights}})
        res["same_weights"] = len(m.get_weights()) == len(saved.get_weights()) and all(
            np.array_equal(a, b) for a, b in zip(m.get_weights(), saved.get_weights()))
        probe = keras.Model(m.inputs, [m.get_layer("attention").output, m.get_layer("ffn").output, m.outputs[0]])
        xs = np.random.default_rng(0).integers(0, 50, (8, 16)).astype("int32")
        res["outputs"] = [str(t.dtype) for t in probe.predict(xs, verbose=0)]
        before = [np.array(w) for w in m.get_weights()]
        loss = m.train_on_batch(xs, np.arange(8) % 3)
        res["loss"] = float(np.asarray(loss if np.ndim(loss) == 0 else np.ravel(loss)[0]))
        res["moved"] = sum(not np.array_equal(a, b) for a, b in zip(before, m.get_weights()))
        info = get("custom").describe(m, params)
        res["info"] = {{k: info[k] for k in ("rebuilt", "rebuilt_because", "float32_layers", "weights", "precision")}}
        print("JSON" + json.dumps(res))
        """)
    res = json.loads(in_fresh_python(code, ONE).split("JSON", 1)[1])
    assert res["ops"] == ["Add"], res["ops"]  # the residuals are operations: what clone_model failed on
    head = res["policies"].pop("head")
    assert head == "float32" and res["compute"].pop("head") == "float32"  # the output layer stays float32
    assert "attention" in res["policies"] and "ffn" in res["policies"] and len(res["policies"]) >= 6, res["policies"]
    assert set(res["policies"].values()) == {"mixed_bfloat16"}, res["policies"]  # attention's own Dense layers too
    assert set(res["compute"].values()) == {"bfloat16"}, res["compute"]
    assert res["variables"] == ["float32"] and res["same_weights"] is True  # the saved weights, float32 variables
    assert res["outputs"] == ["bfloat16", "bfloat16", "float32"], res["outputs"]
    assert res["loss"] == res["loss"] and 0 < res["loss"] < 20 and res["moved"] > 0, res  # a step trained
    assert res["info"] == {"rebuilt": True, "rebuilt_because": ["float32"], "float32_layers": ["head"],
                           "weights": "saved", "precision": "mixed_bfloat16"}, res["info"]
