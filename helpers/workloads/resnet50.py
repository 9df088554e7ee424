"""resnet50: keras.applications.ResNet50 trained from scratch on synthetic ImageNet-shaped data.

No seed document trains it: it is the modern anchor the seeds point to (seed 002 names deep CNNs like
Inception as the next benchmark; seed 004 deepens its network to 30+ conv layers until the GPU is
saturated). Published anchor: about 2,790 images/s training ResNet-50 on one H100 SXM with PyTorch
and automatic mixed precision (compare with ``precision='mixed_bfloat16'`` or ``'mixed_float16'``).

Model: ``ResNet50(weights=None, input_shape=(224, 224, 3), classes=1000)``, 25,636,712 parameters
(the count does not depend on ``image_size``: global average pooling before the classifier).
Optimiser: SGD, momentum 0.9, learning rate 0.1 (the standard ImageNet recipe), batch 64.
Data: ImageNet has no Keras loader, so the data is always synthetic (``data_source='real'`` is an
error); ``image_size`` (default 224) shrinks the images for smoke tests on a CPU.
"""

from __future__ import annotations

from helpers.data import image_sets as _img
from helpers.data import loaders as _data

from ..params import Param
from .registry import Workload, register

CLASSES = 1000


def _resnet50(params: dict):
    import keras

    size = params["image_size"]
    if _img.input_dtype(params) == "uint8":  # uint8 inputs: Rescaling(1/255) first, then the same network
        x = _img.model_input(params, (size, size, 3))
        for layer in _img.input_layers(params):
            x = layer(x)
        return keras.applications.ResNet50(weights=None, input_tensor=x, classes=CLASSES,
                                           classifier_activation="softmax", name="resnet50")
    return keras.applications.ResNet50(weights=None, input_shape=(size, size, 3), classes=CLASSES,
                                       classifier_activation="softmax", name="resnet50")


def _resnet50_compile(params: dict) -> dict:
    import keras

    return {"optimizer": keras.optimizers.SGD(learning_rate=0.1, momentum=0.9),
            "loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"]}


def _resnet50_loader(params: dict) -> _data.Dataset:
    ds = _img.load_imagenet_shaped(params.get("n_train"), params["n_val"],
                                   params["data_source"], params["seed"],
                                   image_size=params["image_size"], n_classes=CLASSES,
                                   dtype=_img.input_dtype(params))
    return _img.as_input(ds, params)


register(Workload(
    name="resnet50",
    notes={
        "batch_size": "images per step (the anchor: 64)",
        "n_train": "training images per epoch (synthetic; 0.6 MB each at 224 x 224)",
        "n_val": "validation images evaluated each epoch (0: none)",
        "image_size": "image height and width in pixels (the anchor: 224; smaller for smoke tests, at least 32)",
        "data_source": "auto or synthetic: ImageNet is never downloaded (real is an error)",
    },
    source="none: published anchor (no seed trains ResNet-50)",
    summary="ResNet-50 from scratch, 1000 classes, 224 x 224, SGD momentum 0.9, batch 64; published "
            "anchor about 2,790 images/s on one H100 SXM with PyTorch AMP",
    defaults={"batch_size": 64, "epochs": 2, "n_train": 64, "n_val": 0, "image_size": 224, "input_dtype": "float32"},
    build=_resnet50,
    compile_args=_resnet50_compile,
    load=_resnet50_loader,
    expected_params=25636712,
    extra_params={"image_size": Param("image_size", int, "image height and width in pixels (the source: "
                                      "224; smaller for smoke tests; ResNet50 needs >= 32)", minimum=32),
                  "input_dtype": _img.INPUT_DTYPE},
))
