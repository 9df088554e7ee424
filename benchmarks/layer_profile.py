"""Measure, on a GPU, what the layer-by-layer step model (``helpers.predict.layers``) is fitted and checked on.

    python3 benchmarks/layer_profile.py layers --backend jax --precision float32 --budget 120 --out F.jsonl
    python3 benchmarks/layer_profile.py models --backend torch --set zoo,workloads --runs 2 --budget 200 --out F.jsonl

``layers``: each shape of ``helpers.predict.sweep.SWEEP`` at each of its batches, a one-layer model's training
step (forward, backward, Adam's update) on data already on the device, timed beside its baseline (the same input
through the trainable ``Scale`` alone) and the baseline taken off. The step is Keras' own for the backend, written
out as its guides write a custom loop: on JAX ``model.stateless_call`` + ``jax.value_and_grad`` +
``optimizer.stateless_apply`` in one ``jax.jit`` (what Keras' JAX trainer compiles), on PyTorch the eager
forward, ``backward()`` and ``optimizer.apply``. Each figure: the median of 3 timed windows of n steps, n chosen so
a window lasts about 0.05 s (at least 5 steps), after 2 warm-up steps; the baseline likewise, alternating.

``models``: whole models through ``model.fit`` on numpy arrays, as the suite's notebooks feed them (the
host-to-device copy of each batch included): the validation zoo (``helpers.predict.zoo``) and the workloads fed
from arrays (``helpers.workloads``, their defaults, synthetic data of their shapes); ``--set fresh``: the fresh
set (``helpers.predict.zoo.FRESH``, each model at its two batches, every first batch before any second). Each run
is one ``fit`` call of 1 + ``--epochs`` epochs of ``--steps`` steps timed by the suite's epoch timer
(``helpers.measure.timing.make_epoch_timer``: a device sync at each epoch's end); the first epoch (compilation)
is dropped and the run's step is the median of the others. ``--runs`` fit calls on the same model.

``probes``: the host probes (``helpers.predict.zoo.PROBES``: almost no compute, batches of 6 KB to 154 MB) timed
as ``models`` times a model: what the backend's fit loop costs a step and the host copy costs a byte.

One backend per process (Keras reads KERAS_BACKEND once). Shapes are taken in the sweep's order, every kind
before a kind's second shape (round robin), so a cut budget leaves every kind profiled. Each row is written to
``--out`` (JSON lines) as it is measured, with the GPU, driver and library versions: a cut-off call keeps what it
measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

WINDOW_S = 0.05
WINDOWS = 3


def _args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=("layers", "models", "probes"))
    p.add_argument("--backend", required=True, choices=("jax", "torch", "tensorflow"))
    p.add_argument("--precision", default="float32", choices=("float32", "mixed_bfloat16"))
    p.add_argument("--budget", type=float, default=120.0, help="seconds: start nothing after them")
    p.add_argument("--out", required=True)
    p.add_argument("--set", default="zoo,workloads", help="models: zoo, workloads, fresh (comma-separated)")
    p.add_argument("--only", default="", help="models: comma-separated names")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-scale", type=float, default=1.0, help="models: the batch times this")
    p.add_argument("--kinds", default="", help="layers: comma-separated kinds (default: all), taken in this order")
    p.add_argument("--skip", default="", help="layers: a JSON-lines file of rows measured before: not again")
    return p.parse_args(argv)


def _provenance(backend: str, precision: str) -> dict:
    import keras

    info = {"backend": backend, "precision": precision, "keras": keras.__version__, "date": time.strftime(
        "%Y-%m-%d"), "host_cpus": os.cpu_count()}
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(h)
        info.update(gpu=name.decode() if isinstance(name, bytes) else name,
                    driver=pynvml.nvmlSystemGetDriverVersion())
    except Exception as exc:  # no NVML: the GPU unnamed, said
        info.update(gpu="", gpu_note=f"NVML: {exc}")
    if backend == "jax":
        import jax

        info.update(jax=jax.__version__, device=str(jax.devices()[0]))
    elif backend == "torch":
        import torch

        info.update(torch=torch.__version__, cuda=torch.version.cuda,
                    device=torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu")
    return info


def _timed(step, sync) -> tuple[float, int]:
    """(seconds a step: the median of WINDOWS windows, steps a window) after 2 warm-up steps."""
    for _ in range(2):
        step()
    sync()
    t0 = time.perf_counter()
    step()
    sync()
    one = max(time.perf_counter() - t0, 1e-6)
    n = max(5, min(2000, int(WINDOW_S / one)))
    out = []
    for _ in range(WINDOWS):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        sync()
        out.append((time.perf_counter() - t0) / n)
    return statistics.median(out), n


def _stepper(model, x, y, backend: str):
    """(step, sync): one training step of ``model`` on device-resident ``x``, ``y`` (mean squared error, Adam)."""
    import keras

    opt = keras.optimizers.Adam(1e-4)
    opt.build(model.trainable_variables)
    if backend == "jax":
        import jax
        import jax.numpy as jnp

        def loss_fn(tv, ntv, xb, yb):
            yp, ntv2 = model.stateless_call(tv, ntv, xb, training=True)
            return jnp.mean(jnp.square(yp.astype(jnp.float32) - yb)), ntv2

        grad = jax.value_and_grad(loss_fn, has_aux=True)

        @jax.jit
        def train(state, xb, yb):
            tv, ntv, ov = state
            (loss, ntv2), g = grad(tv, ntv, xb, yb)
            tv2, ov2 = opt.stateless_apply(ov, g, tv)
            return (tv2, ntv2, ov2), loss

        box = {"s": ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables],
                     [v.value for v in opt.variables]), "loss": None}

        def step():
            box["s"], box["loss"] = train(box["s"], x, y)

        def sync():
            jax.block_until_ready(box["s"])
        return step, sync
    import torch

    weights = model.trainable_variables

    def step():
        yp = model(x, training=True)
        loss = torch.mean(torch.square(yp.float() - y))
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            opt.apply([v.value.grad for v in weights], weights)

    return step, torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)


def _device_arrays(spec_or_shape, batch: int, out_shape, backend: str, dtype="float32", vocab=0):
    import numpy as np

    rng = np.random.default_rng(0)
    shape = (batch, *spec_or_shape)
    x = rng.integers(0, vocab, size=shape).astype(np.int32) if dtype.startswith("int") else \
        rng.random(shape, dtype=np.float32)
    y = np.zeros((batch, *out_shape), np.float32)
    if backend == "jax":
        import jax

        return jax.device_put(x), jax.device_put(y)
    import torch

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.as_tensor(x, device=dev), torch.as_tensor(y, device=dev)


def _round_robin(specs: list[dict]) -> list[dict]:
    by: dict[str, list] = {}
    for s in specs:
        by.setdefault(s["kind"], []).append(s)
    out, i = [], 0
    while any(i < len(v) for v in by.values()):
        out += [v[i] for v in by.values() if i < len(v)]
        i += 1
    return out


def layers(a, prov, write) -> int:
    import keras

    from helpers.predict import sweep

    kinds = list(filter(None, a.kinds.split(",")))
    specs = _round_robin(sorted((s for s in sweep.SWEEP if not kinds or s["kind"] in kinds),
                                key=lambda s: kinds.index(s["kind"]) if kinds else 0))
    seen = set()
    if a.skip and Path(a.skip).is_file():
        rows = (json.loads(ln) for ln in Path(a.skip).read_text().splitlines() if ln.strip())
        seen = {(r["key"], r["backend"], r["precision"]) for r in rows if "error" not in r}
    t_end = time.monotonic() + a.budget
    base_cache: dict[tuple, float] = {}
    done = 0
    for spec in specs:
        for batch in spec["batches"]:
            if (sweep.key(spec, batch), a.backend, a.precision) in seen:
                continue
            if time.monotonic() > t_end:
                print(f"budget reached: {done} rows", flush=True)
                return done
            t0 = time.monotonic()
            try:
                keras.backend.clear_session()
                model = sweep.build(spec)
                x, y = _device_arrays(spec["input"], batch, model.output.shape[1:], a.backend, spec["dtype"],
                                      spec["vocab"])
                step, sync = _stepper(model, x, y, a.backend)
                bkey = (tuple(spec["input"]), spec["dtype"], batch)
                raw, n = _timed(step, sync)
                base_model = sweep.build(spec, baseline=True)
                bx, by = _device_arrays(spec["input"], batch, base_model.output.shape[1:], a.backend, spec["dtype"],
                                        spec["vocab"])
                bstep, bsync = _stepper(base_model, bx, by, a.backend)
                base, _ = _timed(bstep, bsync)
                base_cache[bkey] = min(base, base_cache.get(bkey, base))
                raw2, _ = _timed(step, sync)  # the layer again after its baseline: alternated, the lower kept
                raw = min(raw, raw2)
                row = {"what": "layer", "key": sweep.key(spec, batch), "kind": spec["kind"], "spec": spec,
                       "batch": batch, "raw_s": raw, "base_s": base_cache[bkey],
                       "step_s": max(raw - base_cache[bkey], 0.0), "steps_a_window": n, "windows": WINDOWS,
                       "wall_s": round(time.monotonic() - t0, 2), **prov}
            except Exception as exc:  # a shape a backend refuses: said, the sweep goes on
                row = {"what": "layer", "key": sweep.key(spec, batch), "kind": spec["kind"], "spec": spec,
                       "batch": batch, "error": f"{type(exc).__name__}: {str(exc)[:300]}", **prov}
            write(row)
            done += 1
            print(f"{row['key']:70} {row.get('step_s', float('nan')) * 1e6:9.1f} us "
                  f"(raw {row.get('raw_s', float('nan')) * 1e6:.1f}, base {row.get('base_s', float('nan')) * 1e6:.1f})"
                  f" {row.get('error', '')}", flush=True)
    return done


def _synthetic(model, loss: str, n: int):
    import keras
    import numpy as np

    rng = np.random.default_rng(0)
    inp = model.inputs[0]
    shape = tuple(int(d) for d in inp.shape[1:])
    first = next((ly for ly in model.layers if not isinstance(ly, keras.layers.InputLayer)), None)
    if "int" in str(inp.dtype) or isinstance(first, keras.layers.Embedding):
        vocab = int(getattr(first, "input_dim", 256))
        x = rng.integers(0, vocab, size=(n, *shape)).astype(np.int32)
    else:
        x = rng.random((n, *shape), dtype=np.float32)
    out = tuple(int(d) for d in model.outputs[0].shape[1:])
    k = out[-1] if out else 1
    if "sparse" in loss:
        y = rng.integers(0, k, size=(n, *out[:-1])).astype(np.int64)
    elif "categorical" in loss:
        y = np.eye(k, dtype=np.float32)[rng.integers(0, k, size=(n, *out[:-1]))]
    elif "binary" in loss:
        y = (rng.random((n, *out)) > 0.5).astype(np.float32)
    else:
        y = rng.standard_normal((n, *out)).astype(np.float32)
    return x, y


def _loss_name(loss) -> str:
    return loss if isinstance(loss, str) else getattr(loss, "name", type(loss).__name__).lower()


def _model_list(a) -> list[tuple]:
    from helpers.predict import zoo
    from helpers.predict.gpu import HOST_PIPELINE
    from helpers.workloads import names

    out = []
    sets = a.set.split(",")
    if "zoo" in sets:
        out += [("zoo", n) for n in zoo.ZOO]
    if "workloads" in sets:
        out += [("workload", n) for n in names() if n not in HOST_PIPELINE and n != "custom"]
    out = [(s, n, None) for s, n in out]
    if "fresh" in sets:  # each at its two batches: every model's first before any second (a cut budget)
        out += [("fresh", n, b[i]) for i in (0, 1) for n, (_, b) in zoo.FRESH.items()]
    only = set(filter(None, a.only.split(",")))
    return [(s, n, b) for s, n, b in out if not only or n in only]


def models(a, prov, write) -> int:
    import keras

    from helpers.measure.timing import make_epoch_timer
    from helpers.predict import zoo
    from helpers.workloads import build_model, defaults

    t_end = time.monotonic() + a.budget
    done = 0
    probes = {zoo.probe_name(sh, b): (sh, b) for sh, b in zoo.PROBES}
    todo = [("probe", n, None) for n in probes] if a.what == "probes" else _model_list(a)
    for where, name, fresh_batch in todo:
        if time.monotonic() > t_end:
            print(f"budget reached: {done} models", flush=True)
            break
        t0 = time.monotonic()
        keras.backend.clear_session()
        try:
            if where == "probe":
                shape, batch = probes[name]
                model, loss = zoo.probe(shape)
                model.compile(optimizer="adam", loss=loss)
                params = {"batch_size": batch, "shape": list(shape)}
            elif where == "zoo":
                model, loss, opt, batch = zoo.build(name)
                batch = int(batch * a.batch_scale)
                model.compile(optimizer=opt, loss=loss)
                params = {"batch_size": batch}
            elif where == "fresh":
                model, loss, opt, _ = zoo.build_fresh(name)
                batch = fresh_batch
                model.compile(optimizer=opt, loss=loss)
                params = {"batch_size": batch}
            else:
                params = {**defaults(name), "backend": a.backend, "precision": a.precision}
                params["batch_size"] = batch = int(int(params["batch_size"]) * a.batch_scale)
                model = build_model(name, params)
                loss = _loss_name(model.loss)
            x, y = _synthetic(model, _loss_name(loss), batch * a.steps)
            runs = []
            for _ in range(a.runs):
                timer = make_epoch_timer(printer=lambda *_a, **_k: None, min_epochs=a.epochs + 1)
                model.fit(x, y, batch_size=batch, epochs=a.epochs + 1, verbose=0, callbacks=[timer], shuffle=False)
                steady = [t / a.steps for t in list(timer.train_s)[1:]]
                runs.append({"step_s": statistics.median(steady), "epochs_s": list(timer.train_s)})
            row = {"what": "model", "set": where, "name": name, "batch": batch, "params": params,
                   "step_s": statistics.median(r["step_s"] for r in runs), "runs": runs,
                   "samples_per_s": batch / statistics.median(r["step_s"] for r in runs),
                   "steps_an_epoch": a.steps, "wall_s": round(time.monotonic() - t0, 1), **prov}
        except Exception as exc:
            row = {"what": "model", "set": where, "name": name, **({"batch": fresh_batch} if fresh_batch else {}),
                   "error": f"{type(exc).__name__}: {str(exc)[:400]}", **prov}
        write(row)
        done += 1
        print(f"{where:8} {name:18} b{row.get('batch', 0):<5} {row.get('samples_per_s', float('nan')):12,.0f}/s "
              f"runs {[round(r['step_s'] * 1e3, 3) for r in row.get('runs', [])]} ms  {row.get('wall_s', '')}s "
              f"{row.get('error', '')}", flush=True)
    return done


def main(argv) -> int:
    a = _args(argv)
    os.environ["KERAS_BACKEND"] = a.backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import keras

    keras.mixed_precision.set_global_policy(a.precision)
    prov = _provenance(a.backend, a.precision)
    print(json.dumps(prov), flush=True)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def write(row):
        with out.open("a") as fh:
            fh.write(json.dumps(row, default=str) + "\n")

    n = (layers if a.what == "layers" else models)(a, prov, write)  # models: the probes too
    print(f"{n} rows to {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
