"""``./run_all.sh --compare OLD NEW [--fail-if-slower 10%] [--out DIR]``: what changed between two runs of the suite
(``helpers.report.compare``), written as ``compare.html`` and ``changes.csv``; the significant changes printed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from helpers.exits import Exit
from helpers.paths import outputs_dir


def threshold(text: str) -> float:
    """'10%' or '0.1' -> 0.1; ValueError for anything else, or a value outside (0, 1)."""
    t = str(text).strip()
    v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    if not 0 < v < 1:
        raise ValueError(f"{text!r} is not a fraction between 0 and 1 (or a percentage, '10%')")
    return v


def _folders(arg: str) -> list[Path]:
    return [Path(p) for p in str(arg).split(os.pathsep) if p]


def compare_main(old: str, new: str, out: Path | None = None, fail_if_slower: str | None = None) -> int:
    from helpers.report.compare import FASTER, FEW, SLOWER, compare, regressions, write_changes
    from helpers.report.compare_page import page
    from helpers.report.render import write_text_atomic

    try:
        limit = None if fail_if_slower is None else threshold(fail_if_slower)
    except ValueError as exc:
        print(f"--fail-if-slower: {exc}", file=sys.stderr)
        return Exit.BAD_GRID
    sides = {"OLD": _folders(old), "NEW": _folders(new)}
    missing = [f"{side} {f}" for side, fs in sides.items() for f in fs if not f.is_dir()] + [
        f"{side}: no folder given" for side, fs in sides.items() if not fs]
    if missing:
        print("--compare: not a folder of records: " + "; ".join(missing), file=sys.stderr)
        return Exit.BAD_GRID
    cmp = compare(sides["OLD"], sides["NEW"])
    folder = Path(out) if out is not None else outputs_dir()
    try:
        csv = write_changes(cmp, folder)
        html = write_text_atomic(folder / "compare.html",
                                 page(cmp, [str(f) for f in sides["OLD"]], [str(f) for f in sides["NEW"]]))
    except OSError as exc:
        print(f"--compare: cannot write to {folder}: {exc}", file=sys.stderr)
        return Exit.CANNOT_WRITE
    rows = cmp.rows
    print(f"compared {len(rows)} configuration(s) on both sides: {sum(r['verdict'] == SLOWER for r in rows)} slower, "
          f"{sum(r['verdict'] == FASTER for r in rows)} faster, {sum(r['verdict'] == FEW for r in rows)} with "
          f"too few runs; {len(cmp.only_old)} on OLD only, {len(cmp.only_new)} on NEW only")
    for r in sorted((r for r in rows if r["verdict"] in (SLOWER, FASTER)), key=lambda r: r["ratio"]):
        print(f"  {r['verdict']}: {r['workload']} {r['backend']} {r['device']} b{r['batch_size']}: "
              f"{r['ratio']:.3g}x [{r['ratio_low']:.3g}-{r['ratio_high']:.3g}] (p = {r['p_value']:.2g}, "
              f"{r['old_runs']} and {r['new_runs']} runs)")
    for what, a, b in cmp.differences:
        print(f"  differs: {what}: OLD {a} | NEW {b}")
    print(f"comparison: {html}\nchanges: {csv}")
    if limit is not None:
        bad = regressions(cmp, limit)
        if bad:
            print(f"{len(bad)} configuration(s) significantly slower by more than {limit:.0%}: exit {int(Exit.SLOWER)}",
                  file=sys.stderr)
            return Exit.SLOWER
    return Exit.OK
