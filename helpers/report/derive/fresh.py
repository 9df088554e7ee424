"""What a fresh machine of the same kind is expected to give: a 90% prediction interval per configuration.

A configuration's between-run range says how runs of one machine (one lease: one ``boot_id``) differ; a reader who
rents the same kind of machine gets a new lease, whose median lands further away (measured on the H100 reference:
inside the published range 58% of the time on the GPU, 30% on the CPU). The interval here is the one whose held-out
coverage the reference's README publishes (87% GPU, 90% CPU at 90%): the centre is
the geometric mean of the configuration's lease medians, the half-width ``Z90 * s * sqrt(1 + 1/n)`` (n leases)
where ``s`` is the lease-to-lease standard deviation of log medians pooled over every configuration of the same
device measured on three leases or more (two where none has three). Where the records have no such configuration
for a device (one lease, a laptop's run), ``s`` is the bundled reference's, and ``fresh_basis`` says so.

    costed = add(costed, df)            # fresh_lo, fresh_hi, fresh_pct (half-width, %), fresh_basis
"""

from __future__ import annotations

import math

from helpers.record.upgrade import EARLIER
from helpers.report.load import table

Z90 = 1.645  # a two-sided 90% interval of a normal


def _current(df):
    """The runs of the current protocol that the lease spread is taken from (as the reference's held-out check)."""
    ok = df[(df["status"] == "ok") & df["median_epoch_s"].notna()]
    ok = ok[ok["protocol"] != EARLIER]
    return ok[~ok["knobs"].fillna("").astype(str).str.contains("profile=True")]


def _key(values) -> tuple:
    return tuple("" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v) for v in values)


def lease_medians(df) -> dict[tuple, tuple[str, list[float]]]:
    """Per configuration (``table.CONFIG_KEYS``): its device and the median samples/s of each lease (runs without a
    ``boot_id`` form one lease)."""
    import numpy as np

    from helpers.report.derive.aggregate import run_figures

    out = {}
    ok = _current(df) if len(df) else df
    for key, g in ok.groupby(table.CONFIG_KEYS, dropna=False, sort=False):
        meds = [float(np.median(f)) for _, lg in g.groupby(g["boot_id"].fillna("?"), sort=True)
                if (f := run_figures(lg)).size and np.median(f) > 0]
        if meds:
            out[_key(key)] = (str(g["device"].iloc[0]), meds)
    return out


def pooled(cells: dict, min_leases: int = 2) -> dict[str, tuple[float, int, int]]:
    """Per device: (s, configurations, leases): the lease-to-lease standard deviation of log medians pooled over
    every configuration with ``min_leases`` leases or more."""
    acc: dict[str, list] = {}
    for device, meds in cells.values():
        if len(meds) < min_leases or not all(math.isfinite(m) for m in meds):
            continue
        logs = [math.log(m) for m in meds]
        mean = sum(logs) / len(logs)
        a = acc.setdefault(device, [0.0, 0, 0, 0])
        a[0] += sum((x - mean) ** 2 for x in logs)
        a[1] += len(logs) - 1
        a[2] += 1
        a[3] += len(logs)
    return {d: (math.sqrt(ss / dof), n, leases) for d, (ss, dof, n, leases) in acc.items() if dof > 0}


_FALLBACK: dict = {}


def spread(cells: dict) -> dict[str, tuple[float, int, int]]:
    """Per device, the pooled spread of the configurations on three leases or more (as the reference's held-out
    check takes it: benchmarks/reference_spread.py --interval), else of those on two."""
    return {**pooled(cells, 2), **pooled(cells, 3)}


def reference_spread() -> tuple[dict, str]:
    """The bundled reference's pooled spread per device and its name (the first reference folder with one)."""
    if "v" not in _FALLBACK:
        from helpers.report.load.reference import reference_folders, reference_table

        found = ({}, "")
        for folder in reference_folders():
            p = spread(lease_medians(reference_table(folder)))
            if {"cpu", "gpu"} <= set(p):
                found = (p, folder.parent.name)
                break
        _FALLBACK["v"] = found
    return _FALLBACK["v"]


def add(costed, df):
    """``costed`` with ``fresh_lo``/``fresh_hi`` (samples/s), ``fresh_pct`` (the upper half-width, %) and
    ``fresh_basis`` (where ``s`` comes from) per configuration; empty where no spread is known for its device."""
    if costed is None or not len(costed):
        return costed
    cells = lease_medians(df)
    own = spread(cells)
    ref, ref_name = reference_spread() if {"cpu", "gpu"} - set(own) else ({}, "")
    lo, hi, pct, basis = [], [], [], []
    for r in costed.to_dict("records"):
        device, meds = cells.get(_key(r.get(k) for k in table.CONFIG_KEYS), (r.get("device"), []))
        if device in own:
            s, n_conf, leases = own[device]
            why = (f"s = {s:.3f} pooled over {n_conf} {device.upper()} configurations of these records ({leases} "
                   "lease medians)")
        elif device in ref:
            s, n_conf, leases = ref[device]
            why = f"s = {s:.3f} of the bundled reference {ref_name} ({n_conf} {device.upper()} configurations)"
        else:
            s = None
        if s is None or not meds:
            lo.append(None), hi.append(None), pct.append(None), basis.append("")
            continue
        centre = sum(math.log(m) for m in meds) / len(meds)
        half = Z90 * s * math.sqrt(1 + 1 / len(meds))
        lo.append(math.exp(centre - half)), hi.append(math.exp(centre + half))
        pct.append(100 * (math.exp(half) - 1))
        basis.append(f"90% prediction interval for a fresh lease: {len(meds)} lease(s) here, {why}")
    return costed.assign(fresh_lo=lo, fresh_hi=hi, fresh_pct=pct, fresh_basis=basis)


def sentence(rows) -> str:
    """The verdict's words on another machine of each kind, from its rows' ``fresh_pct_cpu``/``_gpu``."""
    parts = []
    for d, name in (("cpu", "CPU"), ("gpu", "GPU")):
        col = f"fresh_pct_{d}"
        v = rows[col].dropna() if col in rows else []
        if len(v):
            a, b = round(v.min()), round(v.max())
            parts.append(f"the {name} side within about ±{a}%" if a == b else f"the {name} side within ±{a}–{b}%")
    if not parts:
        return ""
    return ("On a fresh machine of each kind expect " + " and ".join(parts) + " of these medians, nine times in ten "
            "(a 90% prediction interval from the lease-to-lease spread; the brackets are between runs of one "
            "machine; verdict.csv has each side's interval).")
