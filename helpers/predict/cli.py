"""``./run_all.sh --predict my.keras --batch-size 256``: a model's predicted training speed on the reference GPU, per
backend, from the model alone, in seconds of CPU, running nothing else.

The file goes through the custom model's checks (``helpers.workloads.custom``: the same clear errors, exit 2), is
loaded on the CPU (JAX), compiled as a custom point would be (its saved loss and optimiser, or ``--optimizer``), and
counted (``helpers.measure.flops_analytic``, ``helpers.predict.shape``); the committed fit
(``data/gpu_model.json``, ``benchmarks/predict_check.py --write``) gives each backend's step with its 80% interval.

    predict_main(["my.keras"], batch_size=256)     # prints the table, returns the exit status
"""

from __future__ import annotations

import os
import sys

from helpers.exits import Exit


def _keras_on_cpu():
    os.environ.setdefault("KERAS_BACKEND", "jax")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def predictions(model_path: str, batch_size: int, precision: str = "float32", optimizer: str = "",
                loss: str = "") -> tuple[dict, list[dict]]:
    """(what the model is: FLOPs, shape, parameters; one prediction per backend the fit knows, each with its
    interval). ``ParamError`` for a file the custom model's checks refuse."""
    _keras_on_cpu()
    from helpers.measure import flops_analytic
    from helpers.predict import gpu
    from helpers.predict.shape import shape
    from helpers.workloads import custom

    params = {"model_path": model_path, "optimizer": optimizer, "loss": loss, "batch_size": int(batch_size),
              "precision": precision}
    model = custom.load_model(params, where="--predict")
    model.compile(**{k: v for k, v in custom._compile(params).items() if k != "metrics"})
    count = flops_analytic.analytic(model)
    shp = shape(model)
    fit, held = gpu.load_fit()
    out = []
    for backend in sorted(fit.a):
        f = gpu.features("custom", {"backend": backend, "batch_size": batch_size, "precision": precision},
                         count.model(), count.update_per_step, shp, count.trainable_params)
        out.append({**gpu.predicted(fit, f), "batch": int(batch_size), "precision": precision})
    about = {"model": str(model_path), "params": count.trainable_params, "flops_per_sample": count.train(batch_size),
             "optimizer": count.optimizer, **shp, "held_out": held, "fitted_on": fit.workloads, "gpu": fit.gpu}
    return about, out


def predict_main(model_path: str, batch_size: int, precision: str = "float32", optimizer: str = "",
                 loss: str = "", samples: int = 0) -> int:
    from helpers.params import ParamError

    if batch_size is None or int(batch_size) < 1:
        print("error: --predict needs --batch-size N (N >= 1): the step's cost depends on it", file=sys.stderr)
        return Exit.BAD_GRID
    try:
        from helpers.workloads.custom_files import model_file

        model_file(model_path, "--predict")  # the file's own checks first, before Keras is imported
        about, rows = predictions(model_path, int(batch_size), precision, optimizer, loss)
    except ParamError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return Exit.BAD_GRID
    held = about["held_out"]
    print(f"{about['model']}: {about['params']:,} parameters, {about['flops_per_sample'] / 1e6:,.1f} MFLOPs per "
          f"training sample at batch {batch_size} ({about['optimizer'] or 'no'} optimiser), {about['layers']} layers, "
          f"about {about['launches']} kernel launches a step")
    print(f"predicted on one {about['gpu']} (the bundled reference's GPU), {precision}, batch {batch_size}; each "
          f"figure with its 80% interval, from the step model fitted on {len(about['fitted_on'])} workloads "
          f"({', '.join(about['fitted_on'])}); held out, it ran {held.get('median_abs_error', float('nan')):.0%} "
          f"off the measurement (median) and its interval held {held.get('coverage', float('nan')):.0%} of them:")
    for r in rows:
        epoch = f"; {samples:,} samples: {samples / r['samples_per_s']:,.1f} s an epoch" if samples else ""
        print(f"  {r['backend']:10} {r['samples_per_s']:12,.0f} samples/s (predicted; 80% interval "
              f"{r['samples_per_s_low']:,.0f}-{r['samples_per_s_high']:,.0f}), {r['step_s'] * 1e3:,.2f} ms a step"
              + epoch)
    print("Not measured: a prediction. Trust it least for layer kinds the reference never ran (attention, "
          "custom ops) and for models fed from files on the host (docs/custom_model.md).")
    return Exit.OK
