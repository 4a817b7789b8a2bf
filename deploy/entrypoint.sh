#!/usr/bin/env bash
# probs-entrypoint - runs one probs role in a container (or anywhere).
#
#   probs-entrypoint learner|actor|searcher|evaluator [EXTRA ARGS...]
#   probs-entrypoint health          # exit 0 if this container's role does its job
#   probs-entrypoint help
#   probs-entrypoint COMMAND ARGS... # anything else is run as is (probs, bash)
#
# One image runs every role; the role is the container's command. Endpoints,
# run name and sizes come from PROBS_* environment variables (see usage()
# below and docs/deploy.md), so that docker-compose.yml and stack.yml only set
# variables. The programs validate every --set value themselves; this script
# only checks what it uses itself (numbers, names that end up in paths).
set -uo pipefail

PROG=probs-entrypoint

usage() {
  cat <<'EOF'
usage: probs-entrypoint ROLE [ARGS...]
roles:
  learner     probs-learner CONFIG --run-dir RUNS/NAME --resume (binds the ports)
  actor       PROBS_WORKERS x probs-actor --role selfplay (connects to the learner)
  searcher    PROBS_WORKERS x probs-actor --role search
  evaluator   probs-evaluator CONFIG --run-dir RUNS/NAME (follows the checkpoints)
  health      exit 0 if this container's role does its job: the learner
              answers GET /status (or finished its run), a worker's or the
              evaluator's program runs
  help        this text
Anything else is run as a command (probs, probs-learner ..., bash).
ARGS are appended to the program's command line (e.g. --set train.iterations=50).

environment (default):
  PROBS_CONFIG        YAML config (/opt/probs/configs/connect4.yaml)
  PROBS_RUN_NAME      run id, run.name; the run directory is RUNS/NAME (c4)
  PROBS_RUNS          directory holding run directories, the volume (/runs)
  PROBS_LEARNER       host name or address of the learner, for workers (learner)
  PROBS_BIND          address the learner binds (0.0.0.0); HTTP listens on
                      every interface of the container
  PROBS_WORK_PORT     work socket, ROUTER (5555)
  PROBS_PUB_PORT      announcements, PUB (5556)
  PROBS_HTTP_PORT     learner's /status and /metrics; 0 = off (8080)
  PROBS_DEVICE        model.device: cpu, cuda or auto (the config's)
  PROBS_THREADS       model.threads per process; 0 = one per CPU (the config's)
  PROBS_WORKERS       worker processes in this container; 0 = one per CPU (1)
  PROBS_ITERATIONS    train.iterations (the config's)
  PROBS_LOG_LEVEL     log.level: debug, info, warn, error (the config's)
  PROBS_SET           more overrides, "key=value key=value ...", applied after
                      the ones above (none)
  PROBS_IDLE_WHEN_DONE  1: a learner whose run is finished stays up idle
                      instead of exiting (so restart policies do not rerun it) (1)
  PROBS_STATE_DIR     where the learner's "finished" marker lives (/tmp)
  PROBS_KEYS          directory of the run's CURVE keys (net.curve_dir): the
                      learner makes them there if missing (probs keys), the
                      workers and the evaluator wait for them; empty = no
                      CURVE (none; docker-compose.yml sets /keys, stack.yml
                      /run/secrets, where Swarm puts the key secrets)
  PROBS_WORKER_KEY    a worker's or the evaluator's key pair in PROBS_KEYS,
                      NAME.key (net.curve_key): worker (the pair every
                      worker shares), a name given by `probs keys DIR
                      --add-worker NAME` or --workers N (worker-I), or auto:
                      the container makes its own pair, w-HOSTNAME, and
                      authorizes it in PROBS_KEYS/authorized_keys (a shared,
                      writable keys volume), so that the learner can refuse
                      one container and keep the others (worker)
  PROBS_KEYS_WAIT     seconds a worker waits for the keys before it gives up
                      with an error (120)
EOF
}

die() {
  echo "$PROG: $*" >&2
  exit 2
}
say() { echo "$PROG: $*" >&2; }

# --- settings -------------------------------------------------------------

PROBS_CONFIG=${PROBS_CONFIG:-/opt/probs/configs/connect4.yaml}
PROBS_RUN_NAME=${PROBS_RUN_NAME:-c4}
PROBS_RUNS=${PROBS_RUNS:-/runs}
PROBS_LEARNER=${PROBS_LEARNER:-learner}
PROBS_BIND=${PROBS_BIND:-0.0.0.0}
PROBS_WORK_PORT=${PROBS_WORK_PORT:-5555}
PROBS_PUB_PORT=${PROBS_PUB_PORT:-5556}
PROBS_HTTP_PORT=${PROBS_HTTP_PORT:-8080}
PROBS_DEVICE=${PROBS_DEVICE:-}
PROBS_KEYS=${PROBS_KEYS:-}
PROBS_WORKER_KEY=${PROBS_WORKER_KEY:-worker}
PROBS_KEYS_WAIT=${PROBS_KEYS_WAIT:-120}
PROBS_THREADS=${PROBS_THREADS:-}
PROBS_WORKERS=${PROBS_WORKERS:-1}
PROBS_ITERATIONS=${PROBS_ITERATIONS:-}
PROBS_LOG_LEVEL=${PROBS_LOG_LEVEL:-}
PROBS_SET=${PROBS_SET:-}
PROBS_IDLE_WHEN_DONE=${PROBS_IDLE_WHEN_DONE:-1}
PROBS_STATE_DIR=${PROBS_STATE_DIR:-/tmp}
MARKER="$PROBS_STATE_DIR/probs-learner-finished"


# check_int NAME VALUE LO HI: VALUE is a decimal integer in [LO, HI].
check_int() {
  local name=$1 v=$2 lo=$3 hi=$4
  [[ "$v" =~ ^[0-9]{1,9}$ ]] || die "$name='$v' is not a number ($lo..$hi)"
  ((10#$v >= lo && 10#$v <= hi)) || die "$name=$v is out of range ($lo..$hi)"
}

# A host is put into tcp://HOST:PORT; refuse what would change its meaning.
# Host names and IPv4 addresses only: the sockets are not opened for IPv6.
check_host() {
  local name=$1 v=$2
  [[ "$v" =~ ^[A-Za-z0-9._-]{1,253}$ ]] ||
    die "$name='$v' is not a host name or address"
}

ncpu() { nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1; }

# The --set arguments every role shares, into the array SETS.
common_sets() {
  [[ "$PROBS_RUN_NAME" =~ ^[A-Za-z0-9._-]{1,63}$ ]] ||
    die "PROBS_RUN_NAME='$PROBS_RUN_NAME' must be 1..63 characters from A-Z a-z 0-9 . _ -"
  case "$PROBS_RUN_NAME" in
    . | ..) die "PROBS_RUN_NAME='$PROBS_RUN_NAME' is not a directory name" ;;
  esac
  check_int PROBS_WORK_PORT "$PROBS_WORK_PORT" 1 65535
  check_int PROBS_PUB_PORT "$PROBS_PUB_PORT" 1 65535
  check_int PROBS_HTTP_PORT "$PROBS_HTTP_PORT" 0 65535
  [ -r "$PROBS_CONFIG" ] || die "PROBS_CONFIG=$PROBS_CONFIG: no such readable file"
  RUN_DIR="$PROBS_RUNS/$PROBS_RUN_NAME"
  SETS=(--set "run.name=$PROBS_RUN_NAME")
  if [ -n "$PROBS_DEVICE" ]; then
    case "$PROBS_DEVICE" in
      cpu | cuda | auto) ;;
      *) die "PROBS_DEVICE='$PROBS_DEVICE' must be cpu, cuda or auto" ;;
    esac
    SETS+=(--set "model.device=$PROBS_DEVICE")
  fi
  if [ -n "$PROBS_THREADS" ]; then
    check_int PROBS_THREADS "$PROBS_THREADS" 0 1024
    local t=$((10#$PROBS_THREADS))
    [ "$t" -eq 0 ] && t=$(ncpu)
    SETS+=(--set "model.threads=$t")
  fi
  if [ -n "$PROBS_ITERATIONS" ]; then
    check_int PROBS_ITERATIONS "$PROBS_ITERATIONS" 1 1000000
    SETS+=(--set "train.iterations=$((10#$PROBS_ITERATIONS))")
  fi
  [ -n "$PROBS_LOG_LEVEL" ] && SETS+=(--set "log.level=$PROBS_LOG_LEVEL")
  [ -n "$PROBS_KEYS" ] && SETS+=(--set "net.curve_dir=$PROBS_KEYS")
  # PROBS_SET is a list of key=value words (split on blanks, never globbed).
  # They go after everything this script sets, so they win.
  USER_SETS=()
  local kv words=()
  read -r -a words <<<"$PROBS_SET"
  for kv in "${words[@]}"; do
    [[ "$kv" == *=* ]] || die "PROBS_SET: '$kv' is not key=value"
    USER_SETS+=(--set "$kv")
  done
}

# For processes that connect to the learner: with PROBS_KEYS, wait (up to
# PROBS_KEYS_WAIT seconds) for the learner to have made the keys, then pick
# this process's key pair (PROBS_WORKER_KEY; auto makes one for this
# container) and add net.curve_key to SETS.
wait_keys() {
  [ -n "$PROBS_KEYS" ] || return 0
  check_int PROBS_KEYS_WAIT "$PROBS_KEYS_WAIT" 0 86400
  local name=$PROBS_WORKER_KEY i
  if [ "$name" = auto ]; then
    name="w-$(hostname -s 2>/dev/null || hostname)"
    name=${name:0:63}
  fi
  [[ "$name" =~ ^[A-Za-z0-9_][A-Za-z0-9._-]{0,62}$ ]] ||
    die "PROBS_WORKER_KEY='$PROBS_WORKER_KEY' is not a key name (A-Z a-z 0-9 . _ -) or auto"
  for ((i = 0; i <= 10#$PROBS_KEYS_WAIT; i++)); do
    [ -r "$PROBS_KEYS/learner.pub" ] && break
    ((i == 0)) && say "waiting up to $PROBS_KEYS_WAIT s for the run's CURVE keys in $PROBS_KEYS (the learner makes them)"
    ((i == 10#$PROBS_KEYS_WAIT)) &&
      die "PROBS_KEYS=$PROBS_KEYS: no learner.pub after $PROBS_KEYS_WAIT s (the learner makes the keys there on its first start; on another machine copy learner.pub and this worker's NAME.key there, see docs/deploy.md)"
    sleep 1
  done
  if [ "$PROBS_WORKER_KEY" = auto ] && [ ! -e "$PROBS_KEYS/$name.key" ]; then
    probs keys "$PROBS_KEYS" --add-worker "$name" >/dev/null ||
      die "PROBS_WORKER_KEY=auto: cannot add this container's key $name to $PROBS_KEYS (is the keys volume writable?)"
    say "made and authorized this container's CURVE key $PROBS_KEYS/$name.key"
  fi
  [ -r "$PROBS_KEYS/$name.key" ] ||
    die "PROBS_KEYS=$PROBS_KEYS: no $name.key there (PROBS_WORKER_KEY=$PROBS_WORKER_KEY; make it with: probs keys DIR --add-worker $name, and copy it here with learner.pub)"
  SETS+=(--set "net.curve_key=$name")
}

# Endpoints for processes that connect to the learner.
connect_sets() {
  check_host PROBS_LEARNER "$PROBS_LEARNER"
  CONNECT=(--set "net.work_endpoint=tcp://$PROBS_LEARNER:$PROBS_WORK_PORT"
           --set "net.pub_endpoint=tcp://$PROBS_LEARNER:$PROBS_PUB_PORT")
}

# --- signal handling -------------------------------------------------------
# The programs stop cleanly on SIGTERM/SIGINT; this shell passes the signal on
# to its children and remembers that it came from outside.

CHILDREN=()
SIGNALLED=""
on_signal() {
  SIGNALLED=$1
  local p
  for p in "${CHILDREN[@]}"; do kill -s "$1" "$p" 2>/dev/null; done
}
trap 'on_signal TERM' TERM
trap 'on_signal INT' INT

# wait_child PID: waits until PID has exited (signals interrupt `wait`) and
# sets RC to its exit status.
wait_child() {
  while kill -0 "$1" 2>/dev/null; do wait "$1"; done
  wait "$1"
  RC=$?
}

# --- roles -----------------------------------------------------------------

run_learner() {
  common_sets
  mkdir -p "$RUN_DIR" 2>/dev/null || die "cannot create the run directory $RUN_DIR"
  mkdir -p "$PROBS_STATE_DIR" 2>/dev/null
  rm -f "$MARKER"
  check_host PROBS_BIND "$PROBS_BIND"
  if [ -n "$PROBS_KEYS" ] && [ ! -e "$PROBS_KEYS/learner.key" ]; then
    probs keys "$PROBS_KEYS" >/dev/null || die "PROBS_KEYS=$PROBS_KEYS: cannot make the run's CURVE keys"
    say "made the run's CURVE keys in $PROBS_KEYS"
  fi
  say "learner: run '$PROBS_RUN_NAME' in $RUN_DIR, config $PROBS_CONFIG, work port $PROBS_WORK_PORT, announcements $PROBS_PUB_PORT, http $PROBS_HTTP_PORT"
  # --resume always: the first start finds no checkpoint and starts fresh,
  # every later start (a restart, a crash, an upgrade) continues.
  probs-learner "$PROBS_CONFIG" --run-dir "$RUN_DIR" --resume "${SETS[@]}" \
    --set "net.work_endpoint=tcp://$PROBS_BIND:$PROBS_WORK_PORT" \
    --set "net.pub_endpoint=tcp://$PROBS_BIND:$PROBS_PUB_PORT" \
    --set "net.http_port=$PROBS_HTTP_PORT" --set "net.http_bind=0.0.0.0" \
    "${USER_SETS[@]}" "$@" &
  CHILDREN=($!)
  wait_child "${CHILDREN[0]}"
  CHILDREN=()
  if [ -n "$SIGNALLED" ] || [ "$RC" -ne 0 ] || [ "$PROBS_IDLE_WHEN_DONE" != 1 ]; then
    exit "$RC"
  fi
  # The learner exits 0 on its own only when every iteration is done. Under
  # "restart: unless-stopped" exiting would start it again and again; stay up
  # instead, healthy, until stopped.
  : >"$MARKER" 2>/dev/null
  say "the run '$PROBS_RUN_NAME' is finished; idling. Raise train.iterations (PROBS_ITERATIONS) and start the learner again to continue, or stop the service."
  sleep infinity &
  CHILDREN=($!)
  wait_child "${CHILDREN[0]}"
  exit 0
}

run_workers() {
  local role=$1
  shift
  common_sets
  connect_sets
  wait_keys
  check_int PROBS_WORKERS "$PROBS_WORKERS" 0 4096
  local n=$((10#$PROBS_WORKERS))
  [ "$n" -eq 0 ] && n=$(ncpu)
  local cmd=(probs-actor "$PROBS_CONFIG" --role "$role" "${SETS[@]}" "${CONNECT[@]}"
             "${USER_SETS[@]}" "$@")
  say "$n x ${cmd[*]}"
  if [ "$n" -eq 1 ]; then
    exec "${cmd[@]}"
  fi
  local i
  for ((i = 0; i < n; i++)); do
    "${cmd[@]}" &
    CHILDREN+=($!)
  done
  # The first process to end decides: a clean stop (the learner's STOPPING,
  # or our signal) is passed on to the others; a failure stops the others
  # too, so that the container exits and its restart policy starts it anew.
  wait -n
  RC=$?
  if [ -z "$SIGNALLED" ]; then
    [ "$RC" -ne 0 ] && say "a worker exited with status $RC; stopping the others"
    on_signal TERM
    SIGNALLED=""
  fi
  local p first=$RC
  for p in "${CHILDREN[@]}"; do
    wait_child "$p"
    [ "$first" -eq 0 ] && [ "$RC" -ne 0 ] && first=$RC
  done
  [ -n "$SIGNALLED" ] && exit 0
  exit "$first"
}

run_evaluator() {
  common_sets
  connect_sets
  wait_keys
  mkdir -p "$RUN_DIR" 2>/dev/null || die "cannot create the run directory $RUN_DIR"
  exec probs-evaluator "$PROBS_CONFIG" --run-dir "$RUN_DIR" "${SETS[@]}" "${CONNECT[@]}" \
    "${USER_SETS[@]}" "$@"
}

# health: exit 0 when this container's role is doing its job, for a compose
# healthcheck, a Dockerfile HEALTHCHECK and Kubernetes probes alike. The
# role is the one PID 1 (tini) runs: a worker or the evaluator is healthy
# while its program runs; the learner (and anything else, e.g. outside a
# container) when GET /status answers or its run is finished.
running() { # running NAME: a process of that name (its comm) is alive
  local c
  for c in /proc/[0-9]*/comm; do
    [ "$(cat "$c" 2>/dev/null)" = "$1" ] && return 0
  done
  return 1
}
health() {
  local role
  role=$(tr '\0' '\n' </proc/1/cmdline 2>/dev/null |
    awk 'f { print; exit } /probs-entrypoint$/ { f = 1 }')
  case "$role" in
    actor | selfplay | searcher | search) running probs-actor; exit ;;
    evaluator) running probs-evaluator; exit ;;
  esac
  check_int PROBS_HTTP_PORT "$PROBS_HTTP_PORT" 0 65535
  [ -e "$MARKER" ] && exit 0
  [ "$PROBS_HTTP_PORT" -ne 0 ] || exit 1
  curl -fsS -m 5 -o /dev/null "http://127.0.0.1:$PROBS_HTTP_PORT/status"
}

[ $# -ge 1 ] || { usage >&2; exit 2; }
role=$1
shift
case "$role" in
  learner) run_learner "$@" ;;
  actor | selfplay) run_workers selfplay "$@" ;;
  searcher | search) run_workers search "$@" ;;
  evaluator) run_evaluator "$@" ;;
  health | healthcheck) health ;;
  help | -h | --help) usage; exit 0 ;;
  *) exec "$role" "$@" ;;
esac
