/* matchstats.c - see matchstats.h. */
#include "matchstats.h"

#include <math.h>
#include <string.h>

#include "elo.h"

/* The statistics of n observations scoring a[j] with counts c[j], j <
 * k, each observation `per` games. */
static int stats(int k, const double *a, const int *c, int per,
                 pb_matchstats_t *st) {
  memset(st, 0, sizeof *st);
  double n = 0, sum = 0;
  for (int j = 0; j < k; j++) {
    if (c[j] < 0) return -1;
    n += c[j];
    sum += c[j] * a[j];
  }
  if (n <= 0) return -1;
  double m = sum / n, v = 0;
  for (int j = 0; j < k; j++) v += c[j] * (a[j] - m) * (a[j] - m);
  v /= n;
  double games = n * per, eps = 0.5 / games;
  double mc = m < eps ? eps : m > 1.0 - eps ? 1.0 - eps : m;
  if (v <= 0.0) v = mc * (1.0 - mc) / per;
  double se = sqrt(v / n);
  st->n = (int)n;
  st->games = (int)games;
  st->score = m;
  st->var = v;
  st->elo = pb_elo_from_score(mc);
  st->lo = pb_elo_interval_end(mc - 1.96 * se);
  st->hi = pb_elo_interval_end(mc + 1.96 * se);
  st->los = 0.5 * erfc(-(m - 0.5) / (se * sqrt(2.0)));
  const double c_nelo = 800.0 / log(10.0);
  st->nelo = (m - 0.5) / sqrt(per * v) * c_nelo;
  double half = 1.96 * c_nelo / sqrt(games);
  st->nelo_lo = st->nelo - half;
  st->nelo_hi = st->nelo + half;
  return 0;
}

int pb_matchstats_wdl(int wins, int draws, int losses, pb_matchstats_t *st) {
  static const double a[3] = {0.0, 0.5, 1.0};
  const int c[3] = {losses, draws, wins};
  if (st == NULL) return -1;
  if (stats(3, a, c, 1, st) != 0) return -1;
  st->draws = (double)draws / st->n;
  return 0;
}

int pb_matchstats_penta(const int penta[5], pb_matchstats_t *st) {
  static const double a[5] = {0.0, 0.25, 0.5, 0.75, 1.0};
  if (st == NULL) return -1;
  if (penta == NULL) {
    memset(st, 0, sizeof *st);
    return -1;
  }
  if (stats(5, a, penta, 2, st) != 0) return -1;
  st->draws = (double)penta[2] / st->n;
  return 0;
}
