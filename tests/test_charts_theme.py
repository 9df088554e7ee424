"""The report's chart theme is seaborn's, written out (``charts.THEME``: importing seaborn cost every report 1.5 s):
the values held to what ``seaborn.set_theme`` sets, so that a seaborn upgrade that changes its theme shows here."""

import matplotlib as mpl
import pytest

from helpers.report.publish import charts

# seaborn registers its colormaps and makes "rocket" the default one; no chart of the report draws a colormap
NOT_TAKEN = {"image.cmap"}


@pytest.fixture
def defaults():
    with mpl.rc_context():
        mpl.rcdefaults()
        yield dict(mpl.rcParams)


def _changed(before: dict) -> dict:
    return {k: v for k, v in mpl.rcParams.items() if v != before.get(k)}


def test_the_written_out_theme_is_seaborns(defaults):
    sns = pytest.importorskip("seaborn")
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.8)
    seaborns = _changed(defaults)
    mpl.rcdefaults()
    charts.setup_plots()
    ours = _changed(defaults)
    # what the report sets beyond the theme, on purpose (the titles at 9 pt, left, at the axes' top)
    own = {"text.parse_math", "figure.dpi", "savefig.dpi", "figure.max_open_warning", "axes.titlelocation",
           "axes.titley", "axes.titlesize"}
    assert seaborns.keys() - ours.keys() == NOT_TAKEN
    assert ours.keys() - seaborns.keys() <= own
    assert {k: v for k, v in seaborns.items() if k not in NOT_TAKEN | own} == {k: v for k, v in ours.items()
                                                                              if k not in own}


def test_the_one_letter_colours_are_seaborns():
    from matplotlib.colors import to_hex

    sns = pytest.importorskip("seaborn")
    try:
        sns.set_theme(style="whitegrid", context="notebook", font_scale=0.8)
        seaborns = {c: to_hex(c) for c in "bgrmyck"}
        sns.set_color_codes("reset")
        assert {c: to_hex(c) for c in "bgrmyck"} != seaborns
        charts.setup_plots()
        assert {c: to_hex(c) for c in "bgrmyck"} == seaborns
    finally:
        mpl.rcdefaults()


def test_setting_up_the_charts_imports_no_seaborn():
    import subprocess
    import sys

    code = ("import sys; from helpers.report.publish import charts; charts.setup_plots();"
            " print('seaborn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
