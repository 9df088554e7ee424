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

Data: a directory of class sub-folders when ``data_dir`` is given (the layout of the public
cats-and-dogs archive, ``training_set/cats/*.jpg``, ``training_set/dogs/*.jpg``, ``test_set/...``;
or ``train/`` + ``validation/``; or the class folders directly), else synthetic images with
learnable class structure (``helpers.data.loaders.synthetic_images``) held as uint8, so that the pipeline
does the same rescale and augmentation work per batch (all but the JPEG decoding).

Augmentation follows ``ImageDataGenerator``'s semantics: a random affine transform per image
(rotation and shear in degrees, shifts as fractions of the size, independent zoom per axis in
[1 - z, 1 + z]), a horizontal flip half the time, bilinear interpolation, 'nearest' fill; drawn in
numpy, applied per image by PIL (as fast as, or faster than, Keras' scipy path, and thread-parallel).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from helpers.data import loaders as _data

IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".bmp", ".gif")
# Sub-folders that hold the training / validation split of an archive (first match wins).
TRAIN_SPLITS = ("training_set", "train", "training")
VAL_SPLITS = ("test_set", "validation", "val", "test")
SYNTHETIC_POOL_BYTES = 256 * 2**20  # distinct synthetic images kept in memory (cycled beyond that)


@dataclass(frozen=True)
class Augment:
    """The random transforms of an ``ImageDataGenerator`` (same names, same units)."""

    rotation_range: float = 0.0  # degrees
    width_shift_range: float = 0.0  # fraction of the width
    height_shift_range: float = 0.0  # fraction of the height
    shear_range: float = 0.0  # degrees (Keras' unit: 0.2 is a fifth of a degree)
    zoom_range: float = 0.0  # zoom in [1 - z, 1 + z], per axis
    horizontal_flip: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------- augmentation


def random_affine(rng: np.random.Generator, n: int, h: int, w: int, aug: Augment) -> np.ndarray:
    """``n`` matrices (n, 2, 3) mapping output (row, col) to input (row, col), flips folded in.

    Drawn and built as ``ImageDataGenerator.random_transform`` / ``apply_affine_transform`` do:
    rotation @ shift @ shear @ zoom about Keras' centre, in Keras' axis order, then swapped to
    (row, col) as Keras swaps it before ``scipy.ndimage.affine_transform``.
    """
    zeros = np.zeros(n)
    theta = np.deg2rad(rng.uniform(-aug.rotation_range, aug.rotation_range, n)) if aug.rotation_range else zeros
    tx = rng.uniform(-aug.height_shift_range, aug.height_shift_range, n) * h if aug.height_shift_range else zeros
    ty = rng.uniform(-aug.width_shift_range, aug.width_shift_range, n) * w if aug.width_shift_range else zeros
    shear = np.deg2rad(rng.uniform(-aug.shear_range, aug.shear_range, n)) if aug.shear_range else zeros
    if aug.zoom_range:
        zx, zy = rng.uniform(1 - aug.zoom_range, 1 + aug.zoom_range, (2, n))
    else:
        zx = zy = np.ones(n)
    flip = rng.random(n) < 0.5 if aug.horizontal_flip else np.zeros(n, dtype=bool)

    def mat(rows):  # (n, 3, 3) from nested lists of (n,) arrays / scalars
        return np.stack([np.stack([np.broadcast_to(v, (n,)) for v in row], -1) for row in rows], -2)

    c, s = np.cos(theta), np.sin(theta)
    m = (mat([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ mat([[1, 0, tx], [0, 1, ty], [0, 0, 1]])
         @ mat([[1, -np.sin(shear), 0], [0, np.cos(shear), 0], [0, 0, 1]]) @ mat([[zx, 0, 0], [0, zy, 0], [0, 0, 1]]))
    ox, oy = h / 2 - 0.5, w / 2 - 0.5  # transform_matrix_offset_center(m, h, w)
    m = mat([[1, 0, ox], [0, 1, oy], [0, 0, 1]]) @ m @ mat([[1, 0, -ox], [0, 1, -oy], [0, 0, 1]])
    m = m[:, [1, 0, 2]][:, :, [1, 0, 2]]  # Keras' swap to array (row, col) order
    a, t = m[:, :2, :2].copy(), m[:, :2, 2].copy()
    # horizontal flip of the output (Keras flips after the transform): output column c <- W - 1 - c
    t[flip] += a[flip, :, 1] * (w - 1)
    a[flip, :, 1] *= -1
    return np.concatenate([a, t[..., None]], -1)


def apply_affine(x: np.ndarray, mats: np.ndarray) -> np.ndarray:
    """Warp a uint8 batch (B, H, W, C) by ``mats`` (B, 2, 3): uint8, bilinear, 'nearest' fill.

    Per image with PIL (C code that releases the GIL, so ``workers`` threads run in parallel); the
    'nearest' fill of Keras comes from an edge-replicated margin as wide as the transform reaches.
    """
    from PIL import Image

    b, h, w, _ = x.shape
    out = np.empty_like(x)
    corners = np.array([[0, 0, 1], [0, w - 1, 1], [h - 1, 0, 1], [h - 1, w - 1, 1]], dtype=np.float64).T
    for i in range(b):
        a, t = mats[i, :, :2], mats[i, :, 2]
        reach = mats[i] @ corners  # source (row, col) of the output corners
        pad = int(np.ceil(max(0.0, -reach.min(), (reach[0] - (h - 1)).max(), (reach[1] - (w - 1)).max()))) + 1
        img = np.pad(x[i], ((pad, pad), (pad, pad), (0, 0)), mode="edge") if pad > 1 else x[i]
        p = pad if pad > 1 else 0
        # PIL: input (x, y) = (a*x + b*y + c, d*x + e*y + f) on pixel centres; x = column, y = row
        ca, cb, cc = a[1, 1], a[1, 0], t[1] + p
        cd, ce, cf = a[0, 1], a[0, 0], t[0] + p
        data = (ca, cb, cc + 0.5 - 0.5 * (ca + cb), cd, ce, cf + 0.5 - 0.5 * (cd + ce))
        out[i] = np.asarray(Image.fromarray(img).transform((w, h), Image.AFFINE, data=data,
                                                           resample=Image.BILINEAR))
    return out


def prepare_batch(x: np.ndarray, rng: np.random.Generator | None, aug: Augment | None,
                  rescale: bool = True) -> np.ndarray:
    """A uint8 batch -> float32 in [0, 1] (``rescale=1/255``), augmented when ``aug`` is given; with
    ``rescale`` False it stays uint8 (``input_dtype='uint8'``: the model rescales it)."""
    if aug is not None and rng is not None:
        x = apply_affine(x, random_affine(rng, len(x), x.shape[1], x.shape[2], aug))
    if not rescale:
        return np.ascontiguousarray(x, dtype=np.uint8)
    out = x.astype(np.float32)
    out *= np.float32(1.0 / 255.0)
    return out


# ---------------------------------------------------------------- files


def load_images(paths, size: tuple[int, int]) -> np.ndarray:
    """Decode and resize image files to a uint8 batch (N, H, W, 3), as ``load_img`` does.

    ``keras.utils.load_img``'s defaults: RGB, resized with 'nearest' interpolation.
    """
    from PIL import Image

    h, w = size
    out = np.empty((len(paths), h, w, 3), dtype=np.uint8)
    for i, p in enumerate(paths):
        with Image.open(p) as img:
            img = img.convert("RGB")
            if img.size != (w, h):
                img = img.resize((w, h), Image.NEAREST)
            out[i] = np.asarray(img)
    return out


def _has_images(d: Path) -> bool:
    return any(f.suffix.lower() in IMAGE_EXTS for f in d.iterdir() if f.is_file())


def _descend(d: Path) -> Path:
    """Skip wrappers: ``training_set/training_set/cats`` (the Kaggle copy nests the split twice)."""
    while True:
        subs = [s for s in d.iterdir() if s.is_dir() and not s.name.startswith((".", "_"))]
        if len(subs) == 1 and not _has_images(d) and not _has_images(subs[0]):
            d = subs[0]
        else:
            return d


def split_dirs(data_dir) -> tuple[Path, Path | None]:
    """The folders of class sub-folders for training and (if any) validation under ``data_dir``."""
    root = _descend(Path(data_dir).expanduser())
    subs = {s.name.lower(): s for s in root.iterdir() if s.is_dir()}
    train = next((subs[n] for n in TRAIN_SPLITS if n in subs), None)
    if train is None:
        return root, None
    val = next((subs[n] for n in VAL_SPLITS if n in subs), None)
    return _descend(train), (_descend(val) if val is not None else None)


def scan_classes(root: Path, classes: list[str] | None = None) -> tuple[list[Path], np.ndarray, list[str]]:
    """Files and labels of a folder of class sub-folders (classes in sorted order, as Keras does)."""
    if classes is None:
        classes = sorted(s.name for s in root.iterdir()
                         if s.is_dir() and not s.name.startswith(".") and _has_images(s))
    paths: list[Path] = []
    labels: list[int] = []
    for k, name in enumerate(classes):
        d = root / name
        if not d.is_dir():
            continue
        files = sorted(f for f in d.rglob("*") if f.is_file() and f.suffix.lower() in IMAGE_EXTS
                       and not f.name.startswith("."))
        paths.extend(files)
        labels.extend([k] * len(files))
    return paths, np.asarray(labels, dtype=np.int64), classes


# ---------------------------------------------------------------- synthetic


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
    source = params.get("data_source", "auto")
    if source not in ("auto", "real", "synthetic"):
        raise ValueError(f"data_source must be auto, real or synthetic, not {source!r}")
    data_dir = params.get("data_dir", "") or ""
    seed = int(params.get("seed", 0))
    bs = int(params["batch_size"])
    n_train, n_val = params.get("n_train"), int(params.get("n_val", 0) or 0)
    aug = augment if params.get("augment", True) else None
    h, w = image_size
    label_dtype = np.float32 if label_mode == "binary" else np.int64
    pipe = {"workers": int(params.get("workers", 1)),
            "use_multiprocessing": bool(params.get("use_multiprocessing", False)),
            "max_queue_size": int(params.get("max_queue_size", 10))}
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
