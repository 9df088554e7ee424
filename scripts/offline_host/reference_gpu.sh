#!/usr/bin/env bash
# The published reference, re-measured across boots: params/reference.yaml (20 GPU cells x 5 runs, their
# 20 CPU twins x 3) through the suite's runner on your GPU machine, resumed from the runs of earlier sessions.
#
#   bash scripts/offline_host/profile_gpu.sh --wheels   # HERE, once: the suite's pure-Python packages in .whl/
#   tar czf .whl/reference_runs.tgz -C outputs reference_runs   # HERE, before a session: the runs so far (if any)
#   bash scripts/offline_host/reference_gpu.sh [BUDGET_S]   # THERE, .whl/ uploaded: no point after BUDGET_S s
#   GRID=params/reference_topup.yaml bash scripts/offline_host/reference_gpu.sh 520   # what publication still needs
#
# Each session resumes the grid where the last stopped (the same outputs folder, uploaded as a tarball: a reboot
# starts a fresh machine), interleaved (every configuration once, then again), and writes
# HOST_OUT/reference_runs.tgz (HOST_OUT: the folder you bring back; default a fresh temporary one): unpack it over
# outputs/ here (`tar xzf reference_runs.tgz -C outputs`). A reboot is a new boot id (a new lease, in the report's
# words): the spread over them is benchmarks/reference_spread.py's. Publish when every cell has its runs:
#   python3 scripts/publish_reference.py outputs/reference_runs --to reference/h100
set -euo pipefail
cd "$(dirname "$0")/../.."
BUDGET="${1:-480}"
OUTDIR="${HOST_OUT:-$(mktemp -d)}"; mkdir -p "$OUTDIR"
exec > >(tee "$OUTDIR/reference.log") 2>&1
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
mkdir -p /tmp/cgb
# a machine still up since the session before keeps its runs; a fresh boot starts from the uploaded tarball
if [ -d /tmp/cgb/reference_runs ]; then echo "runs of an earlier session on this machine: resumed"
elif [ -f .whl/reference_runs.tgz ]; then tar xzf .whl/reference_runs.tgz -C /tmp/cgb; echo "runs of earlier boots: resumed"
fi
export PYTHONUNBUFFERED=1 CGB_OUTPUTS=/tmp/cgb/reference_runs
python3 -m helpers.runner "${GRID:-params/reference.yaml}" --budget "$BUDGET" --no-report --yes || echo "runner exit $?"
# the runs so far, per configuration: runs and boots (boot ids), what a publication needs
python3 - <<'EOF'
import json, pathlib, collections
runs = collections.defaultdict(list)
for f in pathlib.Path("/tmp/cgb/reference_runs").rglob("records/*.json"):
    r = json.loads(f.read_text())
    if r.get("status") == "ok":
        key = (r["workload"], r["backend"], r["device"], r.get("batch_size"))
        runs[key].append(((r.get("fingerprint") or {}).get("boot_id") or "?")[:8])
for k in sorted(runs):
    print(*k, f"runs {len(runs[k])} boots {len(set(runs[k]))}")
EOF
tar czf "$OUTDIR/reference_runs.tgz" -C /tmp/cgb reference_runs
ls -la "$OUTDIR"
