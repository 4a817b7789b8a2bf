#!/usr/bin/env bash
# test_cli_match.sh BIN_DIR SOURCE_DIR - `probs match --sprt` and
# `--openings` as a user runs them, and the edges of issue 39 item 5, each
# with the run that failed before:
#   - --sprt stops when the test decides (H1 for a much stronger A, H0 for
#     a much weaker one), a bad --sprt is refused; --openings plays each
#     opening with both colours, a bad file is refused naming the line;
#   - match --help and play --help list every agent kind (bpip:, td:, gtp:);
#   - no "-0" in an Elo: one game, a 50% score;
#   - an unknown agent setting is named as such, not read as the path;
#   - a td checkpoint: analyze and export say td and show no Q, checkpoint:
#     plays its V (what value: plays), beam: refuses it;
#   - match and search take the game from the checkpoint; search --game
#     of another game is refused;
#   - testset --game tictactoe uses tictactoe's plies; a ply past the game
#     is refused;
#   - --iterations 0 and --games 0 are refused, naming the option;
#   - an empty YAML file is refused naming it, nothing created;
#   - probs serve: 130 after SIGINT, a --bind that is no address of this
#     machine refused as such;
#   - probs --version, probs help, probs help COMMAND.
# Bad input: one line naming the problem, exit status 2 (README).
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end
C4="$SRC/data/models/connect4.pbck"
OTH="$SRC/data/models/othello.pbck"

# not_in DESCRIPTION PATTERN COMMAND...: exits 0 and no line matches.
not_in() {
  local what=$1 pat=$2
  shift 2
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne 0 ]; then bad "$what: exit $rc: $(head -c 400 <<<"$out")"
  elif grep -qE -- "$pat" <<<"$out"; then
    bad "$what: '$pat' in: $(grep -E -- "$pat" <<<"$out" | head -3)"
  else ok "$what"; fi
}

# --- --sprt ---------------------------------------------------------------
expect "sprt: a much stronger A, H1 accepted" 0 \
  '^sprt: H1 accepted after [0-9]+ games' \
  "$P" match --a lookahead:2 --b random --sprt 0,100 --threads 2
expect "sprt: a much weaker A, H0 accepted" 0 \
  '^sprt: H0 accepted after [0-9]+ games' \
  "$P" match --a random --b lookahead:2 --sprt 0,100,0.1,0.1 --threads 2
out=$("$P" match --a lookahead:2 --b random --sprt 0,100 --threads 1 2>&1)
out2=$("$P" match --a lookahead:2 --b random --sprt 0,100 --threads 3 2>&1)
n=$(grep -oE 'accepted after [0-9]+' <<<"$out")
if [ -n "$n" ] && [ "$(grep '^result' <<<"$out")" = "$(grep '^result' <<<"$out2")" ] &&
   grep -q "$n" <<<"$out2"; then
  ok "sprt: the same stop and result whatever the threads ($n)"
else bad "sprt across threads: $out // $out2"; fi
expect "sprt: undecided when --games runs out" 0 '^sprt: undecided after 4 games' \
  "$P" match --a random --b random --sprt 0,5 --games 4
expect "sprt: elo0 above elo1 is bad input" 2 'elo0 must be below elo1' \
  "$P" match --a random --b random --sprt 10,0
expect "sprt: three values is bad input" 2 'ELO0,ELO1\[,ALPHA,BETA\]|3 values' \
  "$P" match --a random --b random --sprt 0,10,0.05
expect "sprt: a word is bad input" 2 "elo1 'x' is not a number" \
  "$P" match --a random --b random --sprt 0,x

# --- --openings ------------------------------------------------------------
printf '# connect4: three in a column each, first to move wins\n121212\n\n-\n' \
  >"$T/open.txt"
out=$("$P" match --a lookahead:1 --b lookahead:1 --openings "$T/open.txt" \
      --threads 2 2>&1)
if [ $? -eq 0 ] && grep -q '4 games' <<<"$out" &&
   grep -q '2 openings from' <<<"$out" &&
   grep -q '^A moving first : W=2 ' <<<"$out" &&
   grep -q '^A moving second: W=0 D=0 L=2' <<<"$out"; then
  ok "openings: each with both colours, 2 games an opening by default"
else bad "openings: $out"; fi
printf '4453\nf5\n' >"$T/bad-open.txt"
expect "openings: another game's moves, naming the line" 2 'bad-open.txt:2' \
  "$P" match --a random --b random --openings "$T/bad-open.txt"
expect "openings: a missing file" 2 'nope.txt: cannot open' \
  "$P" match --a random --b random --openings "$T/nope.txt"
printf 'f5d6\nf5f6\n' >"$T/oth.txt"
expect "openings in othello's notation" 0 '^result: W=' \
  "$P" match --game othello --a greedy --b random --openings "$T/oth.txt"

# --- help lists every kind ------------------------------------------------
for cmd in match play; do
  out=$("$P" $cmd --help 2>&1)
  if grep -q 'bpip:PATH' <<<"$out" && grep -q 'td:PATH' <<<"$out" &&
     grep -q 'gtp:COMMAND' <<<"$out"; then
    ok "$cmd --help lists bpip:, td: and gtp:"
  else bad "$cmd --help: $(head -c 600 <<<"$out")"; fi
done
expect "match --help documents --openings" 0 'one opening a line' \
  "$P" match --help

# --- no negative zero -------------------------------------------------------
not_in "one game: no -0" '-0[^.0-9]|-0$' \
  "$P" match --a random --b random --games 1
expect "a 50% score: elo=+0" 0 'score=0.500 elo=\+0 ' \
  "$P" match --game tictactoe --a alphabeta:9 --b alphabeta:9 --games 4

# --- an unknown agent setting ---------------------------------------------
expect "abnet: an unknown setting is named, not opened" 2 \
  'unknown or repeated setting "Nodes=10"' \
  "$P" match --a "abnet:$C4,Nodes=10" --b random --games 2
expect "run: a setting is named, not read as the directory" 2 \
  'unknown setting "nodes=3"' \
  "$P" match --a "run:$T/none,nodes=3" --b random --games 2

# --- the game of a checkpoint ----------------------------------------------
expect "match takes the game from the checkpoint" 0 '^othello: A = abnet' \
  "$P" match --a "abnet:$OTH,nodes=20" --b random --games 2 --threads 1
expect "match: checkpoints of two games" 2 "plays othello, --b's connect4" \
  "$P" match --a "abnet:$OTH" --b "value:$C4" --games 2
expect "search --game othello with a connect4 checkpoint is refused" 2 \
  '--game othello, but the checkpoint .* plays connect4' \
  "$P" search --game othello --model "$C4"
expect "search takes the game from the checkpoint" 0 'a b c d e f g h' \
  "$P" search --model "$OTH" -E 5 -M 2
expect "search: a bad -E is refused" 2 "bad -E 'x'" \
  "$P" search -E x

# --- a td checkpoint ---------------------------------------------------------
if "$P" train "$SRC/configs/othello-td.yaml" --inproc --run-dir "$T/td" \
     --set train.iterations=1 --set train.episodes_per_iter=10 \
     --set net.item_episodes=10 >"$T/td.out" 2>&1; then
  ok "a td run"
else bad "td run: $(tail -c 400 "$T/td.out")"; fi
TD="$T/td/checkpoints/ckpt-000001.pbck"
out=$("$P" analyze --model "$TD" --position f5 2>&1)
if [ $? -eq 0 ] && grep -q 'version 1, td)' <<<"$out" &&
   grep -q '^best by td (depth 1): ' <<<"$out" && ! grep -q 'Q=' <<<"$out" &&
   ! grep -q 'abnet' <<<"$out"; then
  ok "analyze: a td checkpoint shows V and its n-ply search, no Q"
else bad "analyze td: $out"; fi
expect "analyze --json: algorithm td" 0 '"algorithm":"td".*"best_td"' \
  "$P" analyze --model "$TD" --json
expect "analyze: --nodes is not for a td checkpoint" 2 'is a td checkpoint' \
  "$P" analyze --model "$TD" --nodes 10
expect "export: a td checkpoint's V alone, labelled td" 0 \
  '^wrote .*: v of .*algorithm td' "$P" export "$TD" "$T/td.pt"
expect "export --net q of a td checkpoint is refused" 2 'Q is untrained' \
  "$P" export "$TD" "$T/tdq.pt" --net q
M=(match --game othello --b random --games 4 --threads 1 --seed 3)
a=$("$P" "${M[@]}" --a "checkpoint:$TD" 2>&1 | grep '^result')
b=$("$P" "${M[@]}" --a "value:$TD" 2>&1 | grep '^result')
[ -n "$a" ] && [ "$a" = "$b" ] &&
  ok "checkpoint:TD plays what value:TD plays ($a)" ||
  bad "checkpoint:TD '$a', value:TD '$b'"
expect "beam: refuses a td checkpoint" 2 'no trained Q' \
  "$P" "${M[@]}" --a "beam:$TD"

# --- testset -----------------------------------------------------------------
if "$P" testset --game tictactoe --out "$T/ttt.txt" >"$T/ts.out" 2>&1 &&
   grep -q '^# 120 positions at plies 2-7' "$T/ttt.txt"; then
  ok "testset --game tictactoe: tictactoe's plies, every position asked"
else bad "testset: $(tail -c 400 "$T/ts.out"; head -2 "$T/ttt.txt" 2>/dev/null)"; fi
expect "testset: a ply past the game is refused" 2 \
  "bad --max-ply '36' \(expected 0..7 in tictactoe\)" \
  "$P" testset --game tictactoe --out "$T/ttt2.txt" --max-ply 36
[ -e "$T/ttt2.txt" ] && bad "a refused testset wrote its file" ||
  ok "a refused testset writes nothing"
expect "testset: a game without a solver" 2 'othello has no solver' \
  "$P" testset --game othello --out "$T/o.txt"

# --- zero counts ---------------------------------------------------------------
expect "train --iterations 0 is refused" 2 "--iterations '0': expected a count of at least 1" \
  "$P" train "$SRC/configs/tictactoe.yaml" --inproc --run-dir "$T/it0" --iterations 0
[ -e "$T/it0" ] && bad "train --iterations 0 made its run dir" || ok "nothing made"
expect "match --games 0 names --games alone" 2 "^probs match: bad --games '0' \(expected 1\.\.100000000\)$" \
  "$P" match --a random --b random --games 0

# --- an empty YAML file ------------------------------------------------------
: >"$T/empty.yaml"
printf '# only a comment\n---\n' >"$T/comments.yaml"
expect "train: an empty config is refused, naming it" 2 'empty.yaml: the file sets nothing' \
  "$P" train "$T/empty.yaml" --inproc --run-dir "$T/e1"
expect "train: a config of comments only is refused" 2 'comments.yaml: the file sets nothing' \
  "$P" train "$T/comments.yaml" --run-dir "$T/e2"
[ -e "$T/e1" ] || [ -e "$T/e2" ] && bad "an empty config made a run dir" ||
  ok "an empty config changes nothing"

# --- serve ---------------------------------------------------------------------
expect "serve: a --bind that is no address here" 2 \
  '--bind 192.0.2.1: not an address of this machine' \
  "$P" serve "$T/td" --bind 192.0.2.1 --port 0
set -m
"$P" serve "$T/td" --port 0 >"$T/serve.out" 2>&1 &
SP=$!
for _ in $(seq 1200); do grep -q 'http://' "$T/serve.out" && break; sleep 0.1; done
kill -INT "$SP"
wait "$SP"
rc=$?
set +m
[ "$rc" -eq 130 ] && ok "serve: exit 130 after SIGINT" ||
  bad "serve after SIGINT: exit $rc: $(tail -c 300 "$T/serve.out")"

# --- version and help --------------------------------------------------------
expect "probs --version" 0 '^probs [0-9]+\.[0-9]+' "$P" --version
expect "probs help" 0 '^  match +play two agents' "$P" help
expect "probs help match" 0 '^usage: probs match' "$P" help match
expect "probs help nosuch" 2 "unknown command 'nosuch'" "$P" help nosuch

finish test_cli_match
