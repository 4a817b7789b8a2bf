#!/usr/bin/env bash
# td_league.sh [OUT_DIR] - seed 004's experiment (docs/baselines.md, "TD(0)
# n-ply learning"): Othello players trained by TD(0) at 1..PLIES ply, SEEDS
# seeds each, GAMES games each (iterations of 50), then the leagues of
# bench_td_league at every play depth and against the fixed WPC. Players
# already trained in OUT_DIR are kept. Environment: PLIES (default 4),
# SEEDS (default "1 2 3 4 5"), GAMES (default 10000), BUILD (default
# build), JOBS (trainings at once, default 2).
set -euo pipefail
OUT=${1:-runs/td-league}
PLIES=${PLIES:-4} SEEDS=${SEEDS:-"1 2 3 4 5"} GAMES=${GAMES:-10000}
BUILD=${BUILD:-build} JOBS=${JOBS:-2}
ITERS=$((GAMES / 50))
CKPT=$(printf 'ckpt-%06d.pbck' "$ITERS")
mkdir -p "$OUT"
train() { # PLY SEED
  local d="$OUT/p$1s$2"
  [ -f "$d/checkpoints/$CKPT" ] && return 0
  rm -rf "$d"
  "$BUILD/bin/probs" train configs/othello-td.yaml --inproc --run-dir "$d" \
    --set td.ply="$1" --set seed="$2" --set train.iterations="$ITERS" \
    --set run.keep_last=1 --set run.keep_every=0 >"$d.log" 2>&1
}
export -f train
export OUT BUILD ITERS CKPT
for p in $(seq 1 "$PLIES"); do for s in $SEEDS; do echo "$p $s"; done; done |
  xargs -P "$JOBS" -n 2 bash -c 'train "$0" "$1"'
groups=()
for p in $(seq 1 "$PLIES"); do
  g=""
  for s in $SEEDS; do g="$g${g:+,}$OUT/p${p}s${s}/checkpoints/$CKPT"; done
  groups+=("$p-ply=$g")
done
"$BUILD/bin/bench_td_league" --weights --depths 0 "${groups[@]}"
"$BUILD/bin/bench_td_league" --depths 1,2,3,4,5 --baseline-games 10 "${groups[@]}"
