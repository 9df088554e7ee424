"""A folder given to ``--out`` decides nothing: the report written into it never writes through what it finds there.

An archive of someone's outputs re-rendered in place, or a folder several people or shards share, may hold symlinks
at the report's and the CSVs' names, a ``notebooks_html`` that is a symlink, a crafted page with stamps that say it
is current, a FIFO where a stamp should be, a private notebook a record names, a lock that is a symlink, another
report being written. Each case beside good records: the report exits 0 (or 2 / 5 for a refused folder), every good
record is tabulated, and every file outside the folder stays byte-identical. The index's total time bound
(``CGB_INDEX_LIMIT_S``) and one page per notebook content (hard links, copies) are here too.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
import time
from html import unescape
from pathlib import Path

import pytest
from support.records import _rec
from support.runs import good_record, write
from test_hostile_bounds import _runner_watched

from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic
from helpers.report.publish import index
from helpers.report.publish.index_folder import PAGES


def _tree(folder: Path) -> dict:
    """Every file under ``folder`` (symlinks not followed) with its bytes' sha256: to show nothing changed."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_symlink():
            out[str(p)] = "link:" + os.readlink(p)
        elif p.is_file():
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _env(out: Path, **extra) -> dict:
    env = {**os.environ, "CGB_OUTPUTS": str(out / "outputs"), **extra}
    for k in ("CGB_EXECUTED_NOTEBOOK", "CGB_KERNEL_STDERR", "CGB_POINT_DEADLINE"):
        env.pop(k, None)
    return env


def _runner(*args, env, timeout=120):
    return subprocess.run([sys.executable, "-m", "helpers.runner", *args], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _notebook(path: Path, text: str) -> Path:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(text), nbformat.v4.new_code_cell("1 + 1")]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def test_report_only_into_a_hostile_out_folder_writes_nothing_outside_it(tmp_path):
    """Symlinks at report.html, index.html and the three CSVs (and at the old temporary name), a crafted page with a
    matching ``.render-version`` and ``.sources.json``, a record naming a private notebook under the folder, three
    hard links to one notebook: the runner's own ``--report-only --out DIR``, the summary in a kernel."""
    good, out, outside = tmp_path / "good", tmp_path / "out", tmp_path / "outside"
    for i in range(2):
        write_atomic(good / "records" / f"good{i}.json", _rec(i))
    nb = _notebook(good / "notebooks" / "n.ipynb", "a good notebook")
    for k in (1, 2):
        os.link(nb, good / "notebooks" / f"n_link{k}.ipynb")
    for k, name in enumerate(["n.ipynb", "n_link1.ipynb", "n_link2.ipynb"]):
        write_atomic(good / "records" / f"nb{k}.json", _rec(2 + k, notebook=f"../notebooks/{name}"))
    private = _notebook(out / "private" / "diary.ipynb", "PRIVATE-DIARY")
    write_atomic(good / "records" / "private.json", _rec(5, notebook=str(private)))
    outside.mkdir()
    for name in ("report.html", "index.html", "results.csv", "configurations.csv", "verdict.csv", "report.html.tmp",
                 ".report.html.tmp"):
        (outside / name).write_text(f"not yours: {name}\n")
        os.symlink(outside / name, out / name)
    # a crafted page where the good notebook's page goes, with the stamps of an index that rendered it
    roots = [good.resolve()]
    page = index._page_for(nb.resolve(), roots[0], roots, out.resolve())
    page.parent.mkdir(parents=True)
    page.write_text("<html><body><script>alert(1)</script><iframe src='https://example.com'></iframe></body></html>")
    key = page.relative_to(out.resolve()).as_posix()
    (out / PAGES / ".render-version").write_text(index.RENDER_VERSION + "\n")
    (out / PAGES / index.SOURCES).write_text(json.dumps({key: hashlib.sha256(nb.read_bytes()).hexdigest()}))
    before = _tree(outside) | _tree(good)
    code, said, took, peaks = _runner_watched(["--report-only", "--no-reference", "--inputs", str(good), "--out",
                                               str(out)], _env(tmp_path))
    assert code == 0, said[-4000:]
    assert took < 60, took
    assert peaks and sum(peaks.values()) <= 2**20, peaks  # kB: every process's own peak, summed: at most 1 GB
    for name in ("report.html", "index.html", "results.csv", "configurations.csv", "verdict.csv"):  # each named
        assert f"note: {out / name} is a symlink (to {str(outside / name)!r}): replaced by a file of its own" in said
    assert _tree(outside) | _tree(good) == before  # nothing outside --out written, the inputs untouched
    for name in ("report.html", "index.html", "results.csv"):
        assert not (out / name).is_symlink() and (out / name).stat().st_size > 100
    with open(out / "results.csv", newline="") as f:
        assert sorted(r["point_id"] for r in csv.DictReader(f)) == [f"p{i}" for i in range(6)]
    # the crafted page rendered again, sanitised, whatever its stamps said
    text = page.read_text()
    assert "<script" not in text and "<iframe" not in text and "a good notebook" in text
    listing = (out / "index.html").read_text()
    # three names of one notebook: one page, linked from each record's row
    assert sorted(p.name for p in (out / PAGES).rglob("*.html")) == ["n.html"]
    assert listing.count(f'href="{key}"') == 3, listing
    # a notebook under --out that no --inputs folder holds is not rendered, nor linked
    assert "diary.ipynb <i>(outside the record folders, not rendered)</i>" in listing
    assert "PRIVATE-DIARY" not in "".join(p.read_text() for p in (out / PAGES).rglob("*.html"))


def test_a_symlinked_notebooks_html_is_refused_before_anything_runs(tmp_path):
    """``--out DIR`` whose notebooks_html is a symlink: exit 2 naming it, the folder it points to byte-identical (its
    pages were deleted and stamps written there before)."""
    good, out, elsewhere = tmp_path / "good", tmp_path / "out", tmp_path / "elsewhere"
    write_atomic(good / "records" / "good0.json", _rec(0))
    elsewhere.mkdir()
    (elsewhere / "someones_page.html").write_text("<p>mine</p>")
    out.mkdir()
    os.symlink(elsewhere, out / PAGES)
    before = _tree(elsewhere)
    res = _runner("--report-only", "--no-reference", "--inputs", str(good), "--out", str(out), env=_env(tmp_path))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{out / PAGES} is a symlink" in res.stderr and "nothing was run" in res.stderr, res.stderr
    assert _tree(elsewhere) == before and not (out / "report.html").exists()


def test_two_reports_into_one_out_folder_at_once_the_second_is_refused(tmp_path):
    """``--out`` is held as the outputs folder is: a second report into it waits for nothing (exit 5, who holds
    it), and the first one's files are untouched."""
    from helpers.runner.outputs import acquire_lock

    good, out = tmp_path / "good", tmp_path / "out"
    write_atomic(good / "records" / "good0.json", _rec(0))
    out.mkdir()
    held = acquire_lock(out)
    assert held is not None
    try:
        res = _runner("--report-only", "--no-reference", "--inputs", str(good), "--out", str(out),
                      env=_env(tmp_path))
    finally:
        held.close()
    assert res.returncode == 5, res.stdout + res.stderr
    assert "is in use by a run in progress" in res.stderr and not (out / "report.html").exists()


def test_the_lock_is_never_taken_through_a_symlink_or_a_fifo(tmp_path):
    from helpers.runner.outputs import CannotWrite, acquire_lock

    out, victim = tmp_path / "out", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("keep me\n")
    os.symlink(victim, out / ".run.lock")
    with pytest.raises(CannotWrite, match="is a symlink"):
        acquire_lock(out)
    assert victim.read_text() == "keep me\n"
    (out / ".run.lock").unlink()
    os.mkfifo(out / ".run.lock")
    with pytest.raises(CannotWrite, match="not a regular file"):
        acquire_lock(out)


def test_a_fifo_stamp_does_not_hang_the_index(tmp_path):
    """A ``.render-version`` (or ``.sources.json``) that is a FIFO: the index is written within seconds, the FIFO
    replaced by a stamp."""
    folder = tmp_path / "outputs"
    _notebook(folder / "notebooks" / "n.ipynb", "x")
    write(folder / "records", "r.json", good_record(0, notebook="../notebooks/n.ipynb"))
    (folder / PAGES).mkdir()
    os.mkfifo(folder / PAGES / ".render-version")
    os.mkfifo(folder / PAGES / index.SOURCES)
    code = ("from helpers.report import render_index\n"
            f"render_index([{str(folder)!r}], {str(folder / 'index.html')!r}, workers=0)\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert (folder / PAGES / ".render-version").read_text().strip() == index.RENDER_VERSION
    assert "n.ipynb</a>" in (folder / "index.html").read_text()


def test_a_page_is_never_written_through_a_symlinked_folder_inside_notebooks_html(tmp_path):
    folder, elsewhere = tmp_path / "outputs", tmp_path / "elsewhere"
    _notebook(folder / "notebooks" / "n.ipynb", "x")
    write(folder / "records", "r.json", good_record(0, notebook="../notebooks/n.ipynb"))
    elsewhere.mkdir()
    (folder / PAGES).mkdir()
    os.symlink(elsewhere, folder / PAGES / "notebooks")
    listing = index.render_index([folder], folder / "index.html", workers=0).read_text()
    assert "not rendered: a folder on its page's way is a symlink" in listing
    assert list(elsewhere.iterdir()) == []


def test_the_whole_index_is_bounded_in_time(tmp_path, monkeypatch):
    """Eight notebooks whose pages would each take two minutes, under ``CGB_INDEX_LIMIT_S=3``: the index is written
    within seconds, each page listed as stopped by the whole index's bound."""
    from support.runs import sleep_job

    from helpers.report.publish.workers import over_total

    folder = tmp_path / "outputs"
    for i in range(8):
        _notebook(folder / "notebooks" / f"n{i}.ipynb", f"notebook {i}")
        write(folder / "records", f"n{i}.json", good_record(i, notebook=f"../notebooks/n{i}.ipynb"))
    monkeypatch.setenv("CGB_INDEX_LIMIT_S", "3")
    t0 = time.perf_counter()
    listing = unescape(index.render_index([folder], folder / "index.html", workers=2, job=sleep_job).read_text())
    assert time.perf_counter() - t0 < 60
    assert listing.count(f"<i>({over_total(3.0)})</i>") == 8, listing
    assert over_total(3.0) == "not rendered: the whole index's time bound (3 s) was reached first"


def test_the_index_bound_comes_from_the_environment_and_a_bad_value_is_refused(tmp_path):
    from helpers.report.publish.index_folder import INDEX_LIMIT_S, index_limit_s

    assert index_limit_s({}) == INDEX_LIMIT_S and index_limit_s({"CGB_INDEX_LIMIT_S": "30"}) == 30.0
    with pytest.raises(ValueError, match="CGB_INDEX_LIMIT_S='-1' is not a positive, finite number of seconds"):
        index_limit_s({"CGB_INDEX_LIMIT_S": "-1"})
    good = tmp_path / "good"
    write_atomic(good / "records" / "good0.json", _rec(0))
    res = _runner("--report-only", "--inputs", str(good), env=_env(tmp_path, CGB_INDEX_LIMIT_S="soon"))
    assert res.returncode == 2 and "CGB_INDEX_LIMIT_S='soon' is not a number of seconds" in res.stderr
