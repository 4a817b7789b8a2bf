#!/usr/bin/env bash
# test_containers.sh BIN_DIR SOURCE_DIR - probs launched as its users
# launch it: the CPU image of deploy/Dockerfile and deploy/docker-compose.yml,
# on Podman (the workplace's ../shared/containers/setup.sh) or Docker.
#
#  1. The image builds (or is already built for this tree: tests/containers.sh).
#  2. Compose brings up the learner, an actor, a searcher and the evaluator
#     with a small config and CURVE keys (a key per worker container);
#     /status answers on the published port, and nothing is published on
#     0.0.0.0.
#  3. Searchers scale from 1 to 3 during the run: the new ones join and
#     take work.
#  4. A worker container is killed with SIGKILL: its lease expires, its
#     item goes to another worker, the run goes on.
#  5. The learner container is stopped and started: it resumes from its
#     newest checkpoint, and the workers reconnect and work again.
#  6. The evaluator has filled elo.csv on the runs volume.
#  7. Several nodes, simulated: workers in containers on two more networks,
#     each with a key of its own made by the operator (probs keys DIR
#     --add-worker NAME), reach the learner only through its published
#     ports, with CURVE on, and take work.
#  8. A worker with no keys, and a learner that cannot bind, end with a
#     clear message in the container's log and a non-zero exit.
#  9. Everything is torn down, volumes included.
#
# Prints "SKIPPED: <reason>" and exits 0 where no container engine answers.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_containers.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
SRC=$(cd "$2" && pwd) || exit 2
. "$SRC/tests/cli_lib.sh" # ok, bad, check, skip, wait_for, finish

. "$SRC/tests/containers.sh"
pb_engine || skip "$PB_ENGINE_WHY"
E=$PB_ENGINE
command -v docker-compose >/dev/null 2>&1 ||
  skip "no docker-compose (Debian's docker-compose; scripts/setup.sh installs it)"
command -v python3 >/dev/null 2>&1 || skip "no python3 (to find free ports)"

echo "== 1. the image"
T0=$SECONDS
pb_image || { bad "the CPU image builds"; finish; exit 1; }
ok "the CPU image is there ($PB_IMAGE, $((SECONDS - T0)) s)"
# The shipped networks are in the image: probs gtp plays without --model.
gtp_out=$(printf 'genmove b\nquit\n' | $E run --rm -i "$PB_IMAGE" probs gtp --game connect4 2>&1)
if grep -qE '^= [1-7]$' <<<"$gtp_out"; then ok "the image's probs gtp plays the shipped model"
else bad "probs gtp in the image: $(head -c 400 <<<"$gtp_out")"; fi

P="pbct$$"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/probs-containers.XXXXXX") || exit 2
DC=(docker-compose -p "$P" -f "$SRC/deploy/docker-compose.yml")
EXTRA=()   # containers started outside compose
NETS=()
cleanup() {
  local c n
  for c in "${EXTRA[@]}"; do $E rm -f "$c" >/dev/null 2>&1; done
  "${DC[@]}" down -v --remove-orphans -t 5 >/dev/null 2>&1
  for n in "${NETS[@]}"; do $E network rm -f "$n" >/dev/null 2>&1; done
  $E volume rm -f "${P}_node-b-keys" "${P}_node-c-keys" >/dev/null 2>&1
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Ports the kernel says are free (held open until all are picked).
read -r WORK PUB HTTP < <(python3 -c '
import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
export PROBS_IMAGE=$PB_IMAGE
export PROBS_CONFIG=/opt/probs/configs/connect4-smoke.yaml
export PROBS_RUN_NAME=ct
export PROBS_WORK_PORT=$WORK PROBS_PUB_PORT=$PUB PROBS_HTTP_PORT=$HTTP
export PROBS_ITERATIONS=100000   # runs until we take it down
# Search items that take a moment, so that a worker killed mid-item holds a
# lease; a short lease, so that it expires within the test.
export PROBS_SET="search.expansions=60 search.max_depth=4 net.item_states=24 net.lease_ms=3000 net.heartbeat_ms=500 net.lease_max_ms=30000 train.episodes_per_iter=40 eval.games_per_opponent=2"
export PROBS_KEYS_WAIT=120

status() { curl -fsS -m 3 "http://127.0.0.1:$HTTP/status" 2>/dev/null; }
status_up() { status >/dev/null; }
version() { status | sed -n 's/.*"version": *\([0-9][0-9]*\).*/\1/p'; }
version_at_least() { local v; v=$(version); [ -n "$v" ] && [ "$v" -ge "$1" ]; }
logs() { $E logs "$1" 2>&1; }
learner_log() { logs "${P}_learner_1"; }

echo "== 2. compose up: learner, actor, searcher, evaluator"
T1=$SECONDS
check "docker-compose up starts the four services" \
  "${DC[@]}" up -d --no-build --quiet-pull
check "/status answers on the published port 127.0.0.1:$HTTP" wait_for 180 status_up
check "the run trains (version >= 1)" wait_for 180 version_at_least 1
echo "start-up to the first finished iteration: $((SECONDS - T1)) s"
ports=$($E port "${P}_learner_1" 2>/dev/null | sed -n 's/.*-> *\(.*\):[0-9]*$/\1/p' | sort -u | tr '\n' ' ')
echo "learner's published addresses: ${ports:-none}"
check "the learner publishes its ports on 127.0.0.1 only" \
  test "$ports" = "127.0.0.1 "
check "nothing of the run listens on 0.0.0.0" \
  bash -c "! ss -ltn 2>/dev/null | grep -qE '0\.0\.0\.0:($WORK|$PUB|$HTTP)\b'"
learner_logged() { "${DC[@]}" logs --no-color learner 2>&1 | has 'iteration 1 done'; }
# The line can trail /status's version by a moment through the log driver.
check "docker-compose logs learner is the learner's log" wait_for 30 learner_logged
# Docker runs the healthcheck by itself; Podman through systemd timers,
# which a machine without systemd lacks: run it as the timer would.
healthy() {
  [ "$E" = podman ] && $E healthcheck run "${P}_learner_1" >/dev/null 2>&1
  [ "$($E inspect --format '{{.State.Health.Status}}' "${P}_learner_1" 2>/dev/null)" = healthy ]
}
check "the learner's healthcheck (probs-entrypoint health) says healthy" wait_for 90 healthy
check "CURVE is on, with a key per worker container" \
  bash -c "$E logs ${P}_learner_1 2>&1 | grep -q 'CURVE on' && $E logs ${P}_searcher_1 2>&1 | grep -q 'made and authorized this container'"

echo "== 3. scale searchers from 1 to 3"
check "docker-compose scales searcher to 3" \
  "${DC[@]}" up -d --no-build --no-recreate --scale searcher=3
took_work() { logs "$1" | has 'search item '; }
for i in 2 3; do
  check "searcher $i took work" wait_for 120 took_work "${P}_searcher_$i"
done
joined() { [ "$(learner_log | grep -c 'searcher search-.* joined')" -ge 3 ]; }
check "the learner saw three searchers join" wait_for 30 joined

echo "== 4. kill -9 a worker mid-item"
# The dead worker's item goes to another one: its lease expires and it is
# re-queued, or an idle worker gets a backup copy of it first (issue 46).
handed='expired; re-queued|a backup copy goes to'
expired_before=$(learner_log | grep -cE "$handed")
expired() { [ "$(learner_log | grep -cE "$handed")" -gt "$expired_before" ]; }
# Kill it right after it finished an item (it asks for the next one at
# once, so it most likely holds a lease); a worker killed between items
# holds none, so try again, up to five times.
victim="${P}_searcher_2"
killed=0
for attempt in 1 2 3 4 5; do
  n0=$(logs "$victim" | grep -c 'search item .* in ')
  for _ in $(seq 150); do
    [ "$(logs "$victim" | grep -c 'search item .* in ')" -gt "$n0" ] && break
    sleep 0.2
  done
  $E kill -s KILL "$victim" >/dev/null 2>&1 && killed=$((killed + 1))
  echo "attempt $attempt: killed $victim (SIGKILL)"
  wait_for 15 expired && break
  $E start "$victim" >/dev/null 2>&1
  wait_for 60 took_work "$victim"
done
v_kill=$(version)
check "searcher 2 was killed with SIGKILL ($killed time(s))" test "$killed" -ge 1
check "a lease expired (or was backed up) and its item was handed out again" expired
check "the run goes on after the kill (version ${v_kill:-?} -> more)" \
  wait_for 120 version_at_least $((${v_kill:-0} + 2))

echo "== 5. stop and start the learner"
"${DC[@]}" stop -t 30 learner >/dev/null 2>&1
v_stop=$($E run --rm -v "${P}_runs:/runs" --entrypoint sh "$PB_IMAGE" -c \
  'ls /runs/ct/checkpoints | sed -n "s/ckpt-0*\([0-9][0-9]*\)\.pbck/\1/p" | sort -n | tail -1' 2>/dev/null)
echo "newest checkpoint after the stop: ${v_stop:-none}"
check "the learner stopped with checkpoints on the volume" test -n "$v_stop"
"${DC[@]}" start learner >/dev/null 2>&1
resumed() { learner_log | has "resumed from .*ckpt-0*${v_stop}\.pbck"; }
check "the learner resumes from its newest checkpoint ($v_stop)" wait_for 120 resumed
check "the run goes on after the restart" wait_for 180 version_at_least $((${v_stop:-0} + 2))
# The restarted learner's own count of the workers it hears from.
rejoined() {
  local st
  st=$(status) || return 1
  echo "$st" | grep -qE '"actors": *[1-9]' && echo "$st" | grep -qE '"searchers": *[1-9]'
}
check "the workers reconnect to the restarted learner" wait_for 60 rejoined

echo "== 6. the evaluator's elo.csv on the volume"
elo_rows() {
  $E run --rm -v "${P}_runs:/runs" --entrypoint sh "$PB_IMAGE" -c \
    'tail -n +2 /runs/ct/elo.csv 2>/dev/null | wc -l'
}
rows_ok() { local n; n=$(elo_rows); [ "${n:-0}" -ge 2 ]; }
check "the evaluator filled elo.csv (rows: $(elo_rows))" wait_for 120 rows_ok

echo "== 7. two more nodes: workers on other networks, through the published ports"
# On real hosts the learner publishes on its LAN address; here on the host's
# address on a network of its own, which the other networks reach only
# through the host, as separate machines reach the learner's host.
HOSTNET="${P}-host"
NETS+=("$HOSTNET" "${P}-b" "${P}-c")
for n in "${NETS[@]}"; do $E network create "$n" >/dev/null 2>&1 || bad "network $n"; done
GW=$($E network inspect "$HOSTNET" --format '{{range .Subnets}}{{.Gateway}}{{end}}' 2>/dev/null)
[ -z "$GW" ] && GW=$($E network inspect "$HOSTNET" --format '{{range .IPAM.Config}}{{.Gateway}}{{end}}' 2>/dev/null)
echo "the learner's host address for the other nodes: ${GW:-?}"
# The address exists once a container is on that network (a LAN address
# exists on a real host anyway).
EXTRA+=("${P}-anchor")
$E run -d --name "${P}-anchor" --network "$HOSTNET" "$PB_IMAGE" sleep infinity >/dev/null 2>&1 ||
  bad "anchor container on $HOSTNET"
# The learner again, publishing on that address (the operator's choice on
# a real cluster: PROBS_PUBLISH_ADDR, with CURVE on).
export PROBS_PUBLISH_ADDR=$GW
"${DC[@]}" up -d --no-build --no-recreate --scale searcher=3 >/dev/null 2>&1
"${DC[@]}" up -d --no-build --force-recreate --no-deps learner >/dev/null 2>&1
check "the learner answers again after publishing on $GW" wait_for 180 status_up
for node in b c; do
  # The operator makes the node's key in the learner's keys volume and
  # copies it, with learner.pub, to the node (here: a volume of its own).
  $E run --rm -v "${P}_keys:/keys" "$PB_IMAGE" probs keys /keys --add-worker "node-$node" >/dev/null 2>&1 ||
    bad "probs keys --add-worker node-$node"
  $E volume create "${P}_node-$node-keys" >/dev/null 2>&1
  $E run --rm -u 0 -v "${P}_keys:/from:ro" -v "${P}_node-$node-keys:/to" --entrypoint sh "$PB_IMAGE" -c \
    "cp /from/node-$node.key /from/learner.pub /to/ && chown -R 10001:10001 /to && chmod 0700 /to" >/dev/null 2>&1 ||
    bad "copy node-$node's key"
  name="${P}-node-$node"
  EXTRA+=("$name")
  $E run -d --name "$name" --network "${P}-$node" \
    -v "${P}_node-$node-keys:/keys:ro" \
    -e PROBS_CONFIG -e PROBS_RUN_NAME -e PROBS_SET -e PROBS_ITERATIONS \
    -e PROBS_LEARNER="$GW" -e PROBS_WORK_PORT="$WORK" -e PROBS_PUB_PORT="$PUB" \
    -e PROBS_KEYS=/keys -e PROBS_WORKER_KEY="node-$node" \
    "$PB_IMAGE" searcher >/dev/null 2>&1 || bad "start the worker of node $node"
done
for node in b c; do
  check "node $node's worker joins through $GW:$WORK and takes work" \
    wait_for 120 took_work "${P}-node-$node"
done
check "the learner knows the nodes' keys" \
  bash -c "$E logs ${P}_learner_1 2>&1 | grep -q 'node-b\|authorized_keys now lists'"
nets_of() { $E inspect --format '{{range $n, $x := .NetworkSettings.Networks}}{{$n}} {{end}}' "$1" 2>/dev/null; }
only_own_net() { [ "$(nets_of "${P}-node-b")" = "${P}-b " ]; }
check "node b's worker is on its own network only ($(nets_of "${P}-node-b"))" only_own_net
unresolved() {
  ! $E run --rm --network "${P}-b" --entrypoint bash "$PB_IMAGE" -c \
    "getent hosts learner || getent hosts ${P}_learner_1" >/dev/null 2>&1
}
check "from node b the learner's container has no name: only its published ports" unresolved

echo "== 8. bad starts: a worker without keys, a learner that cannot bind"
name="${P}-nokeys"
EXTRA+=("$name")
$E run -d --name "$name" --network "${P}-b" -e PROBS_CONFIG -e PROBS_RUN_NAME \
  -e PROBS_LEARNER="$GW" -e PROBS_WORK_PORT="$WORK" -e PROBS_PUB_PORT="$PUB" \
  -e PROBS_KEYS=/nokeys -e PROBS_KEYS_WAIT=3 "$PB_IMAGE" searcher >/dev/null 2>&1
exited() { [ "$($E inspect --format '{{.State.Running}}' "$name" 2>/dev/null)" = false ]; }
check "it stops within the keys wait" wait_for 60 exited
code=$($E inspect --format '{{.State.ExitCode}}' "$name" 2>/dev/null)
check "with a non-zero exit (was: $code)" test "${code:-0}" != 0
check "and says why in its log" bash -c "$E logs $name 2>&1 | grep -q 'no learner.pub after 3 s'"

name="${P}-nobind"
EXTRA+=("$name")
$E run -d --name "$name" -e PROBS_CONFIG -e PROBS_RUN_NAME=nobind -e PROBS_KEYS= \
  -e PROBS_BIND=10.255.255.1 "$PB_IMAGE" learner >/dev/null 2>&1
exited_nb() { [ "$($E inspect --format '{{.State.Running}}' "$name" 2>/dev/null)" = false ]; }
check "a learner that cannot bind stops" wait_for 60 exited_nb
code=$($E inspect --format '{{.State.ExitCode}}' "$name" 2>/dev/null)
check "with a non-zero exit (was: $code)" test "${code:-0}" != 0
check "and says why in its log" bash -c "$E logs $name 2>&1 | grep -q 'cannot bind net.work_endpoint'"

echo "== 9. tear down, volumes included"
for c in "${EXTRA[@]}"; do $E rm -f "$c" >/dev/null 2>&1; done
EXTRA=()
check "docker-compose down -v" "${DC[@]}" down -v --remove-orphans -t 10
gone() { ! $E volume ls --format '{{.Name}}' | grep -q "^${P}_runs$"; }
check "the runs volume is gone" gone
echo "whole test: $((SECONDS - T0)) s"

if [ "$FAIL" -ne 0 ]; then
  for c in learner_1 searcher_1 actor_1 evaluator_1; do
    echo "---- $c (last 15 lines)"
    $E logs "${P}_$c" 2>&1 | tail -15
  done
fi
finish
