"""The comparison page reads right: its first sentence says what it measured (NEW slower or faster, by how much), then
what the test can say with the runs at hand; its printed ratio is the ratio of the figures printed beside it; each
side's figure carries its marks (§ for host-busy runs); a configuration whose twin on the other side differs in a knob
(catsdogs on 1 against 4 input workers) is not paired, and the knob is named. In process, on small record folders
and on two leases of the bundled H100 reference (no run)."""

from __future__ import annotations

import html
import math
import re

import pytest
from support.records import _rec

from helpers.paths import PROJECT_ROOT
from helpers.record.writer import write_atomic
from helpers.report.publish import compare_page as P
from helpers.report.words import compare as C
from helpers.report.words import compare_figures as F
from helpers.report.words import fmt

H100 = PROJECT_ROOT / "reference" / "h100" / "records"
SCIENTIFIC = re.compile(r"\d(\.\d+)?e[+-]?\d", re.I)


def _runs(tag, sps_list, workload="cnn_cifar10", backend="jax", host="h1", **kw):
    return [_rec(k, workload=workload, backend=backend, samples_per_s=sps, median_epoch_s=1000 / sps,
                 epoch_s=[1000 / sps] * 3, steady_s=10.0, point_id=f"{tag}-{k}", started_at=f"2026-01-01T00:00:{k:02d}",
                 fingerprint={"host": host, "cpu_model": f"CPU of {host}", "cpu_logical": 4, "gpu_names": [],
                              "boot_id": f"b{host}", "versions": {"keras": "3.15.1"}}, **kw)
            for k, sps in enumerate(sps_list)]


def _folder(path, recs):
    path.mkdir(parents=True, exist_ok=True)
    for r in recs:
        write_atomic(path / f"{r['point_id']}.json", r)
    return path


def _text(page: str) -> str:
    page = re.sub(r"<svg.*?</svg>", " ", page, flags=re.S)
    page = re.sub(r"<style.*?</style>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def _first_sentence(page: str) -> str:
    return html.unescape(re.search(r'<p class="cgb-finding">(.*?)</p>', page, re.S).group(1))


def _number(text: str) -> float:
    return float(text.replace(",", "").rstrip("×").split()[0])


def _printed_ratios_agree(cmp) -> None:
    """Each row's printed ratio is the ratio of the two figures printed beside it, within their rounding."""
    assert cmp.rows
    for r in cmp.rows:
        old, new, ratio = _number(r["old_shown"]), _number(r["new_shown"]), _number(F.ratio_shown(r))
        d = r["ratio_digits"]
        # each printed figure is within half a unit of its last digit: the ratio of two such figures moves by at most
        # the sum of their relative roundings; the printed ratio adds its own
        slack = (0.5 * 10 ** (1 - d)) * 3
        assert abs(ratio / (new / old) - 1) <= slack, (C.name(r), r["old_shown"], r["new_shown"], F.ratio_shown(r))


def test_one_run_a_side_three_times_slower_leads_with_the_ratio_and_not_enough_runs(tmp_path):
    old = _folder(tmp_path / "old", _runs("old", [3000.0]))
    new = _folder(tmp_path / "new", _runs("new", [1000.0], host="h2"))
    cmp = C.compare([old], [new])
    page = P.page(cmp, [str(old)], [str(new)])
    first = _first_sentence(page)
    assert first.startswith("NEW slower on the one configuration measured on both sides, 3.0×"), first
    assert "not enough runs to test" in first, first
    assert first.index("3.0×") < first.index("not enough runs") < first.index("differ in more than the code")
    # the page says no significant change nowhere: it says what it measured
    assert "No significant change" not in page
    (r,) = cmp.rows
    assert (r["old_shown"], r["new_shown"], F.ratio_shown(r)) == ("3,000", "1,000", "0.333×")
    _printed_ratios_agree(cmp)
    text = _text(page)
    assert "3,000 † (1)" in text and "1,000 † (1)" in text  # each side with its mark and its runs
    # a column the summary promises is filled, or not drawn: one run a side has no interval
    assert "interval" not in re.search(r"<thead>.*?</thead>", page[page.index("Every configuration"):]).group()
    assert not SCIENTIFIC.search(text), SCIENTIFIC.search(text)


def test_runs_a_side_are_said_from_the_spread_of_the_other_runs(tmp_path):
    """A configuration with one run a side is untested; the runs a side that would show its change come from the
    spread of the configurations that have several runs."""
    old = _folder(tmp_path / "old", _runs("old", [3000.0]) + _runs("old-t", [500, 520, 480], backend="torch"))
    new = _folder(tmp_path / "new", _runs("new", [1000.0], host="h2")
                  + _runs("new-t", [505, 495, 515], backend="torch", host="h2"))
    cmp = C.compare([old], [new])
    few = [r for r in cmp.rows if r["verdict"] == C.FEW]
    need = C.runs_needed_at(math.log(1 / 3), F.spread([([500, 520, 480], [505, 495, 515])]))
    assert len(few) == 1 and few[0]["runs_needed_a_side"] == need and 2 <= need <= 3  # a 3× change at a 4% spread
    first = _first_sentence(P.page(cmp, [str(old)], [str(new)]))
    assert f"1 with one run a side: not enough runs to test ({need} runs a side would show a change of this size" \
        in first


def test_host_busy_runs_carry_their_mark_on_the_comparison(tmp_path):
    old = _folder(tmp_path / "old", _runs("old", [3000.0, 3100.0], host_busy=True))
    new = _folder(tmp_path / "new", _runs("new", [1000.0, 1010.0], host="h2"))
    cmp = C.compare([old], [new])
    (r,) = cmp.rows
    assert r["old_marks"] == fmt.BUSY and r["new_marks"] == ""
    text = _text(P.page(cmp, [str(old)], [str(new)]))
    assert f"{r['old_shown']} {fmt.BUSY} (2)" in text and f"{r['new_shown']} (2)" in text


def test_host_busy_runs_are_left_out_of_both_sides_of_a_configuration_or_of_neither(tmp_path):
    """OLD ran on a loaded machine throughout (every run host-busy: none can be left out); NEW's first two runs met
    the load too, its last two did not. Leaving NEW's busy runs out alone would set a quiet machine against a loaded
    one and call the load faster code: both sides keep their busy runs. Two quiet runs a side would leave the test no
    power (one degree of freedom): kept too. Where both sides have three quiet runs, both leave their busy ones out."""
    slow, fast = [600.0, 610.0, 590.0, 605.0], [1000.0, 1010.0]
    old = _folder(tmp_path / "old", _runs("old", slow, host_busy=True))
    new = _folder(tmp_path / "new", _runs("new", slow[:2], host="h2", host_busy=True)
                  + _runs("new-quiet", fast, host="h2"))
    (r,) = C.compare([old], [new]).rows
    assert (r["old_runs"], r["new_runs"]) == (4, 4) and r["verdict"] != C.FASTER, r
    both = _folder(tmp_path / "both", _runs("both", slow[:2], host_busy=True) + _runs("both-quiet", [1005.0, 995.0]))
    (r,) = C.compare([both], [new]).rows
    assert (r["old_runs"], r["new_runs"]) == (4, 4), r  # two quiet a side: kept
    three = _folder(tmp_path / "three", _runs("three", slow[:2], host_busy=True)
                    + _runs("three-quiet", [1005.0, 995.0, 1000.0]))
    newer = _folder(tmp_path / "newer", _runs("newer", slow[:1], host="h2", host_busy=True)
                    + _runs("newer-quiet", [*fast, 1002.0], host="h2"))
    (r,) = C.compare([three], [newer]).rows
    assert (r["old_runs"], r["new_runs"]) == (3, 3) and r["verdict"] == C.NONE, r


def test_a_catsdogs_pair_on_other_input_workers_is_not_paired_and_the_knob_is_named(tmp_path):
    old = _folder(tmp_path / "old", _runs("old", [300.0], workload="catsdogs", params={"threads": 0, "workers": 1,
                                                                                      "precision": "float32"}))
    new = _folder(tmp_path / "new", _runs("new", [900.0], workload="catsdogs", host="h2",
                                          params={"threads": 0, "workers": 4, "precision": "float32"}))
    cmp = C.compare([old], [new])
    assert cmp.rows == []
    (o,), (n,) = cmp.only_old, cmp.only_new
    assert o["near"] == "workers 1 here, 4 on NEW" and n["near"] == "workers 4 here, 1 on OLD"
    text = _text(P.page(cmp, [str(old)], [str(new)]))
    assert "workers 1 here, 4 on NEW" in text


@pytest.fixture(scope="module")
def two_leases(tmp_path_factory):
    """Two leases of the H100 reference (the same backends on each), as two folders."""
    import json

    root = tmp_path_factory.mktemp("leases")
    leases = {"8e28086d8d20": root / "old", "8ee8feab14e7": root / "new"}
    for p in sorted(H100.glob("*.json")):
        r = json.loads(p.read_text(encoding="utf-8"))
        lease = (r.get("fingerprint") or {}).get("boot_id")
        if lease in leases:
            leases[lease].mkdir(exist_ok=True)
            (leases[lease] / p.name).write_bytes(p.read_bytes())
    return C.compare([leases["8e28086d8d20"]], [leases["8ee8feab14e7"]])


def test_two_leases_print_each_ratio_as_the_ratio_of_the_figures_beside_it(two_leases):
    cmp = two_leases
    assert len(cmp.rows) >= 20
    _printed_ratios_agree(cmp)
    page = P.page(cmp, ["old"], ["new"])
    text = _text(page)
    assert not SCIENTIFIC.search(text), SCIENTIFIC.search(text)
    first = _first_sentence(page)
    assert first.startswith("NEW slower on ") and "faster on " in first
    for r in cmp.rows:  # one string per figure: each side's figure as the report rounds it, with its marks
        for side in ("old", "new"):
            m = r[f"{side}_marks"]
            assert f"{r[f'{side}_shown']}{' ' + m if m else ''} ({r[f'{side}_runs']})" in text


def test_a_catsdogs_pair_on_one_against_four_workers_is_named_so_in_the_verdict(tmp_path):
    """The verdict (best over best: workers may differ, as threads do) names the workers each side ran with, in its
    sentences, table and verdict.csv; the like-for-like table against the bundled reference (whose catsdogs ran on 4
    workers) names them too."""
    from support.records import _ctx

    from helpers import report
    from helpers.report.derive.pairs import all_pairs
    from helpers.report.publish import csvs, sections
    from helpers.report.words import headline

    fp = {"host": "h1", "cpu_model": "Some CPU", "cpu_logical": 4, "gpu_names": ["NVIDIA H100 80GB HBM3"],
          "versions": {"keras": "3.15.1"}}
    cpu = [_rec(i, workload="catsdogs", batch_size=32, samples_per_s=sps, median_epoch_s=1000 / sps,
                epoch_s=[1000 / sps] * 3, point_id=f"cpu-{i}", fingerprint=fp, steady_s=10.0,
                params={"threads": 0, "workers": 1, "precision": "float32"}) for i, sps in enumerate((300.0, 310.0))]
    gpu = [_rec(2 + i, workload="catsdogs", device="gpu", device_used="gpu", batch_size=32, samples_per_s=sps,
                median_epoch_s=1000 / sps, epoch_s=[1000 / sps] * 3, point_id=f"gpu-{i}", fingerprint=fp,
                steady_s=10.0, params={"threads": 0, "workers": 4, "precision": "float32"})
           for i, sps in enumerate((3000.0, 3100.0))]
    ctx = _ctx(tmp_path / "own", cpu + gpu)
    said = "input workers: 1 on the CPU, 4 on the GPU"
    verdict = re.sub(r"<[^>]+>", " ", sections.build(sections.get("verdict"), ctx)._repr_html_())
    assert said in html.unescape(verdict)
    assert list(csvs.verdict_frame(ctx)["sides"]) == [f"JAX on 4 CPU cores → JAX on the H100 "
                                                                          f"({said})"]
    # your CPU on 1 worker against the reference's GPU on 4: the like-for-like pair says so
    report.setup_plots()
    laptop = {**fp, "host": "laptop", "gpu_names": []}
    knobs = {"augment": True, "jit_compile": "auto", "data_dir": "", "image_size": 0, "max_queue_size": 10,
             "use_multiprocessing": False, "variant": "original"}  # the reference's catsdogs knobs
    # on PyTorch: the reference's catsdogs on JAX on the GPU did not learn (loss 7.7 -> 7.8), so it pairs with nothing
    ref = _ctx(tmp_path / "cpu", [{**r, "backend": "torch", "fingerprint": laptop,
                                   "params": {**r["params"], **knobs, "backend": "torch"}} for r in cpu],
               use_reference=True)
    pairs = all_pairs(ref.costed)
    cats = pairs[pairs["workload"] == "catsdogs"]
    assert len(cats) and all(headline.differs(r) == said for r in cats.to_dict("records"))
    text = html.unescape(re.sub(r"<[^>]+>", " ", sections.build(sections.get("verdict"), ref)._repr_html_()))
    assert said in text
