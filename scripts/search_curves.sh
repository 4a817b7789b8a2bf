#!/usr/bin/env bash
# search_curves.sh CKPT... - accuracy against budget of the searches over a
# PROBS checkpoint on the shipped solved Connect Four set (docs/strength.md,
# "Search against its budget"): greedy Q, V one ply, abnet, MCTS with
# softmax(Q) priors, and the beam, each at budgets from ~10 to ~10,000
# network evaluations a move. For each checkpoint, one `probs accuracy`
# (optimal share, wall time, evaluations a move per agent) and one
# bench_beam_shape (the beam: E x M, CPU time). Run it on an idle machine,
# one checkpoint after the other; the times are what docs/strength.md's
# ms / move columns come from. Environment: BIN (default build/bin),
# ABNET (node budgets), MCTS (simulations), BEAM_E / BEAM_M (lists).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
BIN=${BIN:-build/bin}
ABNET=${ABNET:-"10 30 100 300 1000 3000 10000"}
MCTS=${MCTS:-"5 15 50 150 500 1500 5000"}
BEAM_E=${BEAM_E:-10,30,100,300,1000,3000}
BEAM_M=${BEAM_M:-3,10}
for C in "$@"; do
  [ -r "$C" ] || { echo "search_curves.sh: cannot read $C" >&2; exit 2; }
  agents=(--agent checkpoint --agent value)
  for n in $ABNET; do agents+=(--agent "abnet:$C,nodes=$n"); done
  for n in $MCTS; do agents+=(--agent "mcts:$C,N=$n"); done
  echo "# $C"
  "$BIN/probs" accuracy --model "$C" "${agents[@]}"
  "$BIN/bench_beam_shape" "$C" -E "$BEAM_E" -M "$BEAM_M"
done
