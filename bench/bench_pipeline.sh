#!/usr/bin/env bash
# bench_pipeline.sh - iterations per minute of the pipelined mode
# (train.pipeline) against the phase-serial one, on the same config, the
# same machine, one run right after the other.
#
#   bench/bench_pipeline.sh [-p] [BIN_DIR]     (BIN_DIR default: build/bin)
#
# Each round runs `probs train CONFIG --iterations N --no-eval` twice,
# phase-serial then pipelined (ipc endpoints, no HTTP, the default actors
# and searchers: one per core each), and takes the wall time per
# iteration from metrics.jsonl's unix_time, from the end of iteration 2 to
# the end of iteration N (the first two are start-up: networks, joins, and
# nothing to overlap with yet). Rounds alternate the two modes so both meet
# the same background load; each figure is the best round.
#   PB_PIPE_CONFIG  (configs/connect4-fast.yaml)
#   PB_PIPE_ITERS   (10)
#   PB_PIPE_ROUNDS  (2)
# Figures: s/iteration of each mode, iterations/minute, and the pipelined
# mode's iterations/minute as a ratio against the phase-serial one; the
# detail lines give every round and the staleness of each iteration.
# -p prints rows tab-separated for bench/run. Exit status 1 if a run failed.
set -euo pipefail
parseable=0
if [[ ${1:-} == -p ]]; then parseable=1; shift; fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/build/bin}
CONFIG=${PB_PIPE_CONFIG:-$ROOT/configs/connect4-fast.yaml}
ITERS=${PB_PIPE_ITERS:-10}
ROUNDS=${PB_PIPE_ROUNDS:-2}
PY=${PB_PYTHON:-python3}
T=$(mktemp -d /tmp/probs-bench-pipe-XXXXXX)
trap 'rm -rf "$T"' EXIT

row() { # figure value unit ratio baseline
  if [ "$parseable" = 1 ]; then printf '%s\t%s\t%s\t%s\t%s\n' "$@"
  else printf '%-44s %12s %-12s %8s  %s\n' "$@"; fi
}

# s/iteration of one run (iterations 3..N) and its staleness list.
one_run() { # mode round
  local d="$T/$1-$2"
  if ! "$BIN/probs" train "$CONFIG" --run-dir "$d" --iterations "$ITERS" --no-eval \
      --set "train.pipeline=$1" --set net.http_port=0 \
      --set "net.work_endpoint=ipc://$d.work" --set "net.pub_endpoint=ipc://$d.pub" \
      >"$d.out" 2>&1; then
    echo "bench_pipeline: the $1 run failed: $d.out" >&2
    trap - EXIT
    exit 1
  fi
  "$PY" - "$d/metrics.jsonl" <<'PYEOF'
import json, sys
it = [json.loads(l) for l in open(sys.argv[1]) if '"event":"iteration"' in l]
t = [x["unix_time"] for x in it]
print("%.4f %s" % ((t[-1] - t[1]) / (len(t) - 2),
                   ",".join(str(x.get("staleness_max", 0)) for x in it)))
PYEOF
}

best_s=1e9 best_p=1e9
echo "# bench_pipeline: $(basename "$CONFIG"), $ITERS iterations, $ROUNDS round(s), $(getconf _NPROCESSORS_ONLN) cores"
for ((r = 1; r <= ROUNDS; r++)); do
  read -r s st_s < <(one_run false "$r")
  read -r p st_p < <(one_run true "$r")
  echo "# round $r: serial $s s/iteration (staleness $st_s), pipelined $p s/iteration (staleness $st_p)"
  best_s=$("$PY" -c "print(min($best_s, $s))")
  best_p=$("$PY" -c "print(min($best_p, $p))")
done
ipm_s=$("$PY" -c "print('%.3f' % (60 / $best_s))")
ipm_p=$("$PY" -c "print('%.3f' % (60 / $best_p))")
ratio=$("$PY" -c "print('%.2fx' % ($best_s / $best_p))")
row "phase-serial: iteration" "$best_s" "s" "-" ""
row "pipelined: iteration" "$best_p" "s" "-" ""
row "phase-serial: iterations/minute" "$ipm_s" "it/min" "-" ""
row "pipelined: iterations/minute" "$ipm_p" "it/min" "$ratio" "phase-serial"
