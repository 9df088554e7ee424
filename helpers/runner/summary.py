"""The report at the end of a run (or the verb ``report``): summary.ipynb executed in a fresh kernel over the record
folders, rendered to ``report.html``, with the index page beside it.

    html = render_report(folders, run_dir, kernel, out_root / "report.html", parameters)
    status = report_after_run(args, out_root, run_dir, kernel, engine, log)   # None: rendered; else the exit status
    report_dir(args, out_root)       # --out, else out_root: report.html, results.csv, configurations.csv, index.html

A failed report names the kernel's error, keeps the previous page as ``report.previous.html`` and leaves a page
saying it failed (``report.failed``); the records stay complete.
"""

from __future__ import annotations

import time
from pathlib import Path

from helpers.exits import Exit
from helpers.paths import NOTEBOOKS
from helpers.runner.engine import kill_kernel
from helpers.runner.outputs import cannot_write, cannot_write_message


def render_report(folders: list[Path], run_dir: Path, kernel: str, out_html: Path,
                  parameters: dict | None = None) -> Path:
    """Execute summary.ipynb over ``folders`` in a fresh kernel, render it to ``out_html``; write the index
    page (``index.html`` beside it) linking the report and every executed workload notebook as HTML."""
    import papermill as pm

    from helpers.report import render_html, render_index

    executed = run_dir / "summary.ipynb"
    # results.csv and configurations.csv beside the report (the notebook writes them from its context)
    params = {**(parameters or {}), "inputs": [str(f) for f in folders], "csv_dir": str(Path(out_html).parent)}
    pm.execute_notebook(str(NOTEBOOKS / "summary.ipynb"), str(executed), parameters=params, engine_name="cgb",
                        kernel_name=kernel, progress_bar=False, cwd=str(NOTEBOOKS),
                        kernel_env={"CGB_KERNEL_STDERR": str(run_dir / "summary.stderr.log")})  # its chatter: a file
    out = render_html(executed, out_html)
    render_index(folders, Path(out_html).parent / "index.html", report_html=out)
    return out


def report_parameters(args) -> dict:
    """The summary notebook's parameters that the runner's command line sets (prices, the reference)."""
    return {**({"prices_file": str(args.prices.resolve())} if args.prices else {}),
            **({"price_set": args.price_set} if args.price_set else {}),
            "use_reference": not args.no_reference}


def report_inputs(args, out_root: Path) -> list[Path]:
    """The record folders a report reads: ``--inputs``, else the outputs folder."""
    return [Path(f).resolve() for f in args.inputs] if args.inputs else [out_root]


def report_dir(args, out_root: Path) -> Path:
    """Where the report, its CSVs and the index go: ``--out``, else the outputs folder."""
    out = getattr(args, "out", None)
    return Path(out).resolve() if out else out_root


def report_after_run(args, out_root: Path, run_dir: Path, kernel: str, engine, log, banner: str = "") -> Exit | None:
    """Render the report over ``--inputs`` (default: ``out_root``) into ``report_dir`` as the runner's command line
    (``args``) asks; None when it was written, else the run's exit status (interrupted, cannot write, failed),
    logged. ``run_dir`` holds the executed summary notebook; ``banner``: a line above the report (a run that ended
    early: partial)."""
    t0 = time.perf_counter()
    out_dir = report_dir(args, out_root)
    from helpers.report.load.visible import visible
    from helpers.report.publish.index_folder import found_in

    def said(text) -> str:  # names from records and folders on the terminal as the page shows them: one line each
        return visible(str(text), line=True)

    for line in found_in(out_dir):  # an --out folder of someone else's: what is written over, said
        log(f"note: {said(line)}")
    try:
        html = render_report(report_inputs(args, out_root), run_dir, kernel, out_dir / "report.html",
                             parameters={**report_parameters(args), **({"banner": banner} if banner else {})})
        log(f"report: {said(html)} ({time.perf_counter() - t0:.1f}s)")
    except KeyboardInterrupt:
        kill_kernel(engine)
        log("interrupted while rendering the report: the records are complete; render it again with "
            "run_all.sh report")
        return Exit.INTERRUPTED
    except Exception as exc:
        if cannot_write(exc):
            log(f"report not written: {said(cannot_write_message(out_dir, cannot_write(exc)))}")
            return Exit.CANNOT_WRITE
        from helpers.report.publish.failed import failure_text, mark_failed, previous_report

        why = failure_text(exc, run_dir / "summary.ipynb")
        log(f"report failed: {said(why)}")
        if mark_failed(out_dir / "report.html", why):  # an older report must not look current
            prev = previous_report(out_dir / "report.html")
            log("report.html now says so; " + (f"the last good one: {said(prev)}" if prev else
                                               "there is no earlier report to fall back on"))
        return Exit.FAILED
    return None
