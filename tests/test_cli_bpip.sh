#!/usr/bin/env bash
# test_cli_bpip.sh BIN_DIR SOURCE_DIR - the bpip: agent (BPIP search over a
# PROBS checkpoint's V) on the command line: `probs accuracy` with a budget
# that covers Tic-Tac-Toe's trees finds every optimal move of the shipped
# set; bad settings, a checkpoint of another algorithm (alphazero) or game
# are refused at start with one line naming the problem and exit status 2.
# The checkpoints are one small training iteration (seconds).
set -uo pipefail

. "$(dirname "$0")/cli_lib.sh"
cli_start "$@" # BIN SRC P T; T and what the test starts go at the end

for cfg in tictactoe-smoke tictactoe-alphazero connect4-smoke; do
  "$P" train "$SRC/configs/$cfg.yaml" --inproc --set run.dir="$T/$cfg" \
    --set train.iterations=1 >"$T/$cfg.log" 2>&1 ||
    bad "$cfg: smoke training failed: $(tail -3 "$T/$cfg.log")"
done
T3="$T/tictactoe-smoke/checkpoints/ckpt-000001.pbck"
AZ="$T/tictactoe-alphazero/checkpoints/ckpt-000001.pbck"
C4="$T/connect4-smoke/checkpoints/ckpt-000001.pbck"

# one_line DESCRIPTION PATTERN COMMAND...: exit 2 and exactly one line on
# stderr, which matches PATTERN.
one_line() {
  local what=$1 pat=$2 out rc
  shift 2
  out=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [ "$rc" -ne 2 ]; then
    bad "$what: exit $rc, expected 2; output: $(head -c 400 <<<"$out")"
  elif [ "$(wc -l <<<"$out")" -ne 1 ] || ! grep -qE -- "$pat" <<<"$out"; then
    bad "$what: expected one line matching '$pat'; output: $(head -c 400 <<<"$out")"
  else
    ok "$what"
  fi
}

expect "accuracy: whole trees of Tic-Tac-Toe" 0 '^bpip[^ ]* +120/120 +1\.000' \
  "$P" accuracy --game tictactoe --model "$T3" --agent "bpip,N=100000,sigma=1,gulp=0.1"
expect "accuracy: a small budget on connect4, evaluations per move within it" 0 \
  '^bpip[^ ]* +[0-9]+/1000 +0\.[0-9]+ .* ([0-9]|[1-2][0-9]|30)\.[0-9]$' \
  "$P" accuracy --model "$C4" --agent "bpip,N=30"
expect "the kinds list names bpip" 2 'bpip:PATH\[,N=n\]\[,sigma=x\]\[,gulp=x\]' \
  "$P" accuracy --agent nosuchkind
one_line "N=0" 'bpip.*bad N="0" \(expected an integer in 1\.\.100000\)' \
  "$P" accuracy --model "$C4" --agent "bpip,N=0"
one_line "N too large" 'bad N="100001"' "$P" accuracy --model "$C4" --agent "bpip,N=100001"
one_line "sigma=0" 'bad sigma="0" \(expected a number in 0\.01\.\.4\)' \
  "$P" accuracy --model "$C4" --agent "bpip,sigma=0"
one_line "gulp=1" 'bad gulp="1"' "$P" accuracy --model "$C4" --agent "bpip,gulp=1"
one_line "an unknown setting" 'unknown or repeated setting "depth=2"' \
  "$P" accuracy --model "$C4" --agent "bpip,depth=2"
one_line "an alphazero checkpoint" 'alphazero checkpoint has no V and Q for BPIP' \
  "$P" accuracy --game tictactoe --agent "bpip:$AZ"
one_line "another game's checkpoint" 'checkpoint plays tictactoe, but this match is connect4' \
  "$P" accuracy --agent "bpip:$T3"
one_line "no checkpoint" 'bpip needs a checkpoint file' "$P" accuracy --agent bpip

finish test_cli_bpip
