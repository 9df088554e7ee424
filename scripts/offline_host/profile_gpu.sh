#!/usr/bin/env bash
# The step breakdown on your GPU machine: params/profile.yaml (the 20 README cells and resnet50 at the
# ladder's best rung on JAX and torch, every point with profile: true) through the suite's runner, in one session.
#
#   bash scripts/offline_host/profile_gpu.sh --wheels    # HERE, once: the suite's pure-Python packages as cp312
#                                                        # wheels in .whl/ (git-excluded), for a Python with jax/torch
#   bash scripts/offline_host/profile_gpu.sh [BUDGET_S]  # THERE (the GPU machine, repo root): install .whl/, run the
#                                                        # grid, starting no point after BUDGET_S s (default 390)
#
# Upload .whl/ with the checkout; a session of at most 10 minutes. What it writes into HOST_OUT (the folder you bring
# back; default a fresh temporary one): profile_records.tgz (the records and the executed notebooks, small),
# profile_traces.tgz.partNN (the traces, split under 15 MB a file; join them with
# `cat profile_traces.tgz.part* | tar xz`) and run.log. Unpack both into one folder (e.g. outputs/profile/),
# then render the report over it: ./run_all.sh report --inputs outputs/profile
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ "${1:-}" = "--wheels" ]; then
    exclude="$(git rev-parse --git-dir)/info/exclude"
    mkdir -p "$(dirname "$exclude")"
    grep -qx '/.whl/' "$exclude" 2>/dev/null || echo '/.whl/' >>"$exclude"
    # the pins of pyproject.toml, and what they need, as the GPU machine's Python (3.12, x86-64) takes them
    python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
        keras==3.15.1 papermill==2.7.0 nbclient==0.11.0 nbformat==5.11.1 ipykernel==7.4.0 \
        jupyter-client==8.10.0 pyyaml==6.0.3 psutil==7.2.2 nvidia-ml-py==13.615.71 pandas==3.1.1 \
        matplotlib==3.11.2 seaborn==0.13.2 pillow==13.0.0 threadpoolctl==3.7.0
    # the machine's own numerics stay (jax and torch were built against them); what is imported only on demand
    # stays behind too (the debugger, completion, HDF5 saving, PDF fonts): an upload is 64 MiB at most
    rm -f .whl/numpy-*.whl .whl/ml_dtypes-*.whl .whl/scipy-*.whl .whl/debugpy-*.whl .whl/jedi-*.whl \
        .whl/parso-*.whl .whl/h5py-*.whl .whl/fonttools-*.whl
    ls .whl | wc -l
    du -sh .whl
    exit 0
fi

BUDGET="${1:-390}"
OUTDIR="${HOST_OUT:-$(mktemp -d)}"; mkdir -p "$OUTDIR"
LOG="$OUTDIR/run.log"
exec > >(tee "$LOG") 2>&1
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 CGB_OUTPUTS=/tmp/cgb-profile CGB_TRACE_MAX_MB=12  # over 12 MB: breakdown kept, trace not
KERAS_BACKEND=jax python3 -c "import jax, torch, keras, papermill; print('jax', jax.__version__, jax.devices(), \
'| torch', torch.__version__, torch.cuda.is_available(), '| keras', keras.__version__)" || echo "check failed"
t0=$(date +%s)
python3 -m helpers.runner "${GRID:-params/profile.yaml}" --budget "$BUDGET" --no-report --yes || echo "runner exit $?"
echo "runner: $(( $(date +%s) - t0 )) s"

# every record's breakdown, one line each (the numbers come back in the log even if the files do not)
python3 - <<'EOF'
import json, pathlib
for f in sorted(pathlib.Path("/tmp/cgb-profile").rglob("*.json")):
    try:
        r = json.loads(f.read_text())
    except ValueError:
        continue
    if not isinstance(r, dict) or "point_id" not in r:
        continue
    b, p = r.get("step_breakdown"), r.get("params") or {}
    head = f"{r['workload']:14} {r['backend']:6} b{p.get('batch_size')} {p.get('precision', '')[:14]:14} " \
           f"{r.get('status')}: {r.get('samples_per_s') or 0:9,.0f}/s mfu {r.get('mfu') or 0:.3f}"
    if not b:
        print(head, "| no breakdown:", r.get("step_breakdown_reason") or r.get("reason"))
        continue
    parts = " ".join(f"{k} {v:.2f}" for k, v in b["parts_ms"].items())
    top = "; ".join(f"{t['name'][:40]} {t['ms']:.2f}" for t in b["top"][:3])
    print(f"{head} | traced {b['step_ms']:.2f} ms ({parts}) h2d {b.get('h2d_ms', 0):.2f} host-ops-idle "
          f"{b.get('host_ops_while_idle_ms', 0):.2f} | unprofiled {b.get('unprofiled_step_ms') or 0:.2f} "
          f"x{b.get('profiler_overhead') or 0:.2f} | {top}")
EOF

# what to bring back: the records apart from the traces, the traces split under 16 MB a file (at most 64 MB
# in all: past 40 MB of traces the largest are left out, said in this log)
python3 - <<'EOF'
import pathlib, shutil
traces = [(sum(f.stat().st_size for f in d.rglob("*") if f.is_file()), d)
          for d in pathlib.Path("/tmp/cgb-profile").rglob("*.trace") if d.is_dir()]
total = sum(s for s, _ in traces)
for size, d in sorted(traces, key=lambda t: t[0], reverse=True):
    if total <= 40 * 2**20:
        break
    print(f"trace left out of what comes back ({size / 2**20:.1f} MB): {d.name}")
    shutil.rmtree(d)
    total -= size
print(f"traces coming back: {total / 2**20:.1f} MB before compression")
EOF
cd /tmp/cgb-profile
find . -name '*.trace' -prune -o -type f -print | tar czf "$OUTDIR/profile_records.tgz" -T -
find . -type d -name '*.trace' | tar czf /tmp/profile_traces.tgz -T -
split -b 15m -d /tmp/profile_traces.tgz "$OUTDIR/profile_traces.tgz.part"
ls -la "$OUTDIR"
