"""``--compare OLD NEW`` against untrusted records (issue 74, round 5): each case runs beside good records and checks
the exit status, the message, that nothing is written outside the output folder, and that the good records are all
still reported.

- ``--fail-if-slower`` lets no regression through: a configuration whose NEW runs all failed (``NEW_FAILED``), a side
  with no readable record (``NO_RECORDS``), conflicting copies of a run on a side (``CONFLICT``), a slow-down on one
  run a side (``SLOWER_UNTESTED``, and a warning naming it without the gate); ``CANNOT_WRITE`` is not ``SLOWER``.
- One record never takes down the comparison: figures 1e-3 and 1e9 apart (Welch in logs), a workload name that reads
  as mathtext (drawn as written), a configuration or a chart that fails (dropped with a note).
- The chart draws at most ``CHART_ROWS`` changes and says how many more are in changes.csv.
- Nothing a record names reaches the terminal as a control character.
"""

from __future__ import annotations

import csv
import math
import re

import pytest
from support.records import _rec

from helpers.exits import Exit
from helpers.record.writer import write_atomic
from helpers.report.publish import compare_page as P
from helpers.report.words import compare as C
from helpers.runner.cli import main

GOOD = {("cnn_cifar10", "jax"): [1000, 1010, 990], ("cnn_cifar10", "torch"): [500, 505, 495],
        ("mlp_mnist", "jax"): [3000, 3030, 2970]}  # unchanged between the sides: each reads *no difference shown*
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # every control character but the newline


def _runs(tag, sps_list, workload="cnn_cifar10", backend="jax", host="h1", batch=100, **kw):
    return [_rec(k, workload=workload, backend=backend, batch_size=batch, samples_per_s=sps,
                 median_epoch_s=1000 / sps, epoch_s=[1000 / sps] * 3, point_id=f"{tag}-{k}",
                 started_at=f"2026-01-01T00:00:{k:02d}", params={"threads": 0, "precision": "float32", "repeat": k},
                 fingerprint={"host": host, "cpu_model": f"CPU of {host}", "cpu_logical": 4, "gpu_names": [],
                              "boot_id": f"b{host}", "versions": {"keras": "3.15.1"}}, **kw)
            for k, sps in enumerate(sps_list)]


def _failed(tag, n, workload="cnn_cifar10", backend="jax", host="h2", reason="out of memory"):
    return [_rec(k, workload=workload, backend=backend, status="failed", reason=reason, median_epoch_s=None,
                 samples_per_s=None, epoch_s=[], first_epoch_s=None, step_s=None, point_id=f"{tag}-{k}",
                 started_at=f"2026-01-01T00:01:{k:02d}", params={"threads": 0, "precision": "float32", "repeat": k},
                 fingerprint={"host": host, "cpu_model": f"CPU of {host}", "cpu_logical": 4, "gpu_names": [],
                              "boot_id": f"b{host}", "versions": {"keras": "3.15.1"}})
            for k in range(n)]


def _good(side: str) -> list[dict]:
    host = "h1" if side == "old" else "h2"
    return [r for (w, b), sps in GOOD.items() for r in _runs(f"{side}-good-{w}-{b}", sps, w, b, host)]


def _folder(path, recs):
    path.mkdir(parents=True, exist_ok=True)
    for r in recs:
        write_atomic(path / f"{r['point_id']}.json", r)
    return path


def _tree(root):
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def place(tmp_path, monkeypatch):
    """A working folder of the test's own (the default outputs folder inside it, the working directory there):
    ``place.check(out)`` asserts that nothing but ``out`` changed under it, and the default outputs were not made."""
    monkeypatch.setenv("CGB_OUTPUTS", str(tmp_path / "default-outputs"))
    monkeypatch.chdir(tmp_path)

    class Place:
        root = tmp_path
        before: dict = {}

        def snapshot(self):
            self.before = _tree(tmp_path)

        def check(self, out):
            after = _tree(tmp_path)
            changed = {p for p in after if self.before.get(p) != after[p]} | (set(self.before) - set(after))
            assert all(out in p.parents for p in changed), sorted(map(str, changed))
            assert not (tmp_path / "default-outputs").exists()

    return Place()


def _rows(out) -> dict:
    return {(r["workload"], r["backend"]): r for r in csv.DictReader((out / C.CHANGES).open(encoding="utf-8"))}


def _good_reported(out) -> None:
    """Every good configuration is still in changes.csv and on the page, with its verdict."""
    rows, page = _rows(out), (out / "compare.html").read_text(encoding="utf-8")
    for w, b in GOOD:
        assert rows[w, b]["verdict"] == C.NONE and rows[w, b]["old_runs"] == rows[w, b]["new_runs"] == "3", rows
        assert f"{w} · cpu · {b}" in page


def _run(args, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["--compare", *map(str, args)])
    said = capsys.readouterr()
    return code, said.out, said.err


def test_the_statuses_are_distinct_and_each_documented():
    """No alias: SLOWER is not CANNOT_WRITE; every compare status has its own number and line."""
    values = [int(e) for e in Exit]
    assert len(values) == len(set(values)) == len(Exit.__members__)
    assert Exit.CANNOT_WRITE == 4 and Exit.SLOWER not in (4, Exit.CANNOT_WRITE)
    for e in (Exit.SLOWER, Exit.NEW_FAILED, Exit.NO_RECORDS, Exit.CONFLICT, Exit.SLOWER_UNTESTED):
        assert "compare --fail-if-slower" in e.description and int(e) not in (0, 1, 2, 3, 4, 5, 130)


def test_a_configuration_whose_new_runs_all_failed_fails_the_gate(place, capsys):
    old = _folder(place.root / "old", _good("old") + _runs("old-vgg", [50, 51, 49], "vgg_cifar10", "jax"))
    new = _folder(place.root / "new", _good("new") + _failed("new-vgg", 3, "vgg_cifar10", "jax"))
    out = place.root / "out"
    place.snapshot()
    code, said, err = _run([old, new, "--out", out, "--fail-if-slower", "10%"], capsys)
    assert code == Exit.NEW_FAILED == 7, (said, err)
    assert "1 configuration(s) measured on OLD failed every run on NEW: vgg_cifar10 jax cpu b100" in err
    assert "out of memory" in err and f"exit {int(Exit.NEW_FAILED)}" in err
    assert "WARNING: every NEW run failed: vgg_cifar10 jax cpu b100" in said and "(3 run(s): out of memory)" in said
    assert "0 on OLD only" in said  # not passed off as measured on OLD only
    rows = _rows(out)
    assert rows["vgg_cifar10", "jax"]["verdict"] == C.FAILED_NEW and rows["vgg_cifar10", "jax"]["new_runs"] == "0"
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert "Every NEW run failed (1)" in page and "On the OLD side only" not in page
    _good_reported(out)
    place.check(out)
    # without the gate: the same warning, exit 0
    code, said, _ = _run([old, new, "--out", out], capsys)
    assert code == Exit.OK and "WARNING: every NEW run failed: vgg_cifar10" in said


@pytest.mark.parametrize("kind", ["junk files", "empty folder", "only failed runs"])
def test_a_side_with_no_readable_record_fails_the_gate(place, capsys, kind):
    old = _folder(place.root / "old", _good("old"))
    new = place.root / "new"
    new.mkdir()
    if kind == "junk files":
        (new / "a.json").write_text("{not json")
        (new / "b.json").write_text('{"hello": "world"}')
    elif kind == "only failed runs":
        _folder(new, _failed("new-f", 2, "cnn_cifar10", "jax"))
    out = place.root / "out"
    place.snapshot()
    code, said, err = _run([old, new, "--out", out, "--fail-if-slower", "10%"], capsys)
    assert code == Exit.NO_RECORDS == 8, (said, err)
    assert "compared 0 configuration(s)" in said
    why = "no ok run among its 2 record(s)" if kind == "only failed runs" else "no readable record"
    assert f"NEW holds {why}" in err and "nothing to compare" in err
    if kind == "junk files":
        assert "2 file(s) left out" in err
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert "NEW holds no ok run" in page
    for w, b in GOOD:  # the good records of OLD are all still reported, as measured on OLD only (or failed on NEW)
        assert f"{w} · cpu · {b}" in page
    place.check(out)


def test_sides_with_no_configuration_in_common_fail_the_gate(place, capsys):
    old = _folder(place.root / "old", _good("old"))
    new = _folder(place.root / "new", _runs("new-lstm", [10, 11, 12], "lstm_textgen", "jax", "h2"))
    out = place.root / "out"
    place.snapshot()
    code, said, err = _run([old, new, "--out", out, "--fail-if-slower", "10%"], capsys)
    assert code == Exit.NO_RECORDS and "no configuration has ok runs on both sides: nothing compared" in err
    assert "3 on OLD only, 1 on NEW only" in said
    place.check(out)


def test_conflicting_copies_of_new_runs_fail_the_gate(place, capsys):
    """Copies of NEW's runs under a second folder, one figure edited: the configuration stays one (never moved into
    the one-side lists), reads *conflicting copies*, and the gate fails with CONFLICT naming the copies."""
    old = _folder(place.root / "old", _good("old") + _runs("old-vgg", [50, 51, 49], "vgg_cifar10", "jax"))
    vgg = _runs("new-vgg", [50, 51, 49], "vgg_cifar10", "jax", "h2")
    new = _folder(place.root / "new", _good("new") + vgg)
    edited = [dict(r) for r in vgg]
    edited[0].update(samples_per_s=500.0, median_epoch_s=2.0)  # the copy says ten times faster
    copies = _folder(place.root / "new-copy", edited)
    out = place.root / "out"
    place.snapshot()
    code, said, err = _run([old, f"{new}:{copies}", "--out", out, "--fail-if-slower", "10%"], capsys)
    assert code == Exit.CONFLICT == 9, (said, err)
    assert "NEW holds 2 conflicting copies of runs" in err and "conflicting copies of one run" in err
    assert "new-copy" in err and f"exit {int(Exit.CONFLICT)}" in err
    assert "0 on OLD only, 0 on NEW only" in said and f"WARNING: {C.CONFLICTED}: vgg_cifar10 jax cpu b100" in said
    row = _rows(out)["vgg_cifar10", "jax"]
    assert row["verdict"] == C.CONFLICTED and "copy" not in row["knobs"] and row["p_value"] == ""
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert "copies of one run saying different things" in page and "side only" not in page
    _good_reported(out)
    place.check(out)
    # the same copies, unedited: a copied folder, read once, no conflict
    same = _folder(place.root / "new-same", vgg)
    code, said, err = _run([old, f"{new}:{same}", "--out", out, "--fail-if-slower", "10%"], capsys)
    assert code == Exit.OK and _rows(out)["vgg_cifar10", "jax"]["verdict"] == C.NONE, (said, err)


def test_one_run_a_side_ten_times_slower_is_said_and_fails_the_gate_on_its_own_status(place, capsys):
    old = _folder(place.root / "old", _good("old") + _runs("old-vgg", [500], "vgg_cifar10", "jax"))
    new = _folder(place.root / "new", _good("new") + _runs("new-vgg", [50], "vgg_cifar10", "jax", "h2"))
    out = place.root / "out"
    place.snapshot()
    code, said, err = _run([old, new, "--out", out, "--fail-if-slower", "10%"], capsys)
    assert code == Exit.SLOWER_UNTESTED == 10, (said, err)
    assert "1 configuration(s) slower by more than 10% on one run a side, not enough runs to test" in err
    assert "to test: vgg_cifar10 jax cpu b100" in err and "0.100x (1 and 1 runs)" in err
    assert "WARNING: not enough runs: vgg_cifar10 jax cpu b100" in said and ": 0.100x (1 and 1 runs): untested" in said
    assert _rows(out)["vgg_cifar10", "jax"]["verdict"] == C.FEW
    assert "read more than 10% slower on a single run" in (out / "compare.html").read_text(encoding="utf-8")
    _good_reported(out)
    place.check(out)
    # without the gate, the warning is still printed (exit 0); a threshold it does not pass: exit 0 under the gate
    code, said, _ = _run([old, new, "--out", out], capsys)
    assert code == Exit.OK and "WARNING: not enough runs: vgg_cifar10 jax cpu b100" in said
    assert _run([old, new, "--out", out, "--fail-if-slower", "95%"], capsys)[0] == Exit.OK


def test_cannot_write_has_its_own_status_and_still_prints_the_verdicts(place, capsys):
    old = _folder(place.root / "old", _good("old") + _runs("old-vgg", [100, 101, 99], "vgg_cifar10", "jax"))
    new = _folder(place.root / "new", _good("new") + _runs("new-vgg", [50, 50.5, 49.5], "vgg_cifar10", "jax", "h2"))
    place.snapshot()
    code, said, err = _run([old, new, "--out", "/dev/null", "--fail-if-slower", "10%"], capsys)
    assert code == Exit.CANNOT_WRITE == 4 and code != Exit.SLOWER, (said, err)
    assert "cannot write to /dev/null" in err and "significantly slower by more than 10%" in err
    assert "slower: vgg_cifar10 jax cpu b100" in said and "comparison:" not in said
    place.check(place.root / "nothing")  # nothing written at all
    assert _run([old, old, "--out", "/dev/null"], capsys)[0] == Exit.CANNOT_WRITE
    # a malformed threshold is still refused, before anything is read or written
    for bad in ("150%", "0", "-5%", "abc", "nan", "inf", "1"):
        code, _, err = _run([old, new, "--out", place.root / "o", f"--fail-if-slower={bad}"], capsys)
        assert code == Exit.BAD_GRID and "--fail-if-slower" in err, bad
    assert not (place.root / "o").exists()


def test_figures_far_apart_do_not_overflow_welch():
    """Runs at 1e-3 and 1e9 samples/s: computed in logs, the ratio and its interval finite (clamped)."""
    t = C.welch([1e-3, 1e9], [1e-3, 1e9])
    assert t["verdict"] == C.NONE and t["ratio"] == 1.0 and t["log_low"] < -1000 < 1000 < t["log_high"]
    assert 0 < t["low"] <= 1.001e-300 and 0.999e300 <= t["high"] < math.inf
    t = C.welch([1e-3, 1.01e-3, 0.99e-3], [1e300, 1.01e300, 0.99e300])
    assert t["verdict"] == C.FASTER and math.isfinite(t["ratio"]) and t["log_ratio"] > 690
    few = C.welch([1e-300], [1e300])
    assert few["verdict"] == C.FEW and math.isfinite(few["ratio"]) and few["log_ratio"] > 1300
    assert C.runs_needed([1e-3, 1e9], [1e-3, 1e9]) is None


def test_figures_far_apart_cost_nothing_but_their_own_row(place, capsys):
    old = _folder(place.root / "old", _good("old") + _runs("old-x", [1e-3, 1e9], "vgg_cifar10", "jax")
                  + _runs("old-y", [1e-3, 1.01e-3, 0.99e-3], "lstm_textgen", "jax"))
    new = _folder(place.root / "new", _good("new") + _runs("new-x", [1e-3, 1e9], "vgg_cifar10", "jax", "h2")
                  + _runs("new-y", [1e9, 1.01e9, 0.99e9], "lstm_textgen", "jax", "h2"))
    out = place.root / "out"
    place.snapshot()
    code, said, err = _run([old, new, "--out", out, "--fail-if-slower", "10%"], capsys)
    assert code == Exit.OK, (said, err)
    rows = _rows(out)
    assert rows["vgg_cifar10", "jax"]["verdict"] == C.NONE and math.isfinite(float(rows["vgg_cifar10", "jax"]
                                                                                    ["ratio_high"]))
    assert rows["lstm_textgen", "jax"]["verdict"] == C.FASTER and float(rows["lstm_textgen", "jax"]["ratio"]) > 1e11
    assert 'class="cgb-fig"' in (out / "compare.html").read_text(encoding="utf-8")
    _good_reported(out)
    place.check(out)


def test_a_workload_name_is_drawn_as_written_never_as_mathtext(place, capsys):
    """Names that mathtext cannot parse (an unknown command; 200 braces) or would typeset ($x^{2}$) are drawn as
    written by the comparison's chart, beside good records."""
    names = ["mlp$\\undefinedcommand$x", "{" * 200 + "x", "$x^{2}$"]
    old = _folder(place.root / "old", _good("old") + [r for i, n in enumerate(names)
                                                      for r in _runs(f"old-m{i}", [100, 101, 99], n, "jax")])
    new = _folder(place.root / "new", _good("new") + [r for i, n in enumerate(names)
                                                      for r in _runs(f"new-m{i}", [60, 60.5, 59.5], n, "jax", "h2")])
    out = place.root / "out"
    place.snapshot()
    code, said, err = _run([old, new, "--out", out, "--fail-if-slower", "10%"], capsys)
    assert code == Exit.SLOWER, (said, err)
    assert said.count("  slower: ") == 3 and "slower: $x^{2}$ jax cpu b100" in said
    page = (out / "compare.html").read_text(encoding="utf-8")
    svg = page[page.index('<svg class="cgb-fig"'):page.index("</svg>")]
    assert "$x^{2}$ · cpu · jax" in svg and "mlp$\\undefinedcommand$x" in svg and "{" * (P.CHART_LABEL - 1) + "…" in svg
    assert "{" * 200 + "x · cpu · jax" in page  # the table names it whole (the chart cuts a label at CHART_LABEL)
    assert {(w, r["verdict"]) for (w, _), r in _rows(out).items() if w in names} == {(n, C.SLOWER) for n in names}
    _good_reported(out)
    place.check(out)


def test_one_configuration_or_the_chart_failing_costs_only_itself(place, capsys, monkeypatch):
    """An error while comparing one configuration drops it with a note (the others compared, the gate still run);
    an error while drawing the chart leaves a note and the tables."""
    old = _folder(place.root / "old", _good("old") + _runs("old-vgg", [100, 101, 99], "vgg_cifar10", "jax")
                  + _runs("old-lstm", [100, 101, 99], "lstm_textgen", "jax"))
    new = _folder(place.root / "new", _good("new") + _runs("new-vgg", [7, 7.1, 6.9], "vgg_cifar10", "jax", "h2")
                  + _runs("new-lstm", [60, 60.5, 59.5], "lstm_textgen", "jax", "h2"))
    welch = C.welch

    def fragile(o, n, confidence=C.CONFIDENCE):
        if min(n) < 10:  # vgg's NEW runs
            raise ZeroDivisionError("one configuration's problem")
        return welch(o, n, confidence)

    monkeypatch.setattr(C, "welch", fragile)
    out = place.root / "out"
    place.snapshot()
    code, said, err = _run([old, new, "--out", out, "--fail-if-slower", "10%"], capsys)
    assert code == Exit.SLOWER and "lstm_textgen jax cpu b100" in err, (said, err)
    assert "WARNING: not compared: vgg_cifar10 jax cpu b100" in said and "(ZeroDivisionError)" in said
    assert ("vgg_cifar10", "jax") not in _rows(out) and _rows(out)["lstm_textgen", "jax"]["verdict"] == C.SLOWER
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert "1 configuration(s) could not be compared and are left out: vgg_cifar10" in page
    _good_reported(out)
    monkeypatch.setattr(C, "welch", welch)

    def broken(changed):
        raise RecursionError("a chart's problem")

    monkeypatch.setattr(P, "chart", broken)
    code, said, err = _run([old, new, "--out", out, "--fail-if-slower", "10%"], capsys)
    assert code == Exit.SLOWER, (said, err)
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert "could not be drawn (RecursionError)" in page and 'class="cgb-fig"' not in page
    _good_reported(out)
    place.check(out)


def test_the_chart_draws_the_largest_changes_and_says_how_many_more(place, capsys):
    """200 significant changes: the chart has at most CHART_ROWS rows (the largest), the page says how many more are
    in changes.csv, which has every one."""
    n = 200
    old = _folder(place.root / "old", _good("old") + [r for b in range(1, n + 1)
                                                      for r in _runs(f"old-b{b}", [100, 100.1, 99.9], "vgg_cifar10",
                                                                     "jax", batch=b)])
    # batch b is (0.9 - b/1000) as fast on NEW: batch 200 changed most
    new = _folder(place.root / "new", _good("new") + [r for b in range(1, n + 1)
                                                      for r in _runs(f"new-b{b}", [x * (0.9 - b / 1000) for x in
                                                                                   (100, 100.1, 99.9)],
                                                                     "vgg_cifar10", "jax", "h2", batch=b)])
    out = place.root / "out"
    place.snapshot()
    code, said, err = _run([old, new, "--out", out, "--fail-if-slower", "10%"], capsys)
    assert code == Exit.SLOWER and f"{n} configuration(s) significantly slower" in err, (said, err)
    assert said.count("  slower: ") == 20 and f"... and {n - 20} more (in changes.csv)" in said  # bounded too
    page = (out / "compare.html").read_text(encoding="utf-8")
    svg = page[page.index('<svg class="cgb-fig"'):page.index("</svg>")]
    drawn = {int(b) for b in re.findall(r"vgg_cifar10 · cpu · jax · b(\d+)", svg)}
    assert drawn == set(range(n - P.CHART_ROWS + 1, n + 1)), sorted(drawn)  # the largest changes
    assert f"The {P.CHART_ROWS} largest of {n} significant changes are drawn: {n - P.CHART_ROWS} more are in " \
           f"{C.CHANGES}" in page
    height = float(re.search(r'height="([\d.]+)pt"', svg).group(1))
    assert height < (0.3 * P.CHART_ROWS + 1.1) * 72 * 1.2  # a bounded figure, not one row per change
    rows = _rows(out)
    assert sum(r["verdict"] == C.SLOWER for r in csv.DictReader((out / C.CHANGES).open())) == n
    _good_reported(out)
    assert len(rows) == len(GOOD) + 1  # (the 200 share one workload and backend: keyed apart by batch in the CSV)
    place.check(out)


def test_no_control_character_reaches_the_terminal(place, capsys):
    """A workload name with ESC sequences (clear the screen, set the window title), a carriage return and the 8-bit
    CSI, slower, on one run a side, every NEW run failed, and a host of that name: stdout and stderr hold no control
    character but the newline; the page none either."""
    evil = "mlp\x1b[2J\x1b]0;title\x07\r\x9bx"
    old = _folder(place.root / "old", _good("old") + _runs("old-e", [100, 101, 99], evil, "jax")
                  + _runs("old-f", [100], evil + "1", "jax") + _runs("old-g", [100, 101, 99], evil + "2", "jax"))
    new = _folder(place.root / "new", _good("new") + _runs("new-e", [50, 50.5, 49.5], evil, "jax", "h2" + evil)
                  + _runs("new-f", [10], evil + "1", "jax", "h2") + _failed("new-g", 2, evil + "2", "jax",
                                                                             reason="oom\x1b[2J\r"))
    out = place.root / "out"
    place.snapshot()
    code, said, err = _run([old, new, "--out", out, "--fail-if-slower", "10%"], capsys)
    assert code == Exit.NEW_FAILED, (said, err)
    assert not CONTROL.search(said) and not CONTROL.search(err), [m for m in CONTROL.findall(said + err)]
    shown = "mlp\\x1b[2J\\x1b]0;title\\x07\\x0d\\x9bx"
    assert f"slower: {shown} jax cpu b100" in said and f"not enough runs: {shown}1 jax" in said
    assert f"differs: machines: OLD CPU of h1 · 4 CPUs | NEW CPU of h2 · 4 CPUs; CPU of h2{shown}" in said
    assert f"every NEW run failed: {shown}2 jax cpu b100" in said and "(2 run(s): oom\\x1b[2J\\x0d)" in said
    page = (out / "compare.html").read_text(encoding="utf-8")
    assert not re.search("[\x1b\x07\x9b\r]", page) and shown in page
    _good_reported(out)
    place.check(out)
