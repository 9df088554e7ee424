"""What a user and a script can rely on from the runner, without a framework kernel: the
runner runs in this process with papermill faked (``fake_papermill``, tests/conftest.py).

- A changed model is a new point: the point id holds the sha256 of the files a point reads (a custom ``.keras``,
  its ``.npz``); the report labels figures of two contents under one path apart (a short hash).
- Exit codes a script can read (helpers/exits.py): 0 everything ran, 1 a point failed, 2 a refused grid, 3 points
  left by ``--budget``.
- Every grid problem at once, each ``file:line: message``.
- ``--report-only --out DIR``: the report and its CSVs in DIR, and no run folder.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from pathlib import Path

import pytest

from helpers.exits import Exit
from helpers.record.ids import point_id
from helpers.runner import cli as runner


def _keras_file(path: Path, units: int) -> Path:
    """A .keras archive as Keras 3 writes one (config.json, metadata.json), enough for the grid's checks, which
    read it without Keras: a Sequential 12 -> ``units`` -> 4."""
    layers = [{"class_name": "InputLayer", "module": "keras.layers",
               "config": {"name": "x", "batch_shape": [None, 12], "dtype": "float32"}},
              {"class_name": "Dense", "module": "keras.layers", "config": {"name": "hidden", "units": units}},
              {"class_name": "Dense", "module": "keras.layers",
               "config": {"name": "out", "units": 4, "activation": "softmax"}}]
    cfg = {"module": "keras", "class_name": "Sequential", "config": {"name": "mine", "layers": layers},
           "compile_config": {"loss": "sparse_categorical_crossentropy", "optimizer": "adam"}}
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("config.json", json.dumps(cfg))
        zf.writestr("metadata.json", json.dumps({"keras_version": "3.15.1"}))
    return path


@pytest.fixture
def quiet_runner(fake_papermill, monkeypatch):
    """``fake_papermill`` without the run's set-up (host calibration): (state, outputs)."""
    from helpers.runner import grid_run

    monkeypatch.setattr(grid_run, "run_setup", lambda log, gpu: None)
    return fake_papermill


# ------------------------------------------------------------------ 4. a changed model is a new point


def test_a_model_saved_again_as_another_network_is_run_again(quiet_runner, tmp_path, capsys):
    state, outputs = quiet_runner
    model = _keras_file(tmp_path / "my.keras", units=16)
    g = tmp_path / "g.yaml"
    g.write_text(f"points:\n  - workload: custom\n    model_path: {model}\n    backend: jax\n    device: cpu\n")
    assert runner.main([str(g), "--no-report"]) == Exit.OK and len(state["calls"]) == 1
    assert runner.main([str(g), "--no-report"]) == Exit.OK and len(state["calls"]) == 1
    assert "done before (" in capsys.readouterr().out  # the same file: "done before (<id>): not run again"

    _keras_file(model, units=64)  # the same path, another network
    assert runner.main([str(g), "--no-report"]) == Exit.OK
    out = capsys.readouterr().out
    assert len(state["calls"]) == 2 and "done before (" not in out and "not run again" not in out, out
    first, second = (c["point_id"] for c in state["calls"])
    assert first != second and state["calls"][0]["model_path"] == state["calls"][1]["model_path"]


def test_the_point_id_holds_the_files_contents_and_keeps_the_ids_of_points_without_files(tmp_path):
    from helpers.workloads import contents

    p = {"workload": "mlp_mnist", "backend": "jax", "device": "cpu", "batch_size": 32}
    core = json.dumps({"params": dict(sorted(p.items())), "machine": "m"}, sort_keys=True, default=str)
    assert point_id(p, "m") == point_id(p, "m", {}) == hashlib.sha256(core.encode()).hexdigest()[:12]
    assert contents(p) == {}  # a built-in workload reads no file of the user's: its ids are those of before

    model, data = _keras_file(tmp_path / "m.keras", units=8), tmp_path / "d.npz"
    import numpy as np

    np.savez(data, x=np.zeros((4, 12), "float32"), y=np.zeros(4, "int64"))
    c = {"workload": "custom", "model_path": str(model), "data_path": str(data), "backend": "jax", "device": "cpu"}
    got = contents(c)
    assert got == {"model_path": hashlib.sha256(model.read_bytes()).hexdigest(),
                   "data_path": hashlib.sha256(data.read_bytes()).hexdigest()}
    before = point_id(c, "m", got)
    np.savez(data, x=np.ones((4, 12), "float32"), y=np.zeros(4, "int64"))  # new data under the same name
    assert point_id(c, "m", contents(c)) != before


def test_the_report_labels_two_contents_of_one_path_apart():
    from support.records import _rec

    from helpers.report.derive.aggregate import summarise
    from helpers.report.load.table import tidy
    from helpers.report.words.labels import labels

    def rec(i, sha, epoch_s):  # 1,000 samples an epoch
        params = {"threads": 0, "precision": "float32", "model_path": "my.keras"}
        return _rec(i, workload="custom", params=params, samples_per_s=1000.0 / epoch_s, median_epoch_s=epoch_s,
                    epoch_s=[epoch_s] * 3, workload_info={"model_path": "my.keras", "sha256": sha})

    summ = summarise(tidy([rec(0, "1a2b3c4d" + "0" * 56, 1.0), rec(1, "9f8e7d6c" + "0" * 56, 4.0)]))
    assert len(summ) == 2  # two configurations, never two runs of one
    assert sorted(labels(summ)) == ["cpu · jax · model_path=my.keras@1a2b3c4d",
                                    "cpu · jax · model_path=my.keras@9f8e7d6c"]
    by_hash = dict(zip([lab[-8:] for lab in labels(summ)], summ["samples_per_s"]))
    assert by_hash == {"1a2b3c4d": 1000.0, "9f8e7d6c": 250.0}


# ------------------------------------------------------------------ 5. exit codes a script can read

GRID3 = "points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    seed: [1, 2, 3]\n"


def test_points_left_by_the_budget_exit_3_and_the_run_that_finishes_them_0(quiet_runner, tmp_path, capsys):
    state, _ = quiet_runner
    g = tmp_path / "g.yaml"
    g.write_text(GRID3)
    assert runner.main([str(g), "--no-report", "--budget", "0"]) == Exit.BUDGET == 3
    out = capsys.readouterr().out
    assert not state["calls"] and out.count("not run: the --budget of 0 s is spent") == 3
    assert "3 run(s) left by the --budget (exit 3)" in out
    assert runner.main([str(g), "--no-report"]) == Exit.OK == 0 and len(state["calls"]) == 3


def test_a_failed_point_exits_1_and_a_refused_grid_2(quiet_runner, tmp_path, monkeypatch):
    import papermill

    state, outputs = quiet_runner
    g = tmp_path / "g.yaml"
    g.write_text(GRID3)

    def broken(*a, **kw):
        raise RuntimeError("the kernel died")

    monkeypatch.setattr(papermill, "execute_notebook", broken)
    assert runner.main([str(g), "--no-report"]) == Exit.FAILED == 1
    bad = tmp_path / "bad.yaml"
    bad.write_text(GRID3.replace("device: cpu", "device: tpu"))
    assert runner.main([str(bad), "--no-report"]) == Exit.BAD_GRID == 2


def test_the_help_lists_every_exit_code_from_the_one_definition(capsys):
    from helpers import exits

    with pytest.raises(SystemExit):
        runner.main(["--help"])
    text = re.sub(r"\s+", " ", capsys.readouterr().out)
    for e in exits.Exit:
        assert f"{int(e)} {e.description}" in text, e
    assert int(exits.Exit.BUDGET) == 3 and len({int(e) for e in exits.Exit}) == len(exits.Exit)


# ------------------------------------------------------------------ 6. every grid problem at once, with its line

FOUR = """\
description: four mistakes
points:
  - workload: cnn_cifar10
    backend: [tensorflow, jaxx]
    device: cpu
    batchsize: 64
  - workload: mlp_mnist
    backend: jax
    device: tpu
  - workload: mlp_mnist
    backend: torch
    device: cpu
    steps_per_execution: 4
"""


def test_a_grid_with_four_mistakes_reports_the_four_with_their_lines(quiet_runner, tmp_path, capsys):
    state, outputs = quiet_runner
    g = tmp_path / "g.yaml"
    g.write_text(FOUR)
    other = tmp_path / "other.yaml"  # a second file: its problems too, in the same run
    other.write_text("points:\n  - workload: mlp_mnist\n    backend: jax\n    device: cpu\n    epochs: 1\n")
    assert runner.main([str(g), str(other)]) == Exit.BAD_GRID
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if re.match(r"\S+\.yaml:\d+: ", ln)]
    assert [ln.split(": ", 1)[0] for ln in lines] == [f"{g}:4", f"{g}:6", f"{g}:9", f"{g}:13", f"{other}:5"], err
    for line, needle in zip(lines, ["'jaxx'", "unknown key 'batchsize' (did you mean 'batch_size'?)", "'tpu'",
                                    "'steps_per_execution' has value 4 with backend 'torch'", "'epochs' has value 1"]):
        assert needle in line, (needle, line)
    assert err.startswith("error: 5 problems in the grid files:") and "nothing was run" in err
    assert not state["calls"] and not (outputs / "runs").exists()


def test_grid_error_lines_point_at_the_key_the_list_item_or_the_defaults(tmp_path):
    from helpers import grid

    g = tmp_path / "g.yaml"
    g.write_text("timeout_s: -1\ndefaults:\n  epochs: 1\npoints:\n  - workload: cnn_cifar10\n    backend: jax\n"
                 "    device: cpu\n    batch_size:\n      - 32\n      - 0\n  - 42\n")
    with pytest.raises(grid.GridError) as err:
        grid.expand(g)
    assert [e.split(": ", 2)[:2] for e in err.value.errors] == [
        [f"{g}:1", "key 'timeout_s' has value -1; allowed"], [f"{g}:3", "defaults"], [f"{g}:10", "points[1]"],
        [f"{g}:11", "points[2]"]], err.value.errors
    g.write_text("points:\n  - workload: mlp_mnist\n    backend: jax: torch\n")
    with pytest.raises(grid.GridError, match=rf"^{re.escape(str(g))}:3: invalid YAML"):
        grid.expand(g)


# ------------------------------------------------------------------ 7. --report-only --out DIR


def test_report_only_writes_the_report_and_its_csvs_in_out_and_makes_no_run_folder(fake_papermill, tmp_path,
                                                                                   monkeypatch):
    import nbformat
    import papermill
    from support.records import _rec

    _, outputs = fake_papermill
    inputs = tmp_path / "records"
    inputs.mkdir()
    (inputs / "r.json").write_text(json.dumps(_rec(0)))
    seen = []

    def summary_notebook(input_path, output_path, parameters=None, **kw):  # what summary.ipynb leaves behind
        seen.append(dict(parameters))
        for name in ("results.csv", "configurations.csv"):
            (Path(parameters["csv_dir"]) / name).write_text("workload\ncnn_cifar10\n")
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), output_path)

    monkeypatch.setattr(papermill, "execute_notebook", summary_notebook)
    out = tmp_path / "A vs B"
    assert runner.main(["--report-only", "--no-reference", "--inputs", str(inputs), "--out", str(out)]) == Exit.OK
    assert {p.name for p in out.iterdir()} >= {"report.html", "index.html", "results.csv", "configurations.csv"}
    assert seen[0]["inputs"] == [str(inputs.resolve())] and Path(seen[0]["csv_dir"]) == out.resolve()
    assert not outputs.exists()  # nothing in the outputs folder: no runs/<time>/, no report.html there

    assert runner.main(["--report-only", "--no-reference", "--inputs", str(inputs)]) == Exit.OK  # default: outputs/
    assert (outputs / "report.html").is_file() and not (outputs / "runs").exists()
