"""The verdict's figure: per workload, its fastest GPU configuration over its fastest CPU configuration.

    rows = ctx.best                     # best_over_best(ctx.costed), once a context: one row per workload,
                                        # columns suffixed _cpu / _gpu, as a matched pair's
    headline.sides(rows.iloc[0])        # 'TF on 2 CPU cores → JAX on the H100'
    one_side(ctx.costed)                # {(workload, backend): 'cpu' | 'gpu'}: a backend measured on one side only

Any backend, thread setting, compilation setting and loader workers on each side, but both sides at the same
*workload*: the same batch size, precision, augmentation, model knobs and data (``SAME``; the data source is not
compared against the bundled reference, which trains on synthetic data of the real shapes). Where a workload ran at
several such settings on both sides (the GPU also at larger batches, say), the one whose fastest GPU configuration
is fastest is the workload's: a GPU configuration at a batch the CPU never ran is never set against a CPU one.
Compared per sample (samples/s, the median over runs), so the two sides may train on different numbers of samples;
the interval and digits come from both sides' runs, as a matched pair's (``aggregate.add_speedup``).

Everything here is a function of the summary table (no files), so it is tested from literal records.
"""

from __future__ import annotations

import re

from helpers.record.reader import COPY
from helpers.report.derive import aggregate, learning
from helpers.report.load import columns as C
from helpers.report.load.reference import is_reference

SAME = ["workload", "batch_size", "precision", "augment", "knobs", "data_source"]  # what makes it the same workload
# the copy knob the reader gives each of a run's conflicting copies (record.reader.COPY): never what pairs
_COPY = re.compile(rf"(?:^|, ){COPY}=(.*?)(?=, [a-z_][a-z0-9_]*=|$)")  # a value may hold ", " itself


def without_copy(knobs) -> str:
    """A configuration's knobs less the ``copy=`` the reader gives conflicting copies of one run: each copy still
    pairs with its twin on the other device (a forged copy must not take a workload out of the verdict)."""
    return _COPY.sub("", str(knobs)).removeprefix(", ")


def _key(frame, cols):
    return frame[cols].apply(lambda col: col.map(str)).agg("|".join, axis=1)


def _copies(ok, side) -> list:
    """[] or, when ``side`` (a configuration) is one of a run's conflicting copies, every copy as (its row, its
    copy name or None for the original): ``words.learned.copies_text`` says them."""
    if f"{COPY}=" not in str(side["knobs"]):
        return []
    twins = ok[(ok["_same"] == side["_same"]) & (ok["device"] == side["device"])
               & (ok["backend"] == side["backend"]) & (ok["_plain"] == side["_plain"])]
    names = [_COPY.search(str(k)) for k in twins["knobs"]]
    return [(t, m.group(1) if m else None) for t, m in zip(twins.to_dict("records"), names)]


def _passed_over(ok, side, device: str) -> list:
    """[] or the configurations of ``side``'s workload setting (``_same``) and device that did not learn, fastest
    first, each as (its row, the knobs common to its workload, whether it was faster than the side taken): what the
    verdict left out (``words.learned.passed_over_text`` says them)."""
    if "learned" not in ok:
        return []
    gone = ok[(ok["_same"] == side["_same"]) & (ok["device"] == device) & (ok["learned"] == learning.NO)]
    common = learning.common_knobs(ok.loc[ok["workload"] == side["workload"], "knobs"])
    return [(r, common, r[C.SAMPLES_PER_S] > side[C.SAMPLES_PER_S])
            for r in gone.sort_values(C.SAMPLES_PER_S, ascending=False).to_dict("records")]


def _same(summ) -> list[str]:
    gpu = summ[summ["device"] == "gpu"]
    ref = len(gpu) and gpu["machine"].map(is_reference).all()
    return [c for c in SAME if not (ref and c == "data_source")]


def best_over_best(summ):
    """One row per workload with both a CPU and a GPU configuration at the same ``SAME`` settings: the fastest of
    each side (any backend, threads, compilation, workers), columns suffixed ``_cpu``/``_gpu``; ``machine`` is the
    CPU side's machine, ``gpu_machine`` the GPU side's; ``speedup`` = GPU samples/s ÷ CPU samples/s with its
    interval and ``digits`` (``aggregate.add_speedup``). Empty without such a workload."""
    import pandas as pd

    if summ is None or not len(summ):
        return pd.DataFrame()
    ok = summ[summ[C.SAMPLES_PER_S].notna() & summ["device"].isin(["cpu", "gpu"])].copy()
    if not len(ok):
        return pd.DataFrame()
    ok["knobs"] = ok["knobs"].map(str)
    # the knobs of what is learned (a learning rate) are no part of the workload setting: the best is taken over them
    ok["_plain"] = ok["knobs"].map(without_copy).map(learning.model_knobs)
    ok["_same"] = _key(ok.assign(knobs=ok["_plain"]), _same(ok))
    every = ok
    ok = learning.learned(ok)  # a configuration that did not learn is never the best (named on its row instead)
    fastest = ok.sort_values(C.SAMPLES_PER_S, ascending=False).groupby(["_same", "device"], sort=False).head(1)
    cpu, gpu = (fastest[fastest["device"] == d].set_index("_same") for d in ("cpu", "gpu"))
    both = gpu.loc[gpu.index.isin(cpu.index)]
    if not len(both):
        return pd.DataFrame()
    keys = both.sort_values(C.SAMPLES_PER_S, ascending=False).groupby("workload", sort=False).head(1).index
    out = []
    for k in keys:
        c, g = cpu.loc[k], gpu.loc[k]
        row = {s: c[s] for s in SAME}
        row.update({f"{col}_cpu": c[col] for col in cpu.columns})
        row.update({f"{col}_gpu": g[col] for col in gpu.columns})
        row.update(machine=c["machine"], gpu_machine=g["machine"], backend=f"{c['backend']} → {g['backend']}",
                   knobs=c["_plain"],
                   copy_runs=[(d, t) for d, t in (("CPU", _copies(ok, c.to_dict() | {"_same": k})),
                                                  ("GPU", _copies(ok, g.to_dict() | {"_same": k}))) if t],
                   passed_over=[(d, t) for d, t in
                                (("CPU", _passed_over(every, c.to_dict() | {"_same": k}, "cpu")),
                                 ("GPU", _passed_over(every, g.to_dict() | {"_same": k}, "gpu"))) if t])
        out.append(row)
    rows = pd.DataFrame(out)
    rows["data_source"] = rows["data_source_cpu"]
    return aggregate.add_speedup(rows).sort_values("workload").reset_index(drop=True)


def did_not_learn(summ, best):
    """One row per workload setting (``SAME``) with configurations on both devices where every configuration of one
    side did not learn (``learning``), and so no verdict row (``best``: ``best_over_best(summ)``, as the report context
holds it: ``Context.best``): ``workload``, ``side`` ('CPU', 'GPU' or 'CPU and
    GPU'), ``gone`` (each configuration as (its row, its workload's common knobs): ``words.learned.configurations_text``
    names them with their reasons), ``batch_size``, ``precision``. Empty when none."""
    import pandas as pd

    cols = ["workload", "side", "gone", "batch_size", "precision"]
    if summ is None or not len(summ) or "learned" not in summ:
        return pd.DataFrame(columns=cols)
    ok = summ[summ[C.SAMPLES_PER_S].notna() & summ["device"].isin(["cpu", "gpu"])].copy()
    if not len(ok):
        return pd.DataFrame(columns=cols)
    ok["knobs"] = ok["knobs"].map(str).map(without_copy).map(learning.model_knobs)
    ok["_same"] = _key(ok, _same(ok))
    done = set(best["workload"]) if len(best) else set()
    out = []
    for _, g in ok.groupby("_same", sort=True):
        if set(g["device"]) != {"cpu", "gpu"} or g["workload"].iloc[0] in done:
            continue
        bad = [d for d in ("cpu", "gpu") if (g[g["device"] == d]["learned"] == learning.NO).all()]
        if not bad:
            continue
        gone = g[g["device"].isin(bad)].sort_values(C.SAMPLES_PER_S, ascending=False)
        common = learning.common_knobs(ok.loc[ok["workload"] == g["workload"].iloc[0], "knobs"])
        out.append({"workload": g["workload"].iloc[0], "side": " and ".join(d.upper() for d in bad),
                    "gone": [(r, common) for r in gone.to_dict("records")],
                    "batch_size": g["batch_size"].iloc[0], "precision": g["precision"].iloc[0]})
    return pd.DataFrame(out, columns=cols).drop_duplicates("workload").reset_index(drop=True)


def one_side(summ) -> dict:
    """{(workload, backend): 'cpu' or 'gpu'}: a backend with configurations of a workload on one device only."""
    if summ is None or not len(summ):
        return {}
    ok = summ[summ[C.SAMPLES_PER_S].notna()]
    out = {}
    for (wl, be), g in ok.groupby(["workload", "backend"], sort=True):
        devs = set(g["device"]) & {"cpu", "gpu"}
        if len(devs) == 1 and {"cpu", "gpu"} <= set(ok[ok["workload"] == wl]["device"]):
            out[(wl, be)] = devs.pop()
    return out
