import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Every test writes under its own tmp folder; no network; an empty Keras cache."""
    monkeypatch.setenv("CGB_OUTPUTS", str(tmp_path / "outputs"))
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    monkeypatch.setenv("CGB_OFFLINE", "1")
    yield


@pytest.fixture(scope="session", autouse=True)
def _host_calibrated_once():
    """The host calibration measured once a session and handed down (``calibration.reusable``): the ~40 runners the
    tests start reuse it instead of taking 1.5 s each to measure it again."""
    from helpers.measure import calibration

    if calibration.reusable() is None:
        os.environ.update(calibration.export(calibration.measure()))
    yield


@pytest.fixture
def charts_not_drawn(monkeypatch):
    """Sections built with every chart made but not drawn to pixels (``charts.figure_html`` closes the figure and
    returns an empty image): for tests of what the sections say. Drawing is the test of the reports rendered for
    real (test_report's H100 report in Chromium, test_notebooks' shared run)."""
    import matplotlib.pyplot as plt

    from helpers.report.publish import charts

    def not_drawn(fig, alt=""):
        charts.readable(fig)
        plt.close(fig)
        return f'<img class="cgb-fig" alt="{alt}">'

    monkeypatch.setattr(charts, "figure_html", not_drawn)


@pytest.fixture(scope="session")
def kernel(tmp_path_factory):
    """A kernelspec for this Python (what the runner uses)."""
    from helpers.runner.engine import install_kernelspec

    old = {k: os.environ.get(k) for k in ("JUPYTER_PATH", "PYTHONPATH")}
    name = install_kernelspec(tmp_path_factory.mktemp("jupyter"))
    yield name
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


class WorkloadRun:
    """One backend's run of the workload points (``support/workload_points.py``): ``run[name]`` is the record of
    point ``name``; its chunk of points runs, in one fresh interpreter, the first time one of them is asked for."""

    def __init__(self, backend: str, root: Path):
        self.backend, self.root, self.logs = backend, root, {}

    def _folder(self, name: str) -> tuple[Path, str]:
        """The folder of point ``name``'s record and its chunk's output (the chunk run first if need be)."""
        from support.workload_points import chunk_of

        chunk = chunk_of(name, self.backend)
        if chunk not in self.logs:
            self.logs[chunk] = _run_chunk(self.backend, chunk, self.root / chunk)
        return self.root / chunk / "records" / name, self.logs[chunk]

    def __getitem__(self, name: str) -> dict:
        d, log = self._folder(name)
        err = d / "error.txt"
        files = sorted(d.glob("*.json"))
        if err.exists() and not files:
            raise AssertionError(f"{self.backend}/{name} raised:\n{err.read_text()[-4000:]}\n{log[-2000:]}")
        assert len(files) == 1, (self.backend, name, files, log[-3000:])
        return json.loads(files[0].read_text())

    def modules(self, name: str) -> dict:
        """Which frameworks the chunk's interpreter had imported once point ``name`` was done."""
        return json.loads((self._folder(name)[0] / "imported.txt").read_text())

    def script(self, name: str) -> str:
        """What script ``name`` (``workload_points.script``) printed, run after its chunk's points; its
        exception, if it raised, as this test's failure."""
        d, log = self._folder(name)
        err, out = d / "error.txt", d / "stdout.txt"
        if err.exists():
            printed = out.read_text()[-2000:] if out.exists() else ""
            raise AssertionError(f"script {name} on {self.backend} raised:\n{err.read_text()[-4000:]}\n{printed}")
        assert out.exists(), (self.backend, name, log[-3000:])
        return out.read_text()

    def error(self, name: str) -> str | None:
        err = self._folder(name)[0] / "error.txt"
        return err.read_text() if err.exists() else None


def _run_chunk(backend: str, chunk: str, root: Path) -> str:
    """One chunk of ``backend``'s points in a fresh interpreter (``support/every_workload.py``); its output."""
    from support import POINT_ENV, fast_xla, fresh_env
    from support.workload_points import points, scripts_of

    root.mkdir(parents=True, exist_ok=True)
    spec = {"backend": backend, "out": str(root / "records"), "points": points(backend, root / "data", chunk),
            "scripts": scripts_of(backend, chunk)}
    assert spec["points"] or spec["scripts"], (backend, chunk)
    (root / "spec.json").write_text(json.dumps(spec))
    env = fresh_env(backend, CGB_OFFLINE="1", CGB_OUTPUTS=str(root / "outputs"), **fast_xla(backend))
    for k in POINT_ENV:
        env.pop(k, None)
    res = subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "every_workload.py"),
                          str(root / "spec.json")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    print(res.stdout)
    return res.stdout + res.stderr


@pytest.fixture(scope="session")
def workload_runs(tmp_path_factory):
    """``workload_runs(backend)[name]``: point ``name`` of ``support/workload_points.py`` on ``backend``, trained
    through the code the notebooks call. Each chunk of a backend's points runs once a session in one fresh
    interpreter; the tests that read a chunk carry its mark ``xdist_group(workload_points.group(backend, name))``
    (``by_backend(name)``), so that one worker runs it."""
    runs: dict[str, WorkloadRun] = {}

    def run(backend: str) -> WorkloadRun:
        if backend not in runs:
            runs[backend] = WorkloadRun(backend, tmp_path_factory.mktemp(f"every-{backend}"))
        return runs[backend]

    return run


@pytest.fixture(scope="session")
def shared_run(tmp_path_factory):
    """The runner once over one point per workload, its report and a resume (``support/shared_run.py``). Tests
    that use it carry ``pytest.mark.xdist_group("shared_run")``."""
    from support.shared_run import SharedRun

    return SharedRun(tmp_path_factory.mktemp("shared"))


REFERENCE = ROOT / "reference" / "h100" / "records"


@pytest.fixture(scope="session")
def h100_page(tmp_path_factory):
    """The published H100 reference's page rendered once a session through the real path (``--report-only``:
    papermill, a kernel, nbconvert): ``(the runner's CompletedProcess, its output folder)``. Read by the browser's test
    of the page (test_report) and the one-string test over it (test_one_string), both in xdist group ``h100_page``:
    one render of 40 s instead of a second one built in the test's own process."""
    from support.runs import runner

    out = tmp_path_factory.mktemp("h100_page")
    return runner(["--report-only", "--inputs", REFERENCE], {"CGB_OUTPUTS": str(out)}), out


@pytest.fixture(scope="session")
def reference_ctx():
    """The published H100 reference's report context, built once a session (a context is not changed by what
    reads it). Tests that need no reference do not ask for it."""
    from helpers import report

    report.setup_plots()
    return report.build_context([REFERENCE], base_config={"device": "cpu", "backend": "jax"})


# ---------------------------------------------------------------- runner.main in this process, papermill faked

RUNNER_ENV = ("JUPYTER_PATH", "PYTHONPATH", "CGB_KERNEL_IPYTHONDIR")
GRID2 = "points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    seed: [1, 2]\n"


@pytest.fixture
def fake_papermill(monkeypatch, tmp_path):
    """``runner.main`` in this process with papermill's execution faked (no kernel: instant). The fake stages the record
    (``writer.keep``) and writes the notebook a real run writes; ``state["calls"]`` lists the parameters of every
    notebook run, in order; ``state["behaviour"]`` makes it fail as a full disk (``"notebook disk full"``) or a SIGTERM
    right after the record (``"sigterm after finish"``) would. Yields (state, outputs); SIGTERM and SIGINT restored
    after."""
    import errno
    import signal

    import nbformat
    import papermill

    from helpers.record import writer
    from helpers.record.ids import record_name
    from helpers.record.schema import empty_record

    outputs = tmp_path / "out"
    monkeypatch.setenv("CGB_OUTPUTS", str(outputs))
    for k in RUNNER_ENV:
        monkeypatch.setenv(k, os.environ.get(k, ""))
    old = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    state = {"calls": [], "kernel_env": [], "behaviour": "ok"}
    write_atomic = writer.write_atomic  # a test may fake writer.write_atomic: the notebook's own write is this one

    def fake_execute(input_path, output_path, parameters=None, **kw):
        state["calls"].append(dict(parameters))
        state["kernel_env"].append(dict(kw.get("kernel_env") or {}))
        n = len(state["calls"])
        rec = empty_record(parameters, parameters["point_id"])  # what the notebook's finish() writes
        rec.update(status="ok", started_at=f"2026-01-01T00:00:{n:02d}", fingerprint={"host": "h"},
                   first_epoch_s=2.0, epoch_s=[1.0], median_epoch_s=1.0, samples_per_s=100.0,
                   notebook=str((kw.get("kernel_env") or {}).get("CGB_EXECUTED_NOTEBOOK", "")))
        staged = (kw.get("kernel_env") or {}).get(writer.STAGE_ENV)  # as writer.keep: staged for the runner
        write_atomic(Path(staged) if staged else
                     Path(parameters["output_dir"]) / record_name(parameters, parameters["point_id"]), rec)
        text = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]))
        how = state["behaviour"]
        if how == "notebook disk full":
            Path(output_path).write_text(text[: len(text) // 2])
            raise OSError(errno.ENOSPC, "No space left on device", output_path)
        if how == "sigterm after finish":
            Path(output_path).write_text(text[: len(text) // 2])
            raise KeyboardInterrupt("signal 15")
        Path(output_path).write_text(text)

    monkeypatch.setattr(papermill, "execute_notebook", fake_execute)
    yield state, outputs
    signal.signal(signal.SIGTERM, old[0])
    signal.signal(signal.SIGINT, old[1])


@pytest.fixture
def in_process_runner(fake_papermill, tmp_path):
    """(state, gridfile, outputs): ``fake_papermill`` and a grid of two cnn_cifar10 points."""
    state, outputs = fake_papermill
    gridfile = tmp_path / "g.yaml"
    gridfile.write_text(GRID2)
    return state, gridfile, outputs


@pytest.fixture
def fake_runner(fake_papermill):
    """(calls, outputs): the parameters of every notebook run, in order."""
    state, outputs = fake_papermill
    return state["calls"], outputs


@pytest.fixture
def shard_runner(fake_papermill, monkeypatch, tmp_path):
    """(calls, reports, outputs): ``fake_runner`` with no shard variables set, a runners folder of its own, the
    set-up skipped and the report faked (``reports`` lists the folders each call rendered)."""
    from helpers.runner import grid_run, host_runners, summary
    from helpers.runner import shard as _shard

    state, outputs = fake_papermill
    monkeypatch.setenv(host_runners.RUNNERS_ENV, str(tmp_path / "runners"))
    for k in ("SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", _shard.COUNT_ENV, "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(k, raising=False)
    reports = []

    def fake_report(folders, run_dir, kernel, out_html, parameters=None):
        reports.append([str(f) for f in folders])
        Path(out_html).write_text("<html></html>")
        return out_html

    monkeypatch.setattr(summary, "render_report", fake_report)
    monkeypatch.setattr(grid_run, "run_setup", lambda log, gpu: None)
    return state["calls"], reports, outputs


@pytest.fixture
def slurm():
    """A private single-node Slurm started here (``support/slurm.py``): ``(environment for its clients, its folder)``;
    skipped, saying why, where Slurm is missing or cannot run. Tests that use it carry ``xdist_group("slurm")``."""
    from support.slurm import single_node

    yield from single_node()


@pytest.fixture(scope="session")
def tiny_notebooks(tmp_path_factory):
    """A folder of tiny workload notebooks (``support/tiny.py``): the runner's behaviour without a framework."""
    from support import tiny

    return tiny.make(tmp_path_factory.mktemp("tiny"))


def pytest_runtest_logreport(report):
    """With CGB_TEST_TIMELINE=<file>: each test phase's worker, start and stop appended as a JSON line (how the
    suite's time falls on the two workers: ``python tests/support/timeline.py <file>``)."""
    path = os.environ.get("CGB_TEST_TIMELINE")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if path and worker and hasattr(report, "start"):
        with open(path, "a") as f:
            f.write(json.dumps({"worker": worker, "test": report.nodeid, "when": report.when,
                                "start": report.start, "stop": report.stop}) + "\n")
