"""two spreads, never confused, and never a precision the runs do not have.

A configuration's figure is the median over its runs of each run's steady-state samples/s, with the
between-run interval (range of 2–4 runs, bootstrap 95% from 5, fixed seed); the within-run epoch spread is
shown apart. Figures from one run or a short window are marked and rounded (precision.sig_digits); speedups carry
an interval from both sides' runs. Records are built with the helpers of tests/test_report.py.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from support.records import _check_sections, _ctx, _rec

from helpers import report
from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic
from helpers.report.derive import aggregate
from helpers.report.derive.pairs import all_pairs
from helpers.report.derive.precision import sig_digits
from helpers.report.publish import sections
from helpers.report.publish.sections.base import mark_bars, with_marks
from helpers.report.publish.sections.speedup import build as build_speedup
from helpers.report.publish.sections.throughput import timing_table
from helpers.report.publish.sections.verdict import glance_table
from helpers.report.words import fmt, headline
from helpers.report.words import labels as report_labels
from helpers.report.words.marks import precision_marks

GPU = {"device": "gpu", "device_used": "gpu"}


def _runs(sps, start=0, epochs=None, params=None, boot=None, **kw) -> list[dict]:
    """One record per figure in ``sps`` (n_train 1000): each run's steady epochs take 1000/sps seconds (or
    ``epochs``: a list of epoch lists), so its window is 3 × that unless given."""
    out = []
    for i, v in enumerate(sps):
        ep = epochs[i] if epochs else [1000 / v] * 3
        fp = {**_rec()["fingerprint"], **({"boot_id": boot[i]} if boot and boot[i] else {})}
        r = _rec(start + i, epoch_s=ep, median_epoch_s=float(np.median(ep)), samples_per_s=1000 / float(np.median(ep)),
                 point_id=f"p{start + i}", repeat=i, config_id=f"c{start}", fingerprint=fp,
                 params={**_rec()["params"], **(params or {})}, **kw)
        r["started_at"] = f"2026-01-01T00:{(start + i) // 60:02d}:{(start + i) % 60:02d}"
        out.append(r)
    return out


def _row(summ, device="cpu"):
    rows = summ[summ["device"] == device]
    assert len(rows) == 1, rows
    return rows.iloc[0]


# ------------------------------------------------------------------ the figure and its between-run interval


def test_a_configuration_is_the_median_of_its_runs_not_of_pooled_epochs(tmp_path):
    # run 0: five epochs of 1.0 s (1000/s); run 1: three of 2.0 s (500/s); run 2: three of 1.2 s (833/s).
    # Pooled, the epochs' median is 1.0 s (1000/s); the median of the three runs' figures is 833/s.
    epochs = [[1.0] * 5, [2.0] * 3, [1.2] * 3]
    summ = _ctx(tmp_path, _runs([1000, 500, 833], epochs=epochs)).summary
    r = _row(summ)
    assert r["n_runs"] == 3 and r["n_epochs"] == 11
    assert r["samples_per_s"] == pytest.approx(1000 / 1.2)
    assert r["s_per_epoch"] == pytest.approx(1.2)
    # between runs: the range of three runs
    assert r["sps_interval"] == "range"
    assert (r["sps_lo"], r["sps_hi"]) == (pytest.approx(500), pytest.approx(1000))
    assert (r["runs_sps_min"], r["runs_sps_max"]) == (pytest.approx(500), pytest.approx(1000))
    # within runs: the pooled epochs' IQR, kept apart (1.0 s to 1.6 s)
    assert (r["q1"], r["q3"]) == (pytest.approx(1.0), pytest.approx(1.6))
    assert (r["sps_q1"], r["sps_q3"]) == (pytest.approx(1000 / 1.6), pytest.approx(1000))
    # the tables: the figure with its between-run range, the epochs' IQR under a within-run heading
    t = timing_table(summ).iloc[0]
    fig_col = next(c for c in t.index if c.startswith("samples/s, median of runs"))
    assert t[fig_col] == "830 [500–1,000] (n=3, range; 5 s)"  # r = 60%: 2 significant digits; 5 s: median run
    within = next(c for c in t.index if c.startswith("within-run epoch IQR"))
    assert "not its uncertainty" in within and t[within] == "630–1,000"


def test_the_bootstrap_interval_of_six_runs_is_deterministic_and_holds_the_median(tmp_path):
    sps = [1000, 1040, 980, 1100, 1010, 960]
    a = _row(_ctx(tmp_path / "a", _runs(sps)).summary)
    b = _row(_ctx(tmp_path / "b", _runs(sps)).summary)
    assert a["sps_interval"] == "bootstrap" and a["n_runs"] == 6
    assert a["samples_per_s"] == pytest.approx(float(np.median(sps)))
    assert (a["sps_lo"], a["sps_hi"]) == (b["sps_lo"], b["sps_hi"])  # fixed seed: the same report every time
    assert min(sps) <= a["sps_lo"] <= a["samples_per_s"] <= a["sps_hi"] <= max(sps)
    assert a["sps_hi"] - a["sps_lo"] < max(sps) - min(sps)  # narrower than the range
    assert aggregate.between_runs(sps) == aggregate.between_runs(list(reversed(sps)))
    # 2-4 runs: the range; one run: none
    assert aggregate.between_runs([3.0, 1.0, 2.0, 4.0]) == (1.0, 4.0, "range")
    lo, hi, kind = aggregate.between_runs([5.0])
    assert kind == "none" and math.isnan(lo) and math.isnan(hi)


# ------------------------------------------------------------------ marks and rounding


def test_the_rounding_rule():
    d = sig_digits
    assert d(1000, n_runs=1) == 3 and d(1000, n_runs=1, short=True) == 2
    assert d(1000, 990, 1010, 3) == 3  # 2% between runs
    assert d(1000, 900, 1100, 3) == 2  # 20%
    assert d(1000, 998, 1003, 3) == 4  # 0.5%
    assert d(1000, 1000, 1000, 2) == 4  # identical runs
    assert d(1000, 998, 1003, 3, short=True) == 3  # a short window caps it
    assert d(1000, float("nan"), float("nan"), 1) == 3
    assert fmt.rounded(209358.0, 2) == "210,000" and fmt.rounded(209358.0, 3) == "209,000"
    assert fmt.rounded(9.96, 2) == "10" and fmt.rounded(0.0030461, 2) == "0.0030" and fmt.rounded(50.877, 3) == "50.9"
    assert fmt.figure_text(209358.0, None, None, 1, 0.718, None) == "210,000 †‡ (1 run, window 0.72 s < 2 s)"
    assert fmt.figure_text(8519.2, None, None, 1, 7.06, 2.0) == "8,520 † (1 run, 7.1 s)"
    # 2.2% between runs: 3 digits, half up
    assert fmt.figure_text(1005.0, 990.0, 1012.0, 4, 3.1, 2.0, "range") == "1,010 [990–1,010] (n=4, range; 3.1 s)"
    assert fmt.figure_text(1005.0, 1003.0, 1007.0, 6, 3.1, 2.0, "bootstrap") == \
        "1,005 [1,003–1,007] (n=6, bootstrap 95%; 3.1 s)"


def test_one_run_and_a_short_window_are_marked_in_every_table(tmp_path):
    report.setup_plots()
    recs = (_runs([1000, 1010, 990])  # CPU: three runs of 3 s: no mark
            + _runs([4166.67], start=10, **GPU)  # GPU: one run, 3 x 0.24 s = 0.72 s < 2 s (no min_steady_s)
            + _runs([2000], start=20, params={"min_steady_s": 1.0}, backend="torch"))  # 1.5 s >= its own 1 s
    ctx = _ctx(tmp_path, recs)
    summ = ctx.summary
    gpu, cpu = _row(summ, "gpu"), summ[(summ["device"] == "cpu") & (summ["backend"] == "jax")].iloc[0]
    torch = summ[summ["backend"] == "torch"].iloc[0]
    assert bool(gpu["short_window"]) and gpu["min_steady_s"] == 2.0 and gpu["steady_s"] == pytest.approx(0.72)
    assert not torch["short_window"] and torch["min_steady_s"] == 1.0
    assert fmt.figure(gpu) == "4,200 †‡ (1 run, window 0.72 s < 2 s)"  # 2 significant digits
    assert fmt.figure(torch) == "2,000 † (1 run, 1.5 s)"
    assert fmt.figure(cpu) == "1,000 [990–1,010] (n=3, range; 3 s)"
    assert "‡ window under 2 s" in precision_marks(gpu) and "† one run" in precision_marks(gpu)
    t = timing_table(summ)
    assert any(v == "4,200 †‡ (1 run, window 0.72 s < 2 s)" for v in t.iloc[:, 5])
    assert "0.24 †‡" in set(t["s/epoch (median run)"])  # a derived figure keeps the digits and the marks
    pair = headline.best_pairs(all_pairs(ctx.costed)).iloc[0]  # the matched pair: jax on both sides
    assert fmt.figure(pair, suffix="_gpu") == "4,200 †‡ (1 run, window 0.72 s < 2 s)"
    assert fmt.figure(pair, suffix="_cpu") == "1,000 [990–1,010] (n=3, range; 3 s)"
    assert fmt.speedup_text(pair) == "4.2 †‡ (1 run: no interval)"
    v = glance_table(headline.per_workload(headline.best_pairs(all_pairs(ctx.costed)))).iloc[0]
    assert v["GPU ÷ CPU"] == "4.2× †‡" and v["runs CPU / GPU"] == "3 / 1"  # the first screen keeps the marks
    built = _check_sections(ctx)
    for name in ("verdict", "throughput", "speedup", "utilisation", "backends", "first_epoch"):
        page = built[name]._repr_html_()
        assert "† (1 run, 1.5 s)" in page or "†‡" in page, name
        assert fmt.esc(fmt.MARKS_NOTE) in page, name  # a section built alone explains its marks
        assert "4,166" not in page and "4,167" not in page, name  # no digits the run does not have
    # the whole report explains the marks once: in the first section that shows one (the verdict here)
    whole = [x for x in sections.build_all(ctx) if fmt.esc(fmt.MARKS_NOTE) in x._repr_html_()]
    assert [x.name for x in whole] == ["verdict"]
    # bar charts: the marked bars are hatched, with a legend line; labels say runs and window
    from helpers.report.publish.charts import bar_facets

    lab = with_marks(report_labels.labels)(summ)
    assert any(x.endswith("(n=1, 0.72 s) †‡") for x in lab) and any(x.endswith("(n=3, 3 s)") for x in lab)
    fig = mark_bars(bar_facets(summ, "samples_per_s", with_marks(report_labels.labels), lo="sps_lo", hi="sps_hi"))
    hatches = [p.get_hatch() or "" for ax in fig.axes for p in ax.patches]
    assert sum("..." in h for h in hatches) == 2 and sum("xx" in h for h in hatches) == 1
    assert fig.legends and "one run" in " ".join(t.get_text() for t in fig.legends[0].get_texts())


# ------------------------------------------------------------------ the speedup's interval


def test_the_speedup_interval_comes_from_the_runs_of_both_sides(tmp_path):
    cpu, gpu = [1000, 1100, 900], [10000, 12000]
    p = aggregate.matched_pairs(_ctx(tmp_path / "a", _runs(cpu) + _runs(gpu, start=10, params={"min_steady_s": 0.1},
                                                                        **GPU)).summary).iloc[0]
    assert p["speedup"] == pytest.approx(11000 / 1000) and p["interval"] == "range"
    assert (p["speedup_lo"], p["speedup_hi"]) == (pytest.approx(10000 / 1100), pytest.approx(12000 / 900))
    assert fmt.speedup_text(p) == "11 [9.1–13] (between runs: range, n=2/3 GPU/CPU)"
    # both sides with six runs: a bootstrap of the ratio of medians, the same every time
    cpu6, gpu6 = [1000, 1020, 990, 1050, 1010, 970], [10000, 10300, 9900, 10100, 10600, 9800]
    recs = _runs(cpu6) + _runs(gpu6, start=10, params={"min_steady_s": 0.1}, **GPU)
    p6 = aggregate.matched_pairs(_ctx(tmp_path / "b", recs).summary).iloc[0]
    again = aggregate.matched_pairs(_ctx(tmp_path / "c", recs).summary).iloc[0]
    ratio = np.median(gpu6) / np.median(cpu6)
    assert p6["interval"] == "bootstrap" and p6["speedup"] == pytest.approx(ratio)
    assert p6["speedup_lo"] <= ratio <= p6["speedup_hi"] and (p6["speedup_lo"], p6["speedup_hi"]) == \
        (again["speedup_lo"], again["speedup_hi"])
    assert min(gpu6) / max(cpu6) <= p6["speedup_lo"] and p6["speedup_hi"] <= max(gpu6) / min(cpu6)
    assert "between runs: bootstrap 95%, n=6/6" in fmt.speedup_text(p6)
    # one side with one run: no interval, never an epoch IQR in its place
    ctx = _ctx(tmp_path / "d", _runs(cpu) + _runs([10000], start=10, params={"min_steady_s": 0.1}, **GPU))
    p1 = aggregate.matched_pairs(ctx.summary).iloc[0]
    assert p1["interval"] == "none" and math.isnan(p1["speedup_lo"]) and math.isnan(p1["speedup_hi"])
    assert fmt.speedup_text(p1) == "10 † (1 run: no interval)"  # the CPU side's 20% range: 2 digits
    page = build_speedup(ctx)._repr_html_()
    assert "1 run: no interval" in page and "IQR (one run)" not in page


# ------------------------------------------------------------------ the published reference


def test_the_h100_reference_is_marked_and_rounded(reference_ctx):
    """The re-published reference (issues 36, 46): the README's 30 GPU cells have 5-6 runs over 4-5 leases and their
    30 CPU twins 3 runs over three leases, TensorFlow's over two (a range under 5 runs, a bootstrap interval from 5),
    the earlier protocol's single CPU runs are left out of those figures; every other point is one run and says so;
    figures are rounded to what the runs support."""
    ctx = reference_ctx
    summ = ctx.summary
    multi, one = summ[summ["n_runs"] > 1], summ[summ["n_runs"] == 1]
    assert sorted(multi["device"].value_counts().items()) == [("cpu", 30), ("gpu", 30)]  # three backends
    gpu, cpu = multi[multi["device"] == "gpu"], multi[multi["device"] == "cpu"]
    assert gpu["n_runs"].between(5, 6).all() and gpu["n_leases"].between(4, 5).all()
    tf = cpu["backend"] == "tensorflow"  # TF's twins: 3 runs over its first two leases, no run of the earlier protocol
    assert cpu["n_runs"].eq(3).all() and cpu[~tf]["n_leases"].eq(3).all() and cpu[~tf]["n_earlier"].eq(1).all()
    assert tf.sum() == 10 and cpu[tf]["n_leases"].eq(2).all() and cpu[tf]["n_earlier"].eq(0).all()
    assert (multi["sps_interval"] == multi["n_runs"].map(lambda n: "bootstrap" if n >= 5 else "range")).all()
    assert (one["sps_interval"] == "none").all()
    assert all(fmt.ONE_RUN in fmt.figure(row) for row in one.to_dict("records"))
    assert not any(fmt.ONE_RUN in fmt.figure(row) for row in multi.to_dict("records"))
    r = gpu[(gpu["workload"] == "cnn_cifar10") & (gpu["backend"] == "jax")].iloc[0]
    assert r["n_runs"] == 6 and r["samples_per_s"] == pytest.approx(275995, rel=1e-5) and not bool(r["short_window"])
    assert fmt.figure(r) == "280,000 [240,000–350,000] (n=6, bootstrap 95%; 3.1 s)"
    pairs = aggregate.matched_pairs(summ)
    cifar = pairs[(pairs["workload"] == "cnn_cifar10") & (pairs["backend"] == "jax")].iloc[0]
    # the CPU side: its 3 runs of the current protocol (5,480, 6,396 and 6,621/s), not the old single run of 4,115
    assert cifar["samples_per_s_cpu"] == pytest.approx(6396, rel=1e-3)
    assert fmt.speedup_text(cifar) == "43 [33–69] (between runs: range, n=6/3 GPU/CPU)"
    page = sections.build(sections.get("throughput"), ctx)._repr_html_()
    assert "280,000 [240,000–350,000]" in page and "275,995" not in page
    overview = sections.build(sections.get("overview"), ctx)._repr_html_()
    assert "20 run(s) of the earlier protocol are left out of the figures of the 20" in overview


# ------------------------------------------------------------------ benchmarks/reference_spread.py


def test_the_h100_readme_table_is_the_scripts_output_in_the_reports_strings(reference_ctx):
    """reference/h100/README.md's table is what `reference_spread.py --markdown` prints, and each of its samples/s and
    speedup figures is the string the report shows (one value per figure: 280,000 and 290×, never 275,995 or 293×)."""
    res = subprocess.run([sys.executable, "benchmarks/reference_spread.py", "reference/h100/records", "--markdown"],
                         cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    table = res.stdout.strip()
    assert table in (PROJECT_ROOT / "reference" / "h100" / "README.md").read_text(encoding="utf-8")
    pairs = aggregate.matched_pairs(reference_ctx.summary).to_dict("records")
    rows = table.splitlines()[2:]
    # ten workloads x three backends, less the two whose one side did not learn (catsdogs on JAX's GPU, resnet50 on
    # TensorFlow's CPU: helpers.report.derive.learning), which pair with nothing
    left = reference_ctx.summary[reference_ctx.summary["learned"] == "no"]
    assert set(zip(left["workload"], left["backend"])) >= {("catsdogs", "jax"), ("resnet50", "tensorflow")}
    assert len(rows) == len(pairs) == 28
    for p in pairs:
        row = next(r for r in rows if r.startswith(f"| {p['workload']} ({p['batch_size']:g}) | {p['backend']} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[2].split(" (")[0] == fmt.sps_shown(p, "_cpu") and cells[3].split(" (")[0] == fmt.sps_shown(
            p, "_gpu") and cells[5] == fmt.speedup_shown(p), (row, p["speedup"])
    assert "275,995" not in table and "293×" not in table


def test_reference_spread_prints_runs_per_lease_and_lease_to_lease(tmp_path):
    a, b = "a" * 16, "b" * 16
    recs = (_runs([1000, 1100], boot=[a, a])  # lease a: 1000 and 1100 (median 1050, 9.5%)
            + _runs([900, 950, 1000], start=10, boot=[b, b, b])  # lease b: median 950, range 900–1000 (10.5%)
            + _runs([990], start=20))  # an older record: no boot id
    folder = tmp_path / "records"
    for i, r in enumerate(recs):
        write_atomic(folder / f"r{i}.json", r)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    res = subprocess.run([sys.executable, "benchmarks/reference_spread.py", str(folder)], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # writes nothing
    lines = {ln.split()[5]: ln for ln in out.splitlines() if ln.startswith("cnn_cifar10")}
    assert set(lines) == {a[:12], b[:12], "unknown", "="}
    la, lb = lines[a[:12]].split(), lines[b[:12]].split()
    assert la[6:] == ["2", "1,050", "1,000–1,100", "9.5", "2.86"]  # runs, median, range, %, window s
    assert lb[6:10] == ["3", "950", "900–1,000", "10.5"]
    assert "(1 run)" in lines["unknown"]
    # six runs (median 995); the leases' medians 1050, 950 and 990: range 950–1,050, 10.1% of their median
    assert lines["="].split()[5:] == ["=", "3", "leases", "(lease", "to", "lease)", "6", "995", "950–1,050", "10.1",
                                       "3.02"]
    assert "leases (boot ids): 2; 1 record(s) without a boot id" in out
    bad = subprocess.run([sys.executable, "benchmarks/reference_spread.py", str(tmp_path / "none")],
                         cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "not a folder" in bad.stderr


# ------------------------------------------------------------------ one protocol per figure


def test_a_figure_never_mixes_the_earlier_protocol_with_the_current_one(tmp_path):
    # one configuration: two schema-1 runs (5000/s) and two of the current protocol (1000, 1100/s); another batch
    # measured only under schema 1 keeps its runs
    recs = (_runs([5000, 5000]) + _runs([1000, 1100], start=10, schema=2)
            + _runs([700, 800], start=20, batch_size=64, params={"batch_size": 64}))
    summ = _ctx(tmp_path, recs).summary
    mixed = summ[summ["batch_size"] != 64].iloc[0]
    assert mixed["n_runs"] == 2 and mixed["samples_per_s"] == pytest.approx(1050)
    assert mixed["n_earlier"] == 2
    old = summ[summ["batch_size"] == 64].iloc[0]
    assert old["n_runs"] == 2 and old["samples_per_s"] == pytest.approx(750) and old["n_earlier"] == 0
    alone = _ctx(tmp_path / "alone", recs[:2]).summary.iloc[0]  # schema 1 alone: all its runs kept
    assert alone["n_runs"] == 2 and alone["n_earlier"] == 0 and alone["samples_per_s"] == pytest.approx(5000)


def test_reference_spread_prints_the_held_out_lease_coverage_and_the_published_table(tmp_path):
    a, b, c = "a" * 16, "b" * 16, "c" * 16
    gpu = dict(schema=2, **GPU)
    recs = (_runs([1000, 1100], boot=[a, a], **gpu) + _runs([900, 1000], start=10, boot=[b, b], **gpu)
            + _runs([1500, 1600], start=20, boot=[c, c], **gpu)
            + _runs([10, 12], start=30, boot=[a, a], schema=2) + _runs([11], start=40, boot=[b], schema=2)
            + _runs([5], start=50, boot=[c]))  # the earlier protocol: in neither the coverage nor the table
    folder = tmp_path / "records"
    for i, r in enumerate(recs):
        write_atomic(folder / f"r{i}.json", r)
    res = subprocess.run([sys.executable, "benchmarks/reference_spread.py", str(folder)], cwd=PROJECT_ROOT,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    out = res.stdout.split("held-out-lease coverage", 1)[1]
    # GPU: lease a (1050) inside 900–1600; b (950) below 1000–1600 by 5%; c (1550) above 900–1100 by 41%
    assert "gpu: 1 of 3 held-out leases inside (33%), 1 configurations, 3-3 leases each" in out
    assert "lease bbbbbbbb median 950 vs 1,000-1,600 (4 runs, 2 leases): -5%" in out
    assert "lease cccccccc median 1,550 vs 900-1,100 (4 runs, 2 leases): +41%" in out
    # CPU: lease a held out leaves one run (no range): only lease b (11) against 10–12 counts
    assert "cpu: 1 of 1 held-out leases inside (100%)" in out
    md = subprocess.run([sys.executable, "benchmarks/reference_spread.py", str(folder), "--markdown"],
                        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert md.returncode == 0, md.stderr
    rows = [ln for ln in md.stdout.splitlines() if ln.startswith("| cnn_cifar10")]
    assert rows == ["| cnn_cifar10 (100) | jax | 11 (3 / 2) | 1,100 (6 / 3) | 900–1,600 (67%) | 95× |"]  # report digits


def test_the_prediction_interval_predicts_each_lease_from_the_others_only(tmp_path):
    """each lease held out in turn, predicted from the other leases' log medians with the lease-to-lease
    spread pooled without it (90%). Leases a 1050, b 950, c 1550: c is predicted from a and b alone (their spread
    10%: 866–1,151) and falls outside; a and b, predicted with c among the others (a wider spread), fall inside."""
    a, b, c = "a" * 16, "b" * 16, "c" * 16
    gpu = dict(schema=2, **GPU)
    recs = (_runs([1000, 1100], boot=[a, a], **gpu) + _runs([900, 1000], start=10, boot=[b, b], **gpu)
            + _runs([1500, 1600], start=20, boot=[c, c], **gpu))
    folder = tmp_path / "records"
    for i, r in enumerate(recs):
        write_atomic(folder / f"r{i}.json", r)
    res = subprocess.run([sys.executable, "benchmarks/reference_spread.py", str(folder), "--interval"],
                         cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "gpu: plain interval 2 of 3 held-out leases inside (67%), 1 configurations" in res.stdout
    assert "outside: cnn_cifar10 jax b100 lease cccccccc median 1,550 vs 866-1,152 (2 leases)" in res.stdout
    assert "configurations whose every held-out lease fell inside: 0 of 1" in res.stdout
    two = subprocess.run([sys.executable, "benchmarks/reference_spread.py", str(folder), "--interval",
                          "--min-leases", "4"], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert two.returncode == 1 and "3 or more leases" in two.stderr


def test_what_a_fresh_machine_of_each_kind_is_expected_to_give(tmp_path):
    """The 90% prediction interval for a fresh lease, by hand: two configurations on three leases each, s pooled
    over both (log lease medians about their own means), the interval exp(mean ± 1.645 s sqrt(1 + 1/3)); a
    configuration on one lease takes the same s around its one median; both CSVs carry it and the verdict says it."""
    import math

    from helpers.report.derive import fresh
    from helpers.report.publish import csvs

    a = _runs([1000, 1100, 1210], boot=["l1", "l2", "l3"], schema=4)  # one run a lease
    b = _runs([500, 450, 550], start=10, boot=["l1", "l2", "l3"], schema=4, backend="torch")
    g = _runs([50_000], start=20, boot=["l1"], schema=4, **GPU)
    ctx = _ctx(tmp_path, a + b + g)
    logs = [[math.log(v) for v in (1000, 1100, 1210)], [math.log(v) for v in (500, 450, 550)]]
    ss = sum((x - sum(L) / 3) ** 2 for L in logs for x in L)
    s = math.sqrt(ss / 4)
    c = ctx.costed.set_index(["backend", "device"])
    half = 1.645 * s * math.sqrt(1 + 1 / 3)
    centre = sum(logs[0]) / 3
    assert c.loc[("jax", "cpu"), "fresh_lo"] == pytest.approx(math.exp(centre - half))
    assert c.loc[("jax", "cpu"), "fresh_hi"] == pytest.approx(math.exp(centre + half))
    assert c.loc[("jax", "cpu"), "fresh_pct"] == pytest.approx(100 * (math.exp(half) - 1))
    assert f"s = {s:.3f} pooled over 2 CPU configurations" in c.loc[("jax", "cpu"), "fresh_basis"]
    # the GPU: one lease in these records, so the bundled reference's spread, said
    ref, name = fresh.reference_spread()
    gpu_half = 1.645 * ref["gpu"][0] * math.sqrt(2)
    assert c.loc[("jax", "gpu"), "fresh_hi"] == pytest.approx(50_000 * math.exp(gpu_half))
    assert f"of the bundled reference {name}" in c.loc[("jax", "gpu"), "fresh_basis"]
    conf = csvs.configurations_frame(ctx.costed)
    assert conf["fresh_machine_samples_per_s_low"].notna().all() and conf["fresh_machine_interval"].str.len().min() > 20
    v = csvs.verdict_frame(ctx)
    assert v["gpu_fresh_machine_samples_per_s_high"].iloc[0] == pytest.approx(50_000 * math.exp(gpu_half))
    page = sections.build(sections.get("verdict"), ctx)._repr_html_()
    assert f"the GPU side within about ±{round(100 * (math.exp(gpu_half) - 1))}%" in page
