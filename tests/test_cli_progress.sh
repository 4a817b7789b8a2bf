#!/usr/bin/env bash
# test_cli_progress.sh BIN_DIR SOURCE_DIR - the progress meter
# (cli/progress.h) as a user sees it:
#   - off a terminal (stderr a pipe or a file), a command that runs past
#     a few seconds prints plain progress lines (count, rate, elapsed,
#     ETA) on stderr, no carriage returns, and its results on stdout as
#     before;
#   - on a terminal (a pty, by script(1)), a bar redrawn in place ("\r",
#     the share filled, the percentage), ended with its line before the
#     results: probs accuracy, probs match, probs elo-calibrate.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_cli_progress.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
BIN=$(cd "$1" && pwd) || exit 2
SRC=$(cd "$2" && pwd) || exit 2
P="$BIN/probs"
T=$(mktemp -d /tmp/pb_test_progress_XXXXXX)

. "$SRC/tests/cli_lib.sh"
on_exit 'rm -rf "$T"' # and kills what the test started

# --- off a terminal: lines every few seconds --------------------------------
# uct:8000 on one thread takes well past the 5 s between lines (uct:3000 took
# 4.9 s in the ASan build on an idle 2-core EPYC: no line).
"$P" accuracy --game connect4 --agent uct:8000 --threads 1 \
  >"$T/acc.out" 2>"$T/acc.err"
rc=$?
n=$(grep -cE '^accuracy: [0-9]+/1000 positions, uct:8000, [0-9.]+ positions/s, elapsed [0-9ms]+(, ETA [0-9hms]+)?$' "$T/acc.err")
if [ $rc -eq 0 ] && [ "$n" -ge 2 ] &&
   grep -qE '^accuracy: [0-9]+/1000 positions, .*, ETA ' "$T/acc.err" &&
   grep -qE '^accuracy: 1000/1000 positions, uct:8000, ' "$T/acc.err" &&
   ! grep -q $'\r' "$T/acc.err" &&
   grep -qE '^uct:8000 +[0-9]+/1000 ' "$T/acc.out" &&
   ! grep -q '^accuracy:' "$T/acc.out"; then
  ok "accuracy off a terminal: $n progress lines on stderr (rate, ETA), the result on stdout"
else bad "accuracy lines: rc $rc, $n lines: $(head -c 500 "$T/acc.err") | $(cat "$T/acc.out")"; fi

# A quick command prints no progress at all off a terminal.
"$P" accuracy --game connect4 --agent lookahead:1 >"$T/q.out" 2>"$T/q.err"
if [ $? -eq 0 ] && [ ! -s "$T/q.err" ]; then
  ok "a quick accuracy prints no progress line"
else bad "quick: $(head -c 300 "$T/q.err")"; fi

# --- on a terminal: the bar ---------------------------------------------------
if ! command -v script >/dev/null 2>&1; then
  ok "script(1) missing: the terminal checks are skipped"
  finish test_cli_progress
  exit $?
fi
on_pty() { # on_pty OUT CMD...: CMD on a pseudo-terminal, its output in OUT
  local out=$1
  shift
  script -qec "$(printf '%q ' "$@")" /dev/null >"$out" 2>&1 </dev/null
}
on_pty "$T/tty-acc.out" "$P" accuracy --game connect4 --agent uct:100 --threads 1
if grep -q $'\r''accuracy \[########################\] 100% 1000/1000 positions, uct:100, ' "$T/tty-acc.out" &&
   grep -qE '^uct:100 +[0-9]+/1000 ' <(tr -d '\r' <"$T/tty-acc.out" | sed 's/\x1b\[K/\n/g'); then
  ok "accuracy on a terminal: the bar, redrawn in place, ended before the result"
else bad "tty accuracy: $(head -c 500 "$T/tty-acc.out" | cat -v)"; fi

on_pty "$T/tty-match.out" "$P" match --a lookahead:1 --b random --games 20
if grep -q $'\r''progress \[########################\] 100% 20/20 games, W=[0-9]* D=[0-9]* L=[0-9]*, elo ' "$T/tty-match.out" &&
   grep -q '^result: W=' <(tr -d '\r' <"$T/tty-match.out"); then
  ok "match on a terminal: the bar with W/D/L and Elo, then the summary"
else bad "tty match: $(head -c 500 "$T/tty-match.out" | cat -v)"; fi

on_pty "$T/tty-elo.out" "$P" elo-calibrate --players random,lookahead:1,lookahead:2 --games 10
if grep -q $'\r''progress \[.*\] [0-9]*% [0-9]*/30 games, random vs lookahead:1' "$T/tty-elo.out" &&
   grep -q 'lookahead:1 *lookahead:2' "$T/tty-elo.out"; then
  ok "elo-calibrate on a terminal: the bar over every pair's games, the pair under way"
else bad "tty elo: $(head -c 600 "$T/tty-elo.out" | cat -v)"; fi

finish test_cli_progress
