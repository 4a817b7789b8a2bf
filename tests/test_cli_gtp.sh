#!/usr/bin/env bash
# test_cli_gtp.sh BIN_DIR SOURCE_DIR - `probs gtp` as GTP tools run it: bad
# command lines, a session over stdin/stdout (responses, only GTP on
# stdout, quit, end of input, SIGTERM), and whole matches where the
# project's own gtp: agent drives `probs gtp` in each game, and probs gtp
# plays Othello against Debian's gtp-rhino (skipped when it is absent).
# The checkpoints are one small training iteration of each game's smoke
# config (seconds).
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_cli_gtp.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
BIN=$(cd "$1" && pwd) || exit 2
SRC=$(cd "$2" && pwd) || exit 2
P="$BIN/probs"
T=$(mktemp -d /tmp/pb_test_gtp_XXXXXX)

. "$SRC/tests/cli_lib.sh"
on_exit 'rm -rf "$T"' # and kills what the test started (probs gtp &)

# --- checkpoints ------------------------------------------------------------
for game in connect4 tictactoe othello toguz; do
  "$P" train "$SRC/configs/$game-smoke.yaml" --inproc --set run.dir="$T/$game" \
    --set train.iterations=1 >"$T/$game.log" 2>&1 ||
    bad "$game: smoke training failed: $(tail -3 "$T/$game.log")"
done
ck() { echo "$T/$1/checkpoints/ckpt-000001.pbck"; }
C4=$(ck connect4)
OT=$(ck othello)

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
if grep -q 'probs gtp: connect4, agent checkpoint:' "$T/err"; then ok "the banner is on stderr"
else bad "stderr: $(cat "$T/err")"; fi

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
for _ in $(seq 50); do grep -q '= probs' "$T/out" && break; sleep 0.1; done
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
