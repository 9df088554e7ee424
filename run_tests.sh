#!/usr/bin/env bash
# Run the tests: sets up .venv with the pinned dependencies if needed, lints, runs pytest.
#   ./run_tests.sh [pytest args]        (CGB_TEST_WORKERS=1: one worker; -n 0 after it: no xdist at all)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
source scripts/env.sh
cgb_python || exit $?
# the report's browser test needs Chromium (Debian's package); installed here when missing
if [[ -f scripts/ensure_chromium.sh ]]; then source scripts/ensure_chromium.sh; fi
# the launcher test starts a 2-process point under a real mpirun: Debian's openmpi-bin, installed here when missing
if [[ -f scripts/ensure_openmpi.sh ]]; then source scripts/ensure_openmpi.sh; fi
# the cluster test starts a single-node Slurm: Debian's slurm-wlm and munge, installed here when missing
if [[ -f scripts/ensure_slurm.sh ]]; then source scripts/ensure_slurm.sh; fi
"$PY" -m ruff check helpers tests notebooks benchmarks scripts/offline_host
# the layers of helpers/ (pyproject.toml's [tool.importlinter]): no module imports from a layer above its own
"$PY" -c 'import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))'
# the project's own modules compiled once (gitignored __pycache__/): under PYTHONDONTWRITEBYTECODE every process the
# tests start (runners, kernels, workers: several hundred) compiled helpers/ again, about 0.5 s of CPU each
"$PY" -m compileall -q -j 0 helpers tests >/dev/null
# both cores (pytest-xdist: groups of tests that share a run stay on one worker), the 30 slowest in the log
exec "$PY" -m pytest -n "${CGB_TEST_WORKERS:-2}" --dist loadgroup --durations=30 "$@"
