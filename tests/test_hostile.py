"""Untrusted records and notebooks: each hostile input costs itself only, within a stated time.

The hostile record set is tests/support/hostile.py's (the benchmark renders 1,000 good records beside it). Each case is
fed beside good records; the report must tabulate every good record, list the bad file with its reason, build
every section, and finish within ``BOUND_S``. The browser test renders the whole set through the runner and opens
report.html, index.html and the notebook page in headless Chromium with the network logged: no request at all.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from html import unescape
from pathlib import Path

import nbformat
import pytest
from support.hostile import CASES, SECRET_HOST, write_hostile, write_hostile_notebook
from support.runs import complete_ok_records, good_record, write

from helpers.paths import PROJECT_ROOT
from helpers.record import schema
from helpers.record.ids import notebook_path
from helpers.record.reader import read_records
from helpers.runner import cli as runner

BOUND_S = 60.0  # reading, tabulating and building every section for 3 good records and the hostile set
GOOD = ["p0", "p1", "p2"]


@pytest.fixture(scope="module")
def hostile_ctx(tmp_path_factory):
    from helpers import report
    from helpers.report.publish import sections

    base = tmp_path_factory.mktemp("hostile")
    for i in range(3):
        write(base / "good", f"good{i}.json", good_record(i, point_id=f"p{i}", started_at=f"2026-01-01T00:00:0{i}"))
    expected = write_hostile(base / "bad", good_record(7), base / "outside")
    t0 = time.perf_counter()
    ctx = report.build_context([base / "good", base / "bad"], use_reference=False)
    html = {m.__name__: sections.build(m, ctx)._repr_html_() for m in sections.modules()}
    return ctx, html, expected, time.perf_counter() - t0


@pytest.mark.xdist_group("timing")  # a wall-clock bound: one such test at a time
@pytest.mark.parametrize("name", list(CASES))
def test_each_hostile_record_costs_only_itself(hostile_ctx, name):
    ctx, html, expected, took = hostile_ctx
    assert sorted(ctx.df["point_id"]) == GOOD  # every good record, nothing of a bad one
    why = {Path(p).name: w for p, w in ctx.skipped}
    assert expected[name] in why.get(name, ""), (name, why.get(name))
    overview = unescape(html["helpers.report.publish.sections.overview"])
    assert f"{len(expected)} JSON file(s) skipped" in overview and expected[name].split(" (")[0] in overview
    assert not [m for m, h in html.items() if "failed to build" in h]
    assert SECRET_HOST not in "".join(html.values())
    assert took < BOUND_S


# conflicting copies of one run are both kept, apart: test_hostile_bounds.py


def test_a_record_that_breaks_the_checks_or_the_table_costs_only_itself(tmp_path, monkeypatch):
    from helpers import report
    from helpers.report.load import table

    for i in range(3):
        write(tmp_path, f"r{i}.json", good_record(i))
    real_row, real_problem = table.row, schema._problem

    def row(r):
        if r["point_id"] == "p1":
            raise RuntimeError("a crafted value")
        return real_row(r)

    def problem(obj):
        if obj["point_id"] == "p2":
            raise OverflowError("int too large")
        return real_problem(obj)

    monkeypatch.setattr(table, "row", row)
    monkeypatch.setattr(schema, "_problem", problem)
    ctx = report.build_context([tmp_path], use_reference=False)
    assert list(ctx.df["point_id"]) == ["p0"]
    why = {Path(p).name: w for p, w in ctx.skipped}
    assert why == {"r1.json": "could not be tabulated (RuntimeError)",
                   "r2.json": "could not be checked (OverflowError)"}


def test_validate_only_reads_hostile_records_under_outputs_without_dying(tmp_path):
    outputs = tmp_path / "outputs"
    write_hostile(outputs / "runs" / "old" / "records", good_record(0, wall_s=6.0), tmp_path / "outside")
    grid = tmp_path / "g.yaml"
    grid.write_text("points:\n  - {workload: cnn_cifar10, backend: jax, device: cpu, seed: 1}\n")
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "helpers.runner", str(grid), "--validate-only"], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=120, env={**os.environ, "CGB_OUTPUTS": str(outputs)})
    assert res.returncode == 0 and "1 points valid" in res.stdout, res.stdout + res.stderr
    assert "Traceback" not in res.stderr and time.perf_counter() - t0 < 60


# ------------------------------------------------------------------ the index: dead workers, signals


def _die_on_killme(job):
    """A renderer that dies like one the OOM killer took, on the notebook named 'killme'."""
    if "killme" in job[0]:
        os.kill(os.getpid(), signal.SIGKILL)
    from helpers.report.publish.index import _render_job

    return _render_job(job)


def test_index_survives_a_renderer_killed_for_memory(tmp_path):
    from helpers.report import render_index

    folder = tmp_path / "outputs"
    names = [f"n{i}" for i in range(8)] + ["killme"]
    for i, name in enumerate(names):
        write_hostile_notebook(folder / "runs" / "r" / "notebooks" / f"{name}.ipynb", name.upper())
        write(folder / "runs" / "r" / "records", f"{name}.json",
              good_record(i, notebook=f"../notebooks/{name}.ipynb"))
    t0 = time.perf_counter()
    index = render_index([folder], folder / "index.html", workers=2, job=_die_on_killme).read_text()
    assert time.perf_counter() - t0 < 180
    # killed by itself, not by the OOM killer: never called out of memory
    assert index.count("<a href=") == 8 + 0 and "killme.ipynb <i>(could not render: the renderer died (killed or " \
        "crashed" in index and "out-of-memory killer)" not in index
    assert len(list((folder / "notebooks_html").rglob("*.html"))) == 8


def test_index_stops_on_sigterm_within_seconds(tmp_path):
    folder = tmp_path / "outputs"
    for i in range(8):
        write_hostile_notebook(folder / "runs" / "r" / "notebooks" / f"n{i}.ipynb")
        write(folder / "runs" / "r" / "records", f"n{i}.json", good_record(i, notebook=f"../notebooks/n{i}.ipynb"))
    code = ("import signal, sys; sys.path.insert(0, 'tests'); from support.runs import sleep_job\n"
            "from helpers.runner.grid_run import _terminate; from helpers.report import render_index\n"
            "signal.signal(signal.SIGTERM, _terminate)\n"
            f"render_index([{str(folder)!r}], {str(folder / 'index.html')!r}, workers=2, job=sleep_job)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT_ROOT, stderr=subprocess.PIPE, text=True)

    def children():
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        return [int(p) for p in out]

    deadline = time.time() + 60
    while len(children()) < 2 and time.time() < deadline:
        time.sleep(0.2)
    workers = children()
    assert len(workers) >= 2
    time.sleep(1.0)
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=15)
    assert time.perf_counter() - t0 < 5.0
    time.sleep(0.5)
    alive = [p for p in workers
             if Path(f"/proc/{p}").exists() and "zombie" not in Path(f"/proc/{p}/status").read_text()]
    assert not alive


# ------------------------------------------------------------------ custom models


def _keras_zip(path: Path, config: dict | bytes, fill: int = 0) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        data = config if isinstance(config, bytes) else json.dumps(config).encode()
        zf.writestr("config.json", data + b" " * fill)
        zf.writestr("metadata.json", "{}")
    return path


def test_a_keras_zip_bomb_is_refused_before_it_inflates(tmp_path):
    from helpers.params import ParamError
    from helpers.workloads import custom_files

    path = _keras_zip(tmp_path / "bomb.keras", b'{"class_name": "Sequential"}', fill=200 * 2**20)
    assert path.stat().st_size < 2**20  # ~200 kB on disk, 200 MB inflated
    code = ("from helpers.workloads import custom_files\n"  # VmHWM: this process's peak (ru_maxrss carries the
            f"try:\n    custom_files.model_file({str(path)!r})\nexcept Exception as exc:\n    print(exc)\n"  # parent's)
            "print(next(int(x.split()[1]) for x in open('/proc/self/status') if x.startswith('VmHWM')) // 1024)")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    msg, peak_mb = out.stdout.strip().rsplit("\n", 1)
    assert "larger than 16 MB once inflated" in msg and int(peak_mb) < 100, out.stdout + out.stderr
    with pytest.raises(ParamError, match="larger than 16 MB"):
        custom_files.model_file(str(path))


def test_a_dense_activation_holding_lambda_code_is_named_as_such(tmp_path):
    from helpers.params import ParamError
    from helpers.workloads import custom_files

    cfg = {"module": "keras", "class_name": "Sequential", "config": {"name": "s", "layers": [
        {"module": "keras.layers", "class_name": "InputLayer", "config": {"name": "in", "batch_shape": [None, 4]}},
        {"module": "keras.layers", "class_name": "Dense", "config": {"name": "dense_x", "units": 2, "activation": {
            "class_name": "__lambda__", "config": {"value": ["4wEAAAAAAAAA", None, None]}}}}]}}
    with pytest.raises(ParamError) as err:
        custom_files.model_file(str(_keras_zip(tmp_path / "lam.keras", cfg)))
    assert "Lambda code in layers (dense_x (Dense))" in str(err.value) and "MyLayer" not in str(err.value)


# ------------------------------------------------------------------ the runner's smaller items


def test_a_failed_report_says_why_and_the_old_one_no_longer_looks_current(tmp_path):
    from papermill.exceptions import PapermillExecutionError

    from helpers.report.publish.failed import failure_text, mark_failed

    exc = PapermillExecutionError(7, 7, "ctx = build_context(inputs)", "ValueError", "bad value in records/x.json",
                                  ["\x1b[31mValueError\x1b[0m: bad value in records/x.json"])
    why = failure_text(exc, tmp_path / "summary.ipynb")
    assert why.startswith("ValueError: bad value in records/x.json (summary.ipynb cell 7)") and "\x1b" not in why
    old = tmp_path / "report.html"
    old.write_text("<html>yesterday's figures</html>")
    mark_failed(old, why)
    assert "The report failed" in old.read_text() and "records/x.json" in old.read_text()
    assert "yesterday" in (tmp_path / "report.previous.html").read_text()
    assert "report.previous.html" in old.read_text()


def test_a_full_disk_leaves_no_temp_report(tmp_path, monkeypatch):
    import os

    from helpers.report.publish.render import write_page

    real = os.fsync

    def full(fd):  # the disk fills as the page is flushed
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        write_page(tmp_path / "report.html", "x" * 1000)
    monkeypatch.setattr(os, "fsync", real)
    assert list(tmp_path.iterdir()) == []


def test_partial_notebooks_and_ok_records_without_notebook_are_cleared_on_start(in_process_runner, capsys):
    state, gridfile, outputs = in_process_runner
    assert runner.main([str(gridfile), "--no-report"]) == 0
    recs = complete_ok_records(outputs)
    assert len(recs) == 2
    notebook_path(recs[0]).unlink()  # someone deleted an executed notebook
    partial = Path(recs[1]["_path"]).parent.parent / "notebooks" / ".x.partial.ipynb"  # left by kill -9
    partial.write_text("{")
    assert runner.main([str(gridfile), "--no-report"]) == 0
    assert len(state["calls"]) == 3 and not partial.exists()
    all_recs, _ = read_records([outputs])
    assert len(all_recs) == 2  # the point ran again and counts once


def test_sigterm_during_set_up_is_a_message_not_a_traceback(tmp_path):
    grid = tmp_path / "g.yaml"
    grid.write_text("points:\n  - {workload: cnn_cifar10, backend: jax, device: cpu, epochs: 2, n_train: 200, "
                    "batch_size: 100, data_source: synthetic}\n")
    env = {**os.environ, "CGB_OUTPUTS": str(tmp_path / "out")}
    proc = subprocess.Popen([sys.executable, "-m", "helpers.runner", str(grid), "--no-report"], cwd=PROJECT_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 120
    while not list((tmp_path / "out").glob("runs/*/run.log")) and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert "Traceback" not in err, err
    assert proc.returncode in (130, -signal.SIGTERM), (proc.returncode, out, err)


def test_a_stop_signal_landing_where_python_drops_exceptions_comes_again_later(monkeypatch):
    """A SIGTERM that lands in the import system's weakref callback (seen in CI: "Exception ignored in
    <function _get_module_lock.<locals>.cb>", a traceback, and the run went on) is not raised there: it is sent
    again ``RESEND_S`` later; anywhere else it stops the run at once."""
    import threading

    from helpers.runner import grid_run

    ns: dict = {}
    exec(compile("import sys\nframe = sys._getframe()", "<frozen importlib._bootstrap>", "exec"), ns)

    class Dying:
        def __del__(self):
            ns["del_frame"] = sys._getframe()

    Dying()
    assert grid_run._drops_exceptions(ns["frame"]) and grid_run._drops_exceptions(ns["del_frame"])
    assert not grid_run._drops_exceptions(sys._getframe())
    sent, done = [], threading.Event()
    monkeypatch.setattr(grid_run.os, "kill", lambda pid, sig: (sent.append((pid, sig)), done.set()))
    grid_run._terminate(signal.SIGTERM, ns["frame"])  # not raised: sent again
    assert done.wait(5) and sent == [(os.getpid(), signal.SIGTERM)]
    with pytest.raises(KeyboardInterrupt, match="signal 15"):
        grid_run._terminate(signal.SIGTERM, sys._getframe())


def test_a_kernel_killed_for_memory_says_so_with_its_peak(tmp_path, kernel, monkeypatch):
    from helpers.runner import notebook as execute
    from helpers.runner.engine import register_engine

    nbdir = tmp_path / "nbs"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("workload = 'killme'", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("import os, signal, time\nx = bytearray(400 * 2**20)\nx[::4096] = b'1' * "
                                  "len(x[::4096])\ntime.sleep(2)\nos.kill(os.getpid(), signal.SIGKILL)")])
    nb.metadata["kernelspec"] = {"name": kernel, "language": "python", "display_name": "Python"}
    nb.metadata["language_info"] = {"name": "python"}
    nbdir.mkdir()
    nbformat.write(nb, str(nbdir / "killme.ipynb"))
    monkeypatch.setenv("CGB_NOTEBOOKS", str(nbdir))  # the runner runs this folder's notebooks
    engine = register_engine()
    p = {"workload": "killme", "backend": "jax", "device": "cpu", "point_id": "k1"}
    rec = execute.run_point(engine, p, tmp_path / "run", kernel, 120, print)
    assert rec["status"] == "failed"
    # killed by itself, not by the OOM killer: its counters did not rise (never "out of memory" for that)
    assert "killed (SIGKILL)" in rec["reason"] and "(peak RSS seen 0." in rec["reason"], rec["reason"]
    assert "by the out-of-memory killer (" not in rec["reason"], rec["reason"]


# ------------------------------------------------------------------ everything at once, in a browser


@pytest.mark.xdist_group("timing")  # a wall-clock bound: one such test at a time
def test_hostile_set_through_the_runner_makes_no_network_request_in_chromium(tmp_path):
    from support import chromium
    from support.browser import Browser

    good = tmp_path / "good"
    write_hostile_notebook(good / "notebooks" / "w.ipynb", "W")
    for i in range(3):
        write(good / "records", f"good{i}.json", good_record(i, notebook="../notebooks/w.ipynb" if i == 0 else None))
    expected = write_hostile(tmp_path / "bad", good_record(7), tmp_path / "outside")
    out = tmp_path / "out"
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "helpers.runner", "--report-only", "--no-reference", "--inputs",
                          str(good), str(tmp_path / "bad")], cwd=PROJECT_ROOT, capture_output=True, text=True,
                         timeout=600, env={**os.environ, "CGB_OUTPUTS": str(out)})
    took = time.perf_counter() - t0
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert took < 300
    report, index = (out / "report.html").read_text(), (out / "index.html").read_text()
    for name in expected:
        assert name in unescape(report), name  # Provenance lists every skipped file with its reason
    assert SECRET_HOST not in report and SECRET_HOST not in index
    pages = [out / "report.html", out / "index.html", *sorted((out / "notebooks_html").rglob("*.html"))]
    assert len(pages) == 3
    exe = chromium()
    if exe is None:
        pytest.skip("Chromium not installed (scripts/ensure_chromium.sh installs it)")
    b = Browser(exe)
    try:
        for page in pages:
            html = page.read_text()
            assert "Content-Security-Policy" in html and "script-src 'none'" in html.replace("&#x27;", "'")
            assert "<script" not in html.lower().replace("<script type=\"application/vnd", ""), page
            b.call("Network.enable")
            b.open(page.as_uri())
            sent = [e["params"]["request"]["url"] for e in b.events if e["method"] == "Network.requestWillBeSent"]
            # inline images (data: URLs) are not requests to anywhere; anything else is
            assert [u for u in sent if u != page.as_uri() and not u.startswith("data:")] == [], (page, sent)
            assert "pwned" not in (b.eval("document.title") or "")
        # the control: the same notebook through nbconvert's own page does fetch (require.js, MathJax, the widget
        # manager, mermaid): the logging sees requests when there are any
        from nbconvert import HTMLExporter

        control = tmp_path / "control.html"
        control.write_text(HTMLExporter(sanitize_html=True).from_notebook_node(
            nbformat.read(str(good / "notebooks" / "w.ipynb"), as_version=4))[0])
        b.call("Network.enable")
        b.open(control.as_uri())
        sent = [e["params"]["request"]["url"] for e in b.events if e["method"] == "Network.requestWillBeSent"]
        assert any(u.startswith("https://") for u in sent), sent
    finally:
        b.close()
