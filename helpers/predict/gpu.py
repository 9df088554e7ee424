"""A training step on a reference GPU, predicted from what a model gives without a GPU, fitted on the bundled
reference's records (every constant from them, none typed in).

The model of one step, per backend ``b`` (a roofline with an overhead floor):

    t = a_b + k_b x launches + w x weights + params x update bytes / bandwidth + h x input bytes x batch
        + FLOPs x batch / (peak(precision) x e_b)

- ``a_b``: the step's fixed cost on that backend (Keras' fit loop, dispatch, the loss and metrics);
- ``k_b`` per kernel launched (``helpers.predict.shape``: a layer once, a recurrent layer once a time step): the
  launch-bound floor that dominates small models;
- ``w`` per trainable weight tensor (the optimiser's update kernels); the update's memory traffic at the
  datasheet's bandwidth (``params/peaks.yaml``: the memory roof), ``UPDATE_BYTES`` a parameter: its value, gradient
  and optimiser slots read, the value and slots written (4 bytes each; the update's FLOPs per parameter stand for the
  slots: Adam's 12 -> 28 bytes, RMSprop's 8 -> 20, SGD with momentum's 4 -> 12);
- ``h`` per byte of the batch copied from the host (numpy arrays, as Keras fits them);
- the compute term: training FLOPs per sample (forward + backward + the update over the batch) at a fraction
  ``e_b`` of the device's datasheet peak for the precision (``helpers.measure.peaks``).

Fitted by least squares on log step time over the configurations of the reference's GPU records (one machine kind:
the median step of each workload x backend x batch x precision), all constants kept positive. The interval is the
spread of held-out errors: each workload left out in turn, the other nine fitted, its configurations predicted
(``leave_one_out``); the 10th and 90th percentiles of those errors make the 80% interval. ``benchmarks/
predict_check_whole.py`` prints the held-out table, the median and worst error and the interval's coverage (each
workload's interval from the other workloads' held-out errors only).

    obs = observations(records)                  # one row per configuration: features and the measured step
    fit = fit_model(obs)                         # the constants
    t = step_s(fit, features)                    # a prediction's step time
    rows = leave_one_out(obs)                    # held-out predictions
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from helpers.record import fields as F
from helpers.record import learned

BACKENDS = ("jax", "tensorflow", "torch")
LEVEL = 0.80  # the interval's stated coverage
# workloads whose GPU step is their host pipeline's (image files batched on the host as they are read): not what the
# model describes (a model fed arrays), so not fitted on
HOST_PIPELINE = ("catsdogs", "cnn_256")
# configurations the model describes: one GPU of one process, Keras' own input path and compilation choice
PLAIN = {"gpus": 1, "hosts": 1, "processes": 1, "steps_per_execution": 1, "data_placement": "host",
         "jit_compile": "auto", "input_dtype": "float32", "profile": False}


@dataclass
class Fit:
    """The fitted constants; ``log_q``: the held-out errors' quantiles (log of measured / predicted)."""

    a: dict
    k: dict
    e: dict
    w: float
    h: float
    gpu: str
    workloads: list = field(default_factory=list)
    log_q: dict = field(default_factory=dict)  # backend -> the held-out errors' quantiles
    n_configurations: int = 0


def features(workload: str, params: dict, flops_model: float, update_per_step: float | None, shape: dict,
             n_params: int) -> dict:
    batch = int(params.get("batch_size") or 1)
    per_param = float(update_per_step or 0.0) / max(int(n_params), 1)
    return {"workload": workload, "backend": params.get("backend"), "batch": batch,
            "precision": params.get("precision") or "float32",
            "flops": float(flops_model) + float(update_per_step or 0.0) / batch,
            "launches": shape["launches"], "weights": shape["weights"], "params": int(n_params),
            "update_bytes": int(n_params) * update_bytes(per_param), "input_bytes": shape["input_bytes"]}


def observations(records) -> list[dict]:
    """One row per configuration of ``records`` that the model describes (ok GPU records of one process, one GPU,
    the plain knobs of ``PLAIN``): its features and the median measured step (``step_s``) over its runs."""
    from helpers import workloads as _workloads
    from helpers.measure import flops_table

    groups: dict[tuple, list] = {}
    for r in records:
        p = r.get("params") or {}
        if r.get("status") != "ok" or r.get("device_used") != "gpu" or not r.get(F.STEP_S):
            continue
        if learned.of_record(r)[0] == learned.NO:  # a run that did not learn is no observation of a training step
            continue
        if r.get("workload") in HOST_PIPELINE:
            continue
        if any(str(p.get(k, v)).lower() != str(v).lower() for k, v in PLAIN.items()):
            continue
        try:
            full = {**_workloads.defaults(r["workload"]), **p}
        except KeyError:
            continue
        fps, opt, _ = flops_table.for_record(r)
        shp = flops_table.shape_of(r["workload"], full)
        count = flops_table.lookup(r["workload"], full)
        if not fps or shp is None or count is None:
            continue
        gpu = ((r.get("fingerprint") or {}).get("gpu_names") or [""])[0]
        f = features(r["workload"], full, fps, opt if opt is not None else count.update_per_step, shp,
                     count.trainable_params)
        key = (gpu, f["workload"], f["backend"], f["batch"], f["precision"], flops_table.model_key(full))
        groups.setdefault(key, [f, []])[1].append(float(r[F.STEP_S]))
    out = []
    for (gpu, *_), (f, steps) in sorted(groups.items(), key=lambda kv: str(kv[0])):
        out.append({**f, "gpu": gpu, F.STEP_S: statistics.median(steps), "runs": len(steps)})
    return out


def update_bytes(update_per_param: float) -> float:
    """Bytes moved a parameter a step by the optimiser's update (module docstring): 2 x its FLOPs + the gradient."""
    return 2.0 * float(update_per_param or 0.0) + 4.0


def _bandwidth(gpu: str) -> float:
    from helpers.measure import peaks

    return peaks.gpu_memory_bandwidth(gpu) or 2e12


def _peak(gpu: str, precision: str) -> float:
    from helpers.measure import peaks

    pk, _ = peaks.gpu_peak(gpu, precision)
    return float(pk or peaks.gpu_peak(gpu, "float32")[0] or 1e14)


def _unpack(x, backends):
    n = len(backends)
    ex = [math.exp(v) for v in x]
    return (dict(zip(backends, ex[:n])), dict(zip(backends, ex[n:2 * n])), dict(zip(backends, ex[2 * n:3 * n])),
            ex[3 * n], ex[3 * n + 1])


def _predict(a, k, e, w, h, f, gpu) -> float:
    b = f["backend"]
    return (a[b] + k[b] * f["launches"] + w * f["weights"] + f["update_bytes"] / _bandwidth(gpu)
            + h * f["input_bytes"] * f["batch"] + f["flops"] * f["batch"] / (_peak(gpu, f["precision"]) * e[b]))


def fit_model(obs: list[dict]) -> Fit:
    """The constants fitted on ``obs`` (``observations``): least squares on log step time, every constant positive."""
    import numpy as np
    from scipy.optimize import least_squares

    if not obs:
        raise ValueError("no configuration to fit the GPU step model on")
    backends = sorted({o["backend"] for o in obs})
    gpu = obs[0]["gpu"]
    y = np.log([o[F.STEP_S] for o in obs])
    n = len(backends)
    x0 = [math.log(2e-3)] * n + [math.log(3e-5)] * n + [math.log(0.3)] * n + [math.log(1e-5), math.log(1e-10)]

    def resid(x):
        a, k, e, w, h = _unpack(x, backends)
        return np.log([_predict(a, k, e, w, h, o, gpu) for o in obs]) - y

    bounds = ([-40.0] * (3 * n + 2), [3.0] * n + [0.0] * n + [0.0] * n + [0.0, 0.0])  # e <= 1: under the peak
    sol = least_squares(resid, x0, bounds=bounds, loss="soft_l1", f_scale=0.3)
    a, k, e, w, h = _unpack(sol.x, backends)
    return Fit(a=a, k=k, e=e, w=w, h=h, gpu=gpu, workloads=sorted({o["workload"] for o in obs}),
               n_configurations=len(obs))


def step_s(fit: Fit, f: dict) -> float:
    if f["backend"] not in fit.a:
        raise ValueError(f"backend {f['backend']!r}: the reference has no GPU record of it to fit on")
    return _predict(fit.a, fit.k, fit.e, fit.w, fit.h, f, fit.gpu)


def interval_quantiles(errors: list[float]) -> tuple[float, float]:
    """The interval's ends from ``errors``: each tail's quantile with the finite-sample correction of split
    conformal prediction (level x (1 + 1/n), the next error up), so that n errors hold the stated coverage."""
    import numpy as np

    n = len(errors)
    if not n:
        raise ValueError("no held-out error to make an interval of")
    tail = 1 - (1 - LEVEL) / 2
    level = min(1.0, tail * (1 + 1 / n))
    return float(np.quantile(errors, 1 - level, method="lower")), float(np.quantile(errors, level, method="higher"))


def leave_one_out(obs: list[dict], nested: bool = True) -> list[dict]:
    """Each workload left out in turn: the others fitted, its configurations predicted. Each row: the
    configuration, measured and predicted samples/s, the error (predicted / measured - 1) and, with ``nested``, the
    80% interval made of the other workloads' held-out errors only (never of its own)."""
    wls = sorted({o["workload"] for o in obs})
    outer: dict[str, list[tuple[dict, float]]] = {}
    for wl in wls:
        fit = fit_model([o for o in obs if o["workload"] != wl])
        outer[wl] = [(o, step_s(fit, o)) for o in obs if o["workload"] == wl]
    rows, cache = [], {}
    for wl in wls:
        lo = hi = None
        q = {}
        if nested:  # per backend: the other workloads' held-out errors on it
            inner = [(o, p) for w2 in wls if w2 != wl for o, p in _inner(obs, wl, w2, cache)]
            for b in {o["backend"] for o, _ in outer[wl]}:
                q[b] = interval_quantiles([math.log(o[F.STEP_S] / p) for o, p in inner if o["backend"] == b])
        for o, p in outer[wl]:
            if nested:
                lo, hi = q[o["backend"]]
            meas, pred = o["batch"] / o[F.STEP_S], o["batch"] / p
            row = {**o, "measured_sps": meas, "predicted_sps": pred, "error": pred / meas - 1}
            if nested:  # step x exp(q): samples/s between batch / (p x e^hi) and batch / (p x e^lo)
                row.update(low_sps=o["batch"] / (p * math.exp(hi)), high_sps=o["batch"] / (p * math.exp(lo)))
                row["inside"] = row["low_sps"] <= meas <= row["high_sps"]
            rows.append(row)
    return rows


def _inner(obs, out1: str, out2: str, cache: dict):
    """``out2``'s configurations predicted by a fit on every workload but ``out1`` and ``out2`` (one fit per pair:
    ``cache`` holds it for the pair's other order, in one ``leave_one_out``)."""
    key = frozenset((out1, out2))
    if key not in cache:
        cache[key] = fit_model([o for o in obs if o["workload"] not in key])
    return [(o, step_s(cache[key], o)) for o in obs if o["workload"] == out2]


def final_fit(obs: list[dict]) -> Fit:
    """Every workload fitted; each backend's interval from its held-out errors in ``leave_one_out`` (not nested)."""
    fit = fit_model(obs)
    rows = leave_one_out(obs, nested=False)
    fit.log_q = {b: interval_quantiles([math.log(r["predicted_sps"] / r["measured_sps"]) for r in rows
                                        if r["backend"] == b])
                 for b in fit.a}  # log(measured step / predicted step)
    return fit


MODEL_FILE = "gpu_model.json"  # under data/: the constants fitted on the reference (benchmarks/predict_check_whole.py)


def save_fit(fit: Fit, path, held_out: dict) -> None:
    """``fit`` and the held-out figures it was checked with, as JSON (``load_fit`` reads it back)."""
    import json
    from dataclasses import asdict
    from pathlib import Path

    Path(path).write_text(json.dumps({**asdict(fit), "held_out": held_out}, indent=1, sort_keys=True) + "\n")


def load_fit(path=None) -> tuple[Fit, dict]:
    """The committed fit (``data/gpu_model.json``) and its held-out figures."""
    import json

    from helpers.paths import PROJECT_ROOT

    d = json.loads(((PROJECT_ROOT / "data" / MODEL_FILE) if path is None else path).read_text())
    held = d.pop("held_out", {})
    d["log_q"] = {b: tuple(v) for b, v in d.get("log_q", {}).items()}
    return Fit(**d), held


def predicted(fit: Fit, f: dict) -> dict:
    """One prediction with its interval, never one without the other: step and samples/s, the 80% interval's ends
    (the held-out errors of ``f``'s backend), the GPU and what it was fitted on."""
    t = step_s(fit, f)
    lo, hi = fit.log_q[f["backend"]]
    return {"backend": f["backend"], "gpu": fit.gpu, F.STEP_S: t, F.SAMPLES_PER_S: f["batch"] / t,
            "samples_per_s_low": f["batch"] / (t * math.exp(hi)), "samples_per_s_high": f["batch"] / (t * math.exp(lo)),
            "interval": LEVEL, "mark": "predicted", "fitted_on": list(fit.workloads)}


def record_features(r: dict, backend: str) -> tuple[dict | None, str]:
    """The step model's features of the model a record trained, on ``backend`` at the record's batch and precision,
    or (None, why): its FLOPs (``flops_table.for_record``), its shape (the record's ``model_shape``, else the
    committed table's) and parameters."""
    from helpers import workloads as _workloads
    from helpers.measure import flops_table

    p = r.get("params") or {}
    try:
        full = {**_workloads.defaults(r.get("workload")), **p}
    except KeyError:
        full = dict(p)
    fps, opt, why = flops_table.for_record(r)
    shp = r.get("model_shape") or flops_table.shape_of(r.get("workload"), full)
    n = r.get("model_params")
    if not isinstance(n, int) or n <= 0:  # a record without its count: the committed table's, where it has the model
        count = flops_table.lookup(r.get("workload"), full)
        n = count.trainable_params if count is not None else None
    if not fps:
        return None, why
    if not isinstance(shp, dict) or not all(isinstance(shp.get(k), int) for k in ("launches", "weights",
                                                                                  "input_bytes")):
        return None, "no model shape in the record (written before the suite recorded one) nor in data/flops.csv"
    if not isinstance(n, int) or n <= 0:
        return None, "no parameter count in the record"
    return features(r.get("workload"), {**full, "backend": backend}, fps, opt or 0.0, shp, n), ""
