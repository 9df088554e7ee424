"""The grid runner: validate every grid, then run each point in a fresh kernel through papermill.

Usage::

    python -m helpers.runner [GRID.yaml ...] [--timeout S] [--rerun] [--no-report] [--validate-only] [--yes]
    python -m helpers.runner --report-only [--inputs DIR ...] [--out DIR]

One process drives every point through the papermill API (no papermill start-up per point); each
point gets a fresh Jupyter kernel (a backend or a device cannot be switched inside a process). A
watchdog kills a point's kernel at its time limit. A point that fails gets a ``failed`` record
with the error and the executed notebook is kept; the grid goes on. Points already done on this
machine (same point id, status ok) are not run again unless ``--rerun``; failed and
skipped points are run again. A point counts as done only when complete: its record has the runner's
own fields (``wall_s``) and, when ok, its executed notebook is there and whole (notebooks are executed
to a temporary file and renamed, so a half-written one never takes the final name).

Repeats: a grid's ``repeats: N`` runs every point N times, each run in its own fresh kernel, interleaved
(every point once, then every point again: a drift of the host does not land on one configuration).
The first run of a point keeps the point's id (``record.point_id``: records of earlier runs count as
that first run); run k >= 1 (the line says ``repeat k+1/N``) has the id ``<id>-r<k>``, so its record
and notebook have their own names. Every record the runner completes carries ``repeat`` (0-based) and
``config_id`` (the point's id); resume counts the repeats done, ``--rerun`` runs them all again.

The size guard: each block is counted before it is expanded (product of its list lengths, times its
repeats). A grid of more than ``plan.GUARD_RUNS`` runs, or whose estimated time exceeds ``plan.GUARD_S``, is
listed (the count, the biggest blocks) and refused with ``Exit.BAD_GRID`` unless ``--yes``: nothing is run or
written. The estimate takes, for each run still to do, the median wall time of complete records on
this machine of the same workload, backend and device, else of any run on this machine.
``--validate-only`` prints the same count, estimate and warning, lists every run and exits ``Exit.OK``.

Progress: each point's line says how many runs are left and, once a point has run here, the time left
(their mean wall time so far in this run; points done before or skipped without a kernel cost nothing).
A point running longer than ``progress.LIVE_AFTER_S`` prints its epoch lines (the kernel's stdout) as they come.

The steps: ``prepare.py`` decides the run before anything is written (shard, grids, size guard, the runs to do),
``grid_run.py`` carries it out, ``summary.py`` renders the report. One point's execution (notebook, record,
resume's test) is ``notebook.py``, its kernel and papermill engine ``engine.py``.
Kernels start with the shell's thread and XLA variables removed (``kernel_launcher``; the record's
``env_cleared`` lists them) and an empty IPython profile (no ``~/.ipython`` startup files).

Exit status: ``helpers.exits.Exit`` (``--help`` lists every code with its meaning).

Shards (docs/cluster.md): ``--shard I/N`` (else Slurm's array variables, or Kubernetes'
``JOB_COMPLETION_INDEX`` with ``--shard-count``/``CGB_SHARD_COUNT``) runs shard I (from 0) of N of the grid's
runs, split by estimated time (``shard.py``); shards share the outputs folder (``fleet.py``: each run is
claimed, a second runner of one shard gets ``Exit.BUSY``, a shard of another grid ``Exit.BAD_GRID``) and the last
one to finish renders the merged report.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from helpers import exits
from helpers import grid as _grid
from helpers.exits import Exit
from helpers.runner import plan as _plan
from helpers.runner import progress as _progress
from helpers.runner import shard as _shard
from helpers.runner.grid_run import DEFAULT_TIMEOUT_S, report_only, run_grid
from helpers.runner.plan import label
from helpers.runner.prepare import prepare


class _Formatter(argparse.HelpFormatter):
    """argparse's layout, its lines never broken at a hyphen (an option named in the text stays whole:
    ``--fail-if-slower``, not ``--fail-if-`` and ``slower``)."""

    def _fill_text(self, text, width, indent):
        import textwrap

        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False)

    def _split_lines(self, text, width):
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="run_all.sh", description=__doc__.split("\n\n")[0], formatter_class=_Formatter,
        epilog="A grid's 'repeats: N' (top level, defaults or a block) runs each point N times, each in a fresh "
               "kernel, interleaved: every point once, then again. Each line says the runs left and the time left; "
               f"a point running over {_progress.LIVE_AFTER_S:g} s prints its epochs as they come. Exit status: "
               f"{exits.summary()}.")
    ap.add_argument("grids", nargs="*", type=Path, help="grid files (default: params/quick.yaml)")
    ap.add_argument("--timeout", type=float, default=None,
                    help=f"per-point limit in seconds (default: the grid's timeout_s, else {DEFAULT_TIMEOUT_S})")
    ap.add_argument("--budget", type=float, default=None,
                    help="start no new point after this many seconds (the rest: run again to resume)")
    ap.add_argument("--price-profile", default=None,
                    help="this machine's profile in the prices file (its cost in the report)")
    ap.add_argument("--prices", type=Path, default=None, help="prices file (default params/prices.yaml)")
    ap.add_argument("--price-set", default=None,
                    help="the prices the report uses: 'current' (today's, the default) or '2017' (seed 002's table)")
    ap.add_argument("--rerun", action="store_true",
                    help="run points already done on this machine again (every repeat)")
    ap.add_argument("--skip-failed", action="store_true",
                    help="on resume, do not run again the points that failed before (an out-of-memory at a "
                         "batch size fails again; default: failed and skipped points are retried)")
    ap.add_argument("--yes", action="store_true",
                    help=f"run a grid over the size guard: more than {_plan.GUARD_RUNS} runs, or an estimated time "
                         "over "
                         f"{_grid.fmt_duration(_plan.GUARD_S)} from earlier runs on this machine (default: such a grid "
                         f"is listed and refused, status {int(Exit.BAD_GRID)}, nothing run)")
    ap.add_argument("--no-report", action="store_true", help="do not render the report")
    ap.add_argument("--no-reference", action="store_true",
                    help="a report whose records have no GPU run does not compare with the bundled reference GPU")
    ap.add_argument("--report-only", action="store_true",
                    help="only render the report from outputs/ (or --inputs); creates no run folder")
    ap.add_argument("--out", type=Path, default=None, metavar="DIR",
                    help="the folder the report goes to: report.html, results.csv, configurations.csv, index.html "
                         "(default: outputs/)")
    ap.add_argument("--validate-only", action="store_true",
                    help="validate the grids, print their size and estimated time, list every run (with its "
                         "repeat), exit; writes nothing")
    ap.add_argument("--inputs", nargs="+", type=Path, default=None, metavar="DIR",
                    help="record folders the report reads (default: outputs/): runs of several machines, "
                         "a published reference, records copied from elsewhere")
    ap.add_argument("--shard", default=None, metavar="I/N",
                    help="run shard I (0 to N-1) of N of the grid's runs, balanced by estimated time; default: "
                         "from SLURM_ARRAY_TASK_ID/COUNT, or JOB_COMPLETION_INDEX with --shard-count (docs/cluster.md)")
    ap.add_argument("--predict", type=Path, default=None, metavar="FILE.keras",
                    help="print the model's predicted samples/s on the reference GPU per backend, each with its 80%% "
                         "interval (fitted on the bundled reference: docs/custom_model.md); runs nothing else")
    ap.add_argument("--batch-size", type=int, default=None, metavar="N",
                    help="with --predict: the batch size (1 to 1,000,000)")
    ap.add_argument("--precision", default=None, choices=("float32", "mixed_bfloat16", "mixed_float16"),
                    help="with --predict: the Keras dtype policy (default float32)")
    ap.add_argument("--samples", type=int, default=None, metavar="N",
                    help="with --predict: samples an epoch, for the predicted epoch time (0 to 10**10)")
    ap.add_argument("--optimizer", default=None, metavar="NAME",
                    help="with --predict: the optimiser (adam, sgd, ...; default: the saved model's, else adam)")
    ap.add_argument("--compare", nargs=2, default=None, metavar=("OLD", "NEW"),
                    help="what changed between two runs: OLD and NEW, each a folder of records (several: joined by "
                         "os.pathsep, ':'); writes compare.html and changes.csv (to --out, else the outputs folder)")
    ap.add_argument("--fail-if-slower", default=None, metavar="PCT",
                    help="with --compare: exit 6 when a configuration is significantly slower by more than PCT "
                         "('10%%' or 0.1); 7-10 when it cannot tell (docs/running.md)")
    ap.add_argument("--shard-count", type=int, default=None, metavar="N",
                    help=f"the number of shards when the index comes from the environment (a Kubernetes "
                         f"Indexed Job's completions; or {_shard.COUNT_ENV})")
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if args.predict is not None:  # the model's predicted GPU figures: no grid, nothing run
        from helpers.predict.cli import predict_main
        from helpers.report.derive.costs import one_gpu_price

        return predict_main(str(args.predict), args.batch_size, args.precision or "float32", args.optimizer or "",
                            samples=args.samples or 0, grids=args.grids, price_of=one_gpu_price)
    alone = [o for o, v in (("--batch-size", args.batch_size), ("--precision", args.precision),
                            ("--samples", args.samples), ("--optimizer", args.optimizer)) if v is not None]
    if alone:
        print(f"{', '.join(alone)} go{'es' if len(alone) == 1 else ''} with --predict FILE.keras", file=sys.stderr)
        return Exit.BAD_GRID
    if args.compare is not None:  # two runs side by side: no grid, nothing run
        from helpers.runner.compare_run import compare_main

        return compare_main(*args.compare, out=args.out, fail_if_slower=args.fail_if_slower)
    if args.fail_if_slower is not None:
        print("--fail-if-slower goes with --compare OLD NEW", file=sys.stderr)
        return Exit.BAD_GRID
    logging.getLogger("papermill").setLevel(logging.WARNING)
    logging.getLogger("traitlets").setLevel(logging.ERROR)
    prep = prepare(args)
    if isinstance(prep, Exit):
        return prep
    if args.validate_only:
        if prep.lines:
            print("\n".join(prep.lines))
        for i, run in enumerate(prep.order, 1):
            print(f"[{i}/{len(prep.order)}] {label(run, always=True)}")
        print(f"{len(prep.points)} points valid, {len(prep.order)} runs")
        return Exit.OK
    if args.report_only:
        return report_only(args, prep)
    return run_grid(args, prep)


def run(argv=None) -> int:
    """``main`` for the command line: SIGTERM or Ctrl-C while setting up is a message and ``Exit.INTERRUPTED``,
    not a traceback (the grid handles its own)."""
    try:
        return main(argv)
    except KeyboardInterrupt as exc:  # SIGTERM / Ctrl-C while setting up, outside the grid's own handling
        print(f"interrupted ({exc or 'Ctrl-C'}) while setting up: records written so far are complete; run "
              "again to resume", file=sys.stderr)
        return Exit.INTERRUPTED


if __name__ == "__main__":
    sys.exit(run())
