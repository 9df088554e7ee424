"""Untrusted input, bounds on what is read and shown: each case beside two good records, in-process (no kernel).

Each test builds the report's context (``build_context``), every section's HTML and the CSVs (or calls the index's
or the grid reader's own functions) and checks: every good record tabulated, the bad file listed with its reason,
nothing raw that a page or a CSV must not carry, within ``BOUND_S``. Then the issue's smaller items: a slow notebook
page (3), a conflicting copy, a .keras weights bomb, a SIGKILL's wording, a missing report.previous.html, a grid given
twice. None starts a browser; the index's workers run renderers of ``support/slow_page.py``, but for the slow page's
real case: a crafted notebook beside good records through the runner's ``--report-only`` (the one test here that
starts a kernel, the summary notebook's; its page limit lowered to 2 s through ``CGB_PAGE_LIMIT_S``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from html import unescape
from pathlib import Path

import pytest
from support.records import _rec

from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic
from helpers.report.publish.charts import figure_html as FIGURE_HTML  # the real one (tests below draw without it)

BOUND_S = 10.0  # each case: reading, tabulating, every section and the CSVs
GOOD = ["p0", "p1"]
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"


@pytest.fixture(autouse=True)
def _charts_unrendered(monkeypatch):
    """Charts are drawn but not encoded as PNG (most of a section's time; an image carries no text to escape):
    the figure's alt text is kept, escaped as ``charts.figure_html`` escapes it."""
    import matplotlib.pyplot as plt

    from helpers.report.publish import charts
    from helpers.report.words.fmt import esc

    def figure_html(fig, alt=""):
        plt.close(fig)
        return f'<img class="cgb-fig" alt="{esc(alt)}" src="data:image/png;base64,">'

    monkeypatch.setattr(charts, "figure_html", figure_html)


def _good(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(2):
        write_atomic(folder / f"good{i}.json", _rec(i))
    return folder


def _report(folders, tmp_path: Path, only=None):
    """The context, every section's HTML (or those named in ``only``), the CSVs' text, and how long it took."""
    from helpers import report
    from helpers.report.publish import sections
    from helpers.report.publish.csvs import write_csvs

    t0 = time.perf_counter()
    ctx = report.build_context([Path(f) for f in folders], use_reference=False)
    html = {m.__name__.rsplit(".", 1)[-1]: sections.build(m, ctx)._repr_html_() for m in sections.modules()
            if only is None or m.__name__.rsplit(".", 1)[-1] in only}
    out = tmp_path / "csv"
    csv = {p.name: p.read_bytes().decode("utf-8") for p in write_csvs(ctx, out)}
    return ctx, html, csv, time.perf_counter() - t0


def _holds(ctx, html, took, good=GOOD):
    assert sorted(ctx.df["point_id"]) == sorted(good)  # every good record, nothing of a bad one
    assert not [m for m, h in html.items() if "failed to build" in h]
    assert took < BOUND_S, took


# ---- 1: bare_loops.jsonl goes through the record reader's bounds

BARE_OK = {"impl": "bare-jax", "workload": "cnn_cifar10", "precision": "float32", "batch": 100,
           "samples_per_s": 2000.0, "host": "h1"}


def _bare(folder: Path, text: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / "bare_loops.jsonl"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def test_bare_loop_files_are_read_within_the_record_bounds(tmp_path):
    from helpers.report.load import bare

    good = _good(tmp_path / "good")
    _bare(good, json.dumps(BARE_OK) + "\n")
    inputs = tmp_path / "bad"
    _bare(inputs / "inf", '{"impl": "bare-jax", "workload": "w", "precision": "float32", "batch": Infinity, '
                          '"samples_per_s": 1}\n' + json.dumps(BARE_OK | {"host": "h2"}) + "\n")
    _bare(inputs / "huge", '{"impl": "bare-jax", "workload": "w", "precision": "float32", "batch": 1, '
                           f'"samples_per_s": 1{"0" * 400}}}\n')
    _bare(inputs / "nan", '{"impl": "bare-jax", "workload": "w", "precision": "float32", "batch": 1, '
                          '"samples_per_s": NaN}\n')
    _bare(inputs / "text", '{"impl": "bare-jax", "workload": "w", "precision": "float32", "batch": 1, '
                           '"samples_per_s": "API_TOKEN=s3cr3t"}\n[1, 2]\nnot json API_TOKEN=s3cr3t\n')
    _bare(inputs / "large", b"\n" * (bare.MAX_BYTES + 1))
    (inputs / "fifo").mkdir()
    os.mkfifo(inputs / "fifo" / "bare_loops.jsonl")  # reading it would block forever
    (inputs / "zero").mkdir()
    (inputs / "zero" / "bare_loops.jsonl").symlink_to("/dev/zero")  # would never end
    secret = _bare(tmp_path / "outside", "API_TOKEN=s3cr3t\n")
    (inputs / "out").mkdir()
    (inputs / "out" / "bare_loops.jsonl").symlink_to(secret)
    ctx, html, csv, took = _report([good, inputs], tmp_path, only=("overview", "provenance", "limit", "verdict"))
    _holds(ctx, html, took)
    why = {Path(p).parent.name: w for p, w in ctx.skipped}
    assert why == {"large": "larger than 8 MB", "fifo": "not a regular file (a FIFO, a device or a folder)",
                   "zero": "a symlink to outside the folders given, not read",
                   "out": "a symlink to outside the folders given, not read"}, why
    page = unescape("".join(html.values()))
    assert "s3cr3t" not in page and "s3cr3t" not in "".join(csv.values())
    for name in why:
        assert f"{name}/bare_loops.jsonl" in page  # listed in Provenance with its reason
    assert sorted(ctx.bare["host"]) == ["h1", "h2"]  # the good lines, also the one beside a bad line
    notes = " ".join(t.format(*v) for t, v, _ in ctx.notes)
    assert "6 line(s) of bare_loops.jsonl" in notes and "s3cr3t" not in notes, notes
    _, bad = bare.read([inputs])
    reasons = {Path(w.rsplit(":", 1)[0]).parent.name: why for w, why in bad}
    assert "non-finite" in reasons["inf"] or "Infinity is not a number" in reasons["inf"]
    assert "±2**53" in reasons["huge"] and "NaN is not a number" in reasons["nan"]


# ---- 2: lone surrogates and file names that are not UTF-8


def test_a_lone_surrogate_or_a_file_name_not_utf8_is_replaced_in_the_page_and_the_csvs(tmp_path):
    good = _good(tmp_path / "good")
    bad = tmp_path / "bad"
    bad.mkdir()
    rec = _rec(2)
    rec["fingerprint"] = {**rec["fingerprint"], "host": "box\ud800"}
    (bad / "surrogate.json").write_text(json.dumps(rec))  # "box\\ud800": a valid JSON escape
    odd = os.fsencode(bad) + b"/r\xff\xfe.json"  # a file name that is not UTF-8 (an archive from elsewhere)
    with open(odd, "w") as f:
        json.dump(_rec(3, workload="mlp_mnist"), f)
    with open(os.fsencode(bad) + b"/not\xff.json", "w") as f:
        f.write("not a record")
    ctx, html, csv, took = _report([good, bad], tmp_path, only=("overview", "provenance", "verdict", "methods"))
    _holds(ctx, html, took, GOOD + ["p2", "p3"])  # both are records: tabulated, with the odd parts replaced
    assert [w for p, w in ctx.skipped if "not" in Path(p).name] == ["not valid JSON (JSONDecodeError)"]
    for text in [*html.values(), *csv.values()]:
        assert not any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    assert "box\ufffd" in csv["results.csv"] and "box\ufffd" in unescape("".join(html.values()))
    assert "r\ufffd\ufffd.json" in csv["results.csv"]
    assert "not\ufffd.json" in unescape(html["provenance"])
    _drawn(ctx)


def _drawn(ctx):
    """What charts draw (the context's names) holds nothing raw, and a chart of it is encoded (matplotlib cannot
    draw a lone surrogate: the section would fail)."""
    import matplotlib.pyplot as plt

    from helpers.report.load.visible import _UNSAFE

    names = [v for c in ("workload", "backend", "host", "machine", "knobs") for v in ctx.df[c].dropna().astype(str)]
    assert not [v for v in names if _UNSAFE.search(v)]
    fig, ax = plt.subplots()
    ax.barh(names, range(1, len(names) + 1))
    drawn = FIGURE_HTML(fig)
    assert "base64,iVBOR" in drawn or drawn.lstrip().startswith("<svg")  # a PNG, or inline SVG
    assert not [c for c in drawn if 0xD800 <= ord(c) <= 0xDFFF or _UNSAFE.search(c)]


# ---- 4: bidi controls and zero-width characters are shown, never applied


def test_bidi_controls_and_zero_width_characters_are_shown_as_escapes(tmp_path):
    from helpers.report.publish import index

    good = _good(tmp_path / "good")
    bad = tmp_path / "bad"
    bad.mkdir()
    write_atomic(bad / "bidi.json", _rec(2, workload="mlp_mnist\u202e", backend="jax\u2066",
                                         params={"threads": 0, "precision": "float32", "knob": BIDI}))
    write_atomic(bad / "zw.json", _rec(3, workload="cnn_cifar10\u200b", fingerprint={
        **_rec()["fingerprint"], "host": "h1" + ZERO_WIDTH}))
    ctx, html, csv, took = _report([good, bad], tmp_path)
    _holds(ctx, html, took, GOOD + ["p2", "p3"])
    out = tmp_path / "index.html"
    index.render_index([good, bad], out)
    for where, text in [*html.items(), *csv.items(), ("index.html", out.read_text(encoding="utf-8"))]:
        raw = sorted({f"U+{ord(c):04X}" for c in text if c in BIDI + ZERO_WIDTH})
        assert not raw, (where, raw)
    page = unescape("".join(html.values()))
    assert "mlp_mnist\\u202e" in page and "cnn_cifar10\\u200b" in page  # a second row that does not look the same
    _drawn(ctx)
    assert "mlp_mnist\\u202e" in csv["configurations.csv"] and "h1\\u200b\\u200c\\u200d\\u2060\\ufeff" in \
        csv["results.csv"]


# ---- 8: YAML aliases are counted before they are expanded; no message prints an unbounded value


def _alias_bomb(levels: int = 9) -> str:
    """A 1-kB grid whose ``threads`` list holds 9**10 values once its aliases are expanded."""
    anchors = ["&a0 [1, 2, 3, 4, 5, 6, 7, 8, 9]"] + [
        f"&a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, levels + 1)]
    return ("points:\n  - workload: mlp_mnist\n    backend: jax\n    device: cpu\n    threads: [\n"
            + ",\n".join(f"      {a}" for a in anchors) + "]\n")


def _capped(args, cap: int = 2**30):
    """``python -m helpers.runner ARGS`` under an address-space cap of ``cap`` bytes."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "helpers.runner", *args], cwd=PROJECT_ROOT, capture_output=True,
                       text=True, timeout=60, preexec_fn=limit)
    return p, time.perf_counter() - t0


def test_an_alias_bomb_grid_is_refused_in_seconds_under_a_1gb_cap(tmp_path):
    from helpers.grid.files import MAX_NODES, GridError, read

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_alias_bomb())
    assert bomb.stat().st_size < 1024
    p, took = _capped([str(bomb), "--validate-only"])
    assert p.returncode == 2, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    assert took <= 5.0, took
    assert f"more than {MAX_NODES:,} values once its aliases" in p.stdout + p.stderr
    assert "Traceback" not in p.stderr and "MemoryError" not in p.stdout + p.stderr
    assert len(p.stdout) + len(p.stderr) < 4000
    loop = tmp_path / "loop.yaml"  # an alias that holds itself never ends when expanded
    loop.write_text("points: &p\n  - workload: mlp_mnist\n    backend: jax\n    threads: *p\n")
    with pytest.raises(GridError, match="once its aliases"):
        read(loop)
    fine = tmp_path / "fine.yaml"  # aliases a grid may well use, within the bound
    fine.write_text("defaults: &d {epochs: 1}\npoints:\n  - {workload: mlp_mnist, backend: jax, device: cpu}\n"
                    "  - &b {workload: mlp_mnist, backend: torch, device: cpu, threads: [1, 2]}\n  - *b\n")
    doc, _ = read(fine)
    assert doc["points"][1] == doc["points"][2] and doc["defaults"] == {"epochs": 1}


def test_a_grid_problem_never_prints_an_unbounded_value(tmp_path):
    from helpers.grid.files import MAX_MESSAGE

    grid = tmp_path / "long.yaml"
    grid.write_text(f"timeout_s: {'9' * 20_000}x\nrepeats: [{', '.join(['1'] * 2_000)}]\n"
                    f"points:\n  - workload: {'w' * 20_000}\n    backend: jax\n    device: cpu\n")
    p, took = _capped([str(grid), "--validate-only"])
    assert p.returncode == 2, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    out = p.stdout + p.stderr
    assert "timeout_s" in out and "repeats" in out and "more characters not shown" in out
    assert max(len(line) for line in out.splitlines()) <= MAX_MESSAGE + 60 and took <= 5.0, took


# ---- 6: a record whose claimed device contradicts the one it used, or its machine, is refused


def test_a_record_that_contradicts_itself_is_refused_with_the_reason(tmp_path):
    good = _good(tmp_path / "good")
    bad = tmp_path / "bad"
    fast = {"epoch_s": [0.01, 0.011, 0.009], "median_epoch_s": 0.01, "first_epoch_s": 0.02, "step_s": 0.001,
            "samples_per_s": 100_000.0}  # the timings divided by 100
    nvml = {**_rec()["fingerprint"], "gpu_names": [], "gpu_driver": "550.54.15", "cuda_driver": "12.4"}
    write_atomic(bad / "claims_gpu.json", _rec(2, device="gpu", device_used="cpu", **fast))
    write_atomic(bad / "no_gpu.json", _rec(3, device="gpu", device_used="gpu", fingerprint=nvml, **fast))
    write_atomic(bad / "claims_cpu.json", _rec(4, device="cpu", device_used="gpu", **fast))
    # kept: a GPU run on a machine whose GPU query did not answer (no NVML: no names, no driver), a point skipped
    write_atomic(good / "no_nvml.json", _rec(5, device="gpu", device_used="gpu"))
    write_atomic(good / "skipped.json", _rec(6, device="gpu", device_used=None, status="skipped", reason="no GPU",
                                            epoch_s=[], median_epoch_s=None))
    ctx, html, csv, took = _report([good, bad], tmp_path, only=("overview", "provenance", "verdict"))
    _holds(ctx, html, took, GOOD + ["p5", "p6"])
    why = {Path(p).name: w for p, w in ctx.skipped}
    assert why == {
        "claims_gpu.json": "'device' is gpu but 'device_used' is cpu: the record contradicts itself",
        "no_gpu.json": "'device' is gpu but 'fingerprint.gpu_names' names no GPU: the record contradicts itself",
        "claims_cpu.json": "'device' is cpu but 'device_used' is gpu: the record contradicts itself"}, why
    page = unescape(html["provenance"])
    assert all(name in page for name in why) and "'device_used' is cpu" in page
    assert "100,000" not in unescape(html["verdict"]) and "100000" not in csv["configurations.csv"]
    assert "3 JSON file(s) skipped" in unescape(html["overview"])


# ---- 7: the index knows a page is current by its notebook's content, not its time


def test_a_notebook_rewritten_with_an_older_mtime_gets_its_page_rendered_again(tmp_path):
    from helpers.report.publish import index

    def notebook(path, text):  # a minimal v4 notebook (nbformat's schema check costs seconds to load)
        path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
            {"cell_type": "markdown", "id": "c0", "metadata": {}, "source": text}]}))

    folder = tmp_path / "outputs"
    nb_dir, rec_dir = folder / "runs" / "r" / "notebooks", folder / "runs" / "r" / "records"
    nb_dir.mkdir(parents=True)
    for i in range(2):
        notebook(nb_dir / f"n{i}.ipynb", f"marker OLD{i}")
        write_atomic(rec_dir / f"r{i}.json", _rec(i, notebook=f"../notebooks/n{i}.ipynb"))
    def job(pair):  # the page holds its notebook's text (nbconvert itself is tested in test_hostile.py)
        src, dst = map(Path, pair)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(src.read_text())

    t0 = time.perf_counter()
    index.render_index([folder], folder / "index.html", workers=0, job=job)
    pages = sorted((folder / index.PAGES).rglob("*.html"))
    assert len(pages) == 2 and all("marker OLD" in p.read_text() for p in pages)
    stamps = {p: p.stat().st_mtime_ns for p in pages}
    # n0 rewritten, then given an mtime older than its page (as tar, unzip or a clock jump do)
    src = nb_dir / "n0.ipynb"
    notebook(src, "marker NEW0")
    old = pages[0].stat().st_mtime - 3600
    os.utime(src, (old, old))
    index.render_index([folder], folder / "index.html", workers=0, job=job)
    text = {p.stem: p.read_text() for p in pages}
    assert "marker NEW0" in text["n0"] and "marker OLD0" not in text["n0"]
    assert pages[1].stat().st_mtime_ns == stamps[pages[1]]  # the unchanged one: not rendered again
    assert "n0.ipynb" in (folder / "index.html").read_text() and time.perf_counter() - t0 < BOUND_S
    # an untouched notebook with a newer mtime (a copy) is not rendered again either: its content is the same
    os.utime(nb_dir / "n1.ipynb")
    index.render_index([folder], folder / "index.html", workers=0, job=job)
    assert pages[1].stat().st_mtime_ns == stamps[pages[1]]


# ---- 5: a record prices its own machine only, never another of the same host name


def test_a_record_cannot_reprice_another_machine_of_the_same_host_name(tmp_path):
    from helpers.report.derive import costs

    h100 = {"host": "vm", "cpu_model": "Intel(R) Xeon(R) Processor", "cpu_logical": 16, "gpu_driver": "550.54.15",
            "gpu_names": ["NVIDIA H100 80GB HBM3"], "versions": {"keras": "3.15.1", "jax": "0.10.2"}}
    good = tmp_path / "good"
    write_atomic(good / "cpu.json", _rec(0, fingerprint=h100))
    write_atomic(good / "gpu.json", _rec(1, device="gpu", device_used="gpu", fingerprint=h100,
                                         epoch_s=[0.1, 0.1, 0.1], median_epoch_s=0.1, samples_per_s=10_000.0))
    small = {"host": "vm", "cpu_model": "Some CPU", "cpu_logical": 2, "gpu_names": [],
             "versions": {"keras": "3.15.1", "jax": "0.10.2"}}
    bad = tmp_path / "bad"  # another machine, the same host name, a cheap profile: must price itself only
    write_atomic(bad / "reprice.json", _rec(2, workload="mlp_mnist", fingerprint=small,
                                            price_profile="aws-c7i-large"))
    ctx, html, csv, took = _report([good, bad], tmp_path, only=("overview", "cost"))
    _holds(ctx, html, took, GOOD + ["p2"])
    prices = ctx.prices["profiles"]
    published = costs.match_profile(None, "NVIDIA H100 80GB HBM3", "Intel(R) Xeon(R) Processor", 16, 1, ctx.prices)
    c = ctx.costed
    on_h100 = c[c["gpu"] == "NVIDIA H100 80GB HBM3"]
    assert len(on_h100) == 2 and set(on_h100["profile"]) == {published}
    assert set(on_h100["on_demand_per_h"]) == {prices[published]["on_demand_per_hour"]}  # 4.29 $/h, as published
    own = c[c["workload"] == "mlp_mnist"]
    assert list(own["profile"]) == ["aws-c7i-large"]  # a record still prices its own machine
    # records of one machine that name different profiles: none is used, the hardware decides, a note says so
    write_atomic(good / "other.json", _rec(3, fingerprint=h100, price_profile="aws-c7i-large", batch_size=50))
    write_atomic(good / "again.json", _rec(4, fingerprint=h100, price_profile="lambda-1x-h100-sxm", batch_size=25))
    ctx, html, csv, took = _report([good, bad], tmp_path, only=("overview",))
    c = ctx.costed
    assert set(c[c["gpu"] == "NVIDIA H100 80GB HBM3"]["profile"]) == {published}
    assert any("different price profiles" in t for t, _, _ in ctx.notes)


# ---- 3: every notebook page renders in a worker, within a time bound


def test_a_notebook_page_over_the_time_limit_is_replaced_and_the_rest_goes_on(tmp_path):
    """A page stopped at its limit (a tiny one here, and a renderer that never ends on one notebook: the real slow
    case, a 1 MB markdown cell of brackets, takes hours; it has its own test below, through the runner) becomes a page
    naming the limit; the others render, in worker processes even though there are only three (the runner's own
    process never renders one)."""
    from support.slow_page import slow_on_marker

    from helpers.report.publish import index
    from helpers.report.publish.workers import too_slow

    folder = tmp_path / "outputs"
    nb_dir, rec_dir = folder / "runs" / "r" / "notebooks", folder / "runs" / "r" / "records"
    nb_dir.mkdir(parents=True)
    for i, name in enumerate(["n0", "slow", "n1"]):
        (nb_dir / f"{name}.ipynb").write_text(f"marker {name}")
        write_atomic(rec_dir / f"{name}.json", _rec(i, notebook=f"../notebooks/{name}.ipynb"))
    t0 = time.perf_counter()
    out = index.render_index([folder], folder / "index.html", job=slow_on_marker, limit_s=1.0)
    took = time.perf_counter() - t0
    assert took < 8.0, took  # the limit, the workers' start, never the slow page's own time
    pages = {p.stem: p.read_text() for p in (folder / index.PAGES).rglob("*.html")}
    assert sorted(pages) == ["n0", "n1", "slow"]
    for name in ("n0", "n1"):
        assert f"marker {name} rendered-in-pid-" in pages[name]
        assert f"rendered-in-pid-{os.getpid()}" not in pages[name]  # in a worker, not in this process
    why = too_slow(1.0)
    assert why == "not rendered: too slow (over 1 s)" and why in pages["slow"] and "marker" not in pages["slow"]
    assert "Content-Security-Policy" in pages["slow"]
    text = out.read_text()
    assert text.count("<a href=") == 3 and f"slow.ipynb</a> <i>({why})</i>" in text
    sources = json.loads((folder / index.PAGES / index.SOURCES).read_text())
    assert sorted(Path(k).stem for k in sources) == ["n0", "n1"]  # the slow one is tried again next time


def _crafted_notebook(path: Path, cell: str) -> Path:
    """An executed-looking notebook holding one markdown ``cell`` (and a code cell with its output)."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(cell),
        nbformat.v4.new_code_cell("print('trained')", execution_count=1,
                                  outputs=[nbformat.v4.new_output("stream", name="stdout", text="trained\n")])])
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def _runner_watched(args: list[str], env: dict, timeout: float = 120):
    """``python -m helpers.runner ARGS``, its processes' peaks watched (``_tree_peak_kb``): (exit status, its output,
    seconds, {pid: peak kB})."""
    import threading

    peaks, stop = {}, threading.Event()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "helpers.runner", *args], cwd=PROJECT_ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    watch = threading.Thread(target=_tree_peak_kb, args=(proc, stop, peaks), daemon=True)
    watch.start()
    try:
        said, _ = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
        proc.wait()
        stop.set()
        watch.join()
    return proc.returncode, said, time.perf_counter() - t0, peaks


def _tree_peak_kb(proc, stop, peaks: dict) -> None:
    """Until ``stop`` is set: every 0.1 s, the peak resident size (VmHWM) of ``proc`` and of each process it started
    (a kernel, the index's workers), the largest seen of each kept in ``peaks`` (pid -> kB)."""
    import psutil

    try:
        root = psutil.Process(proc.pid)
    except psutil.Error:
        return
    while not stop.is_set():
        try:
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            tree = []
        for p in tree:
            try:
                with open(f"/proc/{p.pid}/status") as f:
                    hwm = next(int(x.split()[1]) for x in f if x.startswith("VmHWM"))
            except (OSError, StopIteration, ValueError):
                continue
            peaks[p.pid] = max(peaks.get(p.pid, 0), hwm)
        stop.wait(0.1)


def test_a_crafted_notebook_that_renders_for_hours_beside_good_records_costs_its_page_only(tmp_path):
    """An unbounded markdown cell, for real: an executed notebook whose one markdown cell is 1 MB of ``[`` (nbconvert's
    HTML export: ~3 s at 16 kB, ~35 s at 64 kB here, growing about quadratically: hours at 1 MB), beside good
    records, through the runner's own ``--report-only`` (the summary notebook in a kernel, the report, the index
    with its pages in workers) with the page limit at 2 s (``CGB_PAGE_LIMIT_S``): exit 0, every record in the
    report's table, the crafted page replaced by one naming the limit and listed so in the index; the whole run
    within 60 s, the run's processes at most 1 GB together. (That the other pages render meanwhile, in workers:
    ``test_a_notebook_page_over_the_time_limit_is_replaced_and_the_rest_goes_on``; no good notebook here, whose
    page could itself pass 2 s on a loaded 2-core machine.)"""

    from helpers.report.publish import index
    from helpers.report.publish.workers import too_slow

    good, bad, out = tmp_path / "good", tmp_path / "bad", tmp_path / "out"
    for i in range(2):
        write_atomic(good / "records" / f"good{i}.json", _rec(i))
    crafted = _crafted_notebook(bad / "notebooks" / "crafted.ipynb", "[" * 2**20)
    assert 2**20 < crafted.stat().st_size < index.MAX_NOTEBOOK_BYTES  # rendered, not refused for its size
    write_atomic(bad / "records" / "crafted.json", _rec(2, workload="mlp_mnist", notebook="../notebooks/crafted.ipynb"))
    env = {**os.environ, "CGB_OUTPUTS": str(out), index.PAGE_LIMIT_ENV: "2"}
    for k in ("CGB_EXECUTED_NOTEBOOK", "CGB_KERNEL_STDERR", "CGB_POINT_DEADLINE"):
        env.pop(k, None)
    code, said, took, peaks = _runner_watched(["--report-only", "--no-reference", "--inputs", str(good), str(bad)],
                                              env)
    assert code == 0, said[-4000:]
    assert took <= 60.0, took
    assert peaks and sum(peaks.values()) <= 2**20, peaks  # kB: every process's own peak, summed: at most 1 GB
    # every record in the report's table (the crafted notebook's record is a good record too)
    import csv

    with open(out / "results.csv", newline="") as f:
        assert sorted(row["point_id"] for row in csv.DictReader(f)) == GOOD + ["p2"]
    report = unescape((out / "report.html").read_text())
    assert "The report failed" not in report and "mlp_mnist" in report and "cnn_cifar10" in report
    # the index: every record listed; the crafted page replaced by one naming the limit, and said so beside it
    why = too_slow(2.0)
    assert why == "not rendered: too slow (over 2 s)"
    listing = (out / "index.html").read_text()
    assert "Executed workload notebooks (3)" in listing and listing.count("no notebook recorded") == 2, listing
    assert f"crafted.ipynb</a> <i>({why})</i>" in listing, listing
    (page,) = (out / index.PAGES).rglob("*.html")
    text = page.read_text()
    assert page.stem == "crafted" and why in text and "Content-Security-Policy" in text and "[[[[" not in text
    assert json.loads((out / index.PAGES / index.SOURCES).read_text()) == {}  # it is tried again next time


def test_the_page_limit_comes_from_the_environment_and_a_bad_value_is_refused(tmp_path, monkeypatch, capsys):
    from helpers.report.publish import index

    monkeypatch.delenv(index.PAGE_LIMIT_ENV, raising=False)
    assert index.page_limit_s() == index.PAGE_LIMIT_S == 60.0
    assert index.page_limit_s({index.PAGE_LIMIT_ENV: "2.5"}) == 2.5
    assert index.page_limit_s({index.PAGE_LIMIT_ENV: " "}) == 60.0  # set but empty: the default
    for bad, why in [("soon", "not a number"), ("0", "not a positive, finite number"),
                     ("-3", "not a positive, finite number"), ("inf", "not a positive, finite number"),
                     ("nan", "not a positive, finite number")]:
        with pytest.raises(ValueError, match=f"CGB_PAGE_LIMIT_S='{bad}' is {why} of seconds"):
            index.page_limit_s({index.PAGE_LIMIT_ENV: bad})
    monkeypatch.setenv(index.PAGE_LIMIT_ENV, "0")
    with pytest.raises(ValueError, match="CGB_PAGE_LIMIT_S='0'"):  # before any page is rendered or written
        index.render_index([tmp_path], tmp_path / "index.html")
    assert not (tmp_path / "index.html").exists() and not (tmp_path / index.PAGES).exists()
    assert index.render_index([tmp_path], tmp_path / "index.html", limit_s=5.0).is_file()  # given: not read
    # the runner refuses a bad value at its start, before anything runs (not after the grid, at the report)
    from helpers.runner import cli

    monkeypatch.setenv("CGB_OUTPUTS", str(tmp_path / "out"))
    monkeypatch.setenv(index.PAGE_LIMIT_ENV, "soon")
    assert cli.main(["--report-only", "--inputs", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "error: CGB_PAGE_LIMIT_S='soon' is not a number of seconds" in err and "nothing was run." in err
    assert not (tmp_path / "out").exists()


# ---- smaller: an outside SIGKILL is not called "out of memory"


def test_a_sigkill_is_called_out_of_memory_only_when_the_oom_killer_counted_it(tmp_path):
    import signal as sig

    from helpers.runner.kernel_watch import KernelWatch, killed_by_oom, oom_kills

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    proc.send_signal(sig.SIGKILL)  # a kill -9 from outside (a scheduler, a user)
    proc.wait(timeout=10)
    watch = KernelWatch(engine=None)
    watch.process, watch.peak_kb = proc, 3 * 2**20
    watch.oom_before = {"vmstat": 4, "cgroup:memory": 1}
    outside = watch.death_reason({"vmstat": 4, "cgroup:memory": 1})
    assert "killed (SIGKILL) from outside, not for memory" in outside and "peak RSS seen 3.00 GB" in outside
    assert "likely out of memory" not in outside and "out-of-memory killer (" not in outside
    oom = watch.death_reason({"vmstat": 4, "cgroup:memory": 2})
    assert "killed (SIGKILL) by the out-of-memory killer (peak RSS seen 3.00 GB" in oom and "batch_size" in oom
    watch.oom_before = {}
    unknown = watch.death_reason({})
    assert "by the out-of-memory killer or from outside, which cannot be told here" in unknown
    assert killed_by_oom({"vmstat": 1}, {"cgroup:v2": 9}) is None
    # the counters, as Linux writes them: /proc/vmstat, cgroup v2's memory.events, cgroup v1's memory.oom_control
    proc_fs, cg = tmp_path / "proc", tmp_path / "cgroup"
    (proc_fs / "self").mkdir(parents=True)
    (proc_fs / "vmstat").write_text("nr_free_pages 12\noom_kill 7\n")
    (proc_fs / "self" / "cgroup").write_text("4:memory:/job/a\n0::/job/b\n")
    (cg / "memory" / "job" / "a").mkdir(parents=True)
    (cg / "memory" / "job" / "a" / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    (cg / "job" / "b").mkdir(parents=True)
    (cg / "job" / "b" / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert oom_kills(proc_fs, cg) == {"vmstat": 7, "cgroup:memory": 2, "cgroup:v2": 1}
    assert oom_kills(tmp_path / "none", cg) == {}


# ---- smaller: a failed report names a previous report only when there is one, and never loses it


def test_a_failed_report_names_a_previous_report_only_when_there_is_one(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from helpers.exits import Exit
    from helpers.report.publish.failed import previous_report
    from helpers.runner import summary

    def fail(*a, **k):
        raise ValueError("bad value in records/x.json")

    monkeypatch.setattr(summary, "render_report", fail)
    args = SimpleNamespace(out=None, inputs=None, prices=None, price_set=None, no_reference=True)
    out = tmp_path / "out"
    out.mkdir()

    def failed_once():
        lines = []
        assert summary.report_after_run(args, out, tmp_path / "run", "k", None, lines.append) == Exit.FAILED
        return " ".join(lines), (out / "report.html").read_text()

    log, page = failed_once()  # no report before: none named, none linked
    assert "The report failed" in page and "bad value" in page and "no earlier report" in page
    assert "report.previous.html" not in log + page and "no earlier report to fall back on" in log
    assert not (out / "report.previous.html").exists() and previous_report(out / "report.html") is None
    log, page = failed_once()  # a second failure: its own page is not taken for a previous report
    assert not (out / "report.previous.html").exists() and "report.previous.html" not in log + page
    (out / "report.html").write_text("<html>the good figures</html>")  # a report that rendered
    log, page = failed_once()
    assert f"the last good one: {out / 'report.previous.html'}" in log and 'href="report.previous.html"' in page
    log, page = failed_once()  # failing again keeps the last good report as the previous one
    assert "the good figures" in (out / "report.previous.html").read_text()
    assert 'href="report.previous.html"' in page and "report.previous.html" in log


# ---- smaller: a grid given twice (or two grids sharing a point) runs each point once


def test_a_grid_given_twice_runs_each_point_once(tmp_path):
    from helpers import grid

    g = tmp_path / "g.yaml"
    g.write_text("points:\n  - {workload: mlp_mnist, backend: jax, device: cpu, batch_size: [64, 128]}\n")
    copy = tmp_path / "copy.yaml"  # the same points under another name, one of them with more repeats
    copy.write_text("repeats: 3\npoints:\n  - {workload: mlp_mnist, backend: jax, device: cpu, batch_size: 64}\n"
                    "  - {workload: mlp_mnist, backend: torch, device: cpu}\n")
    once = grid.expand_all([g])
    assert grid.expand_all([g, g, tmp_path / "." / "g.yaml"]) == once
    assert [b.runs for b in grid.sizes([g, g])] == [b.runs for b in grid.sizes([g])] == [2]
    both = grid.expand_all([g, copy])
    keys = [(p["backend"], p["batch_size"]) for p in both]
    assert len(keys) == len(set(keys)) == 3
    assert {(p["backend"], p["batch_size"]): p["repeats"] for p in both}[("jax", 64)] == 3
    runs = grid.runs(both)
    assert len(runs) == len({(p["backend"], p["batch_size"], p["_repeat"]) for p in runs}) == 3 + 2 + 2


# ---- smaller: a .keras whose weights inflate is refused before Keras inflates them


def test_a_keras_file_whose_weights_inflate_is_refused_before_keras_reads_it(tmp_path):
    import zipfile

    from helpers.params import ParamError
    from helpers.workloads import custom_files

    cfg = {"class_name": "Sequential", "module": "keras", "config": {"name": "s", "layers": []}}

    def keras_file(path, weights: bytes, method=zipfile.ZIP_DEFLATED):
        with zipfile.ZipFile(path, "w", method) as zf:
            zf.writestr("config.json", json.dumps(cfg))
            zf.writestr("metadata.json", "{}")
            zf.writestr("model.weights.h5", weights)
        return path

    t0 = time.perf_counter()
    bomb = keras_file(tmp_path / "bomb.keras", b"\0" * (20 * 2**20))  # 20 MB of weights in ~20 kB
    assert bomb.stat().st_size < 2**20
    with pytest.raises(ParamError) as err:
        custom_files.model_file(str(bomb))
    msg = str(err.value)
    assert "'model.weights.h5' that inflates from 0.0 MB to 20 MB" in msg and "zip bomb" in msg, msg
    # weights stored as Keras stores them (uncompressed), or small: read as before
    stored = keras_file(tmp_path / "stored.keras", b"\0" * (17 * 2**20), zipfile.ZIP_STORED)
    assert custom_files.model_file(str(stored))[1]["has_weights"]
    small = keras_file(tmp_path / "small.keras", b"\0" * 2**20)
    assert custom_files.model_file(str(small))[1]["has_weights"]
    assert time.perf_counter() - t0 < 5.0


# ---- smaller: a conflicting copy of a record keeps both, apart and named


def test_a_conflicting_copy_keeps_both_copies_apart_and_named(tmp_path):
    from support.hostile import write_conflict

    good = _good(tmp_path / "good")
    real, forged = write_conflict(good, tmp_path / "theirs", _rec(5, workload="mlp_mnist"))
    write_atomic(tmp_path / "theirs" / "same.json", _rec(0))  # a plain copy of a good record: still a duplicate
    ctx, html, csv, took = _report([good, tmp_path / "theirs"], tmp_path, only=("overview", "provenance"))
    assert not [m for m, h in html.items() if "failed to build" in h] and took < BOUND_S
    rows = ctx.df[ctx.df["workload"] == "mlp_mnist"]
    assert sorted(rows["samples_per_s"]) == sorted([real["samples_per_s"], forged["samples_per_s"]])  # both kept
    assert sorted(k.split(", ")[0] for k in rows["knobs"]) == ["copy=good/conflict.json", "copy=theirs/conflict.json"]
    summ = ctx.summary[ctx.summary["workload"] == "mlp_mnist"]
    assert len(summ) == 2  # two configurations, never one pooled from both copies
    assert sorted(ctx.df["point_id"]) == sorted(GOOD + [real["point_id"]] * 2)
    assert not [p for p, _ in ctx.skipped if "conflict" in p]  # neither is skipped
    assert [Path(p).name for p, _ in ctx.duplicates] == ["same.json"]
    note = unescape(html["overview"])
    assert "2 record file(s) are copies of one run that say different things" in note
    assert "kept apart as copy=good/conflict.json" in note and "kept apart as copy=theirs/conflict.json" in note
    assert "median_epoch_s" in note
    assert "copy=theirs/conflict.json" in csv["configurations.csv"]


def test_a_dead_renderer_is_called_out_of_memory_only_when_the_oom_killer_counted_it(tmp_path, monkeypatch):
    from support.slow_page import die_on_marker

    from helpers.measure import oom
    from helpers.report.publish import workers

    jobs = [(str(tmp_path / "die.ipynb"), str(tmp_path / "die.html"))]
    counts = iter([{"vmstat": 1}, {"vmstat": 1}])
    monkeypatch.setattr(oom, "oom_kills", lambda: next(counts))
    t0 = time.perf_counter()
    assert workers.run_jobs(die_on_marker, jobs, 1) == {jobs[0]: workers.DIED_NOT_OOM}  # a kill -9: not memory
    assert time.perf_counter() - t0 < 10
    assert workers.died_reason(True) == workers.DIED_OOM == "the renderer died (killed by the out-of-memory killer)"
    assert workers.died_reason(None) == workers.DIED  # no counter: cannot be told
    assert "likely out of memory" not in workers.DIED + workers.DIED_NOT_OOM
