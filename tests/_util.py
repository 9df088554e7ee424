"""Helpers shared by the test files."""

import os
import subprocess
import sys

from helpers.paths import PROJECT_ROOT


def in_fresh_python(code: str, backend: str) -> str:
    """Run ``code`` in a fresh interpreter on ``backend`` on the CPU (Keras is never imported in pytest)."""
    env = {**os.environ, "KERAS_BACKEND": backend, "JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": "",
           "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout
