"""What changed between two runs of the suite (``./run_all.sh compare OLD NEW``): every configuration measured on
both sides, its samples/s on each, the ratio NEW ÷ OLD with its interval, and a verdict from the test of
``compare_stats`` (Welch's t on the runs' logs): *faster*, *slower*, *no difference shown*, or *not enough runs*.

A configuration's figure is the median over its runs of each run's figure (samples per epoch ÷ the run's median
steady epoch), as everywhere in the report. What the runs cannot settle is said, never passed over: a configuration
whose NEW runs all failed (``failed_new``), conflicting copies of one run on a side (the reader keeps each apart as
``copy=``; here the copies are one configuration again, its verdict *conflicting copies*), a configuration that could
not be compared (``dropped``, with the error's name: one configuration, never the whole comparison), a side that did
not learn (``learning``: *did not learn*), a side that holds no record (``counts``). Text shown: ``shown``.

    cmp = compare(old_folders, new_folders)   # rows (one per configuration on both sides), one-side-only, differences
    write_changes(cmp, folder)                 # changes.csv, stable for diffing (compare_page)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from helpers.report.derive import learning
from helpers.report.derive.compare_stats import (  # noqa: F401 - its API
    CONFIDENCE,
    FASTER,
    FEW,
    MAX_LOG10,
    MAX_RUNS,
    NONE,
    SLOWER,
    SMALL,
    ratio_of,
    runs_needed,
    runs_needed_at,
    welch,
)
from helpers.report.derive.protocol import is_busy
from helpers.report.load import columns as C
from helpers.report.load.records import comparison_side
from helpers.report.words.compare_figures import differences, near, shown_ratio, side_figure, spread

KEY = ["workload", "backend", "device", "batch_size", "precision", "jit_compile", "threads", "augment", "workers",
       "knobs"]  # a configuration across machines: the same model, backend, device, batch, precision and knobs
CONFLICTED = "conflicting copies"  # a side holds copies of one run that say different things: no verdict
DID_NOT_LEARN = "did not learn"  # a side's runs did not learn (helpers.report.derive.learning): no figure, no verdict
FAILED_NEW = "every NEW run failed"  # changes.csv's verdict for a configuration of OLD whose NEW runs all failed
CHANGES = "changes.csv"
COLUMNS = ["workload", "backend", "device", "batch_size", "precision", "jit_compile", "threads", "augment", "workers",
           "knobs", "old_samples_per_s", "old_runs", "new_samples_per_s", "new_runs", "ratio", "ratio_low",
           "ratio_high", "confidence", "p_value", "verdict", "runs_needed_a_side", "old_machine", "new_machine",
           "old_learned", "new_learned"]
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # C0 (newline and ESC too), DEL, C1 (CSI \x9b): a terminal's commands


@dataclass
class Comparison:
    rows: list[dict] = field(default_factory=list)  # one per configuration on both sides
    only_old: list[dict] = field(default_factory=list)  # configurations on one side only: never dropped silently
    only_new: list[dict] = field(default_factory=list)
    differences: list[tuple[str, str, str]] = field(default_factory=list)  # (what, old, new) where the sides differ
    skipped: list[tuple[str, str]] = field(default_factory=list)  # files that are not records, and why
    failed_new: list[dict] = field(default_factory=list)  # ok on OLD, every NEW run failed: key, runs, reason
    failed_old: list[dict] = field(default_factory=list)  # every OLD run failed, ok on NEW (said, not a regression)
    conflicts: dict[str, list[str]] = field(default_factory=dict)  # side -> the reader's words on each copy
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (configuration, why): could not be compared
    counts: dict[str, dict] = field(default_factory=dict)  # side -> {"records", "ok_runs", "files_left_out"}


def shown(text) -> str:
    """``text`` safe for a page and a terminal alike: ``visible`` (lone surrogates, bidi controls, zero-width
    characters written out), then every control character (C0 with newline, carriage return and ESC, DEL, C1 with
    the 8-bit CSI ``\\x9b``) written out as ``\\xNN``: a record's name cannot erase a CI log's lines, retitle its
    window or clear its screen."""
    from helpers.report.load.visible import visible

    t = visible("" if text is None else str(text))
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", t) if _CONTROL.search(t) else t


def name(r: dict) -> str:
    """A configuration in one line of a terminal: 'cnn_cifar10 jax cpu b100', then what else sets it apart (its
    precision where not float32, threads, compilation, augmentation, workers, knobs); ``shown``."""
    extra = [f"{k}={r.get(k)}" for k in ("precision", "threads", "jit_compile", "augment", "workers")
             if str(r.get(k)) not in ("", "None", "float32", "0")]
    knobs = str(r.get("knobs") or "")
    return shown(" ".join([str(r.get(k)) for k in ("workload", "backend", "device")] + [f"b{r.get('batch_size')}"]
                          + extra + ([f"[{knobs}]"] if knobs else [])))


def _text(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float) and v.is_integer() and abs(v) < 2 ** 53:  # a column made float by a missing value
        return str(int(v))
    return str(v)


def row_key(r) -> tuple:
    """A row's configuration (``KEY``) as comparable text: the sort of changes.csv."""
    return tuple(_text(r[k]) for k in KEY)


def _keys(df) -> list[tuple]:
    """Each row's configuration (``KEY`` as text; its knobs less the reader's ``copy=``: a run's conflicting copies
    are one configuration)."""
    from helpers.report.derive.best import without_copy

    cols = [[_text(v) for v in df[k].tolist()] for k in KEY[:-1]]
    knobs = [without_copy(v) if "copy=" in v else v for v in (_text(v) for v in df["knobs"].tolist())]
    return list(zip(*cols, knobs))


MIN_QUIET = 3  # runs a side a comparison keeps when it leaves host-busy runs out


def runs_by_configuration(df, keep_busy=frozenset()) -> dict[tuple, dict]:
    """Per configuration (``KEY``): its run figures (``aggregate.run_figures``: samples per epoch ÷ the run's median
    steady epoch, else its own samples/s) and machines, from its runs of the current protocol where it has any
    (``protocol.current_protocol``), as the report's figures take them; ``copies``: whether the reader found
    conflicting copies of one of its runs; ``busy_out``: its host-busy runs left out (``MIN_QUIET`` quiet ones
    remained), ``busy_in``: those kept (fewer quiet ones). The configurations in ``keep_busy`` keep every host-busy
    run (see ``compare``). One pass over the rows (no pandas group a configuration)."""
    import numpy as np

    from helpers.record.upgrade import EARLIER

    if not len(df):
        return {}
    ok = df[(df["status"] == "ok") & df["median_epoch_s"].notna() & (df["median_epoch_s"] > 0)]
    if not len(ok):
        return {}
    fig = (ok["n_train"] / ok["median_epoch_s"])
    fig = fig.where(fig.notna(), ok[C.SAMPLES_PER_S]).to_numpy(dtype=float)
    earlier = (ok["protocol"] == EARLIER).to_numpy() if "protocol" in ok else np.zeros(len(ok), bool)
    busy = np.array([is_busy(v) for v in ok["host_busy"].tolist()] if "host_busy" in ok else [False] * len(ok))
    window = ok["steady_s"].to_numpy(dtype=float) if "steady_s" in ok else np.full(len(ok), np.nan)
    least = ok["min_steady_s"].to_numpy(dtype=float) if "min_steady_s" in ok else np.full(len(ok), np.nan)
    copies = ["copy=" in str(v) for v in ok["knobs"].tolist()]
    machines = [str(m) for m in ok["machine"].tolist()]
    learned = learning.run_checks(ok)[["learned", "learned_why"]].to_numpy().tolist()
    groups: dict[tuple, list[int]] = {}
    for i, k in enumerate(_keys(ok)):
        groups.setdefault(k, []).append(i)
    out: dict[tuple, dict] = {}
    for k, idx in groups.items():
        e = earlier[idx]
        if e.any() and not e.all():  # the current protocol's runs only, where it has any
            idx = [i for i, x in zip(idx, e) if not x]
        b = busy[idx]
        busy_out = 0
        if b.any() and (~b).sum() >= MIN_QUIET and k not in keep_busy:  # host-busy runs left out where enough quiet
            busy_out = int(b.sum())  # ones remain for a test (``_keeps_busy``: both sides of a configuration or none)
            idx = [i for i, x in zip(idx, b) if not x]
        idx = [i for i in idx if math.isfinite(fig[i]) and fig[i] > 0]
        if idx:
            out[k] = {"runs": fig[idx].tolist(), "copies": any(copies[i] for i in idx),
                      "busy_out": busy_out, "busy_in": int(busy[idx].sum()),
                      "machines": sorted({machines[i] for i in idx}),
                      "learned": learning.of_runs(learned[i] for i in idx),
                      **side_figure(fig[idx].tolist(), window[idx], least[idx], bool(busy[idx].all()))}
    return out


def failures_by_configuration(df) -> dict[tuple, dict]:
    """Per configuration: its failed runs' count and their first reason."""
    if not len(df):
        return {}
    bad = df[df["status"] == "failed"]
    out: dict[tuple, dict] = {}
    for k, why in zip(_keys(bad), bad["reason"].tolist()):
        f = out.setdefault(k, {"runs": 0, "reason": ""})
        f["runs"] += 1
        f["reason"] = f["reason"] or _text(why)
    return out


_USED = [*KEY, "status", "reason", "median_epoch_s", "n_train", C.SAMPLES_PER_S, "protocol", "machine",
         "backend_version", "keras", "cpus", "cal_dispatch", "cal_matmul", "host_busy", "steady_s",
         "min_steady_s", "loss_curve", "final_accuracy", "n_classes", "data_learnable"]  # what a comparison reads


def _side(folders) -> tuple:
    """One side: (its table's columns a comparison reads, its records' count, the reader's words on each conflicting
    copy, the files left out): the records themselves let go before the other side is read (peak memory)."""
    df, records, skipped = comparison_side(folders)
    conflicts = [shown(r["_conflict"]) for r in records if r.get("_conflict")]
    return df[[c for c in _USED if c in df.columns]].copy(), len(records), conflicts, skipped


def _keeps_busy(o: dict, n: dict) -> bool:
    """Whether both sides of one configuration keep their host-busy runs (``runs_by_configuration``'s ``busy_in``,
    ``busy_out``): they are left out of both sides or of neither. One side's kept (too few quiet ones) against the
    other's left out would set a loaded machine against a quiet one and call the load a change of the code; and
    leaving a side two runs leaves Welch's test at 99% one degree of freedom, under which nothing short of a ~60x
    change is shown: busy runs are left out only where each side keeps ``MIN_QUIET``."""
    if not (o["busy_out"] or n["busy_out"]):
        return False
    return bool(o["busy_in"] or n["busy_in"]) or min(len(o["runs"]), len(n["runs"])) < MIN_QUIET


def compare(old_folders, new_folders, confidence: float = CONFIDENCE) -> Comparison:
    """Both sides read as the report reads records; every configuration on both compared (one that cannot be is
    dropped, with its error's name, never the whole comparison)."""
    old_df, n_old, conflicts_old, bad_old = _side(old_folders)
    new_df, n_new, conflicts_new, bad_new = _side(new_folders)
    old, new = runs_by_configuration(old_df), runs_by_configuration(new_df)
    mixed = frozenset(k for k in set(old) & set(new) if _keeps_busy(old[k], new[k]))
    if mixed:
        old, new = runs_by_configuration(old_df, mixed), runs_by_configuration(new_df, mixed)
    cmp = Comparison(differences=differences(old_df, new_df), skipped=[*bad_old, *bad_new])
    for side, n, words, bad, runs in (("OLD", n_old, conflicts_old, bad_old, old),
                                      ("NEW", n_new, conflicts_new, bad_new, new)):
        cmp.counts[side] = {"records": n, "ok_runs": sum(len(c["runs"]) for c in runs.values()),
                            "files_left_out": len(bad)}
        if words:
            cmp.conflicts[side] = words
    var = spread([(old[k]["runs"], new[k]["runs"]) for k in set(old) & set(new)])
    for k in sorted(set(old) & set(new)):
        o, n = old[k], new[k]
        try:
            t = welch(o["runs"], n["runs"], confidence)
            conflicted = o["copies"] or n["copies"]
            unlearned = o["learned"].startswith(learning.NO) or n["learned"].startswith(learning.NO)
            verdict = CONFLICTED if conflicted else DID_NOT_LEARN if unlearned else t["verdict"]
            need = (runs_needed(o["runs"], n["runs"], confidence) if verdict == NONE else
                    runs_needed_at(t["log_ratio"], var, confidence) if verdict == FEW and var is not None else None)
            cmp.rows.append({**dict(zip(KEY, k)), **shown_ratio(o, n), "old_runs": len(o["runs"]),
                             "new_runs": len(n["runs"]), "confidence": confidence,
                             "p_value": float("nan") if conflicted else t["p"], "verdict": verdict,
                             "runs_needed_a_side": need, "old_machine": "; ".join(o["machines"]),
                             "new_machine": "; ".join(n["machines"]), "log_ratio": t["log_ratio"],
                             "log_low": t["log_low"], "log_high": t["log_high"], "old_marks": o["marks"],
                             "new_marks": n["marks"], "old_shown": o["shown"], "new_shown": n["shown"],
                             "old_learned": o["learned"], "new_learned": n["learned"]})
        except Exception as exc:  # noqa: BLE001 - one configuration's problem, never the whole comparison's
            cmp.dropped.append((name(dict(zip(KEY, k))), type(exc).__name__))
    failed_old, failed_new = failures_by_configuration(old_df), failures_by_configuration(new_df)
    for k in sorted(set(old) - set(new)):
        (cmp.failed_new if k in failed_new else cmp.only_old).append(
            {**dict(zip(KEY, k)), **({"failed_runs": failed_new[k]["runs"], "reason": failed_new[k]["reason"],
                                      "old_samples_per_s": old[k]["median"], "old_runs": len(old[k]["runs"]),
                                      "old_shown": old[k]["shown"], "old_marks": old[k]["marks"],
                                      "old_machine": "; ".join(old[k]["machines"])} if k in failed_new else {})})
    for k in sorted(set(new) - set(old)):
        (cmp.failed_old if k in failed_old else cmp.only_new).append(
            {**dict(zip(KEY, k)), **({"failed_runs": failed_old[k]["runs"], "reason": failed_old[k]["reason"]}
                                     if k in failed_old else {})})
    near(cmp.only_old, [row_key(r) for r in cmp.only_old], new, "NEW", KEY)
    near(cmp.only_new, [row_key(r) for r in cmp.only_new], old, "OLD", KEY)
    return cmp


def regressions(cmp: Comparison, threshold: float) -> list[dict]:
    """The configurations significantly slower, by more than ``threshold`` (0.10: NEW under 0.9 × OLD)."""
    limit = math.log(1 - threshold)
    return [r for r in cmp.rows if r["verdict"] == SLOWER and r["log_ratio"] < limit]


def untested(cmp: Comparison, threshold: float) -> list[dict]:
    """The configurations with one run on a side (*not enough runs*) whose ratio is past ``threshold``: slower by
    more than it allows, but no test can say so."""
    limit = math.log(1 - threshold)
    return [r for r in cmp.rows if r["verdict"] == FEW and r["log_ratio"] < limit]

