/* azplay.h - AlphaZero self-play: many games at once, each move chosen by
 * PUCT MCTS (mcts.h) with a policy+value network.
 *
 * In each position the game's search runs `simulations` simulations with
 * Dirichlet noise (eps, alpha) mixed into the root's priors; the visit
 * distribution pi (visits / simulations) is stored with the position as
 * its policy target. The first temp_moves moves of a game are drawn in
 * proportion to the visits (temperature 1), later ones take the most
 * visited action (ties: the lowest), as in the AlphaZero papers. All
 * running games search together: one batched network call per simulation
 * round for every game (mcts.h), and a finished game's slot starts the
 * next episode at once.
 *
 * Options (all 0 / off: the above, bit for bit):
 * - root: the search's root rule (mcts.h). With Gumbel search the move is
 *   the search's pick (its Gumbel noise is the move sampling; temp_moves,
 *   eps and alpha are unused) and the policy target its improved policy;
 *   with forced playouts the target is the pruned visit distribution, and
 *   the first temp_moves moves are drawn from it.
 * - playout cap randomization (KataGo; small_simulations > 0): before each
 *   search one uniform draw from the episode's stream makes it full (with
 *   probability full_fraction: `simulations`, root noise, forced playouts)
 *   or fast (small_simulations, neither). A fast search's position is
 *   stored with a policy row of zeros: not a policy target (its loss term
 *   is 0), still a value target.
 *
 * Determinism: episode number i draws its noise and its moves from its
 * own stream (seed, first_index + i), and the episodes are output in
 * number order, so an item split over threads (first_index) gives the same
 * episodes as on one thread, given the same network outputs.
 *
 * Episodes go to a pb_episodes_t with policy_width = num_actions
 * (pb_episodes_add_policy). */
#ifndef PB_AZPLAY_H
#define PB_AZPLAY_H

#include <stdint.h>

#include "config.h"
#include "episodes.h"
#include "err.h"
#include "game.h"
#include "mcts.h"

typedef struct pb_azplay pb_azplay_t;

typedef struct pb_azplay_opts {
  int parallel;    /* games played at once (1..PB_SELFPLAY_MAX_PARALLEL) */
  int max_turns;   /* a game reaching this many moves ends as a draw */
  int simulations; /* per move, >= 1 */
  double c_puct;   /* > 0 */
  double eps;      /* weight of the root noise, 0..1 */
  double alpha;    /* Dirichlet parameter, > 0 */
  int temp_moves;  /* moves drawn in proportion to the visits, >= 0 */
  int discount;    /* the search's discounting heuristic (mcts.h), 0 or 1 */
  pb_mcts_root_opts_t root; /* the root's rule (mcts.h); all 0: PUCT */
  double full_fraction;     /* playout cap: share of full searches, [0, 1] */
  int small_simulations;    /* playout cap: a fast search's budget,
                               1..simulations; 0: no cap, every search full */
} pb_azplay_opts_t;

/* The options of a run's configuration: parallel from
 * train.selfplay_parallel, max_turns, eps and alpha from train.*, the rest
 * from mcts.* (the playout cap off, small_simulations 0, when
 * mcts.full_fraction is 1). */
void pb_azplay_config_opts(const pb_config_t *cfg, pb_azplay_opts_t *o);

/* An engine for game g; NULL with err filled on bad options (PB_EINVAL,
 * naming the option: e.g. small_simulations above simulations, a
 * full_fraction outside [0, 1]) or PB_ENOMEM. Allocates the trees of
 * `parallel` searches once. */
pb_azplay_t *pb_azplay_new(const pb_game_t *g, const pb_azplay_opts_t *o,
                           pb_err_t *err);

/* Frees it; accepts NULL and sets *p to NULL. */
void pb_azplay_destroy(pb_azplay_t **p);

/* Plays n episodes numbered first_index .. first_index + n - 1 and appends
 * them, with their policy targets, to out in that order. ev is the
 * network (pveval.h); version is recorded with each episode. The
 * episodes are appended when all n are played. Returns 0 or the
 * evaluator's error (out then holds what it held before). */
int pb_azplay_run(pb_azplay_t *p, int n, uint64_t seed, uint64_t first_index,
                  const pb_mcts_evalfn_t *ev, uint64_t version,
                  pb_episodes_t *out, pb_err_t *err);

/* Moves played and network positions evaluated since creation. */
uint64_t pb_azplay_positions(const pb_azplay_t *p);
uint64_t pb_azplay_evaluations(const pb_azplay_t *p);

#endif
