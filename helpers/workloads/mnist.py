"""mlp_mnist and cnn_mnist: the Keras MNIST examples that seed 002 benchmarks (and, inferred, seed 003's).

Seed 002 (Max Woolf, 2017) runs the scripts of github.com/minimaxir/keras-cntk-benchmark,
``v2/test_files/mnist_mlp.py`` and ``v2/test_files/mnist_cnn.py`` (Keras 2 examples), on a K80 and a
P100 (TensorFlow and CNTK) and on 8/16/32/64 preemptible vCPUs, and reports training time and cost
relative to a base configuration. Both scripts train on the 60,000 MNIST images, batch 128, validating
on the 10,000 test images each epoch (seed 002's logged epochs include that validation). Seed 003 times
"an extremely simple" Keras network on MNIST: laptop CPU 1 min 52 s vs one Tesla P100 8.43 s, with
utilisation *peaks* of 100% (CPU) and 26% (GPU); it shows neither the network nor epochs nor batch size,
so taking mlp_mnist for it is inferred, not stated.

    mnist_mlp.py: Dense(512, relu, input 784), Dropout(0.2), Dense(512, relu), Dropout(0.2),
                  Dense(10, softmax); RMSprop(); categorical crossentropy; batch 128; 20 epochs.
    mnist_cnn.py: Conv2D(32, 3x3, relu), Conv2D(64, 3x3, relu), MaxPooling2D(2x2), Dropout(0.25),
                  Flatten, Dense(128, relu), Dropout(0.5), Dense(10, softmax); Adadelta();
                  categorical crossentropy; batch 128; 12 epochs.
"""

from __future__ import annotations

from helpers import params as _params
from helpers.data import image_sets as _img

from .registry import Workload, register

SOURCE = "002_51261036f2f3f066.txt"

# mlp_mnist's learning rate: the source's RMSprop() 0.001 by default; another value trains another model at the same
# cost a step (a knob of what is learned: ``params.LEARNING_KNOBS``), e.g. 0 or 1e3 to see the report's learning
# check name a configuration that did not learn (docs/report.md)
LEARNING_RATE = _params.Param("learning_rate", (int, float), "RMSprop's learning rate (the source's: 0.001)",
                              minimum=0, maximum=1e6, default=_params.LATER_DEFAULTS["learning_rate"],
                              note="RMSprop's learning rate (the source: 0.001)")


def _mlp_mnist(params: dict):
    """mnist_mlp.py layer for layer: 669,706 parameters."""
    import keras
    from keras import layers

    return keras.Sequential(
        [
            _img.model_input(params, (784,)),
            *_img.input_layers(params),  # uint8 inputs: Rescaling(1/255) first, no parameters
            layers.Dense(512, activation="relu", name="dense1"),
            layers.Dropout(0.2, name="dropout1"),
            layers.Dense(512, activation="relu", name="dense2"),
            layers.Dropout(0.2, name="dropout2"),
            layers.Dense(10, name="logits"),
            layers.Activation("softmax", dtype="float32", name="softmax"),  # float32 under mixed precision
        ],
        name="mlp_mnist",
    )


def _mlp_compile(params: dict) -> dict:
    import keras

    # Keras 2's RMSprop(): lr 0.001, rho 0.9 (epsilon 1e-8 in Keras 2.0, K.epsilon() = 1e-7 from 2.1;
    # Keras 3's default is 1e-7); the learning rate a knob (``LEARNING_RATE``), the source's 0.001 by default.
    # One-hot labels + categorical crossentropy == integer labels + sparse.
    return {"optimizer": keras.optimizers.RMSprop(learning_rate=float(params["learning_rate"]), rho=0.9, epsilon=1e-7),
            "loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"]}


def _cnn_mnist(params: dict):
    """mnist_cnn.py layer for layer ('valid' convolutions): 1,199,882 parameters."""
    import keras
    from keras import layers

    return keras.Sequential(
        [
            _img.model_input(params, _img.MNIST_SHAPE),
            *_img.input_layers(params),  # uint8 inputs: Rescaling(1/255) first, no parameters
            layers.Conv2D(32, 3, activation="relu", name="conv1"),  # 26 x 26 x 32
            layers.Conv2D(64, 3, activation="relu", name="conv2"),  # 24 x 24 x 64
            layers.MaxPooling2D(2, name="pool"),  # 12 x 12 x 64
            layers.Dropout(0.25, name="dropout1"),
            layers.Flatten(name="flatten"),  # 9216
            layers.Dense(128, activation="relu", name="dense1"),
            layers.Dropout(0.5, name="dropout2"),
            layers.Dense(10, name="logits"),
            layers.Activation("softmax", dtype="float32", name="softmax"),
        ],
        name="cnn_mnist",
    )


def _cnn_compile(params: dict) -> dict:
    import keras

    # Keras 2's Adadelta(): lr 1.0, rho 0.95. Keras 3's default learning rate is 0.001 (it would barely
    # train): the source's 1.0 is given explicitly.
    return {"optimizer": keras.optimizers.Adadelta(learning_rate=1.0, rho=0.95, epsilon=1e-7),
            "loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"]}


def _mnist_loader(flat: bool):
    def load(params: dict):
        return _img.as_input(_img.load_mnist(params.get("n_train"), params["n_val"],
                                             params["data_source"], params["seed"], flat=flat,
                                             dtype=_img.input_dtype(params)), params)

    return load


register(Workload(
    name="mlp_mnist",
    notes={
        "batch_size": "images per step (the source: 128)",
        "epochs": "(the source: 20)",
        "n_train": "training images (None: all 60,000, as in the source)",
        "n_val": "validation images evaluated each epoch (the source: the 10,000 test images)",
        "data_source": "auto: real MNIST if cached or reachable, else synthetic; or real / synthetic",
    },
    source=SOURCE,
    summary="Keras' mnist_mlp.py (Dense 512-512-10, Dropout 0.2, RMSprop, batch 128, 20 epochs on 60,000 "
            "images): K80/P100 GPUs vs 8-64 preemptible vCPUs, time and cost relative to a K80 + "
            "TensorFlow base; CPUs close to the GPU and cheaper. Seed 003: a simple Keras MNIST network, "
            "laptop CPU 1 min 52 s vs Tesla P100 8.43 s",
    defaults={"batch_size": 128, "epochs": 3, "n_train": 10000, "n_val": 0, "input_dtype": "float32",
              "learning_rate": LEARNING_RATE.default},
    build=_mlp_mnist,
    compile_args=_mlp_compile,
    load=_mnist_loader(flat=True),
    expected_params=669706,
    extra_params={"input_dtype": _img.INPUT_DTYPE, "learning_rate": LEARNING_RATE},
))

register(Workload(
    name="cnn_mnist",
    notes={
        "batch_size": "images per step (the source: 128)",
        "epochs": "(the source: 12)",
        "n_train": "training images (None: all 60,000, as in the source)",
        "n_val": "validation images evaluated each epoch (the source: the 10,000 test images)",
        "data_source": "auto: real MNIST if cached or reachable, else synthetic; or real / synthetic",
    },
    source=SOURCE,
    summary="Keras' mnist_cnn.py (Conv 32-64, MaxPool, Dense 128, Adadelta, batch 128, 12 epochs on 60,000 "
            "images): the P100 twice as fast as the K80, GPUs more than twice as fast as any CPU "
            "configuration; the K80 base the most cost-effective",
    defaults={"batch_size": 128, "epochs": 3, "n_train": 2000, "n_val": 0, "input_dtype": "float32"},
    build=_cnn_mnist,
    compile_args=_cnn_compile,
    load=_mnist_loader(flat=False),
    expected_params=1199882,
    extra_params={"input_dtype": _img.INPUT_DTYPE},
))
