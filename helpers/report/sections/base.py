"""The one interface every report section returns: a ``Section`` (title, lead, parts, or why absent).

    s = Section.of(__name__)               # inside a section module (TITLE, LEAD from the module)
    s.note("{} runs", n).table(frame).figure(fig)
    return s                               # or Section.absent(__name__, "why there is nothing")
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from jinja2 import Environment, select_autoescape
from markupsafe import Markup

from ..fmt import html_table, note

FOLD_ROWS = 25  # tables longer than this are folded

_ENV = Environment(autoescape=select_autoescape(default=True, default_for_string=True))
_TEMPLATE = _ENV.from_string(
    '<section class="cgb-section" id="{{ s.name }}"><h2>{{ s.title }}</h2>'
    '{% if s.lead %}<p class="lead">{{ s.lead }}</p>{% endif %}'
    '{% if s.reason %}<p class="cgb-absent">Not shown: {{ s.reason }}</p>{% endif %}'
    "{% for part in s.parts %}{{ part }}{% endfor %}</section>")


@dataclass
class Section:
    """A titled part of the report: a lead sentence and HTML parts, or the reason it has none."""

    name: str
    title: str
    lead: str = ""
    parts: list = field(default_factory=list)
    reason: str | None = None  # set when the section's data is absent

    @classmethod
    def of(cls, module) -> Section:
        """An empty section of ``module`` (a section module or its ``__name__``)."""
        module = sys.modules[module] if isinstance(module, str) else module
        return cls(name=_name(module), title=module.TITLE, lead=module.LEAD)

    @classmethod
    def absent(cls, module, reason: str) -> Section:
        s = cls.of(module)
        s.reason = reason
        return s

    @property
    def present(self) -> bool:
        return self.reason is None

    def html(self, markup: str) -> Section:
        """Trusted markup (built with ``fmt``'s escaping helpers)."""
        self.parts.append(Markup(markup))
        return self

    def note(self, template: str, *values, kind: str = "note") -> Section:
        return self.html(note(template, *values, kind=kind))

    def heading(self, text: str) -> Section:
        return self.html(f"<h3>{Markup.escape(text)}</h3>")

    def table(self, df, empty: str = "", caption: str = "the table", **kw) -> Section:
        """A table; one of more than ``FOLD_ROWS`` rows is folded (a click opens it), so the page reads
        without endless scrolling."""
        if df is None or len(df) == 0:
            return self.note(empty) if empty else self
        if len(df) > FOLD_ROWS:
            return self.details(f"{caption[0].upper()}{caption[1:]}: {len(df)} rows (click to open)",
                                html_table(df, **kw))
        return self.html(html_table(df, **kw))

    def figure(self, fig, alt: str = "") -> Section:
        from ..charts import figure_html

        if fig is not None:
            self.html(figure_html(fig, alt or self.title))
        return self

    def details(self, summary: str, inner: str) -> Section:
        return self.html(f"<details><summary>{Markup.escape(summary)}</summary>{inner}</details>")

    def _repr_html_(self) -> str:
        return _TEMPLATE.render(s=self)


def _name(module) -> str:
    return module.__name__.rsplit(".", 1)[-1]
