"""Untrusted input, round 5 (issue 74), the smaller items of the report and the runner, each beside good records:

- a record's ``model_shape`` is checked at read (a negative or absurd count costs that record, named, never a
  negative predicted GPU figure);
- an unusable seal key (a symlink, empty, mode 0644, a folder) is said once, with what to do; the pages are still
  rendered and linked;
- asyncio's "Task exception was never retrieved" for a dead kernel's poll task is not printed after "interrupted".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.records import _rec

from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic

SHAPE = {"layers": 4, "launches": 4, "weights": 6, "input_bytes": 3072}


@pytest.mark.parametrize(("shape", "why"), [
    ({**SHAPE, "launches": -2**53}, "'model_shape.launches' is a number, not an integer >= 0"),
    ({**SHAPE, "weights": 2.5}, "'model_shape.weights' is a number, not an integer >= 0"),
    ({**SHAPE, "input_bytes": "3072"}, "'model_shape.input_bytes' is a string, not an integer >= 0"),
    ({**SHAPE, "launches": 10**15}, "'model_shape.launches' is over 1e+12 (no model has it)"),
    ([1, 2], "'model_shape' is a list, not a mapping"),
])
def test_a_records_model_shape_is_checked_at_read(tmp_path, shape, why):
    from helpers import report

    folder = tmp_path / "recs"
    for i in range(2):
        write_atomic(folder / f"good{i}.json", _rec(i, model_shape=SHAPE, model_params=1000))
    write_atomic(folder / "bad.json", _rec(2, model_shape=shape))
    write_atomic(folder / "bad_params.json", _rec(3, model_params=-5))
    ctx = report.build_context([folder], use_reference=False)
    assert sorted(ctx.df["point_id"]) == ["p0", "p1"]
    skipped = {Path(p).name: w for p, w in ctx.skipped}
    assert skipped == {"bad.json": why, "bad_params.json": "'model_params' is a number, not an integer > 0"}


@pytest.fixture
def key_place(tmp_path, monkeypatch):
    from helpers.report.publish import index_folder

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    index_folder._key_at.cache_clear()
    yield index_folder.key_file()
    index_folder._key_at.cache_clear()


def _notebooks(folder: Path) -> None:
    nb_dir, rec_dir = folder / "runs" / "r" / "notebooks", folder / "runs" / "r" / "records"
    nb_dir.mkdir(parents=True)
    for i in range(2):
        (nb_dir / f"n{i}.ipynb").write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
            {"cell_type": "markdown", "id": "c0", "metadata": {}, "source": f"marker {i}"}]}))
        write_atomic(rec_dir / f"r{i}.json", _rec(i, notebook=f"../notebooks/n{i}.ipynb"))


def _job(pair):
    src, dst = map(Path, pair)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(src.read_text())


@pytest.mark.parametrize("kind", ["symlink", "empty", "0644", "folder", "short"])
def test_an_unusable_seal_key_is_said_once_and_the_pages_still_render(tmp_path, key_place, kind, capsys):
    from helpers.report.publish import index

    key_place.parent.mkdir(parents=True, mode=0o700)
    if kind == "symlink":
        target = tmp_path / "elsewhere"
        target.write_bytes(os.urandom(32))
        target.chmod(0o600)
        key_place.symlink_to(target)
        reason = "a symlink"
    elif kind == "folder":
        key_place.mkdir()
        reason = "not a regular file"
    else:
        data = {"empty": b"", "0644": os.urandom(32), "short": b"x" * 7}[kind]
        key_place.write_bytes(data)
        key_place.chmod(0o644 if kind == "0644" else 0o600)
        reason = {"empty": "0 bytes, not 32", "0644": "readable by others: mode 0644, not 0600",
                  "short": "7 bytes, not 32"}[kind]
    before = sorted(p.name for p in key_place.parent.iterdir())
    folder = tmp_path / "outputs"
    _notebooks(folder)
    for _ in range(2):  # two renders in one process: said once
        index.render_index([folder], folder / "index.html", workers=0, job=_job)
    err = capsys.readouterr().err
    assert err.count("seal key") == 1, err
    assert f"({reason})" in err and "remove it and a new one is made" in err and str(key_place) in err
    pages = sorted((folder / index.PAGES).rglob("*.html"))
    assert len(pages) == 2 and all("marker" in p.read_text() for p in pages)
    assert json.loads((folder / index.PAGES / index.SOURCES).read_text()) == {}  # nothing sealed
    assert sorted(p.name for p in key_place.parent.iterdir()) == before  # the key's place left as it was


def test_a_usable_seal_key_is_silent_and_seals(tmp_path, key_place, capsys):
    from helpers.report.publish import index

    folder = tmp_path / "outputs"
    _notebooks(folder)
    index.render_index([folder], folder / "index.html", workers=0, job=_job)
    assert "seal key" not in capsys.readouterr().err
    assert key_place.stat().st_mode & 0o777 == 0o600 and key_place.stat().st_size == 32
    assert len(json.loads((folder / index.PAGES / index.SOURCES).read_text())) == 2


def test_a_dead_kernels_never_retrieved_task_is_not_printed_and_others_are():
    """A real asyncio task raising nbclient's DeadKernelError, never awaited, collected: asyncio logs it unless the
    runner's filter is installed; another exception is still logged."""
    code = textwrap.dedent("""
        import asyncio, gc, sys
        from nbclient.exceptions import DeadKernelError
        if sys.argv[1] == "quiet":
            from helpers.runner.kernel_watch import quiet_dead_kernel_tasks
            quiet_dead_kernel_tasks()
        async def poll():
            raise DeadKernelError("Kernel died")
        async def other():
            raise RuntimeError("something else")
        async def main():
            for f in (poll, other):
                asyncio.ensure_future(f())
            await asyncio.sleep(0.05)
        loop = asyncio.new_event_loop()
        loop.run_until_complete(main())
        gc.collect()
        loop.close()
        print("interrupted", flush=True)
    """)
    out = {}
    for mode in ("loud", "quiet"):
        r = subprocess.run([sys.executable, "-c", code, mode], cwd=PROJECT_ROOT, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0 and "interrupted" in r.stdout, r.stderr
        out[mode] = r.stderr
    assert "DeadKernelError" in out["loud"] and "Task exception was never retrieved" in out["loud"]
    assert "DeadKernelError" not in out["quiet"]
    assert "RuntimeError: something else" in out["quiet"]  # only the dead kernel's task is quieted
