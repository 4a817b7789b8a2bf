/* tdplay.h - algorithm td's self-play: epsilon-greedy games with an n-ply
 * search over a linear evaluation (common/train/td.h, common/search/nply.h).
 *
 * Each move: with probability epsilon (one uniform draw u < epsilon) a
 * legal move drawn uniformly at random, else the n-ply search's move
 * (pb_nply_best: the lowest action of greatest value), as in Fig. 4 of
 * seed 004. A game stops when it is over or after max_turns moves (a
 * draw, reward 0).
 *
 * Determinism: episode number i draws from its own stream (seed,
 * first_index + i), so an item gives the same episodes wherever it is
 * played (in-process or on an actor) given the same weights. Episodes go
 * to a pb_episodes_t without policies, version recorded with each. */
#ifndef PB_TDPLAY_H
#define PB_TDPLAY_H

#include <stdint.h>

#include "episodes.h"
#include "err.h"
#include "linear.h"
#include "nply.h"

typedef struct pb_tdplay_opts {
  int ply;        /* 1..PB_NPLY_MAX_DEPTH */
  int max_turns;  /* >= 1 */
  double epsilon; /* 0..1 */
  /* Called before every move (NULL: never): a non-zero return abandons
   * the games with that code (a stop request, a heartbeat's failure). */
  int (*tick)(void *ctx, pb_err_t *err);
  void *tick_ctx;
} pb_tdplay_opts_t;

typedef struct pb_tdplay_stats {
  uint64_t moves, random_moves;
  pb_nply_stats_t search;
} pb_tdplay_stats_t;

/* Plays n episodes numbered first_index .. first_index + n - 1 with the
 * evaluation lin and appends them to out in that order, each with
 * `version`. Adds to *st (may be NULL). Returns 0, PB_EINVAL for bad
 * options, PB_ENOMEM, or tick's code (out then holds what it held
 * before). */
int pb_tdplay_run(const pb_linear_t *lin, const pb_tdplay_opts_t *o, int n,
                  uint64_t seed, uint64_t first_index, uint64_t version,
                  pb_episodes_t *out, pb_tdplay_stats_t *st, pb_err_t *err);

#endif
