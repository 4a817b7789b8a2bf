/* elo.c - Elo differences from win/draw/loss counts. */
#include "elo.h"

#include <math.h>

#include "err.h"

double pb_elo_expected(double diff) {
  return 1.0 / (1.0 + pow(10.0, -diff / 400.0));
}

double pb_elo_from_score(double s) {
  if (s < 1e-9) s = 1e-9;
  if (s > 1.0 - 1e-9) s = 1.0 - 1e-9;
  return -400.0 * log10(1.0 / s - 1.0);
}

static double clamp(double x, double lo, double hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

int pb_elo_diff(int wins, int draws, int losses, double *elo, double *lo,
                double *hi) {
  if (elo != NULL) *elo = 0.0;
  if (lo != NULL) *lo = 0.0;
  if (hi != NULL) *hi = 0.0;
  if (wins < 0 || draws < 0 || losses < 0) return PB_EINVAL;
  double n = (double)wins + (double)draws + (double)losses;
  if (n <= 0.0) return PB_EINVAL;
  double s = (wins + 0.5 * draws) / n;
  /* Per-game scores are 1, 1/2 and 0: their variance around the mean. */
  double var = (wins * (1.0 - s) * (1.0 - s) + draws * (0.5 - s) * (0.5 - s) +
                losses * s * s) / n;
  double eps = 0.5 / n;
  double sc = clamp(s, eps, 1.0 - eps);
  if (var <= 0.0) var = sc * (1.0 - sc);
  double half = 1.96 * sqrt(var / n);
  if (elo != NULL) *elo = pb_elo_from_score(sc);
  if (lo != NULL) *lo = pb_elo_from_score(clamp(sc - half, eps, 1.0 - eps));
  if (hi != NULL) *hi = pb_elo_from_score(clamp(sc + half, eps, 1.0 - eps));
  return 0;
}
