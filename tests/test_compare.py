"""What changed between two runs (``./run_all.sh --compare OLD NEW``): the test's false-alarm rate simulated with known
effects, a folder against itself, ``--fail-if-slower``'s exit status, one run a side, configurations of one side
only; and real CPU runs of one grid, the second with one configuration's step slowed (XLA's code generation at its
least optimised), one left."""

from __future__ import annotations

import csv
import math
import subprocess

import numpy as np
import pytest
from support import INSTALLED, XLA_CACHE
from support.records import _rec
from support.shared_run import env_for

from helpers.exits import Exit
from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic
from helpers.report.words import compare as C
from helpers.runner.cli import main


def test_the_false_alarm_rate_is_at_or_under_the_stated_level():
    """Known effects (0%, 5%, 20% slower) at 3 and 5 runs a side, runs spread 8% (log sd, a lease's) and 5 epochs
    each spread 5% around their run: with no effect, a change is called at most 1% of the time (99% confidence);
    a 20% slow-down is called more often with 5 runs than 3, a 5% one rarely (the runs needed say so)."""
    rng = np.random.default_rng(46)

    def runs(n, effect):
        return [float(np.median(r * np.exp(rng.normal(0, 0.05, 5)))) for r in
                np.exp(rng.normal(math.log(1 - effect), 0.08, n))]

    rate = {}
    for n in (3, 5):
        for effect, trials in ((0.0, 3000), (0.05, 500), (0.20, 500)):
            said = [C.welch(runs(n, 0.0), runs(n, effect))["verdict"] for _ in range(trials)]
            rate[n, effect] = sum(v == (C.SLOWER if effect else v) and v in (C.SLOWER, C.FASTER)
                                  for v in said) / trials
    assert rate[3, 0.0] <= 1 - C.CONFIDENCE and rate[5, 0.0] <= 1 - C.CONFIDENCE, rate
    assert rate[5, 0.20] > rate[3, 0.20] and rate[5, 0.20] > 0.3, rate
    assert rate[5, 0.05] < 0.1, rate
    # where none is shown, the runs a side that would show a 20% change at this spread
    need = C.runs_needed(runs(3, 0.0), runs(3, 0.20))
    assert need is None or need >= 3


def _runs(i0, sps_list, workload="cnn_cifar10", backend="jax", host="h1"):
    out = []
    for k, sps in enumerate(sps_list):
        out.append(_rec(i0 + k, workload=workload, backend=backend, samples_per_s=sps, median_epoch_s=1000 / sps,
                        epoch_s=[1000 / sps] * 3, point_id=f"{workload}-{backend}-{i0 + k}", repeat=k,
                        fingerprint={"host": host, "cpu_model": f"CPU of {host}", "cpu_logical": 4, "gpu_names": [],
                                     "boot_id": f"b{host}", "versions": {"keras": "3.15.1"}}))
    return out


def _folder(path, recs):
    for r in recs:
        write_atomic(path / f"{r['point_id']}.json", r)
    return path


def test_a_folder_against_itself_shows_no_change_and_a_slowed_one_exits_slower(tmp_path, capsys):
    old = _folder(tmp_path / "old", _runs(0, [1000, 1010, 990, 1005]) + _runs(10, [500, 505, 495], backend="torch")
                  + _runs(20, [300], workload="mlp_mnist") + _runs(30, [50, 52], workload="vgg_cifar10"))
    out = tmp_path / "out"
    assert main(["--compare", str(old), str(old), "--out", str(out), "--fail-if-slower", "10%"]) == Exit.OK
    rows = list(csv.DictReader((out / C.CHANGES).open()))
    verdicts = {(r["workload"], r["backend"]): r["verdict"] for r in rows}
    assert verdicts == {("cnn_cifar10", "jax"): C.NONE, ("cnn_cifar10", "torch"): C.NONE,
                        ("mlp_mnist", "jax"): C.FEW, ("vgg_cifar10", "jax"): C.NONE}
    before = (out / C.CHANGES).read_bytes()
    assert main(["--compare", str(old), str(old), "--out", str(out)]) == Exit.OK
    assert (out / C.CHANGES).read_bytes() == before  # stable for diffing
    # NEW: jax 30% slower, torch unchanged, mlp one run a side, vgg gone, a new workload
    new = _folder(tmp_path / "new", _runs(0, [700, 707, 693, 703], host="h2")
                  + _runs(10, [502, 497, 499], "cnn_cifar10", "torch", "h2")
                  + _runs(20, [280], workload="mlp_mnist", host="h2")
                  + _runs(40, [10, 11], workload="lstm_textgen", host="h2"))
    capsys.readouterr()
    assert main(["--compare", str(old), str(new), "--out", str(out), "--fail-if-slower", "10%"]) == Exit.SLOWER == 6
    said = capsys.readouterr()
    assert "significantly slower by more than 10%" in said.err and "slower: cnn_cifar10 jax cpu" in said.out
    rows = {(r["workload"], r["backend"]): r for r in csv.DictReader((out / C.CHANGES).open())}
    assert rows["cnn_cifar10", "jax"]["verdict"] == C.SLOWER and float(rows["cnn_cifar10", "jax"]["ratio"]) < 0.71
    assert float(rows["cnn_cifar10", "jax"]["ratio_high"]) < 0.9 and rows["cnn_cifar10", "jax"]["confidence"] == "0.99"
    assert rows["cnn_cifar10", "torch"]["verdict"] == C.NONE and rows["cnn_cifar10", "torch"]["runs_needed_a_side"]
    assert (rows["mlp_mnist", "jax"]["verdict"], rows["mlp_mnist", "jax"]["old_runs"]) == (C.FEW, "1")
    page = (out / "compare.html").read_text()
    assert "vgg_cifar10" in page.split("On the OLD side only")[1] and "lstm_textgen" in page.split(
        "On the NEW side only")[1]
    assert "machines" in page and "What differs between the sides" in page
    # a threshold the slow-down does not pass: 0
    assert main(["--compare", str(old), str(new), "--out", str(out), "--fail-if-slower", "0.5"]) == Exit.OK
    # bad input: a clear error, exit 2, nothing written
    assert main(["--compare", str(old), str(tmp_path / "none"), "--out", str(tmp_path / "o2")]) == Exit.BAD_GRID
    assert main(["--compare", str(old), str(new), "--fail-if-slower", "150%", "--out", str(out)]) == Exit.BAD_GRID
    assert main([str(PROJECT_ROOT / "params" / "smoke.yaml"), "--fail-if-slower", "10%"]) == Exit.BAD_GRID
    assert not (tmp_path / "o2").exists()


GRID = ("defaults:\n  device: cpu\n  backend: jax\n  data_source: synthetic\n  epochs: 4\n  min_steady_s: 0.3\n"
        "  threads: 1\npoints:\n{points}")
POINT = "  - workload: mlp_mnist\n    batch_size: {}\n    n_train: 4096\n    repeats: {}\n"  # an epoch ~0.4 s, 1 thread
SLOWED, KEPT = 1024, 512  # batch sizes: the configuration whose step the second run slows, the one it leaves
SLOW_XLA = "--xla_backend_optimization_level=0"  # the slowed configuration's compiler setting
MORE_RUNS = 8  # runs a side the test goes on to where the comparison asks for more (a loaded machine)


def _run(tmp_path, side: str, repeats: dict[int, int], slowed: bool) -> None:
    """The grid's points of batch size b with ``repeats[b]`` runs each (those done before kept) into
    ``tmp_path/side``; with ``slowed``, XLA's code generation at its least optimised level (``XLA_FLAGS``:
    ``--xla_backend_optimization_level=0``, kept through the kernel by ``CGB_KEEP_ENV``): the same model and HLO, a
    step 2.3x as long on one core (0.35 s -> 0.81 s an epoch, this test's batch of 1024, measured on the 2-core
    machine). JAX, with the suite's compilation cache: a point takes 8 s, against 14 s on PyTorch (Keras on PyTorch
    imports for 11.7 s), and this test starts twelve."""
    grid = tmp_path / f"{side}-{'-'.join(map(str, repeats))}.yaml"
    grid.write_text(GRID.format(points="".join(POINT.format(b, n) for b, n in repeats.items())))
    # the suite's compilation cache: a run loads the executable an earlier run compiled instead of compiling it again
    # (a point 14.7 s -> 8 s: model build and first epoch; its steady-state epochs, all this test compares, run the
    # same executable either way; keyed by XLA's flags, so the slowed runs have entries of their own)
    env = env_for(tmp_path / side, CGB_OFFLINE="1", **XLA_CACHE)
    for k in ("XLA_FLAGS", "CGB_KEEP_ENV"):
        env.pop(k, None)
    if slowed:
        env.update(XLA_FLAGS=SLOW_XLA, CGB_KEEP_ENV="XLA_FLAGS")
    res = subprocess.run(["bash", str(PROJECT_ROOT / "run_all.sh"), str(grid), "--no-report"], env=env,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]


def _changes(out) -> dict[int, dict]:
    """The comparison's rows (``C.CHANGES``) by batch size."""
    with (out / C.CHANGES).open(newline="") as f:
        return {int(r["batch_size"]): r for r in csv.DictReader(f)}


@pytest.mark.xdist_group("timing")
def test_real_cpu_runs_of_one_grid_the_second_slowed(tmp_path):
    """A grid of two real configurations (mlp_mnist on JAX on one thread, batch 1024 and 512), run twice through the
    runner; the second run slows one configuration's step (batch 1024: XLA's code generation at its least optimised,
    ``SLOW_XLA``, less than half as fast; 4 runs a side) and leaves the other as it was (2 runs a side: no
    difference needs no more). The comparison calls the first *slower*, with its confidence, and the second *no
    difference shown*; exit 6 (SLOWER) under --fail-if-slower.

    The two runs are taken in rounds, each round adding runs to both sides in turn (the runner resumes a folder: a
    grid of more repeats runs only the runs still to do), so that both sides of the configuration left alone meet the
    same load of this machine: the other tests of the suite share its two cores, and two runs taken minutes apart
    measured that load (0.37x), not the configuration. One thread: a point of several threads beside another
    process's load slows down by more than its share. (The slow-down is the compiler's, not a load.)"""
    if "jax" not in INSTALLED:
        pytest.skip("needs JAX")
    for slowed, kept in ((2, 1), (4, 2)):  # rounds; the configuration left alone needs two runs a side, not four
        _run(tmp_path, "old", {SLOWED: slowed, KEPT: kept}, slowed=False)
        _run(tmp_path, "new", {SLOWED: slowed}, slowed=True)
        _run(tmp_path, "new", {KEPT: kept}, slowed=False)
    out = tmp_path / "cmp"
    args = ["--compare", str(tmp_path / "old"), str(tmp_path / "new"), "--out", str(out), "--fail-if-slower", "20%"]
    code = main(args)
    rows = _changes(out)
    # as a user would: where the runs show no difference yet and the comparison says how many runs a side would, at
    # most MORE_RUNS, take them (the suite's other tests load these cores: 4 runs a side once gave p = 0.0101 at a
    # ratio of 0.49, one run's spread too wide for Welch's test at three degrees of freedom)
    need = int(float(rows[SLOWED]["runs_needed_a_side"] or 0))
    if rows[SLOWED]["verdict"] == C.NONE and 0 < need <= MORE_RUNS:
        more = max(need, 5)
        _run(tmp_path, "old", {SLOWED: more}, slowed=False)
        _run(tmp_path, "new", {SLOWED: more}, slowed=True)
        code = main(args)
        rows = _changes(out)
    slowed, kept = rows[SLOWED], rows[KEPT]
    assert slowed["verdict"] == C.SLOWER and float(slowed["ratio"]) < 0.75, slowed
    assert float(slowed["p_value"]) < 1 - C.CONFIDENCE and slowed["confidence"], slowed
    assert kept["verdict"] == C.NONE, kept
    # host-busy runs are left out where each side keeps MIN_QUIET quiet ones (the suite's other tests share these
    # cores): 2 to MORE_RUNS a side
    assert all(2 <= int(r["old_runs"]) <= MORE_RUNS and 2 <= int(r["new_runs"]) <= MORE_RUNS for r in rows.values())
    assert int(kept["old_runs"]) == int(kept["new_runs"]) == 2, kept
    assert code == Exit.SLOWER
    page = (out / "compare.html").read_text()
    # first what it measured, then what the test says, in a chart too
    assert 'class="cgb-fig"' in page and "the test over runs (99% confidence) says: 1 slower, 1 no difference" in page
