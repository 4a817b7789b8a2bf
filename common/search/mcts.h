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
 * Two other root rules (pb_mcts_new_ex; pb_mcts_new is plain PUCT):
 *
 * - Gumbel search (Danihelka et al. 2022, "Policy improvement by planning
 *   with Gumbel"; mcts_rules.h has the formulas). The root draws g(a), an
 *   independent Gumbel(0, 1) variable per legal action (none without a
 *   stream: a deterministic search), and no Dirichlet noise (eps and alpha
 *   are unused). Simulation k goes to the action that maximises
 *   g(a) + logits(a) + sigma(completed Q)(a) among those with exactly
 *   pb_mcts_halving_visit(min(m, legal actions), simulations, k) visits:
 *   sequential halving over the top m = `considered` actions by
 *   g + logits, which spends exactly `simulations` simulations at the
 *   root. Below the root a node takes the child maximising
 *   pi'(a) - N(a) / (1 + sum_b N(b)), pi' = softmax(logits + sigma) (the
 *   paper's deterministic selection). logits are the logs of the priors.
 *   The search's move is the best by the same score among the most
 *   visited actions, and its policy target the improved policy
 *   softmax(logits + sigma(completed Q)) at the root (without g).
 * - PUCT with KataGo's forced playouts (Wu 2019): at the root a child c
 *   with fewer than pb_mcts_forced_visits(P(c), N) visits (N the root's
 *   children's visits so far, P with the noise) is taken first (the best
 *   by PUCT among such children); the policy target is the visit counts
 *   after pb_mcts_prune_forced (the forced visits PUCT would not have
 *   given taken off again), normalised.
 *
 * A root searched "fast" (pb_mcts_search's fast[i], KataGo's playout cap
 * randomization) gets neither Dirichlet noise nor forced playouts; a
 * Gumbel root keeps its Gumbel noise (its move sampling).
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

enum { PB_MCTS_PUCT = 0, PB_MCTS_GUMBEL = 1 };

/* The root's rule (the header's comment); all zero is plain PUCT. */
typedef struct pb_mcts_root_opts {
  int rule;       /* PB_MCTS_PUCT or PB_MCTS_GUMBEL */
  int considered; /* gumbel: m, the actions sampled at the root, >= 1 */
  double c_visit; /* gumbel: sigma's constants, > 0 (PB_MCTS_GUMBEL_C_*) */
  double c_scale;
  int forced; /* puct: forced playouts and target pruning; 0 or 1 */
} pb_mcts_root_opts_t;

/* A searcher for game g; NULL with err filled on bad options. */
pb_mcts_t *pb_mcts_new(const pb_game_t *g, const pb_mcts_opts_t *o,
                       pb_err_t *err);

/* As pb_mcts_new, with the root's rule r (NULL: plain PUCT). Refused
 * (NULL, PB_EINVAL): a rule other than the two, gumbel with considered
 * < 1 or c_visit or c_scale not > 0, forced other than 0 or 1, forced
 * with gumbel. */
pb_mcts_t *pb_mcts_new_ex(const pb_game_t *g, const pb_mcts_opts_t *o,
                          const pb_mcts_root_opts_t *r, pb_err_t *err);

/* Frees it; accepts NULL and sets *m to NULL. */
void pb_mcts_destroy(pb_mcts_t **m);

/* Calls fn(ctx, m, base, n) after each round of simulations of a
 * pb_mcts_run / _run_rngs / _search call (each round: one evaluator
 * call): roots base..base+n-1 of the call are the chunk under way, and
 * pb_mcts_partial(m, k, ...) reads root base+k's statistics so far. For
 * reports during a long search; fn must not call m's searches. NULL:
 * none (the default). */
typedef void (*pb_mcts_progress_fn)(void *ctx, pb_mcts_t *m, int base, int n);
void pb_mcts_set_progress(pb_mcts_t *m, pb_mcts_progress_fn fn, void *ctx);

/* Inside a progress call: the visits by action of root k (0..n-1) of the
 * chunk under way into visits[num_actions], its mean value (from its
 * side to move) into *value. */
void pb_mcts_partial(const pb_mcts_t *m, int k, float *visits, float *value);

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

/* The per-root settings and outputs of pb_mcts_search; every array has
 * one entry (or one row of num_actions) per root. */
typedef struct pb_mcts_io {
  const int *simulations; /* 1..opts.simulations; NULL: opts.simulations */
  const uint8_t *fast;    /* 1: a fast search (no Dirichlet noise, no forced
                             playouts); NULL: none fast */
  float *visits;          /* out, required: the root's visit counts */
  float *target;          /* out or NULL: the policy target (sums to 1):
                             the visits over their sum, pruned (forced
                             playouts), or the improved policy (gumbel) */
  int *action;            /* out or NULL: the search's move: the most visited
                             (ties: the lowest action), or gumbel's pick */
  float *root_value;      /* out or NULL: as pb_mcts_run's */
} pb_mcts_io_t;

/* Searches every states[i] (i < n, none terminal) with root i's budget
 * and kind from io, root i's noise drawn from rngs[i]. rngs (or an entry)
 * may be NULL only where no noise is drawn: a PUCT root with eps 0 or a
 * fast one; a Gumbel root without a stream has no Gumbel noise. With
 * every budget opts.simulations, no root fast and the PUCT rule, visits
 * and root_value are exactly pb_mcts_run_rngs's. Returns 0, PB_EINVAL
 * (a terminal root, a budget out of range, a missing stream) or the
 * evaluator's error. */
int pb_mcts_search(pb_mcts_t *m, const pb_state_t *states, int n,
                   const pb_mcts_evalfn_t *ev, pb_rng_t *const *rngs,
                   const pb_mcts_io_t *io, pb_err_t *err);

/* Network positions evaluated since creation. */
uint64_t pb_mcts_evaluations(const pb_mcts_t *m);

#endif
