"""The index page: a link to the report and to every executed workload notebook, rendered to HTML.

    render_index([Path("outputs")], Path("outputs/index.html"), report_html=Path("outputs/report.html"))
"""

from __future__ import annotations

import os
from pathlib import Path

from .. import record as _record
from ..record import read_records
from .fmt import esc
from .render import make_self_contained, write_text_atomic


def _render_notebook(src: Path, dst: Path) -> None:
    """A workload notebook (code shown) to self-contained HTML; skipped when ``dst`` is up to date."""
    import nbformat
    from nbconvert import HTMLExporter

    if dst.is_file() and dst.stat().st_mtime >= src.stat().st_mtime:
        return
    nb = nbformat.read(str(src), as_version=4)
    body, _ = HTMLExporter(exclude_input_prompt=True, exclude_output_prompt=True).from_notebook_node(nb)
    write_text_atomic(dst, make_self_contained(body))


def render_index(folders, out_html: Path, report_html: Path | None = None) -> Path:
    """outputs/index.html: a link to the report and to every executed workload notebook, rendered to HTML.

    Notebooks (the records' ``notebook`` key) are rendered next to the index under ``notebooks_html/``;
    a notebook that is not on this machine (records copied from elsewhere) is listed as such.
    """
    out_html = Path(out_html)
    root = out_html.parent
    records, _ = read_records([Path(f) for f in folders if Path(f).exists()])
    rows = []
    seen = set()
    for r in sorted(records, key=lambda r: (str(r.get("workload")), str(r.get("started_at")))):
        nb = _record.notebook_path(r)
        nb = str(nb) if nb else None
        cells = [esc(r.get(k)) for k in ("workload", "backend", "device", "status")]
        host = esc((r.get("fingerprint") or {}).get("host"))
        when = esc(r.get("started_at"))
        link = "<i>no notebook recorded</i>"
        if nb and nb not in seen:
            seen.add(nb)
            src = Path(nb)
            if src.is_file():
                rel = src.resolve().relative_to(root.resolve()) if src.resolve().is_relative_to(root.resolve()) \
                    else Path("external") / src.name
                dst = root / "notebooks_html" / rel.with_suffix(".html")
                try:
                    _render_notebook(src, dst)
                    href = os.path.relpath(dst, root)
                    link = f'<a href="{esc(Path(href).as_posix())}">{esc(src.name)}</a>'
                except Exception as exc:  # a broken notebook must not break the index
                    link = f"{esc(src.name)} <i>(could not render: {esc(type(exc).__name__)})</i>"
            else:
                link = f"{esc(src.name)} <i>(not on this machine)</i>"
        elif nb:
            continue
        fixture = " <b>(fixture)</b>" if r.get("fixture") else ""
        rows.append(f"<tr><td>{cells[0]}{fixture}</td><td>{cells[1]}</td><td>{cells[2]}</td><td>{cells[3]}</td>"
                    f"<td>{host}</td><td>{when}</td><td>{link}</td></tr>")
    report_link = ""
    if report_html is not None:
        report_link = (f'<p><a href="{esc(Path(os.path.relpath(report_html, root)).as_posix())}"><b>The report'
                       "</b></a>: every record summarised (timings, speedups, cost, published figures).</p>")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>CPU vs GPU benchmark: index</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 8px;font-size:90%}}th{{background:#eee}}</style></head>
<body><h1>CPU vs GPU benchmark: index</h1>{report_link}
<h2>Executed workload notebooks ({len(rows)})</h2>
<table><thead><tr><th>workload</th><th>backend</th><th>device</th><th>status</th><th>host</th><th>started</th>
<th>notebook</th></tr></thead><tbody>{''.join(rows) or '<tr><td colspan="7">no records yet</td></tr>'}</tbody>
</table></body></html>
"""
    return write_text_atomic(out_html, page)

