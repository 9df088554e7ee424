"""The runner's options, each declared once (``OPTIONS``: its flag, argparse's keywords, its help), and attached to
every verb that takes it (``helpers.runner.cli``'s verbs name theirs).

    add_options(parser, ("--out", "--inputs"))   # the declared options, on a verb's parser
    all_defaults()                               # a Namespace holding every option's default (the steps read any)
    takers("--out")                              # the verbs that take --out: ["run", "report", "compare"]

A verb's parser knows only its own options; an option of another verb is refused with exit 2 naming the verbs that
take it (``misplaced``), never dropped.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from helpers import exits
from helpers import grid as _grid
from helpers.exits import Exit
from helpers.runner import plan as _plan
from helpers.runner import progress as _progress
from helpers.runner import shard as _shard
from helpers.runner.grid_run import DEFAULT_TIMEOUT_S

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")

OPTIONS: dict[str, dict] = {
    "--timeout": dict(type=float, default=None, metavar="S",
                      help=f"per-point limit in seconds (default: the grid's timeout_s, else {DEFAULT_TIMEOUT_S})"),
    "--budget": dict(type=float, default=None, metavar="S",
                     help="start no new point after this many seconds (the rest: run again to resume)"),
    "--price-profile": dict(default=None, metavar="NAME",
                            help="this machine's profile in the prices file (its cost in the report)"),
    "--prices": dict(type=Path, default=None, metavar="FILE", help="prices file (default params/prices.yaml)"),
    "--price-set": dict(default=None, metavar="SET",
                        help="the prices the report uses: 'current' (today's, the default) or '2017' (seed 002's "
                             "table)"),
    "--rerun": dict(action="store_true", help="run points already done on this machine again (every repeat)"),
    "--skip-failed": dict(action="store_true",
                          help="on resume, do not run again the points that failed before (an out-of-memory at a "
                               "batch size fails again; default: failed and skipped points are retried)"),
    "--yes": dict(action="store_true",
                  help=f"run a grid over the size guard: more than {_plan.GUARD_RUNS} runs, or an estimated time over "
                       f"{_grid.fmt_duration(_plan.GUARD_S)} from earlier runs on this machine (default: such a grid "
                       f"is listed and refused, status {int(Exit.BAD_GRID)}, nothing run)"),
    "--no-report": dict(action="store_true", help="do not render the report"),
    "--no-reference": dict(action="store_true",
                           help="a report whose records have no GPU run does not compare with the bundled reference "
                                "GPU"),
    "--out": dict(type=Path, default=None, metavar="DIR",
                  help="the folder written to (default: outputs/): the report's report.html, results.csv, "
                       "configurations.csv and index.html; compare's compare.html and changes.csv"),
    "--inputs": dict(nargs="+", type=Path, default=None, metavar="DIR",
                     help="record folders the report reads (default: outputs/): runs of several machines, a published "
                          "reference, records copied from elsewhere"),
    "--shard": dict(default=None, metavar="I/N",
                    help="shard I (0 to N-1) of N of the grid's runs, balanced by estimated time; default: from "
                         "SLURM_ARRAY_TASK_ID/COUNT, or JOB_COMPLETION_INDEX with --shard-count (docs/cluster.md)"),
    "--shard-count": dict(type=int, default=None, metavar="N",
                          help="the number of shards when the index comes from the environment (a Kubernetes Indexed "
                               f"Job's completions; or {_shard.COUNT_ENV})"),
    "--batch-size": dict(type=int, default=None, metavar="N", help="the batch size (1 to 1,000,000; required)"),
    "--precision": dict(default=None, choices=PRECISIONS, help="the Keras dtype policy (default float32)"),
    "--samples": dict(type=int, default=None, metavar="N",
                      help="samples an epoch, for the predicted epoch time (0 to 10**10)"),
    "--optimizer": dict(default=None, metavar="NAME",
                        help="the optimiser (adam, sgd, ...; default: the saved model's, else adam)"),
    "--fail-if-slower": dict(default=None, metavar="PCT",
                             help="exit 6 when a configuration is significantly slower by more than PCT ('10%%' or "
                                  "0.1); 7-10 when it cannot tell (docs/running.md)"),
}


class Formatter(argparse.HelpFormatter):
    """argparse's layout, its lines never broken at a hyphen (an option named in the text stays whole:
    ``--fail-if-slower``, not ``--fail-if-`` and ``slower``)."""

    def _fill_text(self, text, width, indent):
        import textwrap

        return textwrap.fill(" ".join(text.split()), width, initial_indent=indent, subsequent_indent=indent,
                             break_on_hyphens=False)

    def _split_lines(self, text, width):
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


def epilog() -> str:
    return ("A grid's 'repeats: N' (top level, defaults or a block) runs each point N times, each in a fresh kernel, "
            "interleaved: every point once, then again. Each line says the runs left and the time left; a point "
            f"running over {_progress.LIVE_AFTER_S:g} s prints its epochs as they come. Exit status: "
            f"{exits.summary()}.")


def add_options(ap: argparse.ArgumentParser, names) -> None:
    for name in names:
        ap.add_argument(name, **OPTIONS[name])


def all_defaults() -> argparse.Namespace:
    """Every option's default: a verb's namespace starts from it, so the steps it shares with other verbs
    (``prepare``, ``summary``) read any option and find its default where the verb does not take it."""
    ap = argparse.ArgumentParser(add_help=False)
    add_options(ap, OPTIONS)
    return ap.parse_args([])


def takers(option: str, verbs) -> list[str]:
    """The names of the verbs (objects with ``name`` and ``options``) that take ``option``."""
    return [v.name for v in verbs if option in v.options]


def resolve(token: str, names) -> str | None:
    """The option of ``names`` that ``token`` (``--opt``, ``--opt=value``, or a unique abbreviation, as argparse
    reads one) means; None when none or several."""
    if not token.startswith("--") or token == "--":
        return None
    name = token.split("=", 1)[0]
    if name in names:
        return name
    hits = [n for n in names if n.startswith(name)]
    return hits[0] if len(hits) == 1 else None


def misplaced(verb, rest: list[str], verbs, *, abbrev: bool = True) -> str | None:
    """The usage error for the first option of ``rest`` that ``verb`` does not take while another verb does
    (``"--precision is an option of: predict"``), else None. ``abbrev``: the verb reads abbreviations (argparse's
    verbs do; ``lab`` passes the rest on to Jupyter, so only whole spellings count there)."""
    for tok in rest:
        if tok == "--":
            return None
        if not tok.startswith("--"):
            continue
        name = tok.split("=", 1)[0]
        if abbrev and resolve(tok, verb.options) is not None:
            continue  # its own (argparse says where an abbreviation is ambiguous)
        other = name if name in OPTIONS else (resolve(tok, OPTIONS) if abbrev else None)
        if other is None or other in verb.options:
            continue
        return f"{verb.name} takes no {other}: {other} is an option of: {', '.join(takers(other, verbs))}"
    return None
