"""A training step on a GPU predicted layer by layer: each layer's time read from its kind's profile (measured on
that GPU, ``benchmarks/layer_profile.py``), summed, plus the backend's per-step cost fitted on whole models.

**What a layer costs** (``layer_rows``, from the built model alone, no device): per training step at batch ``b``,
its launch units ``n`` (1; a recurrent layer one per time step, both directions of a Bidirectional), its training
FLOPs ``3 x forward x b`` (``helpers.measure.flops_analytic``), the activations it reads and writes
``(inputs + outputs) x b x 4`` bytes, and its weights ``params x 4`` bytes (read, written and updated by Adam).

**A kind's profile** (``fit_profiles``): per backend, precision and kind, the roofline in sum form fitted by
non-negative least squares on the relative error over the kind's measured shapes and batches::

    t_layer = c_n x n + c_f x FLOPs + c_a x activation bytes + c_w x weight bytes

``c_n`` is the per-launch cost (the floor of small layers), ``1 / c_f`` the FLOP rate the kind reaches, ``1 / c_a``
and ``1 / c_w`` the bandwidths: an unprofiled shape is interpolated on the kind's own rates, never guessed. A
kind measured in float32 only is read from its float32 profile under mixed_bfloat16 (said). A kind no profile
holds (a custom layer, a kind the sweep lacks) is read from the backend's *generic* profile, fitted on every
kind's measurements pooled, and named with its share of the step.

**A model's step** (``step_parts``): ``S`` = the sum of its arithmetic layers' times (the ``MATMUL`` kinds, and
any kind no profile holds), ``L`` = its layers counted; the backend's constants are fitted on whole models
(``fit_steps``: the array-fed workloads' measured steps and the host probes', ``helpers.predict.zoo.PROBES``)::

    t_step = max(a_b, h_b x host bytes) + s_b x S + k_b x L

``a_b``: the fit loop's own cost a step, during which the batch's copy from the host runs (the probes: a step
costs the larger of the two, not their sum); ``k_b``: each layer's cost in a network beyond its arithmetic (XLA
fuses the normalisation, elementwise, pooling and reshape layers into their neighbours, so their times measured
alone are not summed; eager PyTorch spends a layer's dispatch on each).

**The interval** (``interval``): the held-out errors' 10th and 90th percentiles
(``helpers.predict.gpu.interval_quantiles``, the split-conformal correction): of the workloads left out one at a
time where every kind is profiled, pooled over the backends (15-16 cells a backend make the corrected percentiles
their extremes); widened towards the errors that held-out kinds earned (each kind's profile left out in turn, the
models holding it predicted from the generic profile) by the unprofiled share of the step.
Never narrower than the errors say.

    rows = layer_rows(model, batch)
    prof = fit_profiles(measurements)        # {(backend, precision, kind): coefficients}
    parts = step_parts(rows, prof, backend, precision)   # {"sum_s", "unprofiled": {kind: s}, ...}
"""

from __future__ import annotations

import math

from helpers.record import fields as F

GENERIC = "*"  # the pooled profile's kind
FEATURES = ("units", "flops", "bytes")
SKIP = {"InputLayer", "Scale"}  # the sweep's Scale: part of the baseline each measurement had taken off
# the kinds whose profiled time is summed: those doing a layer's arithmetic (a weight matrix, a kernel, a
# recurrence, a table's gather). The others (normalisation, activations, pooling, merges, dropout, reshapes) are
# counted as layers only: XLA fuses them into their neighbours, eager PyTorch spends a layer's overhead on each
MATMUL = frozenset({"Dense", "EinsumDense", "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
                    "Conv3DTranspose", "DepthwiseConv1D", "DepthwiseConv2D", "SeparableConv1D", "SeparableConv2D",
                    "LSTM", "GRU", "SimpleRNN", "MultiHeadAttention", "Embedding"})
RNN = ("LSTM", "GRU", "SimpleRNN")
# a kind computing as another does: read from that one's profile (an elementwise function of one tensor)
ALIASES = {"ReLU": "Activation", "LeakyReLU": "Activation", "ELU": "Activation", "Softmax": "Activation",
           "PReLU": "Activation", "GlobalMaxPooling2D": "GlobalAveragePooling2D",
           "GlobalAveragePooling3D": "GlobalAveragePooling2D", "AveragePooling1D": "MaxPooling1D",
           "SpatialDropout1D": "Dropout", "SpatialDropout2D": "Dropout", "GaussianNoise": "Dropout",
           "Subtract": "Add", "Average": "Add", "Maximum": "Add", "Minimum": "Add"}
# the traffic of a training step (4-byte words): activations written forward and read twice backward (x 3); the
# weights read forward and backward, the gradient written, Adam's value and two slots read and written (x 8)
ACT_PASSES, WEIGHT_PASSES = 3, 8
FLOOR_S = 20e-6  # relative errors: a measurement under this counts as this (the timer's resolution at that size)


def _units(layer, ins) -> int:
    kind = type(layer).__name__
    try:
        t = int(ins[1]) if kind in RNN + ("Bidirectional",) and ins is not None and len(ins) >= 3 else 1
    except (TypeError, ValueError):
        t = 1
    return 2 * t if kind == "Bidirectional" else t


def _kind(layer) -> str:
    kind = type(layer).__name__
    if kind == "Bidirectional":
        return type(layer.forward_layer).__name__
    return kind


def _walk(model):
    import keras

    for layer in model.layers:
        if isinstance(layer, keras.Model):
            yield from _walk(layer)
        else:
            yield layer


def layer_rows(model, batch: int) -> list[dict]:
    """One row per computing layer of the built ``model`` at ``batch`` (module docstring): name, kind and the
    profile's features."""
    from helpers.measure import flops_analytic as fa

    rows = []
    for layer in _walk(model):
        kind = _kind(layer)
        if type(layer).__name__ in SKIP:
            continue
        notes: list = []
        fwd = fa.layer_flops(layer, notes) or 0.0
        ins, outs = fa.layer_io(layer)
        elems = fa.shape_elems(ins) + fa.shape_elems(outs)
        params = sum(math.prod(int(d) for d in v.shape) for v in layer.trainable_weights)
        rows.append({"name": layer.name, "kind": ALIASES.get(kind, kind), "units": _units(layer, ins),
                     "flops": 3.0 * fwd * batch, "bytes": 4.0 * (ACT_PASSES * elems * batch + WEIGHT_PASSES * params),
                     **({"computes_like": kind} if kind in ALIASES else {})})
    return rows


def roofs(gpu: str, precision: str) -> list[float]:
    """The least each feature can cost on ``gpu`` (seconds per unit): nothing a launch, the datasheet's peak FLOP
    rate and memory bandwidth (``params/peaks.yaml``): no fitted rate may pass the datasheet's."""
    from helpers.measure import peaks

    peak = peaks.gpu_peak(gpu, precision)[0] or peaks.gpu_peak(gpu, "float32")[0]
    bw = peaks.gpu_memory_bandwidth(gpu)
    if not peak or not bw:
        raise ValueError(f"no datasheet peak or bandwidth for {gpu!r} in params/peaks.yaml")
    return [0.0, 1.0 / peak, 1.0 / bw]


def _fit(rows: list[dict], ys: list[float], lower: list[float]) -> list[float]:
    import numpy as np
    from scipy.optimize import lsq_linear

    x = np.array([[r[f] for f in FEATURES] for r in rows], dtype=float)
    y = np.array(ys, dtype=float)
    w = 1.0 / np.maximum(y, FLOOR_S)
    used = x.max(axis=0) > 0  # a feature the kind never has (a reshape's FLOPs) is fitted as nothing
    scale = x.max(axis=0)[used]  # columns of one size: FLOPs and bytes are 1e9 where units are 1
    lb = np.array(lower)[used] * scale
    sol = lsq_linear((x[:, used] / scale) * w[:, None], y * w, bounds=(lb, np.full(len(lb), np.inf)), method="bvls")
    coef = iter(sol.x / scale)
    return [float(next(coef)) if u else 0.0 for u in used]


def profile_time(coef: list[float], row: dict) -> float:
    return sum(c * row[f] for c, f in zip(coef, FEATURES))


def fit_profiles(measured: list[dict], gpu: str, leave_out: str | None = None) -> dict:
    """``{(backend, precision, kind): coefficients}`` from ``measured`` (rows of features with ``step_s``,
    ``backend``, ``precision``, ``kind``), and ``(backend, precision, GENERIC)`` fitted on every kind pooled.
    ``leave_out``: a kind fitted on nothing (its rows out of the pool too): the held-out-kind check."""
    groups: dict[tuple, list] = {}
    for m in measured:
        if m["kind"] == leave_out:
            continue
        groups.setdefault((m["backend"], m["precision"], m["kind"]), []).append(m)
        groups.setdefault((m["backend"], m["precision"], GENERIC), []).append(m)
    return {k: _fit(v, [m[F.STEP_S] for m in v], roofs(gpu, k[1])) for k, v in groups.items() if len(v) >= 2}


def layer_time(prof: dict, backend: str, precision: str, row: dict) -> tuple[float, str]:
    """(seconds, where from): the kind's profile at ``precision``, else its float32 one, else the generic."""
    for key, src in (((backend, precision, row["kind"]), "profiled"),
                     ((backend, "float32", row["kind"]), "profiled in float32"),
                     ((backend, precision, GENERIC), "unprofiled")):
        if key in prof:
            return profile_time(prof[key], row), src
    raise ValueError(f"no layer profile of backend {backend!r}")


def step_parts(rows: list[dict], prof: dict, backend: str, precision: str) -> dict:
    """The sum of the arithmetic layers' times (``MATMUL`` kinds and kinds no profile holds), the layers counted,
    and the unprofiled kinds' part (seconds per kind, layers)."""
    total, unprof, n_unprof, fp32 = 0.0, {}, 0, set()
    for r in rows:
        t, src = layer_time(prof, backend, precision, r)
        if src == "unprofiled":
            unprof[r["kind"]] = unprof.get(r["kind"], 0.0) + t
            n_unprof += 1
        elif r["kind"] not in MATMUL:
            continue  # fused or per-layer overhead: counted by the step's per-layer term
        elif src == "profiled in float32" and precision != "float32":
            fp32.add(r["kind"])
        total += t
    return {"sum_s": total, "layers": len(rows), "unprofiled": unprof, "unprofiled_layers": n_unprof,
            "float32_profiles": sorted(fp32)}


def input_bytes(model, batch: int) -> int:
    """Bytes of one batch as the host copies it (numpy float32, token ids int32)."""
    return int(sum(math.prod(int(d) for d in t.shape[1:] if d is not None) * 4 for t in model.inputs) * batch)


# ------------------------------------------------------------------ the whole-model fit, held-out errors

STEP_TERMS = ("a", "s", "h", "k")  # t_step = max(a, h x host bytes) + s x S + k x layers
_SCALE = (1e-3, 1.0, 1e-10, 1e-5)  # each term's size on a GPU: the fit works on numbers near 1


def step_time(c: list[float], sum_s: float, layers: int, in_bytes: float) -> float:
    a, s, h, k = c
    return max(a, h * in_bytes) + s * sum_s + k * layers


def fit_steps(models: list[dict], prof: dict) -> dict:
    """``{backend: [a, s, h, k]}`` fitted on ``models`` (the workloads and the host probes), non-negative, on
    log(predicted / measured step)."""
    import numpy as np
    from scipy.optimize import least_squares

    out = {}
    for b in sorted({m["backend"] for m in models}):
        ms = [m for m in models if m["backend"] == b]
        parts = [step_parts(m["rows"], prof, b, m["precision"]) for m in ms]
        x = np.array([[p["sum_s"], p["layers"], m["in_bytes"]] for p, m in zip(parts, ms)], dtype=float)
        y = np.array([m[F.STEP_S] for m in ms])

        def res(z, x=x, y=y):
            a, s, h, k = np.asarray(z) * _SCALE
            return np.log(np.maximum(np.maximum(a, h * x[:, 2]) + s * x[:, 0] + k * x[:, 1], 1e-12) / y)

        best = None
        for z0 in ((1.0, 1.0, 1.0, 1.0), (0.5, 0.5, 2.0, 5.0), (2.0, 2.0, 0.5, 0.2)):  # the kink of the max: starts
            sol = least_squares(res, z0, bounds=(0.0, np.inf), method="trf", x_scale=1.0)
            if best is None or sol.cost < best.cost - 1e-12:
                best = sol
        out[b] = [float(v * sc) for v, sc in zip(best.x, _SCALE)]
    return out


def predict_step(prof: dict, steps: dict, rows: list[dict], backend: str, precision: str, in_bytes: int) -> dict:
    """The step in seconds and what it rests on (``step_parts``: the unprofiled kinds' share)."""
    if backend not in steps:
        raise ValueError(f"backend {backend!r}: no whole-model measurement to fit its per-step cost on")
    parts = step_parts(rows, prof, backend, precision)
    c = steps[backend]
    t = step_time(c, parts["sum_s"], parts["layers"], in_bytes)
    unp = c[1] * sum(parts["unprofiled"].values()) + c[3] * parts["unprofiled_layers"]
    share = unp / t if t > 0 else 0.0
    return {F.STEP_S: t, "unprofiled": parts["unprofiled"], "unprofiled_share": share,
            "float32_profiles": parts["float32_profiles"]}


# ------------------------------------------------------------------ the committed fit

LEVEL = 0.80


def quantiles(log_errs: list[float]) -> list[float]:
    from helpers.predict.gpu import interval_quantiles

    return list(interval_quantiles(log_errs))


def interval(fit: dict, backend: str, share: float) -> tuple[float, float]:
    """(low, high) of log(measured / predicted step): the backend's held-out quantiles, widened towards the
    held-out kinds' by the unprofiled share of the step (never narrower than either says for its part)."""
    lo, hi = fit["log_q"][backend]
    klo, khi = fit["kind_log_q"]
    w = min(max(share, 0.0), 1.0)
    return min(lo, (1 - w) * lo + w * klo), max(hi, (1 - w) * hi + w * khi)


def profiles_of(fit: dict) -> dict:
    return {tuple(k.split("|")): v for k, v in fit["profiles"].items()}


def predicted(fit: dict, rows: list[dict], backend: str, precision: str, batch: int, in_bytes: int) -> dict:
    """One prediction, never without its interval and GPU: step and samples/s, the interval's ends, the
    unprofiled kinds (seconds each) and their share of the step."""
    p = predict_step(profiles_of(fit), fit["steps"], rows, backend, precision, in_bytes)
    lo, hi = interval(fit, backend, p["unprofiled_share"])
    t = p[F.STEP_S]
    return {"gpu": fit["gpu"], "backend": backend, "precision": precision, "batch": int(batch), F.STEP_S: t,
            F.SAMPLES_PER_S: batch / t, "samples_per_s_low": batch / (t * math.exp(hi)),
            "samples_per_s_high": batch / (t * math.exp(lo)), "interval": fit["level"], "mark": "predicted",
            "unprofiled": p["unprofiled"], "unprofiled_share": p["unprofiled_share"],
            "float32_profiles": p["float32_profiles"]}


FIT_FILE = "gpu_layers_{gpu}.json"  # under data/: benchmarks/predict_check.py --write


def fit_path(slug: str):
    from helpers.paths import PROJECT_ROOT

    return PROJECT_ROOT / "data" / FIT_FILE.format(gpu=slug)


def committed_fits() -> list[dict]:
    """Every committed layer fit (one per GPU kind profiled), the GPU's name in each."""
    import json

    from helpers.paths import PROJECT_ROOT

    return [json.loads(p.read_text()) for p in sorted((PROJECT_ROOT / "data").glob(FIT_FILE.format(gpu="*")))]


def share_text(x: float) -> str:
    """An unprofiled share of the step in words: '12%', 'under 1%' (never a bare '0%' for a kind that is there)."""
    return f"{x:.0%}" if x >= 0.005 else "under 1%"
