#!/usr/bin/env bash
# test_alphazero.sh BIN_DIR SOURCE_DIR - algorithm: alphazero as a user
# runs it: `probs train` of configs/tictactoe-alphazero.yaml, distributed
# (a learner, two actors, no searchers, the evaluator) over real sockets;
# the learner SIGKILLed mid-run is restarted by probs train, resumes from
# its newest checkpoint and finishes the run; the evaluator rates the
# checkpoints with the policy, the value head and MCTS; the agents
# checkpoint:, value: and mcts: play the checkpoints, beam: refuses them;
# probs analyze and play's hint show its policy, value and MCTS visits;
# probs export writes the policy+value network; the distributed run
# trains on exactly what --inproc trains on (targets_crc), with the
# defaults and with Gumbel search + the playout cap and forced playouts.
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end
CFG="$SRC/configs/tictactoe-alphazero.yaml"

# Whatever the test started dies with it (a failure, Ctrl-C, a timeout).
on_exit 'kill -9 $(cat "$T"/pids 2>/dev/null) 2>/dev/null; rm -rf "$T"'

RUN="$T/run"
EP=(--set "net.work_endpoint=ipc://$T/work" --set "net.pub_endpoint=ipc://$T/pub"
    --set net.http_port=0)
ITERS=12
"$P" train "$CFG" --run-dir "$RUN" --actors 2 --set train.iterations=$ITERS \
  --set train.episodes_per_iter=40 --set net.item_episodes=10 \
  --set eval.every=4 --set eval.games_per_opponent=20 "${EP[@]}" \
  >"$T/train.out" 2>&1 &
TRAIN=$!
echo "$TRAIN" >"$T/pids"

# SIGKILL the learner once a few iterations are in.
for _ in $(seq 1 1200); do
  n=$(grep -c '"event":"iteration"' "$RUN/metrics.jsonl" 2>/dev/null)
  [ "${n:-0}" -ge 3 ] && break
  sleep 0.1
done
LPID=$(sed -n 's/.*started learner (pid \([0-9]*\)).*/\1/p' "$RUN/logs/train.log" | head -1)
if [ -n "$LPID" ] && [ "${n:-0}" -ge 3 ]; then
  KILLED_AT=$(grep -c '"event":"iteration"' "$RUN/metrics.jsonl")
  kill -9 "$LPID"
  ok "learner (pid $LPID) killed after $KILLED_AT iterations"
else
  bad "no learner pid or no iterations in 120 s: $(tail -c 400 "$T/train.out")"
fi
wait "$TRAIN"
rc=$?
if [ "$rc" -eq 0 ] && grep -q "resumed from" "$RUN/learner.log"; then
  ok "probs train restarts the learner, which resumes and finishes (exit 0)"
else
  bad "after the kill: exit $rc: $(tail -c 600 "$T/train.out")"
fi
grep -q "started searcher" "$RUN/logs/train.log" \
  && bad "searchers started in an alphazero run" \
  || ok "no searchers in an alphazero run"
last=$(grep '"event":"iteration"' "$RUN/metrics.jsonl" | tail -1)
if grep -q "\"version\":$ITERS," <<<"$last" &&
   grep -q '"algorithm":"alphazero"' <<<"$last" &&
   grep -q '"policy_loss":' <<<"$last"; then
  ok "the run reaches version $ITERS with alphazero metrics"
else bad "last iteration line: $last"; fi
# Versions after the restart continue from the checkpoint: no version is
# missing and none after the resume point is older than it.
vers=$(grep '"event":"iteration"' "$RUN/metrics.jsonl" |
       sed 's/.*"version":\([0-9]*\),.*/\1/' | sort -un | paste -sd, -)
want=$(seq 1 $ITERS | paste -sd, -)
[ "$vers" = "$want" ] && ok "every version 1..$ITERS trained once or again" \
  || bad "versions trained: $vers"

# The evaluator rated checkpoints with the policy, value head and MCTS.
if [ -f "$RUN/elo.csv" ] && awk -F, 'NR > 1 && $1 == 12' "$RUN/elo.csv" | grep -q . &&
   grep -q '"beam_agent":"mcts N=50"' "$RUN/metrics.jsonl"; then
  ok "the evaluator rated version 12 (accuracy of greedy policy, value, MCTS)"
else bad "elo.csv: $(cat "$RUN/elo.csv" 2>/dev/null | tail -3)"; fi

C="$RUN/checkpoints/ckpt-$(printf %06d $ITERS).pbck"
expect "mcts: plays an alphazero checkpoint" 0 "mcts:" \
  "$P" match --game tictactoe --a "mcts:$C,N=30" --b random --games 10 --seed 3
expect "checkpoint: and value: play it" 0 "optimal" \
  "$P" accuracy --game tictactoe --agent "checkpoint:$C" --agent "value:$C"
# The search budget in network evaluations: at most N + 1 per move.
epm=$("$P" accuracy --game tictactoe --agent "mcts:$C,N=30" 2>&1 |
      awk '/^mcts:/ { print $NF }')
if awk -v e="$epm" 'BEGIN { exit !(e > 1 && e <= 31) }'; then
  ok "mcts N=30 makes $epm network evaluations per move"
else bad "mcts N=30: evals/move '$epm'"; fi
expect "beam: refuses it, naming mcts:" 2 "no V and Q for beam search.*mcts:" \
  "$P" accuracy --game tictactoe --agent "beam:$C"
expect "mcts: refuses a bad N" 2 "bad N=" \
  "$P" accuracy --game tictactoe --agent "mcts:$C,N=0"
expect "probs export writes the policy+value network" 0 "pv: [0-9]+ parameters, 10 outputs" \
  "$P" export "$C" "$T/az.pt"

# probs analyze shows it: the policy's probabilities (summing to 1 over the
# legal moves), the value head's value, MCTS's visits (summing to the
# simulations) and the most visited move; JSON that parses.
"$P" analyze --model "$C" --position 5 --simulations 40 --json >"$T/an.json" 2>&1
if python3 - "$T/an.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = d["moves"]
assert d["algorithm"] == "alphazero" and d["simulations"] == 40, d
assert sorted(x["move"] for x in m) == list("12346789"), m
assert abs(sum(x["p"] for x in m) - 1) < 1e-5, m
assert all(0 <= x["p"] <= 1 for x in m), m
assert -1 <= d["v"] <= 1 and -1 <= d["mcts_value"] <= 1, d
assert sum(x["visits"] for x in m) == 40, m
most = max(m, key=lambda x: (x["visits"], -int(x["move"])))
assert d["best_mcts"] == most["move"], d
PY
then ok "analyze --json: policy sums to 1, value in [-1, 1], 40 visits"
else bad "analyze --json: $(head -c 600 "$T/an.json")"; fi
expect "analyze as text: MCTS at 200 simulations by default" 0 \
  "best by MCTS \(200 simulations\): [1-9]" "$P" analyze --model "$C"
expect "analyze refuses beam settings for it" 2 "-E is for probs checkpoints" \
  "$P" analyze --model "$C" -E 10
expect "play's hint shows the policy, the value and the visits" 0 \
  "by MCTS \(100 simulations, root value" \
  bash -c "printf 'hint\nquit\n' | '$P' play --model '$C'"

# A PROBS run cannot resume from an alphazero checkpoint (and says why).
expect "a probs learner refuses the alphazero run dir" 78 "algorithm alphazero" \
  "$P" train "$CFG" --inproc --run-dir "$RUN" --resume --set algorithm=probs \
  --set train.iterations=13

# Distributed and --inproc train on the same data (3 iterations).
"$P" train "$CFG" --inproc --run-dir "$T/inproc" --set train.iterations=3 \
  --set train.episodes_per_iter=40 --set net.item_episodes=10 >"$T/inproc.out" 2>&1
"$P" train "$CFG" --run-dir "$T/dist" --actors 2 --no-eval --set train.iterations=3 \
  --set train.episodes_per_iter=40 --set net.item_episodes=10 \
  --set "net.work_endpoint=ipc://$T/w2" --set "net.pub_endpoint=ipc://$T/p2" \
  --set net.http_port=0 >"$T/dist.out" 2>&1
crc() { grep '"event":"iteration"' "$1/metrics.jsonl" | sed 's/.*"targets_crc":\([0-9]*\).*/\1/' | paste -sd, -; }
a=$(crc "$T/inproc") b=$(crc "$T/dist")
[ -n "$a" ] && [ "$a" = "$b" ] && ok "distributed = inproc targets ($a)" \
  || bad "targets_crc inproc $a, distributed $b"

# The efficiency options reach the actors (HelloReply fields 17-23) as
# they reach --inproc: the same targets both ways, and other targets than
# the defaults'.
k=0
for opts in "mcts.root=gumbel mcts.gumbel_considered=4 mcts.full_fraction=0.5 mcts.small_simulations=8" \
            "mcts.forced_playouts=true"; do
  k=$((k + 1))
  SETS=()
  for o in $opts; do SETS+=(--set "$o"); done
  "$P" train "$CFG" --inproc --run-dir "$T/inproc$k" --set train.iterations=3 \
    --set train.episodes_per_iter=40 --set net.item_episodes=10 "${SETS[@]}" \
    >"$T/inproc$k.out" 2>&1
  "$P" train "$CFG" --run-dir "$T/dist$k" --actors 2 --no-eval --set train.iterations=3 \
    --set train.episodes_per_iter=40 --set net.item_episodes=10 "${SETS[@]}" \
    --set "net.work_endpoint=ipc://$T/w3$k" --set "net.pub_endpoint=ipc://$T/p3$k" \
    --set net.http_port=0 >"$T/dist$k.out" 2>&1
  c=$(crc "$T/inproc$k") d=$(crc "$T/dist$k")
  [ -n "$c" ] && [ "$c" = "$d" ] && [ "$c" != "$a" ] \
    && ok "$opts: distributed = inproc targets, not the defaults' ($c)" \
    || bad "$opts: targets_crc inproc $c, distributed $d, defaults $a"
done
expect "a playout cap without its fast budget is refused" 2 \
  "mcts.small_simulations \(0\) must be in 1..mcts.simulations" \
  "$P" train "$CFG" --inproc --run-dir "$T/bad" --set mcts.full_fraction=0.5
expect "forced playouts with the gumbel root are refused" 2 \
  "mcts.forced_playouts is a rule of the puct root" \
  "$P" train "$CFG" --inproc --run-dir "$T/bad" --set mcts.root=gumbel \
  --set mcts.forced_playouts=true

finish test_alphazero
