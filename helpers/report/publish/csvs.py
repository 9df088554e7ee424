"""The report's figures as CSV, for pandas or a spreadsheet: ``results.csv`` (one row per run),
``configurations.csv`` (one row per configuration) and ``verdict.csv`` (the verdict: one row per workload, its
fastest CPU and fastest GPU configuration), written beside report.html.

    write_csvs(ctx, Path("outputs"))     # -> (results.csv, configurations.csv, verdict.csv) under outputs/
    pd.read_csv("outputs/results.csv")   # numbers read back as numbers, empty cells as NaN

Column names carry their units (``_s`` seconds, ``_pct`` percent, ``_mb`` MiB, ``_w`` watts, ``_j`` joules,
``_per_s`` per second, ``_fraction`` 0..1, money in the prices file's currency).
"""

from __future__ import annotations

import re
from pathlib import Path

from helpers.report.derive import breakeven
from helpers.report.derive.protocol import is_busy
from helpers.report.load.columns import (
    BREAKEVEN_SIDE,
    CONFIG_COLUMNS,
    RESULT_DROP,
    RESULT_HEADERS,
    VERDICT_COLUMNS,
    VERDICT_SIDE,
)
from helpers.report.load.visible import shown_path, visible
from helpers.report.publish.render import write_page
from helpers.report.words.fmt import BUSY, NOT_LEARNED, marks, row_marks, speedup_shown, sps_shown
from helpers.report.words.headline import sides
from helpers.report.words.learned import configurations_text, with_texts
from helpers.report.words.marks import HOST_BUSY, busy_sides

RESULTS = "results.csv"
CONFIGURATIONS = "configurations.csv"
VERDICT = "verdict.csv"

# the columns' CSV headers are declared with them (helpers.report.load.columns): the tidy table's renamed where the
# name lacks its unit (RESULT_HEADERS), lists and local paths left out (RESULT_DROP); configurations.csv's
# (CONFIG_COLUMNS: summary column -> CSV column); verdict.csv's (VERDICT_COLUMNS, each side's VERDICT_SIDE and
# BREAKEVEN_SIDE); docs/csv_columns.md lists them with their units and meanings


FORMULA = ("=", "+", "-", "@", "\t", "\r")  # a text cell a spreadsheet would run as a formula (CSV injection)


_CONTROL = re.compile("[\x00-\x1f\x7f]")  # a carriage return or line feed inside a value ends a CSV row for readers


def _cell(v):
    if not isinstance(v, str):
        return v
    v = visible(v)  # no lone surrogate (it cannot be written), no bidi control or zero-width character
    # control characters written out ('\r', '\x01'): no value starts a line of its own, where the guard below would
    # not reach (a spreadsheet reads 'x\r=2+5' as two rows, the second a formula)
    v = _CONTROL.sub(lambda m: {"\r": "\\r", "\n": "\\n", "\t": "\\t"}.get(m.group(), f"\\x{ord(m.group()):02x}"), v)
    return f"'{v}" if v.startswith(FORMULA) else v


def inert(frame):
    """Text cells that start like a spreadsheet formula get a leading apostrophe (records are untrusted); lone
    surrogates, bidi controls and zero-width characters are made visible (``visible``); numbers are left as
    they are."""
    out = frame.copy()
    for c in out.columns:
        if out[c].dtype == object or str(out[c].dtype).startswith("str"):
            out[c] = [_cell(v) for v in out[c]]
    out.columns = [_cell(c) if isinstance(c, str) else c for c in out.columns]
    return out


def results_frame(df):
    """One row per run (the tidy table), units in the column names, the record's path relative to the project."""
    out = df.drop(columns=[c for c in RESULT_DROP if c in df.columns]).copy()
    if "path" in out:
        out["path"] = [shown_path(p) if isinstance(p, str) and p else p for p in out["path"]]
    return out.rename(columns=RESULT_HEADERS)


def configurations_frame(costed, currency: str = "USD"):
    """One row per configuration: median, interval and range over runs, runs, leases, the marks, costs."""
    import pandas as pd

    if costed is None or not len(costed):
        return pd.DataFrame(columns=[v.format(cur=currency.lower()) for v in CONFIG_COLUMNS.values()] + ["marks"])
    cols = {k: v.format(cur=currency.lower()) for k, v in CONFIG_COLUMNS.items() if k in costed.columns}
    out = costed[list(cols)].rename(columns=cols).copy()
    busy = costed["host_busy"] if "host_busy" in costed else [False] * len(costed)
    learned = costed["learned"] if "learned" in costed else [None] * len(costed)
    out["marks"] = [marks(n, bool(s), is_busy(b), lr)
                    for n, s, b, lr in zip(costed["n_runs"], costed["short_window"], busy, learned)]
    return out


def verdict_frame(ctx):
    """One row per workload (the context's ``best``: ``best.best_over_best``): each side's machine, backend, thread
    and compilation setting, batch, precision, median samples/s with its interval and runs; the speedup and its
    interval; the figures as the report shows them (``*_shown``: the same digits as its sentences, chart and
    tables); when the GPU pays off (``breakeven.add``; the context's raw records, whose ``epochs_planned`` sets N):
    each side's first epoch, compile overhead, source epoch and time for N epochs, N and where it comes from, the
    epoch count after which the GPU is ahead (empty: never within ``breakeven.HORIZON``) and, where it falls behind
    again, the epoch it does."""
    import pandas as pd

    rows = with_texts(ctx.best)
    if not len(rows):
        return pd.concat([unlearned_rows(ctx.not_learned), predicted_rows(ctx)], ignore_index=True)[VERDICT_COLUMNS]
    rows = breakeven.add(rows, breakeven.planned(ctx.records))
    out = pd.DataFrame({"workload": rows["workload"], "sides": [sides(r) for r in rows.to_dict("records")]})
    for d in ("cpu", "gpu"):
        for k, v in VERDICT_SIDE.items():
            out[f"{d}_{v}"] = rows[f"{k}_{d}"]
    out["fresh_machine_interval"] = [" | ".join(f"{d.upper()}: {r.get(f'fresh_basis_{d}')}" for d in ("cpu", "gpu")
                                                if r.get(f"fresh_basis_{d}")) for r in rows.to_dict("records")]
    out["gpu_threads"] = None  # a GPU configuration's threads are not a setting of its speed
    recs = rows.to_dict("records")
    out["cpu_samples_per_s_shown"] = [sps_shown(r, "_cpu") for r in recs]
    out["gpu_samples_per_s_shown"] = [sps_shown(r, "_gpu") for r in recs]
    out["speedup"], out["speedup_low"], out["speedup_high"] = rows["speedup"], rows["speedup_lo"], rows["speedup_hi"]
    out["interval_kind"] = rows["interval"]
    out["speedup_shown"] = [speedup_shown(r) for r in recs]
    out["marks"] = [" ".join(filter(None, (row_marks(r), _busy_side(r),
                                           r.get("copies") and f"conflicting copies: {r['copies']}")))
                    for r in recs]  # the page's symbols: '†§ (§ GPU side)'

    for d in ("cpu", "gpu"):
        for k, v in BREAKEVEN_SIDE.items():
            out[f"{d}_{v}"] = rows[f"{k}_{d}"]
    out["epochs_planned"], out["epochs_planned_from"] = rows["epochs_planned"], rows["planned_from"]
    out["gpu_ahead_after_epochs"], out["gpu_behind_again_from_epoch"] = rows["gpu_ahead_after"], rows["gpu_behind_from"]
    out["figure"] = "measured"
    out["not_learned_left_out"] = rows["not_learned"]
    return pd.concat([out[VERDICT_COLUMNS], unlearned_rows(ctx.not_learned), predicted_rows(ctx)],
                     ignore_index=True)[VERDICT_COLUMNS]


def unlearned_rows(d):
    """verdict.csv's rows of the workloads one side of which did not learn (``d``: the context's ``not_learned``,
    ``best.did_not_learn``): no speedup,
    ``speedup_shown`` 'did not learn (GPU side)', the configurations and their reasons in ``not_learned_left_out``."""
    import pandas as pd

    if not len(d):
        return pd.DataFrame(columns=VERDICT_COLUMNS)
    return pd.DataFrame({
        "workload": d["workload"], "sides": [f"did not learn on the {s} side" for s in d["side"]],
        "cpu_batch_size": d["batch_size"], "gpu_batch_size": d["batch_size"], "cpu_precision": d["precision"],
        "gpu_precision": d["precision"], "speedup_shown": [f"did not learn ({s} side)" for s in d["side"]],
        "cpu_learned": ["no" if "CPU" in s else "" for s in d["side"]],
        "gpu_learned": ["no" if "GPU" in s else "" for s in d["side"]],
        "marks": NOT_LEARNED, "figure": "measured",
        "not_learned_left_out": [configurations_text(g) for g in d["gone"]]}).reindex(columns=VERDICT_COLUMNS)


def _busy_side(r) -> str:
    """'(§ GPU side)', '(§ both sides)': the side whose figure rests on host-busy runs only, in the page's symbol."""
    said = busy_sides(r)  # 'host busy (GPU side)'
    return f"({BUSY} {said[len(HOST_BUSY) + 2:-1]})" if said else ""


def predicted_rows(ctx):
    """verdict.csv's rows of the workloads no GPU measured: the GPU side predicted on the reference's GPU, per
    backend, with its 80% interval (``predicted.table_of``), marked ``figure: predicted``."""
    import pandas as pd

    t, _ = ctx.predicted
    if not len(t):
        return pd.DataFrame(columns=VERDICT_COLUMNS)
    t = t[~t["measured_gpu"]]
    return pd.DataFrame({
        "workload": t["workload"], "sides": [f"CPU measured → GPU predicted ({g}, {b})" for g, b in zip(t["gpu"],
                                                                                                      t["backend"])],
        "gpu_machine": t["gpu"], "gpu_backend": t["backend"], "gpu_batch_size": t["batch"],
        "gpu_precision": t["precision"],
        "cpu_samples_per_s_median": t["cpu_samples_per_s"], "gpu_samples_per_s_median": t["gpu_predicted"],
        "gpu_samples_per_s_low": t["gpu_predicted_low"], "gpu_samples_per_s_high": t["gpu_predicted_high"],
        "speedup": t["speedup_predicted"], "speedup_low": t["speedup_predicted_low"],
        "speedup_high": t["speedup_predicted_high"], "interval_kind": "80% prediction interval (held-out errors)",
        "marks": "predicted", "figure": "predicted"}).reindex(columns=VERDICT_COLUMNS)


# counts, written as integers
WHOLE = re.compile(r"(batch_size|runs|threads|leases|workers|epochs|epochs_planned|from_epoch|gpu_count|cpus|"
                   r"cpus_used|_left_out|samples_per_epoch|source_epoch_samples|repeat|n_steady|steps_per_epoch)$")


def whole(frame):
    """``frame`` with every count column (``WHOLE``: batch sizes, runs, threads...) written as integers where each
    value is one ('32', never '32.0' where a missing value made the column float)."""
    import pandas as pd

    out = frame.copy()
    for c in out.columns:
        if isinstance(c, str) and WHOLE.search(c) and pd.api.types.is_float_dtype(out[c].dtype):
            v = out[c].dropna()
            if len(v) and (v == v.round()).all() and v.abs().max() < 2 ** 53:
                out[c] = out[c].astype(pd.Int64Dtype())
        elif isinstance(c, str) and WHOLE.search(c) and out[c].dtype == object:
            v = pd.to_numeric(out[c], errors="coerce")
            if v.notna().sum() == out[c].notna().sum() and v.notna().any() and (v.dropna() == v.dropna().round()).all():
                out[c] = v.astype(pd.Int64Dtype())
    return out


def write_csvs(ctx, folder: Path) -> tuple[Path, Path, Path]:
    """``results.csv``, ``configurations.csv`` and ``verdict.csv`` of ``ctx`` in ``folder`` (each written
    atomically; counts as integers, ``whole``)."""
    folder = Path(folder)
    res = write_page(folder / RESULTS, inert(whole(results_frame(ctx.df))).to_csv(index=False))
    cur = (ctx.prices or {}).get("currency", "USD")
    conf = write_page(folder / CONFIGURATIONS,
                             inert(whole(configurations_frame(ctx.costed, cur))).to_csv(index=False))
    verdict = write_page(folder / VERDICT,
                                inert(whole(verdict_frame(ctx))).to_csv(index=False))
    return res, conf, verdict
