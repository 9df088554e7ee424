"""Every sentence true for its page, on the bundled multi-GPU references (in process, no run): where more GPUs were
slower than one or no faster, the scaling answer says so in words; an efficiency resting on one-run figures carries
†; a page with equal run counts says 'its 2 runs', not '2–2'; the published figures' count adds up; a page with no
skipped point sends no reader to look for one; the lease counts of Provenance agree."""

from __future__ import annotations

import re

import pytest

from helpers import report
from helpers.paths import PROJECT_ROOT
from helpers.report.derive import devices
from helpers.report.publish import sections
from helpers.report.words import fmt, scaling_words

REF = PROJECT_ROOT / "reference"


SAID = ("speedup", "published", "provenance", "cost", "methods")  # the sections whose sentences are checked


@pytest.fixture(scope="module", params=["h200x2", "h100x4"])
def page(request):
    """The reference's context and the text of the sections checked, their charts made but not drawn (as the
    ``charts_not_drawn`` fixture does: drawing is the rendered reports' test)."""
    import matplotlib.pyplot as plt

    from helpers.report.publish import charts

    def not_drawn(fig, alt=""):
        plt.close(fig)
        return f'<img alt="{alt}">'

    report.setup_plots()
    ctx = report.build_context([REF / request.param / "records"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(charts, "figure_html", not_drawn)
        built = {n: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", sections.build(sections.get(n), ctx)._repr_html_()))
                 for n in SAID}
    return ctx, built


def test_two_gpus_slower_or_no_faster_than_one_are_said_in_words(page):
    ctx, built = page
    table = devices.scaling_table(ctx)
    said = " ".join(scaling_words.answer(table))
    for (_, _, _, inp, on), g in table.groupby(["workload", "backend", "precision", "input", "data on"]):
        one = g[g["devices"] == 1]
        for r in g[g["devices"] > 1].to_dict("records") if len(one) else []:
            ratio = r["samples/s"] / float(one["samples/s"].iloc[0])
            if ratio < 0.95:
                assert f"{int(r['devices'])} GPUs" in said and "slower than one" in said, (r["workload"], inp, on)
            elif ratio < 1.05:
                assert "no faster than one" in said, (r["workload"], inp, on)
    for line in scaling_words.answer(table):  # an efficiency on one-run figures is marked
        for eff_marks in re.findall(r"(\d\.\d\d)( [†‡§]+)? on \d", line):
            rows = table[table["efficiency"].map(scaling_words.eff_shown) == eff_marks[0]]
            if len(rows) and (rows["runs"] <= 1).all():
                assert fmt.ONE_RUN in eff_marks[1], line
    assert "slower than one" in said or "no faster than one" in said  # both references have such a case


def test_the_pages_sentences_are_true_for_it(page):
    ctx, built = page
    text = " ".join(built.values())
    assert not re.search(r"\b(\d+)–\1 runs\b", text)  # 'its 2–2 runs'
    if not (ctx.df["status"] == "skipped").any():
        assert "skipped point" not in built["speedup"]
    m = re.search(r"(\d+) published figures: (\d+) reach the throughput comparison, (\d+) the scaling section "
                  r"\(multi-GPU\), (\d+) the other figures; (\d+) cannot be compared", built["published"])
    assert m and int(m.group(1)) == sum(int(m.group(i)) for i in (2, 3, 4, 5)), m and m.group(0)
    first = re.search(r"(\d+) machine\(s\) over (\d+) lease\(s\)", built["provenance"])
    listed = re.search(r"The (\d+) lease\(s\)", built["provenance"])
    assert first and listed and first.group(2) == listed.group(1)
    if not ctx.costed["on_demand_per_source_epoch"].notna().any():
        assert "the table holds the prices" not in built["cost"]
    if not (ctx.df["device"] == "cpu").any():
        assert not re.search(r"cheapest configuration is on the GPU for \d+ of", built["cost"])
