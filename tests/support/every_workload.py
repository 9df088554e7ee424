"""Every workload point of one backend in this one interpreter, through the code each notebook calls.

    python tests/support/every_workload.py SPEC.json

SPEC holds ``{"backend": ..., "out": folder, "points": [{"name", "params", "keras_home"}]}``. Each point goes
through ``helpers.point.session`` exactly as a workload notebook's cells do (``begin`` → ``verify`` → ``load_data`` →
``build_model`` → ``fit`` → ``finish``) and writes its record under ``out/<name>/``; an exception is written to
``out/<name>/error.txt`` and the next point runs. The tests (``tests/conftest.py: workload_runs``) start this once
per backend instead of one kernel per workload and backend.
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


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    out = Path(spec["out"])
    for point in spec["points"]:
        run_one(point, out)


if __name__ == "__main__":
    main(sys.argv[1])
