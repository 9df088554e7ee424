"""The report while a grid runs (issue 68): ``report.html`` written after the first block, marked partial, before the
last block has run; a run stopped by SIGINT mid-grid leaves the whole report of what ran, marked partial.

Both run the real runner (``run_all.sh`` on this Python) over tiny notebooks (``support/tiny.py``: the runner's own
behaviour, no framework), the report from the real summary notebook's recipe.
"""

from __future__ import annotations

import os
import re
import signal
import time
from html import unescape

import pytest
from support import tiny
from test_reliability import all_records, kernels_of, start, wait_for

from helpers.report.publish.sections import ORDER


def _grid(tmp_path, seeds: dict) -> str:
    """Two blocks (two workloads): mlp_mnist seed 1, then cnn_cifar10 at each of ``seeds``."""
    g = tmp_path / "g.yaml"
    g.write_text("timeout_s: 600\ndefaults: {backend: jax, device: cpu, epochs: 2, n_train: 100, batch_size: 10,"
                 " data_source: synthetic}\npoints:\n  - {workload: mlp_mnist, seed: 1}\n"
                 f"  - {{workload: cnn_cifar10, seed: {list(seeds)}}}\n")
    return str(g)


def _text(path) -> str:
    return unescape(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")))


def _sections(path) -> set[str]:
    """The report sections on the page (each renders with its name as its id)."""
    return set(re.findall(r'\bid="([a-z_]+)"', path.read_text(encoding="utf-8"))) & set(ORDER)


@pytest.mark.xdist_group("partial")
def test_report_html_is_written_marked_partial_after_the_first_block_and_before_the_last(tmp_path, tiny_notebooks):
    outputs = tmp_path / "outputs"
    gate = tmp_path / "gate"  # the last block's point waits in its kernel until this test has read the partial page
    behaviour = {2: f"gate:{gate}"}
    proc = start([_grid(tmp_path, behaviour)], outputs, **tiny.env(tiny_notebooks, behaviour))
    try:
        page = outputs / "report.html"
        wait_for(page.exists, timeout=240)
        # the first block is over, the last has not run: its point is still waiting in its kernel, no record of it
        recs = all_records(outputs)
        assert [r["params"]["seed"] for r in recs] == [1], recs
        # the page is written between the blocks: the last block's kernel starts just after it, and then waits
        wait_for(lambda: kernels_of(outputs), timeout=120)
        text = _text(page)
        assert "partial: 1 of 2 runs; this page refreshes as the grid goes" in text
        assert "verdict" in _sections(page) and "mlp_mnist" in text
        assert "Content-Security-Policy" in page.read_text() and "<script" not in page.read_text()
        gate.touch()
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, out
    # the page's path said once, at the start; the finished run's report is the whole one, no longer partial
    assert out.count(f"report: {page} (rendered as the grid goes") == 1, out
    assert out.index("rendered as the grid goes") < out.index("[1/2]")
    final = _text(page)
    assert "partial:" not in final and {"verdict", "provenance"} <= _sections(page)
    assert sorted(r["params"]["seed"] for r in all_records(outputs)) == [1, 2]


@pytest.mark.xdist_group("partial")
def test_sigint_mid_grid_leaves_the_whole_report_of_what_ran_marked_partial(tmp_path, tiny_notebooks):
    outputs = tmp_path / "outputs"
    behaviour = {3: "sleep:300"}
    proc = start([_grid(tmp_path, {2: "ok", 3: "sleep"})], outputs, **tiny.env(tiny_notebooks, behaviour))
    try:
        wait_for(lambda: len([r for r in all_records(outputs) if "wall_s" in r]) == 2, timeout=240)
        wait_for(lambda: kernels_of(outputs))
        time.sleep(1.0)
        os.kill(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, out
    assert "interrupted" in out and "Task exception was never retrieved" not in out, out
    page = outputs / "report.html"
    text = _text(page)
    assert "partial: 2 of 3 runs (interrupted); run the same command again to go on" in text, out
    # complete: every section of the report that has something to show, the marks explained, the method last
    found = _sections(page)
    assert {"verdict", "methods", "overview", "provenance"} <= found, found
    assert "mlp_mnist" in text and "cnn_cifar10" in text
    assert f"report: {page} (partial: 2 of 3 runs)" in out
    assert not kernels_of(outputs)
