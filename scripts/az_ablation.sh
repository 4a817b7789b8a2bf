#!/usr/bin/env bash
# az_ablation.sh - one AlphaZero run of an equal-wall-time ablation
# (docs/comparison.md, "AlphaZero efficiency options"):
#
#   scripts/az_ablation.sh NAME SECONDS CONFIG [KEY=VALUE]...
#
# Trains `probs train CONFIG` (a learner and its actors, the evaluator
# off, iterations unbounded) into runs/abl-NAME for SECONDS seconds of
# wall time with the KEY=VALUE overrides, over ipc endpoints of its own
# (so it runs beside another training run), then rates the newest
# checkpoint on the game's shipped solved test set with `probs accuracy`:
# the greedy policy and MCTS at N=8 and N=50. Prints one line:
#   NAME iterations positions greedy mcts8 mcts50
# (positions: the self-play positions the learner took in).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
NAME=$1 SECONDS_=$2 CONFIG=$3
shift 3
BIN=${BIN:-build/bin}
DIR=runs/abl-$NAME
mkdir -p runs
if [ -e "$DIR" ]; then echo "az_ablation.sh: $DIR exists" >&2; exit 2; fi
SETS=()
for a in "$@"; do SETS+=(--set "$a"); done
SOCK=$(mktemp -d /tmp/pb_abl_XXXXXX)
rc=0
timeout -s INT -k 60 "$SECONDS_" "$BIN/probs" train "$CONFIG" \
  --run-dir "$DIR" --set run.name="abl-$NAME" --set eval.enabled=false \
  --set train.iterations=1000000 --set run.keep_last=2 --set run.keep_every=0 \
  --set "net.work_endpoint=ipc://$SOCK/work" \
  --set "net.pub_endpoint=ipc://$SOCK/pub" --set net.http_port=0 \
  ${SETS[@]+"${SETS[@]}"} >"runs/abl-$NAME.log" 2>&1 || rc=$?
rm -rf "$SOCK"
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
  echo "az_ablation.sh: probs train failed ($rc), see runs/abl-$NAME.log" >&2
  exit 1
fi
mv "runs/abl-$NAME.log" "$DIR/train.log"
CK=$(ls "$DIR"/checkpoints/ckpt-*.pbck | sort | tail -1)
GAME=$(sed -n 's/^game: *\([a-z0-9]*\).*/\1/p' "$CONFIG" | head -1)
last=$(grep '"event":"iteration"' "$DIR/metrics.jsonl" | tail -1)
iters=$(sed 's/.*"version":\([0-9]*\),.*/\1/' <<<"$last")
pos=$(grep '"event":"iteration"' "$DIR/metrics.jsonl" |
      sed -n 's/.*"positions":\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')
"$BIN/probs" accuracy --game "$GAME" --testset "data/$GAME-testset.txt" \
  --agent "checkpoint:$CK" --agent "mcts:$CK,N=8" --agent "mcts:$CK,N=50" \
  >"$DIR/accuracy.txt" 2>&1
acc=$(awk '$1 ~ /^(checkpoint|mcts):/ { printf " %s", $(NF - 2) }' "$DIR/accuracy.txt")
echo "$NAME $iters $pos$acc"
