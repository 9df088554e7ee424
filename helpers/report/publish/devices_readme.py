"""The scaling table as it is shown: the report's table and a reference README's, from the same strings.

    cells = shown(device_scaling(summ))       # every figure a string, formatted once (fmt.rounded, eff_shown)
    print(readme_table(table))                # the README's Markdown table of the same strings

    python -m helpers.report.publish.devices_readme reference/h100x4/records      # prints the README's table

One formatting of each figure: the report's scaling table (sections/scaling.py) and the README table take the
strings ``shown`` makes; a sentence takes ``scaling_words.eff_shown`` and ``scaling_words.range_shown``, as
``shown`` does.
"""

from __future__ import annotations

import sys
from pathlib import Path

from helpers.report.derive.devices import INPUTS, PER_GPU
from helpers.report.load.values import isnull
from helpers.report.words.fmt import plain, rounded
from helpers.report.words.scaling_words import eff_shown, marks_of, path_words, range_shown, way_words

README_COLUMNS = ("model (batch per GPU)", "input path", "GPUs", "way", "samples/s", "efficiency", "runs")


def shown(table):
    """The scaling table as the report shows it, every figure a string formatted here once (the section's table,
    ``readme_table``): the model with its batch per GPU, the input path and the way in words, samples/s and
    efficiency with their ranges over the runs; sorted by model, input path (``INPUTS``' order), GPUs, way."""
    t = table.copy()
    many = {c: t[c].nunique() > 1 for c in ("backend", "precision")}
    rank = {p: i for i, p in enumerate(INPUTS)}
    t["_o"] = [(w, b, p, rank.get((i, o), 99), n, k != PER_GPU) for w, b, p, i, o, n, k in zip(
        t["workload"], t["backend"], t["precision"], t["input"], t["data on"], t["devices"], t["kind"])]
    t = t.sort_values("_o", kind="stable")
    return t.assign(**{
        "model (batch per GPU)": [f"{w}{' ' + b if many['backend'] else ''}{' ' + p if many['precision'] else ''}"
                                  f" ({plain(bs)})" for w, b, p, bs in zip(t["workload"], t["backend"], t["precision"],
                                                                       t["batch per device"])],
        "input path": [path_words(i, o, inputs=False) for i, o in zip(t["input"], t["data on"])],
        "GPUs": [g if "hosts" in g else str(n) for g, n in zip(t["GPUs"], t["devices"])],
        "way": [way_words(w, n) for w, n in zip(t["way"], t["devices"])],
        # samples/s to the digits its runs support, as every other part of the report writes the figure
        "samples/s": [rounded(v, d) for v, d in zip(t["samples/s"], t["digits"])],
        "samples/s over the runs": [range_shown(r, lambda v, d=d: rounded(v, d))
                                    for r, d in zip(t["samples/s over the runs"], t["digits"])],
        "efficiency": [eff_shown(v) for v in t["efficiency"]],
        "efficiency over the runs": [range_shown(r, eff_shown) for r in t["efficiency over the runs"]],
        "J per epoch": [rounded(v, d) for v, d in zip(t["J per epoch"], t["digits"])],
        "$ per 1k samples": [rounded(v, d) for v, d in zip(t["$ per 1k samples"], t["digits"])],
        "$ per epoch": [rounded(v, d) for v, d in zip(t["$ per epoch"], t["digits"])],
        "runs": ["" if isnull(v) else str(int(v)) for v in t["runs"]],
        "marks": [marks_of(r) for r in t.to_dict("records")],
    })[["model (batch per GPU)", "input path", "GPUs", "way", "samples/s", "efficiency", "efficiency over the runs",
        "samples/s over the runs", "runs", "marks", "backend", "precision", "J per epoch", "$ per 1k samples",
        "$ per epoch"]].reset_index(drop=True)


def readme_table(table) -> str:
    """The scaling table (``devices.device_scaling``) as a reference README's Markdown table: model (batch per GPU),
    input path, GPUs, way, samples/s (median over the runs, their range in brackets), efficiency (likewise), runs;
    every figure the string the report's table shows (``shown``)."""
    s = shown(table)
    lines = ["| " + " | ".join(README_COLUMNS) + " |",
             "| " + " | ".join("---:" if c in ("GPUs", "samples/s", "efficiency", "runs") else "---"
                               for c in README_COLUMNS) + " |"]
    for r in s.to_dict("records"):
        cells = {**r, "samples/s": _with(r["samples/s"], r["samples/s over the runs"]) + (
            f" {r['marks']}" if r["marks"] else ""),
                 "efficiency": _with(r["efficiency"], r["efficiency over the runs"])}
        lines.append("| " + " | ".join(str(cells[c]).replace("|", "\\|") for c in README_COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def _with(fig: str, rng: str) -> str:
    return f"{fig} ({rng})" if fig and rng else fig


def main(argv=None) -> int:
    """Print the README table of the records under the folders given (one lease's scaling grid)."""
    from helpers.report.derive.context import build_context
    from helpers.report.derive.devices import scaling_table

    folders = [Path(a) for a in (sys.argv[1:] if argv is None else argv)]
    if not folders or any(not f.is_dir() for f in folders):
        print("usage: python -m helpers.report.publish.devices_readme RECORDS_DIR [RECORDS_DIR ...]", file=sys.stderr)
        return 2
    table = scaling_table(build_context(folders, use_reference=False))
    if table is None:
        print("no configuration of these records ran on more than one GPU", file=sys.stderr)
        return 1
    print(readme_table(table), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
