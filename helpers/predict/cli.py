"""``./run_all.sh predict my.keras --batch-size 256``: a model's predicted training speed on each GPU kind profiled
(and the bundled reference's GPU), per backend, from the model alone, in seconds of CPU, running nothing else.

The options are checked first (``--batch-size`` 1 to ``MAX_BATCH``, ``--samples`` 0 to ``MAX_SAMPLES``,
``--optimizer`` one of the custom workload's, no grid beside ``--predict``: exit 2 naming the option), then the file
goes through the custom model's checks without Keras (``helpers.workloads.custom_files.model_file``: the archive, its
config's size and layers bounded, the same clear errors, exit 2). The model is then loaded in a child process, never
in the runner's own: ``python -I`` (no PYTHONPATH, no user site, no script folder on ``sys.path``) with the project
root put on ``sys.path`` explicitly, its working directory a fresh temporary folder, so nothing beside the model is
importable (Keras imports the keras_hub / keras_nlp / keras_cv modules a config names). The child loads it on the
CPU (Keras' numpy backend unless KERAS_BACKEND says otherwise: built and counted, never trained: half the CPU of
JAX's), compiles it as a custom point would be, and reads its layers (``helpers.predict.layers.layer_rows``). Each
GPU kind with a committed layer fit (``data/gpu_layers_*.json``, ``benchmarks/predict_check.py --write``) gives each
backend's step layer by layer, with its 80% interval and the kinds no profile holds; the bundled reference's GPU,
where no layer profile of it is committed, the whole-model fit's (``data/gpu_model.json``,
``benchmarks/predict_check_whole.py``). With ``--samples`` each figure gets its epoch time and, where
params/prices.yaml prices a machine of that GPU (``price_of``, from the runner), its price an epoch.

Loss and optimiser: the saved compile config's; ``--optimizer`` overrides the optimiser. A model saved uncompiled
(or with a loss the suite makes no targets for) is predicted with ``DEFAULT_OPTIMIZER`` and ``DEFAULT_LOSS``, and
the output says so (the optimiser's update is part of the step; the loss barely is).

    predict_main("my.keras", batch_size=256)     # prints the table, returns the exit status
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from helpers.exits import Exit
from helpers.record import fields as F

MAX_BATCH = 1_000_000  # the reference ran batches of 32 to 5,000; a million samples a step is far past any GPU's
MAX_SAMPLES = 10**10  # samples an epoch: ten billion (ImageNet-1k has 1.28 million, LAION-5B five billion)
DEFAULT_OPTIMIZER = "adam"
DEFAULT_LOSS = "mse"
_RESULT = "prediction.json"  # what the child writes in its working directory (a fresh temporary folder)


def _keras_on_cpu():
    os.environ.setdefault("KERAS_BACKEND", "numpy")  # built and counted, never trained: the quickest
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def predictions(model_path: str, batch_size: int, precision: str = "float32", optimizer: str = "",
                loss: str = "") -> tuple[dict, list[dict]]:
    """(what the model is: FLOPs, shape, parameters, its layer kinds; one prediction per GPU kind and backend, each
    with its interval). Per GPU kind profiled layer by layer (``helpers.predict.layers``: ``data/gpu_layers_*.json``)
    the layer model's; for the bundled reference's GPU, where no layer profile of it is committed, the whole-model
    fit's (``helpers.predict.gpu``, ``data/gpu_model.json``), said in ``method``. ``ParamError`` for a file the
    custom model's checks refuse. Loads the model in this process: the command line runs it in a child
    (``predict_main``)."""
    _keras_on_cpu()
    from helpers.measure import flops_analytic
    from helpers.predict import gpu, layers
    from helpers.predict.shape import shape
    from helpers.workloads import custom

    params = {"model_path": model_path, "optimizer": optimizer, "loss": loss, "batch_size": int(batch_size),
              "precision": precision}
    model = custom.load_model(params, where="--predict")
    model.compile(**{k: v for k, v in custom.compile_kwargs(params).items() if k != "metrics"})
    count = flops_analytic.analytic(model)
    shp = shape(model)
    rows = layers.layer_rows(model, int(batch_size))
    in_bytes = layers.input_bytes(model, int(batch_size))
    out = []
    fits = layers.committed_fits()
    for fit in fits:
        for backend in sorted(fit["steps"]):
            p = layers.predicted(fit, rows, backend, precision, int(batch_size), in_bytes)
            out.append({**p, "method": "layers", "held_out": fit["summary"]})
    whole, held = gpu.load_fit()
    if whole.gpu not in {f["gpu"] for f in fits}:
        for backend in sorted(whole.a):
            f = gpu.features("custom", {"backend": backend, "batch_size": batch_size, "precision": precision},
                             count.model(), count.update_per_step, shp, count.trainable_params)
            out.append({**gpu.predicted(whole, f), "batch": int(batch_size), "precision": precision,
                        "method": "whole", "held_out": held, "unprofiled": {}, "unprofiled_share": 0.0})
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    about = {"model": str(model_path), "params": count.trainable_params, "flops_per_sample": count.train(batch_size),
             "optimizer": count.optimizer, **shp, "kinds": kinds, "whole_fitted_on": whole.workloads}
    return about, out


def _compile_choice(info: dict, optimizer: str) -> tuple[str, str, list[str]]:
    """(optimizer, loss, notes): the knobs the child compiles with; empty = the saved compile config's."""
    from helpers.workloads.custom_checks import LOSS_KIND, saved_loss_name

    cc = info["config"].get("compile_config") or {}
    notes, loss = [], ""
    if not optimizer and not cc.get("optimizer"):
        optimizer = DEFAULT_OPTIMIZER
        notes.append(f"optimizer {DEFAULT_OPTIMIZER} (the model was saved without one; --optimizer NAME to choose)")
    if not cc.get("loss") or saved_loss_name(cc.get("loss")) not in LOSS_KIND:
        loss = DEFAULT_LOSS
        why = "saved without one" if not cc.get("loss") else "saved with one the suite makes no targets for"
        notes.append(f"loss {DEFAULT_LOSS} (the model was {why}; a loss barely changes a step's cost)")
    return optimizer, loss, notes


def _bad_options(batch_size, samples, optimizer, grids) -> str | None:
    from helpers.workloads.custom_checks import OPTIMIZERS

    if grids:
        return (f"--predict runs nothing else: the grid{'s' if len(grids) > 1 else ''} "
                f"{', '.join(map(str, grids))} would not run; run {'them' if len(grids) > 1 else 'it'} without "
                "--predict, or drop it from this command")
    if batch_size is None or not 1 <= int(batch_size) <= MAX_BATCH:
        got = "" if batch_size is None else f" (got {batch_size if abs(batch_size) < 10**12 else 'a huge number'})"
        return (f"--predict needs --batch-size N with 1 <= N <= {MAX_BATCH:,}{got}: the step's cost depends on it "
                "(the reference ran 32 to 5,000)")
    if not 0 <= int(samples or 0) <= MAX_SAMPLES:
        got = samples if abs(samples) < 10**12 else "a huge number"
        return f"--samples N (samples an epoch) must be 0 <= N <= {MAX_SAMPLES:,} (got {got}; 0: no epoch time)"
    if optimizer and optimizer not in OPTIMIZERS:
        return f"--optimizer {optimizer[:50]!r} is not one of {', '.join(o for o in OPTIMIZERS if o)}"
    return None


_CHILD = ("import sys; sys.path.insert(0, sys.argv[1]); from helpers.predict.cli import _child; "
          "sys.exit(_child(sys.argv[2]))")


def _child(arg: str) -> int:
    """The child's side: predict, write ``_RESULT`` in the working directory; a refusal is ``error: ...`` on stderr
    and ``Exit.BAD_GRID``."""
    from helpers.params import ParamError

    job = json.loads(arg)
    try:
        about, rows = predictions(job["model"], job["batch_size"], job["precision"], job["optimizer"], job["loss"])
    except ParamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return Exit.BAD_GRID
    Path(_RESULT).write_text(json.dumps({"about": about, "rows": rows}, default=str))
    return Exit.OK


def _in_child(path: Path, batch_size: int, precision: str, optimizer: str, loss: str) -> tuple[int, dict | str]:
    """Run ``_child`` in a fresh ``python -I`` in a fresh temporary folder: (exit status, the result or the
    message)."""
    from helpers.paths import PROJECT_ROOT

    job = {"model": str(path), "batch_size": int(batch_size), "precision": precision, "optimizer": optimizer,
           "loss": loss}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for k, v in (("KERAS_BACKEND", "numpy"), ("JAX_PLATFORMS", "cpu"), ("TF_CPP_MIN_LOG_LEVEL", "3")):
        env.setdefault(k, v)
    with tempfile.TemporaryDirectory(prefix="cgb-predict-") as tmp:
        out = subprocess.run([sys.executable, "-I", "-c", _CHILD, str(PROJECT_ROOT), json.dumps(job)], cwd=tmp,
                             env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace")
        if out.returncode == 0 and (Path(tmp) / _RESULT).is_file():
            return Exit.OK, json.loads((Path(tmp) / _RESULT).read_text())
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("error: ")]
    if out.returncode == Exit.BAD_GRID and errors:
        return Exit.BAD_GRID, errors[-1][len("error: "):]
    if out.returncode < 0:
        try:
            sig = signal.Signals(-out.returncode).name
        except ValueError:
            sig = f"signal {-out.returncode}"
        why = f"was killed ({sig}{': out of memory?' if sig in ('SIGKILL', 'SIGABRT') else ''})"
    else:
        why = f"failed (exit status {out.returncode})"
    tail = " | ".join(ln.strip() for ln in out.stderr.strip().splitlines()[-3:])[-600:]
    return Exit.FAILED, f"--predict: the process loading {path} {why}{': ' + tail if tail else ''}"


def predict_main(model_path: str, batch_size: int, precision: str = "float32", optimizer: str = "",
                 loss: str = "", samples: int = 0, grids=(), price_of=None) -> int:
    """``price_of(gpu name) -> (machine, $ an hour)`` or None: the price of a machine of one such GPU
    (``helpers.report.derive.costs``, passed in by the runner: this layer imports nothing of the report's)."""
    from helpers.params import ParamError

    bad = _bad_options(batch_size, samples, optimizer, grids)
    if bad:
        print(f"error: {bad}", file=sys.stderr)
        return Exit.BAD_GRID
    try:
        from helpers.workloads.custom_files import model_file

        path, info = model_file(model_path, "--predict")  # the file's own checks first, without Keras
    except ParamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return Exit.BAD_GRID
    optimizer, default_loss, notes = _compile_choice(info, optimizer)
    status, got = _in_child(path, int(batch_size), precision, optimizer, loss or default_loss)
    if status != Exit.OK:
        print(f"error: {got}", file=sys.stderr)
        return status
    from helpers.predict.layers import share_text

    about, rows = got["about"], got["rows"]
    about["model"] = str(model_path)
    print(f"{about['model']}: {about['params']:,} parameters, {about['flops_per_sample'] / 1e6:,.1f} MFLOPs per "
          f"training sample at batch {batch_size} ({about['optimizer'] or 'no'} optimiser), {about['layers']} layers "
          f"({', '.join(f'{n} {k}' for k, n in sorted(about['kinds'].items(), key=lambda kv: -kv[1]))})")
    if notes:
        print("compiled with " + "; ".join(notes))
    print(f"predicted, {precision}, batch {batch_size}: each figure with its 80% interval and its GPU; "
          "not measured (docs/custom_model.md says how far off these run)")
    for g in dict.fromkeys(r["gpu"] for r in rows):
        mine = [r for r in rows if r["gpu"] == g]
        price = price_of(g) if price_of else None
        held = mine[0]["held_out"]
        if mine[0]["method"] == "layers":
            how = (f"layer by layer from its profiles; on 14 models of other kinds {held['zoo_median_abs_error']:.0%} "
                   f"off (median), interval held {held['zoo_coverage']:.0%}")
        else:
            how = (f"whole-model fit on the bundled reference's {len(about['whole_fitted_on'])} workloads, no layer "
                   f"profile of this GPU; held out {held.get('median_abs_error', float('nan')):.0%} off (median), "
                   f"interval held {held.get('coverage', float('nan')):.0%}; trust it least for layer kinds the "
                   "workloads lack")
        cost = f"; {price[0]} at ${price[1]:,.2f}/h" if price and price[1] else "; no price in params/prices.yaml"
        print(f"one {g} ({how}{cost}):")
        for r in mine:
            epoch = ""
            if samples:
                secs = samples / r[F.SAMPLES_PER_S]
                epoch = f"; {samples:,} samples: {secs:,.1f} s an epoch"
                if price and price[1]:
                    epoch += f", ${secs * price[1] / 3600:,.4f}"
            print(f"  {r['backend']:10} {r['samples_per_s']:12,.0f} samples/s (predicted; 80% interval "
                  f"{r['samples_per_s_low']:,.0f}-{r['samples_per_s_high']:,.0f}), {r['step_s'] * 1e3:,.2f} ms a step"
                  + epoch)
            if r.get("unprofiled"):
                print(f"  {'':10} unprofiled: {', '.join(sorted(r['unprofiled']))} "
                      f"({share_text(r['unprofiled_share'])} of the step, read from the generic profile; the interval "
                      "widened by it)")
    sps = {}
    for r in rows:
        sps.setdefault(r["backend"], {})[r["gpu"]] = r
    for b, by in sorted(sps.items()):
        if len(by) >= 2:
            (g1, r1), (g2, r2) = sorted(by.items(), key=lambda kv: -kv[1][F.SAMPLES_PER_S])[:2]
            overlap = r1["samples_per_s_low"] <= r2["samples_per_s_high"]
            print(f"{b}: the {g1} predicted {r1['samples_per_s'] / r2['samples_per_s']:.2f}x the {g2}"
                  + (" (their intervals overlap: no GPU shown faster; a host-bound step gains nothing from the "
                     "faster GPU's bandwidth)" if overlap else ""))
    return Exit.OK
