"""Image files on disk: the folders of class sub-folders a workload reads, and their decoding (PIL; no framework).

Data: a directory of class sub-folders when ``data_dir`` is given (the layout of the public
cats-and-dogs archive, ``training_set/cats/*.jpg``, ``training_set/dogs/*.jpg``, ``test_set/...``;
or ``train/`` + ``validation/``; or the class folders directly), else synthetic images
(``helpers.data.image_plan``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

IMAGE_EXTS = (".jpg", ".jpeg", ".png", ".bmp", ".gif")
# Sub-folders that hold the training / validation split of an archive (first match wins).
TRAIN_SPLITS = ("training_set", "train", "training")
VAL_SPLITS = ("test_set", "validation", "val", "test")


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
