#!/usr/bin/env bash
# test_td_train.sh BIN_DIR SOURCE_DIR - algorithm: td (seed 004) as a user runs
# it: `probs train` of configs/othello-td.yaml distributed (a learner and
# two actors over real sockets, no searchers) learns exactly the weights
# --inproc learns (targets_crc: the same games; weights_crc: the same
# evaluation); an --inproc run stopped and resumed learns what one run
# straight through learns; the td:, value: and abnet: agents play the
# checkpoints; bad input (a game without features, a value out of range,
# an unknown key, another algorithm's checkpoint, a bad depth) is refused
# at start with a one-line message and exit status 2.
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end
CFG="$SRC/configs/othello-td.yaml"

RUN=(--set train.iterations=3 --set train.episodes_per_iter=40
     --set net.item_episodes=10 --set td.ply=2)
"$P" train "$CFG" --run-dir "$T/dist" --actors 2 --no-eval "${RUN[@]}" \
  --set "net.work_endpoint=ipc://$T/w" --set "net.pub_endpoint=ipc://$T/p" \
  --set net.http_port=0 >"$T/dist.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok "distributed td run finishes (exit 0)" \
  || bad "distributed run: exit $rc: $(tail -c 600 "$T/dist.out")"
grep -q "started searcher" "$T/dist/logs/train.log" 2>/dev/null \
  && bad "searchers started in a td run" || ok "no searchers in a td run"
last=$(grep '"event":"iteration"' "$T/dist/metrics.jsonl" 2>/dev/null | tail -1)
if grep -q '"version":3,' <<<"$last" && grep -q '"algorithm":"td"' <<<"$last" &&
   grep -q '"mode":"distributed"' <<<"$last"; then
  ok "the distributed run reaches version 3 with td metrics"
else bad "last iteration line: $last"; fi

"$P" train "$CFG" --inproc --run-dir "$T/inproc" "${RUN[@]}" >"$T/inproc.out" 2>&1 \
  || bad "inproc run: $(tail -c 600 "$T/inproc.out")"
field() { grep '"event":"iteration"' "$1/metrics.jsonl" 2>/dev/null |
          sed "s/.*\"$2\":\([0-9]*\).*/\1/" | paste -sd, -; }
for f in targets_crc weights_crc; do
  a=$(field "$T/inproc" $f) b=$(field "$T/dist" $f)
  [ -n "$a" ] && [ "$a" = "$b" ] && ok "distributed = inproc $f ($a)" \
    || bad "$f inproc '$a', distributed '$b'"
done

# Stopped after 2 iterations and resumed: the same weights at version 3.
"$P" train "$CFG" --inproc --run-dir "$T/resumed" "${RUN[@]}" --iterations 2 \
  >"$T/r1.out" 2>&1 &&
"$P" train "$CFG" --inproc --run-dir "$T/resumed" "${RUN[@]}" --resume \
  >"$T/r2.out" 2>&1 || bad "resumed run: $(tail -c 400 "$T/r2.out")"
a=$(field "$T/inproc" weights_crc | cut -d, -f3)
b=$(field "$T/resumed" weights_crc | cut -d, -f3)
[ -n "$a" ] && [ "$a" = "$b" ] && ok "a resumed run learns the same weights" \
  || bad "weights_crc at version 3: straight '$a', resumed '$b'"

C="$T/dist/checkpoints/ckpt-000003.pbck"
M=(match --game othello --b random --games 4 --threads 1)
expect "td: plays the checkpoint at its trained ply" 0 "^result:" \
  "$P" "${M[@]}" --a "td:$C"
expect "td: plays it at depth 3" 0 "^result:" "$P" "${M[@]}" --a "td:$C,depth=3"
expect "value: plays it" 0 "^result:" "$P" "${M[@]}" --a "value:$C"
expect "abnet: plays it" 0 "^result:" \
  "$P" "${M[@]}" --a "abnet:$C,depth=2,nodes=100000"

expect "td for a game without features" 2 "game 'tictactoe' has no features" \
  "$P" train "$CFG" --inproc --run-dir "$T/bad" --set game=tictactoe
expect "td.ply out of range" 2 "td.ply: value '17' is out of range: allowed 1..16" \
  "$P" train "$CFG" --inproc --run-dir "$T/bad" --set td.ply=17
expect "td.epsilon out of range" 2 "td.epsilon: value '-0.1' is out of range" \
  "$P" train "$CFG" --inproc --run-dir "$T/bad" --set td.epsilon=-0.1
expect "an unknown td key" 2 "unknown key 'td.lambda'" \
  "$P" train "$CFG" --inproc --run-dir "$T/bad" --set td.lambda=0.7
expect "td: refuses a probs checkpoint" 2 "algorithm probs, not td" \
  "$P" match --game connect4 --a "td:$SRC/data/models/connect4.pbck" --b random
expect "td: refuses a bad depth" 2 "bad depth=0" \
  "$P" "${M[@]}" --a "td:$C,depth=0"
expect "td: refuses an unknown setting" 2 "unknown setting 'nodes=5'" \
  "$P" "${M[@]}" --a "td:$C,nodes=5"
expect "td: a checkpoint of another game" 2 "othello checkpoint, not connect4" \
  "$P" match --game connect4 --a "td:$C" --b random

finish test_td_train
