"""The layer profiles' sweep: each layer kind Keras users build with, over shapes and batch sizes, as one-layer
models that ``benchmarks/layer_profile.py`` times on a GPU (a training step: forward, backward and Adam's update)
and ``helpers.predict.layers`` reads back to fit each kind's profile.

A profiled model is ``Input -> Scale -> layer``: ``Scale`` multiplies its input by one trainable scalar, so that the
layer's input gradient is computed as in a network (the layer is never the first to train); token-id inputs go to
the layer directly (an ``Embedding`` is a network's first layer). The baseline, timed beside each model and taken
off, is ``Input -> Scale``: what is left is the layer's own training step.

    specs = SWEEP                           # one dict per shape: kind, args, input, dtype, batches
    model = build(spec)                     # the one-layer model (Keras imported inside)
    base = build(spec, baseline=True)
    key(spec, batch)                        # "Conv2D|filters=64,kernel_size=3,padding=same|32x32x64|b256"
"""

from __future__ import annotations

BATCHES = (32, 256)


def _s(kind, args, shape, batches=BATCHES, dtype="float32", vocab=0):
    return {"kind": kind, "args": args, "input": list(shape), "batches": list(batches), "dtype": dtype,
            "vocab": vocab}


def _sweep() -> list[dict]:
    out = []
    for d, u in ((64, 64), (512, 512), (784, 128), (2048, 2048), (1024, 4096), (4096, 1024)):
        out.append(_s("Dense", {"units": u, "activation": "relu"}, (d,)))
    out.append(_s("Dense", {"units": 256}, (128, 256)))
    out.append(_s("Dense", {"units": 1024, "activation": "gelu"}, (64, 256)))
    for shp, f, k in (((32, 32, 3), 32, 3), ((32, 32, 64), 64, 3), ((16, 16, 128), 128, 3), ((56, 56, 64), 64, 3),
                      ((8, 8, 256), 256, 3), ((28, 28, 32), 64, 5), ((56, 56, 64), 256, 1)):
        out.append(_s("Conv2D", {"filters": f, "kernel_size": k, "padding": "same", "activation": "relu"}, shp))
    out.append(_s("Conv2D", {"filters": 64, "kernel_size": 3, "strides": 2, "padding": "same"}, (64, 64, 32)))
    for shp, f, k in (((128, 64), 64, 3), ((400, 128), 128, 5), ((64, 256), 256, 3), ((1000, 16), 32, 7)):
        out.append(_s("Conv1D", {"filters": f, "kernel_size": k, "padding": "same", "activation": "relu"}, shp))
    for shp, k, st in (((32, 32, 32), 3, 1), ((56, 56, 64), 3, 1), ((16, 16, 256), 3, 1), ((112, 112, 32), 3, 2),
                       ((32, 32, 96), 7, 1)):
        out.append(_s("DepthwiseConv2D", {"kernel_size": k, "strides": st, "padding": "same"}, shp))
    for shp, f in (((32, 32, 32), 64), ((16, 16, 128), 128), ((56, 56, 64), 64), ((8, 8, 256), 512)):
        out.append(_s("SeparableConv2D", {"filters": f, "kernel_size": 3, "padding": "same"}, shp))
    for shp, f, k in (((8, 8, 64), 32, 3), ((16, 16, 32), 16, 3), ((32, 32, 64), 32, 4), ((7, 7, 128), 64, 3)):
        out.append(_s("Conv2DTranspose", {"filters": f, "kernel_size": k, "strides": 2, "padding": "same"}, shp))
    for shp in ((32, 32, 64), (8, 8, 256), (512,), (56, 56, 64)):
        out.append(_s("BatchNormalization", {}, shp))
    for shp in ((128, 256), (64, 512), (512,), (32, 32, 96)):
        out.append(_s("LayerNormalization", {}, shp))
    for t, d, h in ((32, 64, 2), (64, 128, 4), (128, 256, 8), (256, 256, 8), (128, 512, 8)):
        out.append(_s("MultiHeadAttention", {"num_heads": h, "key_dim": d // h}, (t, d)))
    for t, v, d in ((100, 20000, 64), (400, 5000, 128), (200, 100000, 32), (50, 1000, 256)):
        out.append(_s("Embedding", {"input_dim": v, "output_dim": d}, (t,), dtype="int32", vocab=v))
    for kind in ("LSTM", "GRU", "SimpleRNN"):
        for t, d, u in ((50, 32, 64), (100, 64, 128), (20, 128, 256), (200, 16, 32)):
            out.append(_s(kind, {"units": u}, (t, d)))
        out.append(_s(kind, {"units": 128, "return_sequences": True}, (100, 64)))
    for shp in ((32, 32, 64), (56, 56, 64), (16, 16, 128)):
        out.append(_s("MaxPooling2D", {"pool_size": 2}, shp))
    out.append(_s("AveragePooling2D", {"pool_size": 2}, (32, 32, 64)))
    out.append(_s("MaxPooling1D", {"pool_size": 2}, (128, 64)))
    for shp in ((8, 8, 512), (32, 32, 64)):
        out.append(_s("GlobalAveragePooling2D", {}, shp))
    out.append(_s("GlobalMaxPooling1D", {}, (128, 128)))
    out.append(_s("GlobalAveragePooling1D", {}, (128, 256)))
    for act in ("relu", "gelu", "sigmoid", "tanh", "swish", "softmax"):
        for shp in ((4096,), (32, 32, 64)):
            out.append(_s("Activation", {"activation": act}, shp))
    for shp in ((4096,), (32, 32, 64), (128, 256)):
        out.append(_s("Dropout", {"rate": 0.2}, shp))
    for shp in ((32, 32, 64), (128, 256)):
        out.append(_s("Add", {}, shp))
        out.append(_s("Concatenate", {}, shp))
        out.append(_s("Multiply", {}, shp))
    out.append(_s("Reshape", {"target_shape": (1024, 64)}, (32, 32, 64)))
    out.append(_s("Flatten", {}, (8, 8, 256)))
    out.append(_s("UpSampling2D", {"size": 2}, (16, 16, 64)))
    out.append(_s("ZeroPadding2D", {"padding": 1}, (32, 32, 64)))
    return out


SWEEP = _sweep()
MERGES = ("Add", "Concatenate", "Multiply", "Subtract", "Average", "Maximum", "Minimum")


def key(spec: dict, batch: int) -> str:
    args = ",".join(f"{k}={v}" for k, v in sorted(spec["args"].items()))
    return f"{spec['kind']}|{args}|{'x'.join(map(str, spec['input']))}|b{int(batch)}"


def scale_layer():
    """The ``Scale`` layer class (one trainable scalar times the input), made once Keras is imported."""
    import keras

    global _SCALE
    if _SCALE is None:
        @keras.saving.register_keras_serializable(package="cgb")
        class Scale(keras.layers.Layer):
            def build(self, input_shape):
                self.w = self.add_weight(shape=(), initializer="ones", name="w")

            def call(self, x):
                return x * keras.ops.cast(self.w, x.dtype)

        _SCALE = Scale
    return _SCALE


_SCALE = None


def build(spec: dict, baseline: bool = False):
    """The one-layer model of ``spec`` (module docstring), or its baseline."""
    import keras

    inp = keras.Input(tuple(spec["input"]), dtype=spec["dtype"])
    x = inp if spec["dtype"].startswith("int") else scale_layer()()(inp)
    if baseline:
        if x is inp:  # token ids: the baseline embeds nothing; cast to floats, then scaled (a weight to train)
            return keras.Model(inp, scale_layer()()(keras.ops.cast(inp, "float32")))
        return keras.Model(inp, x)
    layer = getattr(keras.layers, spec["kind"])(**spec["args"])
    if spec["kind"] == "MultiHeadAttention":
        out = layer(x, x)
    elif spec["kind"] in MERGES:
        out = layer([x, scale_layer()()(x)])
    else:
        out = layer(x)
    return keras.Model(inp, out)
