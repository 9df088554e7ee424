"""The report: records -> one tidy table -> aggregates -> sections -> one HTML page, in four stages, a folder each
(docs/architecture.md; a stage imports from its own folder or an earlier one's, never a later one's):

    load/      the only stage that reads: records (``records.load_rows``, ``table``), the bundled reference, prices,
               the ladder's grids, published figures, the style sheet, the host rendering the report
    derive/    tables of figures: ``context.build_context(folders, ...) -> Context`` (everything built once),
               aggregates, pairs, the verdict's best over best, costs, predictions, GPU counts
    words/     every string that holds a figure: ``fmt`` (each figure formatted once), marks, labels, sentences
    publish/   sections (``sections/``: ``build(ctx) -> Section``, registry in its __init__), charts, the CSVs, the
               page (``render``), the index and its folder

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
