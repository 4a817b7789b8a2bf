#!/usr/bin/env bash
# gpu_defaults.sh - the rows issue 45 asks of a GPU node: `probs train
# CONFIG` with no worker options (what common/run/plan.c and the config
# pick there) against its neighbours, one run after the other:
#
#   default           no options at all
#   default b128      the same with train.cuda_batch_scale=1 (the paper's
#                     minibatch of 128 on the GPU learner)
#   default pipeline  the same with train.pipeline=true
#   hand              the best setting measured by hand before (2 CPU actors,
#                     cores - 2 searchers of one thread, fp32)
#
# Each row: the medians of iterations 2..N of the run's metrics.jsonl
# (iteration, train V, search, train Q seconds; search states/s), and the
# GPU's mean utilization while the row ran (nvidia-smi, once a second).
# The log lines that say what the defaults chose are kept in runs.log.
#
#   bench/gpu_defaults.sh [BIN_DIR]   (default build/bin; on a node built
#                                      with ../shared/gpu's recipe /tmp/bg/bin)
# env: PB_GPU_CONFIG (configs/connect4-strong.yaml), PB_GPU_ITERS (6),
#      PB_GPU_TIMEOUT (seconds per row, 120), OUT (where the files go,
#      /tmp/gpu-defaults), DEV=cpu to dry-run it on a machine without a GPU
#      (every role on the CPU, no utilization).
# Files: $OUT/defaults.tsv (the table), $OUT/runs.log, $OUT/smi-TAG.csv.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/build/bin}
CONFIG=${PB_GPU_CONFIG:-$ROOT/configs/connect4-strong.yaml}
ITERS=${PB_GPU_ITERS:-6}
TO=${PB_GPU_TIMEOUT:-120}
OUT=${OUT:-/tmp/gpu-defaults}
DEV=${DEV:-cuda}
mkdir -p "$OUT"
RUNS=$OUT/runs.log
TSV=$OUT/defaults.tsv
CORES=$(nproc)
HAND_S=$((CORES > 3 ? CORES - 2 : 1))
CPU=()
[ "$DEV" = cuda ] || CPU=(--set model.device=cpu)

medians() { # TAG METRICS SMI
  python3 - "$@" <<'EOF'
import csv, json, statistics, sys
tag, path, smi = sys.argv[1:4]
keys = ["iteration_s", "train_v_s", "search_s", "train_q_s",
        "search_states_per_s"]
try:
    its = [r for r in map(json.loads, open(path)) if r.get("event") == "iteration"]
except OSError:
    its = []
use = its[1:] if len(its) > 1 else its
out = [tag, str(len(its))]
for k in keys:
    v = [r[k] for r in use if isinstance(r.get(k), (int, float))]
    out.append(f"{statistics.median(v):.3f}" if v else "-")
util = []
try:
    for row in csv.reader(open(smi)):
        if len(row) > 1 and row[1].strip().endswith("%"):
            util.append(float(row[1].strip().rstrip(" %")))
except OSError:
    pass
out.append(f"{statistics.mean(util):.0f}" if util else "-")
print("\t".join(out))
EOF
}

row() { # TAG [probs train options]...
  local tag=$1 d=/tmp/gpu-defaults-runs/$1 smi=$OUT/smi-$1.csv pid=
  shift
  rm -rf "$d"
  echo "=== $tag: $*" >>"$RUNS"
  if [ "$DEV" = cuda ]; then
    nvidia-smi --query-gpu=timestamp,utilization.gpu --format=csv,noheader \
      -l 1 >"$smi" 2>/dev/null &
    pid=$!
  fi
  timeout -s INT -k 30 "$TO" "$BIN/probs" train "$CONFIG" --run-dir "$d" \
    --no-eval --iterations "$ITERS" "${CPU[@]}" "$@" >>"$RUNS" 2>&1
  echo "rc $?" >>"$RUNS"
  [ -z "$pid" ] || kill "$pid" 2>/dev/null
  grep -h "default rule\|cuda_batch_scale\|precision\|learner .*params" \
    "$d"/logs/*.log "$d"/learner.log 2>/dev/null | sort -u | head -12 >>"$RUNS"
  medians "$tag" "$d/metrics.jsonl" "$smi" | tee -a "$TSV"
}

printf 'tag\titers\titeration_s\ttrain_v_s\tsearch_s\ttrain_q_s\tstates_per_s\tgpu_util_pct\n' |
  tee "$TSV"
row default
row default-b128 --set train.cuda_batch_scale=1
row default-pipeline --set train.pipeline=true
row hand --actors 2 --searchers "$HAND_S" --set search.threads=1 \
  --set model.precision=fp32
