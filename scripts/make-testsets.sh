#!/usr/bin/env bash
# make-testsets.sh - rebuilds the solved test sets shipped in data/ (they
# are compiled into the programs; the evaluator and `probs accuracy` use
# them). Deterministic: the same options give the same files whatever the
# thread count. Takes about 5 minutes on 2 cores.
#
#   bash scripts/make-testsets.sh            # uses build/bin/probs
set -euo pipefail
cd "$(dirname "$0")/.."
PROBS=${PROBS:-build/bin/probs}
[ -x "$PROBS" ] || { echo "make-testsets.sh: build first (bash scripts/setup.sh)" >&2; exit 2; }
mkdir -p data
# Connect Four: 1000 positions, plies 6-36 (about 32 per ply).
"$PROBS" testset --game connect4 --count 1000 --min-ply 6 --max-ply 36 --seed 1 \
  --out data/connect4-testset.txt
# Tic-Tac-Toe: 120 positions, plies 2-7 (20 per ply; at ply 8 one move is
# left, so the choice never matters).
"$PROBS" testset --game tictactoe --count 120 --min-ply 2 --max-ply 7 --seed 1 \
  --out data/tictactoe-testset.txt
