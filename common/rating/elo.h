/* elo.h - Elo ratings from game results.
 *
 * The logistic Elo model: a player rated d points above its opponent
 * expects the score 1 / (1 + 10^(-d / 400)) per game (win 1, draw 1/2,
 * loss 0). Everything here is plain arithmetic on counts; no state.
 *
 * Beside the quick pairwise estimate (pb_elo_diff) there are two
 * maximum-likelihood fits under the same model, with draws counted as half
 * a win and half a loss:
 *   pb_elo_fit_one    the rating of one player from its results against
 *                     opponents of fixed (anchor) ratings: the evaluator's
 *                     rating of a checkpoint;
 *   pb_elo_fit_joint  the ratings of several players from their results
 *                     against each other, one of them fixed: calibrating
 *                     the anchors (`probs elo-calibrate`).
 * The log-likelihood of a rating R given points s_j out of n_j games
 * against opponents rated r_j is
 *     L(R) = sum_j s_j log p_j + (n_j - s_j) log(1 - p_j),
 *     p_j = 1 / (1 + 10^((r_j - R) / 400)),
 * concave in R, maximal where the expected score equals the actual one.
 * Counting a draw as half a point treats it as a coin flip between a win
 * and a loss, which overstates the variance of a drawish player: its
 * intervals err on the wide side. Method and choices: docs/evaluator.md. */
#ifndef PB_ELO_H
#define PB_ELO_H

#include <stddef.h>

#include "err.h"

/* Expected score of a player rated `diff` points above its opponent. */
double pb_elo_expected(double diff);

/* Elo difference that gives the expected score s (inverse of the above):
 * -400 log10(1/s - 1). s must lie in (0, 1); it is clamped to
 * [1e-9, 1 - 1e-9] so that the result is always finite. */
double pb_elo_from_score(double s);

/* Elo difference of A over B from A's wins, draws and losses, with a 95%
 * interval. The score s = (w + d/2) / n is mapped through
 * pb_elo_from_score; the interval is s +- 1.96 * se, se the standard error
 * of the mean per-game score, mapped the same way.
 * Clamping: a perfect or null score has no finite Elo, so s is clamped to
 * [1/(2n), 1 - 1/(2n)] (as if half a game had gone the other way): 400
 * straight wins give +1161. The interval is not clamped: an end at or
 * past a score of 1 (0) is +infinity (-infinity), since the results
 * cannot rule out any strength on that side (400 straight wins: [+924,
 * +inf]; W=2 D=0 L=0: +191 [-302, +inf]), so the estimate never sits on
 * an end of its own interval. When all games ended alike the sample
 * variance is 0; the binomial variance of the clamped score, s(1 - s), is
 * used instead so that the interval is not empty. Returns 0, or PB_EINVAL if a count is negative or n = 0 (the
 * outputs are then 0). Any output pointer may be NULL. */
int pb_elo_diff(int wins, int draws, int losses, double *elo, double *lo,
                double *hi);

/* The Elo of an end of a score interval: pb_elo_from_score(s) for s in
 * (0, 1), +INFINITY from 1 up, -INFINITY from 0 down. */
double pb_elo_interval_end(double s);

/* Writes `elo` rounded to `decimals` places (0..6) into buf (n bytes,
 * truncated) and returns buf: with a sign when `sign` is set ("+12",
 * "-3"), and never a negative zero: a value that rounds to zero prints as
 * "+0" (sign) or "0" (no sign), as 0.0 rounded does ("+0.0", "0.0");
 * an infinite value prints as "+inf" or "-inf" ("inf" with no sign). */
char *pb_elo_format(char *buf, size_t n, double elo, int decimals, int sign);

/* ---- maximum-likelihood fits ----------------------------------------- */

/* z such that 95% of a standard normal lies within +-z, and half the 95%
 * quantile of chi-square with one degree of freedom (the drop in
 * log-likelihood that bounds a profile-likelihood interval). */
#define PB_ELO_Z95 1.959963984540054
#define PB_ELO_HALF_CHI2_95 1.920729410347062

/* Flags of a fit (a bit set). */
enum {
  /* The player won every game (PB_ELO_ALL_WINS) or lost every game
   * (PB_ELO_ALL_LOSSES): the likelihood has no maximum, the true rating
   * could be arbitrarily high (low). The fit then moves half a point of the
   * score the other way, spread over the opponents in proportion to their
   * games (the convention of pb_elo_diff), and reports the finite rating
   * and interval of those adjusted results. The bound on the open side
   * (hi for all wins) is therefore not a real bound; the other is
   * conservative (further from the estimate than the raw data's). */
  PB_ELO_ALL_WINS = 1,
  PB_ELO_ALL_LOSSES = 2,
  /* Some results were adjusted by half a point as above (always set with
   * the two flags before; in a joint fit, set for both players of each
   * pair with a one-sided result when the ratings would otherwise run off
   * to infinity). */
  PB_ELO_ADJUSTED = 4,
};

/* Results of one player against one opponent of known rating. */
typedef struct pb_elo_record {
  double opp_rating;
  int wins, draws, losses; /* the player's */
} pb_elo_record_t;

/* A fitted rating. */
typedef struct pb_elo_fit {
  double rating; /* maximum-likelihood estimate */
  double lo, hi; /* 95% interval (see each function) */
  double se;     /* standard error: 1 / sqrt(Fisher information) */
  double score;  /* points scored, wins + draws / 2 (before any adjustment) */
  int games;     /* games counted */
  int flags;     /* PB_ELO_* */
} pb_elo_fit_t;

/* Expected (= observed) Fisher information per game of a player rated
 * `diff` above its opponent, in 1/Elo^2: (ln 10 / 400)^2 p (1 - p). */
double pb_elo_info(double diff);

/* The log-likelihood L(rating) of recs[0..n) (see the top comment). */
double pb_elo_loglik(const pb_elo_record_t *recs, int n, double rating);

/* Fits the rating of one player from its results recs[0..n) against
 * opponents of fixed ratings, by bisection on the score equation (the
 * expected score equals the actual one; the root is unique since the
 * expected score rises with the rating). The interval [lo, hi] is the 95%
 * profile-likelihood (likelihood-ratio) interval, {R : L(R) >= L(rating) -
 * PB_ELO_HALF_CHI2_95}: it is asymmetric where it should be (near perfect
 * scores, against far weaker or stronger opponents) and behaves better in
 * small samples than the Wald interval rating +- 1.96 se, whose se is also
 * reported. Perfect and null scores: see PB_ELO_ALL_WINS. Records with no
 * games are ignored. Returns 0, or PB_EINVAL (NULL pointers, n < 0, a
 * negative count, a non-finite or absurd opponent rating (|r| > 1e6), or
 * no games at all); *fit is zeroed on error. */
int pb_elo_fit_one(const pb_elo_record_t *recs, int n, pb_elo_fit_t *fit,
                   pb_err_t *err);

/* Results between two players of a joint fit, from a's point of view. */
typedef struct pb_elo_pair {
  int a, b; /* player indices, a != b */
  int a_wins, draws, a_losses;
} pb_elo_pair_t;

/* Fits the ratings of players 0..nplayers-1 from the results pairs[0..npairs)
 * (several entries for the same two players add up), with player `anchor`
 * fixed at `anchor_rating`, by Newton's method on the joint log-likelihood
 * (concave; steps are halved until the likelihood rises). fits[i] receives
 * player i's rating, its games and points, and a Wald interval rating +-
 * 1.96 se with se from the inverse of the observed information matrix
 * (the uncertainty relative to the anchor, whose own interval is the
 * single point anchor_rating). If some group of players scored nothing
 * against the rest, the maximum does not exist; every pair with a
 * one-sided result is then adjusted by half a point and its players
 * flagged PB_ELO_ADJUSTED (plus ALL_WINS / ALL_LOSSES for a player who won
 * or lost all its games). Returns 0, or PB_EINVAL (bad sizes or indices,
 * negative counts, a player with no chain of games to the anchor: the
 * message names it), PB_ENOMEM, or PB_ERANGE if Newton's method fails to
 * converge (cannot happen for valid input; reported rather than returning
 * a wrong answer). nplayers is at most 1024. */
int pb_elo_fit_joint(int nplayers, const pb_elo_pair_t *pairs, int npairs,
                     int anchor, double anchor_rating, pb_elo_fit_t *fits,
                     pb_err_t *err);

/* The paper's Elo ratings of its baselines (Connect Four), which our
 * random and lookahead:1..3 agents stand for: random 1000, lookahead:1
 * 1183, lookahead:2 1501, lookahead:3 1603. Returns 0 and sets *rating if
 * `spec` is one of them, else PB_ENOTFOUND. */
int pb_elo_default_anchor(const char *spec, double *rating);

#endif
