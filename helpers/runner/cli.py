"""The grid runner: validate every grid, then run each point in a fresh kernel through papermill.

Usage (``run_all.sh`` runs ``python -m helpers.runner``; docs/running.md lists every verb's options)::

    python -m helpers.runner [run] [GRID.yaml ...] [--timeout S] [--rerun] [--no-report] [--yes] ...
    python -m helpers.runner validate [GRID.yaml ...]        # check, list every run, write nothing
    python -m helpers.runner report [--inputs DIR ...] [--out DIR]
    python -m helpers.runner compare OLD NEW [--fail-if-slower 10%]
    python -m helpers.runner predict FILE.keras --batch-size N
    python -m helpers.runner lab [jupyter lab options]

Each verb is a ``Verb`` below: its one-line summary, the options it takes (declared once in ``cli_options.py``,
attached to every verb that takes them) and what it runs. A first argument that is not a verb means ``run``. An
option of another verb is refused (exit 2, naming the verbs that take it); the old flags (``--validate-only``,
``--report-only``, ``--compare``, ``--predict``, ``--lab``) are read as their verb with a note (``cli_legacy.py``).

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
``validate`` prints the same count, estimate and warning, lists every run and exits ``Exit.OK``.

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

from helpers.exits import Exit
from helpers.runner import cli_legacy
from helpers.runner.cli_options import Formatter, add_options, all_defaults, epilog, misplaced
from helpers.runner.grid_run import report_only, run_grid
from helpers.runner.plan import label
from helpers.runner.prepare import prepare


class Verb:
    """One verb of the command line: its name, its line in ``--help``, the options it takes (``cli_options.OPTIONS``'
    names), its positionals (``positionals``) and what it does (``__call__``, the exit status)."""

    name = ""
    summary = ""
    description = ""
    options: tuple[str, ...] = ()

    def positionals(self, ap: argparse.ArgumentParser) -> None:
        pass

    def __call__(self, args: argparse.Namespace) -> int:
        raise NotImplementedError


def _grids(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("grids", nargs="*", type=Path, metavar="GRID",
                    help="grid files (default: params/quick.yaml)")


def _prepared(args):
    logging.getLogger("papermill").setLevel(logging.WARNING)
    logging.getLogger("traitlets").setLevel(logging.ERROR)
    return prepare(args)


class Run(Verb):
    name = "run"
    summary = "run the grids' points, each in a fresh kernel, then render the report (the default verb)"
    description = ("Validate every grid, then run each point in a fresh kernel through papermill and render the "
                   "report. Points done before on this machine are not run again (resume).")
    options = ("--timeout", "--budget", "--rerun", "--skip-failed", "--yes", "--no-report", "--no-reference",
               "--out", "--inputs", "--shard", "--shard-count", "--price-profile", "--prices", "--price-set")
    positionals = staticmethod(_grids)

    def __call__(self, args):
        prep = _prepared(args)
        return prep if isinstance(prep, Exit) else run_grid(args, prep)


class Validate(Verb):
    name = "validate"
    summary = "check the grids (and the options run would take), print their size and estimate, list every run"
    description = ("Validate the grids as run would (every problem, each file:line), print their size and estimated "
                   "time, list every run of this shard (with its repeat) and exit; writes nothing. The options are "
                   "those that decide the runs listed or that run would check.")
    options = ("--shard", "--shard-count", "--rerun", "--skip-failed", "--timeout", "--price-profile", "--prices",
               "--price-set")
    positionals = staticmethod(_grids)

    def __call__(self, args):
        prep = _prepared(args)
        if isinstance(prep, Exit):
            return prep
        if prep.lines:
            print("\n".join(prep.lines))
        for i, run in enumerate(prep.order, 1):
            print(f"[{i}/{len(prep.order)}] {label(run, always=True)}")
        print(f"{len(prep.points)} points valid, {len(prep.order)} runs")
        return Exit.OK


class Report(Verb):
    name = "report"
    summary = "render the report from the records of outputs/ (or --inputs), run nothing"
    description = ("Render the report (report.html, its CSVs, index.html) from the records of outputs/ or --inputs, "
                   "into --out (default outputs/); creates no run folder.")
    options = ("--inputs", "--out", "--prices", "--price-set", "--no-reference")

    def __call__(self, args):
        prep = _prepared(args)
        return prep if isinstance(prep, Exit) else report_only(args, prep)


class Compare(Verb):
    name = "compare"
    summary = "what changed between two runs: compare.html and changes.csv, the significant changes printed"
    description = ("What changed between two runs, OLD and NEW, each a folder of records (several: joined by "
                   "os.pathsep, ':'); writes compare.html and changes.csv (to --out, else the outputs folder).")
    options = ("--out", "--fail-if-slower")

    def positionals(self, ap):
        ap.add_argument("old", metavar="OLD", help="the records before (folders joined by ':')")
        ap.add_argument("new", metavar="NEW", help="the records after (folders joined by ':')")

    def __call__(self, args):  # two runs side by side: no grid, nothing run
        from helpers.runner.compare_run import compare_main

        return compare_main(args.old, args.new, out=args.out, fail_if_slower=args.fail_if_slower)


class Predict(Verb):
    name = "predict"
    summary = "a model's predicted samples/s on the reference GPU per backend, with its interval; runs nothing"
    description = ("Print the model's predicted samples/s on the reference GPU per backend, each with its 80% "
                   "interval (fitted on the bundled reference: docs/custom_model.md); runs nothing else.")
    options = ("--batch-size", "--precision", "--samples", "--optimizer")

    def positionals(self, ap):
        ap.add_argument("model", metavar="FILE.keras", help="the saved Keras model")
        ap.add_argument("grids", nargs="*", help=argparse.SUPPRESS)  # refused by predict_main, naming them

    def __call__(self, args):  # the model's predicted GPU figures: no grid, nothing run
        from helpers.predict.cli import predict_main
        from helpers.report.derive.costs import one_gpu_price

        return predict_main(str(args.model), args.batch_size, args.precision or "float32", args.optimizer or "",
                            samples=args.samples or 0, grids=args.grids, price_of=one_gpu_price)


class Lab(Verb):
    name = "lab"
    summary = "JupyterLab on notebooks/ (its URL and token printed); the options go to `jupyter lab`"
    description = ("JupyterLab on the suite's notebooks, its kernel the suite's Python; every option after `lab` goes "
                   "to `jupyter lab` (--no-browser --port 8899 ...; `jupyter lab --help` lists them), except the "
                   "runner's own options, refused.")

    def positionals(self, ap):
        ap.add_argument("jupyter", nargs="*", metavar="JUPYTER-OPTION", help="an option of `jupyter lab`")

    def __call__(self, args):
        from helpers.runner.lab import main as lab_main

        return lab_main(args.jupyter)


VERBS: dict[str, Verb] = {v.name: v for v in (Run(), Validate(), Report(), Compare(), Predict(), Lab())}


def parsers() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top parser (its --help lists every verb) and each verb's own."""
    top = argparse.ArgumentParser(
        prog="run_all.sh", formatter_class=Formatter, epilog=epilog(),
        description=__doc__.split("\n\n")[0] + " A first argument that is not a verb means run: `run_all.sh GRID.yaml` "
                    "is `run_all.sh run GRID.yaml`. `run_all.sh --current-python VERB ...` uses the current Python "
                    "as it is, installing nothing. `run_all.sh VERB --help` lists a verb's options.")
    subs = top.add_subparsers(title="verbs", metavar="VERB", dest="verb")
    own = {}
    for verb in VERBS.values():
        ap = subs.add_parser(verb.name, help=verb.summary, description=verb.description, formatter_class=Formatter)
        verb.positionals(ap)
        add_options(ap, verb.options)
        own[verb.name] = ap
    return top, own


def parser() -> argparse.ArgumentParser:
    return parsers()[0]


def parse(argv=None) -> tuple[Verb, argparse.Namespace]:
    """The verb and its options of ``argv`` (default: the command line), each option not given at its default;
    a usage error (two verbs, an option of another verb, a bad value) exits 2 as argparse does, ``--help`` 0."""
    top, own = parsers()
    argv = cli_legacy.translate(list(sys.argv[1:] if argv is None else argv), VERBS, top.error)
    if argv and argv[0] in ("-h", "--help"):
        top.print_help()
        raise SystemExit(0)
    if not argv or argv[0] not in VERBS:
        argv = ["run", *argv]
    verb, rest, ap = VERBS[argv[0]], argv[1:], own[argv[0]]
    wrong = misplaced(verb, rest, VERBS.values(), abbrev=verb.name != "lab")
    if wrong:
        ap.error(wrong)
    args = all_defaults()
    if verb.name == "lab":  # everything goes to `jupyter lab`, whose options argparse cannot know
        if "-h" in rest or "--help" in rest:
            ap.print_help()
            raise SystemExit(0)
        args.jupyter = rest
    else:
        ap.parse_args(rest, namespace=args)
    args.verb = verb.name
    args.grids = getattr(args, "grids", None) or []
    args.report_only, args.validate_only = verb.name == "report", verb.name == "validate"  # what prepare() reads
    return verb, args


def main(argv=None) -> int:
    try:
        verb, args = parse(argv)
    except SystemExit as exc:  # argparse's usage error (printed): the status, for callers in this process
        if exc.code in (0, None):
            raise
        return Exit.BAD_GRID
    return verb(args)


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
