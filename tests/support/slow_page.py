"""Page renderers for the index's workers, light to import in a spawned worker: a notebook
whose name holds 'slow' never finishes, one named 'die' kills its worker; any other becomes a page holding its text
and the worker's pid."""

from __future__ import annotations

import os
import time
from pathlib import Path


def slow_on_marker(job) -> None:
    src, dst = map(Path, job)
    if "slow" in src.name:
        time.sleep(600)  # a crafted notebook whose rendering takes hours (the real one: test_hostile_bounds.py)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(f"{src.read_text()} rendered-in-pid-{os.getpid()}")


def die_on_marker(job) -> None:
    """A renderer killed (SIGKILL) on a notebook whose name holds 'die'."""
    import signal

    if "die" in Path(job[0]).name:
        os.kill(os.getpid(), signal.SIGKILL)
    return slow_on_marker(job)
