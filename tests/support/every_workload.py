"""Every workload point of one backend in this one interpreter, through the code each notebook calls.

    python tests/support/every_workload.py SPEC.json

SPEC holds ``{"backend": ..., "out": folder, "points": [{"name", "params", "keras_home"}], "scripts": [{"name",
"code"}]}``. Each point goes through ``helpers.point.session`` exactly as a workload notebook's cells do (``begin`` →
``verify`` → ``load_data`` → ``build_model`` → ``fit`` → ``finish``) and writes its record under ``out/<name>/``; an
exception is written to ``out/<name>/error.txt`` and the next point runs. The tests (``tests/conftest.py:
workload_runs``) start this once per backend instead of one kernel per workload and backend.

Then the scripts (``workload_points.script``: what a test would otherwise run in a fresh interpreter of its own,
one framework import each), one after the other, each as a fresh interpreter would see it: this process's
environment and working folder as they were when it started, ``keras.backend.clear_session()`` (layer names counted
from 0), the float32 dtype policy, its own namespace (``SCRIPT_DIR``: a folder of its own); its stdout goes to
``out/<name>/stdout.txt``, an exception to ``out/<name>/error.txt``.
"""

import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def run_one(point: dict, out: Path) -> None:
    from helpers.point.session import begin
    from helpers.workloads import get

    folder = out / point["name"]
    folder.mkdir(parents=True, exist_ok=True)
    if point.get("keras_home"):
        os.environ["KERAS_HOME"] = point["keras_home"]
    from helpers.params import COMMON_DEFAULTS

    # the parameters cell's values (every knob's default), then the point's; behaviour, not timing: `epochs`
    # epochs, however short
    prm = {**COMMON_DEFAULTS, **get(point["params"]["workload"]).defaults, "min_steady_s": 1e-6,
           **point["params"], "output_dir": str(folder)}
    t0 = time.perf_counter()
    try:
        pt = begin(prm)  # the notebook's first cell after `parameters`
        pt.verify()
        data = pt.load_data()
        model = pt.build_model()
        pt.fit(model, data)
        pt.finish()
    except BaseException as exc:  # noqa: BLE001 - PointSkipped included: the test reads the record and this
        (folder / "error.txt").write_text(f"{type(exc).__name__}\n{traceback.format_exc()}")
    # what the point imported: TensorFlow only where it is the backend (helpers.point.device.set_random_seed)
    (folder / "imported.txt").write_text(json.dumps({"tensorflow": "tensorflow" in sys.modules}))
    print(f"EVERY {point['name']}: {time.perf_counter() - t0:.1f} s", flush=True)


def run_script(script: dict, out: Path, env: dict, cwd: str) -> None:
    import contextlib
    import io

    import keras

    folder = out / script["name"]
    folder.mkdir(parents=True, exist_ok=True)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    keras.backend.clear_session()
    keras.config.set_dtype_policy("float32")
    buf, t0 = io.StringIO(), time.perf_counter()
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(script["code"], f"<script {script['name']}>", "exec"),
                     {"__name__": "__main__", "SCRIPT_DIR": str(folder)})
    except BaseException:  # noqa: BLE001 - SystemExit included: the test reads error.txt
        (folder / "error.txt").write_text(traceback.format_exc())
    (folder / "stdout.txt").write_text(buf.getvalue())
    print(f"EVERY script {script['name']}: {time.perf_counter() - t0:.1f} s", flush=True)


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    out = Path(spec["out"])
    env, cwd = dict(os.environ), os.getcwd()
    for point in spec["points"]:
        run_one(point, out)
    for script in spec.get("scripts", []):
        run_script(script, out, env, cwd)


if __name__ == "__main__":
    main(sys.argv[1])
