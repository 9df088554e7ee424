"""Fast and right: did each configuration learn? A figure rests on runs that trained the model.

    runs = run_checks(df)          # per record (run): learned 'yes' | 'no' | 'not checked', and why
    summ = judge(summ, df)         # per configuration: learned, learned_why, loss_at, loss_epoch (aggregate.summarise)
    learned(summ)                  # the configurations a figure may rest on (not 'no')
    learned.lines(summ)            # one line per workload: 'all 6 configurations learned (loss after epoch 3: ...)'
    learned.batches(summ)          # larger batches at fixed epochs: what the faster batch gives up

A run, from its record's history (``loss`` per epoch, ``accuracy`` where the model has it):

- **finite**: every epoch's loss is a number (a NaN or an infinity: did not learn, from that epoch);
- **fell**: the last epoch's loss is below the first's;
- **above chance**: the last accuracy above 1 / classes, where the record says its class count (``n_classes``).

Synthetic data with nothing to learn (random targets: ``data_learnable`` false) is checked for finiteness only: 'not
checked', saying so. A configuration did not learn when one of its runs did not (the first reason said, with how many
runs).

**In line**: the configurations of a workload at the same data, batch and epochs (``GROUP``: workload, data source,
samples per epoch, batch size, augmentation, model knobs; the knobs of what is learned, ``params.LEARNING_KNOBS``, are
left out so that a learning rate is compared with the others) are compared at the last epoch every run of the group
reached (runs train past ``epochs`` until their steady window is long enough, so their epoch counts differ): a
configuration's loss there (the median over its runs) may exceed the median of the *other* configurations' by no
more than the **tolerance**: the widest spread (max − min) between the runs of one configuration, measured over every
group of the report as a fraction of its group's first-epoch loss (a scale-free figure) and taken times this group's
first-epoch loss, or this group's own widest spread where that is wider. Runs of one seed on one backend often agree
to the last digit while two backends start from different initial weights, so the widest spread the records show
anywhere is the measure of how far runs that all learned land apart; where no configuration anywhere ran twice with
any spread, the comparison is not made and the line says so. No tolerance is typed in.

Everything here is a function of the tidy table and the summary (no files), so it is tested from literal records.
"""

from __future__ import annotations

from helpers import params as _params
from helpers.record.learned import NO, NOT_CHECKED, YES, run_check  # noqa: F401 - this module's words too
from helpers.record.learned import finite as _finite
from helpers.record.learned import shown as _g

GROUP = ["workload", "data_source", "n_train", "batch_size", "augment", "_model_knobs"]
BATCH_GROUP = ["machine", "workload", "backend", "device", "precision", "data_source", "n_train", "augment",
               "_model_knobs"]


def model_knobs(knobs) -> str:
    """A configuration's knobs less those of what is learned (``params.LEARNING_KNOBS``): the model and data knobs
    that make it the same workload."""
    parts = [p for p in str(knobs or "").split(", ") if p and p.split("=", 1)[0] not in _params.LEARNING_KNOBS]
    return ", ".join(parts)


def run_checks(df):
    """``df`` (the tidy table) with ``learned`` and ``learned_why`` per record (``run_check``); records that did not
    run (failed, skipped) are 'not checked'."""
    out = df.copy()
    res = [run_check(c, a, k, lrn) if s == "ok" else (NOT_CHECKED, "no successful run")
           for c, a, k, lrn, s in zip(out["loss_curve"], out["final_accuracy"], out["n_classes"],
                                      out["data_learnable"], out["status"])]
    out["learned"] = [r[0] for r in res]
    out["learned_why"] = [r[1] for r in res]
    return out


def of_runs(checks) -> str:
    """One configuration's runs' (learned, why) said in one cell: 'no: <the first reason>', 'yes' or 'not checked'."""
    checks = list(checks)
    no = [w for v, w in checks if v == NO]
    return f"{NO}: {no[0]}" if no else YES if any(v == YES for v, _ in checks) else NOT_CHECKED


def _at(curve, epoch: int):
    curve = tuple(curve or ())
    return curve[epoch - 1] if 0 < epoch <= len(curve) and _finite(curve[epoch - 1]) else None


def _configs(summ, runs):
    """{summary index: the successful runs (rows of ``runs``) its figures rest on (``run_index``, as
    ``aggregate.summarise`` took them)}."""
    rows = dict(zip(runs.index, runs.to_dict("records")))
    idx = summ["run_index"] if "run_index" in summ else [()] * len(summ)
    return {i: [rows[j] for j in (ix if isinstance(ix, tuple) else ()) if j in rows] for i, ix in zip(summ.index, idx)}


def _widest(groups) -> float | None:
    """The widest spread between the runs of one configuration over every group of the report, each as a fraction of
    its group's first-epoch loss (a scale-free figure); None where no configuration ran twice with any spread."""
    fr = [sp / g["start"] for g in groups.values() if g["start"] for sp in g["spreads"] if sp > 0]
    return max(fr) if fr else None


def judge(summ, df):
    """``summ`` (one row per configuration) with ``learned``, ``learned_why``, ``loss_at`` (the loss compared, the
    median over its runs), ``loss_epoch`` (the epoch it is taken at) and ``loss_tolerance``: the run checks
    combined (a configuration did not learn when a run did not), then the in-line comparison (module docstring)."""
    import numpy as np

    s = summ.copy()
    for c, v in (("learned", NOT_CHECKED), ("learned_why", ""), ("loss_at", np.nan), ("loss_epoch", np.nan),
                 ("loss_tolerance", np.nan)):
        s[c] = v
    s["loss_curve_median"] = [()] * len(s)
    if not len(s) or df is None or not len(df) or "loss_curve" not in df:
        return s
    runs = run_checks(df[df["status"] == "ok"])
    per = _configs(s, runs)
    s["_model_knobs"] = s["knobs"].map(model_knobs)
    for i, rs in per.items():
        curves = [tuple(r["loss_curve"] or ()) for r in rs if r["learned"] != NO and r["loss_curve"]]
        n = min((len(c) for c in curves), default=0)
        s.at[i, "loss_curve_median"] = tuple(float(np.median([c[e] for c in curves])) for e in range(n))
        said = [r["learned"] for r in rs]
        if NO in said:
            first = next(r for r in rs if r["learned"] == NO)
            s.at[i, "learned"] = NO
            s.at[i, "learned_why"] = first["learned_why"] + (f" (in {said.count(NO)} of {len(rs)} runs)"
                                                             if len(rs) > 1 else "")
        elif YES in said:
            s.at[i, "learned"], s.at[i, "learned_why"] = YES, next(r for r in rs if r["learned"] == YES)["learned_why"]
        elif rs:
            s.at[i, "learned_why"] = rs[0]["learned_why"]
        else:
            s.at[i, "learned_why"] = "no run with a history"
    # in line: each group at its last common epoch; the bundled reference's rows beside a CPU-only report are a part
    # of that reference, compared in line in its own report (its configurations.csv), never against a subset of it
    from helpers.report.load.reference import is_reference

    groups = {}
    for gk, g in s.groupby([s[c].map(str) for c in GROUP], sort=False):
        idx = [i for i in g.index if s.at[i, "learned"] == YES and not is_reference(s.at[i, "machine"])]
        curves = {i: [tuple(r["loss_curve"] or ()) for r in per[i]] for i in idx}
        lens = [len(c) for cs in curves.values() for c in cs]
        if not idx or not lens:
            continue
        epoch = min(lens)
        at = {i: [v for v in (_at(c, epoch) for c in curves[i]) if v is not None] for i in idx}
        start = [v for i in idx for v in (_at(c, 1) for c in curves[i]) if v is not None]
        spreads = [max(v) - min(v) for v in at.values() if len(v) >= 2]
        groups[gk] = {"idx": idx, "epoch": epoch, "at": at, "start": float(np.median(start)) if start else None,
                      "spreads": spreads}
    widest = _widest(groups)
    for g in groups.values():
        own = max(g["spreads"], default=0.0)
        tol = max(own, widest * g["start"] if widest and g["start"] else 0.0) or None
        med = {i: float(np.median(v)) for i, v in g["at"].items() if v}
        for i in g["idx"]:
            s.at[i, "loss_epoch"] = g["epoch"]
            s.at[i, "loss_at"] = med.get(i, np.nan)
            s.at[i, "loss_tolerance"] = np.nan if tol is None else tol
        if len(med) < 2:
            continue
        for i, v in med.items():
            others = float(np.median([w for j, w in med.items() if j != i]))
            if tol is None:
                s.at[i, "learned_why"] += ("; not compared with the other configurations: no configuration ran twice "
                                           "with a spread between runs to set the tolerance by")
            elif v - others > tol:
                s.at[i, "learned"] = NO
                s.at[i, "learned_why"] = (f"loss {_g(v)} after epoch {g['epoch']}, above the other configurations' "
                                          f"{_g(others)} by more than the spread between runs ({_g(tol)})")
            else:
                s.at[i, "learned_why"] += f"; in line with the others after epoch {g['epoch']} (±{_g(tol)})"
    return s.drop(columns=["_model_knobs"])


def learned(summ):
    """The configurations a figure may rest on: every one but those that did not learn."""
    if summ is None or not len(summ) or "learned" not in summ:
        return summ
    return summ[summ["learned"] != NO]


def common_knobs(knobs) -> set:
    """The knob items (``k=v``) every one of ``knobs`` (a workload's configurations' knobs) has: left out of a name."""
    sets = [set(p for p in str(k or "").split(", ") if p) for k in knobs]
    return set.intersection(*sets) if sets else set()

