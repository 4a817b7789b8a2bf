/* beam_search.h - the paper's Algorithm 1, batched across many searches.
 *
 * For a position s, the search grows a sub-tree: the root is always expanded
 * and its children get infinite priority; each later expansion pops the
 * queued node of highest priority (ties: the node created first), and its
 * children are queued with priority Q(node)[action] unless they are deeper
 * than M (max_depth). At most E (expansions) nodes are expanded. Terminal
 * children take the value -reward, unexpanded leaves take V(leaf), an
 * expanded node takes max over its children of -value. The result for every
 * legal root action a is -value(child a); illegal actions get 0.
 *
 * Values are from the side to move at each node. Q of a node is only asked
 * for when its children can be queued with a finite priority (so never for
 * the root or for nodes at depth M): the result is the same as the paper's,
 * with fewer network calls.
 *
 * Workload: thousands of positions per call (a work item), E in 10..500,
 * M in 2..99. pb_beam_run advances `parallel` searches together so that
 * every expansion round makes one batched Q call and all leaves of the
 * round's searches are valued with one batched V call. The trees live in
 * arrays allocated once by pb_beam_new; the hot loop does not allocate. */
#ifndef PB_BEAM_SEARCH_H
#define PB_BEAM_SEARCH_H

#include <stdint.h>

#include "err.h"
#include "evalfn.h"
#include "game.h"

typedef struct pb_beam pb_beam_t;

typedef struct pb_beam_stats {
  uint64_t searches;   /* positions searched */
  uint64_t expanded;   /* nodes expanded */
  uint64_t nodes;      /* nodes created */
  uint64_t q_asked;    /* positions passed to the Q callback */
  uint64_t v_asked;    /* leaves passed to the V callback */
  uint64_t q_calls, v_calls;
  /* The shape of the trees (instrumentation; the search is the same):
   * summed over searches, the depth of the deepest expanded node, the
   * root's legal moves, and those of them whose subtree has an expanded
   * node below the move itself (searched past 2 plies); expansions by the
   * depth of the node expanded (index 7: 7 and deeper). */
  uint64_t depth_max_sum, root_moves, root_moves_deep;
  uint64_t expanded_at[8];
} pb_beam_stats_t;

/* A searcher for game g with E = expansions (>= 1), M = max_depth (>= 1),
 * advancing up to `parallel` searches at once (>= 1; reduced if the trees
 * would need more than about 1 GiB). Returns NULL with err filled. */
pb_beam_t *pb_beam_new(const pb_game_t *g, int expansions, int max_depth,
                       int parallel, pb_err_t *err);

/* Frees the searcher; accepts NULL and sets *b to NULL. */
void pb_beam_destroy(pb_beam_t **b);

/* Searches every states[i] (i < n, none terminal) and writes its Q-targets
 * to out[i * num_actions + a]: -value(child) for legal a, 0 otherwise.
 * ev supplies V and Q. Returns 0, PB_EINVAL for a terminal root, or the
 * callback's error. */
int pb_beam_run(pb_beam_t *b, const pb_state_t *states, int n,
                const pb_evalfn_t *ev, float *out, pb_err_t *err);

/* Counters accumulated over all runs. */
void pb_beam_stats(const pb_beam_t *b, pb_beam_stats_t *st);

/* The reference: a plain transcription of Algorithm 1 for one position,
 * one network call per node, a linear-scan priority queue and a recursive
 * backup. Slow on purpose; tests check pb_beam_run against it. */
int pb_beam_search_ref(const pb_game_t *g, const pb_state_t *s, int expansions,
                       int max_depth, const pb_evalfn_t *ev, float *out,
                       pb_err_t *err);

#endif
