"""The one interface every report section returns: a ``Section`` (title, lead, parts, or why absent).

    s = Section.of(__name__)               # inside a section module (TITLE, LEAD from the module)
    s.note("{} runs", n).table(frame).figure(fig)
    return s                               # or Section.absent(__name__, "why there is nothing")

Bar charts of figures carry the figures' marks (fmt.ONE_RUN, fmt.SHORT, fmt.BUSY): ``with_marks(labeller)`` ends each
bar's label with its runs, window and marks, ``at_digits(frame, value)`` writes each bar's value to the
digits its runs support, and ``mark_bars(fig)`` hatches the marked bars and adds the legend line.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from jinja2 import Environment, select_autoescape
from markupsafe import Markup

from helpers.report.derive.precision import digits
from helpers.report.load.values import isnull
from helpers.report.load.visible import visible
from helpers.report.words.fmt import BUSY, MARKS_NOTE, ONE_RUN, SHORT, html_table, marks, note, num, rounded

MARKS_PART = Markup(note("<b>Marks.</b> {}", MARKS_NOTE))  # one paragraph: the same object in every section
FOLD_ROWS = 16  # tables longer than this are folded (a click opens them)
FOLD_COLUMNS = 7  # columns in view; a table's further columns fold into a "more" cell per row (the CSVs hold all)

_ENV = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
# A section opens with what it found (``finding``, generated from the records); what it shows and how it is
# measured (``LEAD``) is one click away. A section with nothing to show is one line: its title and why.
_TEMPLATE = _ENV.from_string(
    '{% if s.reason %}<section class="cgb-section cgb-folded" id="{{ s.name }}">'
    '<p class="cgb-absent"><b>{{ s.title }}</b>: not shown: {{ s.reason }}</p>'
    "{% for part in s.parts %}{{ part }}{% endfor %}</section>"  # a failed section's traceback, folded
    '{% else %}<section class="cgb-section" id="{{ s.name }}"><h2>{{ s.title }}</h2>'
    '{% if s.finding %}<p class="cgb-finding">{{ s.finding }}</p>{% endif %}'
    '{% if s.lead %}<details class="cgb-about"><summary>What this shows and how</summary>'
    '<p class="lead">{{ s.lead }}</p></details>{% endif %}'
    "{% for part in s.parts %}{{ part }}{% endfor %}</section>{% endif %}")


@dataclass
class Section:
    """A titled part of the report: a lead sentence and HTML parts, or the reason it has none."""

    name: str
    title: str
    lead: str = ""
    parts: list = field(default_factory=list)
    reason: str | None = None  # set when the section's data is absent
    finding: object = ""  # what the section found in these records (generated; markup from ``found``)
    short_name: str = ""  # the section's name in the one-line contents (the module's ``NAV``)

    @classmethod
    def of(cls, module) -> Section:
        """An empty section of ``module`` (a section module or its ``__name__``)."""
        module = sys.modules[module] if isinstance(module, str) else module
        return cls(name=_name(module), title=module.TITLE, lead=module.LEAD, short_name=getattr(module, "NAV", ""))

    @classmethod
    def absent(cls, module, reason: str) -> Section:
        s = cls.of(module)
        s.reason = reason
        return s

    @property
    def short(self) -> str:
        """The module's ``NAV`` name, else the title's words before its colon: for the one-line contents."""
        if self.short_name:
            return self.short_name
        return " ".join(self.title.split(":")[0].split(" (")[0].split()[:3])

    @property
    def present(self) -> bool:
        return self.reason is None

    def found(self, template: str, *values) -> Section:
        """The section's opening sentence: what it found for these records (``template`` is trusted markup with
        ``{}`` slots; every value is escaped)."""
        from helpers.report.words.fmt import esc

        self.finding = Markup(template.format(*(esc(v) for v in values)))
        return self

    def html(self, markup: str) -> Section:
        """Trusted markup (built with ``fmt``'s escaping helpers)."""
        self.parts.append(Markup(markup))
        return self

    def note(self, template: str, *values, kind: str = "note") -> Section:
        return self.html(note(template, *values, kind=kind))

    def marks_note(self) -> Section:
        """The marks' explanation (fmt.MARKS_NOTE); ``sections.build_all`` keeps it in the first section the reader
        meets it in and drops it from the others: each mark is explained once."""
        self.parts.append(MARKS_PART)
        return self

    def heading(self, text: str) -> Section:
        return self.html(f"<h3>{Markup.escape(text)}</h3>")

    def table(self, df, empty: str = "", caption: str = "the table", **kw) -> Section:
        """A table; one of more than ``FOLD_ROWS`` rows is folded (a click opens it), so the page reads
        without endless scrolling."""
        if df is None or len(df) == 0:
            return self.note(empty) if empty else self
        kw.setdefault("fold_after", FOLD_COLUMNS)
        if len(df) > FOLD_ROWS:
            return self.details(f"{caption[0].upper()}{caption[1:]}: {len(df)} rows (click to open)",
                                html_table(df, **kw))
        return self.html(html_table(df, **kw))

    def figure(self, fig, alt: str = "", fold: str = "") -> Section:
        """A chart; with ``fold``, behind that summary line (a click opens it): a chart that repeats what the
        section's sentence and tables already say, kept for the reader who wants it."""
        from helpers.report.publish.charts import figure_html

        if fig is not None:
            if fold:
                return self.details(fold, figure_html(fig, alt or self.title))
            self.html(figure_html(fig, alt or self.title))
        return self

    def details(self, summary: str, inner: str) -> Section:
        return self.html(f"<details><summary>{Markup.escape(summary)}</summary>{inner}</details>")

    def _repr_html_(self) -> str:
        return visible(_TEMPLATE.render(s=self))  # no raw bidi control, zero-width character or surrogate


def _name(module) -> str:
    return module.__name__.rsplit(".", 1)[-1]


def with_marks(labeller, runs: str = "n_runs", short: str = "short_window", brief: bool = False):
    """``labeller`` whose labels end with what each figure rests on and its marks: '... (n=1, 0.72 s) †‡'; with
    ``brief``, the marks alone ('... †‡': a chart's label; the tables say the runs and windows)."""
    def label(sub) -> list[str]:
        out = []
        for text, r in zip(labeller(sub), sub.to_dict("records")):
            n, w = r.get(runs), r.get("steady_s")
            rest = ("n=?" if isnull(n) else f"n={int(n)}") + ("" if isnull(w) else f", {num(w, 2)} s")
            m = marks(n, r.get(short), r.get("host_busy"))
            out.append(f"{text}{' ' + m if m else ''}" if brief else f"{text} ({rest}){' ' + m if m else ''}")
        return out
    return label


def config_labels(frame, by: str = "workload") -> list[str]:
    """Each row's configuration as a table's column names it beside its machine, batch and threads columns (and
    the epoch's samples): device · backend, then what differs between the rows of its workload (precision, jit,
    knobs...), as the charts' labels do (``labels.labels``)."""
    from helpers.report.words.labels import labels

    rows = frame.reset_index(drop=True)
    beside = ("machine", "batch_size", "threads", "n_train")  # columns of their own in the tables
    out = [""] * len(rows)
    for _, g in rows.groupby(by, sort=False, dropna=False):
        for i, text in zip(g.index, labels(g.drop(columns=[c for c in beside if c in g]))):
            out[i] = text
    return out


def at_digits(frame, value: str, unit: str = "", digits_col: str | None = None):
    """A bar chart's ``annotate``: each bar's value to the significant digits of its own figure."""
    texts = {}
    for r in frame.to_dict("records"):
        if not isnull(r.get(value)):
            d = int(r[digits_col]) if digits_col else digits(r)
            texts[float(r[value])] = rounded(r[value], d) + unit
    return lambda v: texts.get(float(v), num(v) + unit)


def mark_bars(fig):
    """Hatch the bars whose label carries a mark (dots: one run; crosses: a short window) and add a legend
    line under the chart; the figure is returned."""
    if fig is None:
        return fig
    from matplotlib.container import BarContainer
    from matplotlib.patches import Patch

    seen = set()
    for ax in fig.axes:
        labels = [t.get_text() for t in ax.get_yticklabels()]
        bars = [b for c in ax.containers if isinstance(c, BarContainer) for b in c.patches]
        for bar, text in zip(bars, labels):
            tail = text.rsplit(")", 1)[-1]
            hatch = "".join(h for m, h in ((ONE_RUN, "..."), (SHORT, "xx"), (BUSY, "//")) if m in tail)
            if hatch:
                bar.set_hatch((bar.get_hatch() or "") + hatch)
                seen |= {m for m in (ONE_RUN, SHORT, BUSY) if m in tail}
    items = [(ONE_RUN, "...", f"{ONE_RUN} one run: no between-run interval"),
             (SHORT, "xx", f"{SHORT} steady window under min_steady_s: fewer digits"),
             (BUSY, "//", f"{BUSY} host busy: every run shared the cores")]
    handles = [Patch(facecolor="#999999", edgecolor="white", hatch=h, label=t) for m, h, t in items if m in seen]
    if handles:
        fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.0, 0.0), ncols=len(handles), fontsize=8,
                   frameon=False)
    return fig
