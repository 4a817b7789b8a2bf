#!/usr/bin/env bash
# test_learner_owners.sh BIN_DIR SOURCE_DIR - each part of the learner's
# state (learner/state.h: l->net, l->it, l->spot, ...) is written only by
# the file that owns it (scripts/check-learner-owners.sh on the source
# tree), and the check can fail: on a copy of learner/ with a write of
# l->spot from status.c, an increment of l->quar from peers.c or a compound
# assignment to l->it from spot.c, it exits 1 naming the line; the same
# write in the owner passes; a read is not a write. BIN_DIR is not used.
set -uo pipefail

[ $# -eq 2 ] || { echo "usage: test_learner_owners.sh BIN_DIR SOURCE_DIR" >&2; exit 2; }
SRC=$(cd "$2" && pwd) || exit 2
CHECK="$SRC/scripts/check-learner-owners.sh"
T=$(mktemp -d /tmp/pb_test_learner_owners_XXXXXX)

. "$SRC/tests/cli_lib.sh"
on_exit 'rm -rf "$T"'

expect "the tree's learner writes each part from its owners only" 0 \
  "each of the [0-9]+ parts .* by its owners only" bash "$CHECK" "$SRC"

# add FILE LINE: a copy of learner/ in $T/tree, with LINE appended to FILE.
add() {
  rm -rf "$T/tree" && mkdir -p "$T/tree" && cp -r "$SRC/learner" "$T/tree/" &&
    printf '%s\n' "$2" >>"$T/tree/$1"
}

add learner/status.c 'static void f(pb_learner_t *l) { l->spot.checked = 0; }'
expect "an assignment from another file is found" 1 \
  '^learner/status\.c:[0-9]+:.*l->spot\.checked = 0.*written by spot\.c only' \
  bash "$CHECK" "$T/tree"
add learner/peers.c 'static void g(pb_learner_t *l) { ++l->quar.n_banned; }'
expect "a prefix increment is found" 1 '^learner/peers\.c:[0-9]+:.*quarantine\.c only' \
  bash "$CHECK" "$T/tree"
add learner/spot.c 'static void h(pb_learner_t *l) { l->it.t_phase += 1.0; }'
expect "a compound assignment is found" 1 '^learner/spot\.c:[0-9]+:.*phases\.c only' \
  bash "$CHECK" "$T/tree"
add learner/learner.c 'static void k(pb_learner_t *l) { l->net.peers[0].items++; }'
expect "an element's field incremented is found" 1 '^learner/learner\.c:[0-9]+:' \
  bash "$CHECK" "$T/tree"
add learner/spot.c 'static void m(pb_learner_t *l) { l->spot.checked = 0; }'
expect "the same write in its owner passes" 0 "owners only" bash "$CHECK" "$T/tree"
add learner/intake.c 'static void n(pb_learner_t *l) { l->intake.msgs_in++; }'
expect "a part with two owners: the second passes" 0 "owners only" bash "$CHECK" "$T/tree"
add learner/status.c 'static int r(pb_learner_t *l) { return l->spot.checked == 0 && l->it.phase != 1; }'
expect "a comparison is a read" 0 "owners only" bash "$CHECK" "$T/tree"
expect "a tree without learner/state.h is a usage error" 2 "no .*learner/state.h" \
  bash "$CHECK" "$T/nothing"

finish test_learner_owners
