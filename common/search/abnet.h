/* abnet.h - alpha-beta over a PROBS V and Q: negamax with principal
 * variation search, a transposition table and iterative deepening to a
 * budget of network evaluations or of time.
 *
 * The value searched is the plain depth-d negamax over V: a position d
 * plies below the root (the horizon) is worth V(position) for its side to
 * move, clamped to [-1, 1] (NaN counts as -1); a position where the game
 * is over is worth its result exactly (+1 / 0 / -1 for the mover into it,
 * so -reward from its own side). Alpha-beta, PVS, the transposition table
 * and the move order change only how much of the tree is looked at, never
 * the root value of a completed iteration: it is that negamax value, bit
 * for bit (tests check it against a brute-force negamax). The table's
 * values are used only within the iteration that stored them and at the
 * same remaining depth; across iterations it keeps each position's best
 * move, V and Q, so no position is sent to a network twice in one search.
 *
 * Move order at a node: a move that wins at once ends the node (its value
 * is 1, the most there is); then the table's best move; then Q(node)
 * descending where the node has Q, else the killer moves of its ply and
 * the history heuristic; ties to the lowest action. A node has Q when it is
 * the root, or when it is fewer than q_plies plies below the root and
 * either 2 or more plies from the horizon or `batch` is 0. With `batch` 1
 * a node 1 ply from the horizon values all its children that the table
 * does not hold in one V call (no cut-offs among them: more evaluations,
 * far fewer calls); with `batch` 0 it values them one V call each, in
 * order, and stops at a cut-off.
 *
 * Iterative deepening: depth 1, 2, ... up to max_depth. Before every
 * network call the search checks the budget: a call that would take the
 * evaluations (positions given to V plus positions given to Q) past
 * `nodes`, or a call after the deadline, abandons the iteration, and the
 * search answers with the deepest completed one. The root's Q is asked for
 * first (one evaluation): with no completed iteration the move is the legal
 * move of highest Q. An iteration that reaches no horizon (every line ends
 * the game) has solved the position: the search stops there.
 *
 * The evaluations of one search are deterministic given the position and
 * the options (a time budget makes where it stops depend on the clock).
 * The table is forgotten between searches, so a search does not depend on
 * the ones before it.
 *
 * Workload: play-time search, one position at a time, 10 to ~100,000
 * evaluations per move. Everything is allocated by pb_abnet_new (the table
 * and the Q rows are sized from the budget); a search allocates nothing. */
#ifndef PB_ABNET_H
#define PB_ABNET_H

#include <stdatomic.h>
#include <stdint.h>

#include "bounds.h"
#include "err.h"
#include "evalfn.h"
#include "game.h"

typedef struct pb_abnet pb_abnet_t;

/* PB_ABNET_MAX_DEPTH: common/base/bounds.h */
#define PB_ABNET_MAX_NODES ((uint64_t)PB_SEARCH_MAX_NODES)

typedef struct pb_abnet_opts {
  uint64_t nodes;  /* evaluations per search, 1..PB_ABNET_MAX_NODES;
                      0 = no limit (then time_ms must be > 0) */
  int time_ms;     /* wall-clock budget per search in ms; 0 = none */
  int max_depth;   /* deepest iteration, 1..PB_ABNET_MAX_DEPTH */
  int q_plies;     /* nodes above this many plies below the root get Q
                      (1 = the root only), 1..PB_ABNET_MAX_DEPTH */
  int batch;       /* 1: the children of a node 1 ply from the horizon are
                      valued in one V call; 0: one by one */
} pb_abnet_opts_t;

/* The defaults: nodes 1000, no time budget, max_depth
 * PB_ABNET_MAX_DEPTH, q_plies 2 (Q at the root and its children; deeper
 * nodes by the table, killers and history), batch 1. Measured on Connect
 * Four (docs/strength.md): q_plies 1..3 play as well as Q everywhere at
 * 100..3000 evaluations and take 20-40% less time; batch 0 plays as well
 * per evaluation and takes twice the time. */
void pb_abnet_defaults(pb_abnet_opts_t *o);

typedef struct pb_abnet_result {
  int move;        /* the move to play */
  float value;     /* the root's negamax value at `depth` (from the side
                      to move); with depth 0 the highest legal Q */
  int depth;       /* the deepest completed iteration; 0: none */
  int solved;      /* 1: that iteration reached no horizon, so value is
                      the game's exact value */
  uint64_t v_evals, q_evals; /* positions given to V and to Q */
  uint64_t v_calls, q_calls; /* calls of each callback */
  uint64_t nodes;  /* positions searched (interior nodes and leaves) */
  /* The principal variation of the deepest completed iteration: pv[0] is
   * `move`, then each position's best move as that iteration stored it,
   * until `depth` moves, a move that ends the game, or a position the
   * table no longer holds. Along a whole line the horizon's V (or the
   * result of the move that ends the game), signed for the root's side,
   * is `value`. With depth 0: the one move. */
  int pv_len;
  uint8_t pv[PB_ABNET_MAX_DEPTH];
} pb_abnet_result_t;

/* A searcher for game g; NULL with err filled (PB_EINVAL naming the bad
 * option, PB_ENOMEM). */
pb_abnet_t *pb_abnet_new(const pb_game_t *g, const pb_abnet_opts_t *o,
                         pb_err_t *err);

/* Frees it; accepts NULL and sets *ab to NULL. */
void pb_abnet_destroy(pb_abnet_t **ab);

/* Searches s (not terminal) with V and Q from ev; fills *res. Returns 0,
 * PB_EINVAL (a NULL argument, or the game is over in s), or the
 * callback's error. */
int pb_abnet_search(pb_abnet_t *ab, const pb_state_t *s, const pb_evalfn_t *ev,
                    pb_abnet_result_t *res, pb_err_t *err);

/* Searches from now on also stop at pb_now() = until (seconds, common/
 * base/util.h; 0 = no such bound), as at time_ms's deadline: the deepest
 * iteration completed by then answers. */
void pb_abnet_set_deadline(pb_abnet_t *ab, double until);

/* Searches from now on also stop while *stop is nonzero (NULL: never;
 * borrowed, may be set by another thread or a signal handler), as at the
 * deadline: the deepest iteration completed by then answers. */
void pb_abnet_set_stop(pb_abnet_t *ab, const atomic_int *stop);

/* Searches from now on call fn(ctx, r) after each completed iteration
 * that does not end the search, with the result so far (move, value, depth, principal
 * variation, counters): for reports during a long search. NULL: none. */
typedef void (*pb_abnet_progress_fn)(void *ctx, const pb_abnet_result_t *r);
void pb_abnet_set_progress(pb_abnet_t *ab, pb_abnet_progress_fn fn,
                           void *ctx);

/* The options in use (budgets as given). */
const pb_abnet_opts_t *pb_abnet_options(const pb_abnet_t *ab);

#endif
