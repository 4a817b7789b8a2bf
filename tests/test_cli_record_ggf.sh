#!/usr/bin/env bash
# test_cli_record_ggf.sh BIN_DIR SOURCE_DIR - what the records of issue 48
# hold, as a user makes and reads them:
#   - probs match --record: the date, --event, the players' versions (a
#     gtp engine's own name and version), --tc, the termination and each
#     ply's milliseconds; rounds go on from the file's last when a second
#     match appends;
#   - --record-ggf: DT, TI and the moves' times, and probs play --replay
#     reads the GGF back (the same moves as the JSON record of the same
#     game); malformed GGF is refused naming FILE:LINE and the fault, exit 2;
#   - probs analyze --record FILE:N analyses every position of a recorded
#     game with the move played (--json: a line a ply).
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_cli_record_ggf.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
BIN=$(cd "$1" && pwd) || exit 2
SRC=$(cd "$2" && pwd) || exit 2
P="$BIN/probs"
T=$(mktemp -d /tmp/pb_test_record_ggf_XXXXXX)

. "$SRC/tests/cli_lib.sh"
on_exit 'rm -rf "$T"' # and kills what the test started

# A gtp engine that says who it is: probs gtp behind a proxy that answers
# name and version itself.
cat >"$T/engine.py" <<'PY'
import subprocess, sys
eng = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
for line in sys.stdin:
    cmd = line.strip()
    if cmd in ("name", "version"):
        sys.stdout.write("= %s\n\n" % ("FakeEngine" if cmd == "name" else "9.9"))
        sys.stdout.flush()
        continue
    eng.stdin.write(line)
    eng.stdin.flush()
    out = ""
    while True:
        l = eng.stdout.readline()
        if not l:
            sys.exit(0)
        out += l
        if l == "\n":
            break
    sys.stdout.write(out)
    sys.stdout.flush()
    if cmd == "quit":
        break
PY

# --- headers, versions, time control, move times; rounds go on ------------
J="$T/o.jsonl"
GGF="$T/o.ggf"
"$P" match --game othello --a greedy \
  --b "gtp:python3 $T/engine.py $P gtp --game othello --agent random" \
  --games 2 --tc 60+0.5 --event "nightly 48" --progress off \
  --record "$J" --record-ggf "$GGF" >"$T/m1.out" 2>&1
rc=$?
"$P" match --game othello --a greedy --b random --games 2 --progress off \
  --record "$J" --record-ggf "$GGF" >"$T/m2.out" 2>&1
rc2=$?
if [ $rc -eq 0 ] && [ $rc2 -eq 0 ] && python3 - "$J" <<'PY'
import json, re, sys
games = [json.loads(l) for l in open(sys.argv[1])]
assert [g["round"] for g in games] == [1, 2, 3, 4], [g["round"] for g in games]
for i, g in enumerate(games):
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", g["date"]), g
    assert g["termination"] == "normal", g
    assert len(g["ms"]) == g["plies"], g
    assert all(t is None or (isinstance(t, int) and t >= 0) for t in g["ms"]), g
    ver = {g["first"]: g["first_version"], g["second"]: g["second_version"]}
    if i < 2:
        assert g["event"] == "nightly 48" and g["time_control"] == "60+0.5", g
        gtp = [v for k, v in ver.items() if k.startswith("gtp:")]
        assert gtp == ["FakeEngine 9.9"], ver
        assert re.fullmatch(r"probs \S+", ver["greedy"]), ver
    else:
        assert "event" not in g and "time_control" not in g, g
PY
then ok "match --record: date, event, versions (the engine's own), tc, termination, ms; rounds 1-4 over two matches"
else bad "headers: exit $rc/$rc2: $(head -c 300 "$T/m1.out") $(head -c 600 "$J")"; fi

if [ "$(grep -c '^(;GM\[Othello\]PC\[probs\]DT\[[0-9.]*_[0-9:]*\.GMT\]' "$GGF")" -eq 4 ] &&
   [ "$(grep -c 'TI\[01:00/00:00.5/\]' "$GGF")" -eq 2 ] &&
   grep -q 'B\[[a-h][1-8]//[0-9]*\.[0-9]\{3\}\]' "$GGF"; then
  ok "match --record-ggf: DT, TI and the moves' times"
else bad "ggf: $(head -c 400 "$GGF")"; fi

# --- --replay reads GGF back ---------------------------------------------
for n in 1 2 3 4; do
  "$P" play --replay "$GGF:$n" --agent random </dev/null >"$T/r$n.out" 2>&1 ||
    bad "replay $GGF:$n: exit $?: $(tail -c 300 "$T/r$n.out")"
done
moves_of() { grep '^played: ' "$1" | sed 's/^played: \([a-h][1-8]\|pass\).*/\1/' | tr -d '\n'; }
want=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[1])["moves"])' "$J")
got=$(moves_of "$T/r2.out" | sed 's/pass//g')
if [ -n "$want" ] && [ "$got" = "$want" ] &&
   grep -q '^replay: game 2 of .*o.ggf: othello' "$T/r2.out" &&
   grep -q 'time control: 60+0.5' "$T/r2.out" &&
   grep -q '^played: [a-h][1-8], in [0-9]*\.[0-9]\{3\} s' "$T/r2.out" &&
   grep -q '^game over: ' "$T/r2.out"; then
  ok "play --replay FILE.ggf:2: the moves of the JSON record, the time control, each move's time"
else bad "replay ggf: want '$want', got '$got': $(head -c 400 "$T/r2.out")"; fi

# --- malformed GGF ----------------------------------------------------------
head -1 "$GGF" >"$T/bad.ggf"
echo '(;GM[Othello]PB[a]PW[b]RE[?]B[f5]B[d6];)' >>"$T/bad.ggf"
expect "replay of a GGF game with a colour out of turn: FILE:LINE, exit 2" 2 \
  'bad.ggf:2: B\[d6\] at ply 2: white \(W\) is to move' \
  "$P" play --replay "$T/bad.ggf:2" --agent random
echo '(;GM[Othello]PB[a]PW[b]RE[?]B[f5]' >"$T/cut.ggf"
expect "replay of a GGF game cut short: exit 2" 2 \
  'cut.ggf:1: GGF: the game is not closed with ";\)"' \
  "$P" play --replay "$T/cut.ggf" --agent random
echo '(;GM[Chess]RE[?];)' >"$T/chess.ggf"
expect "replay of a GGF game of another game: exit 2" 2 \
  'chess.ggf:1: GGF: GM\[Chess\]: only Othello' \
  "$P" play --replay "$T/chess.ggf" --agent random
expect "match --record onto a GGF file is refused: exit 2" 2 \
  'holds GGF games' \
  "$P" match --game othello --a random --b random --games 2 --record "$GGF"

# --- probs analyze --record ---------------------------------------------------
C4="$SRC/data/models/connect4.pbck"
"$P" match --a lookahead:2 --b random --games 2 --progress off \
  --record "$T/c4.jsonl" >/dev/null 2>&1
plies=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readlines()[1])["plies"])' "$T/c4.jsonl")
"$P" analyze --model "$C4" --record "$T/c4.jsonl:2" --nodes 20 --json \
  >"$T/an.jsonl" 2>"$T/an.err"
rc=$?
if [ $rc -eq 0 ] && python3 - "$T/an.jsonl" "$T/c4.jsonl" "$plies" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
game = json.loads(open(sys.argv[2]).readlines()[1])
n = int(sys.argv[3])
assert len(lines) == n + 1, len(lines)
assert "".join(l["played"] for l in lines[:-1]) == game["moves"]
for i, l in enumerate(lines[:-1]):
    assert l["ply"] == i and l["position"] == game["moves"][:i], l
    assert "v" in l and "abnet" in l and "played_ms" in l, l
assert "result" in lines[-1] and "played" not in lines[-1], lines[-1]
PY
then ok "analyze --record FILE:2 --json: a line a ply with the move played, the end's result"
else bad "analyze --record: exit $rc: $(head -c 300 "$T/an.err") $(head -c 300 "$T/an.jsonl")"; fi
"$P" analyze --model "$C4" --record "$T/c4.jsonl" --nodes 20 >"$T/an.txt" 2>&1
if [ "$(grep -c '^played: [1-7]' "$T/an.txt")" -ge 4 ] &&
   grep -q '^-- ply 0 of ' "$T/an.txt" && grep -q '^game over: ' "$T/an.txt"; then
  ok "analyze --record FILE: each position's analysis and the move played"
else bad "analyze text: $(head -c 300 "$T/an.txt")"; fi
expect "analyze --record past the file's games: exit 2" 2 'holds 2 games: there is no game 5' \
  "$P" analyze --model "$C4" --record "$T/c4.jsonl:5"
expect "analyze --record of another game than the model's: exit 2" 2 \
  'is othello, but the checkpoint .* plays connect4' \
  "$P" analyze --model "$C4" --record "$J"
expect "analyze --record with --position: exit 2" 2 '--record and --position' \
  "$P" analyze --model "$C4" --record "$J" --position 44

finish test_cli_record_ggf
