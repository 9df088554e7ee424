"""Publish a run's records and report as a reference folder (e.g. ``reference/h100/``).

    python scripts/publish_reference.py OUTPUTS_DIR [OUTPUTS_DIR ...] --to reference/h100 \
        [--exclude POINT_ID ...]

Reads every record under the given folders (several resumed runs of one grid, the runs of several
leases), keeps the newest record of each point on each lease (a point failed once and run again keeps
the later one; a lease is one machine boot, the fingerprint's ``boot_id``, so the runs of two leases of
the same machine type are all kept: each repeat of a point has its own id), and writes them to
``DEST/records/``, replacing what was there (file names carry the lease when it is known).
Paths are made machine-neutral on the way: the executed
notebook becomes ``../notebooks/<name>`` (notebooks are not published), ``params.output_dir`` becomes
``records``, and the project's own folder is cut from failure messages and tracebacks. Nothing else in a record
changes. The bare-loop results found beside the records (every ``bare_loops.jsonl`` under the folders, see
``helpers/report/load/bare.py``) go to ``DEST/records/bare_loops.jsonl``, each line once, so the published report
still sets the ladder's best rung against them. Then it renders the report over ``DEST/records`` with the
suite's own ``run_all.sh report --inputs`` (a real kernel, papermill, nbconvert) into
``DEST/report.html``, with its index page (``DEST/index.html``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from helpers.exits import Exit  # noqa: E402
from helpers.paths import without_prefix  # noqa: E402
from helpers.record.reader import read_records  # noqa: E402
from helpers.report.load import bare  # noqa: E402


def lease(rec: dict) -> str | None:
    """The machine boot a record was measured in (a hash, one per cloud lease), None in older records."""
    fp = rec.get("fingerprint")
    return fp.get("boot_id") if isinstance(fp, dict) and isinstance(fp.get("boot_id"), str) else None


def neutral(rec: dict, project_root: str) -> dict:
    """The record with machine paths replaced (see the module docstring)."""
    rec = {k: v for k, v in rec.items() if not k.startswith("_")}
    if rec.get("notebook"):
        rec["notebook"] = f"../notebooks/{Path(rec['notebook']).name}"
    if isinstance(rec.get("params"), dict) and rec["params"].get("output_dir"):
        rec["params"] = {**rec["params"], "output_dir": "records"}
    return without_prefix(rec, project_root)  # failure messages, tracebacks: project-relative


def bare_lines(sources) -> tuple[list[str], list[str]]:
    """(the distinct bare-loop result lines of every ``bare_loops.jsonl`` under ``sources``, in file order,
    [file:line of each line that is not a JSON object, left out])."""
    out, bad, seen = [], [], set()
    for f, i, obj, _why in bare.lines(sources):
        if obj is None:
            bad.append(f"{f}:{i}")
            continue
        key = json.dumps(obj, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(json.dumps(obj))
    return out, bad


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sources", nargs="+", type=Path, help="folders with records (outputs/ of the run)")
    ap.add_argument("--to", type=Path, required=True, help="the reference folder (records/, report.html)")
    ap.add_argument("--exclude", nargs="*", default=[], help="point ids to leave out")
    ap.add_argument("--project-root", default=None,
                    help="the project folder on the machine that ran the grid (default: this one's)")
    ap.add_argument("--no-report", action="store_true")
    args = ap.parse_args(argv)
    missing = [str(s) for s in args.sources if not s.is_dir()]
    if missing:
        print(f"error: no such folder: {', '.join(missing)}", file=sys.stderr)
        return Exit.BAD_GRID
    records, skipped = read_records(args.sources)
    newest: dict[tuple, dict] = {}
    for r in records:
        pid = r["point_id"]
        if pid in args.exclude:
            continue
        key = (pid, lease(r))
        if key not in newest or str(r.get("started_at")) > str(newest[key].get("started_at")):
            newest[key] = r
    if not newest:
        print("error: no records found", file=sys.stderr)
        return Exit.BAD_GRID
    dest = args.to / "records"
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.json"):
        old.unlink()
    root = args.project_root or str(ROOT)
    for r in newest.values():
        name = Path(r["_path"]).name
        if lease(r) and not name.endswith(f"-lease-{lease(r)[:8]}.json"):  # republished: named once
            name = f"{name[:-5]}-lease-{lease(r)[:8]}.json"
        (dest / name).write_text(json.dumps(neutral(r, root), indent=1) + "\n")
    status = {}
    for r in newest.values():
        status[r["status"]] = status.get(r["status"], 0) + 1
    print(f"{len(newest)} records -> {dest} ({', '.join(f'{n} {s}' for s, n in sorted(status.items()))}); "
          f"{len(records) - len(newest)} older or excluded left out; {len(skipped)} non-record files")
    loops, bad = bare_lines(args.sources)
    (dest / bare.FILE).unlink(missing_ok=True)
    if loops:
        (dest / bare.FILE).write_text("\n".join(loops) + "\n", encoding="utf-8")
    if loops or bad:
        print(f"{len(loops)} bare-loop result(s) -> {dest / bare.FILE}"
              + (f"; {len(bad)} line(s) not a JSON object left out: {', '.join(bad[:5])}" if bad else ""))
    if args.no_report:
        return Exit.OK
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "CGB_OUTPUTS": tmp}
        cmd = [str(ROOT / "run_all.sh"), "--current-python", "report", "--inputs", str(dest)]
        proc = subprocess.run(cmd, env=env, cwd=ROOT)
        if proc.returncode != 0:
            print(f"error: the report failed (exit {proc.returncode})", file=sys.stderr)
            return proc.returncode
        # the report links the index and the CSVs of its runs and configurations, the index the report
        for name in ("report.html", "index.html", "results.csv", "configurations.csv", "verdict.csv"):
            (args.to / name).write_bytes((Path(tmp) / name).read_bytes())
    print(f"report -> {args.to / 'report.html'} (and index.html, results.csv, configurations.csv, verdict.csv)")
    return Exit.OK


if __name__ == "__main__":
    sys.exit(main())
