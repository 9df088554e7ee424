"""Image pipelines fed by a Python generator, as the source documents ran them (no framework import).

Seeds 001 and 004 train through Keras' ``ImageDataGenerator.flow_from_directory``: on the CPU, for
every batch, read and decode the files, resize them, rescale to [0, 1] and augment them (random
affine transforms, flips). Seed 004 found this input pipeline to be the bottleneck on the GPU, and
tuned ``workers`` and ``batch_size`` around it. The suite keeps that work, backend-agnostic:

    plan = image_plan(params, image_size=(64, 64), n_classes=2, augment=CATSDOGS_AUGMENT, ...)
    ds = helpers.data.image_sequence.image_dataset(plan)  # imports Keras: after forcing the device

``image_plan`` (here) finds the files or makes the synthetic pool; ``image_dataset`` returns a
``helpers.data.loaders.Dataset`` whose ``train`` is a ``keras.utils.PyDataset`` (``ImageSequence``): batches
built in numpy (and PIL for files) by ``workers`` threads or processes, exactly once per step, with
no device work and no callback. The generator uses this module, never the reverse.

Data: a directory of class sub-folders when ``data_dir`` is given (``helpers.data.image_folders``: the layout of
the public cats-and-dogs archive, ``training_set/cats/*.jpg``, ``training_set/dogs/*.jpg``, ``test_set/...``;
or ``train/`` + ``validation/``; or the class folders directly), else synthetic images with
learnable class structure (``helpers.data.loaders.synthetic_images``) held as uint8, so that the pipeline
does the same rescale and augmentation work per batch (all but the JPEG decoding).

Augmentation follows ``ImageDataGenerator``'s semantics (``helpers.data.image_augment``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from helpers.data import loaders as _data
from helpers.data.image_augment import Augment
from helpers.data.image_folders import scan_classes, split_dirs

SYNTHETIC_POOL_BYTES = 256 * 2**20  # distinct synthetic images kept in memory (cycled beyond that)


def synthetic_pool(n: int, shape: tuple[int, int, int], n_classes: int, seed: int,
                   max_bytes: int = SYNTHETIC_POOL_BYTES) -> tuple[np.ndarray, np.ndarray]:
    """Up to ``n`` distinct synthetic uint8 images (as decoded JPEGs would be) and labels.

    At most ``max_bytes`` of them (at least 64): an epoch of more samples cycles through the pool,
    each pass augmented afresh.
    """
    per = int(np.prod(shape))
    size = max(1, min(n, max(64, max_bytes // per)))
    xs, ys = [], []
    chunk = max(1, min(size, (64 * 2**20) // (4 * per)))  # float32 transients of ~64 MB
    for i, start in enumerate(range(0, size, chunk)):
        m = min(chunk, size - start)
        x, y = _data.synthetic_images(m, shape, n_classes, seed * 1000 + i)
        xs.append(np.round(x * 255.0).astype(np.uint8))
        ys.append(y)
    return np.concatenate(xs), np.concatenate(ys)


# ---------------------------------------------------------------- the plan


@dataclass(frozen=True)
class ImagePlan:
    """What the generators of an image workload serve (``helpers.data.image_sequence.image_dataset`` builds them).

    ``*_items``: image paths or a uint8 pool (N, H, W, 3); ``n_*``: samples per epoch (0: no validation).
    """

    source: str  # "real" | "synthetic"
    detail: str  # where the images came from, or why synthetic
    n_classes: int
    info: dict  # recorded as data_info
    train_items: object
    train_labels: np.ndarray
    n_train: int
    val_items: object
    val_labels: np.ndarray | None
    n_val: int
    batch_size: int
    image_size: tuple[int, int]
    augment: Augment | None  # None: not augmented (``augment=False``)
    seed: int
    pipe: dict  # workers, use_multiprocessing, max_queue_size (keras.utils.PyDataset's arguments)
    rescale: bool = True  # batches as float32 in [0, 1]; False: uint8, rescaled inside the model


def _subset(rng: np.random.Generator, paths, labels, n: int | None):
    if n is None or n >= len(paths):
        return list(paths), labels
    idx = np.sort(rng.permutation(len(paths))[:n])
    return [paths[i] for i in idx], labels[idx]


def image_plan(params: dict, *, image_size: tuple[int, int], n_classes: int, augment: Augment,
               label_mode: str, what: str, default_n: int, extra: dict | None = None) -> ImagePlan:
    """The training (and validation) data of an image workload, from a folder or synthetic.

    ``params`` gives ``data_dir``, ``data_source``, ``augment``, ``workers``,
    ``use_multiprocessing``, ``max_queue_size``, ``batch_size``, ``n_train``, ``n_val``, ``seed``.
    ``label_mode``: ``binary`` (float 0/1, a sigmoid output) or ``int`` (sparse class indices).
    ``default_n``: synthetic samples per epoch when ``n_train`` is null (the source's).
    Bad parameters and missing folders raise here, before any framework is imported.
    """
    source = params["data_source"]
    if source not in ("auto", "real", "synthetic"):
        raise ValueError(f"data_source must be auto, real or synthetic, not {source!r}")
    data_dir = params["data_dir"] or ""
    seed = int(params["seed"])
    bs = int(params["batch_size"])
    n_train, n_val = params.get("n_train"), int(params["n_val"] or 0)
    aug = augment if params["augment"] else None
    h, w = image_size
    label_dtype = np.float32 if label_mode == "binary" else np.int64
    pipe = {"workers": int(params["workers"]),
            "use_multiprocessing": bool(params["use_multiprocessing"]),
            "max_queue_size": int(params["max_queue_size"])}
    rescale = (params.get("input_dtype") or "float32") != "uint8"
    info = {"pipeline": "keras.utils.PyDataset (numpy/PIL on the CPU, per batch)",
            "augment": aug is not None, "augment_params": augment.as_dict() if aug is not None else None,
            "rescale": "1/255" if rescale else "1/255 inside the model (uint8 batches)",
            "input_dtype": "float32" if rescale else "uint8", "image_size": [h, w], **pipe, **(extra or {})}
    common = {"n_classes": n_classes, "batch_size": bs, "image_size": (h, w), "augment": aug, "seed": seed,
              "pipe": pipe, "rescale": rescale}
    rng = np.random.default_rng(seed)

    if source == "real" and not data_dir:
        raise _data.DataError(f"data_source='real' but no data_dir is given: {what} has no public "
                              "Keras loader; pass data_dir (a folder of class sub-folders) or use "
                              "data_source='auto' or 'synthetic'")

    if data_dir and source != "synthetic":
        d = Path(data_dir).expanduser()
        if not d.is_dir():
            raise _data.DataError(f"data_dir {str(d)!r} is not a folder")
        train_root, val_root = split_dirs(d)
        paths, labels, classes = scan_classes(train_root)
        if len(classes) != n_classes or not paths:
            raise _data.DataError(f"data_dir {str(d)!r}: expected {n_classes} class sub-folders of images "
                                  f"under {str(train_root)!r}, found {len(classes)} ({', '.join(classes)})")
        vpaths, vlabels = [], np.zeros(0, dtype=np.int64)
        if n_val and val_root is not None:
            vpaths, vlabels, _ = scan_classes(val_root, classes)
        elif n_val:  # no validation split: hold the last n_val (shuffled) training files out
            perm = rng.permutation(len(paths))
            hold = np.sort(perm[:n_val])
            keep = np.sort(perm[n_val:])
            vpaths, vlabels = [paths[i] for i in hold], labels[hold]
            paths, labels = [paths[i] for i in keep], labels[keep]
        paths, labels = _subset(rng, paths, labels, n_train)
        vpaths, vlabels = _subset(rng, vpaths, vlabels, n_val)
        info.update(data_dir=str(d), train_dir=str(train_root), val_dir=str(val_root) if val_root else None,
                    classes=classes, n_files=len(paths))
        detail = f"{len(paths)} image files from {train_root} ({', '.join(classes)}), decoded per batch"
        return ImagePlan("real", detail, info=info, train_items=paths, train_labels=labels.astype(label_dtype),
                         n_train=len(paths), val_items=vpaths, val_labels=vlabels.astype(label_dtype),
                         n_val=len(vpaths), **common)

    n = default_n if n_train is None else int(n_train)
    x, y = synthetic_pool(n, (h, w, 3), n_classes, seed)
    xv = yv = None
    if n_val:
        xv, yv = synthetic_pool(n_val, (h, w, 3), n_classes, seed + 7919)
        yv = yv.astype(label_dtype)
    info.update(synthetic_pool=len(x))
    why = "requested" if source == "synthetic" else "no data_dir given"
    detail = (f"synthetic {h}x{w} images of {n_classes} classes ({why}); {len(x)} distinct, "
              f"{n} per epoch" + (", cycled" if n > len(x) else ""))
    return ImagePlan("synthetic", detail, info=info, train_items=x, train_labels=y.astype(label_dtype), n_train=n,
                     val_items=xv, val_labels=yv, n_val=n_val, **common)
