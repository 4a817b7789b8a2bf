/* td.h - algorithm td: TD(0) learning of a linear evaluation
 * (common/search/linear.h) from n-ply self-play, as in seed 004 (Runarsson &
 * Jonsson 2007, "Effect of look-ahead search depth in learning position
 * evaluation functions for Othello using epsilon-greedy exploration").
 *
 * The learner's side. Each iteration's games (common/train/tdplay.h), in game
 * order and move order, update the weights by gradient-descent TD(0):
 *
 *   delta = target_t - v(s_t)
 *   w_i  <- w_i + alpha * delta * (1 - v(s_t)^2) * x_i(s_t)
 *   b    <- b   + alpha * delta * (1 - v(s_t)^2)
 *
 * (the paper's equation 2, plain gradient descent, one position at a
 * time, v = tanh(b + w . x) from s_t's side to move). The target of s_t
 * is the value of the position after the move played, looked ahead the
 * remaining n - 1 plies with the current weights: -value_{n-1}(s_{t+1})
 * (nply.h; 1-ply: -v(s_{t+1}), the next position itself, so that at 1-ply
 * TD(0) learns the epsilon-greedy policy's values, as the paper says),
 * and the game's result for the last position (0 for a game cut at
 * train.max_turns). The paper updates during the game; here a game's
 * updates come after the iteration's games are played with the weights
 * of the iteration before (the actors' games are played before the
 * learner sees them), each target computed at its update.
 *
 * Schedules, counted in self-play games from the start of the run (game
 * G = version * train.episodes_per_iter + its number in the iteration):
 *   alpha(G)   = td.alpha   * td.alpha_decay^floor(G / every)
 *   epsilon(G) = td.epsilon * td.epsilon_decay^floor(G / every)
 * every = td.decay_every_games; a work item's games all use the epsilon
 * of its first game. */
#ifndef PB_TD_H
#define PB_TD_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "episodes.h"
#include "linear.h"
#include "nply.h"

typedef struct pb_td_opts {
  int ply; /* 1..PB_NPLY_MAX_DEPTH */
  double alpha, alpha_decay;
  double epsilon, epsilon_decay;
  int decay_every; /* games, >= 1 */
} pb_td_opts_t;

/* The td.* keys of c into *o. */
void pb_td_opts_from_config(const pb_config_t *c, pb_td_opts_t *o);

/* The step size and the exploration rate of game `game` (0-based). */
double pb_td_alpha(const pb_td_opts_t *o, uint64_t game);
double pb_td_epsilon(const pb_td_opts_t *o, uint64_t game);

/* One TD(0) step of s towards `target` with step size alpha (the update
 * in the top comment). Returns delta = target - v(s) before the step. */
double pb_td_update(pb_linear_t *lin, const pb_state_t *s, double target,
                    double alpha);

typedef struct pb_td_stats {
  size_t updates;                 /* positions updated */
  double abs_delta_mean;          /* mean |delta| */
  double alpha_first, alpha_last; /* the step sizes used */
  pb_nply_stats_t search;         /* the targets' look-ahead */
} pb_td_stats_t;

/* CRC-32 of the bias and weights: equal in two runs that learned the
 * same evaluation (metrics.jsonl's weights_crc). */
uint32_t pb_td_weights_crc(const pb_linear_t *lin);

/* Updates lin from every position of eps, episode after episode, in
 * order; the episodes are games first_game, first_game + 1, ... (their
 * alpha). Fills *st (may be NULL). */
void pb_td_learn(pb_linear_t *lin, const pb_td_opts_t *o,
                 const pb_episodes_t *eps, uint64_t first_game,
                 pb_td_stats_t *st);

#endif
