"""How far runs of one configuration differ, within a lease and from lease to lease.

    .venv/bin/python benchmarks/reference_spread.py reference/h100/records [more record folders...]

For every configuration (workload, backend, device, batch, precision; "other settings" names the
hardware and whatever else tells apart configurations sharing those five) it prints one row per lease (a
machine boot: the fingerprint's ``boot_id``; records without one are grouped as "unknown lease"): the
runs in that lease, their median samples/s (each run's figure: samples per epoch ÷ its median steady
epoch, as the report takes it), the run-to-run range and its width relative to the median; then, where
the configuration ran on several leases, one row over them: all its runs, their median, the range of the
lease medians and its relative width (lease to lease). The last column is the median run's steady window
in seconds (the sum of its steady epochs). A plain text table on stdout; writes nothing.

Then the held-out-lease coverage: what a reader should expect of a range on a fresh machine. For every
configuration measured on two or more leases under the current protocol (record schema 2 or later, not a
profiled run), each lease in turn is held out: does its median fall inside the min–max of the other leases'
runs? It prints the count per device (held-out leases inside / held out) and the cells whose held-out median
fell outside, with how far. ``--min-leases K`` counts only configurations with at least K leases.

Then the prediction interval for a fresh lease: a range of lease medians is not where the next lease
lands, so for each configuration on three or more leases, each lease in turn is held out and predicted from the
others alone: the centre is the mean of the other leases' log medians, the half-width ``z * s * sqrt(1 + 1/n)``
(n other leases, ``z`` = 1.645: a 90% interval) where ``s`` is the lease-to-lease standard deviation of log
medians pooled over every configuration of the same device, computed without the held-out lease's runs (of any
configuration). The same again with the lease's host calibration (``dispatch_mcalls_per_s``, measured before
every run) as a covariate: log median = cell + beta * log calibration, beta pooled over the device's
configurations, the held-out lease predicted at its own calibration (which a user knows before a run). It prints
each interval's coverage per device (held-out lease medians inside), the pooled s and beta, and per configuration
its lease medians beside their calibration (samples/s per M Python calls/s). ``--interval`` prints only that.

``--markdown`` prints instead the published table (reference/<gpu>/README.md): every configuration of the current
protocol measured on both the GPU and the CPU (same workload, backend, batch and precision), with each side's
median, runs and leases, the GPU's min–max over its runs, and the speedup (GPU median ÷ CPU median).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.report.derive.aggregate import run_figures  # noqa: E402
from helpers.report.load.table import CONFIG_KEYS, load_table  # noqa: E402
from helpers.report.load.values import isnull
from helpers.report.words.fmt import num

UNKNOWN = "unknown lease"
SHOWN = ["workload", "backend", "device", "batch_size", "precision"]
# the hardware, not the host name: runs on two leases of one machine type are one configuration
OTHER = ["hardware"] + [k for k in CONFIG_KEYS if k not in SHOWN and k != "machine"]
HEAD = ["workload", "backend", "device", "batch", "precision", "other settings", "lease", "runs",
        "median samples/s", "range (min–max)", "spread %", "window s"]
NUMERIC_FROM = HEAD.index("runs")  # right-aligned from here


def _spread(values) -> tuple[str, str]:
    """('lo–hi', 'relative width %') of ``values``; '(1 run)' for one."""
    if len(values) < 2:
        return "(1 run)", ""
    med = statistics.median(values)
    return f"{num(min(values))}–{num(max(values))}", f"{100 * (max(values) - min(values)) / med:.1f}"


def _others(ok) -> list[str]:
    """Per record, the settings besides SHOWN that differ between configurations sharing SHOWN ('' if none)."""
    out = [""] * len(ok)
    pos = {ix: i for i, ix in enumerate(ok.index)}
    for _, g in ok.groupby(SHOWN, dropna=False, sort=False):
        vary = [k for k in OTHER if g[k].astype(str).nunique(dropna=False) > 1]
        for ix, r in g.iterrows():
            out[pos[ix]] = ", ".join(f"{'' if k == 'hardware' else k + '='}{r[k]}" for k in vary)
    return out


def _hardware(ok):
    """What a configuration ran on: the GPU's name on the GPU, the CPU model on the CPU ("?" where unrecorded)."""
    return ok["gpu"].where(ok["device"] == "gpu", ok["cpu_model"]).fillna("?").astype(str)


def spread_rows(df) -> list[list[str]]:
    """The table's rows (strings): one per lease of each configuration, then, where it ran on several
    leases, one over them (all its runs; the range of the lease medians)."""
    ok = df[(df["status"] == "ok") & df["median_epoch_s"].notna()].copy()
    if ok.empty:
        return []
    ok["hardware"] = _hardware(ok)
    ok["lease"] = ok["boot_id"].map(lambda b: UNKNOWN if isnull(b) else str(b)[:12])
    ok["other"] = _others(ok)
    rows = []
    for key, g in ok.groupby(SHOWN + OTHER, dropna=False, sort=True):
        k = dict(zip(SHOWN, key))
        first = [str(k["workload"]), str(k["backend"]), str(k["device"]),
                 "" if isnull(k["batch_size"]) else f"{k['batch_size']:g}", str(k["precision"]), g["other"].iloc[0]]
        medians = []
        for lease, h in sorted(g.groupby("lease", sort=True), key=lambda kv: (kv[0] == UNKNOWN, kv[0])):
            sps = list(run_figures(h))
            medians.append(statistics.median(sps))
            rng, pct = _spread(sps)
            rows.append(first + [lease, str(len(sps)), num(medians[-1]), rng, pct, num(h["steady_s"].median())])
        if len(medians) > 1:
            rng, pct = _spread(medians)
            rows.append(first + [f"= {len(medians)} leases (lease to lease)", str(len(g)),
                                 num(statistics.median(run_figures(g))), rng, pct, num(g["steady_s"].median())])
    return rows


def holdout(df, min_leases: int = 2) -> list[dict]:
    """One entry per (configuration, held-out lease) of the current protocol's runs (schema >= 2, not profiled) on
    ``min_leases`` or more leases: the held-out lease's median samples/s, the other leases' runs' min and max,
    ``inside`` (min <= median <= max) and ``off`` (how far outside, relative to the nearer end; 0 inside)."""
    ok = _current(df)
    ok = ok[ok["boot_id"].notna()]
    if ok.empty:
        return []
    ok["hardware"] = _hardware(ok)
    out = []
    for key, g in ok.groupby(SHOWN + OTHER, dropna=False, sort=True):
        by_lease = {lease: list(run_figures(h)) for lease, h in g.groupby("boot_id", sort=True)}
        if len(by_lease) < max(2, min_leases):
            continue
        for lease, sps in by_lease.items():
            rest = [v for other, vals in by_lease.items() if other != lease for v in vals]
            if len(rest) < 2:  # one other run is no range
                continue
            med, lo, hi = statistics.median(sps), min(rest), max(rest)
            off = 0.0 if lo <= med <= hi else (med - hi) / hi if med > hi else (med - lo) / lo
            out.append({**dict(zip(SHOWN, key)), "lease": str(lease)[:8], "runs": len(sps), "median": med,
                        "other_runs": len(rest), "other_leases": len(by_lease) - 1, "lo": lo, "hi": hi,
                        "inside": off == 0.0, "off": off})
    return out


def render_holdout(entries: list[dict]) -> str:
    lines = ["held-out-lease coverage (schema >= 2, profiled runs left out): each lease of a configuration held out "
             "in turn; its median inside the min-max of the other leases' runs?"]
    for device in sorted({e["device"] for e in entries}):
        es = [e for e in entries if e["device"] == device]
        cells = {(e["workload"], e["backend"], e["batch_size"], e["precision"]) for e in es}
        inside = sum(e["inside"] for e in es)
        lines.append(f"  {device}: {inside} of {len(es)} held-out leases inside ({100 * inside / len(es):.0f}%), "
                     f"{len(cells)} configurations, {min(e['other_leases'] for e in es) + 1}-"
                     f"{max(e['other_leases'] for e in es) + 1} leases each")
        for e in es:
            if not e["inside"]:
                lines.append(f"    outside: {e['workload']} {e['backend']} b{e['batch_size']:g} lease {e['lease']} "
                             f"median {num(e['median'])} vs {num(e['lo'])}-{num(e['hi'])} "
                             f"({e['other_runs']} runs, {e['other_leases']} leases): {100 * e['off']:+.0f}%")
    return "\n".join(lines)


Z90 = 1.645  # a two-sided 90% normal interval


def _lease_cells(df, min_leases: int = 3) -> dict:
    """(configuration key) -> {lease: (median samples/s, median host calibration in M calls/s or None)} for the
    current protocol's configurations on ``min_leases`` or more leases."""
    ok = _current(df)
    ok = ok[ok["boot_id"].notna()]
    out = {}
    if ok.empty:
        return out
    ok["hardware"] = _hardware(ok)
    for key, g in ok.groupby(SHOWN + OTHER, dropna=False, sort=True):
        leases = {}
        for lease, h in g.groupby("boot_id", sort=True):
            cal = h["cal_dispatch"].dropna()
            leases[str(lease)[:8]] = (statistics.median(run_figures(h)), float(cal.median()) if len(cal) else None)
        if len(leases) >= min_leases:
            out[tuple(key)] = leases
    return out


def _pooled(cells: dict, device: str, skip: str | None, covariate: bool) -> tuple[float, float, int]:
    """(pooled within-configuration SD of log lease medians, beta, degrees of freedom) over ``device``'s
    configurations, leaving out lease ``skip``. With ``covariate``: residuals of log median on log calibration
    (one intercept per configuration, one slope beta pooled over them)."""
    import math

    groups = []
    for key, leases in cells.items():
        if key[SHOWN.index("device")] != device:
            continue
        pts = [(math.log(m), math.log(c) if c else None) for lease, (m, c) in leases.items() if lease != skip]
        if covariate:
            pts = [(y, x) for y, x in pts if x is not None]
        if len(pts) >= 2:
            groups.append(pts)
    beta = 0.0
    if covariate:
        sxy = sxx = 0.0
        for pts in groups:
            my, mx = statistics.fmean(y for y, _ in pts), statistics.fmean(x for _, x in pts)
            sxy += sum((x - mx) * (y - my) for y, x in pts)
            sxx += sum((x - mx) ** 2 for _, x in pts)
        beta = sxy / sxx if sxx > 0 else 0.0
    ss, df = 0.0, -1 if covariate else 0
    for pts in groups:
        my, mx = statistics.fmean(y for y, _ in pts), statistics.fmean((x or 0.0) for _, x in pts)
        ss += sum((y - my - beta * ((x or 0.0) - mx)) ** 2 for y, x in pts)
        df += len(pts) - 1
    return (math.sqrt(ss / df) if df > 0 else float("nan")), beta, df


def prediction(df, min_leases: int = 3) -> list[dict]:
    """One entry per (configuration, held-out lease) on ``min_leases``+ leases: the held-out median, the plain
    interval (``lo``, ``hi``) and the calibrated one (``clo``, ``chi``; None without calibrations), each from the
    other leases only (see the module docstring)."""
    import math

    cells = _lease_cells(df, min_leases)
    out = []
    for key, leases in cells.items():
        device = key[SHOWN.index("device")]
        for lease, (med, cal) in leases.items():
            rest = {k: v for k, v in leases.items() if k != lease}
            n = len(rest)
            s, _, _ = _pooled(cells, device, lease, covariate=False)
            centre = statistics.fmean(math.log(m) for m, _ in rest.values())
            half = Z90 * s * math.sqrt(1 + 1 / n)
            e = {**dict(zip(SHOWN, key)), "lease": lease, "median": med, "cal": cal, "others": n,
                 "lo": math.exp(centre - half), "hi": math.exp(centre + half), "s": s, "clo": None, "chi": None}
            rest_c = [(m, c) for m, c in rest.values() if c]
            if cal and len(rest_c) >= 2:
                sc, beta, _ = _pooled(cells, device, lease, covariate=True)
                mx = statistics.fmean(math.log(c) for _, c in rest_c)
                my = statistics.fmean(math.log(m) for m, _ in rest_c)
                c_centre = my + beta * (math.log(cal) - mx)
                c_half = Z90 * sc * math.sqrt(1 + 1 / len(rest_c))
                e.update(clo=math.exp(c_centre - c_half), chi=math.exp(c_centre + c_half), sc=sc, beta=beta)
            e["inside"] = e["lo"] <= med <= e["hi"]
            e["c_inside"] = None if e["clo"] is None else e["clo"] <= med <= e["chi"]
            out.append(e)
    return out


def render_prediction(entries: list[dict], cells: dict) -> str:
    lines = ["prediction interval for a fresh lease (90%; each lease held out in turn, predicted from the other "
             "leases only; configurations on 3+ leases of the current protocol):"]
    for device in sorted({e["device"] for e in entries}):
        es = [e for e in entries if e["device"] == device]
        n_cells = len({tuple(e[k] for k in SHOWN) for e in es})
        inside = sum(e["inside"] for e in es)
        ce = [e for e in es if e["c_inside"] is not None]
        c_in = sum(e["c_inside"] for e in ce)
        lines.append(f"  {device}: plain interval {inside} of {len(es)} held-out leases inside "
                     f"({100 * inside / len(es):.0f}%), {n_cells} configurations; pooled lease-to-lease s "
                     f"{statistics.median(e['s'] for e in es):.3f} (log), half-width about "
                     f"±{100 * (statistics.median(e['hi'] / e['lo'] for e in es) ** 0.5 - 1):.0f}%")
        if ce:
            lines.append(f"  {device}: with the host calibration {c_in} of {len(ce)} inside "
                         f"({100 * c_in / len(ce):.0f}%); beta {statistics.median(e['beta'] for e in ce):.2f}, "
                         f"residual s {statistics.median(e['sc'] for e in ce):.3f}")
        cells_in = {}
        for e in es:
            k = (e["workload"], e["backend"], e["batch_size"], e["precision"])
            cells_in.setdefault(k, []).append(e["inside"])
        all_in = sum(all(v) for v in cells_in.values())
        lines.append(f"  {device}: configurations whose every held-out lease fell inside: {all_in} of "
                     f"{len(cells_in)} ({100 * all_in / len(cells_in):.0f}%)")
        for e in es:
            if not e["inside"]:
                lines.append(f"    outside: {e['workload']} {e['backend']} b{e['batch_size']:g} lease {e['lease']} "
                             f"median {num(e['median'])} vs {num(e['lo'])}-{num(e['hi'])} ({e['others']} leases)")
    lines.append("  samples/s against the lease's host calibration (M Python calls/s), per configuration:")
    for key, leases in cells.items():
        k = dict(zip(SHOWN, key))
        pts = ", ".join(f"{num(m)} @ {c:.1f}" if c else f"{num(m)} @ ?" for m, c in leases.values())
        lines.append(f"    {k['workload']} {k['backend']} {k['device']} b{k['batch_size']:g}: {pts}")
    return "\n".join(lines)


def _current(df):
    ok = df[(df["status"] == "ok") & df["median_epoch_s"].notna()].copy()
    return ok[(ok["schema"].fillna(1) >= 2) & ~ok["knobs"].fillna("").str.contains("profile=True")]


def markdown(df) -> str:
    """The README table: GPU cells of the current protocol beside their CPU twins (see the module docstring), each
    figure written as the report writes it (``fmt.sps_shown``, ``fmt.speedup_shown``: one string per figure)."""
    from helpers.report.derive.aggregate import matched_pairs, summarise
    from helpers.report.derive.precision import digits
    from helpers.report.words.fmt import rounded, speedup_shown, sps_shown

    pairs = matched_pairs(summarise(_current(df)))
    lines = ["| workload (batch) | backend | CPU samples/s, median (runs / leases) "
             "| GPU samples/s, median (runs / leases) | GPU min–max over its runs | speedup |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for p in pairs.to_dict("records") if len(pairs) else []:
        prec = "" if p["precision"] == "float32" else f", {p['precision']}"
        lo, hi, med = p["runs_sps_min_gpu"], p["runs_sps_max_gpu"], p["samples_per_s_gpu"]
        g = digits(p, "_gpu")
        lines.append(f"| {p['workload']} ({p['batch_size']:g}{prec}) | {p['backend']} "
                     f"| {sps_shown(p, '_cpu')} ({p['n_runs_cpu']:g} / {p['n_leases_cpu']:g}) "
                     f"| {sps_shown(p, '_gpu')} ({p['n_runs_gpu']:g} / {p['n_leases_gpu']:g}) "
                     f"| {rounded(lo, g)}–{rounded(hi, g)} ({100 * (hi - lo) / med:.0f}%) | {speedup_shown(p)} |")
    return "\n".join(lines)


def render(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEAD] + rows) for i in range(len(HEAD))]
    return "\n".join("  ".join(c.rjust(w) if i >= NUMERIC_FROM else c.ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                     for r in [HEAD, ["-" * w for w in widths]] + rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="record folders (read recursively)")
    ap.add_argument("--min-leases", type=int, default=2,
                    help="the held-out coverage counts configurations of at least this many leases (default 2)")
    ap.add_argument("--interval", action="store_true",
                    help="print only the prediction interval's held-out coverage (configurations on 3+ leases)")
    ap.add_argument("--markdown", action="store_true",
                    help="print the published table (GPU cells and their CPU twins, current protocol) and exit")
    args = ap.parse_args(argv)
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        print(f"not a folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    df, _, skipped = load_table(args.folders)
    if args.markdown:
        print(markdown(df))
        return 0
    if args.interval:
        entries = prediction(df, max(3, args.min_leases))
        if not entries:
            print("no configuration of the current protocol on 3 or more leases", file=sys.stderr)
            return 1
        print(render_prediction(entries, _lease_cells(df, max(3, args.min_leases))))
        return 0
    rows = spread_rows(df)
    if not rows:
        print("no successful run in these records", file=sys.stderr)
        return 1
    ok = df[df["status"] == "ok"]
    leases, unknown = ok["boot_id"].dropna().nunique(), int(ok["boot_id"].isna().sum())
    print(f"{len(ok)} ok records ({len(df)} read, {len(skipped)} files skipped); leases (boot ids): {leases}"
          + (f"; {unknown} record(s) without a boot id (older records): '{UNKNOWN}'" if unknown else ""))
    print("samples/s of a run = samples per epoch / its median steady epoch; spread % = (max - min) / median; "
          "'lease to lease' rows (configurations on several leases): the median of all runs, the range and "
          "spread of the lease medians; window s: the median run's steady seconds\n")
    print(render(rows))
    entries = holdout(df, args.min_leases)
    print()
    print(render_holdout(entries) if entries else
          f"held-out-lease coverage: no configuration of the current protocol on {max(2, args.min_leases)}+ leases")
    pred = prediction(df, max(3, args.min_leases))
    if pred:
        print()
        print(render_prediction(pred, _lease_cells(df, max(3, args.min_leases))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
