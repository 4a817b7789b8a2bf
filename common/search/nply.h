/* nply.h - n-ply look-ahead over a linear evaluation (linear.h): plain
 * negamax to a fixed depth, with alpha-beta cut-offs, as the players of
 * seed 004 (Runarsson & Jonsson 2007) search while they learn and play.
 *
 * The value of a position d plies deep is the depth-d negamax value from
 * its side to move: at depth 0 the evaluation v(s); where the game is over
 * its exact result (+1 / 0 / -1 for the side to move, at any depth, so a
 * search that reaches the end of the game knows it). Alpha-beta changes
 * how many positions are looked at, never the value: tests/test_td.c
 * checks both functions against a brute-force negamax. The root's children
 * are searched in the order of the game's legal actions (increasing), so
 * the move is the lowest action of greatest value; a node 2 or more plies
 * from the horizon searches its children best first by the evaluation one
 * ply down (which changes only how much is cut off).
 *
 * Workload: self-play and TD targets, up to 5 ply on Othello (tens of
 * thousands of leaves a move). Recursion on the C stack, no allocation. */
#ifndef PB_NPLY_H
#define PB_NPLY_H

#include <stdint.h>

#include "bounds.h" /* PB_NPLY_MAX_DEPTH */
#include "err.h"
#include "game.h"
#include "linear.h"

typedef struct pb_nply_stats {
  uint64_t evals; /* positions given to the evaluation (leaves, and the
                     children a node orders) */
  uint64_t nodes; /* positions visited (interior and leaves) */
} pb_nply_stats_t;

/* The depth-`depth` negamax value of s for its side to move (depth 0:
 * v(s), or the result when the game is over in s). depth is clamped to
 * 0..PB_NPLY_MAX_DEPTH. Adds to *st when it is not NULL. */
double pb_nply_value(const pb_linear_t *lin, const pb_state_t *s, int depth,
                     pb_nply_stats_t *st);

/* The move of an n-ply search: the lowest legal action a of greatest
 * -value(s after a, depth - 1) (a move that ends the game is worth its
 * result), and that value into *value (may be NULL). Returns the action,
 * or PB_EINVAL when the game is over in s or depth is outside
 * 1..PB_NPLY_MAX_DEPTH. */
int pb_nply_best(const pb_linear_t *lin, const pb_state_t *s, int depth,
                 double *value, pb_nply_stats_t *st);

#endif
