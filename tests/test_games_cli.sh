#!/usr/bin/env bash
# test_games_cli.sh BIN_DIR SOURCE_DIR - Othello and Toguz Kumalak as a
# user meets them: perft, matches between the baselines and against the
# external engine gtp-rhino (Debian's grhino, installed by
# scripts/setup.sh), bad input, and a whole distributed training run of
# each game (learner, actors, searchers and evaluator over real sockets),
# and a run dir of one game resumed with the config of the other.
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end

# --- perft ------------------------------------------------------------------
expect "othello perft 8 from the start" 0 '^390216$' \
  "$P" perft --game othello --depth 8
expect "othello perft after f5d6c3" 0 '^depth  2: +24 ' \
  "$P" perft --game othello --position f5d6c3 --depth 2
expect "othello: an illegal move in --position" 2 'f5f5.*illegal' \
  "$P" perft --game othello --position f5f5 --depth 1
expect "toguz perft 3" 0 '^613$' "$P" perft --game toguz --depth 3
expect "toguz: a bad hole in --position" 2 "bad character '0'" \
  "$P" perft --game toguz --position 120 --depth 1

# --- matches ----------------------------------------------------------------
expect "othello: alphabeta:4 against gtp-rhino, 20 legal games to the end" 0 \
  '^result: W=[0-9]+ D=[0-9]+ L=[0-9]+ ' \
  "$P" match --game othello --a alphabeta:4 --b gtp:gtp-rhino --games 20 --threads 2
expect "othello: greedy and alphabeta" 0 '^result: ' \
  "$P" match --game othello --a greedy --b alphabeta:2 --games 20 --opening-random 2
expect "othello: a missing engine names the packages" 2 \
  'apt-get install grhino grhino-data' \
  "$P" match --game othello --a gtp:/nonexistent/gtp-rhino --b random --games 2
expect "toguz: greedy and alphabeta" 0 '^result: ' \
  "$P" match --game toguz --a greedy --b alphabeta:3 --games 20 --opening-random 2
expect "toguz: gtp-rhino refuses the board size" 2 'refused "boardsize 9": unacceptable size' \
  "$P" match --game toguz --a gtp:gtp-rhino --b random --games 2
expect "connect4: greedy needs material" 2 'greedy needs material' \
  "$P" match --game connect4 --a greedy --b random --games 2

# --- training runs ----------------------------------------------------------
for game in othello toguz; do
  dir="$T/$game"
  expect "$game: a distributed smoke run finishes" 0 'training finished' \
    "$P" train "$SRC/configs/$game-smoke.yaml" --set run.dir="$dir" \
    --set "net.work_endpoint=ipc://$T/$game-work" \
    --set "net.pub_endpoint=ipc://$T/$game-pub"
  rows=$(tail -n +2 "$dir/elo.csv" 2>/dev/null | wc -l)
  if [ "$rows" -eq 3 ]; then ok "$game: three versions rated"
  else bad "$game: $rows rows in elo.csv, expected 3"; fi
  if grep -q '"game":"'"$game"'"\|game.*'"$game" "$dir/config.yaml" 2>/dev/null; then
    ok "$game: the run's config names the game"
  else bad "$game: run config lacks the game"; fi
done

# A run dir of one game resumed with the config of another: refused with
# 78 and the reason before any process starts (issue 48: it started five
# and exited 1).
logs_before=$(ls "$T/toguz/logs" 2>/dev/null | md5sum; cat "$T/toguz/logs/train.log" 2>/dev/null | md5sum)
expect "resuming a toguz run with the othello config says why" 78 \
  "has another game than this config \(run: game toguz.*config: game othello" \
  "$P" train "$SRC/configs/othello-smoke.yaml" --run-dir "$T/toguz" --resume \
  --set "net.work_endpoint=ipc://$T/mix-work" --set "net.pub_endpoint=ipc://$T/mix-pub"
if [ "$(ls "$T/toguz/logs" 2>/dev/null | md5sum; cat "$T/toguz/logs/train.log" 2>/dev/null | md5sum)" = "$logs_before" ]; then
  ok "no process started"
else bad "train started processes (the logs changed)"; fi

finish test_games_cli
