"""Formatting for the report: numbers for people, escaped HTML tables and notes; every figure a page shows becomes a
string here, once (tests/test_architecture.py: no format spec in derive/ or publish/).

Text that comes from records is HTML-escaped wherever it is shown (``html_table``, ``note``, ``esc``).

    num(14822.3)                      -> '14,822'
    spread_text(1.23, 1.1, 1.4)       -> '1.23 [1.1–1.4]'
    sig_digits(209358, n_runs=1, short=True)            -> 2   (derive/precision.py: the rounding rule)
    figure_text(209358, None, None, 1, 0.72, 2.0)       -> '210,000 †‡ (1 run, window 0.72 s < 2 s)'
    share(0.416), percent(41.6), whole(22500.4)         -> '42%', '42%', '22,500'
    html_table(frame)                 -> '<div ...><table class="cgb">...'
    note("{} records", n, kind="warn")
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from helpers.report.derive.precision import digits, sig_digits
from helpers.report.derive.protocol import MIN_STEADY_S
from helpers.report.load import columns as C
from helpers.report.load.values import isnull, yes
from helpers.report.load.visible import shown_path, visible  # noqa: F401 - fmt's API: text made safe, paths as shown

MAX_ROWS = 80  # rows per HTML table; the rest is said in a line
_NUMBER = re.compile(r"[-−+$]?\d[\d,.]*(\s?(×|%|s|ms|min|h|days|J|W|kWh|GB)(?!\w)|\s?[\[(†‡]|\s[·/]\s\d|$)")  # right
# table cells: up to WRAP_AT characters stay on one line; longer text wraps in a column of 40-48 em (about 75
# characters a line at 12 px); text past FOLD_AT (under three such lines) is folded behind its first words
WRAP_AT, FOLD_AT, FOLD_HEAD = 60, 200, 90
WRAP_NARROW = WRAP_AT  # no narrow wrap: a squeezed 8-em column made rows of 4 lines (the first screen's bound: 3)
FOLD_WIDE = 9  # a table of more columns than this keeps 7 in view, the rest in its "more" cell (1,400 px)
WRAP_HEAD = 24  # column headers up to this many characters stay on one line; longer ones wrap in 12-20 em

# Marks on a figure, in every table and chart that shows it (never a precision the runs do not have)
ONE_RUN = "†"  # the figure rests on one run: there is no between-run spread to judge it by
SHORT = "‡"  # its steady-state window (median run) is under the run's min_steady_s (MIN_STEADY_S when unrecorded)
BUSY = "§"  # every run it rests on was measured while another process used the host's cores (marks.HOST_BUSY)
MARKS_SHORT = (f"{ONE_RUN} one run, {SHORT} steady window under min_steady_s (the seconds a figure needs), {BUSY} host "
               "busy (measured beside another process's load)")  # where a mark is first met: one line
NOT_LEARNED = "✗"  # the configuration did not learn (helpers.report.derive.learning)
INTERVALS = {"range": "range", "bootstrap": "bootstrap 95%"}  # a between-run interval's kind, as shown
MARKS_NOTE = (f"{ONE_RUN} one run: no between-run spread, the figure is shown to at most 3 significant digits. "
              f"{SHORT} steady-state window under min_steady_s ({MIN_STEADY_S:g} s for records without it): at most "
              f"2 digits for one run, 3 for several. {BUSY} host busy: every run of the figure measured while another "
              f"process used the cores (a quiet run of it would replace them). {NOT_LEARNED} did not learn (the "
              "loss-and-accuracy section says why): never the best, never paired. Brackets: the between-run interval "
              "of the median (range of 2–4 runs, bootstrap 95% from 5); n = runs, then the median run's steady window "
              "in seconds. The within-run epoch spread (IQR, the interquartile range: the middle half of the steady "
              "epochs) is shown apart and is not the figure's uncertainty.")


def esc(value) -> str:
    """HTML-escape anything shown in the report that came from a record (made ``visible`` first)."""
    return html.escape(visible("" if value is None else str(value)))


def short_path(p) -> str:
    """The last three parts of a record's path (enough to find it, names no machine's folders)."""
    if isnull(p):
        return ""
    parts = Path(str(p)).parts
    return str(Path(*parts[-3:])) if len(parts) > 3 else str(p)


def note(template: str, *values, kind: str = "note") -> str:
    """A paragraph: ``template`` is trusted markup with ``{}`` slots; every value is escaped."""
    colours = {"note": "#555", "warn": "#8a5a00", "ok": "#215f21"}
    body = template.format(*(esc(v) for v in values))
    return f'<p style="color:{colours.get(kind, "#555")}">{body}</p>'


def num(v, digits: int = 3) -> str:
    """A number for people: 3 significant digits, thousands separated (14,822 rather than 1.48e+04)."""
    if isnull(v):
        return ""
    if abs(v) >= 10 ** digits:
        return f"{v:,.0f}"
    if v != 0 and abs(v) < 1e-3:  # positional, never a power of ten: '0.000011'
        return rounded(v, digits).rstrip("0").rstrip(".")
    if abs(v) >= 1:
        text = f"{v:.{digits}g}"
        return f"{float(text):,.0f}" if "e" in text else text  # 999.6 at 3 digits: '1,000', never '1e+03'
    return f"{v:.{digits}f}".rstrip("0").rstrip(".")


def mfu_shown(v) -> str:
    """MFU (a fraction) as percent, without the sign, as every part of the report shows it: 2 significant digits,
    positional ('0.000011', '45'); '' when unknown."""
    return "" if isnull(v) else rounded(v * 100, 2)


def spread_text(med, lo, hi, digits: int = 3) -> str:
    """'1.23 [1.10–1.40]' (median [low–high]); '' when the median is missing."""
    if isnull(med):
        return ""
    m = num(med, digits)
    if isnull(lo) or isnull(hi) or (abs(hi - lo) <= 1e-12 * max(abs(med), 1)):
        return m
    return f"{m} [{num(lo, digits)}–{num(hi, digits)}]"


def rounded(v, digits: int = 3) -> str:
    """``v`` rounded half up to ``digits`` significant digits, thousands separated: rounded(209358, 2) ->
    '210,000', rounded(625, 2) -> '630'."""
    import math
    from decimal import ROUND_HALF_UP, Decimal

    if isnull(v):
        return ""
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    step = Decimal(1).scaleb(math.floor(math.log10(abs(v))) - digits + 1)
    q = float(Decimal(repr(float(v))).quantize(step, rounding=ROUND_HALF_UP))
    if q == 0:
        return "0"
    return f"{q:,.{max(0, digits - 1 - math.floor(math.log10(abs(q))))}f}"


def marks(n_runs, short, busy=False, learned=None) -> str:
    """'†' one run, '‡' a window under min_steady_s, '§' every run on a busy host, '✗' did not learn; '' none."""
    flags = ((ONE_RUN, not isnull(n_runs) and n_runs <= 1), (SHORT, yes(short)), (BUSY, yes(busy)),
             (NOT_LEARNED, learned == "no"))
    return "".join(m for m, on in flags if on)


def row_marks(r, suffix: str = "") -> str:
    """The marks of a configuration's figure (a summary row, or one side of a pair: ``suffix``), or of a pair's
    speedup (the fewer runs, either window short, either side busy): the one place marks are read from a row."""
    return marks(*(r.get(f"{k}{suffix}") for k in ("n_runs", "short_window", "host_busy", "learned")))


def rests_on(n_runs, window_s=None, min_s=None, kind: str = "") -> str:
    """What a figure rests on: '1 run, window 0.72 s < 2 s', 'n=4, range; 3.1 s', 'n=6, bootstrap 95%; 5 s'."""
    runs = "1 run" if not isnull(n_runs) and n_runs <= 1 else (f"n={int(n_runs)}" if not isnull(n_runs) else "")
    if kind in INTERVALS and not (isnull(n_runs) or n_runs <= 1):
        runs += f", {INTERVALS[kind]}"
    if isnull(window_s):
        return runs
    lim = MIN_STEADY_S if isnull(min_s) else min_s
    win = f"window {num(window_s, 2)} s < {num(lim)} s" if window_s < lim else f"{num(window_s, 2)} s"
    return f"{runs}{', ' if runs.endswith('run') else '; '}{win}" if runs else win


def figure_text(med, lo, hi, n_runs, window_s=None, min_s=None, kind: str = "", digits: int | None = None,
                busy=False) -> str:
    """A figure as every table shows it: rounded by ``sig_digits``, its between-run interval in brackets,
    its marks, and what it rests on: '209,000 [205,000–212,000] (n=4, range; 3.1 s)',
    '210,000 †‡ (1 run, window 0.72 s < 2 s)'. '' when the figure is missing."""
    if isnull(med):
        return ""
    lim = MIN_STEADY_S if isnull(min_s) else min_s
    short = not isnull(window_s) and window_s < lim
    d = digits or sig_digits(med, lo, hi, n_runs, short)
    text = rounded(med, d)
    if not (isnull(n_runs) or n_runs <= 1 or isnull(lo) or isnull(hi)):
        text += f" [{rounded(lo, d)}–{rounded(hi, d)}]"
    m = marks(n_runs, short, busy)
    return f"{text}{' ' + m if m else ''} ({rests_on(n_runs, window_s, min_s, kind)})"


# ---- the figures of a configuration (a row of aggregate.summarise, or one side of a matched pair: ``suffix``)


def figure(r, scale: float = 1.0, suffix: str = "") -> str:
    """A configuration's samples/s (× ``scale``) as tables show it: rounded, between-run interval, marks,
    runs and window: '210,000 †‡ (1 run, window 0.72 s < 2 s)'."""
    def g(k):
        v = r.get(f"{k}{suffix}")
        return float("nan") if isnull(v) else v

    return figure_text(g(C.SAMPLES_PER_S) * scale, g("sps_lo") * scale, g("sps_hi") * scale, g("n_runs"),
                       g("steady_s"), g("min_steady_s"), r.get(f"sps_interval{suffix}") or "", digits(r, suffix),
                       r.get(f"host_busy{suffix}"))


def shown(v, r, mark: bool = True, suffix: str = "", unit: str = "") -> str:
    """A figure derived from configuration ``r`` (seconds per epoch, a cost...): ``r``'s digits and marks."""
    if isnull(v):
        return ""
    return marked(rounded(v, digits(r, suffix)) + unit, row_marks(r, suffix) if mark else "")


def marked(text: str, m: str) -> str:
    """``text`` with the marks ``m`` of the figures it derives from ('4.4 min †§'): the one place a derived figure's
    text and its marks are joined (tables, sentences, chart labels)."""
    return f"{text} {m}" if text and m else text


def union_marks(*ms: str) -> str:
    """The marks of a figure derived from several (a ratio to a base): every symbol any of them carries, in the
    report's order."""
    return "".join(sym for sym in (ONE_RUN, SHORT, BUSY) if any(sym in (m or "") for m in ms))


def speedup_shown(p) -> str:
    """A speedup (a matched pair's or a verdict row's: ``speedup`` and its ``digits``, aggregate.add_speedup) as
    every part of the report shows it (sentences, chart labels, tables, verdict.csv): '24×', '5.60×'."""
    return f"{rounded(p['speedup'], int(p['digits']))}×"


def sps_shown(r, suffix: str = "") -> str:
    """A configuration's samples/s as every part of the report shows it, to the digits its runs support."""
    return rounded(r.get(f"samples_per_s{suffix}"), digits(r, suffix))


def speedup_text(p) -> str:
    """A matched pair's speedup (aggregate.matched_pairs): '51 †‡ (1 run: no interval)',
    '10.6 [9.09–12.5] (between runs: range, n=2/2 GPU/CPU)'."""
    d = int(p["digits"])
    text = rounded(p["speedup"], d)
    if p["interval"] != "none":
        text += f" [{rounded(p['speedup_lo'], d)}–{rounded(p['speedup_hi'], d)}]"
    m = row_marks(p)
    how = (f"between runs: {INTERVALS[p['interval']]}, n={int(p['n_runs_gpu'])}/{int(p['n_runs_cpu'])} GPU/CPU"
           if p["interval"] != "none" else "1 run: no interval")
    return f"{text}{' ' + m if m else ''} ({how})"


def html_table(df, floatfmt: str | None = None, max_rows: int | None = MAX_ROWS, fold_after: int | None = None) -> str:
    """An HTML table with every cell escaped (text from records is never trusted as markup).

    Floats: ``floatfmt`` if given, else 3 significant digits (the most one run supports) with thousands separated.
    Rows past ``max_rows`` are left out and counted in a line under the table. With ``fold_after`` (and more columns
    than one over it), the columns past the first ``fold_after`` are one "more" cell per row, folded (name: value)."""

    def fmt(v):
        if isnull(v):
            return ""
        if isinstance(v, float):
            return html.escape(floatfmt.format(v) if floatfmt else num(v))
        return esc(v)

    def cell(v) -> str:
        text = fmt(v)
        if len(text) <= WRAP_AT:
            kind = " ".join(["cgb-num"] * bool(_NUMBER.match(text)) + ["cgb-wrap"] * (len(text) > WRAP_NARROW))
            return f'<td class="{kind}">{text}</td>' if kind else f"<td>{text}</td>"
        if len(str(v)) <= FOLD_AT:  # a sentence: wrapped in a bounded column, at most three lines
            return f'<td class="cgb-text">{text}</td>'
        head = esc(str(v)[:FOLD_HEAD].rsplit(" ", 1)[0]) + " …"
        return f'<td class="cgb-text"><details><summary>{head}</summary>{text}</details></td>'

    if df is None or len(df.columns) == 0:
        return note("(nothing to show)")
    extra = ""
    if max_rows is not None and len(df) > max_rows:
        extra = note("… {} more rows not shown here; results.csv and configurations.csv beside this report hold "
                     "every run and every configuration.", len(df) - max_rows)
        df = df.head(max_rows)
    fold_after = fold_after or (7 if len(df.columns) > FOLD_WIDE else None)
    k = fold_after if fold_after and len(df.columns) > fold_after + 1 else len(df.columns)
    head = "".join(f"<th>{esc(c)}</th>" if len(str(c)) <= WRAP_HEAD else
                   f'<th class="cgb-text">{esc(c)}</th>' for c in df.columns[:k])

    def more(row) -> str:  # the folded columns of one row: a click away, never the page's width
        items = "".join(f"<dt>{esc(c)}</dt><dd>{fmt(v)}</dd>" for c, v in zip(df.columns[k:], row[k:]) if fmt(v))
        return f'<td class="cgb-more"><details><summary>{len(row) - k} more</summary><dl>{items}</dl></details></td>'

    head += "<th>more</th>" if k < len(df.columns) else ""
    rows = "".join("<tr>" + "".join(cell(v) for v in row[:k]) + (more(row) if k < len(df.columns) else "") + "</tr>"
                   for row in df.itertuples(index=False))
    return (f'<div class="cgb-scroll" style="overflow-x:auto"><table class="cgb"><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>{extra}")


# Numbers in text: the one place a format spec writes a figure (tests/test_architecture.py checks that none is
# written in derive/ or publish/); each gives the string the report has always written.
def share(v) -> str:
    """A fraction as a whole percent: 0.416 -> '42%'."""
    return f"{v:.0%}"


def percent(v, missing: str = "") -> str:
    """A value in percent, whole: 41.6 -> '42%'; ``missing`` for none."""
    return missing if isnull(v) else f"{v:.0f}%"


def whole(v) -> str:
    """A count or amount rounded to a whole number, thousands separated: 22500.4 -> '22,500'."""
    return f"{v:,.0f}"


def count(n: int) -> str:
    """An integer, thousands separated: 50000 -> '50,000'."""
    return f"{n:,}"


def plain(v) -> str:
    """A number as Python's shortest general form writes it: 2.0 -> '2', 0.25 -> '0.25' (batch sizes, axis ticks)."""
    return f"{v:g}"


def fixed(v, places: int = 2) -> str:
    """A number to ``places`` decimals: fixed(0.8412) -> '0.84'."""
    return f"{v:.{places}f}"


def stable(v) -> str:
    """A number to 6 significant digits: written for machines (a CSV cell, a tick), the same inputs write alike."""
    return f"{v:.6g}"
