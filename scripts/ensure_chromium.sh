#!/usr/bin/env bash
# Make headless Chromium available for the report's browser test (Debian's package `chromium`).
# Sourced by run_tests.sh (or run directly). Installs with apt-get only when it is missing and we are
# root; otherwise it prints a note and the browser test skips itself. Exports CGB_CHROMIUM when found.
_cgb_find_chromium() {
  local c
  for c in "${CGB_CHROMIUM:-}" chromium chromium-browser google-chrome-stable google-chrome; do
    [[ -n "$c" ]] && command -v "$c" >/dev/null 2>&1 && { command -v "$c"; return 0; }
  done
  return 1
}
_cgb_ensure_chromium() {
  local found
  if found="$(_cgb_find_chromium)"; then export CGB_CHROMIUM="$found"; return 0; fi
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Chromium (Debian package 'chromium') for the report's browser test ..." >&2
    mkdir -p outputs 2>/dev/null || true
    if { DEBIAN_FRONTEND=noninteractive apt-get update -qq \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium \
              fonts-dejavu-core; } >"${CGB_CHROMIUM_LOG:-/tmp/cgb-chromium-install.log}" 2>&1; then
      found="$(_cgb_find_chromium)" && export CGB_CHROMIUM="$found" && return 0
    fi
    echo "warning: installing Chromium failed (log: ${CGB_CHROMIUM_LOG:-/tmp/cgb-chromium-install.log});" \
         "the browser test will be skipped" >&2
  else
    echo "note: Chromium not found and not root: the report's browser test will be skipped" \
         "(install Debian's 'chromium' package to run it)" >&2
  fi
  return 0
}
_cgb_ensure_chromium
# run directly (not sourced): report where it is
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then echo "${CGB_CHROMIUM:-chromium not available}"; fi
