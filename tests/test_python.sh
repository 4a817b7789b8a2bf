#!/usr/bin/env bash
# test_python.sh BIN_DIR SOURCE_DIR - the Python package (python/probs,
# docs/python.md) over this build's libprobs.so: tests/python_probs.py,
# Python's unittest, compares it with the programs (perft, analyze, match)
# and runs docs/python.md's example.
set -u
BIN=$(cd "$1" && pwd)
SRC=$(cd "$2" && pwd)
LIB=$(cd "$BIN/.." && pwd)/lib/libprobs.so
. "$SRC/tests/cli_lib.sh"
on_exit ":"
if [ ! -f "$LIB" ]; then
  bad "no $LIB (the probs_py target)"
  finish test_python
  exit
fi
# An ASan build's library needs ASan's runtime loaded first: the one it
# was linked with, preloaded into the interpreter (whose own allocations
# are not ours to report as leaks). Only the interpreter's: preloaded
# into this script's own tools (ps) it can hang them.
PRE=$(ldd "$LIB" | awk '/libasan/ {print $3}')
# Debian's interpreter where there is one (not a python3 of PATH's that
# some tool installed).
PYTHON=python3
[ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3
PY=(env "LD_PRELOAD=${PRE:-${LD_PRELOAD:-}}" ASAN_OPTIONS=detect_leaks=0 "$PYTHON")
export PROBS_LIB=$LIB PROBS_BIN=$BIN PROBS_SRC=$SRC PYTHONPATH=$SRC/python
export OMP_NUM_THREADS=1
if "${PY[@]}" "$SRC/tests/python_probs.py"; then
  ok "python unittest (tests/python_probs.py)"
else
  bad "python unittest (tests/python_probs.py)"
fi
# python3 -c works as the doc says, the library found from PROBS_LIB
expect "import probs" 0 '^connect4' "${PY[@]}" -c 'import probs; print(", ".join(probs.games()))'
# a library missing: ImportError naming what it tried
expect "no library" 1 'libprobs.so not found' env PROBS_LIB=/nonexistent/libprobs.so \
  "${PY[@]}" -c 'import probs'
finish test_python
