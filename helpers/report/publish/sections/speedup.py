"""The GPU's speedup over the CPU, for matched configurations only, per sample."""

from __future__ import annotations

from helpers.report.derive.pairs import speedup_label
from helpers.report.publish.charts import bar_facets
from helpers.report.publish.sections.base import Section, at_digits, mark_bars, with_marks
from helpers.report.words import findings as said
from helpers.report.words import learned
from helpers.report.words.fmt import NOT_LEARNED, figure, rounded, speedup_text
from helpers.report.words.labels import labels

TITLE = "Speedup of the GPU over the CPU (matched configurations)"
NAV = "All speedups"  # its name in the one-line contents
LEAD = ("GPU samples/s ÷ CPU samples/s of one machine (or of your CPU and the bundled reference's GPU, where "
        "your records have no GPU run), the same workload, backend, batch size, precision and "
        "knobs (the CPU side: its fastest thread setting); per sample, so the two sides may train on different "
        "numbers of samples. \"% less time\" as seeds 000 and 001 report it. The interval is between runs, from "
        "the runs of both sides: [slowest GPU run ÷ fastest CPU run, fastest GPU run ÷ slowest CPU run] while a "
        "side has fewer than 5 runs, a bootstrap 95% interval of the ratio of medians when both have 5 or more; "
        "where a side has one run there is none (one run's epoch spread is not a between-run spread).")


def _label(sub) -> list[str]:
    return labels(sub, keep=("backend",))


def _key(m) -> list:
    """The backends' colours, and the two machines of the pairs named once (not when the pairs span several)."""
    from matplotlib.patches import Patch

    from helpers.report.words.style import NEUTRAL, bar_look, key_handles

    sides = {(str(a).split(" (")[0], str(b).split(" (")[0]) for a, b in zip(m["machine"], m["gpu_machine"])}
    text = ("GPU ÷ CPU, same backend" + (": CPU {} → GPU {}".format(*next(iter(sides))) if len(sides) == 1 else ""))
    return key_handles(m["backend"], extra=[Patch(**bar_look(None, "gpu", NEUTRAL), label=text)])


def build(ctx) -> Section:
    import pandas as pd

    m = ctx.pairs
    left = learned.not_learned(ctx.summary)
    if m.empty:
        skipped = int((ctx.df["status"] == "skipped").sum()) if len(ctx.df) else 0
        return Section.absent(__name__, "no GPU/CPU pair to compare: no successful GPU run on a machine that also "
                                        "ran the same configuration on its CPU" + (
                                            f" (see the {skipped} skipped point(s) under Provenance)" if skipped
                                            else "") + (f"; did not learn, so paired with nothing ({NOT_LEARNED}): "
                                                        f"{'; '.join(left)}" if left else "") + ".")
    s = Section.of(__name__).found(*said.speedup(m))
    fig = bar_facets(m.assign(device="gpu"), "speedup", with_marks(_label, brief=True), lo="speedup_lo",
                     hi="speedup_hi", log=True,
                     xlabel="GPU ÷ CPU samples/s (log scale; 1 = no gain; whiskers: between runs)",
                     refline=1.0, sort=("backend", "batch_size"), annotate=at_digits(m, "speedup", "×", "digits"),
                     key=_key(m))
    s.figure(mark_bars(fig))
    rows = m.to_dict("records")
    one = m["machine"].nunique() == 1 and m["gpu_machine"].nunique() == 1  # then named once, above the table
    tab = pd.DataFrame({
        "workload": m["workload"], "backend": m["backend"], "batch": m["batch_size"], "precision": m["precision"],
        "speedup × [between runs]": [("" if one or not speedup_label(r) else speedup_label(r) + ": ")
                                     + speedup_text(r) for r in rows],
        "CPU samples/s (median of runs)": [figure(r, suffix="_cpu") for r in rows],
        "GPU samples/s (median of runs)": [figure(r, suffix="_gpu") for r in rows],
        "% less time": [rounded(100 * (1 - 1 / r["speedup"]), r["digits"]) for r in rows],
        "knobs": m["knobs"], "CPU samples/epoch": m["n_train_cpu"], "GPU samples/epoch": m["n_train_gpu"],
        "data": m["data_source"],
        "machine": m["machine"], "GPU machine": [r["gpu_machine"] if speedup_label(r) else "same" for r in rows],
    })
    if one:
        tab = tab.drop(columns=["machine", "GPU machine"])
        s.note("CPU: {}; GPU: {}.", m["machine"].iloc[0], m["gpu_machine"].iloc[0])
    s.table(tab)
    if left:  # a configuration that did not learn pairs with nothing (helpers.report.derive.learning)
        s.note("{} Not paired, for they did not learn (the loss-and-accuracy section says why): {}.", NOT_LEARNED,
               "; ".join(left), kind="warn")
    return s.marks_note().note("A speedup keeps the digits of its own interval, else those of its less precise side.")
