"""A busy host caught: a run records its own process's CPU time over the timed window against the
busy time of the cores it was allowed; a run whose host was busier than itself by more than a quarter of those cores
is marked host busy in its record, its progress line and the report, and left out of the configuration's figure
while an unmarked run of it exists (marked where none does). The runner's start line warns when the machine is
already loaded. Cheap: the measurement's own functions and a real busy loop for about a second, no kernel; and one
real point (a tiny mlp_mnist on JAX, in a kernel the runner starts) on a core that a busy loop holds while it trains."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.records import _ctx, _rec

from helpers.measure import host_load
from helpers.measure.sampler import Sampler
from helpers.point.record_figures import host_figures
from helpers.record.ids import notebook_path
from helpers.report.publish import csvs, sections
from helpers.report.words import fmt
from helpers.report.words.marks import precision_marks
from helpers.runner.progress import outcome

ROOT = Path(__file__).resolve().parents[1]

SPIN = "import os, time\nos.sched_setaffinity(0, {%d})\nend = time.time() + 8\nwhile time.time() < end:\n    pass\n"


@pytest.fixture()
def one_core_spun():
    """This process pinned to one core, and a busy loop on that core in a process that is not its child (started
    through a shell that exits at once, so its CPU time is another process's): about one core of load that is not
    this run's. Both undone after."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    before = os.sched_getaffinity(0)
    core = min(before)
    out = subprocess.run(["sh", "-c", f'"{sys.executable}" -c "$0" >/dev/null 2>&1 & echo $!', SPIN % core],
                         capture_output=True, text=True, check=True)
    pid = int(out.stdout.split()[0])
    os.sched_setaffinity(0, {core})
    try:
        time.sleep(0.2)  # the loop is spinning
        yield core
    finally:
        os.sched_setaffinity(0, before)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _busy_record(load: dict, i: int, sps: float) -> dict:
    return _rec(i, schema=4, host_load=load, host_busy=load["host_busy"], samples_per_s=sps,
                median_epoch_s=1000 / sps, epoch_s=[1000 / sps] * 3, point_id=f"busy-{i}", repeat=i)


def test_a_busy_loop_on_the_cores_marks_the_run_and_the_report_says_so(one_core_spun, tmp_path, charts_not_drawn):
    s = Sampler(interval=0.1, gpu_count=0, environ={})
    assert s.cores == [one_core_spun]
    with s:
        t0 = time.perf_counter()
        time.sleep(0.8)  # the "timed window": this process idles, the loop holds its one core
        t1 = time.perf_counter()
    rec = {}
    host_figures(rec, s, [(s.t0, t0), (t0, t1)])  # as fit_figures calls it: the steady epochs' bounds
    load = rec["host_load"]
    assert rec["host_busy"] is True and load["window"] == "steady-state epochs", load
    assert load["allowed_cores"] == 1 and load["others_cores"] > 0.5 > load["process_cores"], load
    # its progress line
    line = outcome({**_busy_record(load, 0, 1744.0), "status": "ok"})
    assert "HOST BUSY: other processes used" in line and "of its 1 allowed cores" in line, line
    # the report: alone, the figure rests on it and is marked; beside an unmarked run, it is left out
    alone = _ctx(tmp_path / "alone", [_busy_record(load, 0, 1744.0)])
    row = alone.summary.iloc[0]
    assert bool(row["host_busy"]) and "host busy: every run measured" in precision_marks(row)
    assert fmt.BUSY in csvs.configurations_frame(alone.costed)["marks"].iloc[0]  # the page's symbol
    assert "1 run(s) were measured on a busy host" in sections.build(sections.get("overview"), alone)._repr_html_()
    quiet = {**load, "others_cores": 0.0, "host_busy": False}
    both = _ctx(tmp_path / "both", [_busy_record(load, 0, 1744.0), _busy_record(quiet, 1, 3525.0)])
    row = both.summary.iloc[0]
    assert row["samples_per_s"] == pytest.approx(3525.0) and row["n_runs"] == 1 and row["n_host_busy"] == 1
    assert not bool(row["host_busy"]) and "1 host busy run(s) left out" in precision_marks(row)


def test_the_verdict_marks_a_side_that_rests_on_host_busy_runs_only(tmp_path, charts_not_drawn):
    load = {"window_s": 2.0, "process_cpu_s": 2.0, "cores_busy_s": 4.0, "allowed_cores": 2, "process_cores": 1.0,
            "others_cores": 1.0, "threshold_cores": 0.5, "host_busy": True}
    cpu = _busy_record(load, 0, 1000.0)
    gpu = _rec(1, schema=4, device="gpu", device_used="gpu", samples_per_s=50_000.0, median_epoch_s=0.02,
               epoch_s=[0.02] * 3, point_id="gpu-1",
               fingerprint={"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 4,
                            "gpu_names": ["NVIDIA H100 80GB HBM3"], "versions": {"keras": "3.15.1"}})
    ctx = _ctx(tmp_path, [cpu, gpu])
    v = csvs.verdict_frame(ctx)
    assert v["marks"].iloc[0].endswith(f"({fmt.BUSY} CPU side)"), v["marks"].tolist()
    page = sections.build(sections.get("verdict"), ctx)._repr_html_()
    assert "Host busy: cnn_cifar10 (host busy (CPU side))" in page and "· host busy (CPU side)" in page


def test_the_threshold_is_a_quarter_of_the_allowed_cores_beside_the_runs_own_use():
    a = {"t": 0.0, "proc_s": 0.0, "busy_s": 0.0, "cores": 2}

    def load(own, busy):
        return host_load.host_load(a, {"t": 2.0, "proc_s": own, "busy_s": busy, "cores": 2})

    assert not load(4.0, 4.0)["host_busy"]  # the run itself holds both cores: not busy
    assert not load(2.0, 2.9)["host_busy"]  # others 0.45 of 2 cores: under a quarter
    assert load(2.0, 3.1)["host_busy"]  # others 0.55 cores
    assert load(0.0, 4.0)["others_cores"] == 2.0
    assert host_load.host_load(a, a) is None and host_load.loaded_line(a, None) is None
    line = host_load.loaded_line(a, {"t": 1.0, "proc_s": 0.0, "busy_s": 1.5, "cores": 2})
    assert line.startswith("warning: the machine is already loaded: other processes use 1.5 of the 2 cores"), line
    assert host_load.loaded_line(a, {"t": 1.0, "proc_s": 0.5, "busy_s": 0.6, "cores": 2}) is None


def test_the_runners_start_line_warns_when_the_machine_is_already_loaded(monkeypatch):
    from helpers.measure import calibration
    from helpers.runner import plan

    readings = iter([{"t": 0.0, "proc_s": 0.0, "busy_s": 0.0, "cores": 2},
                     {"t": 1.0, "proc_s": 0.1, "busy_s": 1.9, "cores": 2}])
    monkeypatch.setattr(host_load, "reading", lambda *a, **k: next(readings))
    monkeypatch.setattr(calibration, "reusable", lambda: {"when": "now", "dispatch_mcalls_per_s": 1})
    monkeypatch.setattr(calibration, "export", lambda cal: None)
    monkeypatch.setattr(plan, "LOAD_WINDOW_S", 0.0)
    said = []
    plan.run_setup(said.append, gpu=False)
    assert any(s.startswith("warning: the machine is already loaded: other processes use 1.8 of the 2") for s in said)


def test_a_point_of_several_processes_on_this_host_is_never_marked():
    busy = {"window_s": 2.0, "process_cpu_s": 2.0, "cores_busy_s": 4.0, "allowed_cores": 2, "process_cores": 1.0,
            "others_cores": 1.0, "threshold_cores": 0.5, "host_busy": True}
    sampler = type("S", (), {"host_load": lambda self, a=None, b=None: dict(busy)})()
    rec = {}
    host_figures(rec, sampler, [(0.0, 1.0), (1.0, 3.0)], processes=2)  # its other process ate the second core
    assert rec["host_busy"] is False and "2 processes of this point" in rec["host_load"]["note"]
    host_figures(rec, sampler, [(0.0, 1.0), (1.0, 3.0)])
    assert rec["host_busy"] is True


# ------------------------------------------------------------------ a real point on a busy core

# A busy loop that waits for the point's training cell, then holds ``core`` with two spinning processes: started
# through a shell that exits at once (not a child of the run, nor of this process), in a session (and process group,
# so that one kill ends both) of its own. It spins from the moment papermill marks the ``pt.fit(`` cell running in
# the executed notebook (papermill saves it as each cell starts): the kernel's start and imports run at full speed,
# the timed window shares its core. ``spinning`` is touched when it starts; it gives up after 120 s whatever happens.
WATCH_AND_SPIN = """import glob, json, os, sys, time
core, pattern, flag = int(sys.argv[1]), sys.argv[2], sys.argv[3]
os.setsid()
os.sched_setaffinity(0, {core})
give_up = time.time() + 120


def training(path):
    try:
        with open(path) as f:
            cells = json.load(f)["cells"]
    except (OSError, ValueError, KeyError):
        return False  # not there yet, or caught half-written
    return any("pt.fit(" in "".join(c.get("source", "")) and
               c.get("metadata", {}).get("papermill", {}).get("status") in ("running", "completed") for c in cells)


while time.time() < give_up and not any(training(p) for p in glob.glob(pattern)):
    time.sleep(0.05)
open(flag, "w").close()
os.fork()
while time.time() < give_up:
    pass
"""

BUSY_GRID = """timeout_s: 300
points:
  - workload: mlp_mnist
    backend: jax
    device: cpu
    batch_size: 50
    n_train: 200
    epochs: 2
    min_steady_s: 0.6
    data_source: synthetic
"""


@pytest.mark.xdist_group("timing")  # its busy loop holds a core for seconds: never beside a test that times something
def test_a_real_point_on_a_core_held_by_a_busy_loop_is_marked_and_the_report_says_so(tmp_path, charts_not_drawn):
    """One real CPU point (mlp_mnist on JAX, tiny, in a real papermill kernel started by ``./run_all.sh``) with the
    runner, and so its kernel, pinned to one core, and a busy loop that is not the run's holding that core while
    the point trains: the record is marked host busy (another process used more than a quarter of the one allowed
    core over the timed window), the runner's progress line says HOST BUSY, and the report built from that record
    says the run was measured on a busy host."""
    from support import FAST_XLA
    from support.shared_run import env_for

    from helpers import report

    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no CPU affinity on this platform")
    core = min(os.sched_getaffinity(0))
    outputs = tmp_path / "outputs"
    grid = tmp_path / "busy.yaml"
    grid.write_text(BUSY_GRID)
    flag = tmp_path / "spinning"
    pattern = str(outputs / "runs" / "*" / "notebooks" / ".*.partial.ipynb")  # the notebook papermill executes
    out = subprocess.run(["sh", "-c", f'"{sys.executable}" -c "$0" "$1" "$2" "$3" >/dev/null 2>&1 & echo $!',
                          WATCH_AND_SPIN, str(core), pattern, str(flag)], capture_output=True, text=True, check=True)
    spinner = int(out.stdout.split()[0])  # its process group's id too (os.setsid)
    try:
        # behaviour, not speed: XLA's cheapest code generation in the kernel (kept through the kernel's clean-up)
        env = env_for(outputs, **FAST_XLA, CGB_KEEP_ENV="XLA_FLAGS")
        res = subprocess.run(["bash", str(ROOT / "run_all.sh"), "--current-python", str(grid), "--no-report"],
                             capture_output=True, text=True, env=env, timeout=240,
                             preexec_fn=lambda: os.sched_setaffinity(0, {core}))
    finally:
        for kill in (lambda: os.killpg(spinner, signal.SIGKILL), lambda: os.kill(spinner, signal.SIGKILL)):
            try:
                kill()
            except (ProcessLookupError, PermissionError):
                pass
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-3000:]
    assert flag.exists(), "the busy loop never saw the training cell start"
    (path,) = outputs.glob("runs/*/records/*.json")
    rec = json.loads(path.read_text())
    load = rec["host_load"]
    assert rec["status"] == "ok" and rec["device_used"] == "cpu", rec.get("reason")
    assert rec["host_busy"] is True and load["allowed_cores"] == 1, load
    assert load["others_cores"] > load["threshold_cores"] == 0.25, load
    # the runner's progress line, and the executed notebook's output
    (line,) = [s for s in res.stdout.splitlines() if s.startswith("[1/1] mlp_mnist jax/cpu")]
    assert "  ok  " in line and "  HOST BUSY: other processes used " in line and "of its 1 allowed cores" in line, line
    assert "host busy: other processes used" in notebook_path(rec, path).read_text()
    # the report, from that record
    ctx = report.build_context([outputs / "runs"], use_reference=False)
    row = ctx.summary.iloc[0]
    assert bool(row["host_busy"]) and "host busy: every run measured" in precision_marks(row)
    assert "1 run(s) were measured on a busy host" in sections.build(sections.get("overview"), ctx)._repr_html_()


def test_a_figure_on_busy_host_runs_only_carries_its_mark_in_every_section_that_shows_it(tmp_path):
    """A CPU configuration whose two runs were both measured on a busy host: its figure carries § wherever it is
    shown (the verdict's chart, table and like-for-like table, the speedup, samples/s, cost, first epoch and
    backends sections, the CSVs), the mark explained once; a quiet configuration beside it carries none."""
    import re

    from helpers.report.words import fmt

    load = {"window_s": 2.0, "process_cpu_s": 2.0, "cores_busy_s": 4.0, "allowed_cores": 2, "process_cores": 1.0,
            "others_cores": 1.0, "threshold_cores": 0.5, "host_busy": True}
    busy = [_busy_record(load, i, sps) for i, sps in ((0, 1000.0), (1, 1040.0))]
    quiet = [_rec(2 + i, schema=4, backend="torch", samples_per_s=sps, median_epoch_s=1000 / sps,
                  epoch_s=[1000 / sps] * 3, point_id=f"quiet-{i}", repeat=i) for i, sps in enumerate((700.0, 720.0))]
    gpu = [_rec(4 + i, schema=4, device="gpu", device_used="gpu", samples_per_s=sps, median_epoch_s=1000 / sps,
                epoch_s=[1000 / sps] * 3, point_id=f"gpu-{i}", repeat=i,
                fingerprint={"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 4,
                             "gpu_names": ["NVIDIA H100 80GB HBM3"], "versions": {"keras": "3.15.1"}})
           for i, sps in enumerate((50_000.0, 51_000.0))]
    for r in busy + quiet:  # one machine: the GPU box's own CPU
        r["fingerprint"] = {**gpu[0]["fingerprint"]}
    ctx = _ctx(tmp_path, busy + quiet + gpu)
    summ = ctx.summary.set_index(["backend", "device"])
    assert bool(summ.loc[("jax", "cpu"), "host_busy"]) and not bool(summ.loc[("torch", "cpu"), "host_busy"])
    shown_busy = fmt.sps_shown(summ.loc[("jax", "cpu")].to_dict())
    built = {s.name: s for s in sections.build_all(ctx)}
    for name in ("verdict", "speedup", "throughput", "cost", "first_epoch", "backends"):
        text = re.sub(r"<[^>]+>", " ", built[name]._repr_html_())
        assert fmt.BUSY in text, name
    text = re.sub(r"<[^>]+>", " ", built["throughput"]._repr_html_())
    assert re.search(rf"{re.escape(shown_busy)} \[[^\]]+\] {fmt.BUSY}", text), text[:3000]
    assert not re.search(rf"{re.escape(fmt.sps_shown(summ.loc[('torch', 'cpu')].to_dict()))} \[[^\]]+\] "
                         rf"[†‡]*{fmt.BUSY}", text)
    verdict = re.sub(r"<[^>]+>", " ", built["verdict"]._repr_html_())
    assert re.search(rf"{re.escape(shown_busy)} {fmt.BUSY}", verdict)  # like for like: the CPU side's figure
    assert re.search(rf"\d× [†‡]*{fmt.BUSY}", verdict)  # the speedup, in the chart's labels and the table
    explained = [n for n, s in built.items() if fmt.esc(fmt.MARKS_NOTE) in s._repr_html_()]
    assert explained == ["verdict"]
    conf = csvs.configurations_frame(ctx.costed).set_index(["backend", "device"])
    assert fmt.BUSY in conf.loc[("jax", "cpu"), "marks"] and fmt.BUSY not in conf.loc[("torch", "cpu"), "marks"]
    assert "host busy" not in " ".join(conf["marks"])  # the page's symbols
    verdict_csv = csvs.verdict_frame(ctx)
    assert all(fmt.BUSY in m and "host busy" not in m for m in verdict_csv["marks"]), list(verdict_csv["marks"])
    # every figure derived from the busy runs carries §: utilisation, first epoch, costs, durations in sentences
    row = summ.loc[("jax", "cpu")].to_dict()
    util = re.sub(r"<[^>]+>", " ", built["utilisation"]._repr_html_())
    assert fmt.shown(row["s_per_step"], row) in util and fmt.shown(row["s_per_step"], row).endswith(fmt.BUSY)
    assert fmt.shown(row["total_s"], row) in util
    first = re.sub(r"<[^>]+>", " ", built["first_epoch"]._repr_html_())
    compile_s = fmt.marked(fmt.rounded(max(0.0, row["first_epoch_s"] - row["s_per_epoch"]), 2), fmt.row_marks(row))
    assert compile_s.endswith(fmt.BUSY) and compile_s in first, first[:2000]
    cost = re.sub(r"<[^>]+>", " ", built["cost"]._repr_html_())
    assert re.search(rf"[\d.,]+ [†‡]*{fmt.BUSY}", cost)
    assert re.search(rf"take [\d.,]+ (s|min|h|days) [†‡]*{fmt.BUSY} on the CPU", verdict), verdict[:3000]
