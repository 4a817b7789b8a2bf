/* azcheck.h - the learner's check of AlphaZero self-play (azplay.h): are an
 * actor's moves those its own policy rows make, and are its rows those the
 * run's search makes with the network of the episode's version?
 *
 * Exact checks, without a search (pb_az_check_episode), for a row of a
 * full search (a row of zeros is a fast search's, playout cap: skipped):
 * - past mcts.temp_moves the move is the most visited action, which is the
 *   argmax of the row (ties: the lowest; azplay.h's choose), so any other
 *   move is impossible (at the last position, whose move the episode does
 *   not show, the argmax must end the game with the episode's result, or
 *   go on at a cut at max_turns);
 * - within temp_moves the move is drawn from the row (the visits over
 *   their sum; with forced playouts the pruned row itself), so a move
 *   without mass is impossible, and the surprise of the moves, -log of the
 *   row's mass of what is seen of the move (grouped as playcheck.h does at
 *   the last position), has a known mean and variance: summed over an
 *   actor's moves, honest ones give a standard normal z, a thrower that
 *   plays moves its rows give little mass a z growing with sqrt(moves);
 * - without a playout cap a row of zeros is impossible; with one, a row is
 *   of zeros with probability 1 - mcts.full_fraction, so the count of an
 *   actor's rows of zeros has a binomial z (an actor hiding its rows as
 *   fast searches).
 * With the Gumbel root the move is the search's pick, drawn with Gumbel
 * noise the learner does not see: none of the move checks apply there.
 *
 * The re-run (pb_azcheck_run), exact without modelling MCTS: the learner
 * searches the position twice, with the run's settings (simulations,
 * c_puct, root rule, noise) and noise of its own, giving pi1 and pi2. An
 * honest row c is a draw of the same search as pi1 and pi2, independent of
 * them, so c and pi2 are exchangeable given pi1 and
 *   x = TV(c, pi1) - TV(pi2, pi1)      (TV: total variation distance)
 * is symmetric about 0 (swapping c and pi2 turns its sign). Given the |x|
 * of an actor's positions their signs are then fair coins, so
 *   z = sum x / sqrt(sum x^2)
 * is at least t with probability at most exp(-t^2 / 2) (Hoeffding; 1.5e-8
 * for t = 6), whatever the network, the game, the search. A forged row (a
 * one-hot row, mass moved to a thrown move) is far from pi1 while pi2 is
 * near it: x > 0 on most positions and z grows with sqrt(positions).
 * What it needs: noise in the search (a deterministic search, eps 0
 * without Gumbel, makes pi1 = pi2, and the actor's numerics, another
 * device or batch, could then differ from the learner's on every position:
 * pb_azcheck_new refuses it), and the network in the actors' precision.
 *
 * No state but the caller's tallies and the searcher's buffers. */
#ifndef PB_AZCHECK_H
#define PB_AZCHECK_H

#include <stdint.h>

#include "azplay.h"
#include "err.h"
#include "game.h"
#include "mcts.h"
#include "rng.h"

/* What the checks found of one actor. */
typedef struct pb_az_tally {
  uint64_t episodes;
  uint64_t impossible; /* moves an exact check refused */
  uint64_t rows, zero_rows; /* rows seen; of zeros (fast searches) */
  uint64_t moves;       /* moves drawn from their rows, scored */
  double m_excess, m_var; /* their surprise less its mean; its variance */
  uint64_t positions;   /* rows compared with the learner's re-run */
  double r_sum, r_sq;   /* of x over them, and of x^2 */
} pb_az_tally_t;

/* A tally is impossible for an honest actor when it has an impossible
 * move, or one of its z (rows, moves, rows of zeros) reaches PB_AZ_Z over
 * at least PB_AZ_MIN_ROWS re-run positions, PB_AZ_MIN_MOVES scored moves,
 * PB_AZ_MIN_MOVES rows. */
#define PB_AZ_Z 6.0
#define PB_AZ_MIN_ROWS 30
#define PB_AZ_MIN_MOVES 100

enum {
  PB_AZ_OK = 0,
  PB_AZ_BAD_MOVE = 1,  /* an exact check */
  PB_AZ_BAD_ROWS = 2,  /* the re-run's z */
  PB_AZ_BAD_DRAWS = 3, /* the moves' surprise */
  PB_AZ_BAD_ZEROS = 4, /* too many rows of zeros */
};

/* Checks one episode as azplay with options o plays it (o's temp_moves,
 * root, small_simulations, full_fraction, max_turns): states[0..n) the
 * positions before each move, policy their rows ([n][g->num_actions], as
 * the learner received them: finite, >= 0, 0 on illegal actions, summing
 * to 1 or all 0), the last move ending the game with the mover's reward
 * final_reward (or cut at max_turns). Adds to t. When a move is
 * impossible, `why` (cap bytes, may be NULL) says which. Returns 0, or
 * PB_ECORRUPT when the states do not follow by legal moves. */
int pb_az_check_episode(const pb_game_t *g, const pb_azplay_opts_t *o,
                        const pb_state_t *states, uint32_t n, int final_reward,
                        const float *policy, pb_az_tally_t *t, char *why,
                        size_t cap, pb_err_t *err);

/* The z of t's re-run rows (sum x / sqrt(sum x^2)), of its moves'
 * surprise, of its rows of zeros (with the cap's full_fraction f in
 * (0, 1); 0 otherwise); 0 without data. */
double pb_az_rows_z(const pb_az_tally_t *t);
double pb_az_moves_z(const pb_az_tally_t *t);
double pb_az_zeros_z(const pb_az_tally_t *t, const pb_azplay_opts_t *o);

/* Why t is impossible for an honest actor (PB_AZ_BAD_*), or PB_AZ_OK. */
int pb_az_verdict(const pb_az_tally_t *t, const pb_azplay_opts_t *o);

/* Adds b to a; takes b out of a (a tally that held b). */
void pb_az_add(pb_az_tally_t *a, const pb_az_tally_t *b);
void pb_az_sub(pb_az_tally_t *a, const pb_az_tally_t *b);

/* Total variation distance of two rows of num_actions: half the sum of
 * |a - b|. */
double pb_az_tv(const float *a, const float *b, int num_actions);

typedef struct pb_azcheck pb_azcheck_t;

/* A re-searcher for game g with the search options of o (simulations,
 * c_puct, eps, alpha, discount, root) checking up to max_positions
 * positions a call (two searches each, all together: one batched network
 * call per simulation round). NULL with err filled: bad options, a
 * deterministic search (PUCT with eps 0: see the top), PB_ENOMEM. */
pb_azcheck_t *pb_azcheck_new(const pb_game_t *g, const pb_azplay_opts_t *o,
                             int max_positions, pb_err_t *err);

/* Frees it; accepts NULL and sets *p to NULL. */
void pb_azcheck_destroy(pb_azcheck_t **p);

/* Re-runs the search of states[0..n) (n <= max_positions, none terminal)
 * twice with ev (the network of the rows' version), noise drawn from
 * streams seeded by rng, and writes x[i] = TV(claimed_i, pi1) -
 * TV(pi2, pi1) for each claimed row (claimed[i * num_actions ...], not
 * all zero). Returns 0, or PB_EINVAL / the evaluator's error. */
int pb_azcheck_run(pb_azcheck_t *p, const pb_state_t *states,
                   const float *claimed, int n, const pb_mcts_evalfn_t *ev,
                   pb_rng_t *rng, double *x, pb_err_t *err);

/* Adds the re-run values x[0..n) to t. */
void pb_az_add_rows(pb_az_tally_t *t, const double *x, int n);

#endif
