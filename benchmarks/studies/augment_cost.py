"""What the in-model augmentation of vgg_cifar10 costs per training step, layer by layer.

    KERAS_BACKEND=jax python benchmarks/studies/augment_cost.py --batches 32,512 --device gpu
    KERAS_BACKEND=torch python benchmarks/studies/augment_cost.py --batches 32 --steps 50

vgg_cifar10 does seed 002's augmentation (10% shifts, horizontal flips) with Keras preprocessing
layers inside the model, so it runs on the training device. This script separates their cost: for
each batch size and precision it trains, with ``fit`` as the suite does, a tiny head (Flatten +
Dense) behind ``none``, ``flip`` (RandomFlip), ``shift`` (Keras' RandomTranslation, 'nearest' fill),
``both``, ``mmshift`` (the suite's RandomShift, two batched matmuls) and ``mmboth``, and then the
whole vgg_cifar10 network with augmentation off, with Keras' shift layer and with the suite's. The
figure is ms per step: the median of timed epochs of ``--steps`` steps after a warm-up epoch
(compilation), timed by the suite's own epoch timer (``helpers.measure.timing``: synced once per epoch by
reading the logs back). Prints one JSON line per configuration and a table at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def _head(keras, aug: str):
    from keras import layers

    from helpers.workloads.shift import RandomShift

    augl = {"none": [], "flip": [layers.RandomFlip("horizontal")],
            "shift": [layers.RandomTranslation(0.1, 0.1, fill_mode="nearest")],
            "both": [layers.RandomTranslation(0.1, 0.1, fill_mode="nearest"), layers.RandomFlip("horizontal")],
            "mmshift": [RandomShift(0.1, 0.1)],
            "mmboth": [RandomShift(0.1, 0.1), layers.RandomFlip("horizontal")]}[aug]
    return keras.Sequential([keras.Input((32, 32, 3)), *augl, layers.Flatten(), layers.Dense(10),
                             layers.Activation("softmax", dtype="float32")])


def _time_fit(model, batch: int, steps: int, epochs: int, np):
    from helpers.measure.timing import make_epoch_timer

    n = batch * steps
    rng = np.random.default_rng(0)
    x = rng.random((n, 32, 32, 3), dtype=np.float32)
    y = rng.integers(0, 10, size=n)
    t0 = time.perf_counter()
    h = model.fit(x, y, batch_size=batch, epochs=1, verbose=0)
    float(h.history["loss"][-1])
    warm = time.perf_counter() - t0
    timer = make_epoch_timer(printer=lambda *_: None)  # the suite's timer: epoch hooks only
    model.fit(x, y, batch_size=batch, epochs=epochs, verbose=0, callbacks=[timer])
    epoch_s = timer.epoch_s
    med = statistics.median(epoch_s)
    return {"ms_per_step": 1000 * med / steps, "samples_per_s": n / med, "warmup_s": warm,
            "epoch_s": epoch_s}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batches", default="32,512")
    ap.add_argument("--precisions", default="float32")
    ap.add_argument("--steps", type=int, default=100, help="steps per timed epoch")
    ap.add_argument("--epochs", type=int, default=3, help="timed epochs (after one warm-up epoch)")
    ap.add_argument("--variants", default="none,flip,shift,both,mmshift,mmboth,vgg-off,vgg-keras,vgg-matmul")
    ap.add_argument("--device", choices=("any", "cpu", "gpu"), default="any")
    args = ap.parse_args()
    import keras
    import numpy as np

    from helpers import workloads
    from helpers.point.device import tensor_placement

    used = tensor_placement(keras.backend.backend())[0]
    if args.device != "any" and used != args.device:
        raise SystemExit(f"error: --device {args.device} asked but Keras tensors live on {used}")
    rows = []
    for precision in args.precisions.split(","):
        keras.mixed_precision.set_global_policy(precision)
        for batch in (int(b) for b in args.batches.split(",")):
            for variant in args.variants.split(","):
                keras.utils.set_random_seed(0)
                if variant.startswith("vgg-"):
                    w = workloads.get("vgg_cifar10")
                    params = {"precision": precision, "augment": variant != "vgg-off", "batch_size": batch,
                              "augment_impl": variant.removeprefix("vgg-").replace("off", "matmul")}
                    model = w.build(params)
                    model.compile(**w.compile_args(params))
                else:
                    model = _head(keras, variant)
                    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
                try:
                    res = _time_fit(model, batch, args.steps, args.epochs, np)
                except Exception as exc:  # noqa: BLE001 - one failing configuration is a row, not the end
                    res = {"error": f"{type(exc).__name__}: {exc}"}
                row = {"backend": keras.backend.backend(), "device_used": used, "precision": precision,
                       "batch": batch, "variant": variant, **res}
                rows.append(row)
                print(json.dumps(row), flush=True)
                keras.backend.clear_session()
    print(f"\n{'precision':<15} {'batch':>5} {'variant':<8} {'ms/step':>9} {'samples/s':>11} {'warm-up s':>9}")
    for r in rows:
        if "error" in r:
            print(f"{r['precision']:<15} {r['batch']:>5} {r['variant']:<8} {r['error']}")
        else:
            print(f"{r['precision']:<15} {r['batch']:>5} {r['variant']:<8} {r['ms_per_step']:>9.2f} "
                  f"{r['samples_per_s']:>11,.0f} {r['warmup_s']:>9.1f}")


if __name__ == "__main__":
    main()
