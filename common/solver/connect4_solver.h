/* connect4_solver.h - an exact Connect Four solver.
 *
 * Negamax with alpha-beta over the bitboards of common/games/connect4.c, a
 * transposition table of bounds, moves that lose at once pruned before
 * they are searched, moves ordered by the threats they create (then centre
 * first), and the score found by a sequence of null-window searches. The
 * method is the one Pascal Pons describes in his Connect Four solver
 * tutorial (http://blog.gamesolver.org); the code is our own.
 *
 * Scores (Pons' convention), for the side to move in a position with n
 * stones: 0 is a draw; a win is 22 - k > 0 where k is the number of stones
 * the winner has on the board after its winning move, with both sides
 * playing perfectly (the winner as fast as it can, the loser as slowly);
 * a loss is -(22 - k) with k the opponent's count. So an immediate win
 * scores (43 - n) / 2 and the best possible loss -(42 - n) / 2.
 * pb_c4solver_plies turns a score into the number of plies to the end.
 *
 * Positions are (mover, mask) as in common/games/connect4.c: the stones of the
 * side to move and all stones, 7 bits per column, row 0 at the bottom.
 * Every entry point requires a position that is not over (nobody has four
 * in a row, the board is not full); pb_solver_* (solver.h) checks that.
 *
 * Workload: the test sets of the evaluator (1000 positions from ply 6 on,
 * every move of each: seconds to minutes in all, weak) and `probs solve`
 * (one position, strong). A solver holds a transposition table of
 * 2^tt_log2 entries of 8 bytes; nothing is allocated while it searches. A
 * solver is used by one thread at a time. */
#ifndef PB_CONNECT4_SOLVER_H
#define PB_CONNECT4_SOLVER_H

#include <stdint.h>

#include "err.h"

typedef struct pb_c4solver pb_c4solver_t;

/* A solver with a table of 2^tt_log2 entries (10..30; 24 = 128 MiB).
 * NULL with err filled (PB_EINVAL, PB_ENOMEM). */
pb_c4solver_t *pb_c4solver_new(int tt_log2, pb_err_t *err);

/* Frees the solver; accepts NULL and sets *s to NULL. */
void pb_c4solver_destroy(pb_c4solver_t **s);

/* The score of the position (see above). weak: only its sign is exact
 * (-1, 0 or +1 is returned), which is much faster early in the game. */
int pb_c4solver_solve(pb_c4solver_t *s, uint64_t mover, uint64_t mask,
                      int weak);

/* The score of every column for the side to move (the score of the
 * position that playing it reaches, from the mover's side) into
 * scores[0..7); full columns get PB_C4SOLVER_FULL. weak as above. */
#define PB_C4SOLVER_FULL (-1000)
void pb_c4solver_moves(pb_c4solver_t *s, uint64_t mover, uint64_t mask,
                       int weak, int scores[7]);

/* Plies from the position (n stones) to the end of the game under perfect
 * play for a non-zero (strong) score: odd when the side to move wins, even
 * when it loses. 0 for a draw. */
int pb_c4solver_plies(int score, int n);

/* Nodes searched since the solver was made. */
uint64_t pb_c4solver_nodes(const pb_c4solver_t *s);

/* Called with the nodes searched so far every PB_C4SOLVER_TICK nodes of a
 * search (on the searching thread): a caller's progress. */
#define PB_C4SOLVER_TICK (1u << 20)
typedef void (*pb_c4solver_tick_fn)(void *ctx, uint64_t nodes);
void pb_c4solver_set_tick(pb_c4solver_t *s, pb_c4solver_tick_fn fn,
                          void *ctx);

/* The reference: plain negamax over every move sequence (no pruning, no
 * table), the same scores. Only for late positions (tests). */
int pb_c4solver_solve_ref(uint64_t mover, uint64_t mask);

#endif
