"""The image generator as a ``keras.utils.PyDataset`` (imports Keras: import after forcing the device).

    ds = image_dataset(helpers.data.image_plan.image_plan(params, ...))  -> helpers.data.loaders.Dataset

One batch = pick the samples of this step, decode and resize them (files, with PIL) or take them
from the in-memory uint8 pool (synthetic), rescale to [0, 1], augment (numpy). ``fit`` runs it on
``workers`` threads (or processes with ``use_multiprocessing``), ``max_queue_size`` batches ahead.

Not as ``fit_generator`` ran it in the source documents at ``workers=1``: Keras 2 then started one
background thread filling a queue of ``max_queue_size`` (10) batches, so the next batches were built while
the device trained; Keras 3 starts no thread and no queue for ``workers=1``
(``keras/src/trainers/data_adapters/py_dataset_adapter.py``: an enqueuer only for ``workers > 1`` or
``use_multiprocessing``): each batch is built inside the training loop, between steps. So seed 004's
``workers`` 1 -> 4 comparison (47 -> 64 images/s with batch 32 -> 64) is not the same experiment here:
its ``workers=1`` already overlapped input and training, ours does not; ``workers=2`` is the nearest to
Keras 2's ``workers=1`` (a pool with a queue), though two threads build batches, not one. Synthetic images
skip reading and JPEG decoding, which seed 004 names as its bottleneck. Nothing here touches the
device or hooks a callback: the timed loop is Keras' own. The pipeline (``helpers.data.image_plan``) never
imports this module: the dependency goes one way, generator -> pipeline.
"""

from __future__ import annotations

import math

import keras
import numpy as np

from helpers.data.image_augment import Augment, prepare_batch
from helpers.data.image_folders import load_images
from helpers.data.image_plan import ImagePlan
from helpers.data.loaders import Dataset


class ImageSequence(keras.utils.PyDataset):
    """Batches of (images float32 (B, H, W, 3) in [0, 1], labels) from files or a uint8 pool.

    ``items``: a list of image paths, or a uint8 array (N, H, W, 3). ``n_samples`` per epoch may
    exceed ``len(items)`` (a synthetic pool is cycled). Shuffled per epoch when ``shuffle``; the
    random transforms of a batch depend only on (seed, epoch, batch index), so any worker order
    gives the same data.
    """

    def __init__(self, items, labels: np.ndarray, batch_size: int, image_size: tuple[int, int],
                 augment: Augment | None, seed: int, n_samples: int, shuffle: bool = True,
                 workers: int = 1, use_multiprocessing: bool = False, max_queue_size: int = 10,
                 rescale: bool = True):
        super().__init__(workers=workers, use_multiprocessing=use_multiprocessing,
                         max_queue_size=max_queue_size)
        self.items = items
        self.labels = np.asarray(labels)
        self.from_files = not isinstance(items, np.ndarray)
        self.batch_size = int(batch_size)
        self.image_size = tuple(image_size)
        self.augment = augment
        self.seed = int(seed)
        self.n_samples = int(n_samples)
        self.shuffle = shuffle
        self.rescale = rescale  # False: uint8 batches (the model rescales them)
        self.epoch = 0
        self.order = self._order(0)

    def _order(self, epoch: int) -> np.ndarray:
        idx = np.arange(self.n_samples) % len(self.labels)
        if self.shuffle:
            np.random.default_rng((self.seed, epoch)).shuffle(idx)
        return idx

    def __len__(self) -> int:
        return math.ceil(self.n_samples / self.batch_size)

    def __getitem__(self, i: int):
        ids = self.order[i * self.batch_size:(i + 1) * self.batch_size]
        if self.from_files:
            raw = load_images([self.items[j] for j in ids], self.image_size)
        else:
            raw = self.items[ids]
        rng = np.random.default_rng((self.seed, self.epoch, i)) if self.augment is not None else None
        return prepare_batch(raw, rng, self.augment, self.rescale), self.labels[ids]

    def on_epoch_end(self):
        self.epoch += 1
        self.order = self._order(self.epoch)


def image_dataset(plan: ImagePlan) -> Dataset:
    """The ``helpers.data.loaders.Dataset`` of an image workload: ``plan``'s training (and validation) generators.

    Training batches are shuffled and augmented (when the plan says so); validation ones are neither.
    """
    train = ImageSequence(plan.train_items, plan.train_labels, plan.batch_size, plan.image_size, plan.augment,
                          plan.seed, plan.n_train, shuffle=True, rescale=plan.rescale, **plan.pipe)
    val = (ImageSequence(plan.val_items, plan.val_labels, plan.batch_size, plan.image_size, None, plan.seed + 1,
                         plan.n_val, shuffle=False, rescale=plan.rescale, **plan.pipe) if plan.n_val else None)
    return Dataset(None, None, None, None, plan.source, plan.detail, plan.n_classes, plan.info, train=train,
                   val=val, steps_per_epoch=len(train), n_train=plan.n_train, n_val=plan.n_val)
