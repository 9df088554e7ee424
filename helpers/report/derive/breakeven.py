"""When the GPU pays off: per verdict row (``best.best_over_best``), the time to train N epochs of the source's
dataset on each side, the first (compiling) epoch included, and the epoch count after which the GPU side is ahead.

    rows = add(ctx.best, planned(ctx.records))   # adds the columns below, one row per workload
    sentence(rows.iloc[0])   # 'resnet50: 10 epochs (the suite's default ...) take 4.1 days on the CPU and ...'

Each side: a compile overhead ``compile_s`` = its first epoch − its steady epoch, both of the run's own ``n_train``
(clipped at 0: tracing, compilation and autotuning are a fixed cost, added once, whatever the epoch's size), and a
steady epoch ``epoch_s`` of the source's dataset (``source_epoch_s``, from samples/s; the larger ``n_train`` of the
two sides where the source's size is unknown). N epochs take ``compile_s + N × epoch_s``. The GPU is ahead after
the smallest n >= 1 whose GPU total is at most the CPU's (``ahead_after``; None: never within ``HORIZON``); where
the GPU compiles for less but trains each epoch slower, it falls behind again (``behind_from``).

N (``epochs_planned``): the records' own knob of that name (a grid's ``epochs_planned``: the latest record of the
workload that sets it), else the epochs its source trained (a workload's note "(the source: N)"), else
``DEFAULT_EPOCHS``. Pure functions of the verdict's rows and the raw records: tested from literal numbers.
"""

from __future__ import annotations

import re

from helpers.report.load.values import isnull

HORIZON = 100  # epochs looked at for the break-even
DEFAULT_EPOCHS = 10  # N where neither the records nor the workload's source says one
_SOURCE = re.compile(r"\(the source: (\d+)\)")
FROM = {"records": "epochs_planned", "source": "as its source trained", "default": "the suite's default"}


def compile_overhead(first_epoch_s, steady_epoch_s) -> float:
    """The first epoch's extra cost in seconds (>= 0); NaN where either is unknown."""
    if isnull(first_epoch_s) or isnull(steady_epoch_s):
        return float("nan")
    return max(float(first_epoch_s) - float(steady_epoch_s), 0.0)


def total_s(compile_s: float, epoch_s: float, n: int) -> float:
    """Seconds to train ``n`` epochs, the first (compiling) one included."""
    return compile_s + n * epoch_s


def _ahead(cpu: tuple, gpu: tuple, n: int) -> bool:
    c, g = total_s(*cpu, n), total_s(*gpu, n)
    return g <= c + 1e-9 * max(abs(c), 1.0)  # a tie is the GPU's: it is not behind


def ahead_after(cpu: tuple, gpu: tuple, horizon: int = HORIZON) -> int | None:
    """The smallest n in 1..horizon after which the GPU's total is at most the CPU's; ``cpu``/``gpu`` are
    (compile_s, epoch_s). None where it never is, or where a figure is unknown."""
    if any(isnull(v) for v in (*cpu, *gpu)):
        return None
    return next((n for n in range(1, horizon + 1) if _ahead(cpu, gpu, n)), None)


def behind_from(cpu: tuple, gpu: tuple, start: int, horizon: int = HORIZON) -> int | None:
    """After the GPU is ahead at epoch ``start``: the first n within the horizon whose GPU total exceeds the CPU's
    again (a GPU that compiles for less but trains each epoch slower); None where it stays ahead."""
    if start is None or gpu[1] <= cpu[1]:
        return None
    return next((n for n in range(start + 1, horizon + 1) if not _ahead(cpu, gpu, n)), None)


def source_epochs_of(workload) -> int | None:
    """The epochs the workload's source trained, where its knob note says so ("(the source: 20)"); else None."""
    try:
        from helpers.workloads import get

        note = get(str(workload)).notes.get("epochs", "")
    except Exception:  # noqa: BLE001 - a workload this suite does not know (a colleague's)
        return None
    m = _SOURCE.search(note or "")
    return int(m.group(1)) if m else None


def planned(records) -> dict:
    """workload -> the ``epochs_planned`` of its latest successful record that sets one (a positive int)."""
    out, when = {}, {}
    for r in records or ():
        v = (r.get("params") or {}).get("epochs_planned") if isinstance(r.get("params"), dict) else None
        if r.get("status") != "ok" or isinstance(v, bool) or not isinstance(v, int) or v < 1:
            continue
        wl, at = str(r.get("workload")), str(r.get("started_at") or "")
        if wl not in when or at >= when[wl]:
            out[wl], when[wl] = v, at
    return out


def epochs_for(workload, given: dict | None = None) -> tuple[int, str]:
    """(N, where it comes from: 'records', 'source' or 'default')."""
    if given and given.get(str(workload)):
        return int(given[str(workload)]), "records"
    n = source_epochs_of(workload)
    return (n, "source") if n else (DEFAULT_EPOCHS, "default")


def _epoch_s(r, d: str) -> float:
    """Seconds per epoch of the source's dataset on side ``d``; of the larger n_train where the source's is unknown."""
    if not isnull(r.get(f"source_epoch_s{d}")):
        return float(r[f"source_epoch_s{d}"])
    n = [r.get(f"n_train{s}") for s in ("_cpu", "_gpu") if not isnull(r.get(f"n_train{s}"))]
    sps = r.get(f"samples_per_s{d}")
    return float(max(n)) / float(sps) if n and not isnull(sps) and sps > 0 else float("nan")


def add(rows, given: dict | None = None):
    """``rows`` (``best.best_over_best``) with, per side (``_cpu``/``_gpu``): ``compile_s``, ``epoch_s`` (a
    source epoch, steady) and ``planned_s`` (N epochs, the first included); and ``epochs_planned`` (N),
    ``planned_from`` ('records', 'source', 'default'), ``gpu_ahead_after`` and ``gpu_behind_from`` (nullable
    ints: None for never within ``HORIZON``)."""
    import pandas as pd

    rows = rows.copy()
    if not len(rows):
        return rows
    recs = rows.to_dict("records")
    for d in ("_cpu", "_gpu"):
        rows[f"compile_s{d}"] = [compile_overhead(r.get(f"first_epoch_s{d}"), r.get(f"s_per_epoch{d}")) for r in recs]
        rows[f"epoch_s{d}"] = [_epoch_s(r, d) for r in recs]
    n_from = [epochs_for(wl, given) for wl in rows["workload"]]
    rows["epochs_planned"] = [n for n, _ in n_from]
    rows["planned_from"] = [f for _, f in n_from]
    for d in ("_cpu", "_gpu"):
        rows[f"planned_s{d}"] = [total_s(c, e, n) for c, e, n in
                                 zip(rows[f"compile_s{d}"], rows[f"epoch_s{d}"], rows["epochs_planned"])]
    ahead, behind = [], []
    for r in rows.to_dict("records"):
        cpu, gpu = (r["compile_s_cpu"], r["epoch_s_cpu"]), (r["compile_s_gpu"], r["epoch_s_gpu"])
        a = ahead_after(cpu, gpu)
        ahead.append(a)
        behind.append(behind_from(cpu, gpu, a))
    rows["gpu_ahead_after"] = pd.array(ahead, dtype="Int64")
    rows["gpu_behind_from"] = pd.array(behind, dtype="Int64")
    return rows

