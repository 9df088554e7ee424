"""When the report cannot be rendered: say why, and never leave an older report.html looking current.

    why = failure_text(exc)          # "KeyError: 'x' in summary.ipynb, cell 7: ... (traceback: run_dir/...)"
    mark_failed(Path("outputs/report.html"), why)

papermill's ``PapermillExecutionError`` prints as an empty message; its ``ename``, ``evalue`` and the last lines
of the kernel's traceback say what went wrong and where (a record's file name when one is to blame). The old
report is moved to ``report.previous.html`` and ``report.html`` becomes a short page that says the report
failed, when, why, and links the previous one, so a reader never takes a stale report for today's. A failure page
is never moved there (a second failure keeps the last report that rendered), and where there is no previous report
neither the page nor the log names one (``previous_report``).
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from helpers.report.publish.inert import CSP
from helpers.report.publish.render import write_page
from helpers.report.words.fmt import esc

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MAX_WHY = 2000  # characters of the reason kept
MARK = '<meta name="cgb-report" content="failed">'  # in every failure page: never kept as the previous report


def _is_failure_page(path: Path) -> bool:
    import os
    import stat

    try:  # never a blocking open (an --out folder may hold a FIFO by that name), never through a symlink
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        head = os.read(fd, 4096).decode("utf-8", "replace") if stat.S_ISREG(os.fstat(fd).st_mode) else ""
    except OSError:
        return False
    finally:
        os.close(fd)
    return MARK in head or "<title>Report failed</title>" in head


def previous_report(out_html: Path) -> Path | None:
    """The last report that rendered, kept beside ``out_html`` by ``mark_failed``; None when there is none."""
    previous = Path(out_html).with_name(Path(out_html).stem + ".previous.html")
    return previous if previous.is_file() and not _is_failure_page(previous) else None


def failure_text(exc: BaseException, executed: Path | None = None) -> str:
    """What failed, from an exception raised while rendering the report (papermill's included)."""
    name = getattr(exc, "ename", None)
    if name:  # PapermillExecutionError: the kernel's own error
        lines = [_ANSI.sub("", line) for line in (getattr(exc, "traceback", None) or [])]
        tail = " | ".join(x.strip() for x in "\n".join(lines).splitlines() if x.strip())[-800:]
        cell = getattr(exc, "exec_count", None)
        why = f"{name}: {getattr(exc, 'evalue', '')}" + (f" (summary.ipynb cell {cell})" if cell else "")
        if tail:
            why += f"; traceback ends: {tail}"
    else:
        why = f"{type(exc).__name__}: {exc}"
    if executed is not None:
        why += f"; the executed notebook: {executed}"
    return why[:MAX_WHY]


def mark_failed(out_html: Path, why: str) -> Path | None:
    """Move an existing ``out_html`` to ``<name>.previous.html`` and write a page saying the report failed and
    why; None when even that cannot be written (a full disk: the message is in the log)."""
    out_html = Path(out_html)
    previous = out_html.with_name(out_html.stem + ".previous.html")
    try:
        if out_html.is_file() and not _is_failure_page(out_html):  # a failure page is no previous report
            out_html.replace(previous)
        when = dt.datetime.now().astimezone().isoformat(timespec="seconds")
        link = (f'<p>The last report that rendered is <a href="{esc(previous.name)}">{esc(previous.name)}</a>.</p>'
                if previous_report(out_html) else "<p>There is no earlier report to fall back on.</p>")
        page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">{MARK}'
                f'<meta http-equiv="Content-Security-Policy" content="{esc(CSP)}"><title>Report failed</title></head>'
                f"<body><h1>The report failed</h1><p>Rendering at {esc(when)} failed: <code>{esc(why)}</code></p>"
                f"{link}<p>Fix the cause (or set the named record aside) and run <code>./run_all.sh report"
                "</code> again.</p></body></html>\n")
        return write_page(out_html, page)
    except OSError:
        return None
