#!/usr/bin/env bash
# The scaling grid (params/multi_gpu.yaml: 1, 2, 4, 8 GPUs, both ways, both input paths) through the suite's
# runner on your machine of several GPUs, resumed across sessions of one boot; GRID=params/multi_gpu_profile.yaml
# OUTNAME=multi_gpu_profile for the step breakdown of the recommended path on 1 and 4 GPUs.
#
#   bash scripts/offline_host/profile_gpu.sh --wheels   # HERE, once: the suite's pure-Python packages in .whl/
#   bash scripts/offline_host/multi_gpu.sh [BUDGET_S]   # THERE, .whl/ uploaded: starts no point after BUDGET_S s
#                                                       # (420 in a 10-minute session: install and tarball ~40 s)
#
# Each session resumes the grid where the last stopped (the machine keeps /tmp/cgb/multi_gpu while it stays up) and
# writes HOST_OUT/$OUTNAME_runs.tgz (HOST_OUT: the folder you bring back; default a fresh temporary one): unpack it
# here (`tar xzf multi_gpu_runs.tgz -C outputs`), then publish:
#   python3 scripts/publish_reference.py outputs/multi_gpu --to reference/h100x4
set -euo pipefail
cd "$(dirname "$0")/../.."
BUDGET="${1:-420}"
OUTDIR="${HOST_OUT:-$(mktemp -d)}"; mkdir -p "$OUTDIR"
exec > >(tee -a "$OUTDIR/multi_gpu.log") 2>&1
NAME="${OUTNAME:-multi_gpu}"
if [ -d /tmp/site/keras ]; then  # installed by an earlier session on this boot
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
elif compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
mkdir -p /tmp/cgb
[ -d "/tmp/cgb/$NAME" ] && echo "runs of an earlier session on this machine: resumed"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
nvidia-smi topo -m 2>/dev/null | head -4 || true
export PYTHONUNBUFFERED=1 CGB_OUTPUTS="/tmp/cgb/$NAME" NCCL_NVLS_ENABLE=0 CGB_TRACE_MAX_MB=4
# the runner is stopped CUTOFF s after BUDGET (default 90: a point started just before the budget ends), so that
# the tarball below is always made inside a 10-minute session: a session cut off returns no file
timeout --signal=INT --kill-after=20 $((BUDGET + ${CUTOFF:-90})) \
    python3 -m helpers.runner "${GRID:-params/multi_gpu.yaml}" --budget "$BUDGET" --no-report --yes \
    || echo "runner exit $?"
# every run so far, one line each (the figures come back in the log even if the files do not)
NAME="$NAME" python3 - <<'PY'
import json, os, pathlib
for f in sorted(pathlib.Path("/tmp/cgb", os.environ["NAME"]).rglob("records/*.json")):
    r = json.loads(f.read_text())
    p = r.get("params") or {}
    b = r.get("step_breakdown") or {}
    parts = " ".join(f"{k} {v:.1f}" for k, v in (b.get("parts_ms") or {}).items())
    print(f"{r.get('workload'):12} gpus {p.get('gpus', 1)} processes {p.get('processes', 1)} "
          f"{p.get('input_dtype', 'float32'):7} {p.get('data_placement', 'host'):6} {r.get('status'):7} "
          f"{r.get('samples_per_s') or 0:10,.0f}/s step {r.get('step_s') or 0:.4f} dur {r.get('duration_s') or 0:.0f} "
          f"wait {(r.get('data_staged') or {}).get('wait_s')} {parts} "
          f"boot {((r.get('fingerprint') or {}).get('boot_id') or '?')[:8]} {r.get('reason') or ''}"[:220])
PY
tar czf "$OUTDIR/${NAME}_runs.tgz" -C /tmp/cgb "$NAME"
ls -la "$OUTDIR"
