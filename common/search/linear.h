/* linear.h - a linear evaluation of a game's positions: v(s) =
 * tanh(b + sum_i w_i x_i(s)), the value for the side to move in [-1, 1],
 * over a game's features x(s). What algorithm td learns (common/train/td.h) and
 * the n-ply search (nply.h) looks ahead with.
 *
 * The features of each game, all seen from the side to move:
 *   othello   the weighted piece counter of seed 004 (Runarsson & Jonsson
 *             2007, after Yoshioka et al.): 64 features, x_i = +1 when
 *             square i holds a disc of the side to move, -1 one of the
 *             opponent, 0 empty. The paper's x_i is +1 for Black and its
 *             bias w_0 favours Black; here the bias b favours the side to
 *             move (a tempo term), the only difference.
 *   connect4  every input plane entry (2 x 6 x 7 = 84: the mover's discs,
 *             the opponent's), a weight each.
 *   toguz     every input plane entry (17 x 2 x 9 = 306), a weight each.
 * Tic-Tac-Toe has no features here (pb_linear_init refuses it).
 *
 * The same evaluation is a pb_nn network with no hidden layer: one linear
 * layer over the game's input planes, tanh head (common/nn/tdnet.h copies the
 * weights both ways). For Othello its 4 x 64 plane weights are tied: the
 * mover's-disc plane holds w, the opponent's -w, the legal-move and
 * constant planes 0, so the network computes the WPC exactly.
 *
 * A pb_linear_t is a plain value (fixed arrays, no pointers but the
 * game): copy it to snapshot the weights. Nothing here allocates. */
#ifndef PB_LINEAR_H
#define PB_LINEAR_H

#include "err.h"
#include "game.h"

#define PB_LINEAR_MAX_FEATURES 320 /* toguz: 306 */
#define PB_LINEAR_MAX_INPUTS 512   /* planes * height * width of any game */

enum {
  PB_LINEAR_WPC = 1,    /* othello: one weight per square, own - opponent */
  PB_LINEAR_PLANES = 2, /* one weight per input plane entry */
};

typedef struct pb_linear {
  const pb_game_t *g;
  int kind;       /* PB_LINEAR_WPC or PB_LINEAR_PLANES */
  int n_features; /* entries of w in use */
  float bias;
  float w[PB_LINEAR_MAX_FEATURES];
} pb_linear_t;

/* Sets *lin to the evaluation of game g with every weight and the bias
 * zero (the paper's start). Returns 0, or PB_EUNSUPP naming the game and
 * the games that have features. */
int pb_linear_init(pb_linear_t *lin, const pb_game_t *g, pb_err_t *err);

/* Comma-separated names of the games with features, for messages. */
const char *pb_linear_games(void);

/* Writes the n_features features of s (from its side to move) to x. */
void pb_linear_features(const pb_linear_t *lin, const pb_state_t *s, float *x);

/* b + w . x(s): the evaluation before the tanh. */
double pb_linear_raw(const pb_linear_t *lin, const pb_state_t *s);

/* tanh(pb_linear_raw): the value of s for its side to move, in [-1, 1].
 * Does not look at whether the game is over in s (nply.h does). */
double pb_linear_value(const pb_linear_t *lin, const pb_state_t *s);

/* The weights of the equivalent network layer over the game's input
 * planes: W[planes * height * width] and *b (see the top comment). */
void pb_linear_to_planes(const pb_linear_t *lin, float *W, float *b);

/* The inverse: w from a network layer's plane weights W and bias b. For
 * Othello w_i = (W_own,i - W_opp,i) / 2 (exact for the tied weights
 * pb_linear_to_planes writes; the other planes are not read). */
void pb_linear_from_planes(pb_linear_t *lin, const float *W, float b);

#endif
