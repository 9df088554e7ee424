"""A bare Keras training script: the reference the suite's timings are checked against.

    KERAS_BACKEND=jax python benchmarks/bare_keras.py cnn_cifar10 --n 10000 --batch 1000 --epochs 5

No suite code in the timed path: the model is built from the registry's builder (so it is the same
network), data is plain numpy, timing is a perf_counter around ``fit`` after a warm-up epoch, and the
last loss is read back (a device sync) before the clock stops. Prints one JSON line.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=5, help="timed epochs after one warm-up epoch")
    ap.add_argument("--precision", default="float32")
    ap.add_argument("--shape", default="32,32,3")
    ap.add_argument("--classes", type=int, default=10)
    args = ap.parse_args()
    import keras
    import numpy as np

    from helpers import workloads

    keras.mixed_precision.set_global_policy(args.precision)
    shape = tuple(int(s) for s in args.shape.split(","))
    rng = np.random.default_rng(0)
    x = rng.random((args.n, *shape), dtype=np.float32)
    y = rng.integers(0, args.classes, size=args.n)
    params = {"precision": args.precision, "jit_compile": "auto", "batch_size": args.batch}
    model = workloads.get(args.workload).build(params)
    model.compile(**workloads.get(args.workload).compile_args(params))
    model.fit(x, y, batch_size=args.batch, epochs=1, verbose=0)  # warm-up: compilation
    t0 = time.perf_counter()
    h = model.fit(x, y, batch_size=args.batch, epochs=args.epochs, verbose=0)
    float(h.history["loss"][-1])
    dt = time.perf_counter() - t0
    print(json.dumps({"backend": keras.backend.backend(), "samples_per_s": args.n * args.epochs / dt,
                      "s_per_epoch": dt / args.epochs}))


if __name__ == "__main__":
    main()
