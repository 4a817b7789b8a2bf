# cli_lib.sh - sourced by the tests/test_*.sh scripts: counters and checks
# for commands run as a user runs them.
PASS=0
FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok: $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL: $*"; }
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
# finish NAME: the summary line, and the exit status of the script.
finish() {
  echo "$1: $PASS passed, $FAIL failed"
  [ "$FAIL" -eq 0 ]
}
