#!/usr/bin/env bash
# test_train_cli.sh BIN_DIR SOURCE_DIR - `probs train` as the process tree
# of a run: SIGKILL of probs train leaves no learner, worker or evaluator
# behind (each child asks the kernel for SIGTERM when its parent dies), a
# second learner on the same run dir is refused naming the first one's
# pid, and the killed run resumes; a run with small run.keep_last /
# run.keep_every keeps exactly the checkpoints it should, and resumes.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_train_cli.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
BIN=$(cd "$1" && pwd) || exit 2
SRC=$(cd "$2" && pwd) || exit 2
P="$BIN/probs"
T=$(mktemp -d /tmp/pb_test_train_XXXXXX)
trap 'kill -9 $(cat "$T"/pids 2>/dev/null) 2>/dev/null; rm -rf "$T"' EXIT

. "$SRC/tests/cli_lib.sh"

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
timeout 30 "$BIN/probs-learner" "$SRC/configs/connect4-smoke.yaml" --run-dir "$RUN" \
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
# own workers.
PA=$((20000 + RANDOM % 20000))
TWO=(--set "net.work_endpoint=tcp://127.0.0.1:$PA" \
     --set "net.pub_endpoint=tcp://127.0.0.1:$((PA + 1))" \
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
  && grep -q "port $((PA + 1)) (net.pub_endpoint) is in use" "$T/b.err" \
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

finish test_train_cli
