"""``./run_all.sh compare OLD NEW [--fail-if-slower 10%] [--out DIR]``: what changed between two runs of the suite
(``helpers.report.words.compare``), written as ``compare.html`` and ``changes.csv``; the significant changes printed.

Under ``--fail-if-slower`` every reason the gate cannot pass is printed (stderr), each with its status
(``helpers.exits``); the command exits with the first of ``GATE``'s order that applies:

- ``NO_RECORDS`` (8): a side holds no readable record, or no ok run; or (where nothing below applies) no
  configuration has ok runs on both sides: a gate that compared nothing cannot pass;
- ``CONFLICT`` (9): a side holds copies of one run that say different things;
- ``NEW_FAILED`` (7): a configuration measured on OLD whose every NEW run failed (out of memory, a crash);
- ``SLOWER`` (6): a configuration significantly slower by more than the threshold;
- ``SLOWER_UNTESTED`` (10): a configuration past the threshold with one run on a side (no test can say).

``CANNOT_WRITE`` (4) where ``compare.html`` or ``changes.csv`` cannot be written (the summary and the gate's
reasons still printed). Every record's text printed goes through ``compare.shown`` (no control character reaches the
terminal); the lists printed are bounded (``SHOWN``; the rest in changes.csv).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from helpers.exits import Exit
from helpers.paths import outputs_dir

GATE = (Exit.NO_RECORDS, Exit.CONFLICT, Exit.NEW_FAILED, Exit.SLOWER, Exit.SLOWER_UNTESTED)  # the first found wins
WARN_AT = 0.10  # without --fail-if-slower: a configuration slower by more on one run a side is warned of
SHOWN = 20  # configurations printed a list (slower, faster, failed, ...): the rest are in changes.csv and the page


def threshold(text: str) -> float:
    """'10%' or '0.1' -> 0.1; ValueError for anything else, or a value outside (0, 1)."""
    t = str(text).strip()
    v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    if not 0 < v < 1:
        raise ValueError(f"{text!r} is not a fraction between 0 and 1 (or a percentage, '10%')")
    return v


def _folders(arg: str) -> list[Path]:
    return [Path(p) for p in str(arg).split(os.pathsep) if p]


def _bounded(lines: list[str], more: str = "in changes.csv") -> list[str]:
    return lines[:SHOWN] + ([f"  ... and {len(lines) - SHOWN} more ({more})"] if len(lines) > SHOWN else [])


def _ratio(r) -> str:
    """NEW ÷ OLD as the page prints it (``compare_figures.ratio_shown``), its interval where the runs give one."""
    from helpers.report.words.compare_figures import interval_shown, ratio_shown

    iv = interval_shown(r)
    return ratio_shown(r).replace("×", "x") + (f" [{iv}]" if iv else "")


def gate(cmp, limit: float) -> list[tuple[Exit, str]]:
    """Every reason ``--fail-if-slower`` does not pass: (status, message), in ``GATE``'s order."""
    from helpers.report.words.compare import name, regressions, shown, untested

    found: list[tuple[Exit, str]] = []
    empty = [side for side, c in cmp.counts.items() if not c["ok_runs"]]
    for side in empty:
        c = cmp.counts[side]
        why = (f"no readable record ({c['files_left_out']} file(s) left out: "
               f"{'; '.join(shown(w) for _, w in cmp.skipped[:3]) or 'none found'})" if not c["records"] else
               f"no ok run among its {c['records']} record(s)")
        found.append((Exit.NO_RECORDS, f"{side} holds {why}: nothing to compare"))
    for side, words in cmp.conflicts.items():
        found.append((Exit.CONFLICT, f"{side} holds {len(words)} conflicting copies of runs (copies of one run that "
                                     f"say different things; which is true is not guessed): {words[0]}"
                                     + (f"; and {len(words) - 1} more" if len(words) > 1 else "")))
    if cmp.failed_new:
        found.append((Exit.NEW_FAILED, f"{len(cmp.failed_new)} configuration(s) measured on OLD failed every run on "
                                       f"NEW: " + "; ".join(f"{name(r)} ({shown(r['reason']) or 'failed'})"
                                                            for r in cmp.failed_new[:3])
                      + ("; ..." if len(cmp.failed_new) > 3 else "")))
    bad = regressions(cmp, limit)
    if bad:
        found.append((Exit.SLOWER, f"{len(bad)} configuration(s) significantly slower by more than {limit:.0%}: "
                                   + "; ".join(f"{name(r)} {_ratio(r)}" for r in bad[:3])
                                   + ("; ..." if len(bad) > 3 else "")))
    few = untested(cmp, limit)
    if few:
        found.append((Exit.SLOWER_UNTESTED, f"{len(few)} configuration(s) slower by more than {limit:.0%} on one run "
                                            f"a side, not enough runs to test: "
                                            + "; ".join(f"{name(r)} {_ratio(r)} ({r['old_runs']} and {r['new_runs']} "
                                                        f"runs)" for r in few[:3])
                                            + ("; ..." if len(few) > 3 else "")))
    if not cmp.rows and not found:
        found.append((Exit.NO_RECORDS, "no configuration has ok runs on both sides: nothing compared"))
    return sorted(found, key=lambda f: GATE.index(f[0]))


def _summary(cmp, limit: float | None) -> list[str]:
    """What the terminal (a CI log) is told: the counts, the changes largest first, a warning for each configuration
    past ``limit`` (else ``WARN_AT``) on one run a side and for what could not be compared, what differs; every
    record's text ``shown``."""
    from helpers.report.words.compare import CONFLICTED, FASTER, FEW, SLOWER, name, shown, untested

    rows = cmp.rows
    lines = [f"compared {len(rows)} configuration(s) on both sides: {sum(r['verdict'] == SLOWER for r in rows)} "
             f"slower, {sum(r['verdict'] == FASTER for r in rows)} faster, {sum(r['verdict'] == FEW for r in rows)} "
             f"with too few runs; {len(cmp.only_old)} on OLD only, {len(cmp.only_new)} on NEW only"
             + (f"; {len(cmp.failed_new)} failed every run on NEW" if cmp.failed_new else "")]
    lines += _bounded([f"  {r['verdict']}: {name(r)}: {_ratio(r)} "
                       f"(p = {r['p_value']:.2g}, {r['old_runs']} and {r['new_runs']} runs)"
                       for r in sorted((r for r in rows if r["verdict"] in (SLOWER, FASTER)),
                                       key=lambda r: r["log_ratio"])])
    lines += _bounded([f"  WARNING: not enough runs: {name(r)}: {_ratio(r)} ({r['old_runs']} and {r['new_runs']} "
                       f"runs): untested" for r in sorted(untested(cmp, WARN_AT if limit is None else limit),
                                                          key=lambda r: r["log_ratio"])])
    lines += _bounded([f"  WARNING: every NEW run failed: {name(r)} ({r['failed_runs']} run(s): "
                       f"{shown(r['reason']) or 'no reason recorded'})" for r in cmp.failed_new])
    lines += _bounded([f"  WARNING: {CONFLICTED}: {name(r)}: no verdict" for r in rows if r["verdict"] == CONFLICTED])
    lines += _bounded([f"  WARNING: not compared: {n} ({why})" for n, why in cmp.dropped], "on the page")
    for side, c in cmp.counts.items():
        if not c["records"]:
            lines.append(f"  WARNING: {side} holds no readable record ({c['files_left_out']} file(s) left out)")
    lines += [f"  differs: {shown(what)}: OLD {shown(a)} | NEW {shown(b)}" for what, a, b in cmp.differences]
    return lines


def compare_main(old: str, new: str, out: Path | None = None, fail_if_slower: str | None = None) -> int:
    from helpers.report.publish.compare_page import page, write_changes
    from helpers.report.publish.render import write_page
    from helpers.report.words.compare import compare, shown

    try:
        limit = None if fail_if_slower is None else threshold(fail_if_slower)
    except ValueError as exc:
        print(f"--fail-if-slower: {shown(exc)}", file=sys.stderr)
        return Exit.BAD_GRID
    sides = {"OLD": _folders(old), "NEW": _folders(new)}
    missing = [f"{side} {f}" for side, fs in sides.items() for f in fs if not f.is_dir()] + [
        f"{side}: no folder given" for side, fs in sides.items() if not fs]
    if missing:
        print("--compare: not a folder of records: " + shown("; ".join(missing)), file=sys.stderr)
        return Exit.BAD_GRID
    cmp = compare(sides["OLD"], sides["NEW"])
    folder = Path(out) if out is not None else outputs_dir()
    written = None
    try:
        csv = write_changes(cmp, folder)
        html = write_page(folder / "compare.html",
                                 page(cmp, [str(f) for f in sides["OLD"]], [str(f) for f in sides["NEW"]]))
    except OSError as exc:
        written = f"--compare: cannot write to {shown(folder)}: {shown(exc)}: exit {int(Exit.CANNOT_WRITE)}"
    print("\n".join(_summary(cmp, limit)))
    if written is None:
        print(f"comparison: {shown(html)}\nchanges: {shown(csv)}")
    problems = gate(cmp, limit) if limit is not None else []
    for status, message in problems:
        print(f"--fail-if-slower: {message}: exit {int(status)}", file=sys.stderr)
    if written is not None:
        print(written, file=sys.stderr)
        return Exit.CANNOT_WRITE
    return problems[0][0] if problems else Exit.OK
