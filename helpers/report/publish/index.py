"""The index page: a link to the report and to every executed workload notebook, rendered to HTML.

    render_index([Path("outputs")], Path("outputs/index.html"), report_html=Path("outputs/report.html"))

Notebooks come from records, and records may come from anyone (``--inputs``): a record's ``notebook``
key is data, not a path to trust. A notebook is rendered only when it resolves (symlinks and ``..``
followed) to a regular file inside one of the record folders or the index's own folder; it is rendered
sanitised (nbconvert's ``sanitize_html``: no script, no event handler, no JavaScript output survives) through
the ``inert`` template (``inert.py``: no CDN loader, no widget state, a Content-Security-Policy that allows no
script and no network request), one page per source file, at most ``MAX_NOTEBOOK_BYTES``. Pages already
rendered from an unchanged notebook are kept; the others are rendered in worker processes (about 0.2 s of CPU
each), never in the caller's: a worker killed for memory costs its page only (``workers.run_jobs``: listed as
lost), and a page that takes longer than ``PAGE_LIMIT_S`` (a crafted notebook: nbconvert's markdown costs grow
about quadratically with a cell's size) is stopped and replaced by a page saying "not rendered: too slow" with the
limit; the rest of the index goes on.

The limit is ``PAGE_LIMIT_S`` (60 s) unless the environment sets ``CGB_PAGE_LIMIT_S`` (``PAGE_LIMIT_ENV``) to
another number of seconds, read each time the index is rendered (``page_limit_s``): a machine much slower than
this one, or a test that must see the limit met in seconds. A value that is not a positive finite number is
refused with a ``ValueError`` naming the variable, before any page is rendered (the runner checks it when it
starts: exit 2, nothing run).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from pathlib import Path

from helpers.record.ids import notebook_path
from helpers.record.reader import read_records
from helpers.report.publish import index_folder
from helpers.report.publish.index_folder import (
    PAGES,
    index_limit_s,
    pages_dir,
    safe_parent,
    seal,
    sealed,
    seconds_from_env,
    stamp_text,
)
from helpers.report.publish.inert import CSP, inert_html
from helpers.report.publish.render import write_page
from helpers.report.publish.workers import TOO_SLOW
from helpers.report.words.fmt import esc

# Pages rendered by an older index (unsanitised, or under another layout) are rendered again.
RENDER_VERSION = "inert-3"
MAX_NOTEBOOK_BYTES = 16 * 2**20  # an executed workload notebook is under 1 MB; rendering takes ~30x its size
PAGE_LIMIT_S = 60.0  # one page's rendering: a workload notebook takes under a second; a crafted one, hours
PAGE_LIMIT_ENV = "CGB_PAGE_LIMIT_S"  # seconds: overrides PAGE_LIMIT_S where set


class _FromEnvironment:
    """``render_index``'s default ``limit_s``: ``page_limit_s()``, read when the index is rendered (a ``limit_s``
    of None, given, means no bound)."""

    def __repr__(self) -> str:
        return f"PAGE_LIMIT_S or ${PAGE_LIMIT_ENV}"


FROM_ENV = _FromEnvironment()


def page_limit_s(environ=None) -> float:
    """The most one page's rendering may take, in seconds: ``CGB_PAGE_LIMIT_S`` where the environment sets it (a
    positive finite number), else ``PAGE_LIMIT_S``. A value that is not one raises ``ValueError`` naming it."""
    return seconds_from_env(PAGE_LIMIT_ENV, PAGE_LIMIT_S, "the most one notebook page of the index may take to "
                            "render", environ)


def _render_notebook(src: Path, dst: Path) -> None:
    """A workload notebook (code shown, outputs sanitised) to self-contained HTML."""
    import nbformat

    nb = nbformat.read(str(src), as_version=4)
    write_page(dst, inert_html(nb, sanitize=True, exclude_input_prompt=True, exclude_output_prompt=True))


def _light_imports() -> None:
    """Before nbformat is first imported (a fresh worker): its jsonschema's optional ``rfc3987_syntax`` compiles 38
    grammars on import (5-15 s a worker); it checks only the "iri" formats, which no notebook schema uses."""
    if "jsonschema" not in sys.modules:
        sys.modules.setdefault("rfc3987_syntax", None)  # None: its import fails, and jsonschema goes without


def _render_job(job: tuple[str, str]) -> str | None:
    src, dst = job
    _light_imports()
    try:
        _render_notebook(Path(src), Path(dst))
        return None
    except Exception as exc:  # a broken notebook must not break the index
        return type(exc).__name__


def _inside(path: Path, roots) -> Path | None:
    """The root that the resolved ``path`` lies in, or None."""
    for root in roots:
        if path == root or path.is_relative_to(root):
            return root
    return None


def _page_for(real: Path, root_of: Path, roots: list[Path], index_root: Path) -> Path:
    """Where the page of the notebook ``real`` (resolved, inside ``root_of``) goes: unique per source file."""
    if real.is_relative_to(index_root):
        rel = real.relative_to(index_root)
    else:
        k = roots.index(root_of)
        tag = hashlib.sha256(str(root_of).encode()).hexdigest()[:8]
        rel = Path("inputs") / f"{k}-{root_of.name or 'root'}-{tag}" / real.relative_to(root_of)
    return index_root / PAGES / rel.with_suffix(".html")


SOURCES = ".sources.json"  # under PAGES: each page's source notebook's sha256 when it was rendered


def _digest(src: Path) -> str | None:
    """The sha256 of a notebook (read within the record reader's bounds), or None when it cannot be read."""
    return index_folder.file_sha256(src, MAX_NOTEBOOK_BYTES)


def _read_sources(path: Path) -> dict:
    from helpers.record.reader import read_json_file

    obj, _ = read_json_file(path)
    return {k: v for k, v in obj.items() if isinstance(v, str)} if isinstance(obj, dict) else {}


def _up_to_date(digest: str | None, dst: Path, fresh_layout: bool, sources: dict, key: str) -> bool:
    """A page is current when this user's index rendered it, byte for byte, from a notebook of this content: by
    its seal (``index_folder.sealed``: the notebook's hash and the page's under a key no outputs folder holds),
    never its time (tar, unzip or a clock jump give a rewritten notebook an older mtime than its page) nor a stamp
    anyone could write."""
    try:
        return fresh_layout and sealed(sources.get(key), digest, dst)
    except OSError:
        return False


def _render_all(jobs: list[tuple[str, str]], workers: int | None, job=None,
                limit_s: float | None = FROM_ENV, total_s: float | None = None) -> dict[str, str | None]:
    """Render ``(src, dst)`` pairs; {dst: why not (an error class name, a dead worker, ``workers.too_slow``) or
    None}. In worker processes, each page within ``limit_s`` seconds; ``workers=0``: in this process, unbounded
    (tests of the index itself). ``job``: the function rendering one pair (tests pass one that dies)."""
    job = job or _render_job
    if limit_s is FROM_ENV:
        limit_s = page_limit_s()
    if not jobs:
        return {}
    if workers == 0:
        return {j[1]: job(j) for j in jobs}
    if workers is None:
        workers = min(4, os.cpu_count() or 1)
    from helpers.report.publish.workers import run_jobs

    return {j[1]: why for j, why in run_jobs(job, jobs, workers, limit_s, total_s).items()}


def _too_slow_page(dst: Path, why: str, name: str) -> bool:
    """The page in place of one stopped at its time limit: what it is and why (the limit); False if not written."""
    page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" '
            f'content="{esc(CSP)}"><title>{name}: not rendered</title></head><body><h1>{name}</h1><p><b>{esc(why)}'
            "</b>: rendering this notebook took longer than the limit, so it was stopped (a workload notebook "
            "renders in about a second; one this slow is malformed or crafted). The rest of the index and the "
            "report are unaffected; the notebook itself is unchanged.</p></body></html>\n")
    try:
        write_page(dst, page)
        return True
    except OSError:
        return False


def render_index(folders, out_html: Path, report_html: Path | None = None, workers: int | None = None,
                 job=None, limit_s: float | None = FROM_ENV) -> Path:
    """outputs/index.html: a link to the report and to every executed workload notebook, rendered to HTML.

    Notebooks (the records' ``notebook`` key) are rendered next to the index under ``notebooks_html/``;
    one that is not on this machine, or lies outside the record folders and the index's folder, is listed
    as such and not rendered. ``workers``: processes rendering pages (default: up to 4; 0: this process, without
    a time bound). ``limit_s``: the most one page may take (default ``page_limit_s()``: ``PAGE_LIMIT_S``, or
    ``CGB_PAGE_LIMIT_S`` where set; None: no bound); a page over it is replaced by one that says so.
    """
    if limit_s is FROM_ENV:
        limit_s = page_limit_s()  # a bad value refused before anything is read or rendered
    total_s = index_limit_s() if limit_s is not None else None
    out_html = Path(out_html)
    root = out_html.parent
    index_root = root.resolve()
    pages_dir(root)  # a real folder of this user's, or OutFolderRefused before anything is written
    folders = [Path(f) for f in folders if Path(f).exists()]
    roots = list(dict.fromkeys(f.resolve() for f in folders))  # notebooks only inside --inputs
    records, _ = read_records(folders)
    stamp = root / PAGES / ".render-version"
    fresh_layout = stamp_text(stamp) == RENDER_VERSION
    sources_file = root / PAGES / SOURCES
    sources = _read_sources(sources_file) if fresh_layout else {}
    digests = {}  # page key -> the sha256 of the notebook it is rendered from now
    rows, jobs, pages = [], [], {}
    seen, by_digest, kept = set(), {}, {}  # kept: page key -> its seal, for pages kept as they are
    for r in sorted(records, key=lambda r: (str(r.get("workload")), str(r.get("started_at")))):
        nb = notebook_path(r)
        cells = [esc(r.get(k)) for k in ("workload", "backend", "device", "status")]
        host = esc((r.get("fingerprint") or {}).get("host"))
        when = esc(r.get("started_at"))
        link, page = "<i>no notebook recorded</i>", None
        if nb is not None:
            name = esc(nb.name)
            try:
                real = Path(nb).resolve()
                st = real.stat()
            except (OSError, RuntimeError, ValueError):
                real, st = None, None
            if real is not None and real in seen:
                continue  # the same notebook named by two records (a record copied): one row
            if st is None or not stat.S_ISREG(st.st_mode):
                link = f"{name} <i>(not on this machine)</i>"
            elif (root_of := _inside(real, roots)) is None:
                link = f"{name} <i>(outside the record folders, not rendered)</i>"
            elif st.st_size > MAX_NOTEBOOK_BYTES:
                link = f"{name} <i>(larger than {MAX_NOTEBOOK_BYTES // 2**20} MB, not rendered)</i>"
            elif (digest := _digest(real)) is not None and digest in by_digest:
                seen.add(real)
                page = by_digest[digest]  # the same notebook under another name (a copy, a hard link): one page
            else:
                seen.add(real)
                dst = _page_for(real, root_of, roots, index_root)
                if not safe_parent(index_root, dst):
                    link = f"{name} <i>(not rendered: a folder on its page's way is a symlink or a file)</i>"
                else:
                    key = dst.relative_to(index_root).as_posix()
                    digests[key] = digest
                    if digest is not None:
                        by_digest[digest] = str(dst)
                    if _up_to_date(digest, dst, fresh_layout, sources, key):
                        kept[key] = sources[key]
                    else:
                        jobs.append((str(real), str(dst)))
                    pages[str(dst)] = name
                    page = str(dst)  # linked below, once rendered
        fixture = " <b>(fixture)</b>" if r.get("fixture") else ""
        rows.append((f"<tr><td>{cells[0]}{fixture}</td><td>{cells[1]}</td><td>{cells[2]}</td><td>{cells[3]}</td>"
                     f"<td>{host}</td><td>{when}</td><td>", link, page))
    errors = _render_all(jobs, workers, job, limit_s, total_s)
    if not fresh_layout:  # pages of an older index (unsanitised, other names) must not stay published
        for folder, _dirs, files in os.walk(index_root / PAGES):  # symlinked folders are not walked into
            for f in files:
                if f.endswith(".html") and os.path.join(folder, f) not in pages:
                    Path(folder, f).unlink(missing_ok=True)
    write_page(stamp, RENDER_VERSION + "\n")
    failed = {Path(d).relative_to(index_root).as_posix() for d, why in errors.items() if why}
    seals = {k: kept.get(k) or seal(v, index_root / k) for k, v in sorted(digests.items())
             if v is not None and k not in failed}  # a kept page's seal was checked above: not read again
    write_page(sources_file, json.dumps({k: v for k, v in seals.items() if v is not None}, indent=0) + "\n")
    body = []
    for head, link, dst in rows:
        slow = dst is not None and str(errors.get(dst) or "").startswith(TOO_SLOW.split("{", 1)[0])
        if slow and _too_slow_page(Path(dst), errors[dst], pages[dst]):
            href = esc(Path(os.path.relpath(dst, index_root)).as_posix())
            link = f'<a href="{href}">{pages[dst]}</a> <i>({esc(errors[dst])})</i>'
        elif dst is not None and str(errors.get(dst) or "").startswith("not rendered"):
            link = f"{pages[dst]} <i>({esc(errors[dst])})</i>"
        elif dst is not None and errors.get(dst):
            link = f"{pages[dst]} <i>(could not render: {esc(errors[dst])})</i>"
        elif dst is not None:
            link = f'<a href="{esc(Path(os.path.relpath(dst, index_root)).as_posix())}">{pages[dst]}</a>'
        body.append(f"{head}{link}</td></tr>")
    body = "".join(body)
    report_link = ""
    if report_html is not None:
        report_link = (f'<p><a href="{esc(Path(os.path.relpath(report_html, root)).as_posix())}"><b>The report'
                       "</b></a>: every record summarised (timings, speedups, cost, published figures).</p>")
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{esc(CSP)}">
<title>CPU vs GPU benchmark: index</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:70em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 8px;font-size:90%}}th{{background:#eee}}</style></head>
<body><h1>CPU vs GPU benchmark: index</h1>{report_link}
<h2>Executed workload notebooks ({len(rows)})</h2>
<table><thead><tr><th>workload</th><th>backend</th><th>device</th><th>status</th><th>host</th><th>started</th>
<th>notebook</th></tr></thead><tbody>{body or '<tr><td colspan="7">no records yet</td></tr>'}</tbody>
</table></body></html>
"""
    return write_page(out_html, page)
