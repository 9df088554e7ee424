"""The comparison of two runs as one self-contained page (``compare.html``): the significant changes first, largest
first, in a chart and a sentence; then every configuration with its verdict, what differs between the sides beside
them, what could not be compared (every NEW run failed, conflicting copies, a configuration dropped) and the
configurations of one side only.

The chart draws the ``CHART_ROWS`` largest changes (by the size of the log ratio) and says how many more are in
changes.csv: its height is bounded, whatever the number of configurations. It is drawn with the report's set-up
(``charts.setup_plots``: no mathtext, so a record's ``$`` and ``{`` are drawn as they are); a chart that cannot be
drawn leaves a note and the tables. Every record's text is ``compare.shown`` (no control character) and escaped.

    page(cmp, old_names, new_names) -> str
"""

from __future__ import annotations

import math
from pathlib import Path

from helpers.report.load.assets import REPORT_CSS
from helpers.report.load.values import isnull
from helpers.report.load.visible import shown_path
from helpers.report.publish.inert import CSP
from helpers.report.words.compare import (
    CHANGES,
    COLUMNS,
    CONFLICTED,
    DID_NOT_LEARN,
    FAILED_NEW,
    FASTER,
    FEW,
    MAX_RUNS,
    NONE,
    SLOWER,
    Comparison,
    row_key,
    shown,
)
from helpers.report.words.compare_figures import interval_shown as _interval
from helpers.report.words.compare_figures import ratio_shown as _ratio
from helpers.report.words.compare_words import first_sentence
from helpers.report.words.fmt import MARKS_SHORT, count, esc, html_table, note, plain, stable

CHART_ROWS = 25  # changes drawn, largest first; the rest are in the table and changes.csv
CHART_CLIP = (1e-3, 1e3)  # a ratio or interval end past these is drawn at the edge (its figure still written)
CHART_LABEL = 90  # characters of a configuration's name on the chart: a longer one is cut (a page is 11 inches)
LISTED = 10  # a list of configurations longer than this is folded (click to open)
TABLE_ROWS = 1000  # configurations in the page's table (the most notable first past it); changes.csv has every one
LABELLED = 300  # a list of configurations named by ``labels.labels`` (what varies) up to this many; past it, plainly
# the most notable first, where the table is cut
_ORDER = {SLOWER: 0, FASTER: 0, DID_NOT_LEARN: 1, CONFLICTED: 1, FEW: 2, NONE: 3}


def _name(r) -> str:
    """A configuration as the report's labels name it: workload, device and backend, batch, then what tells it apart
    from the others of its workload (``names``), else its precision where not float32."""
    base = f"{r['workload']} · {r['device']} · {r['backend']} · b{r['batch_size']}"
    extra = r.get("_label") or ("" if str(r.get("precision")) in ("float32", "", "None") else str(r["precision"]))
    return shown(f"{base} · {extra}" if extra else base)


def _plain_label(r) -> str:
    """What sets a configuration apart beside its workload, device, backend and batch, every part of its key said
    (linear in the rows: the label of a list too long for ``labels.labels``)."""
    parts = [f"{k}={r.get(k)}" for k in ("precision", "threads", "jit_compile", "augment", "workers")
             if str(r.get(k)) not in ("", "None", "float32", "0")]
    return " · ".join(parts + ([str(r["knobs"])] if r.get("knobs") else []))


def names(rows: list[dict]) -> list[dict]:
    """``rows`` with ``_label``: what differs between the configurations of one workload (``labels.labels``, past
    its device and backend), so that a name holds no knob every configuration shares; past ``LABELLED`` rows every
    part of the key (``_plain_label``: ``labels`` compares every row with the others)."""
    import pandas as pd

    from helpers.report.words.labels import labels

    out = [dict(r) for r in rows]
    if len(out) > LABELLED:
        for r in out:
            r["_label"] = _plain_label(r)
        return out
    frame = pd.DataFrame(out) if out else pd.DataFrame()
    for col in ("threads", "workers"):  # the key's text back to numbers, as the report's labels read them
        if col in frame:
            frame[col] = pd.to_numeric(frame[col], errors="coerce")
    for _, g in frame.groupby("workload", sort=False) if len(frame) else ():
        try:
            texts = labels(g.drop(columns=["batch_size"]), keep=())
        except Exception:  # noqa: BLE001 - one workload's odd values: its names without the label, nothing else
            continue
        for i, text in zip(g.index, texts):
            out[i]["_label"] = text
    return out


def _cut(text: str) -> str:
    """A chart's label cut at ``CHART_LABEL`` characters (the table names it whole)."""
    return text if len(text) <= CHART_LABEL else text[:CHART_LABEL - 1] + "…"


def _clip(v: float) -> float:
    return min(max(v, CHART_CLIP[0]), CHART_CLIP[1]) if not isnull(v) else 1.0


def chart(changed: list[dict]):
    """The significant changes, largest first (at most ``CHART_ROWS``: the caller's cut): NEW ÷ OLD on a log axis
    with its interval (clipped to ``CHART_CLIP``); slower in one colour, faster in another. Drawn with the report's
    set-up: no text of a record is parsed as mathtext."""
    from helpers.report.publish.charts import setup_plots

    plt = setup_plots()
    changed = changed[:CHART_ROWS]
    fig, ax = plt.subplots(figsize=(11, 0.3 * len(changed) + 1.1))
    for y, r in enumerate(changed):
        colour = "#D55E00" if r["verdict"] == SLOWER else "#0072B2"
        low, high = _clip(r["ratio_low"]), _clip(r["ratio_high"])
        ax.plot([low, high], [y, y], color=colour, lw=1.2)
        ax.scatter([_clip(r["ratio"])], [y], color=colour, zorder=3, s=24)
        ax.annotate(_ratio(r), (high, y), xytext=(5, 0), textcoords="offset points",
                    fontsize=8, va="center")
    ax.axvline(1, ls=":", color="k", lw=0.8)
    ax.set_yticks(range(len(changed)), [_cut(_name(r)) for r in changed], fontsize=8)
    ax.set_ylim(len(changed) - 0.5, -0.5)
    lo = min(min(_clip(r["ratio_low"]) for r in changed), 0.8) / 1.1
    hi = max(max(_clip(r["ratio_high"]) for r in changed), 1.25) * 1.4
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ticks = [t for t in (0.001, 0.01, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 5, 10, 100, 1000)
             if lo <= t <= hi]
    ax.set_xticks(ticks, [f"{plain(t)}" for t in ticks], fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel("NEW ÷ OLD samples/s (log scale; left of the dotted line: slower; bars: the interval)", fontsize=9)
    fig.tight_layout()
    return fig


def _chart_html(changed: list[dict], total: int) -> str:
    """The chart of the largest changes (``changed``, of ``total``) and, past ``CHART_ROWS``, how many more there
    are; a note where it cannot be drawn (the tables stay)."""
    from helpers.report.publish.charts import figure_html

    more = total - CHART_ROWS
    try:
        html = figure_html(chart(changed), f"significant changes, NEW ÷ OLD, the {min(len(changed), CHART_ROWS)} "
                                           "largest first")
    except Exception as exc:  # noqa: BLE001 - a chart's failure costs the chart, never the page
        import matplotlib.pyplot as plt

        plt.close("all")
        return note("The chart of the changes could not be drawn ({}); the table below lists them.",
                    type(exc).__name__, kind="warn")
    if more > 0:
        html += note("The {} largest of {} significant changes are drawn: {} more are in {}.",
                     CHART_ROWS, total, more, CHANGES)
    return html


def page(cmp: Comparison, old_names: list[str], new_names: list[str]) -> str:
    """The page's HTML (every value escaped)."""
    conf = cmp.rows[0]["confidence"] if cmp.rows else 0.99
    changed = sorted((r for r in cmp.rows if r["verdict"] in (SLOWER, FASTER)), key=lambda r: abs(r["log_ratio"]),
                     reverse=True)
    rows = cmp.rows
    if len(rows) > TABLE_ROWS:  # the most notable: the changes largest first, conflicts, single runs, the rest
        rows = sorted(rows, key=lambda r: (_ORDER.get(r["verdict"], 4), -abs(r["log_ratio"])))[:TABLE_ROWS]
    rows = names(rows)
    new_names, old_names = [shown(shown_path(n)) for n in new_names], [shown(shown_path(n)) for n in old_names]
    body = ["<h1>What changed between two runs</h1>",
            note("OLD: {}; NEW: {}.", ", ".join(old_names), ", ".join(new_names)),
            f'<p class="cgb-finding">{esc(first_sentence(cmp, conf))}</p>']
    body.extend(_problems(cmp))
    if changed:
        body.append(_chart_html(names(changed[:CHART_ROWS]), len(changed)))
    elif cmp.rows:
        body.append(note("No change passes the test, so there is no chart of changes: the table below gives every "
                         "configuration's ratio."))
    if cmp.differences:
        body.append("<h2>What differs between the sides</h2>")
        body.append(note("Beside a change, what could explain it: the libraries, the machine, the host's state."))
        body.append(html_table(_frame([tuple(map(shown, d)) for d in cmp.differences], ["what", "OLD", "NEW"]),
                               max_rows=None))
    if cmp.rows:
        body.append("<h2>Every configuration on both sides</h2>")
        body.append(note(
            "samples/s: the median over a side's runs of each run's figure, to the digits its runs support, with its "
            "marks ({}) and its runs in brackets; NEW ÷ OLD: the ratio of those two medians. How a change is called, "
            "in plain words: the runs of each side scatter, and a change is said (<i>faster</i>, <i>slower</i>) only "
            "where the two sides' runs lie further apart than that scatter would put them by chance once in {} "
            "comparisons (Welch's t test on the logs of the runs' figures); a side with one run shows no scatter, so "
            "its configuration is <i>not enough runs</i>. The method: docs/running.md, <i>What changed between two "
            "runs</i>. Every figure is also in {}.", MARKS_SHORT, f"{count(round(1 / (1 - conf)))}", CHANGES))
    if len(rows) < len(cmp.rows):
        body.append(note("{} configurations: the {} most notable shown (the significant changes largest first, then "
                         "conflicting copies, single runs, the rest); every one is in {}.", len(cmp.rows), len(rows),
                         CHANGES, kind="warn"))
    if rows:
        body.append(html_table(_table(rows), max_rows=None))
    if cmp.failed_old:
        body.append(f"<h2>Failed on OLD, measured on NEW ({len(cmp.failed_old)})</h2>")
        body.append(note("Every OLD run of these failed; NEW measured them: nothing to compare them with.")
                    + _listed([(_name(r), r["failed_runs"], shown(r["reason"])) for r in names(cmp.failed_old)],
                              ["configuration", "failed OLD runs", "the first reason"]))
    for side, only in (("OLD", cmp.only_old), ("NEW", cmp.only_new)):
        if only:
            body.append(f"<h2>On the {side} side only ({len(only)})</h2>")
            body.append(note("Measured on one side only: nothing to compare them with. Where the other side measured "
                             "the model with other knobs, the knobs that differ are named: a pair is made only of "
                             "configurations that differ in nothing but the side." if any(r.get("near") for r in only)
                             else "Measured on one side only: nothing to compare them with.")
                        + (_listed([(_name(r), shown(r.get("near") or "")) for r in names(only)],
                                   ["configuration", "measured on the other side with other knobs"])
                           if any(r.get("near") for r in only) else
                           _listed([(_name(r),) for r in names(only)], ["configuration"])))
    if cmp.skipped:
        body.append(note("{} file(s) that are not records were left out: {}.", len(cmp.skipped),
                         "; ".join(f"{shown(f)} ({shown(w)})" for f, w in cmp.skipped[:5]), kind="warn"))
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>What changed</title>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">" + REPORT_CSS
            + "</head><body><main style='max-width:1300px;margin:auto'>"
            + "".join(body) + "</main></body></html>")


def _side(r, side: str) -> str:
    """One side's figure of a configuration as the report shows it: '2,160 †§ (1)' (its runs in brackets)."""
    m = r.get(f"{side}_marks") or ""
    return f"{r[f'{side}_shown']}{' ' + m if m else ''} ({r[f'{side}_runs']})"


def _table(rows: list[dict]):
    """Every configuration on both sides: OLD, NEW, NEW ÷ OLD, the verdict; the interval and the runs a side that
    would show the change only where some row has one (a column is filled, or not drawn)."""
    cols = {"configuration": [_name(r) for r in rows], "OLD samples/s (runs)": [_side(r, "old") for r in rows],
            "NEW samples/s (runs)": [_side(r, "new") for r in rows], "NEW ÷ OLD": [_ratio(r) for r in rows]}
    if any(not isnull(r.get("ratio_low")) for r in rows):
        cols["between-run interval"] = [_interval(r) or "none (one run on a side)" for r in rows]
    cols["verdict"] = [r["verdict"] for r in rows]
    if any(r["verdict"] in (NONE, FEW) for r in rows):
        cols["runs a side to show it"] = [
            "" if r["verdict"] not in (NONE, FEW) else
            f"over {MAX_RUNS}" if isnull(r.get("runs_needed_a_side")) and r["verdict"] == NONE else
            "unknown: no side has 2 runs" if isnull(r.get("runs_needed_a_side")) else
            f"{int(r['runs_needed_a_side'])}" for r in rows]
    import pandas as pd

    return pd.DataFrame(cols)


def _listed(rows: list[tuple], columns: list[str]) -> str:
    """A table of configurations, folded past ``LISTED`` rows."""
    table = html_table(_frame(rows, columns), max_rows=None)
    return table if len(rows) <= LISTED else (f"<details><summary>the {len(rows)} configurations (click to open)"
                                              f"</summary>{table}</details>")


def _problems(cmp: Comparison) -> list[str]:
    """What the runs cannot settle, said first (each a warning): configurations whose NEW runs all failed, conflicting
    copies of runs, configurations slower on one run a side (untested), configurations not compared, a side that
    holds no record."""
    out = []
    for side, c in cmp.counts.items():
        if not c["ok_runs"]:
            out.append(note("{} holds no ok run ({} record(s) read, {} file(s) left out): nothing of it is compared.",
                            side, c["records"], c["files_left_out"], kind="warn"))
    if cmp.failed_new:
        out.append(f"<h2>Every NEW run failed ({len(cmp.failed_new)})</h2>")
        out.append(note("Measured on OLD; every run of them failed on NEW (out of memory, a crash): a regression no "
                        "ratio shows. --fail-if-slower fails on them.", kind="warn")
                   + _listed([(_name(r), _side(r, "old"), r["failed_runs"],
                               shown(r["reason"])) for r in names(cmp.failed_new)],
                             ["configuration", "OLD samples/s (runs)", "failed NEW runs", "the first reason"]))
    for side, words in cmp.conflicts.items():
        out.append(note("{} holds {} record file(s) that are copies of one run saying different things: which is true "
                        "is not guessed; their configurations read <i>{}</i>, with no verdict (--fail-if-slower fails "
                        "on them): {}.", side, len(words), CONFLICTED,
                        "; ".join(words[:6]) + ("; ..." if len(words) > 6 else ""), kind="warn"))
    few = sorted((r for r in cmp.rows if r["verdict"] == FEW and r["log_ratio"] < math.log(0.9)),
                 key=lambda r: r["log_ratio"])
    if few:
        out.append(note("{} configuration(s) read more than 10% slower on a single run on a side, which no test can "
                        "settle (the slowest: {}, {}): run more repeats. --fail-if-slower fails on them with its "
                        "own status.", len(few), _name(few[0]), _ratio(few[0]), kind="warn"))
    if cmp.dropped:
        out.append(note("{} configuration(s) could not be compared and are left out: {}.", len(cmp.dropped),
                        "; ".join(f"{n} ({why})" for n, why in cmp.dropped[:6])
                        + ("; ..." if len(cmp.dropped) > 6 else ""), kind="warn"))
    return out


def _frame(rows, columns):
    import pandas as pd

    return pd.DataFrame(list(rows), columns=columns)


def write_changes(cmp: Comparison, folder: Path) -> Path:
    """``changes.csv``: one row per configuration on both sides (and per configuration of OLD whose NEW runs all
    failed: verdict ``FAILED_NEW``), sorted by its key, figures to 6 significant digits: the same comparison writes
    the same bytes (stable for diffing)."""
    import pandas as pd

    from helpers.report.publish.csvs import inert
    from helpers.report.publish.render import write_page

    def g(v):
        return v if not isinstance(v, float) or math.isnan(v) else float(f"{stable(v)}")

    failed = [{**r, "new_runs": 0, "verdict": FAILED_NEW} for r in cmp.failed_new]
    rows = sorted([*cmp.rows, *failed], key=row_key)
    frame = pd.DataFrame([{c: g(r.get(c)) for c in COLUMNS} for r in rows], columns=COLUMNS)
    return write_page(Path(folder) / CHANGES, inert(frame).to_csv(index=False))
