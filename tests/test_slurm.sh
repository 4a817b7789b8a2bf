#!/usr/bin/env bash
# test_slurm.sh BIN_DIR SOURCE_DIR - deploy/slurm/probs.sbatch on a one-node
# Slurm.
#
# The cluster: with SOURCE_DIR/../shared/slurm/setup.sh (the CI machines'),
# that script configures the system's Slurm, one node; without it, if
# Debian's slurm-wlm is installed, scripts/slurm-local.sh starts a private
# one with two nodes (two node daemons on this host, whose node names do not
# resolve) in a temporary directory, stopped at the end. The jobs take every
# node (up to two). Then, all through sbatch:
#
#  1. A short run (configs/connect4-smoke.yaml, 3 iterations, 1 actor and 1
#     searcher per node, CURVE on) completes: exit code 0, every checkpoint,
#     the learner's "stopped at version 3", the workers of every node
#     joined, elo.csv. Submitted again, it ends at once (nothing to do).
#  2. Bad input: no PROBS_RUN_DIR, and a learner that cannot bind its port,
#     each end the job at once, non-zero, with the reason in its output.
#  3. A longer run is cancelled (scancel) after its second checkpoint: the
#     job and every probs process stop, the learner cleanly, the newest
#     checkpoint stays. The same job submitted again resumes from that
#     checkpoint; SIGTERM to its batch script alone (what --signal=B:TERM
#     does before the time limit) stops it cleanly too; the third job
#     resumes again and completes the run.
#  4. A learner that dies (kill -9) mid-run ends the job, exit code 1, with
#     the reason in its output; the workers are stopped, nothing is left.
#
# Needs root; prints "SKIPPED: <reason>" and exits 0 without a Slurm.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_slurm.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
BIN=$(cd "$1" && pwd -P) || exit 2
SRC=$(cd "$2" && pwd) || exit 2
SBATCH_SCRIPT="$SRC/deploy/slurm/probs.sbatch"

. "$SRC/tests/cli_lib.sh" # ok, bad, check, skip, finish

for b in probs probs-learner probs-actor probs-evaluator; do
  [ -x "$BIN/$b" ] || { echo "FAIL: $BIN/$b is missing"; exit 1; }
done
[ "$(id -u)" -eq 0 ] || skip "not root: setting up a Slurm (munge, slurmctld, slurmd) needs root"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/probs-slurm.XXXXXX") || exit 2
chmod 755 "$TMP"
JOBS=()
LOCAL=""
cleanup() {
  local j i
  for j in "${JOBS[@]}"; do scancel "$j" 2>/dev/null; done
  for j in "${JOBS[@]}"; do
    for ((i = 0; i < 120; i++)); do
      [ -z "$(squeue -h -j "$j" 2>/dev/null)" ] && break
      sleep 0.5
    done
  done
  # Whatever still runs our programs (nothing, unless the above failed).
  local p
  for p in $(probs_pids); do kill -KILL "$p" 2>/dev/null; done
  [ -n "$LOCAL" ] && bash "$SRC/scripts/slurm-local.sh" stop "$LOCAL"
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Processes running a program of BIN (the jobs' learners, workers, evaluators).
probs_pids() {
  local d exe
  for d in /proc/[0-9]*; do
    exe=$(readlink "$d/exe" 2>/dev/null) || continue
    case "$exe" in "$BIN"/probs*) echo "${d#/proc/}" ;; esac
  done
}
no_probs_left() { [ -z "$(probs_pids)" ]; }

# --- the cluster ---------------------------------------------------------------

SHARED="$SRC/../shared/slurm/setup.sh"
if [ -f "$SHARED" ]; then
  echo "test_slurm: setting up Slurm with $SHARED"
  unset SLURM_CONF
  bash "$SHARED" >"$TMP/setup.log" 2>&1 || {
    cat "$TMP/setup.log"
    echo "FAIL: $SHARED failed"
    exit 1
  }
elif command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 &&
  command -v sbatch >/dev/null 2>&1 && command -v munged >/dev/null 2>&1; then
  echo "test_slurm: starting a private two-node Slurm (scripts/slurm-local.sh)"
  LOCAL="$TMP/slurm"
  out=$(bash "$SRC/scripts/slurm-local.sh" start "$LOCAL" 2 2>&1) || {
    echo "$out"
    echo "FAIL: scripts/slurm-local.sh start failed"
    exit 1
  }
  export SLURM_CONF="$LOCAL/slurm.conf"
else
  skip "no Slurm: neither ../shared/slurm/setup.sh nor slurm-wlm (apt-get install slurm-wlm)"
fi
check "the controller answers (sinfo)" bash -c 'sinfo -h -o %T | grep -qE "idle|mix|alloc"'
NODES=$(sinfo -h -N -o %N 2>/dev/null | sort -u | wc -l)
[ "$NODES" -ge 1 ] || NODES=1
[ "$NODES" -le 2 ] || NODES=2
echo "test_slurm: jobs on $NODES node(s)"

# --- helpers -------------------------------------------------------------------

export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$SRC/tests/lsan.supp}"
# Processes stopped by scancel need not report their leaks.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
CONFIG="$SRC/configs/connect4-smoke.yaml"

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# submit OUT_NAME VAR=VALUE...: sbatch the script with these variables, the
# job's id in J.
submit() {
  local name=$1
  shift
  J=$(env "$@" sbatch --parsable -N "$NODES" -D "$TMP" -o "$TMP/$name-%j.out" -J "probs-test-$$" \
    "$SBATCH_SCRIPT" 2>"$TMP/sbatch.err")
  J=${J%%;*}
  if [[ ! "$J" =~ ^[0-9]+$ ]]; then
    cat "$TMP/sbatch.err"
    J=""
    return 1
  fi
  JOBS+=("$J")
  OUT="$TMP/$name-$J.out"
}
job_field() { # job_field JOB NAME: NAME=... of scontrol show job
  scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1
}
# wait_job JOB SECONDS: until the job has ended (no longer in squeue, its
# steps gone), its state in STATE and exit code in CODE.
wait_job() {
  local end=$((SECONDS + $2))
  STATE="" CODE=""
  while [ $SECONDS -lt $end ]; do
    STATE=$(job_field "$1" JobState)
    case "$STATE" in
      PENDING | RUNNING | CONFIGURING | COMPLETING | SUSPENDED | "") ;;
      *) [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && break ;;
    esac
    sleep 0.25
  done
  CODE=$(job_field "$1" ExitCode)
}
has() { grep -q -- "$2" "$1" 2>/dev/null; }
ckpt() { printf '%s/checkpoints/ckpt-%06d.pbck' "$1" "$2"; }
newest_ckpt() { # the newest checkpoint's version, or -1 (names sort by version)
  local f v=-1
  for f in "$1"/checkpoints/ckpt-[0-9]*.pbck; do
    [ -e "$f" ] || continue
    f=${f##*/ckpt-}
    v=$((10#${f%.pbck}))
  done
  echo "$v"
}
show_out() { # the end of a job's output, for a failure
  echo "--- $1 (end)"
  tail -40 "$1" 2>/dev/null
  echo "---"
}

# --- 1. a short run --------------------------------------------------------------

RUN="$TMP/runs/short"
t0=$(now)
# PROBS_BIN left out: the programs are found on PATH.
submit short PATH="$BIN:$PATH" PROBS_RUN_DIR="$RUN" PROBS_CONFIG="$CONFIG" \
  PROBS_SET="train.iterations=3" PROBS_ACTORS_PER_NODE=1 PROBS_SEARCHERS_PER_NODE=1 ||
  { echo "FAIL: sbatch refused the short job"; exit 1; }
first=""
end=$((SECONDS + 300))
while [ $SECONDS -lt $end ]; do
  [ -z "$first" ] && [ -e "$(ckpt "$RUN" 1)" ] && first=$(since "$t0")
  [ -z "$(squeue -h -j "$J" 2>/dev/null)" ] && break
  sleep 0.2
done
wait_job "$J" 30
total=$(since "$t0")
check "short job: state COMPLETED (is '$STATE')" [ "$STATE" = COMPLETED ]
check "short job: exit code 0:0 (is '$CODE')" [ "$CODE" = 0:0 ]
check "short job: checkpoints 0..3" bash -c "for v in 0 1 2 3; do [ -s \"\$(printf '%s/checkpoints/ckpt-%06d.pbck' '$RUN' \$v)\" ] || exit 1; done"
check "short job: the learner stopped at version 3" has "$RUN/learner.log" "learner stopped at version 3"
actors=$(grep -c 'INFO  actor .* joined' "$RUN/learner.log")
searchers=$(grep -c 'INFO  searcher .* joined' "$RUN/learner.log")
check "short job: an actor and a searcher of each node joined ($actors, $searchers of $NODES), over CURVE" \
  bash -c "[ '$actors' -ge '$NODES' ] && [ '$searchers' -ge '$NODES' ] && grep -q 'CURVE on' '$RUN/learner.log'"
check "short job: the run's keys were made in the run directory" [ -s "$RUN/keys/learner.key" ]
check "short job: the workers got the learner's STOPPING" has "$OUT" "announces STOPPING"
check "short job: the evaluator wrote elo.csv" bash -c "[ \$(wc -l <'$RUN/elo.csv') -ge 2 ]"
check "short job: the script says the run is done" has "$OUT" "probs.sbatch: .* the run is done"
check "short job: no probs process left" no_probs_left
[ "$STATE" = COMPLETED ] || show_out "$OUT"
echo "time: sbatch to the first checkpoint ${first:-?} s; the whole short job (sbatch to its end) $total s"

# The same job again: nothing to do.
submit again PATH="$BIN:$PATH" PROBS_RUN_DIR="$RUN" PROBS_CONFIG="$CONFIG" \
  PROBS_SET="train.iterations=3" PROBS_ACTORS_PER_NODE=1 PROBS_SEARCHERS_PER_NODE=1 ||
  { echo "FAIL: sbatch refused a job"; exit 1; }
t1=$(now)
wait_job "$J" 120
check "a finished run submitted again: the job ends at once, exit code 0 (is '$STATE' '$CODE', after $(since "$t1") s)" \
  bash -c "[ '$STATE' = COMPLETED ] && [ '$CODE' = 0:0 ]"
check "a finished run submitted again: the output says it is complete" \
  has "$OUT" "probs.sbatch: .* the run in .* is already complete (version 3 of 3"
check "a finished run submitted again: no worker was started" bash -c "! grep -q 'actor INFO' '$OUT'"
[ "$STATE" = COMPLETED ] || show_out "$OUT"

# --- 2. bad input ------------------------------------------------------------------

submit norundir PROBS_BIN="$BIN" PROBS_CONFIG="$CONFIG" PROBS_RUN_DIR= ||
  { echo "FAIL: sbatch refused a job"; exit 1; }
wait_job "$J" 60
check "no PROBS_RUN_DIR: the job fails with exit code 2 (is '$STATE' '$CODE')" \
  bash -c "[ '$STATE' = FAILED ] && [ '$CODE' = 2:0 ]"
check "no PROBS_RUN_DIR: the output says so" has "$OUT" "probs.sbatch: PROBS_RUN_DIR is not set"

# A port something already listens on: the controller's.
busy=$(scontrol show config 2>/dev/null | sed -n 's/^SlurmctldPort *= *\([0-9]*\).*/\1/p' | head -1)
RUN_BAD="$TMP/runs/nobind"
submit nobind PROBS_BIN="$BIN" PROBS_RUN_DIR="$RUN_BAD" PROBS_CONFIG="$CONFIG" \
  PROBS_WORK_PORT="${busy:-6817}" PROBS_ACTORS_PER_NODE=1 PROBS_SEARCHERS_PER_NODE=1 ||
  { echo "FAIL: sbatch refused a job"; exit 1; }
wait_job "$J" 120
check "learner cannot bind: the job fails at once with exit code 1 (is '$STATE' '$CODE')" \
  bash -c "[ '$STATE' = FAILED ] && [ '$CODE' = 1:0 ]"
check "learner cannot bind: the output gives the learner's reason" \
  has "$OUT" "probs.sbatch: the learner cannot start (exit status 78): learner cannot start: cannot bind"
check "learner cannot bind: no worker was started" bash -c "! grep -q 'actor INFO' '$OUT'"
check "learner cannot bind: no probs process left" no_probs_left
[ "$STATE" = FAILED ] || show_out "$OUT"

# --- 3. scancel, then the same job again --------------------------------------------

RUN="$TMP/runs/long"
LONG=(PROBS_BIN="$BIN" PROBS_RUN_DIR="$RUN" PROBS_CONFIG="$CONFIG"
  PROBS_SET="train.iterations=12 train.episodes_per_iter=300"
  PROBS_ACTORS_PER_NODE=1 PROBS_SEARCHERS_PER_NODE=1)
submit long "${LONG[@]}" || { echo "FAIL: sbatch refused the long job"; exit 1; }
J1=$J
OUT1=$OUT
end=$((SECONDS + 300))
while [ $SECONDS -lt $end ] && [ ! -e "$(ckpt "$RUN" 2)" ]; do
  [ -z "$(squeue -h -j "$J1" 2>/dev/null)" ] && break
  sleep 0.2
done
seen=$(newest_ckpt "$RUN")
check "long job: checkpoint 2 written while it runs (newest $seen)" [ "$seen" -ge 2 ]
[ "$seen" -ge 2 ] || show_out "$OUT1"
t1=$(now)
scancel "$J1"
wait_job "$J1" 120
check "scancel: the job is CANCELLED (is '$STATE', after $(since "$t1") s)" [ "$STATE" = CANCELLED ]
check "scancel: no probs process left" no_probs_left
after=$(newest_ckpt "$RUN")
check "scancel: the newest checkpoint is still there ($after >= $seen)" [ "$after" -ge "$seen" ]
check "scancel: the learner stopped on SIGTERM" has "$RUN/learner.log" "SIGTERM: stopping"
check "scancel: no checkpoint left half-written" bash -c "! ls '$RUN/checkpoints' | grep -qv -E '^ckpt-[0-9]+\\.pbck\$'"
check "scancel: the learner stopped cleanly (its last words, exit status 0)" \
  bash -c "sed -n '/SIGTERM: stopping/,\$p' '$RUN/learner.log' | grep -q 'learner stopped at version' && grep -q 'stopped by SIGTERM (learner exit status 0)' '$OUT1'"
[ "$STATE" = CANCELLED ] || show_out "$OUT1"

# resumed_since OFFSET: the version the learner resumed from after byte
# OFFSET of learner.log ("" if it did not).
resumed_since() {
  tail -c +$(($1 + 1)) "$RUN/learner.log" |
    sed -n 's/.*resumed from .*ckpt-[0-9]*\.pbck: version \([0-9]*\).*/\1/p' | head -1
}

offset=$(stat -c %s "$RUN/learner.log")
submit long "${LONG[@]}" || { echo "FAIL: sbatch refused the resubmitted job"; exit 1; }
J2=$J
OUT2=$OUT
want=$((after + 2))
end=$((SECONDS + 300))
while [ $SECONDS -lt $end ] && [ "$(newest_ckpt "$RUN")" -lt "$want" ]; do
  [ -z "$(squeue -h -j "$J2" 2>/dev/null)" ] && break
  sleep 0.2
done
resumed=$(resumed_since "$offset")
check "resubmitted: the learner resumed from checkpoint ${resumed:-none} (newest was $after, seen $seen)" \
  bash -c "[ -n '$resumed' ] && [ '$resumed' -ge '$seen' ] && [ '$resumed' -eq '$after' ]"
check "resubmitted: the job's output says where it resumed" has "$OUT2" "probs.sbatch: .* the learner is up .*resumed from"
seen=$(newest_ckpt "$RUN")
check "resubmitted: it trains on (checkpoint $seen >= $want)" [ "$seen" -ge "$want" ]
# What --signal=B:TERM@120 does near the time limit: SIGTERM to the batch
# script alone; it passes it on.
t1=$(now)
scancel --batch --signal=TERM "$J2"
wait_job "$J2" 120
check "SIGTERM to the batch script: the job ends, exit code 143 (is '$STATE' '$CODE', after $(since "$t1") s)" \
  bash -c "[ '$CODE' = 143:0 ]"
check "SIGTERM to the batch script: the learner stopped cleanly" \
  bash -c "grep -q 'got SIGTERM: stopping the run' '$OUT2' && grep -q 'stopped by SIGTERM (learner exit status 0)' '$OUT2'"
check "SIGTERM to the batch script: no probs process left" no_probs_left
after=$(newest_ckpt "$RUN")
check "SIGTERM to the batch script: the newest checkpoint is still there ($after >= $seen)" [ "$after" -ge "$seen" ]
[ "$CODE" = 143:0 ] || show_out "$OUT2"

offset=$(stat -c %s "$RUN/learner.log")
submit long "${LONG[@]}" || { echo "FAIL: sbatch refused the resubmitted job"; exit 1; }
J3=$J
OUT3=$OUT
wait_job "$J3" 600
resumed=$(resumed_since "$offset")
check "third job: the learner resumed from checkpoint ${resumed:-none} (newest was $after)" \
  bash -c "[ -n '$resumed' ] && [ '$resumed' -eq '$after' ]"
check "third job: state COMPLETED, exit code 0:0 (is '$STATE' '$CODE')" \
  bash -c "[ '$STATE' = COMPLETED ] && [ '$CODE' = 0:0 ]"
check "third job: the learner stopped at version 12" has "$RUN/learner.log" "learner stopped at version 12"
check "third job: no probs process left" no_probs_left
[ "$STATE" = COMPLETED ] || show_out "$OUT3"

# --- 4. the learner dies -------------------------------------------------------------

RUN="$TMP/runs/killed"
submit killed PROBS_BIN="$BIN" PROBS_RUN_DIR="$RUN" PROBS_CONFIG="$CONFIG" \
  PROBS_SET="train.iterations=50 train.episodes_per_iter=300" \
  PROBS_ACTORS_PER_NODE=1 PROBS_SEARCHERS_PER_NODE=1 ||
  { echo "FAIL: sbatch refused a job"; exit 1; }
end=$((SECONDS + 300))
while [ $SECONDS -lt $end ] && [ ! -e "$(ckpt "$RUN" 1)" ]; do
  [ -z "$(squeue -h -j "$J" 2>/dev/null)" ] && break
  sleep 0.2
done
learner=""
for p in $(probs_pids); do
  if [ "$(readlink "/proc/$p/exe")" = "$BIN/probs-learner" ] &&
    tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | grep -qxF "$RUN"; then
    learner=$p
  fi
done
check "learner killed: found the running learner (pid ${learner:-none})" [ -n "$learner" ]
[ -n "$learner" ] && kill -KILL "$learner"
wait_job "$J" 120
check "learner killed: the job fails with exit code 1 (is '$STATE' '$CODE')" \
  bash -c "[ '$STATE' = FAILED ] && [ '$CODE' = 1:0 ]"
check "learner killed: the output says the learner failed" \
  has "$OUT" "probs.sbatch: the learner failed (exit status 137)"
check "learner killed: no probs process left (the workers were stopped)" no_probs_left
[ "$STATE" = FAILED ] || show_out "$OUT"

finish
