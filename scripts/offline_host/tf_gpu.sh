#!/usr/bin/env bash
# TensorFlow's CUDA build on your GPU machine that reaches no package index but takes uploads of at most N MiB
# (scripts/offline_host/README.md): the parts made HERE by scripts/offline_host/tf_parts.py, uploaded one at a time,
# assembled and installed THERE, then a grid.
#
#   python3 scripts/offline_host/tf_parts.py build   # HERE, once: .tfparts/partNN + manifest.json (+ zstandard wheel)
#   bash scripts/offline_host/tf_gpu.sh part         # THERE, once a part: upload .tfparts/manifest.json and
#                                                    #   .tfparts/partNN; moves it to /tmp/parts (checksum); the
#                                                    #   session that brings the last part also installs
#                                                    #   (the zstandard wheel: uploaded beside, listed in the manifest)
#   bash scripts/offline_host/tf_gpu.sh install      # THERE: assemble, pip install --target /tmp/tfsite, check the GPU
#   bash scripts/offline_host/tf_gpu.sh grid [BUDGET_S]  # THERE, .whl/ uploaded: params/reference_tf.yaml (or
#                                                    #   $GRID), starting no point after BUDGET_S s (RUNNER_LIMIT_S)
#
# Files under /tmp stay only while the machine stays up: run the sessions one right after another. No
# LD_LIBRARY_PATH is set here: the suite loads the nvidia/*/lib libraries beside tensorflow by itself
# (helpers/point/nvidia_libs.py). The grid resumes from /tmp (the same boot) or from the runs of earlier boots
# uploaded as .whl/reference_tf_runs.tgz, and writes HOST_OUT/reference_tf_runs.tgz (HOST_OUT: the folder you bring
# back; default a fresh temporary one): unpack it here with `tar xzf reference_tf_runs.tgz -C outputs`
# (outputs/reference_tf_runs/).
#
# What is uploaded is not trusted (tf_parts.py's docstring): a part named by a path, a file that is no regular file
# (a FIFO, a symlink), a wheel in no manifest or one that differs from it, a $PARTS or /tmp/tfwheels that is a
# symlink or a folder not ours (or that others may write to) are refused, exit 2: this script stops there.
set -euo pipefail
cd "$(dirname "$0")/../.."
MODE="${1:-part}"
OUTDIR="${HOST_OUT:-$(mktemp -d)}"; mkdir -p "$OUTDIR"
PARTS=/tmp/parts TFSITE=/tmp/tfsite RUNS=/tmp/cgb/reference_tf_runs
exec > >(tee -a "$OUTDIR/tf_gpu.log") 2>&1
export PYTHONUNBUFFERED=1

install_tf() {
    if [ -f "$TFSITE/.installed" ]; then echo "tensorflow already in $TFSITE"; return 0; fi
    local t0=$SECONDS
    rm -rf /tmp/tfwheels
    python3 scripts/offline_host/tf_parts.py assemble "$PARTS" /tmp/tfwheels
    echo "assembled in $(( SECONDS - t0 )) s"
    rm -rf "$TFSITE"
    mkdir -m 700 "$TFSITE"  # fails if anything (a symlink) took the name meanwhile
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$TFSITE" /tmp/tfwheels/*.whl
    touch "$TFSITE/.installed"
    rm -rf /tmp/tfwheels "$PARTS"/part*
    echo "installed in $TFSITE in $(( SECONDS - t0 )) s: $(du -sh "$TFSITE" | cut -f1)"
}

suite_wheels() {
    if compgen -G ".whl/*.whl" >/dev/null && [ ! -f /tmp/site/.installed ]; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
            .whl/*.whl
        touch /tmp/site/.installed
    fi
    export PYTHONPATH=/tmp/site:$TFSITE${PYTHONPATH:+:$PYTHONPATH}
}

check_gpu() {  # without the suite (what TF does alone), then with its finder: no LD_LIBRARY_PATH either way
    PYTHONPATH=$TFSITE${PYTHONPATH:+:$PYTHONPATH} python3 -c "
import tensorflow as tf; print('tensorflow', tf.__version__, 'alone:', tf.config.list_physical_devices('GPU'))
from helpers.point import nvidia_libs; print('  skip reason:', nvidia_libs.tf_no_gpu_reason())" 2>&1 \
        || true
    PYTHONPATH=$TFSITE${PYTHONPATH:+:$PYTHONPATH} python3 -c "
import time; t = time.perf_counter()
from helpers.point import nvidia_libs; r = nvidia_libs.preload()
print(f'suite finder: {len(r[\"loaded\"])} libraries from {len(r[\"dirs\"])} folders in {time.perf_counter() - t:.1f} s',
      'failed:', r['failed'])
import tensorflow as tf; print('tensorflow with the finder:', tf.config.list_physical_devices('GPU'))" 2>&1 \
        || true
}

case "$MODE" in
part)
    rc=0; python3 scripts/offline_host/tf_parts.py intake .tfparts "$PARTS" || rc=$?
    case $rc in
    0) install_tf; check_gpu ;;
    3) echo "(the parts so far are kept in $PARTS)" ;;
    *) echo "intake failed or refused (exit $rc): nothing installed" >&2; exit "$rc" ;;
    esac
    ;;
install)
    # exit 3 (parts still to carry) goes on to assemble, which says so; a refusal (2) or failure stops here
    if [ -d .tfparts ]; then python3 scripts/offline_host/tf_parts.py intake .tfparts "$PARTS" || [ $? -eq 3 ]; fi
    install_tf
    check_gpu
    ;;
grid)
    BUDGET="${2:-440}"
    [ -f "$TFSITE/.installed" ] || install_tf
    suite_wheels
    mkdir -p /tmp/cgb
    if [ -d "$RUNS" ]; then echo "runs of an earlier session on this machine: resumed"
    elif [ -f .whl/reference_tf_runs.tgz ]; then tar xzf .whl/reference_tf_runs.tgz -C /tmp/cgb; echo "runs of earlier boots: resumed"
    fi
    t0=$SECONDS
    # RUNNER_LIMIT_S (0: none): the runner is interrupted then (SIGINT: the point in flight is abandoned, to run again
    # on resume), so that a session of a limited length still writes its runs
    CGB_OUTPUTS=$RUNS timeout -s INT -k 30 "${RUNNER_LIMIT_S:-0}" python3 -m helpers.runner \
        "${GRID:-params/reference_tf.yaml}" --budget "$BUDGET" --no-report --yes || echo "runner exit $?"
    echo "runner: $(( SECONDS - t0 )) s"
    python3 - <<'EOF'
import collections, json, pathlib, statistics
runs, other = collections.defaultdict(list), collections.Counter()
for f in pathlib.Path("/tmp/cgb/reference_tf_runs").rglob("records/*.json"):
    r = json.loads(f.read_text())
    key = (r["workload"], r["backend"], r["device"], r.get("batch_size"))
    if r.get("status") == "ok":
        runs[key].append((r.get("samples_per_s") or 0, ((r.get("fingerprint") or {}).get("boot_id") or "?")[:8]))
    else:
        other[key + (r.get("status"), (r.get("reason") or "")[:160])] += 1
for k in sorted(runs):
    v = runs[k]
    print(*k, f"runs {len(v)} boots {len({b for _, b in v})} median {statistics.median(s for s, _ in v):,.0f}/s")
for k, n in sorted(other.items()):
    print(*k, f"x{n}")
EOF
    tar czf "$OUTDIR/reference_tf_runs.tgz" -C /tmp/cgb reference_tf_runs
    ;;
*)
    echo "usage: tf_gpu.sh part | install | grid [BUDGET_S]" >&2; exit 2 ;;
esac
ls -la "$OUTDIR"
