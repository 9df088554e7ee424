#!/usr/bin/env bash
# Make Open MPI's `mpirun` available for the launcher test (Debian's package `openmpi-bin`): a 2-process point
# started by a real `mpirun` (tests/test_launch.py). Sourced by run_tests.sh (or run directly). Installs with
# apt-get only when `mpirun` is missing and we are root; otherwise it prints a note and that test skips itself.
# Exports CGB_MPIRUN when found.
_cgb_ensure_openmpi() {
  local found log="${CGB_OPENMPI_LOG:-/tmp/cgb-openmpi-install.log}"
  if found="$(command -v "${CGB_MPIRUN:-mpirun}" 2>/dev/null)"; then export CGB_MPIRUN="$found"; return 0; fi
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Open MPI (Debian package 'openmpi-bin') for the mpirun launcher test ..." >&2
    # another apt-get (the Chromium install beside it) may hold dpkg's lock: wait for it
    if { DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq \
         && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
              --no-install-recommends openmpi-bin; } >"$log" 2>&1; then
      found="$(command -v mpirun)" && export CGB_MPIRUN="$found" && return 0
    fi
    echo "warning: installing Open MPI failed (log: $log); the mpirun launcher test will be skipped" >&2
  else
    echo "note: mpirun not found and not root: the mpirun launcher test will be skipped" \
         "(install Debian's 'openmpi-bin' package to run it)" >&2
  fi
  return 0
}
_cgb_ensure_openmpi
# run directly (not sourced): report where it is
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then echo "${CGB_MPIRUN:-mpirun not available}"; fi
