"""The comparison of two runs as one self-contained page (``compare.html``): the significant changes first, largest
first, in a chart and a sentence; then every configuration with its verdict, what differs between the sides beside
them, and the configurations of one side only.

    page(cmp, old_names, new_names) -> str
"""

from __future__ import annotations

from .compare import CHANGES, FASTER, FEW, MAX_RUNS, NONE, SLOWER, Comparison
from .fmt import REPORT_CSS, esc, html_table, isnull, note, num, shown_path
from .inert import CSP


def _ratio(r) -> str:
    """'0.82× [0.75–0.90]' (NEW ÷ OLD, its interval)."""
    if isnull(r.get("ratio")):
        return ""
    text = f"{num(r['ratio'])}×"
    return text if isnull(r.get("ratio_low")) else f"{text} [{num(r['ratio_low'])}–{num(r['ratio_high'])}]"


def _name(r) -> str:
    """A configuration as the report's labels name it: workload, device and backend, batch, then what tells it apart
    from the others of its workload (``names``), else its precision where not float32."""
    base = f"{r['workload']} · {r['device']} · {r['backend']} · b{r['batch_size']}"
    extra = r.get("_label") or ("" if str(r.get("precision")) in ("float32", "", "None") else str(r["precision"]))
    return f"{base} · {extra}" if extra else base


def names(rows: list[dict]) -> list[dict]:
    """``rows`` with ``_label``: what differs between the configurations of one workload (``labels.labels``, past
    its device and backend), so that a name holds no knob every configuration shares."""
    import pandas as pd

    from .labels import labels

    out = [dict(r) for r in rows]
    frame = pd.DataFrame(out) if out else pd.DataFrame()
    for col in ("threads", "workers"):  # the key's text back to numbers, as the report's labels read them
        if col in frame:
            frame[col] = pd.to_numeric(frame[col], errors="coerce")
    for _, g in frame.groupby("workload", sort=False) if len(frame) else ():
        for i, text in zip(g.index, labels(g.drop(columns=["batch_size"]), keep=())):
            out[i]["_label"] = text
    return out


def chart(changed: list[dict]):
    """The significant changes, largest first: NEW ÷ OLD on a log axis with its interval; slower in one colour,
    faster in another."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 0.3 * len(changed) + 1.1))
    for y, r in enumerate(changed):
        colour = "#D55E00" if r["verdict"] == SLOWER else "#0072B2"
        ax.plot([r["ratio_low"], r["ratio_high"]], [y, y], color=colour, lw=1.2)
        ax.scatter([r["ratio"]], [y], color=colour, zorder=3, s=24)
        ax.annotate(f"{num(r['ratio'])}×", (r["ratio_high"], y), xytext=(5, 0), textcoords="offset points",
                    fontsize=8, va="center")
    ax.axvline(1, ls=":", color="k", lw=0.8)
    ax.set_yticks(range(len(changed)), [_name(r) for r in changed], fontsize=8)
    ax.set_ylim(len(changed) - 0.5, -0.5)
    lo = min(min(r["ratio_low"] for r in changed), 0.8) / 1.1
    hi = max(max(r["ratio_high"] for r in changed), 1.25) * 1.4
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ticks = [t for t in (0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 5, 10) if lo <= t <= hi]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks], fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel("NEW ÷ OLD samples/s (log scale; left of the dotted line: slower; bars: the interval)", fontsize=9)
    fig.tight_layout()
    return fig


def _sentence(cmp: Comparison, changed: list[dict], confidence: float) -> str:
    n = len(cmp.rows)
    few = sum(r["verdict"] == FEW for r in cmp.rows)
    slower = [r for r in changed if r["verdict"] == SLOWER]
    faster = [r for r in changed if r["verdict"] == FASTER]
    parts = [f"Of the {n} configuration(s) measured on both sides, {len(slower)} slower and {len(faster)} faster at "
             f"{confidence:.0%} confidence (Welch's t over runs)"]
    if slower:
        worst = min(slower, key=lambda r: r["ratio"])
        parts.append(f"the largest slow-down: {_name(worst)}, {_ratio(worst)}")
    if few:
        parts.append(f"{few} have a single run on a side: not enough runs for a verdict")
    return "; ".join(parts) + "."


def page(cmp: Comparison, old_names: list[str], new_names: list[str]) -> str:
    """The page's HTML (every value escaped)."""
    from .charts import figure_html

    conf = cmp.rows[0]["confidence"] if cmp.rows else 0.99
    rows = names(cmp.rows)
    changed = sorted((r for r in rows if r["verdict"] in (SLOWER, FASTER)), key=lambda r: abs(r["ratio"] - 1),
                     reverse=True)
    new_names, old_names = [shown_path(n) for n in new_names], [shown_path(n) for n in old_names]
    body = ["<h1>What changed between two runs</h1>",
            note("OLD: {}; NEW: {}.", ", ".join(old_names), ", ".join(new_names)),
            f'<p class="cgb-finding">{esc(_sentence(cmp, changed, conf))}</p>']
    if changed:
        body.append(figure_html(chart(changed), "significant changes, NEW ÷ OLD, largest first"))
    else:
        body.append(note("No significant change: every configuration reads <i>no difference shown</i> or <i>not "
                         "enough runs</i> (the table says how many runs a side would show the change seen)."))
    if cmp.differences:
        body.append("<h2>What differs between the sides</h2>")
        body.append(note("Beside a change, what could explain it: the libraries, the machine, the host's state."))
        body.append(html_table(_frame(cmp.differences, ["what", "OLD", "NEW"]), max_rows=None))
    body.append("<h2>Every configuration on both sides</h2>")
    body.append(note("samples/s: the median over runs of each run's figure; ratio: NEW ÷ OLD of the runs' geometric "
                     "means, [its {} interval]; verdict: Welch's t on the runs' logs at p &lt; {}; where none is "
                     "shown, the runs a side that would show the change seen (5% where none is seen). Also in {}.",
                     f"{conf:.0%}", f"{1 - conf:.2g}", CHANGES))
    body.append(html_table(_frame([(_name(r), f"{num(r['old_samples_per_s'])} ({r['old_runs']})",
                                    f"{num(r['new_samples_per_s'])} ({r['new_runs']})", _ratio(r), r["verdict"],
                                    "" if r["verdict"] != NONE else f"over {MAX_RUNS}"
                                    if isnull(r.get("runs_needed_a_side")) else r["runs_needed_a_side"]) for r in rows],
                                  ["configuration", "OLD samples/s (runs)", "NEW samples/s (runs)",
                                   "NEW ÷ OLD [interval]", "verdict", "runs a side to show it"]), max_rows=None))
    for side, only in (("OLD", cmp.only_old), ("NEW", cmp.only_new)):
        if only:
            body.append(f"<h2>On the {side} side only ({len(only)})</h2>")
            listed = html_table(_frame([(_name(r),) for r in names(only)], ["configuration"]), max_rows=None)
            body.append(note("Measured on one side only: nothing to compare them with.") + (
                listed if len(only) <= 10 else f"<details><summary>the {len(only)} configurations (click to open)"
                                                f"</summary>{listed}</details>"))
    if cmp.skipped:
        body.append(note("{} file(s) that are not records were left out: {}.", len(cmp.skipped),
                         "; ".join(f"{f} ({w})" for f, w in cmp.skipped[:5]), kind="warn"))
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>What changed</title>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">" + REPORT_CSS
            + "</head><body><main style='max-width:1300px;margin:auto'>"
            + "".join(body) + "</main></body></html>")


def _frame(rows, columns):
    import pandas as pd

    return pd.DataFrame(list(rows), columns=columns)
