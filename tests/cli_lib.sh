# cli_lib.sh - sourced by the tests/test_*.sh scripts: counters and checks
# for commands run as a user runs them, the start every test makes, and
# the cleaning up when it ends.
#
#   . "$(dirname "$0")/cli_lib.sh"
#   cli_start "$@"   # BIN SRC P T, T removed at the end
#   expect "a bad flag" 2 'unknown option' "$P" match --nope
#   finish
PASS=0
FAIL=0
SKIP=0
TEST=$(basename "$0" .sh)
ok() { PASS=$((PASS + 1)); echo "ok: $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*"; }
# skipped WHY: a part of the test that cannot run here.
skipped() { SKIP=$((SKIP + 1)); echo "SKIPPED: $*"; }
# skip WHY: the whole test cannot run here: says why and exits 0.
skip() {
  echo "SKIPPED: $*"
  echo "$TEST: 0 passed, 0 failed, 1 skipped"
  exit 0
}
# cli_start "$@": checks the arguments every test gets (BIN_DIR
# SOURCE_DIR) and sets BIN and SRC (absolute), P (the probs program) and
# T (a new temporary directory), which goes, with every process the test
# started, when the script exits (on_exit again to clean up more).
cli_start() {
  [ $# -eq 2 ] || { echo "usage: $TEST.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
  BIN=$(cd "$1" && pwd) || exit 2
  SRC=$(cd "$2" && pwd) || exit 2
  P="$BIN/probs"
  T=$(mktemp -d "/tmp/pb_${TEST}_XXXXXX") || exit 2
  on_exit 'rm -rf "$T"'
}
# check DESCRIPTION COMMAND...: ok when COMMAND succeeds, else bad.
check() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}
# refused DESCRIPTION COMMAND...: ok when COMMAND fails (its output
# hidden), bad when it succeeds.
refused() {
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then bad "$what"; else ok "$what"; fi
}
# wait_for SECONDS COMMAND...: runs COMMAND every second until it
# succeeds (0) or SECONDS have passed (1).
wait_for() {
  local end=$((SECONDS + $1))
  shift
  while [ $SECONDS -lt $end ]; do "$@" && return 0; sleep 1; done
  return 1
}
# expect DESCRIPTION STATUS PATTERN COMMAND...: exit status and a line of
# stdout+stderr matching the extended regex PATTERN.
expect() {
  local what=$1 want=$2 pat=$3
  shift 3
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "$what: exit $rc, expected $want; output: $(head -c 400 <<<"$out")"
  elif ! grep -qE -- "$pat" <<<"$out"; then
    bad "$what: no line matches '$pat'; output: $(head -c 400 <<<"$out")"
  else
    ok "$what"
  fi
}
# finish [NAME]: the summary line (NAME: the test's), and the exit status
# of the script.
finish() {
  echo "${1:-$TEST}: $PASS passed, $FAIL failed$([ "$SKIP" -gt 0 ] && echo ", $SKIP skipped")"
  [ "$FAIL" -eq 0 ]
}
# descendants PID: every process below PID, deepest first (not the
# command substitution that asks).
descendants() {
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    [ "$c" = "$BASHPID" ] && continue
    descendants "$c"
    echo "$c"
  done
}
# kill_started: SIGKILL to every process this script started that is
# still running (its descendants), so that a failed or interrupted test
# leaves nothing behind.
kill_started() {
  local p
  p=$(descendants $$)
  [ -n "$p" ] && kill -9 $p 2>/dev/null
  return 0
}
# on_exit CMD: when the script exits, also by SIGINT, SIGTERM or SIGHUP,
# kill what it started, then run CMD (the test's own cleaning up).
on_exit() {
  trap "kill_started; $1" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  trap 'exit 129' HUP
}
# free_ports N: N distinct TCP ports on 127.0.0.1 that the kernel gives
# (bound together, then let go), space-separated.
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}
# need_browser NAME: sets CHROMIUM to the browser a test drives (and checks
# python3, its driver); without chromium, the test NAME is skipped (exit 0)
# when PB_SKIP_BROWSER=1 and fails otherwise (exit 1).
need_browser() {
  CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
  if [ -z "$CHROMIUM" ]; then
    [ "${PB_SKIP_BROWSER:-0}" = 1 ] && skip "no chromium, and PB_SKIP_BROWSER=1"
    bad "chromium is not installed (scripts/setup.sh installs it; PB_SKIP_BROWSER=1 skips this test)"
    finish "$1"
    exit 1
  fi
  command -v python3 >/dev/null || { bad "no python3"; finish "$1"; exit 1; }
}
