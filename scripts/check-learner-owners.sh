#!/usr/bin/env bash
# check-learner-owners.sh [ROOT] - each part of the learner's state is
# written only by the file that owns it.
#
# learner/state.h composes struct pb_learner of one struct per concern;
# each member line names its owners after the last colon of its comment:
#     pb_lspot_t spot;     /* the spot check: spot.c */
# This script reads those lines and lists every line of learner/*.c, other
# than the owners', that writes such a member directly: an assignment
# (=, +=, |=, ...), ++ or -- on `l->NAME.field...`. Reading is free, and
# so are the records of peers and identities (state_peer.h), which have a
# part per concern by design. Exit 0 when there is none, 1 listing them,
# 2 when state.h has no such member lines.
set -uo pipefail
ROOT=${1:-$(cd "$(dirname "$0")/.." && pwd)}
STATE="$ROOT/learner/state.h"
[ -f "$STATE" ] || { echo "check-learner-owners: no $STATE" >&2; exit 2; }

# "NAME file.c file.c" per member
members=$(sed -n 's|^ *pb_l[a-z]*_t \([a-z_]*\); */\*.*: *\([a-z_., ]*\.c\) *\*/.*|\1 \2|p' "$STATE" |
  tr -d ',')
[ -n "$members" ] || { echo "check-learner-owners: no owned members in $STATE" >&2; exit 2; }

bad=0
while read -r name owners; do
  for f in "$ROOT"/learner/*.c; do
    base=$(basename "$f")
    case " $owners " in *" $base "*) continue ;; esac
    hits=$(grep -nE "(\+\+|--) *l->$name\.|l->$name\.[A-Za-z_][A-Za-z_0-9]*(\[[^]]*\])*(\.[A-Za-z_][A-Za-z_0-9]*)* *([-+*/|&^]?=[^=]|\+\+|--)" "$f")
    if [ -n "$hits" ]; then
      while IFS= read -r h; do
        echo "learner/$base:$h   (l->$name is written by $owners only)"
      done <<<"$hits"
      bad=1
    fi
  done
done <<<"$members"
n=$(wc -l <<<"$members")
if [ $bad -eq 0 ]; then
  echo "check-learner-owners: each of the $n parts of the learner's state is written by its owners only"
  exit 0
fi
exit 1
