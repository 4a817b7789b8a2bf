/* bpip.h - Best Play for Imperfect Players (Baum and Smith) over a PROBS V:
 * a search that expands the leaf of greatest QSS relevance under the
 * depth-free independent staircase approximation (DFISA), as described by
 * ../shared/papers/002 (Radovilsky and Shimony), section 2. Only the
 * search of that paper's section 2 is here; its planning and adaptation
 * operators (sections 3-4) need a planner over hand-made chess features
 * and are left out.
 *
 * Distributions. Every value is a discrete distribution over the grid of
 * PB_BPIP_GRID points x_i = -1 + 2i/(PB_BPIP_GRID-1) (step 0.05, holding
 * -1, 0 and +1), from the side to move at its node, like negamax values.
 * - A leaf valued by V (clamped to [-1, 1], NaN counts as -1) gets a
 *   Gaussian N(V, sigma^2) clipped to [-1, 1] (the mass beyond an end goes
 *   to that end) and put on the grid by linear binning: each point of the
 *   Gaussian splits its mass between the two grid points around it, so the
 *   distribution's mean is the clipped Gaussian's mean. sigma is how far V
 *   is from the exact value (docs/baselines.md says how it was measured).
 * - A finished game is a spike at its exact result (-1, 0 or +1); a node
 *   with a move that wins at once is a spike at +1 and is not expanded
 *   further (its other moves are never evaluated).
 * - An expanded node's value is the maximum over its children of minus the
 *   child's value, the children independent (the product rule):
 *   P(node <= x) = prod over children c of P(-c <= x).
 *
 * Relevance. The root's moves are valued Y_c = -(child c's value). Q1 =
 * E[max_c Y_c] - max_c E[Y_c] is what knowing every leaf exactly would be
 * worth (the paper's Q^1, equation 2). A leaf L's QSS relevance is the
 * paper's equation 3, A_L = sum_j p_j |Q1 - Q1_L(j)|, where (x_j, p_j) are
 * the points of L's distribution and Q1_L(j) is Q1 with L's distribution
 * replaced by a spike at x_j (the root's best move recomputed). Because
 * E[max] and every E[Y_c] are linear in any one node's distribution, all
 * the Q1_L(j) of all leaves come from one pass down the tree per round
 * (O(nodes * PB_BPIP_GRID)); pb_bpip_node exposes them for tests, which
 * check them against a plain recomputation of the whole tree per spike.
 * A leaf whose value cannot change Q1 (below a node already decided by
 * an exact child, or when the root's choice is decided) has relevance 0.
 *
 * The search. The root is expanded (one V call for its children that are
 * not finished games); then, round after round: compute every leaf's
 * relevance; stop if no leaf has relevance above 1e-12 (Q1 is 0: nothing
 * left to learn); else expand the most relevant leaves (ties: the leaf
 * created first), the number of them the gulp (one leaf, or a share of
 * the relevant leaves), the children of all of them valued in one V call;
 * update their ancestors' distributions. A leaf whose children would take
 * the evaluations past the budget ends the search. The move played is the
 * root's move of highest mean E[Y_c] (ties: the lowest action), as the
 * paper's step 3.
 *
 * Budget. `evals` bounds the positions given to V and Q per search. When
 * the root's children alone do not fit, the root's Q is asked for instead
 * (one evaluation) and the move is the legal move of highest Q. A move
 * that wins at once is played without any evaluation.
 *
 * Workload: play-time search, one position at a time, 10 to ~10,000
 * evaluations per move; the cost of a round is linear in the tree's size,
 * so the search's own time grows as evals^2 / (leaves per round). All is
 * allocated by pb_bpip_new (about 1 KiB per node, 2 * evals + 2 *
 * num_actions + 64 nodes); a search allocates nothing. Deterministic. */
#ifndef PB_BPIP_H
#define PB_BPIP_H

#include <stdint.h>

#include "err.h"
#include "evalfn.h"
#include "game.h"

typedef struct pb_bpip pb_bpip_t;

#define PB_BPIP_GRID 41 /* points of a distribution, -1 .. +1 */
#define PB_BPIP_MAX_EVALS 100000
#define PB_BPIP_SIGMA_MIN 0.01
#define PB_BPIP_SIGMA_MAX 4.0
#define PB_BPIP_GULP_MAX 0.5

typedef struct pb_bpip_opts {
  uint64_t evals; /* V and Q evaluations per search, 1..PB_BPIP_MAX_EVALS */
  double sigma;   /* the spread of a leaf's distribution around V,
                     PB_BPIP_SIGMA_MIN..PB_BPIP_SIGMA_MAX */
  double gulp;    /* leaves expanded per round: max(1, floor(gulp * the
                     relevant leaves)); 0..PB_BPIP_GULP_MAX (0: one) */
} pb_bpip_opts_t;

/* The defaults: evals 1000, sigma 1.0, gulp 0 (one leaf per round, the
 * paper's algorithm). sigma 1.0 is V's error on solved positions: the
 * root mean square of V - exact value over the 5157 positions one move
 * into the shipped Connect Four test set, 0.99, for the connect4-quick
 * checkpoint of docs/strength.md (bench/bench_bpip_sigma.c; docs/
 * baselines.md "BPIP" has the figures, and accuracy against sigma). */
#define PB_BPIP_SIGMA_DEFAULT 1.0
#define PB_BPIP_GULP_DEFAULT 0.0
void pb_bpip_defaults(pb_bpip_opts_t *o);

/* Why a search stopped. */
enum {
  PB_BPIP_STOP_SETTLED = 0, /* no leaf had relevance left (Q1 = 0) */
  PB_BPIP_STOP_BUDGET = 1,  /* the next expansion did not fit the budget */
  PB_BPIP_STOP_NODES = 2,   /* the tree was full (many finished games) */
  PB_BPIP_STOP_WIN = 3,     /* a move wins at once: played, no search */
  PB_BPIP_STOP_Q = 4        /* the root's children did not fit: Q chose */
};

typedef struct pb_bpip_result {
  int move;    /* the move to play */
  float value; /* its mean E[Y_c] (from the side to move); with
                  PB_BPIP_STOP_Q its Q; with PB_BPIP_STOP_WIN 1 */
  double q1;   /* Q1 when the search stopped (0 if not searched) */
  int solved;  /* 1: the root's value is exact (every move finished,
                  or one proven to win) */
  int stop;    /* PB_BPIP_STOP_* */
  int depth;   /* plies below the root of the deepest node */
  uint64_t v_evals, q_evals; /* positions given to V and to Q */
  uint64_t v_calls, q_calls; /* calls of each callback */
  uint64_t expansions;       /* nodes expanded (the root included) */
  uint64_t rounds;           /* rounds of expansions after the root's */
  uint64_t nodes;            /* nodes in the tree */
} pb_bpip_result_t;

/* A searcher for game g; NULL with err filled: PB_EINVAL naming the bad
 * option (its range in the message), PB_ENOMEM. */
pb_bpip_t *pb_bpip_new(const pb_game_t *g, const pb_bpip_opts_t *o,
                       pb_err_t *err);

/* Frees it; accepts NULL and sets *bp to NULL. */
void pb_bpip_destroy(pb_bpip_t **bp);

/* Searches s (not terminal) with V (and Q, for tiny budgets) from ev;
 * fills *res. Returns 0, PB_EINVAL (a NULL argument, or the game is over
 * in s), or the callback's error. The tree stays for pb_bpip_node until
 * the next search. */
int pb_bpip_search(pb_bpip_t *bp, const pb_state_t *s, const pb_evalfn_t *ev,
                   pb_bpip_result_t *res, pb_err_t *err);

/* The options in use. */
const pb_bpip_opts_t *pb_bpip_options(const pb_bpip_t *bp);

/* ---- the last search's tree, for tests and analysis ---------------------- */

typedef struct pb_bpip_node {
  pb_state_t state;
  int parent;        /* -1 for the root (node 0) */
  int first, kids;   /* children first .. first + kids - 1 (kids 0: a leaf) */
  int action;        /* the move from the parent (-1 for the root) */
  int depth;         /* plies below the root */
  int exact;         /* 1: a finished game, a win at once, or every child
                        (or one that wins) exact */
  float v;           /* V of a leaf valued by V (0 otherwise) */
  const double *pmf; /* its distribution, PB_BPIP_GRID points (borrowed,
                        valid until the next search) */
  double mean;       /* the mean of pmf */
  double qss;        /* a leaf's relevance A_L (0 for exact leaves and
                        interior nodes) */
  double q1;         /* Q1 of the whole tree (the same for every node) */
} pb_bpip_node_t;

/* The number of nodes of the last search's tree (0 before any), after
 * bringing every leaf's relevance up to date for the tree as it is. */
int pb_bpip_tree(pb_bpip_t *bp);

/* Node i (0 <= i < pb_bpip_tree) into *out; PB_EINVAL if out of range.
 * Children always come after their parent. */
int pb_bpip_node(const pb_bpip_t *bp, int i, pb_bpip_node_t *out);

/* ---- the distributions, for tests ---------------------------------------- */

/* The grid point x_i (0 <= i < PB_BPIP_GRID). */
double pb_bpip_grid(int i);

/* A leaf's distribution for V value v and spread sigma (> 0) into
 * pmf[PB_BPIP_GRID]. */
void pb_bpip_leaf_dist(double v, double sigma, double *pmf);

/* The distribution of max over the n >= 1 children of -(child's value),
 * children independent with distributions kids[0..n), into pmf. */
void pb_bpip_negamax_dist(const double *const *kids, int n, double *pmf);

#endif
