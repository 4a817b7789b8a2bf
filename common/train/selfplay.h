/* selfplay.h - many self-play games at once, moves drawn from Q.
 *
 * In each position the move is drawn from P = (1 - eps) softmax(Q) + eps eta
 * over the legal actions, eta ~ Dir(alpha) (Algorithm 2, line 10). All
 * running games ask for Q in one batched call per turn; a finished game's
 * slot starts the next episode at once, so the batch stays full.
 *
 * Determinism: episode number i of a run uses its own RNG stream
 * (seed, first_index + i), and the episodes are output in number order, so
 * the same seed and the same network outputs give the same output whatever
 * `parallel` is, and an item split over threads (first_index) gives the
 * same episodes in the same order as on one thread. */
#ifndef PB_SELFPLAY_H
#define PB_SELFPLAY_H

#include <stdint.h>

#include "config.h"
#include "episodes.h"
#include "err.h"
#include "evalfn.h"
#include "game.h"
#include "rng.h"

typedef struct pb_selfplay pb_selfplay_t;

typedef struct pb_selfplay_opts {
  int parallel;   /* games played at once (>= 1) */
  int max_turns;  /* a game reaching this many moves ends as a draw */
  double eps;     /* noise weight, 0..1 */
  double alpha;   /* Dirichlet parameter, > 0 */
  double temperature; /* policy softmax(Q / T), > 0 (1 = the paper) */
} pb_selfplay_opts_t;

/* The options a run's config gives (train.selfplay_parallel, max_turns,
 * eps, alpha, selfplay_temperature): what the learner, --inproc and the
 * actors play with. */
void pb_selfplay_config_opts(const pb_config_t *cfg, pb_selfplay_opts_t *o);

/* A self-play engine for game g; NULL with err filled on bad options. */
pb_selfplay_t *pb_selfplay_new(const pb_game_t *g, const pb_selfplay_opts_t *o,
                               pb_err_t *err);

/* Frees the engine; accepts NULL and sets *sp to NULL. */
void pb_selfplay_destroy(pb_selfplay_t **sp);

/* Plays n episodes numbered first_index .. first_index + n - 1 and appends
 * them to out in that order. ev supplies Q; version is recorded with each
 * episode. The episodes are appended when all n are played. Returns 0 or
 * the callback's error (out then holds what it held before). */
int pb_selfplay_run(pb_selfplay_t *sp, int n, uint64_t seed,
                    uint64_t first_index, const pb_evalfn_t *ev,
                    uint64_t version, pb_episodes_t *out, pb_err_t *err);

/* The weights of softmax(Q / temperature) over the legal actions
 * acts[0..na) into p[0..na), unnormalised (exp(Q - max Q); a non-finite Q
 * weighs 0; all 0: every move 1): returns their sum. What
 * pb_selfplay_pick draws from, and what the learner scores moves with
 * (playcheck.h). */
double pb_selfplay_weights(const float *q, const uint8_t *acts, int na,
                           double temperature, double *p);

/* Draws an action from Q over the legal actions acts[0..na) with the
 * noise above: P(a) = (1 - eps) softmax(Q / temperature)[a] + eps eta[a],
 * eta ~ Dir(alpha); exposed for tests. q is indexed by action. */
int pb_selfplay_pick(const float *q, const uint8_t *acts, int na, double eps,
                     double alpha, double temperature, pb_rng_t *rng);

/* Checks an episode a worker sent against the rules and the run, as
 * pb_selfplay_run (and the AlphaZero self-play) make them: states[0] is
 * the initial position, each state follows the one before by a legal move
 * that leaves the game going, and from the last state a legal move either
 * ends the game with the mover's reward final_reward or, with
 * final_reward 0 and n == max_turns (the run's limit, at most the game's),
 * leaves it unfinished. (The wire decoder checks less: it cannot know the
 * run's max_turns, so it takes any draw.) 0, or PB_ECORRUPT with err
 * naming the first fault and its ply. */
int pb_selfplay_check(const pb_game_t *g, const pb_state_t *states,
                      uint32_t n, int final_reward, uint32_t max_turns,
                      pb_err_t *err);

/* Positions played (moves chosen) since creation. */
uint64_t pb_selfplay_positions(const pb_selfplay_t *sp);

#endif
