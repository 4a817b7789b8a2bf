/* uct.h - plain UCT: Monte Carlo tree search with the UCB1 tree policy and
 * uniformly random playouts, no network and no game knowledge.
 *
 * For a root position the search grows a tree one simulation at a time.
 * From the root it descends: at a node with a child never tried, it tries
 * one of those (uniformly at random); otherwise it takes the child a that
 * maximises
 *
 *     W(a) / N(a) + c * sqrt(ln N / N(a))
 *
 * (N the node's visits, W(a) the sum of a's results from the node's side to
 * move, ties: the lowest action). The child a new simulation reaches is added
 * to the tree, and from it a playout makes uniformly random legal moves to
 * the end of the game; a game that reaches max_turns plies (counted from the
 * start of the game, as matches count them: game.h's ply) is a draw. The
 * result, +1 win, 0 draw, -1 loss, is backed up the path, negated at every
 * level. A child that ends the game is not played out: its result is the
 * move's reward.
 *
 * With `discount` (the discounting heuristic of Cazenave et al., as used by
 * ../shared/papers/001, section 2.4.3) a terminal payoff is divided by the
 * number of plies from the root to the end of the game it scores (tree
 * plies plus playout plies, >= 1): a win in 1 is worth 1, a win in 3 worth
 * 1/3, so among won lines the quickest is preferred and among lost ones the
 * longest. Draws stay 0.
 *
 * The move played is the most visited root child (ties: the higher mean
 * value, then the lowest action). All randomness comes from the caller's
 * rng, so a search is a function of the position, the options and the rng's
 * state.
 *
 * Workload: baseline opponents (the uct: agent), hundreds to hundreds of
 * thousands of simulations per move on one thread. The tree lives in arrays
 * allocated once by pb_uct_new (simulations + 1 nodes); playouts step a copy
 * of the position on the stack; a search allocates nothing. */
#ifndef PB_UCT_H
#define PB_UCT_H

#include <stdint.h>

#include "err.h"
#include "game.h"
#include "rng.h"

typedef struct pb_uct pb_uct_t;

#define PB_UCT_MAX_SIMULATIONS 1000000

typedef struct pb_uct_opts {
  int simulations; /* per search, 1..PB_UCT_MAX_SIMULATIONS */
  double c;        /* UCB1's exploration constant, finite and > 0 */
  int discount;    /* 1: terminal payoffs divided by plies from the root */
  int max_turns;   /* plies from the start at which a game is a draw;
                      0 = the game's max_turns */
} pb_uct_opts_t;

/* The default exploration constant: sqrt(2), UCB1's (and what
 * ../shared/papers/001 uses with results in {-1, 0, +1}). */
#define PB_UCT_DEFAULT_C 1.4142135623730951

/* A searcher for game g; NULL with err filled (PB_EINVAL naming the bad
 * option, PB_ENOMEM). */
pb_uct_t *pb_uct_new(const pb_game_t *g, const pb_uct_opts_t *o, pb_err_t *err);

/* Frees it; accepts NULL and sets *u to NULL. */
void pb_uct_destroy(pb_uct_t **u);

/* Searches s and returns the action to play (>= 0), or PB_EINVAL (NULL
 * argument, or s is terminal). When not NULL: visits[a] is the root
 * child a's visit count (they sum to the simulations), values[a] its mean
 * result from s's side to move (0 for illegal or unvisited actions), both
 * g->num_actions long; *root_value the mean of all simulations' results
 * from s's side to move. */
int pb_uct_search(pb_uct_t *u, const pb_state_t *s, pb_rng_t *rng,
                  float *visits, float *values, float *root_value,
                  pb_err_t *err);

/* Simulations run (playouts plus terminal hits) since creation. */
uint64_t pb_uct_simulations(const pb_uct_t *u);

#endif
