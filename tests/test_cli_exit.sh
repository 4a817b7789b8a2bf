#!/usr/bin/env bash
# test_cli_exit.sh - one exit status per kind of outcome across the probs
# commands (README, "Exit status"): a checkpoint named on the command line
# that cannot be used is bad input (2) for every command; a bad value gets
# its message without the usage text; probs train stopped by Ctrl-C exits
# 130, by SIGTERM 143, distributed or --inproc, once its processes are gone.
# Usage: test_cli_exit.sh BIN_DIR SOURCE_DIR
BIN=$1
SRC=$2
. "$SRC/tests/cli_lib.sh"
T=$(mktemp -d /tmp/probs-test-exit-XXXXXX)
on_exit "rm -rf '$T'"
P="$BIN/probs"
NOCK=$T/none.pbck

expect "analyze: a missing checkpoint is bad input" 2 "none.pbck" \
  "$P" analyze --model "$NOCK" --position 4
expect "search: a missing checkpoint is bad input" 2 "none.pbck" \
  "$P" search --model "$NOCK" --position 4
expect "export: a missing checkpoint is bad input" 2 "none.pbck" \
  "$P" export "$NOCK" "$T/x.pt"
expect "match: a missing checkpoint is bad input" 2 "none.pbck" \
  "$P" match --a "checkpoint:$NOCK" --b random --games 2
expect "gtp: a missing checkpoint is bad input" 2 "none.pbck" \
  "$P" gtp --model "$NOCK"
echo "not a checkpoint" > "$T/junk.pbck"
expect "analyze: a corrupt checkpoint is bad input" 2 "junk.pbck" \
  "$P" analyze --model "$T/junk.pbck" --position 4

out=$("$P" perft --game nosuch --depth 2 2>&1)
rc=$?
if [ "$rc" = 2 ] && grep -q "unknown game 'nosuch'" <<<"$out" && ! grep -q "usage:" <<<"$out"; then
  ok "perft: a bad value gets its message, not the usage"
else
  bad "perft --game nosuch: exit $rc, output: $out"
fi
expect "perft: an unknown option gets the usage" 2 "usage: probs perft" \
  "$P" perft --bogus 1

# stop_train NAME SIGNAL WANT ARGS...: starts probs train ARGS in its own
# process group (as a terminal runs a command: SIGINT not ignored), sends
# SIGNAL once the first iteration is done, and checks the exit status and
# that no process of it had to be killed.
# Each call has its own output file, empty before the command starts: a
# file of an earlier call would already hold "iteration 1", and the signal
# would reach the shell forked for the command before it runs probs.
set -m
RUNS=0
stop_train() {
  local name=$1 sig=$2 want=$3
  shift 3
  RUNS=$((RUNS + 1))
  local out="$T/train-$RUNS.out"
  : > "$out"
  "$P" train "$@" > "$out" 2>&1 &
  local pid=$! t=0
  while [ $t -lt 600 ] && ! grep -qE "iteration 1(/|:)" "$out" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
    t=$((t + 1))
  done
  kill -s "$sig" "$pid"
  local rc
  wait "$pid"
  rc=$?
  if [ "$rc" = "$want" ] && ! grep -q "still running: SIGKILL" "$out"; then
    ok "$name: SIG$sig -> exit $rc"
  else
    bad "$name: SIG$sig -> exit $rc, expected $want; $(tail -5 "$out")"
  fi
}
stop_train "train --inproc" INT 130 "$SRC/configs/tictactoe.yaml" --inproc \
  --run-dir "$T/inproc-int" --set train.iterations=100000
stop_train "train --inproc" TERM 143 "$SRC/configs/tictactoe.yaml" --inproc \
  --run-dir "$T/inproc-term" --set train.iterations=100000
read -r W PUB <<<"$(free_ports 2)"
stop_train "train (distributed)" INT 130 "$SRC/configs/connect4-smoke.yaml" \
  --run-dir "$T/dist" --set train.iterations=100000 \
  --set "net.work_endpoint=tcp://127.0.0.1:$W" \
  --set "net.pub_endpoint=tcp://127.0.0.1:$PUB"
[ -n "$(descendants $$)" ] && bad "processes left behind: $(descendants $$)" ||
  ok "nothing left running"
finish test_cli_exit
