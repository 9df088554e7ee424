#!/usr/bin/env bash
# The layer profiles and the whole models of helpers/predict/layers.py's fit, on your GPU machine, one session each
# (scripts/offline_host/README.md: a machine that may reach no package index, each session at most 10 minutes):
#
#   bash scripts/offline_host/layer_profile.sh layers   # THERE: every layer kind, JAX and PyTorch, float32 and bf16
#   bash scripts/offline_host/layer_profile.sh models   # THERE: the zoo and the array-fed workloads, JAX and PyTorch
#   bash scripts/offline_host/layer_profile.sh more     # THERE: the workloads at 4x and 1/4 their batch, bf16
#   bash scripts/offline_host/layer_profile.sh probes   # THERE: the host probes (fit loop and host copy), JAX and PyTorch
#
# Upload .whl/ with the checkout (keras, namex and optree as cp312 wheels, `profile_gpu.sh --wheels`: a machine
# with jax and torch has the rest). Each phase has a budget (seconds, start nothing after it) so that a session ends
# within 10 minutes; the rows are written as JSON lines into HOST_OUT (a folder; default a fresh temporary one),
# with run.log: bring them back (data/layer_profiles/ holds the committed ones).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUTDIR="${HOST_OUT:-$(mktemp -d)}"; mkdir -p "$OUTDIR"
exec > >(tee "$OUTDIR/run.log") 2>&1
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
run() { echo "== $*"; t0=$(date +%s); python3 benchmarks/layer_profile.py "$@" || echo "exit $?"; echo "== $(( $(date +%s) - t0 )) s"; }
HEAVY=Dense,Conv2D,Conv1D,DepthwiseConv2D,SeparableConv2D,Conv2DTranspose,MultiHeadAttention,LSTM,GRU,Embedding,BatchNormalization,LayerNormalization
case "${1:-layers}" in
layers)
    run layers --backend jax --precision float32 --budget 185 --out "$OUTDIR/layers.jsonl"
    run layers --backend torch --precision float32 --budget 115 --out "$OUTDIR/layers.jsonl"
    run layers --backend jax --precision mixed_bfloat16 --kinds "$HEAVY" --budget 105 --out "$OUTDIR/layers.jsonl"
    run layers --backend torch --precision mixed_bfloat16 --kinds "$HEAVY" --budget 65 --out "$OUTDIR/layers.jsonl"
    ;;
models)
    run models --backend torch --set zoo,workloads --runs 2 --budget 200 --out "$OUTDIR/models.jsonl"
    run models --backend jax --set zoo,workloads --runs 2 --budget 290 --out "$OUTDIR/models.jsonl"
    ;;
more)
    run models --backend torch --set workloads --batch-scale 4 --runs 2 --budget 90 --out "$OUTDIR/models.jsonl"
    run models --backend jax --set workloads --batch-scale 4 --runs 2 --budget 150 --out "$OUTDIR/models.jsonl"
    run models --backend torch --set workloads,zoo --precision mixed_bfloat16 --runs 2 --budget 90 --out "$OUTDIR/models.jsonl"
    run models --backend jax --set workloads,zoo --precision mixed_bfloat16 --runs 2 --budget 150 --out "$OUTDIR/models.jsonl"
    ;;
probes)
    run probes --backend jax --runs 2 --budget 150 --out "$OUTDIR/models.jsonl"
    run probes --backend torch --runs 2 --budget 150 --out "$OUTDIR/models.jsonl"
    ;;
esac
