"""cnn_256: seed 001's 58-million-parameter CNN on 256x256 images, 4 classes, through a generator.

TensorFlow 2.0 / Keras on an RTX 2080 (75 s/epoch, 0.5 s/step) versus a Ryzen 2700x (480 s/epoch,
3 s/step): ~10k 256x256 images of 4 classes read by a generator with augmentation, 153 steps per
epoch, 10 epochs, validated every epoch (its log prints val_loss, so its epoch times include
validation). Inferred, not stated by the source: the batch of 64 (153 x 64 = 9,792 images, "~10k"),
the optimiser (Adam at 1e-3) and the augmentation settings (below). The model summary in the source gives
every layer's output shape and 58,091,396 parameters (58,088,516 trainable, 2,880 non-trainable).

Knobs beyond the common ones: ``data_dir`` (a folder of 4 class sub-folders; '' = synthetic),
``augment``, ``workers`` / ``use_multiprocessing`` / ``max_queue_size`` (the generator's
parallelism), ``image_size`` (0 = the source's 256; smaller only for smoke runs: it changes the
Dense layer and so the parameter count).
"""

from __future__ import annotations

import math

from helpers.data import image_sets as _img
from helpers.data.image_augment import Augment
from helpers.data.image_plan import image_plan

from ..params import Param
from .registry import Workload, register

SOURCE_SIZE = 256
N_CLASSES = 4
SOURCE_IMAGES = 153 * 64  # 153 steps of 64 images: "~10k images"
EXPECTED_PARAMS = 58_091_396
EXPECTED_TRAINABLE = 58_088_516
EXPECTED_NON_TRAINABLE = 2_880

# The source says "generator with image augmentation" without its settings. The layer table is
# the well-known "SmallerVGGNet" (conv 32, pool 3, conv 64 x2, conv 128 x2, dense 1024, each with
# batch normalisation and dropout); its tutorial's ImageDataGenerator used these ranges:
AUGMENT = Augment(rotation_range=25, width_shift_range=0.1, height_shift_range=0.1, shear_range=0.2,
                  zoom_range=0.2, horizontal_flip=True)

# (name, output shape, parameters) per layer at 256x256, as printed by the source's model.summary().
SOURCE_TABLE = (
    ("conv2d", (256, 256, 32), 896),
    ("batch_normalization", (256, 256, 32), 128),
    ("max_pooling2d", (85, 85, 32), 0),
    ("dropout", (85, 85, 32), 0),
    ("conv2d_1", (85, 85, 64), 18496),
    ("batch_normalization_1", (85, 85, 64), 256),
    ("conv2d_2", (85, 85, 64), 36928),
    ("batch_normalization_2", (85, 85, 64), 256),
    ("max_pooling2d_1", (42, 42, 64), 0),
    ("dropout_1", (42, 42, 64), 0),
    ("conv2d_3", (42, 42, 128), 73856),
    ("batch_normalization_3", (42, 42, 128), 512),
    ("conv2d_4", (42, 42, 128), 147584),
    ("batch_normalization_4", (42, 42, 128), 512),
    ("max_pooling2d_2", (21, 21, 128), 0),
    ("dropout_2", (21, 21, 128), 0),
    ("flatten", (56448,), 0),
    ("dense", (1024,), 57803776),
    ("batch_normalization_5", (1024,), 4096),
    ("dropout_3", (1024,), 0),
    ("dense_1", (4,), 4100),
)

EXTRA = {p.name: p for p in (
    Param("data_dir", str, "folder of 4 class sub-folders of images ('' = synthetic images)"),
    Param("augment", bool, "random rotation/shift/shear/zoom/flip per image in the generator"),
    Param("workers", int, "generator workers (Keras 3: 1 = built in the training loop, >1 = a prefetching pool)",
          minimum=1),
    Param("use_multiprocessing", bool, "generator workers are processes instead of threads"),
    Param("max_queue_size", int, "batches prepared ahead by the workers", minimum=1),
    Param("image_size", int, "image side in pixels (0 = the source's 256; smaller changes the model)", minimum=0),
    _img.INPUT_DTYPE,
)}


def image_side(params: dict) -> int:
    return int(params.get("image_size") or SOURCE_SIZE)


def _cnn_256(params: dict):
    """Seed 001's layer table, layer for layer (ReLU inside the convolutions and the first Dense).

    'same' convolutions 3x3; max pooling 3x3 (256 -> 85), then 2x2 twice (85 -> 42 -> 21);
    dropout 0.25 after each pooling, 0.5 after the Dense(1024); softmax over 4 classes (float32
    under mixed precision). Layer names are the source's, so the summaries read the same.
    """
    import keras
    from keras import layers

    s = image_side(params)
    return keras.Sequential(
        [
            _img.model_input(params, (s, s, 3)),
            *_img.input_layers(params),  # uint8 inputs: Rescaling(1/255) first, no parameters
            layers.Conv2D(32, 3, padding="same", activation="relu", name="conv2d"),
            layers.BatchNormalization(name="batch_normalization"),
            layers.MaxPooling2D(3, name="max_pooling2d"),
            layers.Dropout(0.25, name="dropout"),
            layers.Conv2D(64, 3, padding="same", activation="relu", name="conv2d_1"),
            layers.BatchNormalization(name="batch_normalization_1"),
            layers.Conv2D(64, 3, padding="same", activation="relu", name="conv2d_2"),
            layers.BatchNormalization(name="batch_normalization_2"),
            layers.MaxPooling2D(2, name="max_pooling2d_1"),
            layers.Dropout(0.25, name="dropout_1"),
            layers.Conv2D(128, 3, padding="same", activation="relu", name="conv2d_3"),
            layers.BatchNormalization(name="batch_normalization_3"),
            layers.Conv2D(128, 3, padding="same", activation="relu", name="conv2d_4"),
            layers.BatchNormalization(name="batch_normalization_4"),
            layers.MaxPooling2D(2, name="max_pooling2d_2"),
            layers.Dropout(0.25, name="dropout_2"),
            layers.Flatten(name="flatten"),
            layers.Dense(1024, activation="relu", name="dense"),
            layers.BatchNormalization(name="batch_normalization_5"),
            layers.Dropout(0.5, name="dropout_3"),
            layers.Dense(N_CLASSES, activation="softmax", dtype="float32", name="dense_1"),
        ],
        name="cnn_256",
    )


def _compile(params: dict) -> dict:
    import keras

    # The source does not print its optimiser; Adam at 1e-3 is the SmallerVGGNet tutorial's.
    return {"optimizer": keras.optimizers.Adam(learning_rate=1e-3),
            "loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"]}


def _load(params: dict):
    s = image_side(params)
    plan = image_plan(params, image_size=(s, s), n_classes=N_CLASSES, augment=AUGMENT, label_mode="int",
                      what="cnn_256 (seed 001's 4-class image set)", default_n=SOURCE_IMAGES)
    from helpers.data.image_sequence import image_dataset  # imports keras: the device is forced by now

    return image_dataset(plan)


def trainable_params(model) -> int:
    return int(sum(math.prod(w.shape) for w in model.trainable_weights))


def layer_table(model) -> list[tuple[str, tuple, int]]:
    """(name, output shape without the batch axis, parameters) per layer, as model.summary() lists them."""
    return [(layer.name, tuple(layer.output.shape[1:]), int(layer.count_params())) for layer in model.layers
            if layer.name != _img.RESCALE_LAYER]  # uint8 inputs' rescaling: not the source's network


def compare_layers(model) -> list[str]:
    """Print (and return) how the model's layer table differs from the source's; [] when identical."""
    ours = layer_table(model)
    diffs = [f"{i}: ours {o} vs source {s}" for i, (o, s) in enumerate(zip(ours, SOURCE_TABLE)) if o != s]
    if len(ours) != len(SOURCE_TABLE):
        diffs.append(f"{len(ours)} layers vs {len(SOURCE_TABLE)} in the source")
    print("layer table: identical to the source's (names, output shapes, parameters)" if not diffs
          else "layer table differs from the source's (image_size changes it):\n  " + "\n  ".join(diffs))
    return diffs


def _describe(model, params: dict) -> dict:
    trainable = trainable_params(model)
    return {"image_size": image_side(params), "trainable_params": trainable,
            "non_trainable_params": int(model.count_params()) - trainable,
            "source_trainable_params": EXPECTED_TRAINABLE, "source_non_trainable_params": EXPECTED_NON_TRAINABLE}


register(Workload(
    name="cnn_256",
    notes={
        "batch_size": "images per step (the source: 64, so 153 steps of ~10k images)",
        "epochs": "(the source: 10)",
        "n_train": "images per epoch (None: 9,792, the source's 153 steps of 64)",
        "n_val": "validation images evaluated each epoch (0: none)",
        "data_source": "auto: the folder in data_dir when given, else synthetic; or real / synthetic",
        "data_dir": "folder of 4 class sub-folders of images (empty: synthetic images)",
        "augment": "rotation, shift, shear, zoom and flip per image, in the generator",
        "workers": "generator workers (1: batches built in the training loop; more: a prefetching thread pool)",
        "use_multiprocessing": "True: the workers are processes instead of threads",
        "max_queue_size": "batches the workers prepare ahead",
        "image_size": "image side in pixels (0: the source's 256; smaller changes the model)",
    },
    source="001_a7322e5556cd27ca.txt",
    summary="TF2/Keras: a 58,091,396-parameter CNN (BatchNorm, Dropout) on ~10k 256x256 images of 4 "
            "classes through an augmenting generator, batches of 64 (153 steps/epoch), 10 epochs: "
            "RTX 2080 75 s/epoch (0.5 s/step) vs Ryzen 2700x 480 s/epoch (3 s/step)",
    defaults={"batch_size": 64, "epochs": 3, "n_train": 128, "n_val": 0, "data_dir": "", "augment": True,
              "workers": 1, "use_multiprocessing": False, "max_queue_size": 10, "image_size": 0,
              "input_dtype": "float32"},
    build=_cnn_256,
    compile_args=_compile,
    load=_load,
    expected_params=EXPECTED_PARAMS,
    extra_params=EXTRA,
    describe=_describe,
))
