#!/usr/bin/env bash
# test_cli_gtp.sh BIN_DIR SOURCE_DIR - `probs gtp` as GTP tools run it: bad
# command lines, the default agent (each algorithm's best search), a
# session over stdin/stdout (responses, only GTP on stdout, comment lines
# unanswered, quit, end of input, SIGTERM), time_settings and time_left
# sizing the search of each move, and whole matches where the project's
# own gtp: agent drives `probs gtp` in each game, and probs gtp plays
# Othello against Debian's gtp-rhino (skipped when it is absent). The
# checkpoints are one small training iteration of each game's smoke
# config, and of an AlphaZero and a td config (seconds).
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end

# --- checkpoints ------------------------------------------------------------
for game in connect4 tictactoe othello toguz; do
  "$P" train "$SRC/configs/$game-smoke.yaml" --inproc --set run.dir="$T/$game" \
    --set train.iterations=1 >"$T/$game.log" 2>&1 ||
    bad "$game: smoke training failed: $(tail -3 "$T/$game.log")"
done
for cfg in tictactoe-alphazero connect4-td; do
  "$P" train "$SRC/configs/$cfg.yaml" --inproc --set run.dir="$T/$cfg" \
    --set train.iterations=1 --set train.episodes_per_iter=4 >"$T/$cfg.log" 2>&1 ||
    bad "$cfg: training failed: $(tail -3 "$T/$cfg.log")"
done
ck() { echo "$T/$1/checkpoints/ckpt-000001.pbck"; }
C4=$(ck connect4)
OT=$(ck othello)
AZ=$(ck tictactoe-alphazero)
TD=$(ck connect4-td)

# --- bad command lines ------------------------------------------------------
expect "no --model, no shipped model of the game" 2 \
  'probs gtp: no shipped model tictactoe.pbck .*give --model' \
  "$P" gtp --game tictactoe
expect "--model and --game" 2 'give --model or --game, not both' \
  "$P" gtp --model "$C4" --game connect4
expect "a missing checkpoint" 2 'probs gtp: --model: .*none.pbck: cannot open' \
  "$P" gtp --model "$T/none.pbck"
printf 'not a checkpoint\n' >"$T/bad.pbck"
expect "a file that is not a checkpoint" 2 'probs gtp: --model: .*bad.pbck' \
  "$P" gtp --model "$T/bad.pbck"
expect "an unknown agent" 2 'unknown spec "minimax:3"' \
  "$P" gtp --model "$C4" --agent minimax:3
expect "abnet with a bad budget" 2 'nodes' \
  "$P" gtp --model "$C4" --agent abnet,nodes=0
expect "a bad seed" 2 "bad --seed 'x'" "$P" gtp --model "$C4" --seed x
expect "beam over a td checkpoint (no trained Q) is refused" 2 'beam search' \
  "$P" gtp --model "$TD" --agent beam
expect "--help" 0 '^usage: probs gtp \[--model CKPT [|] --game NAME\]' "$P" gtp --help
expect "probs --help lists gtp" 0 '^  gtp ' "$P" --help

# --- a session --------------------------------------------------------------
# has LINE: stdout holds exactly that line.
has() { if grep -qxF -- "$2" "$T/out"; then ok "$1"; else bad "$1: no line '$2' in: $(head -c 600 "$T/out")"; fi; }
printf '1 protocol_version\n2 name\n3 boardsize 8\n4 boardsize 7\n5 komi 0.5\n6 play b 4\n7 play b 4\n8 genmove w\n9 showboard\n10 final_score\n11 undo\n# comment\n12 frobnicate\n13 quit\n14 name\n' |
  "$P" gtp --model "$C4" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" -eq 0 ] && ok "session: exit 0 after quit" || bad "session: exit $rc; $(cat "$T/err")"
if [ "$(head -1 "$T/out")" = "=1 2" ]; then ok "session: stdout starts with the first response"
else bad "session: stdout starts with '$(head -1 "$T/out")'"; fi
has "protocol_version" "=1 2"
has "name" "=2 probs"
has "boardsize 8 is refused in connect4" "?3 unacceptable size"
has "boardsize 7" "=4"
has "komi" "=5"
has "play" "=6"
has "play out of turn" "?7 illegal move"
if grep -qxE '=8 [1-7]' "$T/out"; then ok "genmove: a column"; else bad "genmove: $(cat "$T/out")"; fi
if grep -qx '=9 ' "$T/out" && grep -qx '1 2 3 4 5 6 7' "$T/out" && grep -qx 'black to move' "$T/out"; then
  ok "showboard"; else bad "showboard: $(cat "$T/out")"; fi
has "final_score before the end" "?10 cannot score"
has "undo" "=11"
has "an unknown command" "?12 unknown command"
has "quit" "=13"
if grep -q '^=14' "$T/out"; then bad "a command after quit was answered"; else ok "nothing after quit"; fi
if grep -q 'probs gtp: connect4, agent abnet:' "$T/err"; then ok "the banner is on stderr"
else bad "stderr: $(cat "$T/err")"; fi

# version: probs's own (issue 48: it was the agent's spec).
v=$(printf 'version\nquit\n' | "$P" gtp --model "$C4" 2>/dev/null | sed -n 's/^= //p' | head -1)
pv=$("$P" --version | sed -n 's/^probs //p')
[ -n "$v" ] && [ "$v" = "$pv" ] && ok "version answers probs's version ($v)" ||
  bad "version: '$v', probs --version '$pv'"
# An agent without a network needs no model (issue 48: Tic-Tac-Toe has
# none shipped, and alphabeta:4 was refused for want of one).
out=$(printf 'genmove b\nquit\n' | "$P" gtp --game tictactoe --agent alphabeta:4 2>&1)
if [ $? -eq 0 ] && grep -qE '^= [1-9]$' <<<"$out" &&
   grep -q 'probs gtp: tictactoe, agent alphabeta:4;' <<<"$out"; then
  ok "tictactoe: --agent alphabeta:4 plays without a model"
else bad "tictactoe alphabeta:4: $out"; fi
expect "tictactoe: the default search still needs a model" 2 'tictactoe' \
  "$P" gtp --game tictactoe

# --- the default agent: the checkpoint's best search --------------------------
# agent_of ARGS...: the agent's spec, from the line on stderr.
agent_of() { printf 'quit\n' | "$P" gtp "$@" 2>&1 >/dev/null | sed -n 's/^probs gtp: [a-z0-9]*, agent \(.*\) (sized to time_settings\/time_left); GTP on stdin\/stdout$/\1/p; s/^probs gtp: [a-z0-9]*, agent \(.*\); GTP on stdin\/stdout$/\1/p'; }
a=$(agent_of --model "$C4")
[ "$a" = "abnet:$C4" ] && ok "a PROBS checkpoint plays abnet" || bad "PROBS default: '$a'"
a=$(agent_of --model "$AZ")
[ "$a" = "mcts:$AZ" ] && ok "an AlphaZero checkpoint plays mcts" || bad "AlphaZero default: '$a'"
a=$(agent_of --model "$TD")
[ "$a" = "td:$TD" ] && ok "a td checkpoint plays td" || bad "td default: '$a'"
a=$(agent_of --model "$C4" --agent search)
[ "$a" = "abnet:$C4" ] && ok "--agent search is the default" || bad "--agent search: '$a'"
a=$(agent_of --model "$C4" --agent checkpoint)
[ "$a" = "checkpoint:$C4" ] && ok "--agent still overrides" || bad "--agent checkpoint: '$a'"
out=$(printf 'genmove b\nquit\n' | "$P" gtp --model "$AZ" 2>&1)
grep -qxE '= [1-9]' <<<"$out" && ok "the AlphaZero default moves" || bad "AlphaZero genmove: $out"
out=$(printf 'genmove b\nquit\n' | "$P" gtp --model "$TD" 2>&1)
grep -qxE '= [1-7]' <<<"$out" && ok "the td default moves" || bad "td genmove: $out"

# --- comments: no response at all --------------------------------------------
long=$(head -c 6000 /dev/zero | tr '\0' c)
out=$(printf '# a comment\n#\n   # indented\n#%s\nname # trailing\n# genmove b\nquit\n' "$long" |
  "$P" gtp --model "$C4" --agent random 2>/dev/null)
[ "$out" = "$(printf '= probs\n\n=')" ] && ok "comment lines get no response, however long" ||
  bad "comment lines: '$(head -c 300 <<<"$out")'"

# --- time_settings and time_left: the search fits the budget ------------------
# secs CMDS ARGS...: seconds that probs gtp ARGS takes over CMDS.
secs() {
  local cmds=$1 s e
  shift
  s=$(date +%s%N)
  printf '%b' "$cmds" | "$P" gtp "$@" >"$T/tout" 2>"$T/terr"
  e=$(date +%s%N)
  echo $(((e - s) / 1000000))
}
# 100,000 simulations a move unless the clock says less: 0.1 s a move.
ms=$(secs 'time_settings 0 1 10\ngenmove b\ngenmove w\ngenmove b\ngenmove w\nquit\n' \
  --model "$AZ" --agent mcts,N=100000)
if [ "$(grep -cE '^= [1-9]$' "$T/tout")" -eq 4 ] && [ "$ms" -lt 20000 ]; then
  ok "byo-yomi of 0.1 s a move: mcts,N=100000 plays 4 moves in $ms ms"
else bad "mcts under byo-yomi: $ms ms: $(cat "$T/tout" "$T/terr")"; fi
ms=$(secs 'time_left b 3 1\ngenmove b\nquit\n' --model "$AZ" --agent mcts,N=100000)
if grep -qE '^= [1-9]$' "$T/tout" && [ "$ms" -lt 20000 ]; then
  ok "time_left alone: 3 s for 1 stone, $ms ms"
else bad "time_left alone: $ms ms: $(cat "$T/tout" "$T/terr")"; fi
# abnet searches its budget: at least most of 30 s / 30 moves.
ms=$(secs 'time_settings 30 0 0\ngenmove b\nquit\n' --model "$OT")
if grep -qE '^= [a-h][1-8]$' "$T/tout" && [ "$ms" -ge 700 ] && [ "$ms" -lt 20000 ]; then
  ok "abnet under 30 s absolute time searches about 1 s: $ms ms"
else bad "abnet under absolute time: $ms ms: $(cat "$T/tout" "$T/terr")"; fi
printf 'time_settings 5 x 0\ntime_left b 1\ntime_settings 0 10 0\nquit\n' |
  "$P" gtp --model "$C4" >"$T/out" 2>/dev/null
has "a bad time_settings: one line naming it" \
  "? syntax error: time_settings: 'x' is not a time in seconds (a number >= 0)"
has "a short time_left" \
  "? syntax error: time_left COLOR TIME STONES (b or w, seconds, stones; 0 stones: main time)"
has "time_settings with no limit" "="

printf 'boardsize 8\nplay B D3\ngenmove white\nplay b pass\n' | "$P" gtp --model "$OT" --agent beam,E=5 >"$T/out" 2>/dev/null
rc=$?
[ "$rc" -eq 0 ] && ok "othello: exit 0 at the end of input" || bad "othello session: exit $rc"
if [ "$(grep -cx '=' "$T/out")" -eq 2 ] && grep -qxE '= [a-h][1-8]' "$T/out" && grep -qx '? illegal move' "$T/out"; then
  ok "othello: squares in and out, a pass refused while black has moves"
else bad "othello session: $(cat "$T/out")"; fi

# SIGTERM while waiting for a command: a clean exit 0.
mkfifo "$T/fifo"
"$P" gtp --model "$C4" <"$T/fifo" >"$T/out" 2>/dev/null &
pid=$!
exec 3>"$T/fifo"
printf 'name\n' >&3
for _ in $(seq 1200); do grep -q '= probs' "$T/out" && break; sleep 0.1; done
kill -TERM "$pid"
wait "$pid"
rc=$?
exec 3>&-
[ "$rc" -eq 0 ] && grep -qx '= probs' "$T/out" && ok "SIGTERM: exit 0" ||
  bad "SIGTERM: exit $rc, output $(cat "$T/out")"

# --- matches through the gtp: agent -----------------------------------------
# match_ok WHAT GAMES ARGS...: `probs match` finishes (every move the agents
# sent and got was legal, or it fails) and W + D + L = GAMES.
match_ok() {
  local what=$1 games=$2 out rc
  shift 2
  out=$("$P" match "$@" --games "$games" 2>&1)
  rc=$?
  local line
  line=$(grep '^result: ' <<<"$out")
  if [ "$rc" -ne 0 ] || [ -z "$line" ]; then
    bad "$what: exit $rc: $(tail -c 400 <<<"$out")"
    return
  fi
  local w d l
  w=$(sed -E 's/.*W=([0-9]+).*/\1/' <<<"$line")
  d=$(sed -E 's/.* D=([0-9]+).*/\1/' <<<"$line")
  l=$(sed -E 's/.* L=([0-9]+).*/\1/' <<<"$line")
  if [ $((w + d + l)) -eq "$games" ]; then ok "$what: $line"
  else bad "$what: $line"; fi
}
match_ok "connect4: the gtp: agent drives probs gtp" 4 --game connect4 \
  --a "gtp:$P gtp --model $C4 --agent beam,E=10" --b alphabeta:2 \
  --threads 2 --opening-random 2
match_ok "tictactoe: the gtp: agent drives probs gtp" 4 --game tictactoe \
  --a "gtp:$P gtp --model $(ck tictactoe)" --b random --threads 2 --opening-random 1
match_ok "toguz: the gtp: agent drives probs gtp" 2 --game toguz \
  --a "gtp:$P gtp --model $(ck toguz) --agent value" --b greedy --threads 2
match_ok "othello: probs gtp against probs gtp" 4 --game othello \
  --a "gtp:$P gtp --model $OT --agent random --seed 3" \
  --b "gtp:$P gtp --model $OT --agent greedy" --threads 2 --opening-random 2
expect "a probs gtp of another game refuses the size" 2 \
  'refused "boardsize 8": unacceptable size' \
  "$P" match --game othello --a "gtp:$P gtp --model $C4" --b random --games 2

if [ -x /usr/games/gtp-rhino ]; then
  match_ok "othello: probs gtp against gtp-rhino" 4 --game othello \
    --a "gtp:$P gtp --model $OT" --b gtp:/usr/games/gtp-rhino --threads 2
else
  echo "skipped: probs gtp against gtp-rhino (/usr/games/gtp-rhino is absent;" \
    "apt-get install grhino grhino-data)"
fi

finish test_cli_gtp
