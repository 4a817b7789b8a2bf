#!/usr/bin/env bash
# test_cli_strength.sh BIN_DIR SOURCE_DIR - the strength commands as a user
# runs them: `probs solve`, `probs accuracy`, `probs testset`, and the
# evaluator's --versions mode, with good and bad input (exit codes and the
# messages on the terminal).
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end

# --- probs solve ------------------------------------------------------------
expect "solve: immediate win and double threat values" 0 \
  '^1 +win in 1 ply  \(optimal: wins\)' "$P" solve --position 121212 --tt-log2 16
expect "solve: a loss in 2 plies for every move" 0 \
  '^value: loss in 2 plies' "$P" solve --position 73747715 --tt-log2 16
expect "solve: weak mode" 0 '\(weak\)' "$P" solve --position 4453542 --weak --tt-log2 16
expect "solve: tictactoe start is a draw" 0 '^value: draw' \
  "$P" solve --game tictactoe --position -
expect "solve: an illegal position" 2 'illegal position: connect4: column 1 is full' \
  "$P" solve --position 1111111
expect "solve: a character that is not a move" 2 "bad character '8'" \
  "$P" solve --position 448
expect "solve: a finished game" 2 'the game is over' "$P" solve --position 1212121
expect "solve: a finished tictactoe game" 2 'the game is over' \
  "$P" solve --game tictactoe --position 14253
expect "solve: unknown game" 2 "unknown game 'chess'" "$P" solve --game chess --position 1
expect "solve: missing --position" 2 'position MOVES is required' "$P" solve
expect "solve: bad table size" 2 'tt-log2 must be in 10..30' \
  "$P" solve --position 4 --tt-log2 40

# --- probs accuracy -----------------------------------------------------------
expect "accuracy: baselines on the shipped set" 0 \
  '^alphabeta:9 +120/120 +1\.000' "$P" accuracy --game tictactoe --agent random --agent alphabeta:9
expect "accuracy: connect4 lookahead" 0 '^lookahead:2 +[0-9]+/1000' \
  "$P" accuracy --agent lookahead:2
expect "accuracy: a bad agent" 2 'unknown spec "minimax:3"' \
  "$P" accuracy --agent minimax:3
expect "accuracy: neither --model nor --agent" 2 'give --model CKPT or --agent SPEC' \
  "$P" accuracy
expect "accuracy: a missing checkpoint" 2 'cannot open|No such file' \
  "$P" accuracy --model "$T/none.pbck"
printf 'not a test set\n' >"$T/bad.txt"
expect "accuracy: a file that is not a test set" 2 'not a probs test set' \
  "$P" accuracy --agent random --testset "$T/bad.txt"
printf '# probs testset game=connect4\n4 LLLWLL.\n' >"$T/c4bad.txt"
expect "accuracy: labels that disagree with the rules" 2 'c4bad.txt:2: action 6 is legal' \
  "$P" accuracy --agent random --testset "$T/c4bad.txt"
expect "accuracy: a set of another game" 2 'a test set for tictactoe, not connect4' \
  "$P" accuracy --agent random --testset "$SRC/data/tictactoe-testset.txt"

# --- probs testset ------------------------------------------------------------
expect "testset: makes a small set" 0 '30 positions from' \
  "$P" testset --game tictactoe --count 30 --min-ply 2 --max-ply 6 --out "$T/t.txt"
if [ -s "$T/t.txt" ] && [ "$(grep -vc '^#' "$T/t.txt")" -eq 30 ]; then
  ok "testset: 30 position lines written"
else
  bad "testset: expected 30 position lines in $T/t.txt"
fi
expect "testset: the written set is usable" 0 '^alphabeta:9 +30/30' \
  "$P" accuracy --game tictactoe --agent alphabeta:9 --testset "$T/t.txt"
expect "testset: bad ply range" 2 'min-ply' \
  "$P" testset --game tictactoe --min-ply 5 --max-ply 2 --out "$T/u.txt"
expect "testset: no --out" 2 'need --out FILE' "$P" testset --game tictactoe
[ ! -e "$T/u.txt" ] && ok "testset: nothing written on a refusal" || bad "testset: wrote $T/u.txt"

# --- a trained checkpoint: accuracy of its agents, evaluator --versions -------
R="$T/run"
"$P" train "$SRC/configs/connect4-smoke.yaml" --inproc --set run.dir="$R" \
  --set train.iterations=2 >"$T/train.log" 2>&1 || bad "smoke training failed: $(tail -3 "$T/train.log")"
CK="$R/checkpoints/ckpt-000002.pbck"
expect "accuracy: greedy Q, V one ply, beam search of a checkpoint" 0 \
  "^beam:$CK,E=20,M=4 +[0-9]+/1000" \
  "$P" accuracy --model "$CK" --agent checkpoint --agent value --agent beam,E=20,M=4
expect "accuracy: a bad beam setting" 2 'bad E="0"' \
  "$P" accuracy --model "$CK" --agent beam,E=0
expect "accuracy: --game disagrees with the checkpoint" 2 'is a connect4 checkpoint' \
  "$P" accuracy --model "$CK" --game tictactoe
expect "evaluator --versions rates exactly those" 0 'rated 2 of the 2 version' \
  "$BIN/probs-evaluator" --run-dir "$R" --versions 0,2 --set eval.games_per_opponent=4 --no-png
if [ "$(grep -c '^[0-9]' "$R/elo.csv")" -eq 2 ] && head -1 "$R/elo.csv" | grep -q ',acc_q,acc_v,acc_beam,minutes$'; then
  ok "elo.csv has the two rows and the accuracy columns"
else
  bad "elo.csv: $(cat "$R/elo.csv")"
fi
if grep -q '"beam_agent":"abnet nodes=60"' "$R/metrics.jsonl"; then
  ok "the evaluator's search agent is abnet, at eval.search_nodes"
else
  bad "metrics.jsonl: $(grep -o '"accuracy":{[^}]*}' "$R/metrics.jsonl" | head -2)"
fi
expect "evaluator --versions with --all is refused" 2 'do not go with each other' \
  "$BIN/probs-evaluator" --run-dir "$R" --versions 1 --all
expect "evaluator: a test set that cannot be read" 2 'eval.testset' \
  "$BIN/probs-evaluator" --run-dir "$R" --versions 1 --set eval.testset="$T/bad.txt"

finish test_cli_strength
