#!/usr/bin/env bash
# test_cli_record.sh BIN_DIR SOURCE_DIR - game records (docs/records.md)
# as a user makes and reads them:
#   - probs match --record appends a line per game (players, result,
#     moves), the same file whatever --threads; a second match appends and
#     leaves the first one's lines as they were; --openings' moves start
#     the games; --record-ggf writes Othello's games as GGF;
#   - bad input: a file that holds something else, a directory, GGF of
#     another game: refused with one line naming it, exit status 2, the
#     file unchanged;
#   - probs play --replay FILE[:N] steps through a recorded game with the
#     network's view and ends on its result; a game past the end, a bad
#     line (named FILE:LINE), a missing file, a model of another game:
#     exit 2; /dev/zero, a FIFO and a 100 MB line refused before they are
#     read whole;
#   - --record and --record-ggf refuse a symbolic link (never write
#     through it);
#   - the evaluator writes the games of each rated version to
#     RUN_DIR/games/eval-vNNNNNN.jsonl, which --replay reads;
#   - a training run with run.record_selfplay on writes its self-play games
#     to RUN_DIR/games/selfplay.jsonl (episodes_per_iter lines an
#     iteration), and none with it off.
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end
C4="$SRC/data/models/connect4.pbck"

# --- probs match --record ---------------------------------------------------
G="$T/games.jsonl"
"$P" match --a lookahead:2 --b random --games 6 --seed 4 --threads 1 \
  --record "$G" >"$T/m1.out" 2>&1
rc=$?
"$P" match --a lookahead:2 --b random --games 6 --seed 4 --threads 3 \
  --record "$T/g3.jsonl" >/dev/null 2>&1
if [ $rc -eq 0 ] && [ "$(wc -l <"$G")" -eq 6 ] &&
   grep -q '^recorded 6 games to ' "$T/m1.out" &&
   python3 - "$G" "$T/g3.jsonl" <<'PY'
import json, sys
games = [json.loads(l) for l in open(sys.argv[1])]
# The same games whatever --threads: all but the clock's members.
def clockless(gs):
    return [{k: v for k, v in g.items() if k not in ("date", "ms")} for g in gs]
assert clockless(games) == clockless(json.loads(l) for l in open(sys.argv[2]))
for i, g in enumerate(games):
    assert g["game"] == "connect4" and g["source"] == "match", g
    assert g["round"] == i + 1, g
    a_first = i % 2 == 0
    assert (g["first"], g["second"]) == (("lookahead:2", "random") if a_first
                                         else ("random", "lookahead:2")), g
    assert g["result"] in ("1-0", "0-1", "1/2-1/2"), g
    assert len(g["moves"]) == g["plies"] and g["moves"].isdigit(), g
PY
then ok "match --record: a line per game, the same whatever --threads"
else bad "match --record: exit $rc: $(head -c 400 "$T/m1.out") $(head -c 300 "$G")"; fi

# The result line's W/D/L agree with the records.
w=$(grep -c '"first":"lookahead:2".*"result":"1-0"\|"first":"random".*"result":"0-1"' "$G")
if grep -q "^result: W=$w " "$T/m1.out"; then ok "the records' wins are the match's ($w)"
else bad "records' wins $w: $(grep ^result "$T/m1.out")"; fi

cp "$G" "$T/before.jsonl"
"$P" match --a random --b random --games 2 --record "$G" >/dev/null 2>&1
if [ "$(wc -l <"$G")" -eq 8 ] && [ "$(head -6 "$G")" = "$(cat "$T/before.jsonl")" ]; then
  ok "a second match appends; the first one's lines stay"
else bad "append: $(wc -l <"$G") lines"; fi

printf '# connect4\n44\n' >"$T/open.txt"
"$P" match --a lookahead:1 --b random --openings "$T/open.txt" \
  --record "$T/open.jsonl" >/dev/null 2>&1
if [ "$(wc -l <"$T/open.jsonl")" -eq 2 ] &&
   [ "$(grep -c '"moves":"44' "$T/open.jsonl")" -eq 2 ] &&
   [ "$(grep -c '"opening_plies":2' "$T/open.jsonl")" -eq 2 ]; then
  ok "match --openings --record: the games start with the opening's moves"
else bad "openings: $(cat "$T/open.jsonl")"; fi

"$P" match --game othello --a greedy --b random --games 2 --record "$T/o.jsonl" \
  --record-ggf "$T/o.ggf" >/dev/null 2>&1
if [ "$(grep -c '^(;GM\[Othello\]PC\[probs\]DT\[[^]]*\]PB\[' "$T/o.ggf")" -eq 2 ] &&
   grep -q 'BO\[8 -------- -------- -------- ---O\*--- ---\*O--- -------- -------- -------- \*\]B\[' "$T/o.ggf" &&
   [ "$(grep -c '"game":"othello"' "$T/o.jsonl")" -eq 2 ]; then
  ok "match --record-ggf: Othello's games as GGF"
else bad "ggf: $(head -c 300 "$T/o.ggf")"; fi

# --- bad input --------------------------------------------------------------
printf 'my notes\n' >"$T/notes.txt"
expect "a file that is not a record file is refused" 2 \
  "notes.txt is not a file of game records .*refusing to append" \
  "$P" match --a random --b random --games 2 --record "$T/notes.txt"
if [ "$(cat "$T/notes.txt")" = "my notes" ]; then ok "... and left as it was"
else bad "notes.txt changed: $(cat "$T/notes.txt")"; fi
expect "a directory is refused" 2 "record: .*: cannot open for appending" \
  "$P" match --a random --b random --games 2 --record "$T"
expect "--record-ggf of connect4 is refused" 2 "GGF is for othello" \
  "$P" match --a random --b random --games 2 --record-ggf "$T/c.ggf"
[ ! -e "$T/c.ggf" ] && ok "... and makes no file" || bad "c.ggf was made"
expect "a GGF file that is not GGF is refused" 2 "not a GGF file" \
  "$P" match --game othello --a random --b random --games 2 \
  --record-ggf "$T/notes.txt"

# --- probs play --replay -----------------------------------------------------
res=$(sed -n 2p "$G" | python3 -c 'import json,sys; g=json.load(sys.stdin); print(g["result"], g["plies"])')
set -- $res
out=$("$P" play --replay "$G:2" --model "$C4" </dev/null 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q "^replay: game 2 of " <<<"$out" &&
   [ "$(grep -c '^-- ply ' <<<"$out")" -eq $(($2 + 1)) ] &&
   grep -q "^game over: .*($1)" <<<"$out" &&
   grep -q '^best by Q: ' <<<"$out" && grep -q '^played: ' <<<"$out"; then
  ok "play --replay: every position with the network's view, then the result"
else bad "replay: exit $rc: $(head -c 600 <<<"$out")"; fi
out=$(printf '3\nback\n\nq\n' | "$P" play --replay "$G:2" --agent checkpoint 2>&1)
if [ $? -eq 0 ] && [ "$(grep '^-- ply ' <<<"$out" | tr '\n' ' ')" = \
  "-- ply 0 of $2 -- -- ply 3 of $2 -- -- ply 2 of $2 -- -- ply 3 of $2 -- " ]; then
  ok "play --replay: a ply number, back, enter, quit"
else bad "replay stepping: $(grep '^-- ply' <<<"$out")"; fi
expect "--replay past the last game" 2 "holds 8 games: there is no game 9" \
  "$P" play --replay "$G:9"
printf '%s\n{"game":"connect4"}\n' "$(head -1 "$G")" >"$T/bad.jsonl"
expect "--replay of a bad line names FILE:LINE" 2 "bad.jsonl:2: no \"first\"" \
  "$P" play --replay "$T/bad.jsonl:2"
expect "--replay of a missing file" 2 "nope.jsonl: cannot read" \
  "$P" play --replay "$T/nope.jsonl"
expect "--replay with a model of another game" 2 \
  "the game is othello, but --model .* plays connect4" \
  "$P" play --replay "$T/o.jsonl" --model "$C4"
expect "--replay N of 0" 2 "game 0 of the file" "$P" play --replay "$G:0"

# Issue 46: what is not a regular file, and a line past the limit, are
# refused before they are read whole (/dev/zero and a 100 MB line read
# whole took 2.2 GB); the limit keeps memory bounded.
expect "--replay of /dev/zero is refused at once" 2 \
  "/dev/zero: cannot read: a character device, not a regular file" \
  timeout 60 "$P" play --replay /dev/zero
mkfifo "$T/fifo"
expect "--replay of a FIFO is refused without waiting for a writer" 2 \
  "fifo: cannot read: a FIFO, not a regular file" \
  timeout 60 "$P" play --replay "$T/fifo"
truncate -s 100M "$T/huge.jsonl" # sparse: one line of 100 MB
maxrss() { # maxrss_kb of the command, its exit status, its stderr
  python3 -c '
import resource, subprocess, sys
r = subprocess.run(sys.argv[1:], capture_output=True, text=True, timeout=120)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode,
      r.stderr.strip().replace("\n", " "))' "$@"
}
small=$(maxrss "$P" play --replay "$T/bad.jsonl:2")
huge=$(maxrss "$P" play --replay "$T/huge.jsonl")
set -- $small
small_kb=$1
set -- $huge
if [ "$2" -eq 2 ] && grep -q "huge.jsonl:1: a line longer than 4194304 bytes" <<<"$huge" &&
   [ $(($1 - small_kb)) -lt 65536 ]; then
  ok "--replay of a 100 MB line: refused at the limit, memory +$(($1 - small_kb)) KB"
else bad "--replay of a 100 MB line: $huge (a small file: $small_kb KB)"; fi
rm -f "$T/huge.jsonl"

# --record does not write through a symbolic link.
head -1 "$G" >"$T/target.jsonl"
cp "$T/target.jsonl" "$T/target.before"
ln -s "$T/target.jsonl" "$T/link.jsonl"
expect "--record onto a symbolic link is refused" 2 \
  "link.jsonl: a symbolic link; records are not written through links" \
  "$P" match --a random --b random --games 2 --record "$T/link.jsonl"
ln -s "$T/o.ggf" "$T/link.ggf"
expect "--record-ggf onto a symbolic link is refused" 2 "a symbolic link" \
  "$P" match --game othello --a random --b random --games 2 \
  --record-ggf "$T/link.ggf"
ln -s "$T/nowhere.jsonl" "$T/dangling.jsonl"
expect "--record onto a dangling link is refused" 2 "a symbolic link" \
  "$P" match --a random --b random --games 2 --record "$T/dangling.jsonl"
if cmp -s "$T/target.jsonl" "$T/target.before" && [ ! -e "$T/nowhere.jsonl" ]; then
  ok "... and nothing is written where the links point"
else bad "a link's target was written"; fi

# --- the evaluator's games ---------------------------------------------------
RUN="$T/evrun"
mkdir -p "$RUN/checkpoints" && cp "$C4" "$RUN/checkpoints/ckpt-000003.pbck"
"$BIN/probs-evaluator" "$SRC/configs/connect4-smoke.yaml" --run-dir "$RUN" \
  --all --no-png --no-stderr --set eval.games_per_opponent=4 \
  --set eval.accuracy=false --set eval.opponents=random,lookahead:1 \
  >"$T/ev.out" 2>&1
rc=$?
EV="$RUN/games/eval-v000003.jsonl"
if [ $rc -eq 0 ] && [ "$(wc -l <"$EV" 2>/dev/null)" = 8 ] &&
   [ "$(grep -c '"source":"eval","round":[0-9]*,"version":3,' "$EV")" -eq 8 ] &&
   [ "$(grep -c '"ckpt-000003"' "$EV")" -eq 8 ] &&
   "$P" play --replay "$EV:5" --agent checkpoint </dev/null 2>&1 |
     grep -q '^game over: '; then
  ok "the evaluator records each rated version's games; --replay reads them"
else bad "evaluator games: exit $rc: $(tail -c 300 "$T/ev.out") $(ls "$RUN/games" 2>&1)"; fi

# --- self-play games ----------------------------------------------------------
for rec in true false; do
  R="$T/run-$rec"
  "$P" train "$SRC/configs/connect4-smoke.yaml" --run-dir "$R" --actors 1 \
    --searchers 1 --no-eval --set train.iterations=2 \
    --set "run.record_selfplay=$rec" \
    --set "net.work_endpoint=ipc://$T/w-$rec" \
    --set "net.pub_endpoint=ipc://$T/p-$rec" >"$T/train-$rec.out" 2>&1
  echo $? >"$T/train-$rec.rc"
done
SP="$T/run-true/games/selfplay.jsonl"
if [ "$(cat "$T/train-true.rc")" = 0 ] &&
   python3 - "$SP" <<'PY'
import json, sys
games = [json.loads(l) for l in open(sys.argv[1])]
assert len(games) == 40, len(games)  # 20 episodes an iteration, 2 iterations
its = sorted(set(g["iteration"] for g in games))
assert its == [1, 2], its
for g in games:
    assert g["source"] == "selfplay" and g["game"] == "connect4", g
    assert g["first"] == g["second"] == "v%d" % g["version"], g
    assert g["version"] == g["iteration"] - 1, g
    assert len(g["moves"]) == g["plies"], g
PY
then ok "run.record_selfplay: every self-play game in games/selfplay.jsonl"
else bad "selfplay records: exit $(cat "$T/train-true.rc"): $(tail -c 400 "$T/train-true.out") $(head -c 300 "$SP" 2>&1)"; fi
if [ "$(cat "$T/train-false.rc")" = 0 ] && [ ! -e "$T/run-false/games" ]; then
  ok "without run.record_selfplay no games are written"
else bad "record_selfplay=false: exit $(cat "$T/train-false.rc"), $(ls "$T/run-false")"; fi
if "$P" play --replay "$SP:7" --agent checkpoint </dev/null 2>&1 |
   grep -qE '^(game over: |unfinished: )'; then
  ok "--replay reads a self-play game"
else bad "--replay of a self-play game"; fi

finish test_cli_record
