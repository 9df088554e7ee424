#!/usr/bin/env bash
# Make a single-node Slurm possible for the cluster test (Debian's packages `slurm-wlm` and `munge`).
# Sourced by run_tests.sh (or run directly). Installs with apt-get only when missing and we are root;
# otherwise it prints a note and the Slurm test skips itself (saying why). Starts no daemon: the test
# starts its own private slurmctld, slurmd and munged (tests/test_cluster.py) and stops them.
_cgb_have_slurm() { command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 \
  && command -v sbatch >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; }
_cgb_ensure_slurm() {
  _cgb_have_slurm && return 0
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Slurm (Debian packages 'slurm-wlm', 'munge') for the cluster test ..." >&2
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
           && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge; } \
         >"${CGB_SLURM_LOG:-/tmp/cgb-slurm-install.log}" 2>&1 || ! _cgb_have_slurm; then
      echo "warning: installing Slurm failed (log: ${CGB_SLURM_LOG:-/tmp/cgb-slurm-install.log});" \
           "the Slurm test will be skipped" >&2
    fi
  else
    echo "note: Slurm not found and not root: the Slurm test will be skipped" \
         "(install Debian's 'slurm-wlm' and 'munge' to run it)" >&2
  fi
  return 0
}
_cgb_ensure_slurm
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then _cgb_have_slurm && command -v slurmd || echo "Slurm not available"; fi
