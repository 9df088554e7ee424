"""What the report read: folders, records (ok, failed, skipped), machines, data, warnings."""

from __future__ import annotations

from helpers.record.upgrade import ENERGY_MEDIAN, TIMING
from helpers.report.load.reference import is_reference
from helpers.report.load.visible import shown_path
from helpers.report.publish.sections.base import Section
from helpers.report.words import findings as said
from helpers.report.words.fmt import ONE_RUN, SHORT

TITLE = "Records read"
NAV = "Records read"  # its name in the one-line contents
LEAD = ("Every record under the folders below, from any number of runs and machines, in one table; "
        "each section below says what it shows or why it has nothing to show.")


def _validated_on_async(r: dict) -> bool:
    p = r.get("params") or {}
    try:
        n_val = int(p.get("n_val") or 0)
    except (TypeError, ValueError):
        return False
    return n_val > 0 and (r.get("backend") == "jax" or r.get("device_used") == "gpu")


def build(ctx) -> Section:
    s = Section.of(__name__)
    s.note("Folders read: {}.", ", ".join(shown_path(f) for f in ctx.folders) or "none")
    for template, values, kind in ctx.notes:
        s.note(template, *values, kind=kind)
    df = ctx.df[~ctx.df["machine"].map(is_reference)] if len(ctx.df) else ctx.df  # yours, not the reference's
    s.note("<b>{} record(s) read</b>; {} JSON file(s) skipped as unusable; {} duplicate(s) of a run already "
           "read dropped (a copied folder: each run counts once).", len(df), len(ctx.skipped), len(ctx.duplicates),
           kind="warn" if ctx.skipped else "note")
    if ctx.skipped_reasons:
        s.note("Skipped, by reason (each file is listed under Provenance): {}.",
               "; ".join(f"{why} ({n})" for why, n in ctx.skipped_reasons), kind="warn")
    if not ctx.has_records:
        return s.note("<b>No records found.</b> Run <code>./run_all.sh</code> (or "
                      "<code>./run_all.sh params/quick.yaml</code>) first; every section below says "
                      "what it would show.", kind="warn")
    s.found(*said.overview(df))
    st = df["status"].value_counts()
    s.note("The {} records: {} ok, {} failed, {} skipped, from <b>{} machine(s)</b>, {} workload(s), "
           "backends: {}; devices used: {}.", len(df), int(st.get("ok", 0)), int(st.get("failed", 0)),
           int(st.get("skipped", 0)), df["machine"].nunique(), df["workload"].nunique(),
           ", ".join(sorted(df["backend"].dropna().astype(str).unique())) or "none",
           ", ".join(sorted(df["device_used"].dropna().astype(str).unique())) or "none")
    if not (df[df["status"] == "ok"]["device_used"] == "gpu").any() and len(df) == len(ctx.df):
        s.note("No successful GPU run in these records: GPU figures, speedups and GPU utilisation are missing "
               "below (GPU points on a machine without a GPU are recorded as skipped).", kind="warn")
    summ = ctx.summary
    if len(summ):
        leases = df[df["status"] == "ok"]["boot_id"].dropna().nunique()
        s.note("Figures: {} configuration(s), each the median over its runs (min {}, max {} runs); {} rest on one "
               "run ({}), {} on a steady window under min_steady_s ({}); leases (boot ids) in these records: {}.",
               len(summ), int(summ["n_runs"].min()), int(summ["n_runs"].max()), int((summ["n_runs"] == 1).sum()),
               ONE_RUN, int(summ["short_window"].astype(bool).sum()), SHORT, leases or "unknown (older records)",
               kind="warn" if (summ["n_runs"] == 1).any() or summ["short_window"].astype(bool).any() else "note")
    src = df[df["status"] == "ok"]["data_source"].value_counts()
    if len(src):
        s.note("Data: {}. Synthetic data has the real dataset's shapes, so timings are comparable; accuracies "
               "are not (it is easy to learn: several models reach 100% training accuracy in two epochs).",
               ", ".join(f"{k} ({v} runs)" for k, v in src.items()))
    nfix = int(df["fixture"].sum())
    if nfix:
        s.note("⚠ {} record(s) are <b>fixtures</b> (hand-written test data, marked * in charts and 'fixture' in "
               "tables), not measurements.", nfix, kind="warn")
    v1 = [r for r in ctx.records if TIMING in r.get("caveats", ())]
    if v1:
        affected = sum(_validated_on_async(r) for r in v1)
        s.note("⚠ {} record(s) were measured before the timing fixes (validation timing on "
               "asynchronous backends, GPU energy from the board's energy counter): {} of them validated on JAX "
               "or a GPU, where their samples/s may be too high; their energy is mean sampled power × time, "
               "idle power included.", len(v1), affected, kind="warn")
    left = int(ctx.summary["n_earlier"].fillna(0).sum()) if "n_earlier" in ctx.summary else 0
    if left:
        s.note("{} run(s) of the earlier protocol are left out of the figures of the {} "
               "configuration(s) that were measured again under the current one: a figure never mixes protocols. "
               "They stay in the records and in the run tables (their schema column: 1).", left,
               int((ctx.summary["n_earlier"].fillna(0) > 0).sum()))
    busy = df[(df["status"] == "ok") & df["host_busy"].astype(bool)] if "host_busy" in df else df.iloc[:0]
    if len(busy) and len(ctx.summary):
        s.note("⚠ {} run(s) were measured on a busy host: another process used more than a quarter of their cores "
               "while they were timed. {} of them are left out of figures that have an unmarked run; {} "
               "configuration(s) rest on such runs only, marked host busy wherever their figures appear.", len(busy),
               int(ctx.summary["n_host_busy"].fillna(0).sum()), int(ctx.summary["host_busy"].astype(bool).sum()),
               kind="warn")
    v2 = [r for r in ctx.records if ENERGY_MEDIAN in r.get("caveats", ())]
    if v2:
        s.note("⚠ {} record(s) measured GPU energy before the energy fix: their J/epoch is the median "
               "epoch's counter difference, which the counter's steps (about 0.1 s) bias low for short epochs "
               "(0 J at 27 ms); today's records take the steady window's energy over its epochs.", len(v2),
               kind="warn")
    return s
