"""The report while a grid runs: ``report.html`` rendered after the first block of the grid and again after later
ones, marked partial, so that a newcomer reads the verdict of the workloads measured so far.

    page = PartialPage(args, out_root, run_dir, total=len(order), log=log)   # prints the page's path once
    page.after_run(done, block_over=True)     # renders when a block is over and the page is due (below)
    page.final(done, "interrupted")           # Ctrl-C, SIGTERM: the whole report of what ran, marked partial

While the grid runs, the page holds the banner and the report's first sections (``LIGHT``: the verdict, the
speedups, samples/s), built in this process from the same context as the full report: no kernel start, no
nbconvert, the report's imports paid once a run; a render takes a few seconds. Its cost is kept within ``SHARE``
of the grid's time: after the first block the page is rendered again only once ``1 / SHARE`` times its last
render's time has passed, and never while a point is timed (the runner renders between points). A run that
finishes ends with the full report (the summary notebook in a kernel); one stopped by ``--budget`` too, marked
partial through the notebook's ``banner``; one stopped by Ctrl-C or SIGTERM gets the full report of what ran from
the summary notebook's own cells run in this process (``render_in_process``), marked partial.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from helpers.paths import NOTEBOOKS

SHARE = 0.05  # at most this share of the grid's time goes to partial pages (after the first one)


def banner_text(done: int, total: int, why: str = "") -> str:
    """'partial: 14 of 60 runs; this page refreshes as the grid goes' (``why``: what stopped the run instead)."""
    runs = f"{done} of {total} {'run' if total == 1 else 'runs'}"
    if why:
        return f"partial: {runs} ({why}); run the same command again to go on"
    return f"partial: {runs}; this page refreshes as the grid goes"


def _summary_code(parameters: dict) -> str:
    """The summary notebook's code cells, its parameters cell with ``parameters`` injected (as papermill does)."""
    from helpers.params import literal

    nb = json.loads((NOTEBOOKS / "summary.ipynb").read_text(encoding="utf-8"))
    code = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        code.append("".join(cell["source"]))
        if "parameters" in (cell.get("metadata", {}).get("tags") or []):
            code.append("\n".join(f"{k} = {literal(v)}" for k, v in parameters.items()))
    return "\n".join(code)


def render_in_process(folders: list[Path], out_html: Path, parameters: dict) -> Path:
    """The summary notebook's cells run in this process, their displayed outputs put into a copy of the notebook and
    rendered to ``out_html`` as the full report is (``report.render_html``): the same sections, the same page."""
    import IPython.display as ipd
    import matplotlib
    import nbformat

    from helpers.report.publish.render import render_html

    matplotlib.use("Agg")
    outputs: list[dict] = []

    def collect(*objs, **_kw):
        for obj in objs:
            html = obj._repr_html_() if hasattr(obj, "_repr_html_") else getattr(obj, "data", None)
            if html:
                outputs.append(nbformat.v4.new_output("display_data", data={"text/html": str(html)}))

    params = {**parameters, "inputs": [str(f) for f in folders], "csv_dir": str(Path(out_html).parent)}
    saved = ipd.display
    ipd.display = collect  # the cells' ``from IPython.display import display`` takes it
    try:
        exec(compile(_summary_code(params), str(NOTEBOOKS / "summary.ipynb"), "exec"), {"__name__": "__summary__"})
    finally:
        ipd.display = saved
        import matplotlib.pyplot as plt

        plt.close("all")
    nb = nbformat.read(str(NOTEBOOKS / "summary.ipynb"), as_version=4)
    last = [c for c in nb.cells if c.cell_type == "code"][-1]
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = []
    last.outputs = outputs
    tmp = Path(out_html).parent / f".{Path(out_html).name}.partial.ipynb"
    nbformat.write(nb, str(tmp))
    try:
        return render_html(tmp, out_html)
    finally:
        tmp.unlink(missing_ok=True)


LIGHT = ("verdict", "speedup", "throughput")  # the sections of a page while the grid runs: the answer first


def render_light(folders: list[Path], out_html: Path, parameters: dict) -> Path:
    """The page while the grid runs: the banner, then the report's first sections (``LIGHT``) built from the same
    context as the full report, in the same page shell as the comparison page (no script, no network: ``CSP``),
    without nbconvert; a line says that the rest comes when the grid ends."""
    from markupsafe import escape

    from helpers import report
    from helpers.report.publish import sections
    from helpers.report.publish.inert import CSP
    from helpers.report.publish.render import banner_html, write_page

    report.setup_plots()
    keys = ("prices_file", "published_file", "use_reference", "price_set")
    ctx = report.build_context(folders, **{k: (parameters[k] or None) if k.endswith("_file") else parameters[k]
                                           for k in keys if k in parameters})
    built = [sections.build(sections.get(n), ctx) for n in LIGHT]
    rest = ", ".join(n for n in sections.ORDER if n not in LIGHT)
    body = "".join(s._repr_html_() for s in built)
    page = ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
            "<title>CPU versus GPU: Keras 3 training benchmark report (partial)</title>" + report.REPORT_CSS
            + "</head><body><main class='cgb-partial'><h1>CPU versus GPU: Keras 3 training benchmark report</h1>"
            + banner_html(parameters.get("banner", "")) + body
            + f"<p><i>The other sections ({escape(rest)}) come with the full report when the grid ends.</i></p>"
            + "</main></body></html>")
    return write_page(Path(out_html), page)


class PartialPage:
    """``report.html`` of a run as it goes (module docstring)."""

    def __init__(self, out_html: Path, folders: list[Path], parameters: dict, total: int, log, share: float = SHARE):
        self.out_html, self.folders, self.parameters, self.total, self.log = out_html, folders, parameters, total, log
        self.share = share
        self.last_end: float | None = None  # when the last render ended (perf_counter)
        self.cost_s = 0.0  # what the last render took
        self.failed = False
        log(f"report: {out_html} (rendered as the grid goes, marked partial until it ends)")

    def due(self) -> bool:
        if self.failed:
            return False
        return self.last_end is None or time.perf_counter() - self.last_end >= self.cost_s / self.share

    def after_run(self, done: int, block_over: bool) -> None:
        """After a run: a block over and the page due, the page of the ``done`` runs so far."""
        if block_over and done < self.total and self.due():
            self.render(done)

    def final(self, done: int, why: str) -> None:
        """The run stops early (``why``: 'interrupted'): the whole report of what ran (every section, the summary
        notebook's recipe in this process), marked partial; a second Ctrl-C skips it."""
        if not done:
            return
        self.log(f"writing the report of the {done} run(s) done, marked partial (Ctrl-C again to skip) ...")
        self.failed = False
        try:
            self.render(done, why, full=True)
        except KeyboardInterrupt:
            self.log("report not written (interrupted again); run_all.sh report renders it")
            return
        if not self.failed:
            self.log(f"report: {self.out_html} (partial: {done} of {self.total} runs)")

    def render(self, done: int, why: str = "", full: bool = False) -> None:
        t0 = time.perf_counter()
        try:
            (render_in_process if full else render_light)(
                self.folders, self.out_html, {**self.parameters, "banner": banner_text(done, self.total, why)})
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # a partial page never stops the grid: the full report at the end says why
            self.failed = True
            self.log(f"note: the partial report was not rendered ({type(exc).__name__}: {str(exc)[:200]}); "
                     "the grid goes on")
            return
        self.cost_s = time.perf_counter() - t0
        self.last_end = time.perf_counter()
