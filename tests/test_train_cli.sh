#!/usr/bin/env bash
# test_train_cli.sh BIN_DIR SOURCE_DIR - `probs train` as the process tree
# of a run: SIGKILL of probs train leaves no learner, worker or evaluator
# behind (each child asks the kernel for SIGTERM when its parent dies), a
# second learner on the same run dir is refused naming the first one's
# pid, and the killed run resumes; a run with small run.keep_last /
# run.keep_every keeps exactly the checkpoints it should, and resumes; a
# plain re-run into a run dir that holds a run (checkpoints or history) is
# refused by probs train (both modes) and by the learner, every file left
# as it was; every start has its own run id, and workers given one are
# refused by a learner of another start of the same config.
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end

# Whatever the test started dies with it (a failure, Ctrl-C, a timeout).
on_exit 'kill -9 $(cat "$T"/pids 2>/dev/null) 2>/dev/null; rm -rf "$T"'

# alive PID: running and not a zombie
alive() { [ -r "/proc/$1/stat" ] && ! awk '{ exit ($3 == "Z") ? 0 : 1 }' "/proc/$1/stat"; }

RUN="$T/run"
EP=(--set "net.work_endpoint=ipc://$T/work" --set "net.pub_endpoint=ipc://$T/pub")
"$P" train "$SRC/configs/connect4-smoke.yaml" --run-dir "$RUN" \
  --set train.iterations=40 --actors 1 --searchers 1 "${EP[@]}" \
  >"$T/train1.out" 2>&1 &
TRAIN=$!
for _ in $(seq 1 600); do
  grep -q '"event":"iteration"' "$RUN/metrics.jsonl" 2>/dev/null && break
  sleep 0.1
done
grep -q '"event":"iteration"' "$RUN/metrics.jsonl" 2>/dev/null \
  && ok "the run makes its first iteration" || bad "no iteration in 60 s"
PIDS=$(sed -n 's/.*started [a-z0-9-]* (pid \([0-9]*\)).*/\1/p' "$RUN/logs/train.log")
echo $PIDS >"$T/pids"
[ -n "$PIDS" ] && ok "children: $(echo $PIDS)" || bad "no child pids in train.log"

# A second learner on the same run dir, while the first holds it.
timeout 30 "$BIN/probs-learner" "$SRC/configs/connect4-smoke.yaml" --run-dir "$RUN" --resume \
  --set "net.work_endpoint=ipc://$T/work2" --set "net.pub_endpoint=ipc://$T/pub2" \
  >"$T/second.out" 2>&1
rc=$?
if [ "$rc" -eq 78 ] && grep -q "in use by another learner.*pid [0-9]" "$T/second.out"; then
  ok "a second learner on the run dir is refused (exit 78)"
else bad "second learner: exit $rc: $(tail -c 300 "$T/second.out")"; fi

kill -9 "$TRAIN"
wait "$TRAIN" 2>/dev/null
left=""
for _ in $(seq 1 100); do
  left=""
  for p in $PIDS; do alive "$p" && left="$left $p"; done
  [ -z "$left" ] && break
  sleep 0.1
done
[ -z "$left" ] && ok "SIGKILL of probs train leaves no child behind" \
  || bad "still running after 10 s:$left"

"$P" train "$SRC/configs/connect4-smoke.yaml" --run-dir "$RUN" --resume \
  --set train.iterations=3 --actors 1 --searchers 1 --no-eval "${EP[@]}" \
  >"$T/train2.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q "resumed from" "$RUN/learner.log"; then
  ok "the run resumes after the kill"
else bad "resume: exit $rc: $(tail -c 400 "$T/train2.out")"; fi

# Two runs side by side with the same config and ports: the second finds
# them taken, moves to free ones (said on stderr), and each run keeps its
# own workers. The ports are two the kernel gives (never a guess in its
# ephemeral range, which a busy machine may be using).
read -r PA PB <<<"$(free_ports 2)"
[ -n "$PB" ] || bad "no free ports from the kernel (python3?)"
TWO=(--set "net.work_endpoint=tcp://127.0.0.1:$PA" \
     --set "net.pub_endpoint=tcp://127.0.0.1:$PB" \
     --actors 1 --searchers 1 --no-eval)
# A runs long enough to be running still when B starts.
"$P" train "$SRC/configs/connect4-smoke.yaml" --run-dir "$T/runA" "${TWO[@]}" \
  --set train.iterations=30 \
  >"$T/a.out" 2>"$T/a.err" &
A=$!
echo "$A" >>"$T/pids"
for _ in $(seq 1 300); do
  grep -q "joined" "$T/runA/learner.log" 2>/dev/null && break
  sleep 0.1
done
"$P" train "$SRC/configs/connect4-smoke.yaml" --run-dir "$T/runB" "${TWO[@]}" \
  --set train.iterations=3 >"$T/b.out" 2>"$T/b.err"
rb=$?
wait "$A"
ra=$?
if [ "$ra" -eq 0 ] && [ "$rb" -eq 0 ] && grep -q "iteration 30/30" "$T/a.out" \
   && grep -q "iteration 3/3" "$T/b.out"; then
  ok "two runs with the same ports both finish"
else bad "two runs: exit $ra/$rb: $(tail -c 300 "$T/a.err") / $(tail -c 300 "$T/b.err")"; fi
grep -q "port $PA (net.work_endpoint) is in use" "$T/b.err" \
  && grep -q "port $PB (net.pub_endpoint) is in use" "$T/b.err" \
  && ok "the second run says it moved to free ports" \
  || bad "no port message: $(head -c 400 "$T/b.err")"
na=$(grep -c "joined" "$T/runA/learner.log")
nb=$(grep -c "joined" "$T/runB/learner.log")
[ "$na" -eq 2 ] && [ "$nb" -eq 2 ] && ok "each learner saw only its own two workers" \
  || bad "joined: run A $na, run B $nb (want 2 each)"

# A device a role cannot use: one clear error at start naming the role's
# key, exit 78, and probs train stops the run with that message instead of
# restarting the child. (On a machine with CUDA these only skip.)
timeout 20 "$BIN/probs-actor" "$SRC/configs/connect4-smoke.yaml" --role selfplay \
  --set model.actor_device=cuda --set "net.work_endpoint=ipc://$T/dw" \
  --set "net.pub_endpoint=ipc://$T/dp" >"$T/dev-actor.out" 2>&1
arc=$?
if grep -q "CUDA is not available" "$T/dev-actor.out"; then
  [ "$arc" -eq 78 ] \
    && grep -q "model.actor_device 'cuda' (the actor)" "$T/dev-actor.out" \
    && ok "an actor on a device it cannot use: exit 78 naming model.actor_device" \
    || bad "actor device: exit $arc: $(tail -c 300 "$T/dev-actor.out")"
else
  ok "skipped: this machine has CUDA (the actor started on cuda)"
fi
timeout 120 "$P" train "$SRC/configs/connect4-smoke.yaml" --run-dir "$T/devrun" \
  --set model.searcher_device=cuda --actors 1 --searchers 1 --no-eval \
  --set train.iterations=2 --set "net.work_endpoint=ipc://$T/dw2" \
  --set "net.pub_endpoint=ipc://$T/dp2" >"$T/dev.out" 2>"$T/dev.err"
rc=$?
if grep -q "CUDA is not available" "$T/devrun/logs/"*.log 2>/dev/null; then
  [ "$rc" -ne 0 ] && grep -q "model.searcher_device 'cuda' (the searcher)" "$T/dev.err" \
    && [ "$(grep -c "started searcher" "$T/devrun/logs/train.log")" -eq 1 ] \
    && ok "probs train with a searcher device it cannot use stops at once, saying why" \
    || bad "searcher device: exit $rc: $(tail -c 400 "$T/dev.err")"
else
  ok "skipped: this machine has CUDA (the searcher started)"
fi

# Checkpoint retention in a distributed run (the learner prunes after each
# checkpoint): keep the last 2 and every 3rd, plus version 0.
ckpts() { (cd "$1/checkpoints" && ls) | tr '\n' ' '; }
RUN2="$T/retain"
"$P" train "$SRC/configs/connect4-smoke.yaml" --run-dir "$RUN2" \
  --set train.iterations=5 --set run.keep_last=2 --set run.keep_every=3 \
  --actors 1 --searchers 1 --no-eval "${EP[@]}" >"$T/train3.out" 2>&1
rc=$?
got=$(ckpts "$RUN2")
want="ckpt-000000.pbck ckpt-000003.pbck ckpt-000004.pbck ckpt-000005.pbck "
if [ "$rc" -eq 0 ] && [ "$got" = "$want" ]; then
  ok "keep_last 2, keep_every 3: exactly 0, 3, 4, 5 are left"
else bad "retention: exit $rc, files: $got"; fi
n=$(grep -c "deleted checkpoint .*ckpt-00000[12].pbck" "$RUN2/learner.log")
[ "$n" -eq 2 ] && ok "each deletion is logged with the file name" \
  || bad "deletions logged: $n"
"$P" train "$SRC/configs/connect4-smoke.yaml" --run-dir "$RUN2" --resume \
  --set train.iterations=7 --set run.keep_last=2 --set run.keep_every=3 \
  --actors 1 --searchers 1 --no-eval "${EP[@]}" >"$T/train4.out" 2>&1
rc=$?
got=$(ckpts "$RUN2")
want="ckpt-000000.pbck ckpt-000003.pbck ckpt-000006.pbck ckpt-000007.pbck "
if [ "$rc" -eq 0 ] && [ "$got" = "$want" ] &&
   grep -q "resumed from .*ckpt-000005.pbck" "$RUN2/learner.log"; then
  ok "the pruned run resumes from 5 and ends with 0, 3, 6, 7"
else bad "resume after pruning: exit $rc, files: $got"; fi

# --- a plain re-run never writes over a run --------------------------------
# Every file and directory of a run dir: path, size, mtime, and contents.
snap() {
  (cd "$1" && find . -printf '%p %s %T@\n' | sort &&
     find . -type f -exec md5sum {} + | sort)
}
C4="$SRC/configs/connect4-smoke.yaml"
# refused_run WHAT DIR COMMAND...: exit 78, a message naming DIR, --resume and
# --restart, and not a byte of DIR changed.
refused_run() {
  local what=$1 dir=$2 before out rc
  shift 2
  before=$(snap "$dir")
  out=$(timeout 60 "$@" 2>&1)
  rc=$?
  if [ "$rc" -eq 78 ] && grep -qF -- "$dir already holds a run" <<<"$out" &&
     grep -q -- "--resume continues that run; --restart" <<<"$out"; then
    ok "$what: refused (exit 78), naming the run dir, --resume and --restart"
  else bad "$what: exit $rc: $(head -c 400 <<<"$out")"; fi
  [ "$(snap "$dir")" = "$before" ] && ok "$what: every file left as it was" \
    || bad "$what: the run dir changed"
}
refused_run "probs train again on a finished run" "$RUN2" \
  "$P" train "$C4" --run-dir "$RUN2" --set train.iterations=7 --actors 1 \
  --searchers 1 --no-eval "${EP[@]}"
refused_run "probs train --inproc again on it" "$RUN2" \
  "$P" train "$C4" --inproc --run-dir "$RUN2" --set train.iterations=7
refused_run "probs-learner without --resume on it" "$RUN2" \
  "$BIN/probs-learner" "$C4" --run-dir "$RUN2" "${EP[@]}"
# History without checkpoints (metrics.jsonl and elo.csv of a run whose
# checkpoints are gone) is a run too.
HIST="$T/history"
mkdir -p "$HIST"
cp "$RUN2/metrics.jsonl" "$HIST/"
printf 'iteration,version,elo\n1,1,100\n' >"$HIST/elo.csv"
refused_run "probs train on history without checkpoints" "$HIST" \
  "$P" train "$C4" --run-dir "$HIST" --actors 1 --searchers 1 --no-eval "${EP[@]}"
refused_run "probs train --inproc on history without checkpoints" "$HIST" \
  "$P" train "$C4" --inproc --run-dir "$HIST"
# An empty run dir (made beforehand) starts as an absent one does.
mkdir -p "$T/empty"
"$P" train "$C4" --inproc --run-dir "$T/empty" --set train.iterations=1 \
  >"$T/empty.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '"event":"iteration"' "$T/empty/metrics.jsonl")" -eq 1 ] \
  && ok "an empty run dir starts a run" || bad "empty run dir: exit $rc: $(tail -c 300 "$T/empty.out")"

# --- one run id per start ---------------------------------------------------
# probs train hands the run id it made to the learner (RUN_DIR/run-id) and
# to its workers, which joined that start.
ID2=$(cat "$RUN2/run-id" 2>/dev/null)
if [[ "$ID2" =~ ^c4-smoke-[0-9a-f]{8}$ ]] &&
   grep -q "run id $ID2" "$RUN2/learner.log" &&
   grep -q "hello accepted: run 'c4-smoke', run id $ID2" "$RUN2/logs/actor-0.log" &&
   grep -q "hello accepted: run 'c4-smoke', run id $ID2" "$RUN2/logs/searcher-0.log"; then
  ok "probs train: run id $ID2 in run-id, the learner's log and its workers'"
else bad "run id of $RUN2: '$ID2'"; fi
# Two learners of one config (starts A and B). B's workers, pointed at A,
# are refused, say so with both run ids, and exit 78; A takes none of their
# work and finishes with its own workers: one given A's run id, one given
# none (as in deploy/, joining any learner of run.name).
EA=(--set "net.work_endpoint=ipc://$T/ida-work" --set "net.pub_endpoint=ipc://$T/ida-pub"
    --set net.http_port=0)
EB=(--set "net.work_endpoint=ipc://$T/idb-work" --set "net.pub_endpoint=ipc://$T/idb-pub"
    --set net.http_port=0)
"$BIN/probs-learner" "$C4" --run-dir "$T/idA" --set train.iterations=2 "${EA[@]}" \
  >"$T/idA.out" 2>&1 &
LA=$!
"$BIN/probs-learner" "$C4" --run-dir "$T/idB" --set train.iterations=2 "${EB[@]}" \
  >"$T/idB.out" 2>&1 &
LB=$!
echo "$LA $LB" >>"$T/pids"
for _ in $(seq 1 300); do
  grep -q "run id" "$T/idA/learner.log" 2>/dev/null &&
    grep -q "run id" "$T/idB/learner.log" 2>/dev/null && break
  sleep 0.1
done
IDA=$(cat "$T/idA/run-id" 2>/dev/null) IDB=$(cat "$T/idB/run-id" 2>/dev/null)
if [[ "$IDA" =~ ^c4-smoke-[0-9a-f]{8}$ ]] && [[ "$IDB" =~ ^c4-smoke-[0-9a-f]{8}$ ]] &&
   [ "$IDA" != "$IDB" ]; then
  ok "two starts of one config: run ids $IDA and $IDB"
else bad "run ids: '$IDA' '$IDB'"; fi
for role in selfplay search; do
  timeout 60 "$BIN/probs-actor" "$C4" --role $role --id "b-$role" --run-id "$IDB" \
    "${EA[@]}" >"$T/b-$role.out" 2>&1
  rc=$?
  if [ "$rc" -eq 78 ] &&
     grep -q "failed: the learner at ipc://$T/ida-work is run id $IDA, but this worker was given run id $IDB" \
       "$T/b-$role.out"; then
    ok "a $role worker of start B at learner A: exit 78, naming both run ids"
  else bad "$role worker of B at A: exit $rc: $(tail -c 300 "$T/b-$role.out")"; fi
done
n=$(grep -c "refused .* b-.*given run id $IDB, this learner is run id $IDA" "$T/idA/learner.log")
[ "$n" -eq 2 ] && ok "learner A logs both refusals" || bad "refusals in A's log: $n"
"$BIN/probs-actor" "$C4" --role selfplay --id a-actor --run-id "$IDA" "${EA[@]}" \
  >"$T/a-actor.out" 2>&1 &
WA=$!
"$BIN/probs-actor" "$C4" --role search --id a-searcher "${EA[@]}" \
  >"$T/a-searcher.out" 2>&1 &
WS=$!
echo "$WA $WS" >>"$T/pids"
# reap PID SECONDS: its exit status, SIGKILLed (137) if it runs longer.
reap() {
  for _ in $(seq 1 $(($2 * 10))); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$1" 2>/dev/null
  wait "$1"
}
reap "$LA" 180
ra=$?
reap "$WA" 30
wa=$?
reap "$WS" 30
ws=$?
joined=$(grep "joined" "$T/idA/learner.log" | sed 's/.* \(actor\|searcher\) \([^ ]*\) joined.*/\2/' | sort | paste -sd' ')
if [ "$ra" -eq 0 ] && [ "$wa" -eq 0 ] && [ "$ws" -eq 0 ] &&
   [ "$(grep -c '"event":"iteration"' "$T/idA/metrics.jsonl")" -eq 2 ] &&
   [ "$joined" = "a-actor a-searcher" ]; then
  ok "learner A finishes with its own workers only (joined: $joined)"
else bad "run A: exit $ra, workers $wa/$ws, joined '$joined'"; fi
kill -TERM "$LB"
reap "$LB" 30
rb=$?
[ "$rb" -eq 0 ] && ! grep -q "joined" "$T/idB/learner.log" \
  && ok "learner B stops cleanly, nobody joined it" || bad "learner B: exit $rb"

finish test_train_cli
