"""How far runs of one configuration differ, within a lease and from lease to lease (issue 14).

    .venv/bin/python benchmarks/reference_spread.py reference/h100/records [more record folders...]

For every configuration (workload, backend, device, batch, precision; "other settings" names the
hardware and whatever else tells apart configurations sharing those five) it prints one row per lease (a
machine boot: the fingerprint's ``boot_id``; records without one are grouped as "unknown lease"): the
runs in that lease, their median samples/s (each run's figure: samples per epoch ÷ its median steady
epoch, as the report takes it), the run-to-run range and its width relative to the median; then, where
the configuration ran on several leases, one row over them: all its runs, their median, the range of the
lease medians and its relative width (lease to lease). The last column is the median run's steady window
in seconds (the sum of its steady epochs). A plain text table on stdout; writes nothing.

Then the held-out-lease coverage (issue 36): what a reader should expect of a range on a fresh machine. For every
configuration measured on two or more leases under the current protocol (record schema 2 or later, not a
profiled run), each lease in turn is held out: does its median fall inside the min–max of the other leases'
runs? It prints the count per device (held-out leases inside / held out) and the cells whose held-out median
fell outside, with how far. ``--min-leases K`` counts only configurations with at least K leases.

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

from helpers.report.aggregate import run_figures  # noqa: E402
from helpers.report.fmt import isnull, num  # noqa: E402
from helpers.report.table import CONFIG_KEYS, load_table  # noqa: E402

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


def _current(df):
    ok = df[(df["status"] == "ok") & df["median_epoch_s"].notna()].copy()
    return ok[(ok["schema"].fillna(1) >= 2) & ~ok["knobs"].fillna("").str.contains("profile=True")]


def markdown(df) -> str:
    """The README table: GPU cells of the current protocol beside their CPU twins (see the module docstring), each
    figure written as the report writes it (``fmt.sps_shown``, ``fmt.speedup_shown``: one string per figure)."""
    from helpers.report.aggregate import matched_pairs, summarise
    from helpers.report.fmt import digits, rounded, speedup_shown, sps_shown

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
    return 0


if __name__ == "__main__":
    sys.exit(main())
