/* bench_outcome - the false-positive rate of the outcome test of self-play
 * (pb_outcome_part, common/train/playcheck.h; learner/selfcheck.c): how
 * far in its tail an honest actor's z lies, with the reference games of
 * net.selfplay_reference a version.
 *
 *   bench_outcome [-t TRIALS] [-r REF] [-n LO,HI] [-v VERSIONS] [-d DRAW]
 *                 [-p]
 *
 * Simulates TRIALS (default 1000000) honest actors: each plays VERSIONS
 * (default 1) Q versions, in each a number of episodes drawn uniformly
 * from LO..HI (default 5,100), compared with REF (default 32) reference
 * games of the same policy; a game's first-player result is +1, 0 or -1
 * with the draw share DRAW (default 0.1) and the first player winning
 * 5/9 of the rest (a first player's edge, as in Connect Four's early
 * self-play). Prints the mean and spread of z (a standard normal's: 0, 1),
 * the share of actors with |z| >= 4, 5 and the test's 6, and the largest
 * |z|. The simulation is the test's arithmetic, not the games: what it
 * measures is whether that arithmetic's z has a normal's tail with few
 * reference games. -p prints tab-separated rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "playcheck.h"
#include "rng.h"

#include "bench_util.h"

static int result(pb_rng_t *r, double draw) {
  const double u = pb_rng_uniform(r);
  if (u < draw) return 0;
  return u < draw + (1.0 - draw) * 5.0 / 9.0 ? 1 : -1;
}

/* One figure: name, value (printf format fmt). */
static void row(const char *name, double value, const char *fmt) {
  char v[32];
  snprintf(v, sizeof v, fmt, value);
  if (parseable)
    printf("%s\t%s\n", name, v);
  else
    printf("  %-12s %s\n", name, v);
}

int main(int argc, char **argv) {
  const char *ts = NULL, *rs = NULL, *ns = NULL, *vs = NULL, *ds = NULL;
  int trials = 1000000, ref = 32, lo = 5, hi = 100, versions = 1;
  double draw = 0.1;
  const pb_opts_row_t rows[] = {
      PB_OPTS_VALUE(NULL, 't', &ts), PB_OPTS_VALUE(NULL, 'r', &rs),
      PB_OPTS_VALUE(NULL, 'n', &ns), PB_OPTS_VALUE(NULL, 'v', &vs),
      PB_OPTS_VALUE(NULL, 'd', &ds), PB_OPTS_FLAG(NULL, 'p', &parseable)};
  bench_usage_text = "usage: bench_outcome [-t TRIALS] [-r REF] [-n LO,HI] "
                     "[-v VERSIONS] [-d DRAW] [-p]\n";
  const pb_opts_t cl = {"bench_outcome", bench_usage, rows, PB_OPTS_N(rows),
                        NULL, 0, NULL};
  int rc = pb_opts_parse(&cl, argc, argv);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&cl, "-t", ts, 1, 100000000, &trials);
  if (rc == PB_OPTS_OK) rc = bench_opt_int(&cl, "-r", rs, 1, 100000, &ref);
  if (rc == PB_OPTS_OK)
    rc = bench_opt_int(&cl, "-v", vs, 1, 100000, &versions);
  if (rc == PB_OPTS_OK) rc = bench_opt_double(&cl, "-d", ds, 0, 1, &draw);
  if (rc == PB_OPTS_OK && ns != NULL &&
      (sscanf(ns, "%d,%d", &lo, &hi) != 2 || lo < 1 || hi < lo ||
       hi > 100000))
    rc = pb_opts_fail(&cl, "-n wants LO,HI (1 <= LO <= HI), not '%s'", ns);
  if (rc != PB_OPTS_OK) return pb_opts_exit(rc);
  pb_rng_t r;
  pb_rng_seed(&r, 46, 7);
  double s = 0, s2 = 0, most = 0;
  long over[3] = {0, 0, 0};
  const double t0 = bench_clock();
  for (int t = 0; t < trials; t++) {
    double E = 0, V = 0;
    for (int k = 0; k < versions; k++) {
      double rsum = 0, rsq = 0, sum = 0, sq = 0;
      for (int i = 0; i < ref; i++) {
        const int x = result(&r, draw);
        rsum += x;
        rsq += x * x;
      }
      const int n = lo + (int)pb_rng_below(&r, (uint64_t)(hi - lo + 1));
      for (int i = 0; i < n; i++) {
        const int x = result(&r, draw);
        sum += x;
        sq += x * x;
      }
      double e, v;
      pb_outcome_part((uint64_t)n, sum, sq, (uint64_t)ref, rsum, rsq, &e, &v);
      E += e;
      V += v;
    }
    const double z = V > 0 ? E / sqrt(V) : 0.0, a = fabs(z);
    s += z;
    s2 += z * z;
    if (a > most) most = a;
    for (int k = 0; k < 3; k++) over[k] += a >= 4.0 + k;
  }
  const double mean = s / trials, sd = sqrt(s2 / trials - mean * mean);
  if (!parseable)
    printf("%d honest actors, %d reference games and %d..%d episodes a "
           "version, %d version(s), draws %.2f (%.1f s):\n",
           trials, ref, lo, hi, versions, draw, bench_clock() - t0);
  row("z mean", mean, "%+.4f");
  row("z spread", sd, "%.4f");
  row("|z| >= 4", (double)over[0] / trials, "%.2e");
  row("|z| >= 5", (double)over[1] / trials, "%.2e");
  row("|z| >= 6", (double)over[2] / trials, "%.2e");
  row("largest |z|", most, "%.2f");
  return 0;
}
