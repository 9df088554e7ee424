"""The report's sections: one module each, all behind one interface, in one registry.

Each section module defines ``TITLE`` (its heading), ``LEAD`` (one sentence under it) and
``build(ctx) -> Section``: it reads only the finished report context (``helpers.report.derive.context``),
never files, and returns its parts (tables, figures, notes) or says why it has none
(``Section.absent``). To add a section: a new module here and its name in ``ORDER``.

    from helpers.report.publish import sections
    for s in sections.build_all(ctx):      # every registered section, in order
        display(s)                         # a Section renders itself as HTML (_repr_html_)
"""

from __future__ import annotations

import importlib
import traceback

from markupsafe import Markup

from helpers.report.publish.sections.base import Section

# The registry: module names in the order the report shows them.
# The answer first, the evidence after it, the method last ("Methods and provenance": from ``methods`` on).
ORDER = [
    "verdict",
    "speedup",
    "throughput",
    "cost",
    "first_epoch",
    "scaling",
    "utilisation",
    "limit",
    "breakdown",
    "energy",
    "history",
    "backends",
    "published",
    "methods",
    "overview",
    "provenance",
]
METHODS_FROM = "methods"  # the sections from this one on form the report's last part

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
        _close_figures()  # its half-drawn figures: the kernel would draw them when the cell ends, outside this handler
        s = Section.absent(module, f"this section failed to build ({type(exc).__name__}: {exc}); "
                                   "please report it with the records used")
        s.details("traceback", f"<pre>{Markup.escape(traceback.format_exc()[-3000:])}</pre>")
    if not isinstance(s, Section):
        raise TypeError(f"section {_name(module)}.build returned {type(s).__name__}, not a Section")
    return s


def _close_figures() -> None:
    """Close every open matplotlib figure (a section's charts are closed once drawn: an open one is a failed
    section's), where matplotlib is loaded."""
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        try:
            plt.close("all")
        except Exception:  # noqa: BLE001 - closing must not fail the report either
            pass


def order(ctx) -> list[str]:
    """The sections' names in the order this report shows them: ``ORDER``, but where the records answer how
    samples/s scale with the GPU count rather than CPU against GPU (``devices.leads``), the scaling section first.
    Every report leads with the question its records can answer."""
    from helpers.report.derive.devices import leads

    try:
        first = leads(ctx)
    except Exception:  # noqa: BLE001 - the default order, never a missing report
        first = False
    return ["scaling", *(n for n in ORDER if n != "scaling")] if first else list(ORDER)


def build_all(ctx) -> list[Section]:
    """Every section in this report's order; the marks' explanation (``Section.marks_note``) kept in the first
    section that has it only."""
    from helpers.report.publish.sections.base import MARKS_PART

    built, explained = [build(get(n), ctx) for n in order(ctx)], False
    for s in built:
        if MARKS_PART in s.parts and s.present:
            if explained:
                s.parts = [p for p in s.parts if p != MARKS_PART]
            explained = True
    return built


def toc(built: list[Section]) -> str:
    """One line of links to the sections that have something to show (short names), the methods last."""
    items = " ".join(f'<a href="#{Markup.escape(s.name)}">{Markup.escape(s.short)}</a>' for s in built if s.present)
    return f'<nav class="cgb-toc">Sections: {items}</nav>'
