/* mcts.h - PUCT Monte Carlo tree search (AlphaZero), batched across many
 * searches.
 *
 * For a root position the search grows a tree one simulation at a time:
 * from the root it descends, at each node taking the child a that
 * maximises Q(a) + c_puct * P(a) * sqrt(N) / (1 + N(a)) (Q from the node's
 * side to move, 0 for an unvisited child; ties: the lowest action), until
 * it reaches a terminal position (its value is the game's result) or a
 * position not yet evaluated, which the network then values: v, and the
 * priors P = softmax of the policy over the legal actions. The value is
 * backed up the path, negated at every level (each node's W counts from
 * its own side to move). The root is evaluated before the first
 * simulation (with Dirichlet noise mixed into its priors when eps > 0), so
 * every one of the `simulations` ends in a child of the root: the root's
 * children's visit counts sum to `simulations`.
 *
 * With `discount` (the discounting heuristic of Cazenave et al., as used by
 * ../shared/papers/001, section 2.4.3) the value of a terminal position is
 * divided by the number of plies from the root to it (its depth, >= 1)
 * before it is backed up: a win in 1 scores 1, a win in 3 scores 1/3. The
 * network's values of non-terminal leaves are not discounted (they are not
 * payoffs of a finished game). Off, the search is exactly the plain one.
 *
 * Workload: pb_mcts_run advances up to `parallel` searches together; in
 * each round every unfinished search descends to one leaf and all the
 * round's leaves are evaluated with one batched network call. The trees
 * live in arrays allocated once by pb_mcts_new; the hot loop does not
 * allocate. */
#ifndef PB_MCTS_H
#define PB_MCTS_H

#include <stdint.h>

#include "err.h"
#include "evalfn.h"
#include "game.h"
#include "rng.h"

typedef struct pb_mcts pb_mcts_t;

/* How a network answers: for states[i] (i < n, none terminal) the policy
 * logits policy[i * num_actions + a] for every action (illegal ones are
 * ignored) and the value value[i] in [-1, 1] from the side to move.
 * Returns 0 or a negative PB_E* code with err filled. */
typedef struct pb_mcts_evalfn {
  int (*eval)(void *ctx, const pb_state_t *states, int n, float *policy,
              float *value, pb_err_t *err);
  void *ctx;
} pb_mcts_evalfn_t;

/* PROBS networks as the evaluator: the policy logits are Q(s)[a] / T, so
 * the priors are softmax(Q / T) over the legal moves, and the value is
 * V(s) (one call of each of ev's callbacks per batch: a leaf costs two
 * evaluations). Fill it and take pb_mcts_vq_fn(&vq); vq must outlive the
 * searches that use it. */
typedef struct pb_mcts_vq {
  const pb_game_t *g; /* the game (its number of actions) */
  pb_evalfn_t ev;     /* V and Q */
  double temperature; /* T > 0 */
} pb_mcts_vq_t;

pb_mcts_evalfn_t pb_mcts_vq_fn(pb_mcts_vq_t *vq);

typedef struct pb_mcts_opts {
  int simulations; /* per root, >= 1 */
  double c_puct;   /* > 0 */
  double eps;      /* weight of the root's Dirichlet noise, 0..1 */
  double alpha;    /* its parameter, > 0 when eps > 0 */
  int parallel;    /* searches advanced together, >= 1 */
  int discount;    /* 1: terminal values divided by their depth; 0 or 1 */
} pb_mcts_opts_t;

/* A searcher for game g; NULL with err filled on bad options. */
pb_mcts_t *pb_mcts_new(const pb_game_t *g, const pb_mcts_opts_t *o,
                       pb_err_t *err);

/* Frees it; accepts NULL and sets *m to NULL. */
void pb_mcts_destroy(pb_mcts_t **m);

/* Searches every states[i] (i < n, none terminal) and writes the root's
 * visit counts to visits[i * num_actions + a] (0 for illegal actions; they
 * sum to the simulations) and, when root_value is not NULL, the root's
 * mean value from its side to move to root_value[i]. rng draws the noise
 * (may be NULL when eps is 0). Returns 0, PB_EINVAL for a terminal root,
 * or the evaluator's error. */
int pb_mcts_run(pb_mcts_t *m, const pb_state_t *states, int n,
                const pb_mcts_evalfn_t *ev, pb_rng_t *rng, float *visits,
                float *root_value, pb_err_t *err);

/* As pb_mcts_run, but root i draws its noise from rngs[i] (may be NULL
 * when eps is 0), so that each root's search does not depend on which
 * other roots share the call (self-play: one stream per game). */
int pb_mcts_run_rngs(pb_mcts_t *m, const pb_state_t *states, int n,
                     const pb_mcts_evalfn_t *ev, pb_rng_t *const *rngs,
                     float *visits, float *root_value, pb_err_t *err);

/* Network positions evaluated since creation. */
uint64_t pb_mcts_evaluations(const pb_mcts_t *m);

#endif
