"""The report's sections: one module each, all behind one interface, in one registry.

Each section module defines ``TITLE`` (its heading), ``LEAD`` (one sentence under it) and
``build(ctx) -> Section``: it reads only the finished report context (``helpers.report.context``),
never files, and returns its parts (tables, figures, notes) or says why it has none
(``Section.absent``). To add a section: a new module here and its name in ``ORDER``.

    from helpers.report import sections
    for s in sections.build_all(ctx):      # every registered section, in order
        display(s)                         # a Section renders itself as HTML (_repr_html_)
"""

from __future__ import annotations

import importlib
import sys
import traceback
from dataclasses import dataclass, field

from jinja2 import Environment, select_autoescape
from markupsafe import Markup

from ..fmt import html_table, note

# The registry: module names in the order the report shows them.
ORDER = [
    "overview",
    "verdict",
    "throughput",
    "speedup",
    "cost",
    "first_epoch",
    "scaling",
    "utilisation",
    "energy",
    "history",
    "backends",
    "published",
    "provenance",
]

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

    def table(self, df, empty: str = "", **kw) -> Section:
        if df is None or len(df) == 0:
            return self.note(empty) if empty else self
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


def modules() -> list:
    """The registered section modules, in order."""
    return [importlib.import_module(f"{__name__}.{n}") for n in ORDER]


def get(name: str):
    if name not in ORDER:
        raise KeyError(f"unknown report section {name!r}; known: {', '.join(ORDER)}")
    return importlib.import_module(f"{__name__}.{name}")


def build(module, ctx) -> Section:
    """One section; an error inside it becomes a visible note, never a missing report."""
    try:
        s = module.build(ctx)
    except Exception as exc:  # one broken section must not take the report down
        s = Section.absent(module, f"this section failed to build ({type(exc).__name__}: {exc}); "
                                   "please report it with the records used")
        s.details("traceback", f"<pre>{Markup.escape(traceback.format_exc()[-3000:])}</pre>")
    if not isinstance(s, Section):
        raise TypeError(f"section {_name(module)}.build returned {type(s).__name__}, not a Section")
    return s


def build_all(ctx) -> list[Section]:
    return [build(m, ctx) for m in modules()]


def toc(built: list[Section]) -> str:
    """Links to every section (those without data say so)."""
    items = "".join(f'<li><a href="#{Markup.escape(s.name)}">{Markup.escape(s.title)}</a>'
                    + ("" if s.present else " <i>(absent)</i>") + "</li>" for s in built)
    return f'<nav class="cgb-toc"><b>Sections</b><ol>{items}</ol></nav>'
