"""catsdogs: seed 004's cats-vs-dogs CNNs (Venkatesh's Keras tutorial and its improvements).

Seed 004 ran the tutorial's network through ``ImageDataGenerator.flow_from_directory`` (64x64,
rescale 1/255, shear 0.2, zoom 0.2, horizontal flip; batches of 32) on a VirtualBox VM, a dual Xeon
4110 and a Tesla V100, tuned ``workers`` and ``batch_size``, measured the cost of augmentation
(425 vs 533 images/s on the V100) and built bigger variants. It names the input pipeline (reading,
decompressing and augmenting the JPEGs on the CPU) as the bottleneck: synthetic images skip the reading
and decoding, so only a run on the JPEG folders (``data_dir``) measures it. Its ``workers=1`` was Keras
2's (one background thread, a queue of 10 batches); Keras 3's builds batches in the training loop
(``helpers.data.image_sequence``): the workers 1 -> 4 comparison is not the same experiment.
``variant`` picks the network:

- ``original``: the tutorial's network: Conv2D(32, 3x3, relu) on 64x64x3, MaxPool(2), Flatten,
  Dense(128, relu), Dense(1, sigmoid); Adam, binary crossentropy. 3,937,409 parameters.
- ``improved``: "a pair of convolutional (64 filters) and max-pooling layers" added, and "a dropout
  layer with a rate of 0.5" (before the output layer): 1,625,281 parameters (the second pooling
  shrinks the Dense layer's input).
- ``highres``: the improved network at 128x128 with "another pair of convolutional and max pool
  layers" and "64 filters on all layers": three Conv(64)+MaxPool pairs: 1,681,537 parameters.
- ``deep``: the "(unnecessarily) deep network" of "30+ convolutional layers" (the source gives no
  layer list): the improved network's head on 32 'same' 3x3 convolutions in four stages of eight
  (32, 64, 64, 64 filters), each stage closed by MaxPool(2), at 64x64: 1,064,801 parameters.

Knobs beyond the common ones: ``variant``, ``data_dir`` (the public archive's layout:
``training_set/cats/*.jpg``, ``training_set/dogs/*.jpg``; '' = synthetic), ``augment``,
``workers`` / ``use_multiprocessing`` / ``max_queue_size``, ``image_size`` (0 = the variant's).
"""

from __future__ import annotations

from helpers.data import image_sets as _img
from helpers.data.image_augment import Augment
from helpers.data.image_plan import image_plan

from ..params import Param
from .registry import Workload, register

VARIANTS = ("original", "improved", "highres", "deep")
VARIANT_SIZE = {"original": 64, "improved": 64, "highres": 128, "deep": 64}
# Parameter counts at the variant's own image size (the arithmetic is in the module docstring).
VARIANT_PARAMS = {"original": 3_937_409, "improved": 1_625_281, "highres": 1_681_537, "deep": 1_064_801}
DEEP_STAGES = ((32, 8), (64, 8), (64, 8), (64, 8))  # (filters, convolutions) per stage: 32 convolutions
N_CLASSES = 2
SOURCE_IMAGES = 8000  # the archive's training_set: 4,000 cats + 4,000 dogs

# The tutorial's ImageDataGenerator(rescale=1./255, shear_range=0.2, zoom_range=0.2, horizontal_flip=True)
AUGMENT = Augment(shear_range=0.2, zoom_range=0.2, horizontal_flip=True)

EXTRA = {p.name: p for p in (
    Param("variant", str, "network: original, improved (+conv/pool, dropout), highres (128x128), deep (32 convs)",
          choices=VARIANTS),
    Param("data_dir", str, "folder with training_set/cats, training_set/dogs (or class folders; '' = synthetic)"),
    Param("augment", bool, "shear/zoom/flip per image in the generator (the tutorial's)"),
    Param("workers", int, "generator workers (Keras 3: 1 = built in the training loop, >1 = a prefetching pool)",
          minimum=1),
    Param("use_multiprocessing", bool, "generator workers are processes instead of threads"),
    Param("max_queue_size", int, "batches prepared ahead by the workers", minimum=1),
    Param("image_size", int, "image side in pixels (0 = the variant's: 64, highres 128)", minimum=0),
    _img.INPUT_DTYPE,
)}


def image_side(params: dict) -> int:
    return int(params.get("image_size") or VARIANT_SIZE[params["variant"]])


def conv_layers(variant: str) -> int:
    return {"original": 1, "improved": 2, "highres": 3, "deep": sum(n for _, n in DEEP_STAGES)}[variant]


def _catsdogs(params: dict):
    import keras
    from keras import layers

    variant = params["variant"]
    s = image_side(params)
    body: list = []
    if variant == "original":
        body = [layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(2)]
    elif variant == "improved":
        body = [layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(2),
                layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(2)]
    elif variant == "highres":
        for _ in range(3):
            body += [layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(2)]
    elif variant == "deep":
        for filters, n in DEEP_STAGES:
            body += [layers.Conv2D(filters, 3, padding="same", activation="relu") for _ in range(n)]
            body.append(layers.MaxPooling2D(2))
    else:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, not {variant!r}")
    head = [layers.Flatten(), layers.Dense(128, activation="relu")]
    if variant != "original":
        head.append(layers.Dropout(0.5))
    head.append(layers.Dense(1, activation="sigmoid", dtype="float32"))  # float32 under mixed precision
    # uint8 inputs: Rescaling(1/255) first, no parameters
    return keras.Sequential([_img.model_input(params, (s, s, 3)), *_img.input_layers(params), *body, *head],
                            name=f"catsdogs_{variant}")


def _compile(params: dict) -> dict:
    # The tutorial: classifier.compile(optimizer='adam', loss='binary_crossentropy', metrics=['accuracy'])
    import keras

    return {"optimizer": keras.optimizers.Adam(), "loss": "binary_crossentropy", "metrics": ["accuracy"]}


def _load(params: dict):
    variant = params["variant"]
    s = image_side(params)
    plan = image_plan(params, image_size=(s, s), n_classes=N_CLASSES, augment=AUGMENT, label_mode="binary",
                      what="catsdogs (the cats-and-dogs archive)", default_n=SOURCE_IMAGES,
                      extra={"variant": variant, "conv_layers": conv_layers(variant)})
    from helpers.data.image_sequence import image_dataset  # imports keras: the device is forced by now

    return image_dataset(plan)


def _describe(model, params: dict) -> dict:
    variant = params["variant"]
    s = image_side(params)
    return {"variant": variant, "image_size": s, "conv_layers": conv_layers(variant),
            "variant_params_at_source_size": VARIANT_PARAMS[variant],
            "at_source_size": s == VARIANT_SIZE[variant]}


register(Workload(
    name="catsdogs",
    notes={
        "batch_size": "images per step (the source: 32, tuned to 64)",
        "epochs": "(the source: 25)",
        "n_train": "images per epoch (None: 8,000, the archive's training set)",
        "n_val": "validation images evaluated each epoch, from test_set when present (0: none)",
        "data_source": "auto: the folder in data_dir when given, else synthetic; or real / synthetic",
        "variant": "original, improved, highres (128x128) or deep (32 convolutions)",
        "data_dir": "folder with training_set/cats and training_set/dogs, or the class folders (empty: synthetic)",
        "augment": "shear, zoom and horizontal flip per image, in the generator (the tutorial's)",
        "workers": "generator workers (1: batches built in the training loop; more: a prefetching thread pool)",
        "use_multiprocessing": "True: the workers are processes instead of threads",
        "max_queue_size": "batches the workers prepare ahead",
        "image_size": "image side in pixels (0: the variant's, 64; highres 128; smaller changes the model)",
    },
    source="004_0e48492da3711cae.txt",
    summary="Keras cats-vs-dogs CNN through flow_from_directory (64x64, shear/zoom/flip, batches of 32) "
            "and its improved, 128x128 and 30+-conv variants: V100 vs dual Xeon 4110 vs a VM; images/s "
            "vs workers and batch size (47 -> 64 images/s on the VM); augmentation 425 vs 533 images/s",
    defaults={"batch_size": 32, "epochs": 3, "n_train": 2000, "n_val": 0, "variant": "original", "data_dir": "",
              "augment": True, "workers": 1, "use_multiprocessing": False, "max_queue_size": 10,
              "image_size": 0, "input_dtype": "float32"},
    build=_catsdogs,
    compile_args=_compile,
    load=_load,
    expected_params=None,  # the source prints no parameter counts; VARIANT_PARAMS are this module's
    extra_params=EXTRA,
    describe=_describe,
))
