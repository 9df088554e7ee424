"""The exit status of the suite's commands (``python -m helpers.runner``, ``run_all.sh``, its ``--lab``, the
scripts), defined once: the runner's ``--help`` lists them from here, and tests/test_docs.py checks that the
lists of docs/running.md and run_all.sh name exactly these codes.

    return Exit.BUSY                 # an int: sys.exit(Exit.BUSY) exits with status 3
    Exit.BUSY.description            # its one line, as --help shows it
    summary()                        # "0 every point ok or skipped; 1 ...; 130 interrupted (...)"
"""

from __future__ import annotations

import enum


class Exit(enum.IntEnum):
    OK = 0
    FAILED = 1
    BAD_GRID = 2
    BUSY = 3
    CANNOT_WRITE = 4
    INTERRUPTED = 130

    @property
    def description(self) -> str:
        return DESCRIPTIONS[self]


DESCRIPTIONS = {
    Exit.OK: "every point ok or skipped",
    Exit.FAILED: "a point failed, or the report could not be rendered",
    Exit.BAD_GRID: "a bad grid or argument, or a grid over the size guard without --yes (nothing run)",
    Exit.BUSY: "another run holds outputs/, or another runner this shard",
    Exit.CANNOT_WRITE: "outputs/ cannot be written (read-only, full disk: the points done are kept)",
    Exit.INTERRUPTED: "interrupted (Ctrl-C, SIGTERM): run again to resume",
}


def summary() -> str:
    """Every code with its line, for help texts."""
    return "; ".join(f"{int(e)} {e.description}" for e in Exit)
