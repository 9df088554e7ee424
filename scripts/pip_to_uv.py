"""Print, one per line, the uv arguments that make ``uv pip install`` look where this machine's pip looks: pip's own
configuration (``pip config list``: files and ``PIP_*`` variables) for the index, extra indexes, find-links, a
constraints file and the certificate bundle. uv reads no pip configuration; without these a machine whose pip takes
wheels from a local mirror or a folder (a CPU build of torch, say) would have uv download others.

    python scripts/pip_to_uv.py        # e.g. --find-links\n/opt/wheels\n--index-strategy\nunsafe-best-match

pip takes the best match over every index it knows; uv's default takes the first index that has the package, so
where extra indexes or find-links are given the strategy is pip's (``unsafe-best-match``). Run by scripts/env.sh
with the venv's Python (no third-party import).
"""

from __future__ import annotations

import subprocess
import sys

FLAGS = {"index-url": "--index-url", "extra-index-url": "--extra-index-url", "find-links": "--find-links",
         "constraint": "--constraint"}


def pip_config() -> dict[str, list[str]]:
    """pip's settings, ``:env:`` (PIP_* variables) over the files, each value split on whitespace as pip does."""
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    found: dict[str, tuple[int, list[str]]] = {}
    for line in out.splitlines():
        scope_key, _, value = line.partition("=")
        scope, _, key = scope_key.rpartition(".")
        rank = 2 if scope == ":env:" else 1 if scope in ("global", "install") else 0
        values = value.strip().strip("'\"").split()
        if key in FLAGS and values and rank >= found.get(key, (-1, []))[0]:
            found[key] = (rank, values)
    return {k: v for k, (_, v) in found.items()}


def uv_args(config: dict[str, list[str]]) -> list[str]:
    args = []
    for key, flag in FLAGS.items():
        for v in config.get(key, []):
            args += [flag, v]
    if config.get("extra-index-url") or config.get("find-links"):
        args += ["--index-strategy", "unsafe-best-match"]
    return args


if __name__ == "__main__":
    print("\n".join(uv_args(pip_config())))
