#!/usr/bin/env bash
# test_netns.sh BIN_DIR SOURCE_DIR - a multi-host run on one machine.
#
# Three network namespaces stand for three hosts: the learner's, and two
# worker hosts, each joined to the learner's by a veth pair. Addresses are
# from 10.231.0.0/16 and exist only inside these namespaces; no traffic
# leaves them. Every process is started through deploy/entrypoint.sh, the
# containers' command, with the settings a compose file would give it.
#
#  1. A short run (3 iterations) completes: learner in L, one actor and one
#     searcher in each of A and B, talking TCP across the namespaces.
#  2. The learner restarts on the same run directory with more iterations
#     (resume), and mid-run host B's link is cut (ip link set DEV down) for
#     longer than a lease, then restored: the learner keeps going with A,
#     and the run completes.
#
# Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN) and iproute2; prints
# "SKIPPED: <reason>" and exits 0 where namespaces cannot be made.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_netns.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
BIN=$(cd "$1" && pwd) || exit 2
SRC=$(cd "$2" && pwd) || exit 2
EP="$SRC/deploy/entrypoint.sh"

. "$SRC/tests/cli_lib.sh" # ok, bad, check, skip, finish

command -v ip >/dev/null 2>&1 || skip "no 'ip' command (iproute2)"
[ "$(id -u)" -eq 0 ] || skip "not root: network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN"
for b in probs-learner probs-actor; do
  [ -x "$BIN/$b" ] || { echo "FAIL: $BIN/$b is missing"; exit 1; }
done

# Unique names: other runs of this test may be going on at the same time.
NS_L="pbl$$"
NS_A="pba$$"
NS_B="pbb$$"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/probs-netns.XXXXXX") || exit 2
PIDS=()
NAMESPACES=()
cleanup() {
  local p n
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 20); do kill -0 "$p" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$p" 2>/dev/null
  done
  # Anything still running inside our namespaces (started through them).
  for n in "${NAMESPACES[@]}"; do
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  done
  for n in "${NAMESPACES[@]}"; do ip netns delete "$n" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! err=$(ip netns add "$NS_L" 2>&1); then
  skip "cannot create a network namespace: $err"
fi
NAMESPACES+=("$NS_L")
for n in "$NS_A" "$NS_B"; do
  ip netns add "$n" || { echo "FAIL: ip netns add $n"; exit 1; }
  NAMESPACES+=("$n")
done

# L <-> A on 10.231.1.0/24, L <-> B on 10.231.2.0/24. The veth ends are
# created directly inside the namespaces, so no name ever appears on the
# host.
setup_link() { # setup_link NS SUBNET_OCTET
  local ns=$1 k=$2
  ip link add "pbw$k" netns "$NS_L" type veth peer name eth0 netns "$ns" || return 1
  ip -n "$NS_L" addr add "10.231.$k.1/24" dev "pbw$k" || return 1
  ip -n "$ns" addr add "10.231.$k.2/24" dev eth0 || return 1
  ip -n "$NS_L" link set "pbw$k" up || return 1
  ip -n "$ns" link set eth0 up || return 1
  ip -n "$ns" link set lo up || return 1
}
if ! err=$(ip link add "pbt$$a" netns "$NS_L" type veth peer name "pbt$$b" netns "$NS_A" 2>&1); then
  skip "cannot create veth pairs: $err"
fi
ip -n "$NS_L" link del "pbt$$a" 2>/dev/null
ip -n "$NS_L" link set lo up || { echo "FAIL: lo in $NS_L"; exit 1; }
setup_link "$NS_A" 1 || { echo "FAIL: link to $NS_A"; exit 1; }
setup_link "$NS_B" 2 || { echo "FAIL: link to $NS_B"; exit 1; }

# Can a worker host reach the learner's host? (bash's /dev/tcp; a refused
# connection also proves the path is up, so look at the error.)
reach() { # reach NS ADDR PORT
  local out
  out=$(ip netns exec "$1" timeout 3 bash -c "exec 3<>/dev/tcp/$2/$3" 2>&1) && return 0
  grep -q -i "refused" <<<"$out"
}
check "host A reaches the learner's host" reach "$NS_A" 10.231.1.1 9
check "host B reaches the learner's host" reach "$NS_B" 10.231.2.1 9
check "host A cannot reach host B (separate links)" bash -c "! ip netns exec $NS_A timeout 3 bash -c 'exec 3<>/dev/tcp/10.231.2.2/9' 2>/dev/null"

export PATH="$BIN:$PATH"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$SRC/tests/lsan.supp}"
# Processes killed by the cleanup need not report their leaks.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export PROBS_CONFIG="$SRC/configs/connect4-smoke.yaml" PROBS_RUNS="$TMP/runs" \
  PROBS_RUN_NAME=netns PROBS_STATE_DIR="$TMP" PROBS_HTTP_PORT=8080 \
  PROBS_WORK_PORT=5555 PROBS_PUB_PORT=5556 PROBS_IDLE_WHEN_DONE=0 \
  PROBS_SET="net.lease_ms=2000 net.heartbeat_ms=300 eval.enabled=false"
RUN="$TMP/runs/netns"

wait_for() { # wait_for SECONDS COMMAND...
  local end=$((SECONDS + $1))
  shift
  while [ $SECONDS -lt $end ]; do "$@" && return 0; sleep 0.25; done
  return 1
}
exited() { ! kill -0 "$1" 2>/dev/null; }
status_of() { # status_of PID SECONDS: its exit status in rc
  if wait_for "$2" exited "$1"; then
    wait "$1"
    rc=$?
  else
    rc=timeout
  fi
}
# The learner's version, from GET /status inside its namespace.
version() {
  ip netns exec "$NS_L" curl -fsS -m 3 "http://127.0.0.1:$PROBS_HTTP_PORT/status" 2>/dev/null |
    sed -n 's/.*"version": *\([0-9][0-9]*\).*/\1/p'
}

start_learner() { # start_learner ITERATIONS LOG [KEY=VALUE...]
  local it=$1 log=$2
  shift 2
  PROBS_ITERATIONS=$it PROBS_SET="$PROBS_SET $*" \
    ip netns exec "$NS_L" bash "$EP" learner >"$log" 2>&1 &
  L=$!
  PIDS+=("$L")
}
WORKERS=()
start_workers() { # start_workers TAG: an actor and a searcher on A and B
  local ns k role
  WORKERS=()
  for ns in "$NS_A" "$NS_B"; do
    k=1
    [ "$ns" = "$NS_B" ] && k=2
    for role in actor searcher; do
      PROBS_LEARNER="10.231.$k.1" ip netns exec "$ns" bash "$EP" "$role" \
        >"$TMP/$1-$role-$k.log" 2>&1 &
      WORKERS+=($!)
      PIDS+=($!)
    done
  done
}

# --- 1. a short run across three hosts --------------------------------------

echo "== 1. a short run across three namespaces"
start_learner 3 "$TMP/learner1.log"
start_workers run1
check "the learner answers /status in its namespace" wait_for 120 bash -c "ip netns exec $NS_L bash '$EP' health"
status_of "$L" 300
check "run 1: the learner finishes with status 0 (was: $rc)" test "$rc" = 0
check "run 1: checkpoint 3 is written" test -e "$RUN/checkpoints/ckpt-000003.pbck"
check "run 1: workers from both hosts joined" \
  bash -c "grep -q 'joined (host' '$TMP/learner1.log' && [ \$(grep -c 'joined (host' '$TMP/learner1.log') -ge 4 ]"
all0=1
for w in "${WORKERS[@]}"; do
  status_of "$w" 60
  [ "$rc" = 0 ] || all0=0
done
check "run 1: the four workers stop with status 0 on the learner's STOPPING" test "$all0" = 1

# --- 2. resume, cut host B's link mid-run, restore it -----------------------

echo "== 2. resume with more iterations; host B's link cut and restored mid-run"
# Long enough that the cut below falls well inside the run: twice the
# episodes per iteration, and many iterations (0.1-0.5 s each here): enough
# that host B, back after the cut, gets work before the end under load too.
TOTAL=200
start_learner "$TOTAL" "$TMP/learner2.log" train.episodes_per_iter=40
start_workers run2
check "run 2: the learner resumes from version 3" \
  wait_for 120 grep -q 'resumed from .*ckpt-000003.pbck' "$TMP/learner2.log"
if wait_for 300 bash -c "v=\$(ip netns exec $NS_L curl -fsS -m 3 http://127.0.0.1:$PROBS_HTTP_PORT/status 2>/dev/null | sed -n 's/.*\"version\": *\([0-9][0-9]*\).*/\1/p'); [ -n \"\$v\" ] && [ \"\$v\" -ge 5 ]"; then
  v0=$(version)
  ip -n "$NS_B" link set eth0 down
  echo "cut host B's link at version $v0"
  check "host B cannot reach the learner while its link is down" \
    bash -c "! ip netns exec $NS_B timeout 3 bash -c 'exec 3<>/dev/tcp/10.231.2.1/$PROBS_WORK_PORT' 2>/dev/null"
  sleep 6 # longer than net.lease_ms: B's leases expire, A takes the items
  v1=$(version)
  ip -n "$NS_B" link set eth0 up
  echo "restored host B's link at version $v1"
  b_before=$(cat "$TMP"/run2-*-2.log | grep -c ' item ')
  check "the learner kept going without host B (version $v0 -> $v1)" \
    test "${v1:-0}" -gt "${v0:-0}"
  check "the learner was still running when the link came back" kill -0 "$L"
  check "host B reaches the learner again" wait_for 20 reach "$NS_B" 10.231.2.1 "$PROBS_WORK_PORT"
else
  bad "run 2 did not reach version 5 within 300 s"
fi
status_of "$L" 600
check "run 2: the learner finishes with status 0 (was: $rc)" test "$rc" = 0
check "run 2: checkpoint $TOTAL is written" \
  test -e "$RUN/checkpoints/$(printf 'ckpt-%06d.pbck' "$TOTAL")"
check "run 2: the learner's last words name version $TOTAL" \
  grep -q "learner stopped at version $TOTAL" "$TMP/learner2.log"
expired=$(grep -c 'expired; re-queued' "$TMP/learner2.log")
echo "run 2: $expired lease(s) expired and were handed out again"
if [ -n "${b_before:-}" ]; then
  b_after=$(cat "$TMP"/run2-*-2.log | grep -c ' item ')
  echo "run 2: host B's workers finished $((b_after - b_before)) item(s) after the link came back"
  check "run 2: host B's workers got work again after the link came back" \
    test "$b_after" -gt "$b_before"
fi
# Host A's workers were never cut off: they get the STOPPING and exit 0.
all0=1
for i in 0 1; do
  status_of "${WORKERS[$i]}" 60
  [ "$rc" = 0 ] || all0=0
done
check "run 2: host A's workers stop with status 0" test "$all0" = 1

if [ "$FAIL" -ne 0 ]; then
  for f in "$TMP"/*.log; do
    echo "---- $(basename "$f") (last 20 lines)"
    tail -n 20 "$f"
  done
fi
finish
