"""Formatting for the report: numbers for people, escaped HTML tables and notes, paths as shown.

Text that comes from records is HTML-escaped wherever it is shown (``html_table``, ``note``, ``esc``).

    num(14822.3)                      -> '14,822'
    spread_text(1.23, 1.1, 1.4)       -> '1.23 [1.1–1.4]'
    html_table(frame)                 -> '<div ...><table class="cgb">...'
    note("{} records", n, kind="warn")
"""

from __future__ import annotations

import html
from pathlib import Path

from ..paths import PROJECT_ROOT

MAX_ROWS = 80  # rows per HTML table; the rest is said in a line

REPORT_CSS = """<style>
table.cgb{border-collapse:collapse;font-size:12px;margin:4px 0 12px 0}
table.cgb td,table.cgb th{border:1px solid #ddd;padding:2px 6px;text-align:left !important;vertical-align:top}
table.cgb th{background:#f2f2f2}
section.cgb-section{margin:0 0 28px 0}
section.cgb-section p.lead{color:#333;max-width:70em}
p.cgb-absent{color:#8a5a00}
nav.cgb-toc{font-size:13px;margin:6px 0 18px 0}
img.cgb-fig{max-width:100%;height:auto;display:block;margin:4px 0 10px 0}
</style>"""


def esc(value) -> str:
    """HTML-escape anything shown in the report that came from a record."""
    return html.escape("" if value is None else str(value))


def isnull(v) -> bool:
    """None or NaN (pandas' missing values included); False for lists, dicts and strings."""
    try:
        import pandas as pd

        return v is None or (not isinstance(v, (list, dict, str)) and bool(pd.isna(v)))
    except (TypeError, ValueError):
        return False


def shown_path(path) -> str:
    """A folder as a report shows it: relative to the project (a published report names no machine's
    paths), else under ``~``, else as given."""
    p = Path(path).resolve()
    for base, prefix in ((PROJECT_ROOT.resolve(), ""), (Path.home().resolve(), "~/")):
        if p.is_relative_to(base):
            return prefix + (p.relative_to(base).as_posix() or ".")
    return str(path)


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
    if v != 0 and abs(v) < 1e-3:
        return f"{v:.{digits}g}"
    return f"{v:.{digits}g}" if abs(v) >= 1 else f"{v:.{digits}f}".rstrip("0").rstrip(".")


def spread_text(med, lo, hi, digits: int = 3) -> str:
    """'1.23 [1.10–1.40]' (median [low–high]); '' when the median is missing."""
    if isnull(med):
        return ""
    m = num(med, digits)
    if isnull(lo) or isnull(hi) or (abs(hi - lo) <= 1e-12 * max(abs(med), 1)):
        return m
    return f"{m} [{num(lo, digits)}–{num(hi, digits)}]"


def html_table(df, floatfmt: str | None = None, max_rows: int | None = MAX_ROWS) -> str:
    """An HTML table with every cell escaped (text from records is never trusted as markup).

    Floats: ``floatfmt`` if given, else 4 significant digits with thousands separated. Rows past
    ``max_rows`` are left out and counted in a line under the table."""

    def fmt(v):
        if isnull(v):
            return ""
        if isinstance(v, float):
            return html.escape(floatfmt.format(v) if floatfmt else num(v, 4))
        return html.escape(str(v))

    if df is None or len(df.columns) == 0:
        return note("(nothing to show)")
    extra = ""
    if max_rows is not None and len(df) > max_rows:
        extra = note("… {} more rows not shown here (the summary notebook's <code>context</code> object holds "
                     "every row: <code>ctx.summary</code>).", len(df) - max_rows)
        df = df.head(max_rows)
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = "".join("<tr>" + "".join(f"<td>{fmt(v)}</td>" for v in row) + "</tr>"
                   for row in df.itertuples(index=False))
    return (f'<div style="overflow-x:auto"><table class="cgb"><thead><tr>{head}</tr></thead>'
            f"<tbody>{rows}</tbody></table></div>{extra}")
