"""A bare Keras training script: the reference the suite's timings are checked against.

    KERAS_BACKEND=jax python benchmarks/bare_keras.py cnn_cifar10 --n 10000 --batch 1000 --epochs 5
    KERAS_BACKEND=torch python benchmarks/bare_keras.py resnet50 --shape 224,224,3 --classes 1000 \
        --n 3072 --batch 256 --epochs 3 --precision mixed_bfloat16 --device gpu

No suite code in the timed path: the model is built from the registry's builder (so it is the same
network, compiled with the workload's optimiser and loss, ``jit_compile`` left to Keras' ``auto``),
data is plain numpy (fed through Keras' own data adapter, as the suite does), timing is a
perf_counter around ``fit`` after a warm-up epoch, and the last loss is read back (a device sync)
before the clock stops. ``--data device`` converts the arrays to backend tensors first (on the
device) to measure what the numpy data adapter costs. Prints one JSON line (the last line of stdout).

The backend comes from ``KERAS_BACKEND``; the device from the environment (``CUDA_VISIBLE_DEVICES``,
``JAX_PLATFORMS``). ``--device`` only checks where a Keras tensor really lives and exits with an
error when it is not the one asked for (a GPU figure is never taken on the CPU).
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("--n", type=int, default=10000, help="training samples per epoch")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=5, help="timed epochs after one warm-up epoch")
    ap.add_argument("--precision", default="float32", help="Keras dtype policy")
    ap.add_argument("--shape", default="32,32,3", help="input shape H,W,C (resnet50: image_size is H)")
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--augment", action="store_true", help="vgg_cifar10: keep the in-model augmentation")
    ap.add_argument("--augment-impl", choices=("matmul", "keras"), default="matmul",
                    help="vgg_cifar10 with --augment: the shift layer")
    ap.add_argument("--data", choices=("numpy", "device"), default="numpy",
                    help="numpy (as the suite) or backend tensors placed on the device before fit")
    ap.add_argument("--device", choices=("any", "cpu", "gpu"), default="any",
                    help="fail unless Keras tensors live on this device")
    args = ap.parse_args()
    import keras
    import numpy as np

    from helpers import workloads
    from helpers.point.device import tensor_placement

    used = tensor_placement(keras.backend.backend())[0]
    if args.device != "any" and used != args.device:
        raise SystemExit(f"error: --device {args.device} asked but Keras ({keras.backend.backend()}) "
                         f"tensors live on {used}")
    keras.utils.set_random_seed(0)
    keras.mixed_precision.set_global_policy(args.precision)
    shape = tuple(int(s) for s in args.shape.split(","))
    rng = np.random.default_rng(0)
    x = rng.random((args.n, *shape), dtype=np.float32)
    y = rng.integers(0, args.classes, size=args.n)
    params = {"precision": args.precision, "jit_compile": "auto", "batch_size": args.batch,
              "augment": args.augment, "augment_impl": args.augment_impl, "image_size": shape[0]}
    w = workloads.get(args.workload)
    model = w.build(params)
    model.compile(**w.compile_args(params))
    if args.data == "device":
        x = keras.ops.convert_to_tensor(x)
        y = keras.ops.convert_to_tensor(y)
    t0 = time.perf_counter()
    h = model.fit(x, y, batch_size=args.batch, epochs=1, verbose=0)  # warm-up: compilation
    float(h.history["loss"][-1])
    warm = time.perf_counter() - t0
    epoch_s = []

    class Epochs(keras.callbacks.Callback):  # per-epoch times too (a sync per epoch end, as the suite's)
        def on_epoch_begin(self, epoch, logs=None):
            self.t = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            float((logs or {}).get("loss", 0.0))
            epoch_s.append(time.perf_counter() - self.t)

    t0 = time.perf_counter()
    h = model.fit(x, y, batch_size=args.batch, epochs=args.epochs, verbose=0, callbacks=[Epochs()])
    float(h.history["loss"][-1])
    dt = time.perf_counter() - t0
    med = statistics.median(epoch_s)
    print(json.dumps({"impl": f"bare-keras-{keras.backend.backend()}", "backend": keras.backend.backend(),
                      "workload": args.workload, "precision": args.precision, "batch": args.batch,
                      "samples_per_s": args.n * args.epochs / dt, "s_per_epoch": dt / args.epochs,
                      "epoch_s": epoch_s, "epoch_median_samples_per_s": args.n / med,
                      "n": args.n, "epochs": args.epochs, "warmup_epoch_s": warm, "data": args.data,
                      "augment": args.augment, "shape": list(shape), "device_used": used,
                      "model_params": int(model.count_params()), "keras": keras.__version__,
                      "final_loss": float(h.history["loss"][-1])}))


if __name__ == "__main__":
    main()
