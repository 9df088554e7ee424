"""A record cannot pass for the bundled reference (issue 74, round 5, item 1), and names reach the terminal as the page
shows them (item 8).

One crafted record per disguise of the reference's machine name ("reference H100 <date>: NVIDIA H100 80GB HBM3"):
plain, behind a soft hyphen, U+034F, a tag character, U+FE0F or a Hangul filler, with a Cyrillic "е", in fullwidth
letters. Each carries a date no genuine reference run has (``FORGED``), so every place that shows it can be found:
the opening sentence, every section's tables, the CSVs and the verdict rows must show it in quotes, as a record's
name, never as the reference. The bundled reference is told by its files: it is still named as the reference.
"""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
import unicodedata
from html import unescape
from pathlib import Path
from types import SimpleNamespace

from support.records import _rec
from test_reference_fallback import _cpu_rec

from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic

FORGED = "2031-01-0"  # the crafted names' dates (2031-01-01 ...): no genuine reference run has one
NAME = "reference H100 2031-01-0{}: NVIDIA H100 80GB HBM3"
DISGUISES = {"plain": "", "soft hyphen": "\u00ad", "U+034F": "\u034f", "tag": "\U000e0020", "U+FE0F": "\ufe0f",
             "Hangul filler": "\u3164"}


def _crafted() -> dict[str, str]:
    """Disguise -> the GPU name a crafted record carries (each with its own date, 2031-01-01 to 2031-01-08)."""
    names = {k: p + NAME.format(i) for i, (k, p) in enumerate(DISGUISES.items(), 1)}
    names["Cyrillic е"] = NAME.format(7).replace("reference", "r\u0435ference")
    names["fullwidth"] = NAME.format(8).replace("reference", "ｒｅｆｅｒｅｎｃｅ")
    return names


# the core of the reference's machine name, as NFKC folds every disguise (an escape "\xad" before it, or not)
CORE = re.compile(r"ference H100(?: (\d{4}-\d\d-\d\d))?")


def _unquoted(text: str, genuine: set = frozenset()) -> list[str]:
    """Each place ``text`` shows the reference's machine name outside the quotes that make it a record's name, but
    the genuine reference's (its dates in ``genuine``: ``None`` stands for the name said without a date)."""
    text = unicodedata.normalize("NFKC", unescape(text))
    bad = []
    for m in CORE.finditer(text):
        opened = text.rfind("“", 0, m.start())
        quoted = opened >= 0 and m.start() - opened <= 40 and text.rfind("”", 0, m.start()) < opened
        if not quoted and m.group(1) not in genuine:
            bad.append(text[max(0, m.start() - 40):m.end() + 30])
    return bad


def _crafted_records(folder: Path, device: str, sps: float) -> dict[str, str]:
    """One ok record per disguise on a machine of its own (a GPU box named so), ``sps`` samples/s; point id ->
    disguise."""
    ids = {}
    for i, (kind, name) in enumerate(_crafted().items()):
        fp = {"host": f"box{i}", "cpu_model": "Some CPU", "cpu_logical": 16, "gpu_names": [name]}
        over = {"device": device, "device_used": device, "fingerprint": fp, "point_id": f"crafted-{i}"}
        rec = (_rec(i, samples_per_s=sps, median_epoch_s=1000 / sps, epoch_s=[1000 / sps] * 3, **over)
               if device == "gpu" else _cpu_rec(i, sps=sps, **over))
        write_atomic(folder / f"crafted{i}.json", rec)
        ids[f"crafted-{i}"] = kind
    return ids


def _files(root: Path) -> dict:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_crafted_gpu_name_is_a_quoted_records_name_in_every_part_of_the_report(tmp_path, charts_not_drawn):
    """GPU records at 50× the CPU's figure whose GPU names read like the reference's, beside good CPU records: the
    opening sentence, every section, the CSVs and the verdict rows show each name in quotes; no bundled reference is
    claimed (these records have their own GPU runs)."""
    from helpers import report
    from helpers.report.load.reference import is_reference
    from helpers.report.publish import sections
    from helpers.report.publish.csvs import write_csvs
    from helpers.report.words import headline

    folder = tmp_path / "in"
    for i in range(2):
        write_atomic(folder / f"good{i}.json", _rec(i))
    crafted = _crafted_records(folder, "gpu", 50000.0)
    ctx = report.build_context([folder])
    assert sorted(ctx.df["point_id"]) == sorted(["p0", "p1", *crafted])  # every record reported
    opening = headline.compared_text(headline.compared(ctx.df))
    assert opening.startswith("Compared: the 4-CPU Some against the “") and "bundled reference" not in opening
    assert not _unquoted(opening) and opening.count("(a record's name)") == 3  # three named, "and 5 more GPUs"
    html = {s.name: s._repr_html_() for s in sections.build_all(ctx)}
    assert not [n for n, h in html.items() if "failed to build" in h]
    out = {p.name: p.read_text(encoding="utf-8") for p in write_csvs(ctx, tmp_path / "csv")}
    verdict = list(csv.DictReader(io.StringIO(out["verdict.csv"])))
    assert len(verdict) == 1 and "(a record's name)" in verdict[0]["gpu_machine"]
    assert verdict[0]["cpu_machine"] == "Some CPU · 4 CPUs" and "on the “" in verdict[0]["sides"]
    for where, text in [*html.items(), *out.items()]:
        assert not _unquoted(text), (where, _unquoted(text))
        assert "H100 ref" not in text and "your CPU →" not in text, where  # the reference's own short names
    page = unescape(html["verdict"])
    assert opening in page  # the sentence checked is the one the page opens with
    config = out["configurations.csv"]
    for i in range(1, 9):  # each disguise is shown (so each was checked), in quotes
        assert f"{FORGED}{i}: NVIDIA H100 80GB HBM3” (a record's name)" in config, i
    assert headline.compared(ctx.df)["reference"] is False
    assert not any(is_reference(m) for m in ctx.costed["machine"])


def test_a_render_beside_the_bundled_reference_quotes_every_crafted_name_and_names_the_reference(tmp_path):
    """Through the runner (--report-only, the bundled reference on): good CPU records of the reference's
    configurations, and CPU records of machines whose GPU names read like the reference's (one per disguise). The
    render exits 0 and writes nothing outside its output folder; every record is reported; the genuine reference is
    named as the reference (opening sentence, verdict rows), each crafted name only in quotes."""
    good, forged, out = tmp_path / "good", tmp_path / "forged", tmp_path / "out"
    write_atomic(good / "c0.json", _cpu_rec(0))
    write_atomic(good / "c1.json", _cpu_rec(1, workload="mlp_mnist", batch=128, sps=30000.0))
    crafted = _crafted_records(forged, "cpu", 200000.0)  # 50× the good CPU's figure
    before = {**_files(tmp_path), **_files(PROJECT_ROOT / "reference")}
    res = subprocess.run([sys.executable, "-m", "helpers.runner", "--report-only", "--inputs", str(good),
                          str(forged)], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "CGB_OUTPUTS": str(out)})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    said = res.stdout + res.stderr
    assert not [c for c in said if unicodedata.category(c) == "Cc" and c != "\n"]
    after = {**_files(tmp_path), **_files(PROJECT_ROOT / "reference")}
    assert {k: v for k, v in after.items() if not k.startswith(str(out) + os.sep)} == before  # nothing else written
    page = (out / "report.html").read_text(encoding="utf-8")
    texts = {p.name: p.read_text(encoding="utf-8") for p in out.glob("*.csv")}
    assert {"verdict.csv", "configurations.csv", "results.csv"} <= set(texts)
    results = list(csv.DictReader(io.StringIO(texts["results.csv"])))
    own = [r["point_id"] for r in results if not r["record"].startswith("reference/")]  # the rest: the reference's
    assert sorted(own) == sorted(["c0", "c1", *crafted]) and len(results) > len(own)  # every record reported
    verdict = list(csv.DictReader(io.StringIO(texts["verdict.csv"])))
    genuine = {m.split(":")[0].rsplit(" ", 1)[1] for m in (r["gpu_machine"] for r in verdict)}
    assert verdict and all(r["gpu_machine"].startswith("reference H100 20") for r in verdict)  # the bundled one
    assert not [d for d in genuine if d.startswith(FORGED)] and all("→ JAX on the reference H100" in r["sides"]
                                                                   for r in verdict if r["gpu_backend"] == "jax")
    opening = re.search(r"Compared: [^<]*", unescape(page)).group()
    assert "of the bundled reference run (measured" in opening and FORGED not in opening
    assert f"your CPU → reference H100 {min(genuine)}" in unescape(page)
    for where, text in [("report.html", page), *texts.items()]:
        assert not _unquoted(text, genuine | {None}), (where, _unquoted(text, genuine | {None}))
    for i in range(1, 9):  # each disguise is shown (so each was checked), in quotes
        assert f"{FORGED}{i}: NVIDIA H100 80GB HBM3” (a record's name)" in texts["configurations.csv"], i
        assert f"{FORGED}{i}: NVIDIA H100 80GB HBM3” (a record's name)" in unescape(page), i


def test_the_bundled_reference_is_told_by_its_files_not_by_a_name():
    """``is_reference`` holds for the names ``reference_rows`` gave rows read under reference/, for none a record
    could carry, however close; every disguise folds to the word and is quoted, a real GPU's name is not."""
    from helpers.report.load import reference
    from helpers.report.load.table import tidy
    from helpers.report.load.visible import hardware_name, skeleton

    df = tidy([_cpu_rec(0, _path=str(Path("/tmp") / "r.json"))])
    ref, labels = reference.reference_rows(df)
    assert labels and all(reference.is_reference(m) for m in labels)
    assert all(reference.bundled(p) for p in ref["path"]) and not reference.bundled(Path("/tmp") / "r.json")
    for kind, name in _crafted().items():
        assert "reference" in skeleton(name), kind
        shown = hardware_name(name)  # as recorded (invisible characters written out), in quotes
        assert shown.startswith("“") and shown.endswith("” (a record's name)") and not reference.is_reference(shown)
        assert not reference.is_reference(name) and not reference.is_reference(labels[0].replace("r", "r\u00ad", 1))
    assert hardware_name("NVIDIA H100 80GB HBM3") == "NVIDIA H100 80GB HBM3"
    assert hardware_name(hardware_name(NAME.format(1))) == hardware_name(NAME.format(1))  # named once


# ---- item 8: names on the terminal as the page shows them

ESC = "w\x1b[2J\x1b]0;t\x07\x9b31m\r"  # clear the screen, retitle the terminal, a C1 CSI, a carriage return


def _clean(lines: list[str]) -> list[str]:
    """The lines that carry a control character other than a line feed."""
    return [x for x in lines if [c for c in x if unicodedata.category(c) == "Cc" and c != "\n"]]


def test_terminal_lines_carry_no_control_character(tmp_path, monkeypatch):
    """A point's outcome (a reason, a data source from its record), the kernel's epoch lines and a title naming a
    workload, and the report's failure as the runner prints them: escape sequences written out, never sent."""
    from helpers.runner import summary
    from helpers.runner.progress import LiveEpochs, outcome

    lines = [outcome({"status": "failed", "reason": f"boom {ESC}\nsecond line"}),
             outcome({"status": "ok", "samples_per_s": 10.0, "first_epoch_s": 1.0, "median_epoch_s": 0.5,
                      "data_source": ESC})]
    assert "\\x1b[2J" in lines[0] and "second line" not in lines[0] and "\\x9b31m" in lines[1]
    sink = LiveEpochs(lines.append, after_s=0.0, title=f"[1/1] {ESC} running for over 60 s:")
    sink.write(f"epoch 1: loss {ESC} 0.5\nnot an epoch line\x1b[2J\nepoch 2: loss 0.4\n")
    sink.close()
    assert len(lines) == 5 and lines[2].startswith("[1/1] w\\x1b[2J") and lines[4] == "  epoch 2: loss 0.4"

    def broken(*a, **k):
        raise ValueError(f"a record named {ESC}")

    monkeypatch.setattr(summary, "render_report", broken)
    args = SimpleNamespace(out=None, inputs=[], prices=None, price_set=None, no_reference=True)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    assert summary.report_after_run(args, tmp_path / "o", run_dir, "k", None, lines.append) is not None
    assert any(x.startswith("report failed: ValueError: a record named w\\x1b[2J") for x in lines), lines
    assert not _clean(lines), _clean(lines)
