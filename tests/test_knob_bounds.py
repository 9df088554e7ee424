"""Untrusted input, round 5, item 5: every integer knob has an upper bound that the record reader accepts.

A knob's value is written into the point's record; the reader refuses an integer beyond +-2**53
(``helpers.record.limits``). A grid with ``epochs_planned: 2**60`` used to validate and run, and its record was
then neither reported nor run again. The walk below takes every knob of every workload (the common ones and each
workload's own), and the runner's own grid keys: the largest allowed value passes the knob's check and the record
reader, the next one is refused by the check with a message naming the key and the bound.
"""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from helpers import grid as _grid
from helpers import params as _params
from helpers import workloads as _workloads
from helpers.paths import PROJECT_ROOT
from helpers.record import limits
from helpers.workloads import registry


def _every_knob():
    seen = {}
    for name in registry.names():
        for knob, p in _workloads.knobs(name).items():
            seen.setdefault((knob, p.kind, p.maximum), (name, p))
    for knob, p in _params.REPORT.items():
        seen.setdefault((knob, p.kind, p.maximum), ("summary", p))
    return [(w, p) for w, p in seen.values()]


KNOBS = _every_knob()
INT_KNOBS = [(w, p) for w, p in KNOBS
             if int in (p.kind if isinstance(p.kind, tuple) else (p.kind,)) and p.choices is None]


def test_the_walk_finds_the_integer_knobs():
    names = {p.name for _, p in INT_KNOBS}
    assert {"batch_size", "epochs", "epochs_planned", "seed", "n_train", "gpus", "processes"} <= names
    assert len(INT_KNOBS) >= 15


@pytest.mark.parametrize(("workload", "knob"), INT_KNOBS, ids=[f"{w}.{p.name}" for w, p in INT_KNOBS])
def test_every_integer_knob_is_bounded_within_what_the_reader_accepts(workload, knob):
    top = knob.upper()
    assert top is not None, f"{workload}: knob {knob.name!r} takes integers without an upper bound"
    assert top <= limits.MAX_INT
    largest = int(top)
    knob.check(largest, "grid")  # the bound itself is allowed
    assert limits.out_of_bounds({"params": {knob.name: largest}}) is None  # and a record holding it is read
    with pytest.raises(_params.ParamError) as err:
        knob.check(largest + 1, "grid.yaml:3")
    msg = str(err.value)
    assert f"key '{knob.name}'" in msg and f"<= {knob.upper_text()}" in msg and "grid.yaml:3" in msg
    with pytest.raises(_params.ParamError):
        knob.check(2**60, "grid")


def test_float_knobs_refuse_nan_and_infinity():
    for _, knob in KNOBS:
        kinds = knob.kind if isinstance(knob.kind, tuple) else (knob.kind,)
        if float not in kinds:
            continue
        for bad in (math.nan, math.inf):
            with pytest.raises(_params.ParamError, match=knob.name):
                knob.check(bad, "grid")


def test_the_runner_keys_are_bounded():
    _grid.files.check_timeout(_grid.MAX_TIMEOUT_S, "g")
    _grid.files.check_repeats(_grid.MAX_REPEATS, "g")
    for bad in (math.nan, math.inf, _grid.MAX_TIMEOUT_S + 1, 0, -1):
        with pytest.raises(_grid.GridError, match="timeout_s"):
            _grid.files.check_timeout(bad, "g")
    for bad in (_grid.MAX_REPEATS + 1, 2**60, 0):
        with pytest.raises(_grid.GridError, match="repeats"):
            _grid.files.check_repeats(bad, "g")
    assert _grid.MAX_TIMEOUT_S <= limits.MAX_INT and _grid.MAX_REPEATS <= limits.MAX_INT


def test_a_grid_with_an_unreadable_epochs_planned_is_refused_before_anything_runs(tmp_path):
    """The issue's case through the real runner: exit 2 naming the key and the bound, beside a good block that
    validates alone; nothing is written into the outputs folder."""
    grid = tmp_path / "g.yaml"
    good = "  - {workload: mlp_mnist, backend: jax, device: cpu, batch_size: 128, epochs: 2}\n"
    point = "  - {workload: mlp_mnist, backend: jax, device: cpu, batch_size: 128, "
    grid.write_text("points:\n" + good + point + f"epochs_planned: {2**60}}}\n" + point + "timeout_s: .nan}\n")
    out = tmp_path / "outputs"
    env = {"CGB_OUTPUTS": str(out), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "helpers.runner", "--validate-only", str(grid)], cwd=PROJECT_ROOT,
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "epochs_planned" in r.stderr and f"<= {1_000_000:,}" in r.stderr, r.stderr
    assert "timeout_s" in r.stderr and "nan" in r.stderr, r.stderr
    assert not any(p.is_file() for p in out.rglob("*")) if out.exists() else True
    grid.write_text("points:\n" + good)
    ok = subprocess.run([sys.executable, "-m", "helpers.runner", "--validate-only", str(grid)], cwd=PROJECT_ROOT,
                        capture_output=True, text=True, timeout=120, env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "1 point" in ok.stdout + ok.stderr
