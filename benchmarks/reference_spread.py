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


def spread_rows(df) -> list[list[str]]:
    """The table's rows (strings): one per lease of each configuration, then, where it ran on several
    leases, one over them (all its runs; the range of the lease medians)."""
    ok = df[(df["status"] == "ok") & df["median_epoch_s"].notna()].copy()
    if ok.empty:
        return []
    ok["hardware"] = ok["gpu"].where(ok["device"] == "gpu", ok["cpu_model"]).fillna("?").astype(str)
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


def render(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEAD] + rows) for i in range(len(HEAD))]
    return "\n".join("  ".join(c.rjust(w) if i >= NUMERIC_FROM else c.ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                     for r in [HEAD, ["-" * w for w in widths]] + rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="record folders (read recursively)")
    args = ap.parse_args(argv)
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        print(f"not a folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    df, _, skipped = load_table(args.folders)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
