#!/usr/bin/env bash
# bench_iteration.sh - one training iteration end to end, in fp32 and in
# bf16 (model.precision), back to back: `probs train --inproc` of a
# config (default configs/connect4-strong.yaml: 1000 episodes, beam E=10
# M=3, 3 conv x 32 channels) for PB_ITER_N iterations (3) in each
# precision, one process, one libtorch thread. Figures are the fastest
# iteration after the first (the first also warms up the allocator) and
# its phases, from metrics.jsonl: iteration_s, selfplay_s, train_v_s,
# search_s, train_q_s; bf16's as a ratio of speed against fp32's.
#
#   bench/bench_iteration.sh [-p] [BIN_DIR] [CONFIG]
#
# BIN_DIR defaults to build-rel/bin. bf16 where the CPU lacks it is
# refused by the learner (common/nn/precision.h): the bf16 rows then say
# so and the script exits 0. -p prints rows tab-separated (figure, value,
# unit, ratio, baseline) for bench/run.
set -uo pipefail

parseable=0
if [[ ${1:-} == -p ]]; then
  parseable=1
  shift
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/build-rel/bin}
CONFIG=${2:-$ROOT/configs/connect4-strong.yaml}
N=${PB_ITER_N:-3}
T=$(mktemp -d /tmp/probs-iter-XXXXXX)
trap 'rm -rf "$T"' EXIT

row() {
  if [[ $parseable == 1 ]]; then printf '%s\t%s\t%s\t%s\t%s\n' "$@"
  else printf '%-44s %12s %-10s %8s  %s\n' "$@"; fi
}

# run PREC: trains N iterations; prints "iteration_s selfplay_s train_v_s
# search_s train_q_s" of the fastest iteration after the first, or
# nothing when the run failed.
run() {
  local prec=$1 dir=$T/$1
  if ! OMP_NUM_THREADS=1 "$BIN/probs" train "$CONFIG" --inproc --run-dir "$dir" \
       --iterations "$N" --set model.precision="$prec" --set model.threads=1 \
       >"$T/$prec.log" 2>&1; then
    echo "# $prec: probs train failed: $(grep -m1 -i 'error\|refused\|bf16' "$T/$prec.log")" >&2
    return 0
  fi
  python3 - "$dir/metrics.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"iteration"' in l]
rows = [r for r in rows if r.get("event") == "iteration"][1:]
best = min(rows, key=lambda r: r["iteration_s"])
print(" ".join("%.3f" % x for x in (best["iteration_s"], best["selfplay_s"],
      best.get("train_v_s", 0), best.get("search_s", 0), best["train_q_s"])))
PY
}

read -r f_it f_sp f_v f_s f_q < <(run fp32)
read -r b_it b_sp b_v b_s b_q < <(run bf16)
if [[ -z ${f_it:-} ]]; then echo "bench_iteration: the fp32 run failed" >&2; exit 1; fi
echo "# $(basename "$CONFIG"), --inproc, $N iterations each, fastest after the first"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", b / a; else print "-" }'; }
for p in "iteration:$f_it:${b_it:-}" "self-play:$f_sp:${b_sp:-}" "train V:$f_v:${b_v:-}" \
         "search:$f_s:${b_s:-}" "train Q:$f_q:${b_q:-}"; do
  IFS=: read -r name f b <<<"$p"
  row "iteration fp32: $name" "$f" "s" "-" ""
  if [[ -n $b ]]; then
    row "iteration bf16: $name" "$b" "s" "$(ratio "$b" "$f")" "fp32 (speed)"
  else
    row "iteration bf16: $name" "0" "s" "-" "bf16 refused on this CPU"
  fi
done
