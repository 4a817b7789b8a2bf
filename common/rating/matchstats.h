/* matchstats.h - the statistics of a match that cutechess-cli and
 * fastchess print: the Elo difference with its 95% interval, the
 * likelihood of superiority (LOS), the draw ratio and the normalized Elo
 * (nElo), from the games' W/D/L (trinomial) or from the pentanomial
 * counts of game pairs (the same opening played with both colours).
 *
 * Each observation x (a game's score 1, 1/2, 0; or a pair's points / 2:
 * 0, 1/4, 1/2, 3/4, 1) has the sample mean m and variance v over n
 * observations; the score's standard error is se = sqrt(v / n). Then
 *   elo      pb_elo_from_score(m), m clamped to [1/(2g), 1 - 1/(2g)] for
 *            g games (half a game the other way, as pb_elo_diff);
 *   lo, hi   m +- 1.96 se mapped the same way (1.96 as pb_elo_diff), an end at or past 1 (0)
 *            being +inf (-inf): the estimate is never an end of its own
 *            interval (see pb_elo_diff);
 *   los      Phi((m - 1/2) / se), the chance that A is the stronger;
 *   nelo     (m - 1/2) / sigma * 800 / ln 10, sigma the standard
 *            deviation of one game's score (sqrt(v) for games, sqrt(2 v)
 *            for pairs: a pair's mean is the mean of two games), its
 *            interval nelo +- 1.96 * 800 / ln 10 / sqrt(g) (fishtest);
 *   draws    games: D / n; pairs: the pairs of one point in which both
 *            games were drawn or one won and one lost (fastchess).
 * When every observation is alike v is 0; the variance of a binomial
 * score of the clamped mean, m (1 - m) per game (halved for a pair), is
 * used instead, so that the interval, LOS and nElo stay finite. */
#ifndef PB_MATCHSTATS_H
#define PB_MATCHSTATS_H

typedef struct pb_matchstats {
  int n;         /* observations: games or pairs */
  int games;     /* games they hold */
  double score;  /* m, the mean score per game */
  double var;    /* v, the variance of one observation (after the rule) */
  double elo, lo, hi;
  double los;    /* in [0, 1] */
  double draws;  /* draw ratio in [0, 1] */
  double nelo, nelo_lo, nelo_hi;
} pb_matchstats_t;

/* From A's wins, draws and losses. Returns 0, or -1 (st zeroed) for no
 * games or a negative count. */
int pb_matchstats_wdl(int wins, int draws, int losses, pb_matchstats_t *st);

/* From the pentanomial counts penta[5] (pairs where A scored 0, 1/2, 1,
 * 3/2, 2 points). Returns 0, or -1 (st zeroed) for no pairs or a
 * negative count. */
int pb_matchstats_penta(const int penta[5], pb_matchstats_t *st);

#endif
