"""A bare training loop in plain JAX (jax.lax / jax.numpy only): the "best bare loop" reference.

    python benchmarks/bare_jax.py vgg_cifar10 --batch 512 --precision float32 --steps 64 --epochs 3
    python benchmarks/bare_jax.py resnet50 --batch 256 --precision mixed_bfloat16 --device gpu
    python benchmarks/bare_jax.py resnet50 --cpu-smoke          # tiny: 64 x 64 images, batch 8, 2 steps

Models:

* ``vgg_cifar10``: the exact layer list of ``helpers/workloads/vgg_cifar10.py`` without augmentation
  (conv 32 same, conv 32 valid, max-pool, dropout 0.25, conv 64 same, conv 64 valid, max-pool,
  dropout 0.25, dense 512, dropout 0.5, dense 10, softmax; 1,250,858 parameters), RMSprop (rho 0.9,
  eps 1e-7, lr 1e-4 with Keras 2's inverse-time decay 1e-6) written by hand.
* ``resnet50``: the standard v1.5 bottleneck ResNet-50 (stride in the 3x3 convolution, as
  torchvision; no convolution biases; 25,557,032 parameters), batch norm in training mode (batch
  statistics, running averages updated), 1000 classes, 224 x 224; SGD with momentum 0.9, lr 0.1.
  (keras.applications.ResNet50 is v1: stride in the first 1x1, convolution biases, 25,636,712
  parameters, about 5% fewer FLOPs.)

Mixed precision (``mixed_bfloat16``): parameters and optimiser state in float32, the forward and
backward passes in bfloat16 (weights and inputs cast inside the step), batch-norm statistics and the
loss in float32. The train step is one ``jax.jit`` with ``donate_argnums`` (parameters, optimiser
state, batch-norm state updated in place). Data: ``--distinct`` synthetic batches put on the device
once, cycled. Timing: ``--warmup`` steps (compilation) then, ``--epochs`` times, ``--steps`` steps
closed by ``block_until_ready``; samples/s is the median over those chunks. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

# ---------------------------------------------------------------- layers (NHWC, HWIO)

def _conv(x, w, stride=1, padding="SAME"):
    import jax

    return jax.lax.conv_general_dilated(x, w.astype(x.dtype), (stride, stride), padding,
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _maxpool(x, size, stride, padding):
    import jax

    # a Python scalar init makes lax pick the differentiable reduce_window_max primitive
    return jax.lax.reduce_window(x, -float("inf"), jax.lax.max, (1, size, size, 1), (1, stride, stride, 1), padding)


def _dense(x, w, b):
    return x @ w.astype(x.dtype) + b.astype(x.dtype)


def _dropout(x, rate, key):
    import jax
    import jax.numpy as jnp

    keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
    return jnp.where(keep, x / jnp.asarray(1.0 - rate, x.dtype), jnp.zeros((), x.dtype))


def _batchnorm(x, p, s, eps=1e-5, momentum=0.9):
    """Training-mode batch norm: statistics in float32 over N, H, W; returns (y, new running stats)."""
    import jax
    import jax.numpy as jnp

    xf = x.astype(jnp.float32)
    mean = jnp.mean(xf, axis=(0, 1, 2))
    var = jnp.mean(jnp.square(xf), axis=(0, 1, 2)) - jnp.square(mean)
    var = jnp.maximum(var, 0.0)
    scale = p["gamma"] * jax.lax.rsqrt(var + eps)
    y = (xf - mean) * scale + p["beta"]
    new = {"mean": momentum * s["mean"] + (1 - momentum) * jax.lax.stop_gradient(mean),
           "var": momentum * s["var"] + (1 - momentum) * jax.lax.stop_gradient(var)}
    return y.astype(x.dtype), new


# ---------------------------------------------------------------- VGG (cifar10_cnn.py)

def _glorot(key, shape, fan_in, fan_out):
    import jax

    lim = (6.0 / (fan_in + fan_out)) ** 0.5
    return jax.random.uniform(key, shape, minval=-lim, maxval=lim)


def vgg_init(key, shape, classes):
    import jax
    import jax.numpy as jnp

    h, w, c = shape
    ks = jax.random.split(key, 6)
    params = {}
    cin = c
    for i, (cout, k) in enumerate(zip((32, 32, 64, 64), ks[:4]), 1):
        params[f"conv{i}"] = {"w": _glorot(k, (3, 3, cin, cout), 9 * cin, 9 * cout),
                              "b": jnp.zeros((cout,))}
        cin = cout
    # same, valid, pool, same, valid, pool
    h1 = ((h - 2) // 2 - 2) // 2
    w1 = ((w - 2) // 2 - 2) // 2
    flat = h1 * w1 * 64
    params["dense1"] = {"w": _glorot(ks[4], (flat, 512), flat, 512), "b": jnp.zeros((512,))}
    params["logits"] = {"w": _glorot(ks[5], (512, classes), 512, classes), "b": jnp.zeros((classes,))}
    return params, {}


def vgg_apply(params, state, x, key, cdtype):
    import jax

    k1, k2, k3 = jax.random.split(key, 3)
    p = params
    x = jax.nn.relu(_conv(x, p["conv1"]["w"], 1, "SAME") + p["conv1"]["b"].astype(cdtype))
    x = jax.nn.relu(_conv(x, p["conv2"]["w"], 1, "VALID") + p["conv2"]["b"].astype(cdtype))
    x = _dropout(_maxpool(x, 2, 2, "VALID"), 0.25, k1)
    x = jax.nn.relu(_conv(x, p["conv3"]["w"], 1, "SAME") + p["conv3"]["b"].astype(cdtype))
    x = jax.nn.relu(_conv(x, p["conv4"]["w"], 1, "VALID") + p["conv4"]["b"].astype(cdtype))
    x = _dropout(_maxpool(x, 2, 2, "VALID"), 0.25, k2)
    x = x.reshape(x.shape[0], -1)
    x = _dropout(jax.nn.relu(_dense(x, p["dense1"]["w"], p["dense1"]["b"])), 0.5, k3)
    return _dense(x, p["logits"]["w"], p["logits"]["b"]), state


# ---------------------------------------------------------------- ResNet-50 v1.5

STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))  # width, blocks, stride of the first block


def _he(key, shape):
    import jax

    fan_in = shape[0] * shape[1] * shape[2]
    return jax.random.normal(key, shape) * (2.0 / fan_in) ** 0.5


def _bn_init(c, zero=False):
    import jax.numpy as jnp

    return ({"gamma": jnp.zeros((c,)) if zero else jnp.ones((c,)), "beta": jnp.zeros((c,))},
            {"mean": jnp.zeros((c,)), "var": jnp.ones((c,))})


def resnet50_init(key, shape, classes):
    import jax
    import jax.numpy as jnp

    keys = iter(jax.random.split(key, 64))
    params, state = {}, {}
    params["stem"] = {"w": _he(next(keys), (7, 7, shape[2], 64))}
    params["stem_bn"], state["stem_bn"] = _bn_init(64)
    cin = 64
    for si, (width, blocks, _stride) in enumerate(STAGES):
        for bi in range(blocks):
            name = f"s{si}b{bi}"
            p, s = {}, {}
            p["c1"] = _he(next(keys), (1, 1, cin, width))
            p["bn1"], s["bn1"] = _bn_init(width)
            p["c2"] = _he(next(keys), (3, 3, width, width))
            p["bn2"], s["bn2"] = _bn_init(width)
            p["c3"] = _he(next(keys), (1, 1, width, 4 * width))
            p["bn3"], s["bn3"] = _bn_init(4 * width)
            if bi == 0:
                p["down"] = _he(next(keys), (1, 1, cin, 4 * width))
                p["down_bn"], s["down_bn"] = _bn_init(4 * width)
            params[name], state[name] = p, s
            cin = 4 * width
    lim = 1.0 / cin ** 0.5
    params["fc"] = {"w": jax.random.uniform(next(keys), (cin, classes), minval=-lim, maxval=lim),
                    "b": jnp.zeros((classes,))}
    return params, state


def resnet50_apply(params, state, x, key, cdtype):
    import jax
    import jax.numpy as jnp

    new = {}
    x = _conv(x, params["stem"]["w"], 2, ((3, 3), (3, 3)))
    x, new["stem_bn"] = _batchnorm(x, params["stem_bn"], state["stem_bn"])
    x = jax.nn.relu(x)
    x = _maxpool(x, 3, 2, ((0, 0), (1, 1), (1, 1), (0, 0)))
    for si, (_width, blocks, stride) in enumerate(STAGES):
        for bi in range(blocks):
            name = f"s{si}b{bi}"
            p, s, ns = params[name], state[name], {}
            st = stride if bi == 0 else 1
            y = _conv(x, p["c1"], 1, "VALID")
            y, ns["bn1"] = _batchnorm(y, p["bn1"], s["bn1"])
            y = jax.nn.relu(y)
            y = _conv(y, p["c2"], st, ((1, 1), (1, 1)))
            y, ns["bn2"] = _batchnorm(y, p["bn2"], s["bn2"])
            y = jax.nn.relu(y)
            y = _conv(y, p["c3"], 1, "VALID")
            y, ns["bn3"] = _batchnorm(y, p["bn3"], s["bn3"])
            if "down" in p:
                sc = _conv(x, p["down"], st, "VALID")
                sc, ns["down_bn"] = _batchnorm(sc, p["down_bn"], s["down_bn"])
            else:
                sc = x
            x = jax.nn.relu(y + sc)
            new[name] = ns
    x = jnp.mean(x.astype(jnp.float32), axis=(1, 2)).astype(cdtype)
    return _dense(x, params["fc"]["w"], params["fc"]["b"]), new


MODELS = {"vgg_cifar10": (vgg_init, vgg_apply), "resnet50": (resnet50_init, resnet50_apply)}


# ---------------------------------------------------------------- optimisers (by hand)

def sgd_momentum(lr=0.1, momentum=0.9):
    import jax
    import jax.numpy as jnp

    def init(params):
        return {"v": jax.tree.map(jnp.zeros_like, params), "t": jnp.zeros((), jnp.int32)}

    def update(params, grads, st):
        v = jax.tree.map(lambda v, g: momentum * v - lr * g, st["v"], grads)  # Keras' SGD form
        params = jax.tree.map(lambda p, v: p + v, params, v)
        return params, {"v": v, "t": st["t"] + 1}

    return init, update


def rmsprop(lr=1e-4, rho=0.9, eps=1e-7, decay=1e-6):
    import jax
    import jax.numpy as jnp

    def init(params):
        return {"ms": jax.tree.map(jnp.zeros_like, params), "t": jnp.zeros((), jnp.int32)}

    def update(params, grads, st):
        lr_t = lr / (1.0 + decay * st["t"].astype(jnp.float32))  # Keras 2's decay: inverse time
        ms = jax.tree.map(lambda m, g: rho * m + (1 - rho) * jnp.square(g), st["ms"], grads)
        params = jax.tree.map(lambda p, g, m: p - lr_t * g / (jnp.sqrt(m) + eps), params, grads, ms)
        return params, {"ms": ms, "t": st["t"] + 1}

    return init, update


OPTIMISERS = {"vgg_cifar10": rmsprop, "resnet50": sgd_momentum}


# ---------------------------------------------------------------- main

def count(tree) -> int:
    import jax

    return int(sum(np.prod(a.shape) for a in jax.tree.leaves(tree)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("workload", choices=sorted(MODELS))
    ap.add_argument("--batch", type=int, default=None, help="default: vgg_cifar10 512, resnet50 256")
    ap.add_argument("--precision", choices=("float32", "mixed_bfloat16"), default="float32")
    ap.add_argument("--image-size", type=int, default=None, help="default: vgg_cifar10 32, resnet50 224")
    ap.add_argument("--classes", type=int, default=None, help="default: vgg_cifar10 10, resnet50 1000")
    ap.add_argument("--steps", type=int, default=20, help="steps per timed chunk ('epoch')")
    ap.add_argument("--epochs", type=int, default=3, help="timed chunks; samples/s is their median")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first (the first compiles)")
    ap.add_argument("--distinct", type=int, default=4, help="distinct synthetic batches kept on the device")
    ap.add_argument("--device", choices=("any", "cpu", "gpu"), default="any",
                    help="fail unless JAX's default device is this one")
    ap.add_argument("--record", default="", metavar="FILE",
                    help="also append the result to FILE, named bare_loops.jsonl, in the run's folder (the report "
                         "sets it beside the suite's ladder: helpers/report/load/bare.py)")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="tiny run on the CPU: images 32 (vgg) / 64 (resnet), batch 8, 2 steps x 2")
    args = ap.parse_args(argv)
    if args.cpu_smoke:
        import os

        os.environ["JAX_PLATFORMS"] = "cpu"
        args.batch = args.batch or 8
        args.image_size = args.image_size or (32 if args.workload == "vgg_cifar10" else 64)
        args.steps, args.epochs, args.warmup, args.distinct = 2, 2, 1, 2
        args.device = "cpu"
    args.warmup = max(1, args.warmup)
    big = args.workload == "resnet50"
    batch = args.batch if args.batch is not None else (256 if big else 512)
    size = args.image_size if args.image_size is not None else (224 if big else 32)
    classes = args.classes if args.classes is not None else (1000 if big else 10)

    import jax
    import jax.numpy as jnp

    dev = jax.devices()[0]
    platform = "gpu" if dev.platform in ("gpu", "cuda", "rocm") else dev.platform
    if args.device != "any" and platform != args.device:
        raise SystemExit(f"error: --device {args.device} asked but JAX's default device is {dev}")
    cdtype = jnp.bfloat16 if args.precision == "mixed_bfloat16" else jnp.float32
    init, apply = MODELS[args.workload]
    opt_init, opt_update = OPTIMISERS[args.workload]()
    shape = (size, size, 3)
    params, bn_state = init(jax.random.PRNGKey(0), shape, classes)
    opt_state = opt_init(params)
    n_params = count(params)

    def loss_fn(params, bn_state, x, y, key):
        logits, new_state = apply(params, bn_state, x.astype(cdtype), key, cdtype)
        logp = jax.nn.log_softmax(logits.astype(jnp.float32))
        loss = -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))
        return loss, new_state

    def train_step(params, opt_state, bn_state, x, y, key):
        key = jax.random.fold_in(key, opt_state["t"])
        (loss, bn_state), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, bn_state, x, y, key)
        params, opt_state = opt_update(params, grads, opt_state)
        return params, opt_state, bn_state, loss

    step = jax.jit(train_step, donate_argnums=(0, 1, 2))
    rng = np.random.default_rng(0)
    xs = [jax.device_put(rng.random((batch, *shape), dtype=np.float32)) for _ in range(args.distinct)]
    ys = [jax.device_put(rng.integers(0, classes, size=batch).astype(np.int32)) for _ in range(args.distinct)]
    key = jax.random.PRNGKey(1)
    jax.block_until_ready((xs, ys))

    t0 = time.perf_counter()
    i = 0
    loss = None
    for _ in range(args.warmup):
        params, opt_state, bn_state, loss = step(params, opt_state, bn_state, xs[i % args.distinct],
                                                 ys[i % args.distinct], key)
        i += 1
        if i == 1:
            jax.block_until_ready(loss)
            compile_s = time.perf_counter() - t0
    jax.block_until_ready((params, loss))
    warm = time.perf_counter() - t0
    chunk_s = []
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        for _ in range(args.steps):
            params, opt_state, bn_state, loss = step(params, opt_state, bn_state, xs[i % args.distinct],
                                                     ys[i % args.distinct], key)
            i += 1
        jax.block_until_ready((params, loss))
        chunk_s.append(time.perf_counter() - t0)
    med = statistics.median(chunk_s)
    result = {"impl": "bare-jax", "workload": args.workload, "precision": args.precision,
              "batch": batch, "samples_per_s": batch * args.steps / med,
              "step_s": med / args.steps, "chunk_s": chunk_s, "steps_per_chunk": args.steps,
              "image_size": size, "classes": classes, "model_params": n_params,
              "first_step_s": compile_s, "warmup_s": warm, "final_loss": float(loss),
              "device_used": platform, "device": str(dev), "jax": jax.__version__,
              "model": "resnet50 v1.5 (torchvision layout)" if big else "cifar10_cnn.py, no augmentation"}
    print(json.dumps(result))
    if args.record:  # beside the run's records: the report's limit section reads it
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from helpers.report.load.bare import append

        where = append(args.record, result, gpu=dev.device_kind if platform == "gpu" else None)
        print(f"recorded in {where}", file=sys.stderr)


if __name__ == "__main__":
    main()
