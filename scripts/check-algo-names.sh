#!/usr/bin/env bash
# check-algo-names.sh [ROOT] - no code outside the algorithm modules and
# their data table branches on which algorithm runs.
#
# What an algorithm is lives in two places: its row in common/run/algos.c
# (name, config section, the family of its networks, agent, whether it
# searches, its config check) and its behaviour in common/algo/ (pb_algo_t).
# Everything else reads a row's fields (pb_algos_of(cfg)->nets, ->searches)
# or a model's recorded family (pb_model_kind), never the name. This script
# lists each line of C source outside those places that
#   - compares with an algorithm's name (strcmp, memcmp, ... against
#     "probs", "alphazero", "td": the names are read from the table), or
#     looks a row up by a literal name;
#   - compares a config's `algorithm` field (search.algorithm, the targets'
#     search, is another key);
#   - calls the helpers that did so before (pb_config_alphazero,
#     pb_config_td, pb_model_alphazero, pb_learn_alphazero).
# Tests (tests/) name algorithms to set them up and are not searched.
# Exit 0 when there is none, 1 listing them, 2 on a usage error.
set -uo pipefail
ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
TABLE="$ROOT/common/run/algos.c"
[ -f "$TABLE" ] || { echo "check-algo-names: no $TABLE" >&2; exit 2; }
names=$(sed -n 's/^ *\.name = "\([a-z0-9_]*\)",.*/\1/p' "$TABLE" | paste -sd'|')
[ -n "$names" ] || { echo "check-algo-names: no .name rows in $TABLE" >&2; exit 2; }

cd "$ROOT" || exit 2
files=$(find . \( -name 'build*' -o -name tests -o -name .git \) -prune -o \
  \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) -print |
  sed 's|^\./||' | grep -v -e '^common/algo/' -e '^common/run/algos\.c$' | sort)
cmp='(strcmp|strncmp|strcasecmp|memcmp|memmem|strstr)[[:space:]]*\('
# shellcheck disable=SC2086 # $files: one path a word, no spaces
hits=$(
  {
    grep -nHE -e "$cmp[^;]*\"(\\\\\")?($names)(\\\\\")?\"" \
      -e "(pb_algos_find|pb_algo_by_name)[[:space:]]*\(\"" \
      -e '\bpb_(config_alphazero|config_td|model_alphazero|learn_alphazero)\b' \
      $files
    grep -nHE "$cmp[^;]*(\.|->)algorithm\b" $files | grep -v 'search\.algorithm'
  } | sort -u -t: -k1,1 -k2,2n
)
if [ -n "$hits" ]; then
  echo "$hits"
  echo "check-algo-names: $(wc -l <<<"$hits") lines branch on an algorithm's name" \
    "outside common/algo/ and common/run/algos.c: read its row" \
    "(pb_algos_of, common/run/algos.h) or the model's family (pb_model_kind)"
  exit 1
fi
echo "check-algo-names: $(wc -w <<<"$files") files, none branches on an algorithm's name ($names)"
exit 0
