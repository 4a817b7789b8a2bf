#!/usr/bin/env bash
# test_algo_names.sh BIN_DIR SOURCE_DIR - outside the algorithm modules
# (common/algo/) and their data table (common/run/algos.c) no code branches
# on which algorithm runs (scripts/check-algo-names.sh on the source tree),
# and the check can fail: on a copy of the tree with a comparison against an
# algorithm's name added to a file of another floor it exits 1 naming the
# line; the same line inside common/algo/ passes; a fourth row in the table
# makes its name one the check looks for. BIN_DIR is not used.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_algo_names.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
SRC=$(cd "$2" && pwd) || exit 2
CHECK="$SRC/scripts/check-algo-names.sh"
T=$(mktemp -d /tmp/pb_test_algo_names_XXXXXX)

. "$SRC/tests/cli_lib.sh"
on_exit 'rm -rf "$T"'

expect "the tree branches on no algorithm's name" 0 \
  "none branches on an algorithm's name \(probs\|alphazero\|td\)" bash "$CHECK" "$SRC"

# copy_tree: the C sources of the tree in $T/tree (no build, no tests).
copy_tree() {
  rm -rf "$T/tree"
  mkdir -p "$T/tree"
  (cd "$SRC" && find . \( -name 'build*' -o -name tests -o -name .git \) -prune -o \
    \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) -print0 |
    xargs -0 cp --parents -t "$T/tree")
}
# add FILE LINE: copy_tree, with LINE appended to FILE.
add() {
  copy_tree && printf '%s\n' "$2" >>"$T/tree/$1"
}

add common/nn/model.c 'static int f(const pb_config_t *c) { return !strcmp(c->algorithm, "td"); }'
expect "a comparison of the config's algorithm in common/nn is found" 1 \
  '^common/nn/model\.c:[0-9]+:.*c->algorithm' bash "$CHECK" "$T/tree"
add evaluator/evalrun.c 'static int g(const char *a) { return strcmp(a, "alphazero") == 0; }'
expect "a comparison with a name in the evaluator is found" 1 \
  '^evaluator/evalrun\.c:[0-9]+:.*"alphazero"' bash "$CHECK" "$T/tree"
add cli/progress.c 'static int h(const char *v) { return memcmp(v, "\"td\"", 4) == 0; }'
expect "a quoted JSON name in the cli is found" 1 '^cli/progress\.c:[0-9]+:' \
  bash "$CHECK" "$T/tree"
add common/play/agent.c 'static const void *k(void) { return pb_algos_find("probs"); }'
expect "a row looked up by a literal name is found" 1 '^common/play/agent\.c:[0-9]+:' \
  bash "$CHECK" "$T/tree"
add common/train/learn.c 'static int m(const pb_config_t *c) { return pb_config_td(c); }'
expect "the old helpers are found" 1 '^common/train/learn\.c:[0-9]+:.*pb_config_td' \
  bash "$CHECK" "$T/tree"
add common/algo/algo_td.c 'static int n(const pb_config_t *c) { return !strcmp(c->algorithm, "td"); }'
expect "the same line in an algorithm module passes" 0 "none branches" \
  bash "$CHECK" "$T/tree"
add common/play/agent.c 'static int p(const pb_config_t *c) { return !strcmp(c->search.algorithm, "abnet"); }'
expect "search.algorithm (the targets' search) is another key" 0 "none branches" \
  bash "$CHECK" "$T/tree"
# A fourth row: its name is one the check looks for.
add cli/cmd_play.c 'static int q(const char *a) { return !strcmp(a, "muzero"); }'
expect "an unknown name is not an algorithm's" 0 "none branches" bash "$CHECK" "$T/tree"
sed -i 's|^static const pb_algo_data_t \*const rows\[\] = {|const pb_algo_data_t pb_algo_data_muzero = {\n    .name = "muzero",\n};\n&|' \
  "$T/tree/common/run/algos.c"
expect "with a fourth row, its name is found" 1 '^cli/cmd_play\.c:[0-9]+:.*"muzero"' \
  bash "$CHECK" "$T/tree"
expect "a tree without the table is a usage error" 2 "no .*common/run/algos.c" \
  bash "$CHECK" "$T"

finish test_algo_names
