"""The runner's repeats, size guard and progress (issues 14 item 2, 18 items 2-3).

Most tests drive ``runner.main`` in this process with papermill's execution faked (no kernel: instant);
one runs real points in fresh kernels (repeat fields, resume counting repeats, the live epoch lines).
"""

import json
import os
import signal
from pathlib import Path

import nbformat
from support import tiny

from helpers import grid
from helpers.exits import Exit
from helpers.measure import fingerprint
from helpers.record.ids import notebook_path
from helpers.record.reader import read_records
from helpers.record.schema import empty_record
from helpers.record.writer import write_atomic
from helpers.runner import cli as runner
from helpers.runner import plan
from helpers.runner import progress as progress_mod

GRID = """timeout_s: 600
repeats: {repeats}
points:
  - workload: cnn_cifar10
    backend: jax
    device: cpu
    batch_size: 100
    epochs: 2
    n_train: 300
    min_steady_s: 0.1
    data_source: synthetic
    seed: {seeds}
"""


def grid_file(tmp_path: Path, repeats=1, seeds=(1, 2)) -> Path:
    path = tmp_path / "g.yaml"
    path.write_text(GRID.format(repeats=repeats, seeds=list(seeds)))
    return path


def records(outputs: Path) -> list[dict]:
    recs, skipped = read_records([outputs / "runs"])
    assert not skipped
    return recs


# ------------------------------------------------------------------ repeats

def test_repeats_run_interleaved_with_their_own_ids_fields_and_resume(fake_runner, tmp_path, capsys):
    calls, outputs = fake_runner
    g = grid_file(tmp_path, repeats=2)
    assert runner.main([str(g), "--no-report"]) == 0
    # all configurations once, then all again
    assert [c["seed"] for c in calls] == [1, 2, 1, 2]
    base = {c["seed"]: c["point_id"] for c in calls[:2]}
    assert [c["point_id"] for c in calls[2:]] == [f"{base[1]}-r1", f"{base[2]}-r1"]
    assert "repeats" not in calls[0] and "_repeat" not in calls[0]  # not notebook parameters
    recs = {r["point_id"]: r for r in records(outputs)}
    assert len(recs) == 4 and len({Path(r["notebook"]).name for r in recs.values()}) == 4
    for pid in base.values():
        assert recs[pid]["repeat"] == 0 and recs[pid]["config_id"] == pid  # repeat 0 keeps today's id
        assert recs[f"{pid}-r1"]["repeat"] == 1 and recs[f"{pid}-r1"]["config_id"] == pid
    out = capsys.readouterr().out
    assert "repeat 2/2" in out and "4 runs of 2 points" in out

    # resume counts repeats: with repeats 3 only the third run of each configuration is left
    g = grid_file(tmp_path, repeats=3)
    assert runner.main([str(g), "--no-report"]) == 0
    assert [c["point_id"] for c in calls[4:]] == [f"{base[1]}-r2", f"{base[2]}-r2"]
    assert capsys.readouterr().out.count("not run again") == 4
    # --rerun runs every repeat again
    assert runner.main([str(g), "--no-report", "--rerun"]) == 0
    assert len(calls) == 6 + 6 and "not run again" not in capsys.readouterr().out


def test_validate_only_lists_every_run_with_its_repeat(fake_runner, tmp_path, capsys):
    calls, outputs = fake_runner
    assert runner.main([str(grid_file(tmp_path, repeats=2)), "--validate-only"]) == 0
    out = capsys.readouterr().out.splitlines()
    runs = [line for line in out if line.startswith("[")]
    assert [line.split("  ")[-1] for line in runs] == ["repeat 1/2", "repeat 1/2", "repeat 2/2", "repeat 2/2"]
    assert out[-1] == "2 points valid, 4 runs" and "size: 4 runs in 1 block(s)" in out[0]
    assert not calls and not outputs.exists()


def test_a_skip_without_kernel_carries_the_repeat_fields(fake_runner, tmp_path, monkeypatch):
    calls, outputs = fake_runner
    monkeypatch.setattr(plan, "has_nvidia_gpu", lambda: False)
    g = tmp_path / "gpu.yaml"
    g.write_text("repeats: 2\npoints:\n  - {workload: cnn_cifar10, backend: jax, device: gpu}\n")
    assert runner.main([str(g), "--no-report"]) == 0
    recs = sorted(records(outputs), key=lambda r: r["repeat"])
    assert not calls and [r["status"] for r in recs] == ["skipped", "skipped"]
    assert [r["repeat"] for r in recs] == [0, 1] and recs[1]["point_id"] == recs[0]["config_id"] + "-r1"


# ------------------------------------------------------------------ the size guard

BIG = """points:
  - workload: cnn_cifar10
    backend: jax
    device: cpu
    batch_size: {twenty}
    n_train: {twenty}
    seed: {twenty}
    n_val: {twenty}
"""


def test_a_runaway_block_is_refused_at_once_and_nothing_is_written(fake_runner, tmp_path, capsys, monkeypatch):
    calls, outputs = fake_runner

    def no_expansion(*a, **k):
        raise AssertionError("the grid was expanded")

    monkeypatch.setattr(grid, "expand_all", no_expansion)
    g = tmp_path / "big.yaml"
    g.write_text(BIG.format(twenty=list(range(1, 21))))
    assert runner.main([str(g), "--no-report"]) == Exit.BAD_GRID == 2
    err = capsys.readouterr().err
    assert "over the size guard (more than 500 runs)" in err and "--yes" in err and "nothing was run" in err
    assert f"{g}: points[1]: 160,000 runs (batch_size 20 x n_train 20 x seed 20 x n_val 20)" in err
    assert "size: 160,000 runs in 1 block(s)" in err
    assert not outputs.exists() and not calls


def test_yes_lets_a_grid_over_the_guard_through(fake_runner, tmp_path, capsys, monkeypatch):
    calls, outputs = fake_runner
    monkeypatch.setattr(plan, "GUARD_RUNS", 3)
    g = grid_file(tmp_path, repeats=2)  # 4 runs
    assert runner.main([str(g), "--no-report"]) == 2
    assert "more than 3 runs" in capsys.readouterr().err and not outputs.exists() and not calls
    assert runner.main(["validate", str(g)]) == 0  # warns, lists, exits 0
    out = capsys.readouterr().out
    assert "over the size guard (more than 3 runs)" in out and "--yes" not in out and "4 runs" in out
    assert runner.main([str(g), "--no-report", "--yes"]) == 0
    assert len(calls) == 4 and len(records(outputs)) == 4


def fake_record(folder: Path, i: int, wall_s: float, machine_key: str, workload="cnn_cifar10") -> None:
    params = {"workload": workload, "backend": "jax", "device": "cpu", "seed": 100 + i}
    rec = empty_record(params, f"old{i}")
    nb = folder / "notebooks" / f"old{i}.ipynb"
    nb.parent.mkdir(parents=True, exist_ok=True)
    nb.write_text(nbformat.writes(nbformat.v4.new_notebook()))
    rec.update(status="ok", wall_s=wall_s, started_at=f"2026-01-01T00:00:{i:02d}",
               fingerprint={"host": "h", "machine_key": machine_key}, notebook=f"../notebooks/old{i}.ipynb")
    write_atomic(folder / "records" / f"old{i}.json", rec)


def test_the_estimate_from_earlier_records_of_this_machine_guards_a_long_grid(fake_runner, tmp_path, capsys):
    calls, outputs = fake_runner
    here = fingerprint.host_key()
    old = outputs / "runs" / "old"
    for i, wall in enumerate([3000.0, 5000.0, 4000.0]):  # the same workload/backend/device: median 4000 s
        fake_record(old, i, wall, here)
    fake_record(old, 3, 1.0, here, workload="mlp_mnist")  # another workload: not used for these points
    fake_record(old, 4, 1.0e6, "another|machine")  # another machine: never used
    g = grid_file(tmp_path, repeats=2)  # 4 runs x 4000 s = 4.4 h > 3 h
    before = sorted(p.relative_to(outputs) for p in outputs.rglob("*"))
    assert runner.main([str(g), "--no-report"]) == 2
    err = capsys.readouterr().err
    assert "over the size guard (estimated over 3.0 h)" in err
    assert "estimated 4.4 h on this machine: 4 run(s) at the median wall time of earlier runs of the same " \
           "workload, backend and device (3 record(s))" in err
    assert sorted(p.relative_to(outputs) for p in outputs.rglob("*")) == before and not calls  # nothing written
    assert runner.main([str(g), "--validate-only"]) == 0
    assert "estimated 4.4 h" in capsys.readouterr().out
    # no record of this kind: the median of every record of this machine (3500 s), 2 runs = 1.9 h: under
    g = tmp_path / "vgg.yaml"
    g.write_text("repeats: 2\npoints:\n  - {workload: vgg_cifar10, backend: torch, device: cpu}\n")
    assert runner.main([str(g), "--validate-only"]) == 0
    out = capsys.readouterr().out
    assert "estimated 1.9 h on this machine: 2 at the median of every earlier run (3500.0 s, 4 record(s))" in out
    assert "size guard" not in out


# ------------------------------------------------------------------ progress

def test_progress_text():
    assert progress_mod.progress(5, 5, []) == "[5 runs to go]"  # no time left before a point has run
    assert progress_mod.progress(3, 2, [10.0, 20.0]) == "[3 runs to go, <1 min left]"  # 2 runs with a kernel x 15 s
    assert progress_mod.progress(1, 1, [470.0]) == "[1 run to go, 8 min left]"  # time left, not a clock time
    assert progress_mod.progress(0, 0, [10.0]) == "[0 runs to go, 0 min left]"
    assert progress_mod.progress(2, 2, [1800.0, 1830.0]) == "[2 runs to go, 1 h 01 min left]"


def test_each_line_says_the_runs_left_and_the_eta_after_a_point_has_run(fake_runner, tmp_path, capsys):
    calls, outputs = fake_runner
    g = grid_file(tmp_path, repeats=1, seeds=(1,))
    assert runner.main([str(g), "--no-report"]) == 0  # seed 1 done before on the next run
    capsys.readouterr()
    g = grid_file(tmp_path, repeats=2, seeds=(1, 2))
    assert runner.main([str(g), "--no-report"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    # done before: costs nothing, no ETA yet; then every line after a run has its ETA
    assert "done before" in lines[0] and lines[0].endswith("[3 runs to go]")
    assert lines[1].endswith("[2 runs to go, 0 min left]") and " ok " in lines[1]
    assert lines[2].endswith("[1 run to go, 0 min left]") and lines[3].endswith("[0 runs to go, 0 min left]")


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_live_epochs_are_kept_until_the_threshold_then_printed_as_they_come():
    shown, clock = [], Clock()
    live = progress_mod.LiveEpochs(shown.append, after_s=60.0, clock=clock)
    live.write("data: synthetic\nepoch 1: 4.1 s  loss=2.3\nepo")
    live.write("ch 2: 0.2 s  loss=2.2; steady window 0.20 s\n")
    clock.t = 59.0
    live.write("epoch 3: 0.2 s\n")
    assert shown == [] and not live.live  # a short point prints nothing
    clock.t = 61.0
    live.write("record: x.json\n")  # the first output after 60 s: the kept epoch lines, indented
    assert shown == ["  epoch 1: 4.1 s  loss=2.3", "  epoch 2: 0.2 s  loss=2.2; steady window 0.20 s",
                     "  epoch 3: 0.2 s"]
    live.write("epoch 4: 0.3 s\n")  # then each one as it comes
    assert shown[-1] == "  epoch 4: 0.3 s" and len(shown) == 4
    live.write("epoch 5: 0.3 s")  # no newline yet
    assert len(shown) == 4
    live.close()
    assert shown[-1] == "  epoch 5: 0.3 s"


def test_live_epochs_go_live_at_the_threshold_without_more_output():
    shown, clock = [], Clock()
    live = progress_mod.LiveEpochs(shown.append, after_s=60.0, clock=clock, title="[1/3] point  running for over 60 s:")
    live.write("epoch 1: 50.0 s\n")
    live.go_live()  # what the timer calls at 60 s: the title once, then the epochs
    live.write("epoch 2: 20.0 s\n")
    assert shown == ["[1/3] point  running for over 60 s:", "  epoch 1: 50.0 s", "  epoch 2: 20.0 s"]
    shown.clear()
    short = progress_mod.LiveEpochs(shown.append, after_s=60.0, clock=clock)
    short.write("epoch 1: 1.0 s\n")
    short.close()  # ended before 60 s: nothing printed
    assert shown == []


# ------------------------------------------------------------------ real kernels

def test_real_runs_repeats_resume_and_live_epochs(tmp_path, monkeypatch, capsys, tiny_notebooks):
    """A real point in a fresh kernel: its epochs printed live (threshold lowered), the record's repeat fields;
    then resume counting repeats (one run done, repeats: 3 runs the other two, in tiny notebooks:
    support/tiny.py)."""
    outputs = tmp_path / "out"
    monkeypatch.setenv("CGB_OUTPUTS", str(outputs))
    for k in ("JUPYTER_PATH", "PYTHONPATH", "CGB_EXECUTED_NOTEBOOK", "CGB_KERNEL_STDERR", "CGB_KERNEL_IPYTHONDIR",
              "CGB_POINT_DEADLINE"):
        monkeypatch.setenv(k, os.environ.get(k, ""))
    monkeypatch.setattr(progress_mod, "LIVE_AFTER_S", 0.0)
    old_term = signal.getsignal(signal.SIGTERM)
    try:
        assert runner.main([str(grid_file(tmp_path, repeats=1, seeds=(1,))), "--no-report"]) == 0
        out = capsys.readouterr().out
        assert "n_train=300  running for over 0 s:\n  epoch 1: " in out  # printed live, indented; no repeat
        assert "\n  epoch 2: " in out
        (log,) = outputs.glob("runs/*/run.log")
        assert "\n  epoch 2: " in log.read_text()
        (first,) = records(outputs)
        assert first["status"] == "ok", first.get("reason")
        assert first["repeat"] == 0 and first["config_id"] == first["point_id"]

        monkeypatch.setattr(progress_mod, "LIVE_AFTER_S", 1e6)  # points shorter than this print no epoch
        for k, v in tiny.env(tiny_notebooks).items():
            monkeypatch.setenv(k, v)
        assert runner.main([str(grid_file(tmp_path, repeats=3, seeds=(1,))), "--no-report"]) == 0
        out = capsys.readouterr().out
        assert out.count("not run again") == 1 and "\n  epoch" not in out
        assert "[1 run to go, " in out and "[0 runs to go, " in out
    finally:
        signal.signal(signal.SIGTERM, old_term)
    recs = {r["repeat"]: r for r in records(outputs)}
    assert sorted(recs) == [0, 1, 2] and all(r["status"] == "ok" for r in recs.values())
    base = first["point_id"]
    assert [recs[k]["point_id"] for k in (1, 2)] == [f"{base}-r1", f"{base}-r2"]
    assert all(recs[k]["config_id"] == base and recs[k]["params"]["point_id"] == recs[k]["point_id"] for k in recs)
    notebooks = {notebook_path(r) for r in recs.values()}
    assert len(notebooks) == 3 and all(nb.is_file() for nb in notebooks)
    assert json.loads(notebook_path(recs[2]).read_text())["cells"]


def test_bytecode_note_when_the_kernel_would_compile_its_imports_each_time(tmp_path, monkeypatch):
    """PYTHONDONTWRITEBYTECODE with no cached bytecode: the run says what each kernel start pays and the
    fix; with bytecode cached, or Python free to write it, it says nothing."""
    import py_compile

    from helpers.runner import plan

    (tmp_path / "kmod_nobc.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    note = plan.bytecode_note(dont_write=True, module="kmod_nobc")
    assert note and "PYTHONDONTWRITEBYTECODE" in note and "compileall" in note
    assert plan.bytecode_note(dont_write=False, module="kmod_nobc") is None
    py_compile.compile(str(tmp_path / "kmod_nobc.py"))  # the cached .pyc beside it
    assert plan.bytecode_note(dont_write=True, module="kmod_nobc") is None
    assert plan.bytecode_note(dont_write=True, module="no_such_module_here") is None
