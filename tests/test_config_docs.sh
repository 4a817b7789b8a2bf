#!/usr/bin/env bash
# test_config_docs.sh BIN_DIR SOURCE_DIR - the config keys are documented
# where a user reads them: every key `probs train --keys` lists (one row of
# common/run/config_schema.c each) has a description and a default, and
# every `section.key` the documents (docs/*.md, README.md) write in
# backticks is a key of the schema, or a section of keys (`model.v`). The
# check can fail: a document naming a key the schema lacks, and a key
# without a description, are found and named.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_config_docs.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
BIN=$1
SRC=$(cd "$2" && pwd) || exit 2
T=$(mktemp -d /tmp/pb_test_config_docs_XXXXXX)

. "$SRC/tests/cli_lib.sh"
on_exit 'rm -rf "$T"'

# keys_of LISTING: the keys of a --keys listing, one a line.
keys_of() { awk '/^  [a-z]/ { print $1 }' "$1" | sort -u; }

# undocumented LISTING: the keys whose row has no description, or whose
# next line gives no default.
undocumented() {
  awk '/^  [a-z]/ { if (p != "") print p; p = $1; if (NF < 2) print $1; next }
       /^ +default / { p = ""; next }
       END { if (p != "") print p }' "$1"
}

# unknown_in LISTING FILE...: each `section.key` of the files that is
# neither a key nor a section of keys, as FILE: NAME.
unknown_in() {
  local listing=$1
  shift
  local keys secs
  keys=$(keys_of "$listing")
  secs=$(grep '\.' <<<"$keys" | cut -d. -f1 | sort -u | paste -sd'|')
  grep -oHE "\`($secs)\.[a-z0-9_.]+\`" "$@" | tr -d '`' | sed 's/\.$//' |
    while IFS=: read -r file name; do
      case $name in *.h | *.c | *.md | *.yaml | *.py | *.sh | *.json*) continue ;; esac
      grep -qxF "$name" <<<"$keys" && continue
      grep -q "^$name\." <<<"$keys" && continue # a section: model.v
      echo "${file#"$SRC"/}: $name"
    done | sort -u
}

"$BIN/probs" train --keys >"$T/keys.txt" 2>&1
n=$(keys_of "$T/keys.txt" | wc -l)
if [ "$n" -ge 100 ]; then ok "--keys lists $n keys"; else bad "--keys lists only $n keys"; fi

u=$(undocumented "$T/keys.txt" | sort -u)
if [ -z "$u" ]; then ok "every key has a description and a default"
else bad "keys without a description or default: $u"; fi

miss=$(unknown_in "$T/keys.txt" "$SRC"/docs/*.md "$SRC/README.md")
if [ -z "$miss" ]; then ok "every key the documents name is in the schema"
else bad "the documents name keys the schema lacks: $miss"; fi

# --- the check can fail --------------------------------------------------------
cp "$SRC/README.md" "$T/README.md"
echo 'Set `net.no_such_key` to 3.' >>"$T/README.md"
miss=$(unknown_in "$T/keys.txt" "$T/README.md")
if grep -q 'README.md: net.no_such_key' <<<"$miss"; then ok "a document naming an unknown key is found"
else bad "a document naming net.no_such_key was not found: '$miss'"; fi
sed '0,/^ \+default /{/^ \+default /d}' "$T/keys.txt" >"$T/keys-bad.txt"
u=$(undocumented "$T/keys-bad.txt" | sort -u)
if [ -n "$u" ]; then ok "a key without its default line is found ($u)"
else bad "a listing with a default line removed passed"; fi
sed 's/^\(  [a-z][a-z0-9_.]*\) .*/\1/' "$T/keys.txt" >"$T/keys-nodoc.txt"
u=$(undocumented "$T/keys-nodoc.txt" | sort -u)
if [ -n "$u" ]; then ok "keys without a description are found"
else bad "a listing without descriptions passed"; fi

finish test_config_docs
