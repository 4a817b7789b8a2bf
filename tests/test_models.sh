#!/usr/bin/env bash
# test_models.sh BIN_DIR SOURCE_DIR - the trained networks shipped in
# data/models/: each is listed with its provenance in data/models/README.md,
# loads, plays whole games (and beats a random player), and scores on the
# shipped solved set what README.md says it scores; each game's default
# (the strongest measured: the AlphaZero networks of Connect Four and
# Othello, Toguz Kumalak's PROBS one) is what `probs play` and `probs gtp`
# use without --model, with its algorithm's best search (abnet for PROBS,
# mcts for AlphaZero).
# Also `probs export OUT.pbck`, which made them, round trip: a model file
# plays as its checkpoint.
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end
M="$SRC/data/models"

# --- what ships --------------------------------------------------------------
total=0
for f in connect4 connect4-alphazero othello othello-alphazero toguz; do
  if [ -f "$M/$f.pbck" ]; then ok "$f.pbck ships"; else bad "$f.pbck is missing"; fi
  grep -q "\`$f.pbck\`" "$M/README.md" && ok "$f.pbck has its provenance" ||
    bad "$f.pbck: no row in data/models/README.md"
done
for f in "$M"/*.pbck; do total=$((total + $(stat -c %s "$f"))); done
[ "$total" -le $((8 * 1024 * 1024)) ] && ok "models: $total bytes in all" ||
  bad "models: $total bytes in all (more than 8 MiB)"

# --- each loads and plays ----------------------------------------------------
for f in "$M"/*.pbck; do
  name=$(basename "$f" .pbck)
  game=${name%-alphazero}
  # Greedy network against random, 4 games: a trained network wins most.
  out=$("$P" match --game "$game" --a "checkpoint:$f" --b random --games 4 2>&1)
  rc=$?
  res=$(grep '^result:' <<<"$out")
  w=$(sed -E 's/.*W=([0-9]+).*/\1/' <<<"$res")
  if [ "$rc" -eq 0 ] && [ -n "$res" ] && [ "${w:-0}" -ge 3 ]; then
    ok "$name: plays, wins $w of 4 against random"
  else
    bad "$name: match exit $rc, '$res': $(tail -3 <<<"$out")"
  fi
done

# --- each game's default: probs play and probs gtp without --model -------------
# GAME FILE AGENT MOVE: the default network of GAME is FILE.pbck, played by
# AGENT; MOVE matches a move of the game in GTP.
while read -r game file agent move; do
  out=$(printf 'quit\n' | "$P" play --game "$game" --first agent 2>&1)
  rc=$?
  if [ "$rc" -eq 0 ] && grep -q "against $agent:.*data/models/$file.pbck;" <<<"$out" &&
    grep -q '^agent (X) plays ' <<<"$out"; then
    ok "$game: probs play uses $file.pbck ($agent) and it moves"
  else
    bad "$game: probs play: exit $rc: $(head -c 600 <<<"$out")"
  fi
  out=$(printf 'version\ngenmove b\nquit\n' | "$P" gtp --game "$game" 2>"$T/err")
  rc=$?
  # version is probs's; the agent is on stderr's first line.
  if [ "$rc" -eq 0 ] &&
    grep -qE "^probs gtp: $game, agent $agent:.*data/models/$file.pbck( \(sized to time_settings/time_left\))?; GTP" "$T/err" &&
    grep -qE "^= $move\$" <<<"$out"; then
    ok "$game: probs gtp uses $file.pbck ($agent): $(grep -E "^= $move\$" <<<"$out")"
  else
    bad "$game: probs gtp: exit $rc: $out $(cat "$T/err")"
  fi
done <<'EOF'
connect4 connect4-alphazero mcts [1-7]
othello othello-alphazero mcts [a-h][1-8]
toguz toguz abnet [1-9]
EOF
out=$(printf 'version\nquit\n' | "$P" gtp 2>&1)
grep -qE '^probs gtp: othello, agent mcts:.*othello-alphazero.pbck' <<<"$out" &&
  ok "gtp with neither --model nor --game: Othello's default" ||
  bad "gtp with no --model: $out"

# --- the accuracy README.md quotes -------------------------------------------
# Its rows read "| `connect4.pbck` | ... | greedy 0.xxx | ...".
for name in connect4 connect4-alphazero; do
  want=$(grep "^| \`$name.pbck\`" "$M/README.md" | grep -oE 'greedy 0\.[0-9]{3}' | cut -d' ' -f2)
  got=$("$P" accuracy --model "$M/$name.pbck" 2>&1 | awk '/^checkpoint:/{print $3}')
  if [ -n "$want" ] && [ -n "$got" ] &&
    python3 -c "import sys; sys.exit(abs($want - $got) > 0.0015)"; then
    ok "$name: greedy accuracy $got, as README.md says ($want)"
  else
    bad "$name: greedy accuracy '$got', README.md says '$want'"
  fi
done

# --- probs export OUT.pbck ----------------------------------------------------
"$P" train "$SRC/configs/tictactoe-smoke.yaml" --inproc --set run.dir="$T/run" \
  --set train.iterations=1 >"$T/train.log" 2>&1 || bad "training: $(tail -3 "$T/train.log")"
CK="$T/run/checkpoints/ckpt-000001.pbck"
expect "export a model file" 0 "wrote $T/m.pbck: the model file of" \
  "$P" export "$CK" "$T/m.pbck"
a=$("$P" match --game tictactoe --a "checkpoint:$CK" --b lookahead:1 --games 6 2>&1 | grep '^result:')
b=$("$P" match --game tictactoe --a "checkpoint:$T/m.pbck" --b lookahead:1 --games 6 2>&1 | grep '^result:')
[ -n "$a" ] && [ "$a" = "$b" ] && ok "the model file plays as its checkpoint ($a)" ||
  bad "checkpoint '$a', model file '$b'"
[ "$(stat -c %s "$T/m.pbck")" -lt "$(stat -c %s "$CK")" ] && ok "the model file is smaller" ||
  bad "model file $(stat -c %s "$T/m.pbck") bytes, checkpoint $(stat -c %s "$CK")"
expect "export over its own checkpoint is refused" 2 'OUT is CKPT itself' \
  "$P" export "$CK" "$CK"
expect "the model file searches (mcts)" 0 'result:' \
  "$P" match --game tictactoe --a "mcts:$T/m.pbck,N=8" --b random --games 2
expect "a model of another game for play" 2 '--game connect4, but the checkpoint .* plays tictactoe' \
  "$P" play --game connect4 --model "$T/m.pbck"
finish test_models
