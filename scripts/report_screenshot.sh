#!/usr/bin/env bash
# The first screen of a report as a PNG, as a reader's browser shows it (1400 x 900), for the README.
#
#   scripts/report_screenshot.sh REPORT.html OUT.png [WIDTHxHEIGHT]
#   scripts/report_screenshot.sh --docs [DEFAULT_RUN_REPORT.html]    both pictures of the docs (below)
#
# The docs' two pictures, refreshed after the references are re-rendered (what --docs does):
#   scripts/report_screenshot.sh reference/h100/report.html docs/images/report-top-h100.png
#   scripts/report_screenshot.sh outputs/report.html docs/images/report-top-default.png
#     (any default CPU run's report: ./run_all.sh, or CGB_OUTPUTS=$(mktemp -d) ./run_all.sh and its report.html)
#
# Headless Chromium (scripts/ensure_chromium.sh installs it; CGB_CHROMIUM names another binary) loads the page
# from a file (the report is self-contained and asks for nothing over the network), in a fresh profile, with no
# sandbox, GPU or scrollbars. The PNG is then reduced to a 256-colour palette (pngquant if installed, else the
# project's Pillow) so that it stays a few hundred KB in the repository. Exit 1 on a missing report or a failed
# screenshot, with the reason.
set -euo pipefail
self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
root="$(dirname "$(dirname "$self")")"

if [[ "${1:-}" == "--docs" ]]; then
  default_report="${2:-${CGB_OUTPUTS:-$root/outputs}/report.html}"
  "$self" "$root/reference/h100/report.html" "$root/docs/images/report-top-h100.png"
  "$self" "$default_report" "$root/docs/images/report-top-default.png"
  exit 0
fi
if [[ $# -lt 2 || "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,11p' "$self" | sed 's/^# \{0,1\}//'
  exit 2
fi
report="$1"
out="$2"
size="${3:-1400x900}"
[[ -f "$report" ]] || { echo "error: no report at $report" >&2; exit 1; }
[[ "$size" =~ ^[0-9]+x[0-9]+$ ]] || { echo "error: size must be WIDTHxHEIGHT, got $size" >&2; exit 2; }
abs_report="$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
mkdir -p "$(dirname "$out")"
abs_out="$(cd "$(dirname "$out")" && pwd)/$(basename "$out")"
cd "$root"

source scripts/ensure_chromium.sh
_cgb_ensure_chromium
[[ -n "${CGB_CHROMIUM:-}" ]] || { echo "error: Chromium not found (scripts/ensure_chromium.sh)" >&2; exit 1; }

profile="$(mktemp -d -t cgb-shot-XXXXXX)"
raw="$profile/shot.png"
trap 'rm -rf "$profile"' EXIT

# --virtual-time-budget lets the page settle (fonts, layout) before the picture; the page runs no script.
timeout 120 "$CGB_CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync --mute-audio \
  --user-data-dir="$profile" --window-size="${size/x/,}" --virtual-time-budget=3000 \
  --screenshot="$raw" "file://$abs_report" >"$profile/chromium.log" 2>&1 || {
    echo "error: Chromium failed on $report:" >&2; tail -5 "$profile/chromium.log" >&2; exit 1; }
[[ -s "$raw" ]] || { echo "error: Chromium wrote no screenshot of $report" >&2; exit 1; }

if command -v pngquant >/dev/null 2>&1; then
  pngquant --force --quality=70-95 --speed 1 --output "$abs_out" -- "$raw" || cp "$raw" "$abs_out"
else
  py="${CGB_PYTHON:-.venv/bin/python}"
  [[ -x "$py" ]] || py=python3
  "$py" - "$raw" "$abs_out" <<'EOF' || cp "$raw" "$abs_out"
import sys
from PIL import Image

img = Image.open(sys.argv[1]).convert("RGB")
img.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
    sys.argv[2], optimize=True)
EOF
fi
echo "$out: $(wc -c <"$abs_out") bytes, ${size} first screen of $report"
