# Sourced by run_all.sh and run_tests.sh: pick the Python to run with, creating the project's
# virtual environment and installing the pinned dependencies (pyproject.toml) when needed.
#   CGB_USE_CURRENT_PYTHON=1   use the current python3 as it is (no install): cloud GPU images
#   CGB_VENV=path              where the virtual environment lives (default .venv)
#   CGB_EXTRAS=frameworks,dev  the optional dependency groups to install

# Install the project with its extras into the venv: with uv (its version pinned in pyproject.toml's dev extras;
# the one on PATH if it is that version, else that version put into the venv by pip), looking where this machine's
# pip looks (scripts/pip_to_uv.py); with pip where uv cannot be had or fails (CGB_INSTALLER=pip: pip only). uv
# resolves, installs and byte-compiles in parallel, the same pinned wheels: 56 s on 2 idle cores against pip's
# 140-160 s. Every module is compiled here, as pip does: compiling only what a point imports missed the modules a
# backend loads lazily, and a kernel under PYTHONDONTWRITEBYTECODE compiled them again at every point.
cgb_install() {
  local venv="$1" extras="$2" pin uv=""
  pin="$(sed -n 's/^ *"uv==\([0-9][0-9a-z.]*\)".*/\1/p' pyproject.toml | head -1)"
  if [[ "${CGB_INSTALLER:-uv}" == uv && -n "$pin" ]]; then
    if command -v uv >/dev/null 2>&1 && [[ "$(uv --version 2>/dev/null)" == "uv $pin"* ]]; then
      uv="$(command -v uv)"
    elif "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$pin"; then
      uv="$venv/bin/uv"
    fi
  fi
  if [[ -n "$uv" ]]; then
    local args=()
    mapfile -t args < <("$venv/bin/python" scripts/pip_to_uv.py)
    echo "installing with $("$uv" --version) ${args[*]}"
    if "$uv" pip install --python "$venv/bin/python" --compile-bytecode "${args[@]}" -e ".[$extras]"; then
      return 0
    fi
    echo "uv failed: installing with pip instead"
  fi
  "$venv/bin/python" -m pip install --upgrade pip && "$venv/bin/python" -m pip install -e ".[$extras]"
}

cgb_python() {
  local venv="${CGB_VENV:-.venv}" extras="${CGB_EXTRAS:-frameworks,dev}" base marker log
  if [[ "${CGB_USE_CURRENT_PYTHON:-0}" == 1 ]]; then
    PY="$(command -v python3)"
    "$PY" - <<'PYEOF' || { echo "error: this Python lacks the suite's packages (see README: GPU images)" >&2; return 2; }
import importlib.util, sys
need = ["keras", "papermill", "nbclient", "nbconvert", "ipykernel", "pandas", "matplotlib", "yaml", "psutil"]
missing = [m for m in need if importlib.util.find_spec(m) is None]
if sys.version_info < (3, 11) or missing:
    print(f"python {sys.version.split()[0]}; missing: {', '.join(missing) or '-'}", file=sys.stderr)
    sys.exit(1)
PYEOF
    return 0
  fi
  marker="$venv/.cgb-installed-$extras"
  if [[ ! -x "$venv/bin/python" || ! -f "$marker" || pyproject.toml -nt "$marker" ]]; then
    base=""
    for cand in python3.13 python3.12 python3.11 python3; do
      if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        base="$cand"; break
      fi
    done
    [[ -n "$base" ]] || { echo "error: Python >= 3.11 is required" >&2; return 2; }
    mkdir -p "${CGB_OUTPUTS:-outputs}"
    log="${CGB_OUTPUTS:-outputs}/setup.log"
    echo "setting up $venv with $("$base" --version) (once; log: $log) ..." >&2
    { "$base" -m venv "$venv" && cgb_install "$venv" "$extras"; } >"$log" 2>&1 \
      || { echo "error: installing the dependencies failed; see $log" >&2; tail -5 "$log" >&2; return 1; }
    touch "$marker"
    echo "set up in $SECONDS s" >&2
  fi
  PY="$venv/bin/python"
}
