"""Methods and provenance (the report's last part): how every figure is measured and compared, and how to
reproduce the report; the records read and their provenance follow it."""

from __future__ import annotations

from helpers.report.load.reference import is_reference
from helpers.report.load.visible import shown_path
from helpers.report.publish.sections.base import Section

TITLE = "Methods and provenance"
NAV = "Methods"  # its name in the one-line contents
LEAD = ("How the figures above are measured and compared, what their marks mean, and how to reproduce this "
        "report; the records it read and where each comes from follow.")


def build(ctx) -> Section:
    s = Section.of(__name__)
    df = ctx.df
    if len(df):
        ok = df[df["status"] == "ok"]
        summ = ctx.summary
        runs = summ["n_runs"] if len(summ) else None
        s.found("These figures rest on {} successful run(s) of {} configuration(s), from {} machine(s) over {} "
                "lease(s) (boots){}.", len(ok), len(summ), ok["machine"].nunique(),
                ok["boot_id"].dropna().nunique() or "unknown",
                "" if runs is None or not len(runs) else
                f"; a configuration's figure is the median of its {int(runs.min())}"
                + (f"–{int(runs.max())}" if runs.max() > runs.min() else "") + " runs")
    else:
        s.found("No record was read, so no figure is shown; the method below is what a run would follow.")
    s.note("<b>What is compared.</b> Every record under the folders read (any number of runs and machines) goes into "
           "one table, aggregated per configuration (machine, workload, backend, device, batch size, precision, "
           "compilation, model knobs). Configurations are compared <b>per sample</b>: samples/s, time and cost per "
           "1,000 samples, or seconds per epoch of the source's full dataset derived from samples/s; never raw "
           "seconds per epoch of epochs of different sizes. A speedup pairs a GPU configuration with the same "
           "configuration on a CPU (its fastest thread setting).")
    s.note("<b>How a run is timed.</b> Each point trains in a fresh kernel with its device and backend forced "
           "before Keras is imported, and verified; a GPU point on a machine without a GPU is recorded as skipped, "
           "never timed on the CPU. The first epoch (tracing, compilation) is shown apart; the steady state is the "
           "median of the later epochs over a window of at least min_steady_s seconds; no per-batch callback runs "
           "while timing. Repeats run in fresh kernels, interleaved across configurations; a figure is the median "
           "over runs with its between-run interval. Each figure says whether it trained on the real dataset or "
           "on synthetic data of the same shapes.")
    s.marks_note()
    folders = ", ".join(shown_path(f) for f in ctx.folders) or "outputs/"
    s.note("<b>To reproduce.</b> <code>./run_all.sh</code> runs the default grid and writes this report; "
           "<code>./run_all.sh report --inputs {}</code> renders it again from these records. Every run is "
           "a row of results.csv and every configuration a row of configurations.csv beside this page; the "
           "executed notebooks are linked from the <a href=\"index.html\">index</a>. The measurement protocol, "
           "the grid's knobs and each section are described in the project's docs/ folder.", folders)
    if len(df) and df["machine"].map(is_reference).any():
        s.note("The bundled reference's GPU records were added because these records have no GPU run of their "
               "own (<code>./run_all.sh --no-reference</code> leaves them out).")
    return s
