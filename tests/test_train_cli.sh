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
