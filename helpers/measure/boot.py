"""Which boot of which machine this is: one per boot, so one per cloud lease (the fingerprint and the calibration).

    boot_id()     # '3f2a9c...' (12 hex), or None where the kernel gives none
"""

from __future__ import annotations

import hashlib
from pathlib import Path

BOOT_ID = "/proc/sys/kernel/random/boot_id"


def boot_id(path: str | Path = BOOT_ID) -> str | None:
    """A short hash (sha256, 12 hex) of the kernel's boot id: one per boot, so one per cloud lease. The
    raw id is never recorded."""
    try:
        raw = Path(path).read_text().strip()
    except OSError:
        return None
    return hashlib.sha256(raw.encode()).hexdigest()[:12] if raw else None
