"""vgg_cifar10: seed 002's "deep convnet + multilayer perceptron" on CIFAR-10 (Keras' cifar10_cnn.py).

Seed 002 runs ``v2/test_files/cifar10_cnn.py`` of github.com/minimaxir/keras-cntk-benchmark: four 3x3
convolutions (32, 32, 64, 64; the first of each pair 'same', the second 'valid'), two max-pools,
Dropout 0.25/0.25/0.5, Dense(512), Dense(10, softmax), "similar to VGG-16"; RMSprop(lr=1e-4,
decay=1e-6), categorical crossentropy, batch 32, 20 epochs, real-time augmentation
(ImageDataGenerator: width/height shifts of 10%, horizontal flips; fit_generator with
steps_per_epoch = 50,000 // 32), validated on the 10,000 test images each epoch.

Seed 004 times CIFAR-10 on a Tesla V100 (15-17k examples/s at batch 512; batch 128 is the default it
starts from) against a dual Xeon Silver 4110 (about 210 images/s). Its network is most likely
TensorFlow's CIFAR-10 tutorial model (its log prints "examples/sec"), not this one: the suite takes
its batch-size axis (128 -> 512) and its augmentation-cost question, not its absolute figures.

Augmentation (the ``augment`` knob, on by default as in the source) is done by layers inside the
model: random shifts of up to 10% with 'nearest' fill and bilinear interpolation, and horizontal flips
(ImageDataGenerator's shifts, flips and fill; not its interpolation: the Keras 2.0/2.1 that seed 002 ran
called ``affine_transform(..., order=0)``, nearest-neighbour; order 1, bilinear, came later). They run on the
training device, on every backend, only in training, with no host-side per-batch Python work and no
device sync. They add no parameters. ``augment_impl`` picks the shift layer: ``matmul`` (default) is
``helpers.workloads.shift.RandomShift``, the same transformation (checked against Keras' own
``affine_transform`` to 1e-7) as two batched matrix products; ``keras`` is Keras'
``RandomTranslation(0.1, 0.1, fill_mode='nearest')``, whose ``map_coordinates`` is 10x slower on
JAX/torch CPUs and made an H100 slower than a 2-core CPU (``benchmarks/studies/augment_cost.py``). The source did the
same augmentation on the CPU in the input pipeline, whose cost seed 004 measures; here the cost lands on
the device instead (the record's ``data_info.augmentation`` says where).
"""

from __future__ import annotations

from helpers.data import image_sets as _img
from helpers.data import loaders as _data

from ..params import Param
from .registry import Workload, register

AUGMENTATION = {
    "matmul": "in-model: RandomShift(0.1, 0.1) (bilinear, 'nearest' fill, as two matmuls) + RandomFlip('horizontal')",
    "keras": "in-model: RandomTranslation(0.1, 0.1, fill_mode='nearest') + RandomFlip('horizontal')",
}


def _vgg_cifar10(params: dict):
    """cifar10_cnn.py layer for layer: 1,250,858 parameters (augmentation layers add none)."""
    import keras
    from keras import layers

    aug = []
    if params["augment"]:
        if params["augment_impl"] == "keras":
            shift = layers.RandomTranslation(0.1, 0.1, fill_mode="nearest", name="random_shift")
        else:
            from .shift import RandomShift

            shift = RandomShift(0.1, 0.1, name="random_shift")
        aug = [shift, layers.RandomFlip("horizontal", name="random_flip")]
    return keras.Sequential(
        [
            _img.model_input(params, _data.CIFAR10_SHAPE),
            *_img.input_layers(params),  # uint8 inputs: Rescaling(1/255) first (before the augmentation)
            *aug,
            layers.Conv2D(32, 3, padding="same", name="conv1"),  # 32 x 32 x 32
            layers.Activation("relu", name="relu1"),
            layers.Conv2D(32, 3, name="conv2"),  # 30 x 30 x 32
            layers.Activation("relu", name="relu2"),
            layers.MaxPooling2D(2, name="pool1"),  # 15 x 15 x 32
            layers.Dropout(0.25, name="dropout1"),
            layers.Conv2D(64, 3, padding="same", name="conv3"),  # 15 x 15 x 64
            layers.Activation("relu", name="relu3"),
            layers.Conv2D(64, 3, name="conv4"),  # 13 x 13 x 64
            layers.Activation("relu", name="relu4"),
            layers.MaxPooling2D(2, name="pool2"),  # 6 x 6 x 64
            layers.Dropout(0.25, name="dropout2"),
            layers.Flatten(name="flatten"),  # 2304
            layers.Dense(512, name="dense1"),
            layers.Activation("relu", name="relu5"),
            layers.Dropout(0.5, name="dropout3"),
            layers.Dense(10, name="logits"),
            layers.Activation("softmax", dtype="float32", name="softmax"),
        ],
        name="vgg_cifar10",
    )


def _vgg_compile(params: dict) -> dict:
    import keras

    # Keras 2's rmsprop(lr=0.0001, decay=1e-6): lr_t = lr / (1 + decay * iterations), i.e. an inverse
    # time decay with decay_steps=1; rho 0.9.
    lr = keras.optimizers.schedules.InverseTimeDecay(initial_learning_rate=1e-4, decay_steps=1,
                                                     decay_rate=1e-6)
    return {"optimizer": keras.optimizers.RMSprop(learning_rate=lr, rho=0.9, epsilon=1e-7),
            "loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"]}


def _vgg_loader(params: dict) -> _data.Dataset:
    ds = _img.as_input(_data.load_cifar10(params.get("n_train"), params["n_val"],
                                          params["data_source"], params["seed"],
                                          dtype=_img.input_dtype(params)), params)
    ds.extra["augmentation"] = (AUGMENTATION[params["augment_impl"]]
                                if params["augment"] else "off")
    return ds


register(Workload(
    name="vgg_cifar10",
    notes={
        "batch_size": "images per step (the source: 32; seed 004: 128 to 512)",
        "epochs": "(the source: 20)",
        "n_train": "training images (None: all 50,000, as in the source)",
        "n_val": "validation images evaluated each epoch (the source: the 10,000 test images)",
        "augment": "real-time augmentation: random 10% shifts and horizontal flips, in the model (the source: on)",
        "augment_impl": "shift layer: \"matmul\" (two batched matmuls, fast) or \"keras\" (RandomTranslation)",
        "data_source": "auto: real CIFAR-10 if cached or reachable, else synthetic; or real / synthetic",
    },
    source="002_51261036f2f3f066.txt",
    summary="Keras' cifar10_cnn.py (4 conv + Dense 512, RMSprop 1e-4, batch 32, 20 epochs, shift/flip "
            "augmentation): K80/P100 vs preemptible vCPUs, GPUs more than twice as fast, time and cost "
            "relative to a K80 + TensorFlow base. Seed 004: CIFAR-10 at batch 128 to 512, 15-17k "
            "examples/s on a V100 vs about 210 images/s on a dual Xeon (a different network)",
    defaults={"batch_size": 32, "epochs": 3, "n_train": 2000, "n_val": 0, "augment": True,
              "augment_impl": "matmul", "input_dtype": "float32"},
    build=_vgg_cifar10,
    compile_args=_vgg_compile,
    load=_vgg_loader,
    expected_params=1250858,
    extra_params={"augment": Param("augment", bool, "real-time augmentation: random 10% shifts and "
                                   "horizontal flips, in the model, training only (the source: on)"),
                  "augment_impl": Param("augment_impl", str, "the shift layer: 'matmul' (two batched "
                                        "matmuls, fast everywhere) or 'keras' (Keras' RandomTranslation)",
                                        choices=("matmul", "keras")),
                  "input_dtype": _img.INPUT_DTYPE},
))
