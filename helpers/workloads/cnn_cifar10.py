"""cnn_cifar10: seed 000's small CNN on CIFAR-10 (Flux.jl: GTX 1080 vs i7-7500U)."""

from __future__ import annotations

from helpers.data import image_sets as _img
from helpers.data import loaders as _data

from .registry import Workload, register


def _cnn_cifar10(params: dict):
    """Seed 000's Flux network, layer for layer (39,558 parameters).

    Chain(Conv((5,5), 3=>16, relu), MaxPool((2,2)), Conv((5,5), 16=>8, relu), MaxPool((2,2)),
    flatten, Dense(200, 120), Dense(120, 84), Dense(84, 10), softmax): the Dense layers have no
    activation (Flux's default is identity), 'valid' convolutions.
    """
    import keras
    from keras import layers

    return keras.Sequential(
        [
            _img.model_input(params, (32, 32, 3)),
            *_img.input_layers(params),  # uint8 inputs: Rescaling(1/255) first, no parameters
            layers.Conv2D(16, 5, activation="relu", name="conv1"),
            layers.MaxPooling2D(2, name="pool1"),
            layers.Conv2D(8, 5, activation="relu", name="conv2"),
            layers.MaxPooling2D(2, name="pool2"),
            layers.Flatten(name="flatten"),  # 5 x 5 x 8 = 200
            layers.Dense(120, name="dense1"),
            layers.Dense(84, name="dense2"),
            layers.Dense(10, name="logits"),
            layers.Activation("softmax", dtype="float32", name="softmax"),  # float32 under mixed precision
        ],
        name="cnn_cifar10",
    )


def _cnn_cifar10_compile(params: dict) -> dict:
    import keras

    # Flux's Momentum(0.01): learning rate 0.01, momentum 0.9; crossentropy on one-hot labels.
    return {"optimizer": keras.optimizers.SGD(learning_rate=0.01, momentum=0.9),
            "loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"]}


def _cifar10_loader(params: dict) -> _data.Dataset:
    return _img.as_input(_data.load_cifar10(params.get("n_train"), params["n_val"],
                                            params["data_source"], params["seed"],
                                            dtype=_img.input_dtype(params)), params)


register(Workload(
    name="cnn_cifar10",
    notes={
        "batch_size": "images per step (the source: 1000)",
        "n_train": "training images (None: all 50,000, as in the source)",
        "n_val": "validation images evaluated each epoch (0: none, as in the source)",
        "data_source": "auto: real CIFAR-10 if cached or reachable, else synthetic; or real / synthetic",
    },
    source="000_5189e7207d77ed5a.txt",
    summary="Flux.jl's small CNN on CIFAR-10, batches of 1000, Momentum(0.01): "
            "GTX 1080 0.83 s/epoch vs i7-7500U 82.5 s/epoch (50,000 images)",
    defaults={"batch_size": 1000, "epochs": 3, "n_train": 5000, "n_val": 0, "input_dtype": "float32"},
    build=_cnn_cifar10,
    compile_args=_cnn_cifar10_compile,
    load=_cifar10_loader,
    expected_params=39558,
    extra_params={"input_dtype": _img.INPUT_DTYPE},
))
