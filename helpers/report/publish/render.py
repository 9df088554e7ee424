"""Rendering: the executed summary notebook (one output per section) to one self-contained HTML page.

    render_html(Path("outputs/runs/<time>/summary.ipynb"), Path("outputs/report.html"))
"""

from __future__ import annotations

import re
from pathlib import Path

_EXTERNAL_SCRIPT = re.compile(r"<script[^>]*\bsrc=[\"']https?://[^>]*>\s*</script>", re.IGNORECASE)
DEV_TAG = "dev-note"  # summary.ipynb's cells for developers: kept out of report.html
_MATHJAX_CONFIG = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.DOTALL)


def banner_html(text: str) -> str:
    """The report's banner (the summary notebook's ``banner``: a run not ended says partial), escaped; '' for none."""
    if not text:
        return ""
    from markupsafe import escape

    return (f'<div class="report-banner" role="status" style="border:2px solid #b8860b;background:#fff8dc;'
            f'padding:0.5em 1em;margin:0.5em 0;font-weight:bold">{escape(text)}</div>')


def make_self_contained(page: str) -> str:
    """Drop the template's CDN scripts (require.js, MathJax): the report needs no network to view."""
    page = _MATHJAX_CONFIG.sub("", page)
    return _EXTERNAL_SCRIPT.sub("", page)


def write_page(path: Path, text: str) -> Path:
    """A page or CSV of the report, written atomically (``record.writer.write_text_atomic``) with lone surrogates,
    bidi controls and zero-width characters made visible (``visible``), whatever the text."""
    from helpers.record.writer import write_text_atomic
    from helpers.report.load.visible import visible

    return write_text_atomic(path, visible(text))


def render_html(executed_notebook: Path, out_html: Path) -> Path:
    """nbconvert: the executed summary notebook to one self-contained HTML page, code hidden. The report needs
    no script: it is rendered through the ``inert`` template (no CDN loader, a Content-Security-Policy that
    allows no script and no network request: ``inert.CSP``)."""
    import nbformat

    from helpers.report.publish.inert import inert_html

    nb = nbformat.read(str(executed_notebook), as_version=4)
    # cells written for developers (tagged DEV_TAG: the section registry, the context's names) stay in the notebook
    nb.cells = [c for c in nb.cells if DEV_TAG not in (c.get("metadata", {}).get("tags") or [])]
    body = inert_html(nb, sanitize=False, exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True)
    return write_page(out_html, make_self_contained(body))
