/* abtargets.h - Q-targets by alpha-beta (search.algorithm: abnet): what a
 * searcher computes for a position instead of the paper's beam search
 * (beam_search.h), over the same V and Q.
 *
 * For a position s and each legal move a, the target is the value of a
 * for the side to move in s:
 *   - the move ends the game: its reward for the mover, exactly;
 *   - otherwise -value of common/search/abnet.h's search of the child s+a, with at
 *     most `max_depth - 1` plies below the child (so the horizon is at most
 *     max_depth plies below s, as the beam's M) and at most `nodes`
 *     network evaluations, clamped to [-1, 1]. When the budget covers an
 *     iteration of depth max_depth - 1 the target is the plain full-width
 *     negamax over V to that depth, bit for bit; when it covers not even
 *     one ply below the child (fewer than 1 + the child's legal moves
 *     evaluations), the child's value is its highest legal Q.
 * Illegal actions get 0. Each move's search is its own (abnet forgets its
 * table between searches); a network evaluation cache behind the evalfn
 * (common/nn/neteval.h) serves the transpositions between them.
 *
 * Batching: abnet searches one position at a time, so pb_abtargets_run
 * searches up to `parallel` positions at once, each on a thread of its own
 * (member 0 on the calling thread), and common/search/batcher.h joins their
 * network calls into one call of the evalfn (which is called by one thread
 * at a time; it need not be thread-safe). Positions go to members as they
 * become free. With an evalfn whose output for a state does not depend on
 * the other states of its call, the targets do not depend on `parallel`.
 *
 * Workload: a searcher's work item (hundreds to thousands of positions per
 * call), 1..~10,000 evaluations per move. Everything is allocated by
 * pb_abtargets_new; a run allocates nothing but the members' threads. */
#ifndef PB_ABTARGETS_H
#define PB_ABTARGETS_H

#include <stdint.h>

#include "err.h"
#include "evalfn.h"
#include "game.h"

typedef struct pb_abtargets pb_abtargets_t;

/* More positions at once than this run this many at once. */
#define PB_ABTARGETS_MAX_PARALLEL 64

/* A target searcher for game g: max_depth 2..PB_ABNET_MAX_DEPTH + 1,
 * nodes 1..PB_ABNET_MAX_NODES (evaluations per legal move), parallel >= 1.
 * NULL with err filled (PB_EINVAL naming the bad argument, PB_ENOMEM). */
pb_abtargets_t *pb_abtargets_new(const pb_game_t *g, int max_depth,
                                 uint64_t nodes, int parallel, pb_err_t *err);

/* Frees it; accepts NULL and sets *t to NULL. */
void pb_abtargets_destroy(pb_abtargets_t **t);

/* Writes the targets of states[i] (i < n, none terminal) to
 * out[i * num_actions + a]. Returns 0, PB_EINVAL (a NULL argument, or the
 * game is over in a position: nothing is searched), the evalfn's error, or
 * PB_ENOMEM / PB_EIO when a thread cannot be started. */
int pb_abtargets_run(pb_abtargets_t *t, const pb_state_t *states, int n,
                     const pb_evalfn_t *ev, float *out, pb_err_t *err);

typedef struct pb_abtargets_stats {
  uint64_t positions; /* positions searched */
  uint64_t moves;     /* legal moves valued */
  uint64_t searches;  /* of which by a search (the game goes on) */
  uint64_t depth_sum; /* summed over searches: the completed depth */
  uint64_t solved;    /* searches whose value is the game's exact value */
  uint64_t v_evals, q_evals; /* positions given to V and Q (before any
                                cache behind the evalfn) */
} pb_abtargets_stats_t;

/* Counters accumulated over all runs. */
void pb_abtargets_stats(const pb_abtargets_t *t, pb_abtargets_stats_t *st);

/* The options of the searcher: its max_depth and nodes. */
int pb_abtargets_max_depth(const pb_abtargets_t *t);
uint64_t pb_abtargets_nodes(const pb_abtargets_t *t);

#endif
