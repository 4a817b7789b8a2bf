#!/usr/bin/env bash
# test_cli_edges.sh BIN_DIR SOURCE_DIR - the edges of issue 48 item 5,
# each with the run that showed it (the gtp ones are in test_cli_gtp.sh):
#   - probs-actor, probs-learner, probs-evaluator (and probs train) answer
#     --version;
#   - --opening-random past the game's length is refused, naming it;
#   - solve says why a losing move is tagged optimal;
#   - accuracy's columns stay aligned with long agent names;
#   - probs train: a run dir in use, or --resume with another game's
#     config, exits 78 before any process starts; --resume RUN_DIR needs
#     no config.
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end

# --- --version -----------------------------------------------------------------
pv=$("$P" --version | sed -n 's/^probs //p')
for prog in probs-actor probs-learner probs-evaluator; do
  expect "$prog --version" 0 "^$prog $pv\$" "$BIN/$prog" --version
done
expect "probs train --version" 0 "^probs train $pv\$" "$P" train --version

# --- --opening-random past the game --------------------------------------------
expect "match: --opening-random 100 in connect4 is refused" 2 \
  '--opening-random 100: connect4 games last at most 42 plies' \
  "$P" match --a random --b random --opening-random 100
expect "match: --opening-random at --max-turns is refused" 2 \
  'last at most 10 plies \(--max-turns\)' \
  "$P" match --a random --b random --opening-random 10 --max-turns 10
expect "match: --opening-random 8 in tictactoe still plays" 0 '^result: ' \
  "$P" match --game tictactoe --a random --b random --opening-random 8 --games 2

# --- solve: why a losing move is optimal ---------------------------------------
out=$("$P" solve --game tictactoe --position 527 2>&1)
if [ $? -eq 0 ] && grep -q '^value: loss in 4 plies' <<<"$out" &&
   grep -qx '3     loss in 4 plies  (optimal: every move loses, this one holds out longest)' <<<"$out" &&
   grep -qx '1     loss in 2 plies  (every move loses, this one sooner)' <<<"$out" &&
   ! grep -qx '.*loss.*  (optimal)' <<<"$out"; then
  ok "solve: a losing position says why its move is optimal"
else bad "solve 527: $out"; fi
expect "solve: winning moves" 0 '^1     win in 5 plies  \(optimal: wins\)$' \
  "$P" solve --game tictactoe --position 52

# --- accuracy: long agent names --------------------------------------------------
# The old table gave the agent 50 columns: a longer spec pushed its line
# out of line. Header and rows have the same length when aligned.
long="uct:50,c=1.41421356237309504880168872420969807856967187,discount=1"
out=$("$P" accuracy --game tictactoe --agent alphabeta:2 --agent "$long" 2>&1)
lens=$(grep -E '^(agent |alphabeta:2 |uct:50,)' <<<"$out" | awk '{ print length($0) }' | sort -u)
if [ $? -eq 0 ] && [ "$(grep -cE '^(agent |alphabeta:2 |uct:50,)' <<<"$out")" -eq 3 ] &&
   [ "$(wc -l <<<"$lens")" -eq 1 ]; then
  ok "accuracy: columns aligned with a ${#long}-character agent"
else bad "accuracy columns ($lens): $out"; fi

# --- probs train: the run dir ---------------------------------------------------
R="$T/run"
if "$P" train "$SRC/configs/tictactoe-smoke.yaml" --inproc --run-dir "$R" \
     --set train.iterations=1 >"$T/train.out" 2>&1; then
  ok "a tictactoe run of one iteration"
else bad "train: $(tail -c 400 "$T/train.out")"; fi
before=$(ls -lR "$R" | md5sum)
# Another game's config: refused before the learner, actors and evaluator
# start (it started five processes and exited 1).
out=$("$P" train "$SRC/configs/connect4-smoke.yaml" --run-dir "$R" --resume 2>&1)
rc=$?
if [ $rc -eq 78 ] && grep -q 'has another game than this config' <<<"$out" &&
   grep -q "probs train --resume $R" <<<"$out" && [ ! -d "$R/logs" ] &&
   [ "$(ls -lR "$R" | md5sum)" = "$before" ]; then
  ok "train --resume with another game's config: 78, nothing started"
else bad "train --resume, another config: rc $rc: $out"; fi
# A learner holds the run dir (its lock, as flock(1) holds it).
(flock 9 && exec sleep 60) 9>"$R/learner.lock" &
lockpid=$!
for _ in $(seq 1 100); do grep -q "$(stat -c %i "$R/learner.lock" 2>/dev/null)" /proc/locks 2>/dev/null && break; sleep 0.05; done
out=$("$P" train "$SRC/configs/tictactoe-smoke.yaml" --run-dir "$R" --resume 2>&1)
rc=$?
kill $lockpid 2>/dev/null # the subshell exec'd into sleep: the holder
wait $lockpid 2>/dev/null
if [ $rc -eq 78 ] && grep -q "is in use: a learner (pid [0-9]*) runs in it" <<<"$out" &&
   [ ! -d "$R/logs" ]; then
  ok "train: a run dir in use: 78, nothing started"
else bad "train in use: rc $rc: $out"; fi
# --resume RUN_DIR: the run's own config.
out=$("$P" train --resume "$R" --inproc --set train.iterations=2 2>&1)
if [ $? -eq 0 ] && grep -q 'done at version 2' <<<"$out" &&
   [ -f "$R/checkpoints/ckpt-000002.pbck" ]; then
  ok "train --resume RUN_DIR: no config needed"
else bad "train --resume RUN_DIR: $(tail -c 400 <<<"$out")"; fi
expect "train: a directory that holds no run" 2 'not a run directory' \
  "$P" train --resume "$T"

finish test_cli_edges
