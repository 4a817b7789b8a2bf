/* solver.h - exact values of positions, for the games that have a solver.
 *
 * Connect Four (connect4_solver.h) and Tic-Tac-Toe (a plain exhaustive
 * negamax: the whole game has 549,946 nodes) have one; other games get
 * PB_EUNSUPP. The evaluator's accuracy figure, `probs solve` and the test
 * set generator all go through this interface.
 *
 * A value is from the side to move: result +1 (it wins with perfect play),
 * 0 (draw) or -1 (it loses), and plies, the number of plies to the end of
 * the game when the winner wins as fast as it can and the loser holds out
 * as long as it can (odd for a win, even for a loss, 0 for a draw; -1 when
 * unknown: a weak solve finds the result only, which is much faster early
 * in Connect Four).
 *
 * A solver is used by one thread at a time; make one per thread. */
#ifndef PB_SOLVER_H
#define PB_SOLVER_H

#include <stdint.h>

#include "err.h"
#include "game.h"

typedef struct pb_solver pb_solver_t;

typedef struct pb_solve_value {
  int result; /* +1 win, 0 draw, -1 loss, for the side to move */
  int plies;  /* plies to the end under perfect play; -1 unknown */
} pb_solve_value_t;

/* Whether game g has a solver (1) or not (0). */
int pb_solver_supports(const pb_game_t *g);

/* A solver for g. tt_log2 sizes Connect Four's transposition table
 * (2^tt_log2 entries of 8 bytes, 10..30; 0 for the default, 2^22 =
 * 32 MiB); other games ignore it. NULL with err filled: PB_EUNSUPP naming
 * the game if it has no solver, PB_EINVAL, PB_ENOMEM. */
pb_solver_t *pb_solver_new(const pb_game_t *g, int tt_log2, pb_err_t *err);

/* Frees the solver; accepts NULL and sets *s to NULL. */
void pb_solver_destroy(pb_solver_t **s);

/* The value of *st for its side to move. PB_EINVAL if the game is over in
 * st (there is nothing to solve). */
int pb_solver_solve(pb_solver_t *s, const pb_state_t *st, int weak,
                    pb_solve_value_t *out, pb_err_t *err);

/* The value of every legal move of *st for the side to move: out[a] for
 * legal action a is the value, from the mover's side, of playing a (a move
 * that wins at once: {+1, 1}); out[a].result for an illegal a is
 * PB_SOLVE_ILLEGAL. out has g->num_actions entries. PB_EINVAL if the game
 * is over in st. */
#define PB_SOLVE_ILLEGAL (-100)
int pb_solver_moves(pb_solver_t *s, const pb_state_t *st, int weak,
                    pb_solve_value_t *out, pb_err_t *err);

/* Nodes searched since the solver was made. */
uint64_t pb_solver_nodes(const pb_solver_t *s);

/* Calls fn(ctx, nodes) with pb_solver_nodes every 2^20 nodes of a
 * search, on the searching thread (NULL: never): a caller's progress. */
void pb_solver_set_progress(pb_solver_t *s,
                            void (*fn)(void *ctx, uint64_t nodes), void *ctx);

#endif
