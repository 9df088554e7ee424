"""The report: records -> one tidy table -> aggregates -> sections -> one HTML page.

Layout (each module one job; sections read only the finished context):

    table.py       loading: every record under some folders into the tidy table
    aggregate.py   one row per configuration, matched CPU/GPU pairs, per-sample figures
    costs.py       prices.yaml, a machine's profile, cost per 1,000 samples and per source epoch
    published.py   the figures the source documents published
    context.py     all of the above built once: ``build_context(folders, ...) -> Context``
    sections/      one module per report section (``build(ctx) -> Section``), registry in __init__
    charts.py      one chart style (seaborn theme), faceted bar charts, inline SVG
    style.py       the one palette: a colour per backend, a mark per device (solid/pale bars, square/circle)
    fmt.py         numbers, escaped HTML tables and notes
    render.py      the executed summary notebook to self-contained HTML (nbconvert)
    index.py       the index page linking the report and every executed notebook
    point.py       the plots a workload notebook shows for its own run

In ``summary.ipynb``:

    ctx = build_context(folders, base_config=..., host_profiles=..., timeline_run=...)
    for s in sections.build_all(ctx):
        display(s)
"""

from __future__ import annotations

from helpers.report.derive.context import Context, build_context
from helpers.report.derive.costs import add_costs, check_profile, record_profiles
from helpers.report.load.assets import REPORT_CSS
from helpers.report.load.prices import PriceError, load_prices
from helpers.report.publish import sections
from helpers.report.publish.charts import setup_plots
from helpers.report.publish.index import render_index
from helpers.report.publish.point_charts import plot_point
from helpers.report.publish.render import render_html
from helpers.report.words.fmt import esc, html_table, note

__all__ = ["Context", "PriceError", "REPORT_CSS", "add_costs", "build_context", "check_profile", "esc", "html_table",
           "load_prices", "note", "plot_point", "record_profiles", "render_html", "render_index", "sections",
           "setup_plots"]
