#!/usr/bin/env bash
# test_cli_match_stats.sh BIN_DIR SOURCE_DIR - `probs match` as
# cutechess-cli and fastchess run matches (issue 48, item 1):
#   - a progress line on stderr while it runs (--progress), a bad
#     --progress refused;
#   - Ctrl-C (SIGINT): the summary of the games finished so far, exit 130,
#     every one of them in the --record file;
#   - the games' and the pairs' Elo, nElo, LOS and draw ratio, and the
#     pentanomial counts;
#   - a one-sided score whose Elo is not an end of its own interval;
#   - repeated games reported, and --sprt stopping undecided when the
#     agents only replay earlier games (pentanomial with --openings).
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end
C4="$SRC/data/models/connect4.pbck"

# --- progress ---------------------------------------------------------------
"$P" match --a lookahead:1 --b random --games 6 --threads 2 --progress 0 \
  >"$T/p.out" 2>"$T/p.err"
rc=$?
n=$(grep -c '^progress: [0-9]/6 games, W=[0-9]* D=[0-9]* L=[0-9]*, elo ' "$T/p.err")
if [ $rc -eq 0 ] && [ "$n" -eq 6 ] && grep -q '^progress: 6/6 games' "$T/p.err" &&
   ! grep -q '^progress' "$T/p.out"; then
  ok "progress: --progress 0 prints a line on stderr after every game"
else bad "progress: rc $rc, $n lines: $(head -c 600 "$T/p.err")"; fi
expect "progress: llr with --sprt" 0 '^progress: .*, llr -?[0-9.]+ \[-2.94, 2.94\]' \
  "$P" match --a lookahead:1 --b random --games 4 --sprt 0,10 --progress 0
out=$("$P" match --a random --b random --games 4 --progress off 2>&1)
if [ $? -eq 0 ] && ! grep -q '^progress' <<<"$out"; then
  ok "progress: off prints none"
else bad "progress off: $out"; fi
expect "progress: a bad value is refused" 2 "bad --progress 'soon'" \
  "$P" match --a random --b random --progress soon

# --- Ctrl-C -------------------------------------------------------------------
"$P" match --a lookahead:2 --b lookahead:2 --games 100000 --threads 2 \
  --progress 0 --record "$T/int.jsonl" >"$T/int.out" 2>"$T/int.err" &
pid=$!
# Wait (up to 120 s) for 5 games, then interrupt.
for _ in $(seq 1 1200); do
  grep -q '^progress: [5-9]/\|^progress: [0-9][0-9]' "$T/int.err" 2>/dev/null && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
kill -INT $pid
wait $pid
rc=$?
res=$(grep '^result: ' "$T/int.out")
w=$(sed -nE 's/^result: W=([0-9]+) D=([0-9]+) L=([0-9]+).*/\1+\2+\3/p' <<<"$res")
games=$(( ${w:-0} ))
lines=$(wc -l <"$T/int.jsonl")
# The games under way (at most one a thread) are recorded as interrupted.
intr=$(grep -c '"termination":"interrupted"' "$T/int.jsonl")
if [ $intr -gt 0 ]; then said="recorded $games games and $intr interrupted to"
else said="recorded $games games to"; fi
if [ $rc -eq 130 ] && [ "$games" -ge 5 ] && [ "$intr" -le 2 ] &&
   [ "$lines" -eq $((games + intr)) ] &&
   grep -q "SIGINT: stopped after $games of 100000 games" "$T/int.err" &&
   grep -q "^$said" "$T/int.out"; then
  ok "SIGINT: exit 130, the summary of $games games, all in the record ($intr interrupted)"
else
  bad "SIGINT: rc $rc, result '$res', $lines records: $(tail -c 300 "$T/int.err")"
fi

# --- statistics ---------------------------------------------------------------
out=$("$P" match --a lookahead:1 --b random --games 40 --threads 2 2>&1)
if [ $? -eq 0 ] &&
   grep -qE '^games: elo [-+][0-9]+ \[[-+][0-9a-z]+, [-+][0-9a-z]+\], nelo [-+][0-9]+ \[.*\], los [0-9.]+%, draw ratio [0-9.]+%$' <<<"$out" &&
   grep -qE '^pairs: 20, ptnml\(0-2\) \[[0-9]+, [0-9]+, [0-9]+, [0-9]+, [0-9]+\] \(WL [0-9]+, DD [0-9]+\): elo ' <<<"$out"; then
  ok "games: and pairs: lines with elo, nelo, los, draw ratio, ptnml"
else bad "statistics: $out"; fi
# W=2 D=0 L=0 gave elo=+191 [-191, +191] (issue 48).
expect "a one-sided score: the interval is open on its side" 0 \
  '^result: W=2 D=0 L=0 score=1.000 elo=\+191 \[-302, \+inf\]' \
  "$P" match --a lookahead:2 --b random --games 2 --progress off

# --- repeats --------------------------------------------------------------------
expect "repeats: deterministic agents replay two games" 0 \
  '^repeats: 8 of 10 games repeat an earlier game move for move \(2 distinct\), 4 of 5 pairs' \
  "$P" match --a "checkpoint:$C4" --b "checkpoint:$C4" --games 10 --threads 2
printf '4\n44\n45\n' >"$T/open3.txt"
out=$("$P" match --a "checkpoint:$C4" --b "checkpoint:$C4" --sprt 0,10 \
      --openings "$T/open3.txt" --threads 2 2>&1)
if [ $? -eq 0 ] && grep -q 'pentanomial, on pairs' <<<"$out" &&
   grep -q '^sprt: undecided after 26 games: .*pentanomial on 3 distinct pairs' <<<"$out" &&
   grep -q '^sprt: stopped: the last 20 games' <<<"$out"; then
  ok "sprt: repeats stop the test undecided, pairs counted once"
else bad "sprt on repeats: $out"; fi

# --- time control ---------------------------------------------------------
for tc in 0 -1 5+x 5+-1 +1 x; do
  expect "tc: '$tc' is refused" 2 "bad --tc '[^']*' \\(expected BASE\\+INC" \
    "$P" match --a random --b random --tc "$tc"
done
expect "tc: a generous clock, no losses on time" 0 \
  '^time losses: A 0, B 0' \
  "$P" match --a lookahead:1 --b random --tc 60+1 --games 4 --progress off
# uct:100000 takes seconds a move (it keeps no clock); 0.05 s is far too
# little: A loses every game on time, without its move played.
out=$("$P" match --a uct:100000 --b random --tc 0.05 --games 2 --threads 1 \
      --progress off --record "$T/tl.jsonl" 2>&1)
if [ $? -eq 0 ] && grep -q '^time losses: A 2, B 0' <<<"$out" &&
   [ "$(grep -c '"termination":"time"' "$T/tl.jsonl")" -eq 2 ] &&
   "$P" play --replay "$T/tl.jsonl:2" </dev/null >/dev/null 2>&1 &&
   grep -q '^result: W=0 D=0 L=2' <<<"$out" && grep -q 'tc 0.05+0 s' <<<"$out"; then
  ok "tc: a side whose time runs out loses, counted and recorded"
else bad "tc losses: $out"; fi
# A gtp: engine (probs gtp, its commands logged) hears the clock.
cat >"$T/eng.sh" <<EOS
#!/usr/bin/env bash
tee -a "$T/cmds.log" | "$P" gtp --game connect4 --agent lookahead:2
EOS
chmod +x "$T/eng.sh"
out=$("$P" match --a "gtp:$T/eng.sh" --b lookahead:1 --tc 2+0.1 --games 2 \
      --threads 1 --progress off 2>&1)
if [ $? -eq 0 ] && grep -q '^time_settings 2.000 0.100 1' "$T/cmds.log" &&
   [ "$(grep -c '^time_settings' "$T/cmds.log")" -eq 2 ] &&
   grep -q '^time_left black 2.000 0' "$T/cmds.log" &&
   grep -q '^time_left white 2.000 0' "$T/cmds.log" &&
   [ "$(grep -c '^time_left' "$T/cmds.log")" -eq "$(grep -c '^genmove' "$T/cmds.log")" ]; then
  ok "tc: a gtp: engine gets time_settings each game, time_left each move"
else bad "tc gtp: $out // $(head -20 "$T/cmds.log" 2>/dev/null)"; fi

# --- adjudication -----------------------------------------------------------
out=$("$P" match --a lookahead:1 --b lookahead:1 --games 10 --threads 2 \
      --adjudicate solver --progress off --record "$T/adj.jsonl" 2>&1)
n=$(sed -nE 's/^adjudicated: ([0-9]+) games \(the solver.s result, from ply 16\)$/\1/p' <<<"$out")
if [ $? -eq 0 ] && [ -n "$n" ] && [ "$n" -gt 0 ] &&
   [ "$(grep -c '"termination":"adjudication"' "$T/adj.jsonl")" -eq "$n" ] &&
   grep -q 'adjudicated by the solver from ply 16' <<<"$out"; then
  ok "adjudicate: connect4 games scored by the solver from ply 16 ($n), recorded"
else bad "adjudicate: $out"; fi
expect "adjudicate: othello has no solver" 2 'othello has no solver' \
  "$P" match --game othello --a random --b random --adjudicate solver
expect "adjudicate: a bad value" 2 "bad --adjudicate 'solver:0'" \
  "$P" match --a random --b random --adjudicate solver:0

out=$("$P" match --game othello --a greedy --b random --games 10 \
      --adjudicate material:20,4 --progress off --record "$T/madj.jsonl" 2>&1)
n=$(sed -nE 's/^adjudicated: ([0-9]+) games \(a lead of 20 held for 4 plies\)$/\1/p' <<<"$out")
if [ $? -eq 0 ] && [ -n "$n" ] && [ "$n" -gt 0 ] &&
   [ "$(grep -c '"termination":"adjudication"' "$T/madj.jsonl")" -eq "$n" ]; then
  ok "adjudicate: othello by material ($n games), recorded"
else bad "adjudicate material: $out"; fi
expect "adjudicate: connect4 has no material" 2 'connect4 has no material' \
  "$P" match --a random --b random --adjudicate material:5

# --- the shipped opening books ---------------------------------------------------
B="$SRC/data/openings"
n=$(grep -cv '^#' "$B/tictactoe.txt")
expect "book: tictactoe, every opening a draw under perfect play" 0 \
  "^result: W=0 D=$((2 * n)) L=0 " \
  "$P" match --game tictactoe --a alphabeta:9 --b alphabeta:9 \
  --openings "$B/tictactoe.txt" --progress off
# The solver at the opening's own ply: a draw, so the game is one.
expect "book: connect4, the first opening a draw by the solver" 0 \
  '^result: W=0 D=2 L=0 ' \
  "$P" match --a random --b random --openings "$B/connect4.txt" --games 2 \
  --threads 1 --adjudicate solver:8 --progress off
for game in othello toguz; do
  expect "book: $game's openings play" 0 '^result: ' \
    "$P" match --game $game --a random --b random \
    --openings "$B/$game.txt" --games 4 --progress off
done

finish test_cli_match_stats
