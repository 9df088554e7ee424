"""Matched CPU/GPU pairs across machines: your CPU configurations beside the bundled reference GPU's (``all_pairs``).
"""

from __future__ import annotations

from helpers.report.derive import aggregate
from helpers.report.load.reference import is_reference, match_key


def all_pairs(summ):
    """``aggregate.matched_pairs`` plus, for every own CPU configuration without a GPU twin on its own
    machine, the matching reference GPU configuration (``MATCH``): ``machine`` is the CPU's machine and
    ``gpu_machine`` the reference's (own pairs: ``gpu_machine`` = ``machine``)."""
    import pandas as pd

    own = aggregate.matched_pairs(summ[~summ["machine"].map(is_reference)]) if len(summ) else pd.DataFrame()
    if len(own):
        own = own.assign(gpu_machine=own["machine"])
    ref = summ[summ["machine"].map(is_reference) & (summ["device"] == "gpu")] if len(summ) else summ
    cpu = summ[~summ["machine"].map(is_reference) & (summ["device"] == "cpu")] if len(summ) else summ
    if not len(ref) or not len(cpu):
        return own
    out = []
    for machine, c in cpu.groupby("machine", sort=True):
        done = set(match_key(own[own["machine"] == machine])) if len(own) else set()
        c = c[~match_key(c).isin(done)]
        for label, g in ref.groupby("machine", sort=True):
            # the two machines made one: matched_pairs pairs on PAIR_KEYS, which name the machine, the loader's
            # workers and the data source (yours may be the real dataset, the reference's is synthetic)
            g = g.assign(machine=machine)
            both = pd.concat([c, g], ignore_index=True)
            data = both["data_source"]
            both = both.assign(input_workers=both["workers"], workers="", data_source="")  # workers: said
            p = aggregate.matched_pairs(both)
            if len(p):
                p = p.assign(gpu_machine=label, data_source=data.iloc[0] if len(data) else None)
                out.append(p)
    if not out:
        return own
    return pd.concat(([own] if len(own) else []) + out, ignore_index=True)


def speedup_label(p) -> str:
    """'your CPU → reference H100 2026-11-23' for a reference pair, '' for a pair on one machine."""
    gm = p.get("gpu_machine")
    return f"your CPU → {gm.split(':')[0]}" if is_reference(gm) else ""
