#!/usr/bin/env bash
# Run a benchmark grid and render the report.
#
#   ./run_all.sh                         the default grid (params/quick.yaml)
#   ./run_all.sh params/seeds.yaml ...   any grid files (the verb `run`, the default: `run_all.sh run GRID ...`)
#   ./run_all.sh VERB ...                validate, report, compare, predict, lab (`--help` lists them,
#                                        `VERB --help` a verb's options; docs/running.md: every option)
#   ./run_all.sh --current-python ...    use this Python as it is, install nothing (cloud GPU images)
#   ./run_all.sh lab [lab options]       open the notebooks in JupyterLab (its URL and token are printed;
#                                        options go to `jupyter lab`: --no-browser --port 8899 ...)
#
# First run: creates .venv and installs the pinned dependencies (pyproject.toml); later runs reuse it.
# Outputs: outputs/runs/<time>/ (records, executed notebooks, run.log) and outputs/report.html.
# Outputs go to $CGB_OUTPUTS instead when set (nothing is then written in the project: a read-only
# checkout can run, and `validate` writes nothing at all).
# Exit status: the table of docs/running.md#exit-status, or --help (one definition: helpers/exits.py).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if [[ "${1:-}" == "--current-python" ]]; then
  export CGB_USE_CURRENT_PYTHON=1
  shift
fi
source scripts/env.sh
cgb_python || exit $?
exec "$PY" -m helpers.runner "$@"
