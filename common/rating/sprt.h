/* sprt.h - the sequential probability ratio test of a match: stop as soon
 * as the results say, with known error rates, whether A is elo0 or elo1
 * Elo stronger than B.
 *
 * The test is the generalized SPRT (GSPRT) of fishtest and fastchess on
 * the trinomial model of a game: A wins, draws or loses with unknown
 * probabilities (pW, pD, pL), the score of a game is 1, 1/2 or 0, and the
 * hypotheses are about the expected score alone:
 *     H0: E[score] = s0,   H1: E[score] = s1,   s_i = pb_elo_expected(elo_i)
 * (logistic Elo, the scale of `probs match`'s elo=). Under each hypothesis
 * the trinomial probabilities are the maximum-likelihood ones given the
 * observed counts and that expected score:
 *     p_j = f_j / (1 + lambda (a_j - s)),  a_j in {0, 1/2, 1},
 * f_j the observed frequencies and lambda the root of
 * sum_j f_j (a_j - s) / (1 + lambda (a_j - s)) = 0 (Van den Bergh's
 * construction). The log-likelihood ratio of n games is
 *     LLR = n sum_j f_j log(p1_j / p0_j),
 * with every count first raised to at least 1e-3 (fishtest's
 * regularisation, so that a result never seen does not make the ratio
 * infinite; the counts then sum to n' >= n and n' takes the place of n).
 * For many games it approaches the normal approximation
 *     LLR ~ n (s1 - s0)(2 m - s0 - s1) / (2 var),
 * m and var the mean and variance of the observed scores.
 *
 * The test stops when LLR <= lower = log(beta / (1 - alpha)) (accept H0)
 * or LLR >= upper = log((1 - beta) / alpha) (accept H1): alpha is the
 * chance of accepting H1 when H0 holds, beta of accepting H0 when H1
 * holds (Wald's bounds; they hold approximately, on the safe side, since
 * a test checked after every game overshoots its bound a little).
 *
 * Pentanomial: when games are played in pairs, the same opening with the
 * colours swapped, the two results of a pair are not independent (an
 * opening that favours one side gives one win each way). The test then
 * takes the pair as its unit, as fishtest and fastchess do: a pair
 * scores A's points in it divided by two, a_j in {0, 1/4, 1/2, 3/4, 1},
 * and the same construction on those five outcomes gives the LLR over
 * the pentanomial counts. */
#ifndef PB_SPRT_H
#define PB_SPRT_H

#include <stddef.h>

#include "err.h"

/* Bounds of the settings (pb_sprt_init refuses anything outside). */
#define PB_SPRT_ELO_MAX 2000.0 /* |elo0|, |elo1| */
#define PB_SPRT_ERR_MIN 1e-6   /* alpha and beta in [MIN, MAX] */
#define PB_SPRT_ERR_MAX 0.5

typedef struct pb_sprt {
  double elo0, elo1;   /* H0 and H1: A's Elo over B, elo0 < elo1 */
  double alpha, beta;  /* the error rates */
  double s0, s1;       /* the expected scores of H0 and H1 */
  double lower, upper; /* log(beta / (1 - alpha)), log((1 - beta) / alpha) */
} pb_sprt_t;

/* The decision: keep playing, or accept one hypothesis. */
enum { PB_SPRT_CONTINUE = 0, PB_SPRT_H0 = 1, PB_SPRT_H1 = 2 };

/* Sets up a test of elo0 against elo1 (elo0 < elo1, both within
 * +-PB_SPRT_ELO_MAX) with error rates alpha and beta (each in
 * [PB_SPRT_ERR_MIN, PB_SPRT_ERR_MAX]). Returns 0, or PB_EINVAL with a
 * message naming the value (t is then zeroed). */
int pb_sprt_init(pb_sprt_t *t, double elo0, double elo1, double alpha,
                 double beta, pb_err_t *err);

/* Parses "ELO0,ELO1" or "ELO0,ELO1,ALPHA,BETA" (decimal numbers; alpha
 * and beta default to 0.05) and sets up the test. Returns 0 or PB_EINVAL
 * naming the part that is wrong. */
int pb_sprt_parse(pb_sprt_t *t, const char *text, pb_err_t *err);

/* The log-likelihood ratio of H1 over H0 after the given results (A's
 * wins, draws and losses; 0 for no games or a negative count). */
double pb_sprt_llr(const pb_sprt_t *t, int wins, int draws, int losses);

/* The LLR of the pentanomial counts penta[5] (pairs where A scored 0,
 * 1/2, 1, 3/2 and 2 points: see the top comment); 0 for no pairs or a
 * negative count. */
double pb_sprt_llr_penta(const pb_sprt_t *t, const int penta[5]);

/* The decision for a log-likelihood ratio: PB_SPRT_H0 at or below
 * t->lower, PB_SPRT_H1 at or above t->upper, else PB_SPRT_CONTINUE. */
int pb_sprt_decide(const pb_sprt_t *t, double llr);

/* The stopping rule checked after each game: the decision after the
 * given results, and their LLR into *llr (may be NULL). */
int pb_sprt_check(const pb_sprt_t *t, int wins, int draws, int losses,
                  double *llr);

/* pb_sprt_check on pentanomial counts. */
int pb_sprt_check_penta(const pb_sprt_t *t, const int penta[5], double *llr);

/* The most outcomes pb_sprt_mle_n takes. */
#define PB_SPRT_OUTCOMES_MAX 5

/* The maximum-likelihood distribution p[0..k) over outcomes scoring
 * a[0..k) (with min a < s < max a) of expected score s, given the
 * frequencies f[0..k) (each > 0, summing to 1); 2 <= k <=
 * PB_SPRT_OUTCOMES_MAX. */
void pb_sprt_mle_n(int k, const double *a, const double *f, double s,
                   double *p);

/* The maximum-likelihood trinomial for expected score s given the
 * frequencies f[3] (loss, draw, win; each > 0, summing to 1): p[3] in the
 * same order. s must lie in (0, 1). For tests and for pb_sprt_llr. */
void pb_sprt_mle(const double f[3], double s, double p[3]);

/* "H0 accepted", "H1 accepted" or "undecided" for a decision. */
const char *pb_sprt_verdict(int decision);

#endif
