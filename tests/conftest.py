import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Every test writes under its own tmp folder; no network; an empty Keras cache."""
    monkeypatch.setenv("CGB_OUTPUTS", str(tmp_path / "outputs"))
    monkeypatch.setenv("KERAS_HOME", str(tmp_path / "keras_home"))
    monkeypatch.setenv("CGB_OFFLINE", "1")
    # what a point run in this process (runner.main called by a test) exports for its kernel: a later test's point
    # would read a stale deadline ("the point's deadline is too near") or another test's notebook
    for k in ("CGB_POINT_DEADLINE", "CGB_EXECUTED_NOTEBOOK", "CGB_KERNEL_STDERR"):
        monkeypatch.delenv(k, raising=False)
    yield


@pytest.fixture(scope="session")
def kernel(tmp_path_factory):
    """A kernelspec for this Python (what the runner uses)."""
    from helpers.runner import install_kernelspec

    old = {k: os.environ.get(k) for k in ("JUPYTER_PATH", "PYTHONPATH")}
    name = install_kernelspec(tmp_path_factory.mktemp("jupyter"))
    yield name
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
