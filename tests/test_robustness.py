"""Robustness: hostile or broken records and notebooks, a full disk, read-only folders, signals,
the shell leaking into kernels. Crafted files are made here, in temporary folders."""

from __future__ import annotations

import copy
import errno
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from support.runs import complete_ok_records, good_record, write

from helpers import grid
from helpers.exits import Exit
from helpers.paths import PROJECT_ROOT
from helpers.record import writer
from helpers.record.reader import MAX_RECORD_BYTES, read_records
from helpers.record.schema import why_not_record
from helpers.record.writer import write_atomic
from helpers.runner import cli as runner
from helpers.runner import notebook

# ------------------------------------------------------------------ crafted things


SCRIPT_HTML = "<b>hi</b><script>document.title='pwned-html'</script>"
SCRIPT_JS = "document.title='pwned-js'"
SCRIPT_MD = "<script>document.title='pwned-md'</script><img src=x onerror=\"document.title='pwned-img'\">"


def hostile_notebook(path: Path, marker: str = "") -> Path:
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(f"# run {marker}\n{SCRIPT_MD}"),
        nbformat.v4.new_code_cell("x = 1", outputs=[
            nbformat.v4.new_output("display_data", data={"text/html": SCRIPT_HTML, "text/plain": "hi"}),
            nbformat.v4.new_output("display_data", data={"application/javascript": SCRIPT_JS}),
            nbformat.v4.new_output("stream", name="stdout", text=f"marker {marker}\n")])])
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def pages(index_root: Path) -> dict[str, str]:
    return {str(p.relative_to(index_root)): p.read_text() for p in index_root.rglob("*.html")}


class _Active(HTMLParser):
    """What would run in a browser: script elements' text and ``on*`` event-handler attributes."""

    def __init__(self):
        super().__init__()
        self.code, self._in_script = [], False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        self.code += [v or "" for k, v in attrs if k.lower().startswith("on")]
        self.code += [v or "" for k, v in attrs if k.lower() in ("href", "src") and "javascript:" in (v or "")]

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.code.append(data)


def assert_inert(html: str) -> None:
    """No crafted script can run: none of the planted code is in a script element or an event handler."""
    p = _Active()
    p.feed(html)
    assert not [c for c in p.code if "pwned" in c], [c for c in p.code if "pwned" in c]


# ------------------------------------------------------------------ 1, 9, 12: the index page


def test_index_renders_foreign_notebooks_sanitised(tmp_path):
    from helpers.report import render_index

    theirs = tmp_path / "theirs"
    nb = hostile_notebook(theirs / "notebooks" / "a.ipynb", "A")
    write(theirs / "records", "a.json", good_record(0, notebook="../notebooks/a.ipynb"))
    out = tmp_path / "out"
    render_index([theirs], out / "index.html", workers=1)
    html = pages(out)
    rendered = [t for name, t in html.items() if name.startswith("notebooks_html/")]
    assert len(rendered) == 1 and "marker A" in rendered[0]  # rendered, with its outputs
    for text in html.values():
        assert_inert(text)
    assert nb.is_file()


def test_index_renders_only_notebooks_inside_the_record_folders(tmp_path):
    from helpers.report import render_index

    private = tmp_path / "private"
    secret = hostile_notebook(private / "x.ipynb", "SECRET-ABSOLUTE")
    hostile_notebook(private / "y.ipynb", "SECRET-DOTDOT")
    hostile_notebook(private / "z.ipynb", "SECRET-SYMLINK")
    theirs = tmp_path / "inputs" / "theirs"
    (theirs / "notebooks").mkdir(parents=True)
    (theirs / "notebooks" / "link.ipynb").symlink_to(private / "z.ipynb")  # inside by name, outside for real
    write(theirs / "records", "a.json", good_record(0, notebook=str(secret)))
    write(theirs / "records", "b.json", good_record(1, notebook="../../../private/y.ipynb"))
    write(theirs / "records", "c.json", good_record(2, notebook="../notebooks/link.ipynb"))
    write(theirs / "records", "d.json", good_record(3, notebook="/nonexistent/n.ipynb"))
    out = tmp_path / "out"
    index = render_index([theirs], out / "index.html", workers=1).read_text()
    assert index.count("outside the record folders, not rendered") == 3
    assert "not on this machine" in index
    for name, text in pages(out).items():
        assert "SECRET" not in text, name
    assert not (out / "notebooks_html").exists() or not list((out / "notebooks_html").rglob("*.html"))


def test_index_gives_same_named_notebooks_their_own_pages(tmp_path):
    from helpers.report import render_index

    folders = []
    for k in (1, 2):
        f = tmp_path / f"machine{k}"
        hostile_notebook(f / "runs" / "r" / "notebooks" / "same.ipynb", f"M{k}")
        write(f / "runs" / "r" / "records", "same.json", good_record(k, notebook="../notebooks/same.ipynb"))
        folders.append(f)
    out = tmp_path / "out"
    index = render_index(folders, out / "index.html", workers=1).read_text()
    hrefs = sorted(set(part.split('"')[0] for part in index.split('href="')[1:]))
    assert len(hrefs) == 2
    texts = [(out / h).read_text() for h in hrefs]
    assert sorted("marker M1" in t for t in texts) == [False, True]
    assert sorted("marker M2" in t for t in texts) == [False, True]


def test_index_renders_in_a_pool_skips_fresh_pages_and_replaces_unsanitised_ones(tmp_path):
    from helpers.report import render_index

    folder = tmp_path / "outputs"
    for i in range(8):
        hostile_notebook(folder / "runs" / "r" / "notebooks" / f"n{i}.ipynb", f"N{i}")
        write(folder / "runs" / "r" / "records", f"n{i}.json", good_record(i, notebook=f"../notebooks/n{i}.ipynb"))
    old = folder / "notebooks_html" / "external" / "n0.html"  # an older index's unsanitised page
    old.parent.mkdir(parents=True)
    old.write_text("<script>document.title='pwned-html'</script>")
    t0 = time.perf_counter()
    render_index([folder], folder / "index.html", workers=2)
    first = time.perf_counter() - t0
    rendered = sorted((folder / "notebooks_html").rglob("*.html"))
    assert len(rendered) == 8 and not old.exists()
    mtimes = [p.stat().st_mtime_ns for p in rendered]
    t0 = time.perf_counter()
    render_index([folder], folder / "index.html", workers=2)
    assert [p.stat().st_mtime_ns for p in rendered] == mtimes  # up to date: not rendered again
    assert time.perf_counter() - t0 < first
    for text in pages(folder).values():
        assert_inert(text)


# ------------------------------------------------------------------ 2, 3, 4: reading records

BAD = {
    "history a number": ({"history": 5}, "'history'"),
    "history a string": ({"history": "loss"}, "'history'"),
    "history curve a number": ({"history": {"loss": 1.0}}, "'history.loss'"),
    "fingerprint a string": ({"fingerprint": "box"}, "'fingerprint'"),
    "params a list": ({"params": [1, 2]}, "'params'"),
    "utilisation a list": ({"utilisation": [90]}, "'utilisation'"),
    "epoch_s a number": ({"epoch_s": 1.0}, "'epoch_s'"),
    "versions a list": ({"fingerprint": {"host": "h", "versions": ["keras"]}}, "'fingerprint.versions'"),
    "started_at a number": ({"started_at": 5}, "'started_at'"),
    "workload null": ({"workload": None}, "'workload'"),
    "workload empty": ({"workload": ""}, "'workload'"),
    "notebook a number": ({"notebook": 5}, "'notebook'"),
    "point_id a list": ({"point_id": ["a"]}, "'point_id'"),
    "epoch inf": ({"epoch_s": [1.0, float("inf")]}, "non-finite"),
    "epoch zero": ({"epoch_s": [1.0, 0.0]}, "'epoch_s'"),
    "epoch negative": ({"epoch_s": [1.0, -1.0]}, "'epoch_s'"),
    "epoch boolean": ({"epoch_s": [True, 1.0]}, "'epoch_s'"),
    "median NaN": ({"median_epoch_s": float("nan")}, "non-finite"),
    "median a string": ({"median_epoch_s": "1.0"}, "'median_epoch_s'"),
    "samples_per_s a string": ({"samples_per_s": "1000"}, "'samples_per_s'"),
    "first epoch zero": ({"first_epoch_s": 0}, "'first_epoch_s'"),
    "batch size negative": ({"batch_size": -32}, "'batch_size'"),
    "batch size boolean": ({"batch_size": True}, "'batch_size'"),
    "n_train zero": ({"n_train": 0}, "'n_train'"),
    "params batch size negative": ({"params": {"batch_size": -32}}, "'params.batch_size'"),
    "status unknown": ({"status": "done"}, "'status'"),
    "schema a boolean": ({"schema": True}, "'schema'"),
    "price profile a list": ({"price_profile": ["a"]}, "'price_profile'"),
}


def _dump(obj) -> str:
    return json.dumps(obj)  # allow_nan: the crafted file holds NaN / Infinity tokens


@pytest.mark.parametrize("name", list(BAD))
def test_a_malformed_record_is_skipped_with_its_reason(tmp_path, name):
    change, needle = BAD[name]
    write(tmp_path, "good.json", good_record(0))
    write(tmp_path, "bad.json", _dump({**good_record(1), **change}))
    recs, skipped = read_records([tmp_path])
    assert [r["point_id"] for r in recs] == ["p0"]
    assert len(skipped) == 1 and skipped[0][0].endswith("bad.json") and needle in skipped[0][1], skipped


def test_deep_nesting_is_skipped_not_a_recursion_error(tmp_path):
    write(tmp_path, "good.json", good_record(0))
    base = json.dumps(good_record(1))[:-1]
    write(tmp_path, "deep.json", base + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}")
    write(tmp_path, "deep2.json", base + ', "x": ' + "[" * 500 + "]" * 500 + "}")
    recs, skipped = read_records([tmp_path])
    assert [r["point_id"] for r in recs] == ["p0"]
    why = dict((Path(p).name, w) for p, w in skipped)
    assert why["deep.json"] == "nested too deeply" and "nested deeper than" in why["deep2.json"]


def test_a_record_missing_status_is_said_so(tmp_path):
    rec = good_record(0)
    del rec["status"]
    write(tmp_path, "r.json", rec)
    assert read_records([tmp_path])[1][0][1] == "missing key 'status'"


def test_every_malformed_record_costs_only_itself_in_the_report(tmp_path):
    """One folder of every bad record above, a good one, a copy of it: the report builds, says it all."""
    from helpers import report

    good = tmp_path / "records"
    write(good, "good.json", good_record(0, price_profile="their-own-box"))
    write(good, "good2.json", good_record(1, epoch_s=[1.2, 1.3], median_epoch_s=1.25, point_id="p1b"))
    for i, (change, _) in enumerate(BAD.values()):
        write(good, f"bad{i}.json", _dump({**good_record(10 + i), **change}))
    rec = good_record(99)
    del rec["status"]
    write(good, "nostatus.json", rec)
    shutil.copytree(good, tmp_path / "copy")  # a copied folder: every run twice
    ctx = report.build_context([good, tmp_path / "copy"], use_reference=False)  # only these records
    assert len(ctx.df) == 2 and len(ctx.skipped) == 2 * (len(BAD) + 1) and len(ctx.duplicates) == 2
    assert all(why.startswith("duplicate of ") for _, why in ctx.duplicates)
    assert ctx.summary.iloc[0]["n_runs"] == 2  # not 4
    assert dict(ctx.skipped_reasons)["missing key 'status'"] == 2
    # an unknown price profile in a colleague's record: no price, said once, no PriceError
    assert sum("their-own-box" in str(v) for _, v, _ in ctx.notes) == 1
    from helpers.report.publish import sections

    html = unescape(sections.build(sections.get("overview"), ctx)._repr_html_())
    assert "2 record(s) read" in html and f"{2 * (len(BAD) + 1)} JSON file(s) skipped" in html
    assert "2 duplicate(s)" in html and "missing key 'status' (2)" in html
    for mod in sections.modules():
        assert "failed to build" not in sections.build(mod, ctx)._repr_html_()


def test_fifo_dev_zero_and_huge_files_are_skipped_without_hanging(tmp_path):
    write(tmp_path, "good.json", good_record(0))
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    with open(tmp_path / "huge.json", "wb") as f:
        f.truncate(MAX_RECORD_BYTES + 1)  # the documented cap: 2 MB
    code = ("import json, sys; from helpers.record.reader import read_records\n"
            f"recs, skipped = read_records([{str(tmp_path)!r}])\n"
            "print(json.dumps([[r['point_id'] for r in recs], skipped]))")
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    ids, skipped = json.loads(out.stdout)
    why = {Path(p).name: w for p, w in skipped}
    assert ids == ["p0"]
    assert "not a regular file" in why["fifo.json"]
    assert "outside the folders given" in why["zero.json"]  # a symlink out of the folder is not even opened
    assert f"larger than {MAX_RECORD_BYTES // 2**20} MB" in why["huge.json"]


def test_the_false_claim_about_the_full_table_is_gone():
    for folder in ("helpers", "notebooks"):
        for path in (PROJECT_ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".ipynb"):
                assert "full table is in the executed summary" not in path.read_text(), path


# ------------------------------------------------------------------ the runner: full disk, signals, resume

GRID2 = "points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    seed: [1, 2]\n"  # conftest's


def test_runner_writes_complete_points_and_lists_cleared_variables(in_process_runner, monkeypatch, capsys):
    state, gridfile, outputs = in_process_runner
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    assert runner.main([str(gridfile), "--no-report"]) == 0
    recs = complete_ok_records(outputs)
    assert len(recs) == 2 and len(state["calls"]) == 2
    assert recs[0]["env_cleared"] == {"OMP_NUM_THREADS": "1", "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false"}
    assert not list(outputs.glob("runs/*/notebooks/.*"))  # no temporary notebook left
    assert runner.main([str(gridfile), "--no-report"]) == 0  # resume: both done
    assert len(state["calls"]) == 2 and capsys.readouterr().out.count("not run again") == 2


def test_a_points_facts_reach_its_kernel_only_never_the_runners_environment(in_process_runner):
    """Where a point's notebook and kernel log go and its deadline travel to its kernel as the kernel's own
    environment (the engine's ``kernel_env``): each point gets its own, and the runner's environment holds none."""
    import time

    state, gridfile, outputs = in_process_runner
    facts = ("CGB_EXECUTED_NOTEBOOK", "CGB_KERNEL_STDERR", "CGB_POINT_DEADLINE")
    assert not any(k in os.environ for k in facts)
    assert runner.main([str(gridfile), "--no-report"]) == 0
    assert not any(k in os.environ for k in facts)
    envs = state["kernel_env"]
    assert len(envs) == 2 and all(set(facts) <= set(e) for e in envs)
    notebooks = [e["CGB_EXECUTED_NOTEBOOK"] for e in envs]
    assert len(set(notebooks)) == 2 and all(n.endswith(".ipynb") and "/notebooks/" in n for n in notebooks)
    assert all(e["CGB_KERNEL_STDERR"] == e["CGB_EXECUTED_NOTEBOOK"][:-6] + ".stderr.log" for e in envs)
    assert all(time.time() < float(e["CGB_POINT_DEADLINE"]) < time.time() + 3600 for e in envs)
    # each record names its own executed notebook (relative to the record)
    assert sorted(Path(r["notebook"]).name for r in complete_ok_records(outputs)) == sorted(
        Path(n).name for n in notebooks)


@pytest.mark.parametrize("where", ["notebook", "record", "kernel"])
def test_full_disk_stops_cleanly_with_status_4_and_consistent_records(in_process_runner, monkeypatch, capsys, where):
    state, gridfile, outputs = in_process_runner
    if where == "notebook":
        state["behaviour"] = "notebook disk full"
    elif where == "record":  # the runner's one write of the record hits the full disk
        def full(path, data):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        monkeypatch.setattr(writer, "write_atomic", full)
    else:  # the notebook's own record write failed: papermill reports the cell's error
        from papermill.exceptions import PapermillExecutionError

        def kernel_full(input_path, output_path, parameters=None, **kw):
            state["calls"].append(dict(parameters))
            Path(output_path).write_text(nbformat.writes(nbformat.v4.new_notebook()))
            raise PapermillExecutionError(0, 1, "pt.finish()", "OSError",
                                          "[Errno 28] No space left on device: 'x.json'", [])

        import papermill

        monkeypatch.setattr(papermill, "execute_notebook", kernel_full)
    assert runner.main([str(gridfile), "--no-report"]) == Exit.CANNOT_WRITE == 4
    out = capsys.readouterr()
    assert "No space left on device" in out.out and "run again" in out.out and "Traceback" not in out.out + out.err
    assert len(state["calls"]) == 1  # stopped: the second point was not started
    assert not complete_ok_records(outputs) and not read_records([outputs / "runs"])[0]
    assert notebook.done_point_ids(outputs / "runs") == set()  # resume runs the point again
    assert not list(outputs.glob("runs/*/notebooks/.*.partial.ipynb"))


def test_sigterm_right_after_finish_leaves_no_record_that_resume_trusts(in_process_runner, capsys):
    state, gridfile, outputs = in_process_runner
    state["behaviour"] = "sigterm after finish"
    assert runner.main([str(gridfile), "--no-report"]) == 130
    out = capsys.readouterr().out
    assert "the record its notebook had made is not written" in out and "runs again on resume" in out
    assert read_records([outputs / "runs"])[0] == [] and notebook.done_point_ids(outputs / "runs") == set()
    state["behaviour"] = "ok"
    assert runner.main([str(gridfile), "--no-report"]) == 0
    assert len(complete_ok_records(outputs)) == 2


def test_a_record_left_by_a_killed_runner_is_set_aside_before_resuming(in_process_runner, capsys):
    """kill -9 between the notebook's finish() and the runner's rewrite: an ok record without wall_s. Resume
    runs the point again and sets the orphan aside, so the report does not count the point twice."""
    state, gridfile, outputs = in_process_runner
    orphan = good_record(0, wall_s=None)
    del orphan["wall_s"]
    path = write_atomic(outputs / "runs" / "old" / "records" / "orphan.json", orphan)
    assert runner.main([str(gridfile), "--no-report"]) == 0
    assert "1 record(s) of points stopped in an earlier run" in capsys.readouterr().out
    assert not path.exists() and (path.parent / ".orphan.json.incomplete").exists()
    recs, _ = read_records([outputs])
    assert len(recs) == 2 and all(notebook.is_complete(r) for r in recs)


def test_resume_requires_what_a_complete_point_has(tmp_path):
    runs = tmp_path / "runs" / "r"
    nb_ok = runs / "notebooks" / "ok.ipynb"
    nb_ok.parent.mkdir(parents=True)
    nbformat.write(nbformat.v4.new_notebook(), str(nb_ok))
    (runs / "notebooks" / "cut.ipynb").write_text('{"cells": [{"cell_type": "co')
    recs = {"complete": good_record(0, notebook="../notebooks/ok.ipynb"),
            "no wall_s": good_record(1, notebook="../notebooks/ok.ipynb", wall_s=None),
            "truncated notebook": good_record(2, notebook="../notebooks/cut.ipynb"),
            "no notebook": good_record(3, notebook="../notebooks/missing.ipynb"),
            "failed": good_record(4, status="failed", reason="x")}
    for rec in recs.values():
        write(runs / "records", f"{rec['point_id']}.json", rec)
    assert notebook.done_point_ids(tmp_path / "runs") == {"p0"}
    assert notebook.done_point_ids(tmp_path / "runs", ("ok", "failed")) == {"p0", "p4"}


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_records_get_the_mode_of_the_umask(tmp_path, mask):
    old = os.umask(mask)
    try:
        path = write_atomic(tmp_path / "r.json", good_record(0))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


@pytest.mark.parametrize("key", ["output_dir", "point_id"])
def test_grid_refuses_the_keys_the_runner_sets(tmp_path, key):
    g = tmp_path / "g.yaml"
    g.write_text(f"points:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n    {key}: x\n")
    with pytest.raises(grid.GridError, match=f"'{key}' is set by the runner"):
        grid.expand(g)
    g.write_text(f"defaults: {{{key}: x}}\npoints:\n  - workload: cnn_cifar10\n    backend: jax\n    device: cpu\n")
    with pytest.raises(grid.GridError, match=f"'{key}'"):
        grid.expand(g)


# ------------------------------------------------------------------ 6: the machine key


def test_point_ids_do_not_depend_on_the_host_name(monkeypatch):
    import socket

    from helpers.measure import machine
    from helpers.runner import prepare

    machine.machine_key.cache_clear()
    before = machine.machine_key()
    machine.machine_key.cache_clear()
    monkeypatch.setattr(socket, "gethostname", lambda: "renamed-after-a-container-restart")
    assert machine.machine_key() == before and socket.gethostname() not in before
    assert prepare.machine_key is machine.machine_key  # what resume keys on


# ------------------------------------------------------------------ real subprocesses: read-only, signals


def _env(outputs: Path, **extra) -> dict:
    return {**os.environ, "CGB_USE_CURRENT_PYTHON": "1", "CGB_OUTPUTS": str(outputs),
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", **extra}


def _read_only(folder: Path, cmd: list[str]) -> list[str]:
    """``cmd`` run with ``folder`` read-only: a read-only bind mount in a user namespace when the kernel
    allows one, else ``chmod`` (which binds a user that is not root)."""
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True) if shutil.which("unshare") else None
    if probe is not None and probe.returncode == 0:
        script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'
        return ["unshare", "-rm", "sh", "-c", script, str(folder), *cmd]
    if os.geteuid() == 0:
        pytest.skip("no user namespace to make a read-only folder, and chmod does not bind root")
    for p in [folder, *folder.rglob("*")]:
        p.chmod(p.stat().st_mode & ~0o222)
    return cmd


def test_read_only_outputs_give_a_clear_message_and_status_4(tmp_path):
    outputs = tmp_path / "ro" / "outputs"
    outputs.mkdir(parents=True)
    g = tmp_path / "g.yaml"
    g.write_text(GRID2)
    cmd = _read_only(tmp_path / "ro", [sys.executable, "-m", "helpers.runner", str(g), "--no-report"])
    res = subprocess.run(cmd, cwd=PROJECT_ROOT, env=_env(outputs), capture_output=True, text=True, timeout=120)
    assert res.returncode == 4, res.stdout + res.stderr
    assert "cannot write under" in res.stderr and "nothing was run" in res.stderr
    assert "Traceback" not in res.stdout + res.stderr


def test_validate_only_in_a_read_only_checkout_writes_nothing(tmp_path):
    co = tmp_path / "checkout"
    co.mkdir()
    shutil.copy(PROJECT_ROOT / "run_all.sh", co / "run_all.sh")
    for name in ("scripts", "helpers", "params", "notebooks", "pyproject.toml"):
        (co / name).symlink_to(PROJECT_ROOT / name)
    outputs = tmp_path / "elsewhere"
    cmd = _read_only(co, ["bash", str(co / "run_all.sh"), "--validate-only", str(PROJECT_ROOT / "params/smoke.yaml")])
    res = subprocess.run(cmd, env=_env(outputs), capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "points valid" in res.stdout
    assert not (co / "outputs").exists() and not outputs.exists()


def _kernels_of(outputs: Path) -> list[int]:
    pids, needle = [], f"CGB_OUTPUTS={outputs}".encode()
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and b"helpers.runner.kernel" in (d / "cmdline").read_bytes() \
                    and needle in (d / "environ").read_bytes().split(b"\0"):
                pids.append(int(d.name))
        except OSError:
            continue
    return pids


def _wait_for(pred, timeout=120.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if (value := pred()):
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting")


def test_sigterm_while_rendering_the_report_is_logged_and_exits_cleanly(tmp_path):
    outputs = tmp_path / "out"
    inputs = tmp_path / "records"
    write(inputs, "r.json", good_record(0))
    proc = subprocess.Popen([sys.executable, "-m", "helpers.runner", "--report-only", "--inputs", str(inputs)],
                            cwd=PROJECT_ROOT, env=_env(outputs), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    _wait_for(lambda: _kernels_of(outputs) or proc.poll() is not None)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, out
    assert "Traceback" not in out
    assert "interrupted while rendering the report" in out  # a report-only call has no run folder, no run.log
    assert not (outputs / "runs").exists()
    _wait_for(lambda: not _kernels_of(outputs), timeout=30)  # no orphan kernel


def test_kernels_start_without_the_shells_thread_variables_or_ipython_startup(tmp_path, kernel, monkeypatch):
    from jupyter_client.manager import start_new_kernel

    user_ipython = tmp_path / "user_ipython"
    startup = user_ipython / "profile_default" / "startup"
    startup.mkdir(parents=True)
    marker = tmp_path / "startup-ran"
    (startup / "00-leak.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.setenv("IPYTHONDIR", str(user_ipython))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("TF_NUM_INTRAOP_THREADS", "1")
    monkeypatch.setenv("CGB_KERNEL_IPYTHONDIR", str(tmp_path / "clean_ipython"))
    km, kc = start_new_kernel(kernel_name=kernel, startup_timeout=120)
    try:
        got = []
        code = "import os, json; print(json.dumps({k: os.environ.get(k) for k in " \
               "('OMP_NUM_THREADS', 'TF_NUM_INTRAOP_THREADS', 'IPYTHONDIR')}))"
        kc.execute_interactive(code, timeout=60, output_hook=lambda m: got.append(m["content"].get("text", "")))
        env = json.loads("".join(got))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert env["OMP_NUM_THREADS"] is None and env["TF_NUM_INTRAOP_THREADS"] is None
    assert env["IPYTHONDIR"] == str(tmp_path / "clean_ipython")
    assert not marker.exists()


# ------------------------------------------------------------------ 7: the trust model, written down


def test_security_notes_exist_and_the_readme_links_them():
    text = (PROJECT_ROOT / "SECURITY.md").read_text()
    for needle in ("code you run", "data", "sanitize_html", "skipped", "exit status 4"):
        assert needle in text, needle
    assert "(SECURITY.md)" in (PROJECT_ROOT / "README.md").read_text()


def test_good_record_helper_is_itself_a_valid_record():
    assert why_not_record(copy.deepcopy(good_record(0))) is None
