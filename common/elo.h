/* elo.h - Elo ratings from game results.
 *
 * The logistic Elo model: a player rated d points above its opponent
 * expects the score 1 / (1 + 10^(-d / 400)) per game (win 1, draw 1/2,
 * loss 0). Everything here is plain arithmetic on counts; no state.
 *
 * Planned beside this: a maximum-likelihood fit of one rating against
 * several opponents whose ratings are anchored (the evaluator's table). */
#ifndef PB_ELO_H
#define PB_ELO_H

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
 * Clamping: a perfect or null score has no finite Elo, so s and the ends of
 * the interval are clamped to [1/(2n), 1 - 1/(2n)] (as if half a game had
 * gone the other way): 400 straight wins give +1161 with hi = elo. When all
 * games ended alike the sample variance is 0; the binomial variance of the
 * clamped score, s(1 - s), is used instead so that the interval is not
 * empty. Returns 0, or PB_EINVAL if a count is negative or n = 0 (the
 * outputs are then 0). Any output pointer may be NULL. */
int pb_elo_diff(int wins, int draws, int losses, double *elo, double *lo,
                double *hi);

#endif
