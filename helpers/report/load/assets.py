"""The report's own files it reads: the style sheet (``REPORT_CSS``: helpers/report/publish/templates/report.css),
inline, so that the page needs no file beside it."""

from __future__ import annotations

from pathlib import Path

# the report's style sheet (helpers/report/publish/templates/report.css), inline: the page needs no file beside it
_CSS = Path(__file__).parent.parent / "publish" / "templates" / "report.css"
REPORT_CSS = f"<style>\n{_CSS.read_text(encoding='utf-8')}</style>"
