"""The validation zoo: models of layer kinds the ten workloads lack, kept to check the GPU step model and never
fitted on (``benchmarks/predict_check.py`` prints its table apart). Each entry builds an uncompiled Keras model
(Keras imported inside) and names the loss, optimiser and batch it is timed with.

    for name in ZOO: model, loss, optimizer, batch = build(name)

Sizes are small (32-96 pixel images, a few hundred thousand to a few million parameters): the models a user
trying the suite on a laptop brings, each timed in under a minute on a GPU.
"""

from __future__ import annotations

BATCH = 128


SPARSE = "sparse_categorical_crossentropy"


def _mobilenet_v2():
    import keras

    return keras.applications.MobileNetV2(input_shape=(96, 96, 3), weights=None, classes=10), SPARSE


def _efficientnet_b0():
    import keras

    return keras.applications.EfficientNetB0(input_shape=(64, 64, 3), weights=None, classes=10), SPARSE


def _densenet121():
    import keras

    return keras.applications.DenseNet121(input_shape=(32, 32, 3), weights=None, classes=10), SPARSE


def _transformer():
    import keras
    from keras import layers

    inp = keras.Input((128,), dtype="int32")
    x = layers.Embedding(20000, 128)(inp)
    for _ in range(2):
        a = layers.MultiHeadAttention(num_heads=4, key_dim=32)(x, x)
        x = layers.LayerNormalization()(layers.Add()([x, layers.Dropout(0.1)(a)]))
        f = layers.Dense(128)(layers.Dense(256, activation="gelu")(x))
        x = layers.LayerNormalization()(layers.Add()([x, layers.Dropout(0.1)(f)]))
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, layers.Dense(2, activation="softmax")(x)), "sparse_categorical_crossentropy"


def _gru_tagger():
    import keras
    from keras import layers

    inp = keras.Input((100,), dtype="int32")
    x = layers.GRU(128, return_sequences=True)(layers.Embedding(10000, 64)(inp))
    return keras.Model(inp, layers.Dense(20, activation="softmax")(x)), "sparse_categorical_crossentropy"


def _bigru():
    import keras
    from keras import layers

    inp = keras.Input((80,), dtype="int32")
    x = layers.Bidirectional(layers.GRU(64))(layers.Embedding(20000, 64)(inp))
    return keras.Model(inp, layers.Dense(1, activation="sigmoid")(x)), "binary_crossentropy"


def _conv_autoencoder():
    import keras
    from keras import layers

    inp = keras.Input((28, 28, 1))
    x = layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")(inp)
    x = layers.Conv2D(64, 3, strides=2, padding="same", activation="relu")(x)
    x = layers.Conv2DTranspose(64, 3, strides=2, padding="same", activation="relu")(x)
    x = layers.Conv2DTranspose(32, 3, strides=2, padding="same", activation="relu")(x)
    return keras.Model(inp, layers.Conv2D(1, 3, padding="same", activation="sigmoid")(x)), "mse"


def _conv1d():
    import keras
    from keras import layers

    inp = keras.Input((256, 12))
    x = layers.Conv1D(64, 7, padding="same", activation="relu")(inp)
    x = layers.MaxPooling1D(2)(layers.BatchNormalization()(x))
    x = layers.Conv1D(128, 5, padding="same", activation="relu")(x)
    x = layers.MaxPooling1D(2)(x)
    x = layers.Conv1D(128, 3, padding="same", activation="relu")(x)
    x = layers.GlobalMaxPooling1D()(x)
    return keras.Model(inp, layers.Dense(6, activation="softmax")(x)), "sparse_categorical_crossentropy"


def _separable():
    import keras
    from keras import layers

    inp = keras.Input((32, 32, 3))
    x = layers.Conv2D(32, 3, padding="same", activation="relu")(inp)
    for f in (64, 128, 256):
        x = layers.SeparableConv2D(f, 3, padding="same", activation="relu")(x)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(2)(x)
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, layers.Dense(10, activation="softmax")(x)), "sparse_categorical_crossentropy"


def _wide_mlp():
    import keras
    from keras import layers

    inp = keras.Input((1024,))
    x = inp
    for _ in range(3):
        x = layers.Dropout(0.1)(layers.Dense(4096, activation="relu")(x))
    return keras.Model(inp, layers.Dense(100, activation="softmax")(x)), "sparse_categorical_crossentropy"


def _tiny_mlp():
    import keras
    from keras import layers

    inp = keras.Input((16,))
    return keras.Model(inp, layers.Dense(1)(layers.Dense(32, activation="relu")(inp))), "mse"


def _simple_rnn():
    import keras
    from keras import layers

    inp = keras.Input((50, 32))
    x = layers.SimpleRNN(64)(inp)
    return keras.Model(inp, layers.Dense(5, activation="softmax")(x)), "sparse_categorical_crossentropy"


def _convnext_block():
    import keras
    from keras import layers

    inp = keras.Input((32, 32, 3))
    x = layers.Conv2D(96, 4, strides=4)(inp)
    for _ in range(3):
        y = layers.DepthwiseConv2D(7, padding="same")(x)
        y = layers.LayerNormalization(epsilon=1e-6)(y)
        y = layers.Dense(384, activation="gelu")(y)
        x = layers.Add()([x, layers.Dense(96)(y)])
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, layers.Dense(10, activation="softmax")(x)), "sparse_categorical_crossentropy"


def _unet():
    import keras
    from keras import layers

    inp = keras.Input((64, 64, 3))
    c1 = layers.Conv2D(32, 3, padding="same", activation="relu")(inp)
    c2 = layers.Conv2D(64, 3, padding="same", activation="relu")(layers.MaxPooling2D(2)(c1))
    c3 = layers.Conv2D(128, 3, padding="same", activation="relu")(layers.MaxPooling2D(2)(c2))
    u2 = layers.Concatenate()([layers.UpSampling2D(2)(c3), c2])
    u2 = layers.Conv2D(64, 3, padding="same", activation="relu")(u2)
    u1 = layers.Concatenate()([layers.UpSampling2D(2)(u2), c1])
    u1 = layers.Conv2D(32, 3, padding="same", activation="relu")(u1)
    return keras.Model(inp, layers.Conv2D(1, 1, activation="sigmoid")(u1)), "binary_crossentropy"


ZOO = {"mobilenet_v2": _mobilenet_v2, "efficientnet_b0": _efficientnet_b0, "densenet121": _densenet121,
       "transformer": _transformer, "gru_tagger": _gru_tagger, "bigru": _bigru, "conv_autoencoder": _conv_autoencoder,
       "conv1d": _conv1d, "separable": _separable, "wide_mlp": _wide_mlp, "tiny_mlp": _tiny_mlp,
       "simple_rnn": _simple_rnn, "convnext_block": _convnext_block, "unet": _unet}



# ------------------------------------------------------------------ the fresh set
# Models a user brings, kept for an out-of-sample check of the step model after its formula was fixed: none entered a
# fit (``helpers.predict.layer_fit`` reads the workloads and the host probes alone) nor the choice of the formula.
# Their predictions (``benchmarks/fresh_predict.py``) were committed before they were measured
# (``data/layer_profiles/h200_fresh_predictions.json``, then ``h200_fresh.jsonl``). Each at two batch sizes.


def _mobilenet_v3_small():
    import keras

    return keras.applications.MobileNetV3Small(input_shape=(64, 64, 3), weights=None, classes=10), SPARSE


def _resnet50_v2():
    import keras

    return keras.applications.ResNet50V2(input_shape=(32, 32, 3), weights=None, classes=10), SPARSE


def _gru_text():
    import keras
    from keras import layers

    inp = keras.Input((60,), dtype="int32")
    x = layers.GRU(48)(layers.Embedding(8000, 32)(inp))
    x = layers.Dropout(0.2)(layers.Dense(32, activation="relu")(x))
    return keras.Model(inp, layers.Dense(1, activation="sigmoid")(x)), "binary_crossentropy"


def _conv1d_audio():
    import keras
    from keras import layers

    inp = keras.Input((4000, 1))  # a quarter second of 16 kHz audio
    x = inp
    for f, k, s in ((16, 9, 4), (32, 9, 2), (64, 5, 2), (64, 3, 1)):
        x = layers.Conv1D(f, k, strides=s, padding="same")(x)
        x = layers.Activation("relu")(layers.BatchNormalization()(x))
        x = layers.MaxPooling1D(2)(x)
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, layers.Dense(12, activation="softmax")(x)), SPARSE


def _encoder_wide():
    import keras
    from keras import layers

    inp = keras.Input((64,), dtype="int32")
    x = layers.Embedding(8000, 256)(inp)
    for _ in range(4):
        a = layers.MultiHeadAttention(num_heads=8, key_dim=32)(x, x)
        x = layers.LayerNormalization()(layers.Add()([x, a]))
        f = layers.Dense(256)(layers.Dense(512, activation="relu")(x))
        x = layers.LayerNormalization()(layers.Add()([x, layers.Dropout(0.1)(f)]))
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, layers.Dense(5, activation="softmax")(x)), SPARSE


def _unet_transpose():
    import keras
    from keras import layers

    def block(x, f):
        x = layers.Conv2D(f, 3, padding="same")(x)
        return layers.Activation("relu")(layers.BatchNormalization()(x))

    inp = keras.Input((48, 48, 3))
    c1 = block(inp, 16)
    c2 = block(layers.MaxPooling2D(2)(c1), 32)
    c3 = block(layers.MaxPooling2D(2)(c2), 64)
    u2 = block(layers.Concatenate()([layers.Conv2DTranspose(32, 2, strides=2)(c3), c2]), 32)
    u1 = block(layers.Concatenate()([layers.Conv2DTranspose(16, 2, strides=2)(u2), c1]), 16)
    return keras.Model(inp, layers.Conv2D(4, 1, activation="softmax")(u1)), SPARSE


def _mlp_mixer():
    import keras
    from keras import layers

    inp = keras.Input((32, 32, 3))
    x = layers.Reshape((64, 96))(layers.Conv2D(96, 4, strides=4)(inp))  # 64 patches of 4x4, 96 channels
    for _ in range(4):
        y = layers.Permute((2, 1))(layers.LayerNormalization()(x))
        y = layers.Dense(64)(layers.Dense(128, activation="gelu")(y))  # token mixing
        x = layers.Add()([x, layers.Permute((2, 1))(y)])
        y = layers.Dense(96)(layers.Dense(192, activation="gelu")(layers.LayerNormalization()(x)))  # channel mixing
        x = layers.Add()([x, y])
    x = layers.GlobalAveragePooling1D()(layers.LayerNormalization()(x))
    return keras.Model(inp, layers.Dense(10, activation="softmax")(x)), SPARSE


# name: (builder, the two batch sizes)
FRESH = {"mobilenet_v3_small": (_mobilenet_v3_small, (64, 256)), "resnet50_v2": (_resnet50_v2, (32, 128)),
         "gru_text": (_gru_text, (64, 256)), "conv1d_audio": (_conv1d_audio, (32, 128)),
         "encoder_wide": (_encoder_wide, (32, 128)), "unet_transpose": (_unet_transpose, (16, 64)),
         "mlp_mixer": (_mlp_mixer, (64, 256))}


def build_fresh(name: str):
    """(uncompiled model, loss, optimizer, the two batch sizes) of the fresh set's ``name``."""
    builder, batches = FRESH[name]
    model, loss = builder()
    return model, loss, "adam", batches


def build(name: str):
    """(uncompiled model, loss, optimizer, batch) of the zoo's ``name``."""
    model, loss = ZOO[name]()
    return model, loss, "adam", BATCH


# the host probes: a model of almost no compute fed batches of growing size, timed as the workloads are (``fit`` on
# numpy arrays): what a step costs the backend's fit loop, and each byte of a batch copied from the host. Fitted
# beside the workloads, never held out (no workload's measurement in them); shape (H, W, C) or (features,), batch
PROBES = (((16,), 128), ((32, 32, 3), 128), ((32, 32, 3), 1000), ((32, 32, 3), 4000), ((32, 32, 3), 8000),
          ((224, 224, 3), 64), ((224, 224, 3), 256))


def probe_name(shape, batch: int) -> str:
    return f"probe_{'x'.join(str(int(d)) for d in shape)}_b{int(batch)}"


def probe(shape) -> tuple:
    """(uncompiled model, loss) of the host probe of input ``shape``: the input averaged, one Dense unit."""
    import keras
    from keras import layers

    inp = keras.Input(tuple(int(d) for d in shape))
    x = layers.GlobalAveragePooling2D()(inp) if len(shape) == 3 else inp
    return keras.Model(inp, layers.Dense(1)(x)), "mse"
