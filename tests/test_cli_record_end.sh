#!/usr/bin/env bash
# test_cli_record_end.sh BIN_DIR SOURCE_DIR - how the games of probs match
# end in their records (issue 48), and what the players thought of them:
#   - each ply's evaluation: a match between two network agents writes an
#     evaluation in [-1, 1] for every ply but the random opening's (null),
#     and probs play --replay reads them back; a gtp engine's plies are
#     null; --record-ggf keeps them as B[sq/EVAL/time]; under --tc too;
#   - a gtp engine that answers genmove with "resign" loses the game by
#     resignation (termination "resignation", the other side's win) and
#     the match goes on to the next game;
#   - SIGINT during a match with --record: the game under way is the last
#     line, interrupted (result "*"), exit 130, and the file still reads
#     back with probs play --replay.
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@"

C4="$SRC/data/models/connect4.pbck"
OT="$SRC/data/models/othello.pbck"
[ -f "$C4" ] && [ -f "$OT" ] || skip "the shipped models are missing"

# A Connect Four GTP engine in bash: the lowest column with room. MODE
# resign: resigns at its third genmove of a game; MODE interrupt: at its
# fourth genmove of the whole match sends SIGINT to probs (its parent),
# as Ctrl-C would, then answers the move.
cat >"$T/engine.sh" <<'SH'
#!/usr/bin/env bash
mode=$1
h=(0 0 0 0 0 0 0 0)
asked=0
total=0
while read -r cmd arg1 arg2; do
  case "$cmd" in
    name) echo "= Resigner" ;;
    version) echo "= 1.0" ;;
    protocol_version) echo "= 2" ;;
    known_command) echo "= false" ;;
    clear_board) h=(0 0 0 0 0 0 0 0); asked=0; echo "=" ;;
    play) h[$arg2]=$((h[$arg2] + 1)); echo "=" ;;
    genmove)
      asked=$((asked + 1))
      total=$((total + 1))
      if [ "$mode" = resign ] && [ $asked -ge 3 ]; then
        echo "= resign"
      else
        [ "$mode" = interrupt ] && [ $total -eq 4 ] && kill -INT $PPID
        for c in 1 2 3 4 5 6 7; do
          if [ "${h[$c]}" -lt 6 ]; then
            h[$c]=$((h[$c] + 1))
            echo "= $c"
            break
          fi
        done
      fi ;;
    quit) echo "="; echo; exit 0 ;;
    *) echo "=" ;;
  esac
  echo
done
SH

# --- evaluations: two network agents ------------------------------------
J="$T/ev.jsonl"
"$P" match --a "checkpoint:$C4" --b "mcts:$C4,N=8" --games 2 \
  --opening-random 2 --progress off --record "$J" >"$T/ev.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && python3 - "$J" <<'PY'
import json, sys
games = [json.loads(l) for l in open(sys.argv[1])]
assert len(games) == 2, games
for g in games:
    ev = g["evals"]
    assert len(ev) == g["plies"] and g["opening_plies"] == 2, g
    assert ev[0] is None and ev[1] is None, ev
    assert all(isinstance(e, (int, float)) and -1 <= e <= 1 for e in ev[2:]), ev
PY
then ok "network agents: an evaluation in [-1, 1] for every ply past the opening, null before"
else bad "evals: exit $rc: $(head -c 400 "$T/ev.out") $(head -c 600 "$J")"; fi
"$P" play --replay "$J:2" --agent checkpoint </dev/null >"$T/replay.out" 2>&1
rc=$?
n=$(grep -c "the player's evaluation [-+][01]\.[0-9]" "$T/replay.out")
plies=$(sed -n 2p "$J" | python3 -c 'import json,sys; print(json.load(sys.stdin)["plies"])')
if [ $rc -eq 0 ] && [ "$n" -eq $((plies - 2)) ]; then
  ok "play --replay reads each ply's evaluation back ($n plies)"
else bad "replay: exit $rc, $n evaluations of $((plies - 2)): $(head -c 400 "$T/replay.out")"; fi

# Under a time control the searches are sized to each move's budget (a
# new agent for each size): their evaluations are kept all the same.
"$P" match --a "mcts:$C4" --b "abnet:$C4" --games 1 --max-turns 10 \
  --tc 2+0.05 --progress off --record "$T/tc.jsonl" >"$T/tc.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && python3 - "$T/tc.jsonl" <<'PY'
import json, sys
g = json.loads(open(sys.argv[1]).readline())
# (10 plies unless a side lost on time on a loaded machine)
assert g["time_control"] == "2+0.05" and len(g["evals"]) == g["plies"] >= 1, g
assert all(isinstance(e, (int, float)) and -1 <= e <= 1 for e in g["evals"]), g
PY
then ok "--tc: the sized searches' evaluations, every ply"
else bad "tc evals: exit $rc: $(head -c 400 "$T/tc.out") $(head -c 400 "$T/tc.jsonl")"; fi

# GGF: the evaluations between the slashes, read back as the JSON's.
G="$T/ev.ggf"
"$P" match --game othello --a "checkpoint:$OT" --b "value:$OT" --games 1 \
  --max-turns 12 --progress off --record "$T/ot.jsonl" --record-ggf "$G" \
  >"$T/ot.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -qE 'B\[[a-h][1-8]/-?[01]\.[0-9]{4}/[0-9.]+\]' "$G" &&
   "$P" play --replay "$G" --agent checkpoint </dev/null >"$T/ggf.out" 2>&1 &&
   [ "$(grep -c "the player's evaluation" "$T/ggf.out")" -eq 12 ]; then
  ok "--record-ggf: B[sq/EVAL/time], read back by play --replay"
else bad "ggf evals: exit $rc: $(head -c 300 "$G") $(head -c 300 "$T/ggf.out")"; fi

# --- resignation: the match goes on --------------------------------------
R="$T/resign.jsonl"
"$P" match --a "checkpoint:$C4" --b "gtp:bash $T/engine.sh resign" --games 3 \
  --threads 1 --progress off --record "$R" >"$T/resign.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '^resignations: A 0, B 3' "$T/resign.out" &&
   grep -q '^result: W=3 D=0 L=0' "$T/resign.out" && python3 - "$R" <<'PY'
import json, sys
games = [json.loads(l) for l in open(sys.argv[1])]
assert len(games) == 3, games
for i, g in enumerate(games):
    assert g["termination"] == "resignation", g
    # the engine resigned: A (the checkpoint) won, whatever its colour
    assert g["result"] == ("1-0" if i % 2 == 0 else "0-1"), g
    assert g["second_version" if i % 2 == 0 else "first_version"] == "Resigner 1.0", g
    # the engine's plies: no evaluation; the checkpoint's: one
    eng = 1 if i % 2 == 0 else 0
    assert all((e is None) == (k % 2 == eng) for k, e in enumerate(g["evals"])), g
PY
then ok "a gtp engine's resign: the game lost by resignation, the match goes on; its plies' evaluations null"
else bad "resign: exit $rc: $(head -c 600 "$T/resign.out") $(head -c 400 "$R")"; fi
if "$P" play --replay "$R:2" --agent checkpoint </dev/null >"$T/rr.out" 2>&1 &&
   grep -qi 'resign' "$T/rr.out"; then
  ok "play --replay of a resigned game says so"
else bad "replay resigned: $(head -c 400 "$T/rr.out")"; fi

# --- SIGINT: the game under way is written as interrupted ----------------
I="$T/int.jsonl"
"$P" match --a "checkpoint:$C4" --b "gtp:bash $T/engine.sh interrupt" \
  --games 10 --threads 1 --progress off --record "$I" >"$T/int.out" 2>&1
rc=$?
lines=$(grep -c . "$I")
if [ $rc -eq 130 ] && grep -q 'stopped after' "$T/int.out" &&
   grep -q 'and 1 interrupted' "$T/int.out" && python3 - "$I" <<'PY'
import json, sys
games = [json.loads(l) for l in open(sys.argv[1])]
assert len(games) >= 2, games
last = games[-1]
assert last["termination"] == "interrupted" and last["result"] == "*", last
assert all(g["termination"] != "interrupted" for g in games[:-1]), games
assert last["round"] == len(games), last
PY
then ok "SIGINT: exit 130, the game under way the last line, interrupted (result *)"
else bad "sigint: exit $rc: $(head -c 600 "$T/int.out") $(tail -c 400 "$I")"; fi
"$P" play --replay "$I:$lines" --agent checkpoint </dev/null >"$T/ri.out" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -qi 'interrupted' "$T/ri.out"; then
  ok "play --replay reads the interrupted game back"
else bad "replay interrupted: exit $rc: $(head -c 400 "$T/ri.out")"; fi

finish
