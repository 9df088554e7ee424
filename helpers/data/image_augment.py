"""Image augmentation and the per-batch rescale of the image pipelines, in numpy and PIL (no framework import).

Augmentation follows ``ImageDataGenerator``'s semantics: a random affine transform per image
(rotation and shear in degrees, shifts as fractions of the size, independent zoom per axis in
[1 - z, 1 + z]), a horizontal flip half the time, bilinear interpolation, 'nearest' fill; drawn in
numpy, applied per image by PIL (as fast as, or faster than, Keras' scipy path, and thread-parallel).

``prepare_batch`` turns a uint8 batch into the float32 batch a step trains on (rescaled to [0, 1],
augmented when asked).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


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
