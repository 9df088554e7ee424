"""Pages with no script: a notebook to HTML through nbconvert with every loader and script left out.

    html = inert_html(nb, sanitize=True, exclude_input_prompt=True)

nbconvert's lab template loads require.js, MathJax, mermaid and elk from CDNs, and the jupyter-widgets
HTML manager (an unpinned ``@*`` version) when a notebook carries ``metadata.widgets``; JavaScript outputs
become inline scripts. Pages rendered from records (data from anyone) and the report need none of it: the
``inert`` template (``templates/inert``, extending ``lab``) empties those blocks and puts ``CSP`` in the page's
head, a Content-Security-Policy that allows no script and no network request at all (images, media and fonts
inline only, styles inline), so a page that slipped anything past the sanitiser still runs and fetches nothing.
Widget state and widget views are dropped from the notebook before rendering (they only feed the manager).
"""

from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"
CSP = ("default-src 'none'; script-src 'none'; object-src 'none'; frame-src 'none'; base-uri 'none'; "
       "form-action 'none'; img-src data:; media-src data:; font-src data:; style-src 'unsafe-inline'")
_DROPPED_OUTPUTS = ("application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json",
                    "application/javascript", "text/javascript")


def strip_active(nb):
    """``nb`` without widget state, widget views or JavaScript outputs (changed in place, returned)."""
    nb.metadata.pop("widgets", None)
    for cell in nb.get("cells", []):
        if not cell.get("outputs"):
            continue
        kept = []
        for out in cell["outputs"]:
            data = out.get("data")
            if isinstance(data, dict):
                for key in _DROPPED_OUTPUTS:
                    data.pop(key, None)
                if not data:
                    continue
            kept.append(out)
        cell["outputs"] = kept
    return nb


def inert_html(nb, sanitize: bool = True, **exporter_args) -> str:
    """The notebook node ``nb`` as one HTML page with no script and no network request (``CSP``)."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="inert", extra_template_basedirs=[str(TEMPLATES)],
                            sanitize_html=sanitize, **exporter_args)
    body, _ = exporter.from_notebook_node(strip_active(nb), resources={"csp": CSP})
    return body
