#!/usr/bin/env bash
# experiment.sh - one training run for a fixed wall-clock budget, rated
# afterwards, for ablations at equal wall time (docs/results.md).
#
#   scripts/experiment.sh NAME MINUTES CONFIG [--set KEY=VALUE]...
#
# Trains `probs train CONFIG` into runs/exp-NAME for MINUTES minutes with
# the evaluator off (so nothing else competes for the cores) and every
# checkpoint kept (run.keep_last=0: the marks are picked afterwards), then rates
# the checkpoints closest to every MINUTES/MARKS minutes of wall time
# (MARKS defaults to 12; and the last one) with probs-evaluator
# --versions: Elo against the baselines (GAMES games each, default 200)
# and the share of optimal moves on the shipped solved test set (greedy
# Q, V one ply deep, beam search). The
# table is runs/exp-NAME/elo.csv (minutes = wall time of the checkpoint
# since the run started); a summary is printed at the end. The networks
# are rated in fp32 whatever precision trained them (EVAL_PRECISION=auto
# or bf16 to rate otherwise), so that runs of either precision are rated
# alike.
#
# ITERATIONS=N makes it an ablation at equal samples instead: the run stops
# after N iterations (MINUTES is then only a cap), and the marks are the
# checkpoints of every N/MARKS iterations (and the last), so runs that
# train the same samples are compared whatever their speed, and several can
# share the machine (start them some seconds apart: `probs train` moves a
# run whose ports are taken to free ones).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { sed -n '2,16p' "$0" >&2; exit 2; }
NAME=$1 MINUTES=$2 CONFIG=$3
shift 3
BIN=${BIN:-build/bin}
GAMES=${GAMES:-200}
MARKS=${MARKS:-12}
DIR=runs/exp-$NAME
mkdir -p runs
if [ -e "$DIR" ]; then echo "experiment.sh: $DIR exists" >&2; exit 2; fi
SETS=()
for a in "$@"; do [ "$a" = --set ] || SETS+=(--set "$a"); done
ITERATIONS=${ITERATIONS:-}
[ -z "$ITERATIONS" ] || SETS+=(--set train.iterations="$ITERATIONS")
echo "experiment $NAME: $MINUTES min of $CONFIG ${*:-}"
rc=0
timeout -s INT -k 60 "$((MINUTES * 60))" "$BIN/probs" train "$CONFIG" \
  --set run.dir="$DIR" --set run.name="exp-$NAME" --set eval.enabled=false \
  --set run.keep_last=0 "${SETS[@]}" >"$DIR.train.log" 2>&1 || rc=$?
# 124: stopped by the timeout (the run cleans up on SIGINT); 0: finished.
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
  echo "experiment.sh: probs train failed ($rc), see $DIR.train.log" >&2
  exit 1
fi
mv "$DIR.train.log" "$DIR/train.log"
if [ -n "$ITERATIONS" ]; then
  # Checkpoints of every ITERATIONS/MARKS iterations, and the last.
  VERS=$(for f in "$DIR"/checkpoints/ckpt-*.pbck; do
           v=${f##*ckpt-}; v=${v%.pbck}; echo "$((10#$v))"
         done | sort -n | awk -v step="$(( (ITERATIONS + MARKS - 1) / MARKS ))" '
           $1 % step == 0 { print } { last = $1 } END { print last }' |
         sort -nu | paste -sd, -)
else
# Checkpoints nearest to each mark, by modification time since version 0.
t0=$(stat -c %Y "$DIR/checkpoints/ckpt-000000.pbck")
VERS=$(for f in "$DIR"/checkpoints/ckpt-*.pbck; do
         v=${f##*ckpt-}; v=${v%.pbck}; echo "$((10#$v)) $(( $(stat -c %Y "$f") - t0 ))"
       done | sort -n | awk -v step="$((MINUTES * 60 / MARKS))" '
         { v[NR] = $1; t[NR] = $2 }
         END {
           for (m = 0; m <= t[NR]; m += step) {
             best = 1
             for (i = 1; i <= NR; i++) if ((t[i] - m)^2 < (t[best] - m)^2) best = i
             pick[v[best]] = 1
           }
           pick[v[NR]] = 1
           for (x in pick) printf "%s\n", x
         }' | sort -n | paste -sd, -)
fi
echo "rating versions $VERS"
"$BIN/probs-evaluator" --run-dir "$DIR" --versions "$VERS" \
  --set eval.games_per_opponent="$GAMES" \
  --set model.precision="${EVAL_PRECISION:-fp32}" --no-png --no-stderr
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
         { printf "%7s min  v%-5s  Elo %-7s  acc Q %s  V %s  beam %s\n",
             $c["minutes"], $c["version"], $c["elo"], $c["acc_q"], $c["acc_v"], $c["acc_beam"] }' \
  "$DIR/elo.csv"
