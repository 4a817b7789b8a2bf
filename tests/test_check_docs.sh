#!/usr/bin/env bash
# test_check_docs.sh BIN_DIR SOURCE_DIR - the figures the documents quote
# agree with the committed data they come from (scripts/check-docs.py on
# the source tree), and the check can fail: on a copy of the tree with one
# figure of a document changed, one number of a data file, or a row of it
# removed, it exits 1 naming the document and what the data gives; with a
# data file missing, 2. BIN_DIR is not used (the check reads files only).
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_check_docs.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
SRC=$(cd "$2" && pwd) || exit 2
CHECK="$SRC/scripts/check-docs.py"
T=$(mktemp -d /tmp/pb_test_check_docs_XXXXXX)

. "$SRC/tests/cli_lib.sh"
on_exit 'rm -rf "$T"'

# --- the tree as committed ---------------------------------------------------
expect "the documents agree with their data" 0 ' 0 do not$' \
  python3 "$CHECK" --root "$SRC"
n=$(python3 "$CHECK" --root "$SRC" | sed -n 's/^check-docs: \([0-9]*\) figures agree.*/\1/p')
if [ "${n:-0}" -ge 100 ]; then ok "$n figures checked"; else bad "only ${n:-0} figures checked"; fi
expect "--list names each check's document and data" 0 \
  '^docs/results.md: Rows from docs/results/connect4-fast-elo.csv' python3 "$CHECK" --list

# --- doctored copies -----------------------------------------------------------
# copy_tree: a fresh copy of the documents and their data in $T/tree.
copy_tree() {
  rm -rf "$T/tree"
  mkdir -p "$T/tree/data/models"
  cp -r "$SRC/docs" "$SRC/README.md" "$T/tree/" &&
    cp "$SRC/data/models/README.md" "$T/tree/data/models/"
}
# doctor FILE SED_EXPR: copy_tree, with SED_EXPR applied to FILE (which
# must change it).
doctor() {
  copy_tree || return 1
  sed -i "$2" "$T/tree/$1"
  if cmp -s "$SRC/$1" "$T/tree/$1"; then
    bad "doctoring $1 with '$2' changed nothing"
    return 1
  fi
}

# A figure of a table changed in the document.
doctor docs/results.md 's/^| 28 | 4.7 | 1618 |/| 28 | 4.7 | 1619 |/' &&
  expect "a table cell that disagrees is found" 1 \
    'data gives: +\| 28 \| 4\.7 \| 1618 \|' python3 "$CHECK" --root "$T/tree"
# A figure in a wrapped paragraph changed (README's headline).
doctor README.md 's/reaches 1743 \[1718, 1770\]/reaches 1760 [1718, 1770]/' &&
  expect "a figure in prose that disagrees is found" 1 \
    '^FAIL README.md disagrees with docs/results/connect4-fast-elo.csv' \
    python3 "$CHECK" --root "$T/tree"
# A number of a data file changed: the documents quoting it disagree.
doctor docs/results/connect4-strong-60min-fp32-s2-elo.csv 's/^147,147,2067.0,/147,147,2000.0,/' &&
  expect "a changed data file is found" 1 \
    '^FAIL docs/performance.md disagrees with docs/results/connect4-strong-60min-fp32-s2-elo.csv' \
    python3 "$CHECK" --root "$T/tree"
# A row a check computes from removed from the data.
doctor docs/results/connect4-fast-elo.csv '/^29,29,/d' &&
  expect "data without a row a check needs is found" 1 \
    'connect4-fast-elo.csv.* do not give .*no row for iteration 29' \
    python3 "$CHECK" --root "$T/tree"
# A data file gone.
copy_tree && rm "$T/tree/docs/results/connect4-b512-30min-elo.csv" &&
  expect "a missing data file is exit status 2, named" 2 'connect4-b512-30min-elo.csv' \
  python3 "$CHECK" --root "$T/tree"
expect "a bad option is exit status 2" 2 'usage' python3 "$CHECK" --no-such-option

finish test_check_docs
