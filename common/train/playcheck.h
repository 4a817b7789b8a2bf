/* playcheck.h - how surprising a worker's self-play moves are under the
 * policy it announces: the learner's check of self-play episodes.
 *
 * An actor draws each move from P = (1 - eps) softmax(Q / T) + eps eta,
 * eta ~ Dir(alpha) over the legal moves (selfplay.h: pb_selfplay_pick).
 * Over the noise, a move a is drawn with probability
 *   p(a) = (1 - eps) softmax(Q / T)[a] + eps / n      (n legal moves)
 * exactly, since E[eta] is uniform. Given Q (the network of the episode's
 * version, which the learner holds), the surprise of a played move,
 * x = -log p(a), therefore has a known mean (the entropy of p) and
 * variance, position by position. Summed over the moves of a worker, the
 * surprise minus its mean is a martingale with a known variance: honest
 * moves give a z = sum / sqrt(variance) of a standard normal whatever the
 * network, the game or the positions; moves chosen by another rule (a
 * player that throws its games, moves made up) are more surprising on
 * average and give a z that grows with the square root of the moves.
 * No other worker is needed as a reference.
 *
 * What it cannot see: games played by the announced policy but chosen
 * after the fact (play many, send only those the first player lost). Under
 * a network whose Q is nearly flat every move is about as likely, so
 * neither can it see made-up moves there; the lean shows once Q has
 * learnt something. docs/reliability.md has the measured rates.
 *
 * No allocation; no state but the caller's tallies. */
#ifndef PB_PLAYCHECK_H
#define PB_PLAYCHECK_H

#include <stdint.h>

#include "err.h"
#include "game.h"

/* The surprise of a worker's moves, summed. */
typedef struct pb_play_tally {
  uint64_t moves;  /* moves scored (positions with two or more moves) */
  uint64_t episodes;
  double excess;   /* sum of (surprise - its mean), nats */
  double var;      /* sum of the surprises' variances */
  /* The same over the recent moves (issue 46: trust that can be lost):
   * a move weighs (1 - 1/PB_PLAY_RECENT)^k once k moves were added after
   * it, its variance that weight squared (so that the recent z of honest
   * moves is a standard normal's too). */
  double r_moves, r_excess, r_var;
} pb_play_tally_t;

#define PB_PLAY_RECENT 1000

/* A tally is impossible when it has at least PB_PLAY_MIN_MOVES moves and
 * its z (pb_play_z) is at least PB_PLAY_Z: a one-sided test, since honest
 * moves cannot be less surprising than the policy on average beyond
 * chance, and 6 standard errors is about 1e-9 for an honest worker per
 * test. Or when its recent moves weigh PB_PLAY_MIN_MOVES and their z
 * (pb_play_recent_z) is at least PB_PLAY_Z: an honest history does not
 * hide a thrower that starts late. */
#define PB_PLAY_MIN_MOVES 100
#define PB_PLAY_Z 6.0

/* The surprise of playing the legal move acts[k] in a position whose Q is
 * q (indexed by action; non-finite values count as impossible moves, as
 * pb_selfplay_pick treats them), acts[0..na) the legal moves, with noise
 * weight eps and temperature T: returns x = -log p(acts[k]) and sets
 * *mean and *var to the mean and variance of x over the moves p draws.
 * na < 2 returns 0 with *mean = *var = 0 (a forced move says nothing). */
double pb_play_surprise(const float *q, const uint8_t *acts, int na, int k,
                        double eps, double temperature, double *mean,
                        double *var);

/* Adds the moves of one episode to t: states[0..n), each the position
 * before a move, q holding Q of every state ([n][g->num_actions]), the
 * last move ending the game with the mover's reward final_reward (or, at
 * a cut at max_turns, leaving it going). What the learner sees of a move
 * is scored: the move itself where the game went on, only the reward
 * where it ended (the episode keeps no terminal position), so the moves
 * that would have ended the game count for the positions where they were
 * not played too: scoring only the moves that went on would make every
 * honest actor look surprising (it wins when it can). An episode whose
 * states do not follow one another by legal moves is refused with
 * PB_ECORRUPT (pb_selfplay_check has refused it before, in the learner). */
int pb_play_score(const pb_game_t *g, const pb_state_t *states, uint32_t n,
                  int final_reward, const float *q, double eps,
                  double temperature, pb_play_tally_t *t, pb_err_t *err);

/* z of a tally: excess / sqrt(var); 0 without moves. And of its recent
 * moves. */
double pb_play_z(const pb_play_tally_t *t);
double pb_play_recent_z(const pb_play_tally_t *t);

/* Whether t is statistically impossible for an honest actor (see
 * PB_PLAY_Z). */
int pb_play_impossible(const pb_play_tally_t *t);

/* Adds b to a (b's moves come after a's: a's recent sums decay by b's
 * moves); takes b out of a (a tally that held b; of the recent sums,
 * b's own are taken out, which is more than b weighs there once moves
 * followed it: what is left errs toward the honest side). */
void pb_play_add(pb_play_tally_t *a, const pb_play_tally_t *b);
void pb_play_sub(pb_play_tally_t *a, const pb_play_tally_t *b);

/* The outcome test (learner/selfcheck.c), which sees what the surprise
 * cannot: n results (+1, 0, -1: the first player's, their sum and sum of
 * squares) of one worker against a reference sample of rn results of the
 * same policy (rsum, rsq; the learner's own games, or the other
 * workers'). *excess = sum - n x the reference's mean; *var its variance
 * were both drawn alike: the two samples' pooled variance (at least 1e-6)
 * x n (1 + n / rn), the second term the reference mean's own error.
 * Returns 1, or 0 with both 0 when n or rn is 0. Excesses and variances
 * of independent comparisons (one per Q version) add up, and their
 * excess / sqrt(var) is about a standard normal for an honest worker. */
int pb_outcome_part(uint64_t n, double sum, double sq, uint64_t rn,
                    double rsum, double rsq, double *excess, double *var);

/* The surprise's arithmetic, shared with azcheck.c: -log p, finite for
 * p = 0 (745, beyond any double's -log); and the mean and variance of
 * -log P when a class of probability c[j] is drawn, over c[0..n). */
double pb_play_nlog(double p);
void pb_play_moments(const double *c, int n, double *mean, double *var);

#endif
