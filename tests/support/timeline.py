"""How a test run's time fell on its workers, from ``CGB_TEST_TIMELINE=<file> ./run_tests.sh``:

    python tests/support/timeline.py <file>      # per worker: busy seconds, first start, last stop; the last 10 tests
"""

from __future__ import annotations

import collections
import json
import sys


def main(path: str) -> None:
    rows = [json.loads(line) for line in open(path)]
    t0 = min(r["start"] for r in rows)
    by = collections.defaultdict(list)
    for r in rows:
        by[r["worker"]].append(r)
    for w, rs in sorted(by.items()):
        busy = sum(r["stop"] - r["start"] for r in rs)
        print(f"{w}: busy {busy:.0f} s, from {min(r['start'] for r in rs) - t0:.0f} to "
              f"{max(r['stop'] for r in rs) - t0:.0f} s, {len({r['test'] for r in rs})} tests")
    tests = collections.defaultdict(lambda: [0.0, 0.0, ""])
    for r in rows:
        t = tests[r["test"]]
        t[0] += r["stop"] - r["start"]
        t[1] = max(t[1], r["stop"] - t0)
        t[2] = r["worker"]
    print("the last to finish:")
    for name, (d, end, w) in sorted(tests.items(), key=lambda kv: -kv[1][1])[:10]:
        print(f"  {w} ends {end:6.0f} s  ({d:5.1f} s)  {name}")


if __name__ == "__main__":
    main(sys.argv[1])
